/* Validation of the window layers: CONVOLUTION_2D and POOLING_2D. */
#include "pn_validate_internal.h"

#include <math.h>

#define CONV "Convolution2d"
#define POOL "Pooling2d"

/* ---- Shared window helpers ---------------------------------------------- */

static pn_status check_window_params(const char* kind, uint32_t stride_h, uint32_t stride_w,
                                     uint32_t dilation_h, uint32_t dilation_w,
                                     pn_string_out* reason) {
    if (stride_h == 0 || stride_w == 0) {
        return PNV_FAIL(reason, "%s: stride must be >= 1, got %ux%u", kind, stride_h, stride_w);
    }
    if (dilation_h == 0 || dilation_w == 0) {
        return PNV_FAIL(reason, "%s: dilation must be >= 1, got %ux%u", kind, dilation_h,
                        dilation_w);
    }
    return PN_OK;
}

/* One spatial axis: its output size from the formula, or a reason. */
static pn_status axis_output(const char* kind, const char* axis, int64_t in, uint32_t pad_begin,
                             uint32_t pad_end, uint32_t k, uint32_t stride, uint32_t dilation,
                             int ceil_mode, int64_t* out, pn_string_out* reason) {
    *out = pn_window_output_size(in, pad_begin, pad_end, k, stride, dilation, ceil_mode);
    if (*out < 0) {
        return PNV_FAIL(reason,
                        "%s: the %s window (kernel %u, dilation %u, span %lld) does not fit the "
                        "padded input %s (%lld + %u + %u)",
                        kind, axis, k, dilation, (long long)dilation * ((long long)k - 1) + 1, axis,
                        (long long)in, pad_begin, pad_end);
    }
    return PN_OK;
}

/* ---- CONVOLUTION_2D ----------------------------------------------------- */

static pn_status check_conv_desc(const pn_convolution_2d_desc* d, pn_string_out* reason) {
    if (d->layout != PN_LAYOUT_NCHW && d->layout != PN_LAYOUT_NHWC) {
        return PNV_FAIL(reason, CONV ": unknown data layout %d", (int)d->layout);
    }
    PNV_TRY(check_window_params(CONV, d->stride_h, d->stride_w, d->dilation_h, d->dilation_w,
                                reason));
    if (d->groups == 0) {
        return PNV_FAIL(reason, CONV ": groups must be >= 1, got 0");
    }
    if ((d->flags & ~(PN_LAYER_FLAG_HAS_BIAS | PN_LAYER_FLAG_HAS_ADDEND)) != 0) {
        return PNV_FAIL(reason, CONV ": unknown flags 0x%x", d->flags);
    }
    return pn_validate_fused_activation(d->fused_activation, CONV " fused activation", reason);
}

static pn_status check_conv_counts(const pn_layer* layer, const pn_convolution_2d_desc* d,
                                   pn_string_out* reason) {
    uint32_t has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) ? 1u : 0u;
    uint32_t has_addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) ? 1u : 0u;
    uint32_t expected = 2 + has_bias + has_addend;
    if (layer->num_inputs != expected) {
        return PNV_FAIL(reason,
                        CONV ": expected %u inputs (x, weights%s%s), got %u", expected,
                        has_bias ? ", bias" : "", has_addend ? ", addend" : "",
                        layer->num_inputs);
    }
    return pnv_counts(layer, expected, expected, reason);
}

static pn_status check_conv_channels(const pn_convolution_2d_desc* d, int64_t channels,
                                     const pn_tensor_info* w, pn_string_out* reason) {
    int64_t out_channels = w->dims[0];
    if (channels % d->groups != 0) {
        return PNV_FAIL(reason, CONV ": input channels (%lld) are not divisible by groups (%u)",
                        (long long)channels, d->groups);
    }
    if (out_channels % d->groups != 0) {
        return PNV_FAIL(reason, CONV ": output channels (weights dim 0 = %lld) are not divisible "
                        "by groups (%u)", (long long)out_channels, d->groups);
    }
    if (w->dims[1] != channels / d->groups) {
        return PNV_FAIL(reason, CONV ": weights dim 1 is %lld, expected input channels / groups "
                        "= %lld / %u = %lld", (long long)w->dims[1], (long long)channels,
                        d->groups, (long long)(channels / d->groups));
    }
    if (w->dims[2] == 0 || w->dims[3] == 0) {
        return PNV_FAIL(reason, CONV ": the kernel is empty (weights %lldx%lld)",
                        (long long)w->dims[2], (long long)w->dims[3]);
    }
    if (w->dims[2] > UINT32_MAX || w->dims[3] > UINT32_MAX) {
        return PNV_FAIL(reason, CONV ": the kernel is too large");
    }
    return PN_OK;
}

pn_status pn_validate_convolution_2d(const pn_layer* layer, pn_string_out* reason) {
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    PNV_TRY(check_conv_desc(d, reason));
    PNV_TRY(check_conv_counts(layer, d, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[1];
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_FLOAT, reason));
    PNV_TRY(pnv_rank(layer, x, "input x", 4, 4, reason));
    PNV_TRY(pnv_rank(layer, w, "weights", 4, 4, reason));
    int64_t nchw[4];
    pn_layout_nchw(x, d->layout, nchw);
    PNV_TRY(check_conv_channels(d, nchw[1], w, reason));

    uint32_t next = 2;
    if (d->flags & PN_LAYER_FLAG_HAS_BIAS) {
        pn_tensor_info bias_shape = {0};
        bias_shape.rank = 1;
        bias_shape.dims[0] = w->dims[0];
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[next++], &bias_shape, "bias", reason));
    }
    int64_t oh, ow;
    PNV_TRY(axis_output(CONV, "height", nchw[2], d->pad_top, d->pad_bottom, (uint32_t)w->dims[2],
                        d->stride_h, d->dilation_h, 0, &oh, reason));
    PNV_TRY(axis_output(CONV, "width", nchw[3], d->pad_left, d->pad_right, (uint32_t)w->dims[3],
                        d->stride_w, d->dilation_w, 0, &ow, reason));
    pn_tensor_info expected = {0};
    pn_layout_shape(d->layout, nchw[0], w->dims[0], oh, ow, &expected);
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason));
    if (d->flags & PN_LAYER_FLAG_HAS_ADDEND) {
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[next], &expected, "addend", reason));
    }
    return PN_OK;
}

/* ---- POOLING_2D --------------------------------------------------------- */

static pn_status check_pool_desc(const pn_pooling_2d_desc* d, pn_string_out* reason) {
    if (d->kind < PN_POOLING_MAX || d->kind > PN_POOLING_LP) {
        return PNV_FAIL(reason, POOL ": unknown pooling kind %d", (int)d->kind);
    }
    if (d->layout != PN_LAYOUT_NCHW && d->layout != PN_LAYOUT_NHWC) {
        return PNV_FAIL(reason, POOL ": unknown data layout %d", (int)d->layout);
    }
    if (d->kernel_h == 0 || d->kernel_w == 0) {
        return PNV_FAIL(reason, POOL ": kernel must be >= 1, got %ux%u", d->kernel_h, d->kernel_w);
    }
    PNV_TRY(check_window_params(POOL, d->stride_h, d->stride_w, d->dilation_h, d->dilation_w,
                                reason));
    return pnv_pool_mode(POOL, d->kind, d->rounding, d->padding_method, d->p, reason);
}

pn_status pnv_pool_mode(const char* what, pn_pooling_kind kind, pn_output_rounding rounding,
                        pn_padding_method padding_method, float p, pn_string_out* reason) {
    if (rounding != PN_ROUNDING_FLOOR && rounding != PN_ROUNDING_CEIL) {
        return PNV_FAIL(reason, "%s: unknown output rounding %d", what, (int)rounding);
    }
    if (kind == PN_POOLING_AVERAGE && padding_method != PN_PADDING_EXCLUDE &&
        padding_method != PN_PADDING_INCLUDE) {
        return PNV_FAIL(reason, "%s: unknown padding method %d", what, (int)padding_method);
    }
    if (kind == PN_POOLING_LP && !(p > 0.0f && isfinite(p))) {
        return PNV_FAIL(reason, "%s: the Lp order p must be finite and > 0, got %g", what, (double)p);
    }
    return PN_OK;
}

int64_t pnv_first_empty_window(int64_t in, uint32_t pad_begin, uint32_t k, uint32_t stride,
                               uint32_t dilation, int64_t out) {
    for (int64_t o = 0; o < out; ++o) {
        int64_t start = o * (int64_t)stride - (int64_t)pad_begin;
        /* The first tap at or past index 0, then whether it lands inside the input. */
        int64_t tap = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
        if (tap >= (int64_t)k || start + tap * (int64_t)dilation >= in) {
            return o;
        }
    }
    return -1;
}

/* MAX and excluding AVERAGE have no value over a window of padding only. */
static pn_status check_pool_coverage(const pn_pooling_2d_desc* d, const int64_t nchw[4],
                                     int64_t oh, int64_t ow, pn_string_out* reason) {
    int needs_real = d->kind == PN_POOLING_MAX ||
                     (d->kind == PN_POOLING_AVERAGE && d->padding_method == PN_PADDING_EXCLUDE);
    if (!needs_real) {
        return PN_OK;
    }
    int64_t row = pnv_first_empty_window(nchw[2], d->pad_top, d->kernel_h, d->stride_h,
                                     d->dilation_h, oh);
    int64_t col = pnv_first_empty_window(nchw[3], d->pad_left, d->kernel_w, d->stride_w,
                                     d->dilation_w, ow);
    if (row >= 0 && ow > 0) {
        return PNV_FAIL(reason, POOL ": the window of output row %lld covers only padding, "
                        "where this pooling has no value", (long long)row);
    }
    if (col >= 0 && oh > 0) {
        return PNV_FAIL(reason, POOL ": the window of output column %lld covers only padding, "
                        "where this pooling has no value", (long long)col);
    }
    return PN_OK;
}

pn_status pn_validate_pooling_2d(const pn_layer* layer, pn_string_out* reason) {
    const pn_pooling_2d_desc* d = (const pn_pooling_2d_desc*)layer->descriptor;
    PNV_TRY(check_pool_desc(d, reason));
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, d->kind == PN_POOLING_MAX ? PNV_NUMERIC : PNV_FLOAT,
                          reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "input", 4, 4, reason));
    int64_t nchw[4];
    pn_layout_nchw(x, d->layout, nchw);
    int ceil_mode = d->rounding == PN_ROUNDING_CEIL;
    int64_t oh, ow;
    PNV_TRY(axis_output(POOL, "height", nchw[2], d->pad_top, d->pad_bottom, d->kernel_h,
                        d->stride_h, d->dilation_h, ceil_mode, &oh, reason));
    PNV_TRY(axis_output(POOL, "width", nchw[3], d->pad_left, d->pad_right, d->kernel_w,
                        d->stride_w, d->dilation_w, ceil_mode, &ow, reason));
    pn_tensor_info expected = {0};
    pn_layout_shape(d->layout, nchw[0], nchw[1], oh, ow, &expected);
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason));
    return check_pool_coverage(d, nchw, oh, ow, reason);
}
