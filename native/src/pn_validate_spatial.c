/* Validation of the N-D spatial layers (backend_api.h): CONVOLUTION and POOLING (1 to 3
 * spatial axes, channels first) and RESIZE (any rank). */
#include "pn_validate_internal.h"

#include <math.h>

#define CONV "Convolution"
#define POOL "Pooling"
#define RESIZE "Resize"

static const char* const axis_names[3] = {"spatial axis 0", "spatial axis 1", "spatial axis 2"};

/* ---- Shared ------------------------------------------------------------------------ */

/* spatial_rank in 1..3 and every used stride and dilation >= 1. */
static pn_status check_axes(const char* kind, uint32_t rank, const uint32_t strides[3],
                            const uint32_t dilations[3], pn_string_out* reason) {
    if (rank < 1 || rank > 3) {
        return PNV_FAIL(reason, "%s: spatial_rank must be 1, 2 or 3, got %u", kind, rank);
    }
    for (uint32_t a = 0; a < rank; ++a) {
        if (strides[a] == 0) {
            return PNV_FAIL(reason, "%s: strides[%u] must be >= 1, got 0", kind, a);
        }
        if (dilations[a] == 0) {
            return PNV_FAIL(reason, "%s: dilations[%u] must be >= 1, got 0", kind, a);
        }
    }
    return PN_OK;
}

/* One spatial axis of a sliding window: its output size, or a reason. */
static pn_status window_axis(const char* kind, uint32_t a, int64_t in, uint32_t pad_begin,
                             uint32_t pad_end, uint32_t k, uint32_t stride, uint32_t dilation,
                             int ceil_mode, int64_t* out, pn_string_out* reason) {
    *out = pn_window_output_size(in, pad_begin, pad_end, k, stride, dilation, ceil_mode);
    if (*out < 0) {
        return PNV_FAIL(reason,
                        "%s: the window of %s (kernel %u, dilation %u, span %lld) does not fit "
                        "the padded input (%lld + %u + %u)",
                        kind, axis_names[a], k, dilation,
                        (long long)dilation * ((long long)k - 1) + 1, (long long)in, pad_begin,
                        pad_end);
    }
    return PN_OK;
}

/* ---- CONVOLUTION ----------------------------------------------------------------- */

static pn_status check_conv_desc(const pn_convolution_desc* d, pn_string_out* reason) {
    if (d->op != PN_CONVOLUTION_FORWARD && d->op != PN_CONVOLUTION_TRANSPOSED) {
        return PNV_FAIL(reason, CONV ": unknown convolution op %d", (int)d->op);
    }
    PNV_TRY(check_axes(CONV, d->spatial_rank, d->strides, d->dilations, reason));
    for (uint32_t a = 0; a < d->spatial_rank; ++a) {
        if (d->op == PN_CONVOLUTION_FORWARD && d->output_padding[a] != 0) {
            return PNV_FAIL(reason,
                            CONV ": output_padding[%u] is %u; only a TRANSPOSED convolution "
                            "takes output padding",
                            a, d->output_padding[a]);
        }
    }
    if (d->groups == 0) {
        return PNV_FAIL(reason, CONV ": groups must be >= 1, got 0");
    }
    if ((d->flags & ~PN_LAYER_FLAG_HAS_BIAS) != 0) {
        return PNV_FAIL(reason, CONV ": unknown flags 0x%x (only PN_LAYER_FLAG_HAS_BIAS)",
                        d->flags);
    }
    return pn_validate_fused_activation(d->fused_activation, CONV " fused activation", reason);
}

/* The output channels from x's channels and the weights, or a reason. */
static pn_status conv_channels(const pn_convolution_desc* d, int64_t channels,
                               const pn_tensor_info* w, int64_t* out_channels,
                               pn_string_out* reason) {
    if (channels % d->groups != 0) {
        return PNV_FAIL(reason, CONV ": input channels (%lld) are not divisible by groups (%u)",
                        (long long)channels, d->groups);
    }
    if (d->op == PN_CONVOLUTION_FORWARD) {
        if (w->dims[0] % d->groups != 0) {
            return PNV_FAIL(reason,
                            CONV ": output channels (weights dim 0 = %lld) are not divisible by "
                            "groups (%u)",
                            (long long)w->dims[0], d->groups);
        }
        if (w->dims[1] != channels / d->groups) {
            return PNV_FAIL(reason,
                            CONV ": weights dim 1 is %lld, expected input channels / groups = "
                            "%lld / %u = %lld",
                            (long long)w->dims[1], (long long)channels, d->groups,
                            (long long)(channels / d->groups));
        }
        *out_channels = w->dims[0];
    } else {
        if (w->dims[0] != channels) {
            return PNV_FAIL(reason,
                            CONV ": a transposed convolution's weights dim 0 (%lld) must be the "
                            "input channels (%lld)",
                            (long long)w->dims[0], (long long)channels);
        }
        if (w->dims[1] > INT64_MAX / d->groups) {
            return PNV_FAIL(reason, CONV ": weights dim 1 times groups overflows");
        }
        *out_channels = w->dims[1] * (int64_t)d->groups;
    }
    return PN_OK;
}

/* A transposed axis' output size, or a reason. */
static pn_status transposed_axis(const pn_convolution_desc* d, uint32_t a, int64_t in, int64_t k,
                                 int64_t* out, pn_string_out* reason) {
    if (in < 1) {
        return PNV_FAIL(reason, CONV ": a transposed convolution's %s is empty (0)",
                        axis_names[a]);
    }
    int64_t full = (int64_t)d->strides[a] * (in - 1) + (int64_t)d->dilations[a] * (k - 1) + 1;
    *out = full + (int64_t)d->output_padding[a] - (int64_t)d->pads_begin[a] -
           (int64_t)d->pads_end[a];
    if (*out < 0) {
        return PNV_FAIL(reason,
                        CONV ": the pads of %s (%u + %u) exceed the transposed output (%lld + "
                        "output_padding %u)",
                        axis_names[a], d->pads_begin[a], d->pads_end[a], (long long)full,
                        d->output_padding[a]);
    }
    return PN_OK;
}

pn_status pn_validate_convolution(const pn_layer* layer, pn_string_out* reason) {
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    PNV_TRY(check_conv_desc(d, reason));
    uint32_t expected = (d->flags & PN_LAYER_FLAG_HAS_BIAS) ? 3u : 2u;
    PNV_TRY(pnv_counts(layer, expected, expected, reason));
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_FLOAT, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[1];
    uint32_t rank = d->spatial_rank;
    PNV_TRY(pnv_rank(layer, x, "input x", rank + 2, rank + 2, reason));
    PNV_TRY(pnv_rank(layer, w, "weights", rank + 2, rank + 2, reason));
    int64_t out_channels = 0;
    PNV_TRY(conv_channels(d, x->dims[1], w, &out_channels, reason));
    if (expected == 3) {
        pn_tensor_info bias = {0};
        bias.rank = 1;
        bias.dims[0] = out_channels;
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[2], &bias, "bias", reason));
    }
    pn_tensor_info y = {0};
    y.rank = rank + 2;
    y.dims[0] = x->dims[0];
    y.dims[1] = out_channels;
    for (uint32_t a = 0; a < rank; ++a) {
        int64_t k = w->dims[2 + a];
        if (k < 1 || k > UINT32_MAX) {
            return PNV_FAIL(reason, CONV ": the kernel size of %s is %lld; it must be 1..%u",
                            axis_names[a], (long long)k, UINT32_MAX);
        }
        if (d->op == PN_CONVOLUTION_FORWARD) {
            PNV_TRY(window_axis(CONV, a, x->dims[2 + a], d->pads_begin[a], d->pads_end[a],
                                (uint32_t)k, d->strides[a], d->dilations[a], 0, &y.dims[2 + a],
                                reason));
        } else {
            PNV_TRY(transposed_axis(d, a, x->dims[2 + a], k, &y.dims[2 + a], reason));
        }
    }
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}

/* ---- POOLING ----------------------------------------------------------------------- */

static pn_status check_pool_desc(const pn_pooling_desc* d, pn_string_out* reason) {
    if (d->kind < PN_POOLING_MAX || d->kind > PN_POOLING_LP) {
        return PNV_FAIL(reason, POOL ": unknown pooling kind %d", (int)d->kind);
    }
    PNV_TRY(check_axes(POOL, d->spatial_rank, d->strides, d->dilations, reason));
    for (uint32_t a = 0; a < d->spatial_rank; ++a) {
        if (d->kernel[a] == 0) {
            return PNV_FAIL(reason, POOL ": kernel[%u] must be >= 1, got 0", a);
        }
    }
    return pnv_pool_mode(POOL, d->kind, d->rounding, d->padding_method, d->p, reason);
}

pn_status pn_validate_pooling(const pn_layer* layer, pn_string_out* reason) {
    const pn_pooling_desc* d = (const pn_pooling_desc*)layer->descriptor;
    PNV_TRY(check_pool_desc(d, reason));
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, d->kind == PN_POOLING_MAX ? PNV_NUMERIC : PNV_FLOAT,
                          reason));
    const pn_tensor_info* x = &layer->inputs[0];
    uint32_t rank = d->spatial_rank;
    PNV_TRY(pnv_rank(layer, x, "input", rank + 2, rank + 2, reason));
    pn_tensor_info y = {0};
    y.rank = rank + 2;
    y.dims[0] = x->dims[0];
    y.dims[1] = x->dims[1];
    int ceil_mode = d->rounding == PN_ROUNDING_CEIL;
    for (uint32_t a = 0; a < rank; ++a) {
        PNV_TRY(window_axis(POOL, a, x->dims[2 + a], d->pads_begin[a], d->pads_end[a],
                            d->kernel[a], d->strides[a], d->dilations[a], ceil_mode,
                            &y.dims[2 + a], reason));
    }
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason));
    int needs_real = d->kind == PN_POOLING_MAX ||
                     (d->kind == PN_POOLING_AVERAGE && d->padding_method == PN_PADDING_EXCLUDE);
    if (needs_real && pn_num_elements(&y) > 0) {
        for (uint32_t a = 0; a < rank; ++a) {
            int64_t o = pnv_first_empty_window(x->dims[2 + a], d->pads_begin[a], d->kernel[a],
                                           d->strides[a], d->dilations[a], y.dims[2 + a]);
            if (o >= 0) {
                return PNV_FAIL(reason,
                                POOL ": window %lld of %s covers only padding, where this "
                                "pooling has no value",
                                (long long)o, axis_names[a]);
            }
        }
    }
    return PN_OK;
}

/* ---- RESIZE ------------------------------------------------------------------------ */

static pn_status check_resize_desc(const pn_resize_desc* d, pn_string_out* reason) {
    if (d->mode < PN_RESIZE_NEAREST || d->mode > PN_RESIZE_CUBIC) {
        return PNV_FAIL(reason, RESIZE ": unknown mode %d", (int)d->mode);
    }
    if (d->coordinates < PN_COORDINATES_HALF_PIXEL ||
        d->coordinates > PN_COORDINATES_TF_CROP_AND_RESIZE) {
        return PNV_FAIL(reason, RESIZE ": unknown coordinate transform %d", (int)d->coordinates);
    }
    if (d->mode == PN_RESIZE_NEAREST && (d->nearest_mode < PN_NEAREST_ROUND_PREFER_FLOOR ||
                                         d->nearest_mode > PN_NEAREST_CEIL)) {
        return PNV_FAIL(reason, RESIZE ": unknown nearest mode %d", (int)d->nearest_mode);
    }
    if (d->exclude_outside > 1 || d->antialias > 1) {
        return PNV_FAIL(reason, RESIZE ": exclude_outside and antialias must be 0 or 1, got %u "
                        "and %u", d->exclude_outside, d->antialias);
    }
    if (d->antialias && d->mode == PN_RESIZE_NEAREST) {
        return PNV_FAIL(reason, RESIZE ": antialias applies to LINEAR and CUBIC, not NEAREST");
    }
    if (d->mode == PN_RESIZE_CUBIC && !isfinite(d->cubic_coeff_a)) {
        return PNV_FAIL(reason, RESIZE ": cubic_coeff_a must be finite, got %g",
                        (double)d->cubic_coeff_a);
    }
    if (d->rank < 1 || d->rank > PN_MAX_DIMS) {
        return PNV_FAIL(reason, RESIZE ": rank must be 1..%d, got %u", PN_MAX_DIMS, d->rank);
    }
    for (uint32_t a = 0; a < d->rank; ++a) {
        if (!(d->scales[a] > 0.0 && isfinite(d->scales[a]))) {
            return PNV_FAIL(reason, RESIZE ": scales[%u] must be finite and > 0, got %g", a,
                            d->scales[a]);
        }
        if (d->coordinates == PN_COORDINATES_TF_CROP_AND_RESIZE &&
            !(isfinite(d->roi_start[a]) && isfinite(d->roi_end[a]))) {
            return PNV_FAIL(reason, RESIZE ": roi of axis %u must be finite, got [%g, %g]", a,
                            d->roi_start[a], d->roi_end[a]);
        }
    }
    return PN_OK;
}

pn_status pn_validate_resize(const pn_layer* layer, pn_string_out* reason) {
    const pn_resize_desc* d = (const pn_resize_desc*)layer->descriptor;
    PNV_TRY(check_resize_desc(d, reason));
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, d->mode == PN_RESIZE_NEAREST ? PNV_ANY : PNV_FLOAT,
                          reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    if (x->rank != d->rank || y->rank != d->rank) {
        return PNV_FAIL(reason, RESIZE ": the descriptor's rank is %u, the input's %u and the "
                        "output's %u; they must be equal",
                        d->rank, x->rank, y->rank);
    }
    for (uint32_t a = 0; a < d->rank; ++a) {
        if (x->dims[a] == 0 && y->dims[a] > 0) {
            return PNV_FAIL(reason, RESIZE ": axis %u of the input is empty; it cannot be "
                            "resized to %lld", a, (long long)y->dims[a]);
        }
    }
    return PN_OK;
}
