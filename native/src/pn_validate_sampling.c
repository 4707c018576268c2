/* Validation of the layers that sample their input at computed positions (backend_api.h):
 * GRID_SAMPLE (ONNX GridSample), ROI_ALIGN (ONNX RoiAlign) and DEFORMABLE_CONVOLUTION
 * (ONNX DeformConv). */
#include "pn_validate_internal.h"

#include <math.h>

#define GRID "GridSample"
#define ROI "RoiAlign"
#define DEFORM "DeformableConvolution"

static pn_status check_bool(const char* kind, pn_bool value, const char* field,
                            pn_string_out* reason) {
    if (value > 1) {
        return PNV_FAIL(reason, "%s: %s must be 0 or 1, got %u", kind, field, value);
    }
    return PN_OK;
}

/* ---- GRID_SAMPLE ------------------------------------------------------------------- */

static pn_status check_grid_desc(const pn_grid_sample_desc* d, pn_string_out* reason) {
    if (d->mode < PN_RESIZE_NEAREST || d->mode > PN_RESIZE_CUBIC) {
        return PNV_FAIL(reason, GRID ": unknown mode %d (NEAREST, LINEAR or CUBIC)", (int)d->mode);
    }
    if (d->padding < PN_GRID_PADDING_ZEROS || d->padding > PN_GRID_PADDING_REFLECTION) {
        return PNV_FAIL(reason, GRID ": unknown padding %d (ZEROS, BORDER or REFLECTION)",
                        (int)d->padding);
    }
    return check_bool(GRID, d->align_corners, "align_corners", reason);
}

pn_status pn_validate_grid_sample(const pn_layer* layer, pn_string_out* reason) {
    const pn_grid_sample_desc* d = (const pn_grid_sample_desc*)layer->descriptor;
    PNV_TRY(check_grid_desc(d, reason));
    PNV_TRY(pnv_counts(layer, 2, 2, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* grid = &layer->inputs[1];
    PNV_TRY(pnv_rank(layer, x, "input x", 3, PN_MAX_DIMS, reason));
    PNV_TRY(pnv_type_class(layer, grid, "grid", PNV_FLOAT, reason));
    if (layer->outputs[0].dtype != x->dtype) {
        return PNV_FAIL(reason, GRID ": the output is %s but x is %s",
                        pn_dtype_name(layer->outputs[0].dtype), pn_dtype_name(x->dtype));
    }
    uint32_t r = x->rank - 2;
    if (grid->rank != r + 2) {
        return PNV_FAIL(reason, GRID ": grid must have rank %u (x has %u spatial axes), got "
                        "rank %u", r + 2, r, grid->rank);
    }
    /* grid [N, o_1..o_r, r]: its batch and last dims are fixed, the o_i are the output's. */
    pn_tensor_info expected_grid = *grid;
    expected_grid.dims[0] = x->dims[0];
    expected_grid.dims[r + 1] = (int64_t)r;
    PNV_TRY(pnv_shape_is(layer, grid, &expected_grid, "grid", reason));
    pn_tensor_info y = {0};
    y.rank = r + 2;
    y.dims[0] = x->dims[0];
    y.dims[1] = x->dims[1];
    for (uint32_t a = 0; a < r; ++a) {
        y.dims[2 + a] = grid->dims[1 + a];
    }
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}

/* ---- ROI_ALIGN --------------------------------------------------------------------- */

pn_status pn_validate_roi_align(const pn_layer* layer, pn_string_out* reason) {
    const pn_roi_align_desc* d = (const pn_roi_align_desc*)layer->descriptor;
    if (d->mode != PN_POOLING_MAX && d->mode != PN_POOLING_AVERAGE) {
        return PNV_FAIL(reason, ROI ": mode must be MAX or AVERAGE, got %d", (int)d->mode);
    }
    if (d->output_height < 1 || d->output_width < 1) {
        return PNV_FAIL(reason, ROI ": output_height and output_width must be >= 1, got %u and %u",
                        d->output_height, d->output_width);
    }
    if (!isfinite(d->spatial_scale)) {
        return PNV_FAIL(reason, ROI ": spatial_scale must be finite, got %g",
                        (double)d->spatial_scale);
    }
    PNV_TRY(check_bool(ROI, d->half_pixel, "half_pixel", reason));
    PNV_TRY(pnv_counts(layer, 3, 3, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* rois = &layer->inputs[1];
    const pn_tensor_info* batch = &layer->inputs[2];
    PNV_TRY(pnv_rank(layer, x, "input x", 4, 4, reason));
    PNV_TRY(pnv_rank(layer, rois, "rois", 2, 2, reason));
    PNV_TRY(pnv_rank(layer, batch, "batch_indices", 1, 1, reason));
    PNV_TRY(pnv_type_class(layer, batch, "batch_indices", PNV_INDEX, reason));
    if (rois->dtype != x->dtype || layer->outputs[0].dtype != x->dtype) {
        return PNV_FAIL(reason, ROI ": x, rois and the output must share one float type, got %s, "
                        "%s and %s", pn_dtype_name(x->dtype), pn_dtype_name(rois->dtype),
                        pn_dtype_name(layer->outputs[0].dtype));
    }
    PNV_TRY(pnv_type_class(layer, x, "input x", PNV_FLOAT, reason));
    if (rois->dims[1] != 4) {
        return PNV_FAIL(reason, ROI ": rois must be [R, 4] (x1, y1, x2, y2), got %lld columns",
                        (long long)rois->dims[1]);
    }
    if (batch->dims[0] != rois->dims[0]) {
        return PNV_FAIL(reason, ROI ": batch_indices has %lld entries for %lld rois",
                        (long long)batch->dims[0], (long long)rois->dims[0]);
    }
    pn_tensor_info y = {0};
    y.rank = 4;
    y.dims[0] = rois->dims[0];
    y.dims[1] = x->dims[1];
    y.dims[2] = d->output_height;
    y.dims[3] = d->output_width;
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}

/* ---- DEFORMABLE_CONVOLUTION -------------------------------------------------------- */

static pn_status check_deform_desc(const pn_deformable_convolution_desc* d,
                                   pn_string_out* reason) {
    if (d->spatial_rank < 1 || d->spatial_rank > 3) {
        return PNV_FAIL(reason, DEFORM ": spatial_rank must be 1, 2 or 3, got %u", d->spatial_rank);
    }
    for (uint32_t a = 0; a < d->spatial_rank; ++a) {
        if (d->strides[a] == 0) {
            return PNV_FAIL(reason, DEFORM ": strides[%u] must be >= 1, got 0", a);
        }
        if (d->dilations[a] == 0) {
            return PNV_FAIL(reason, DEFORM ": dilations[%u] must be >= 1, got 0", a);
        }
    }
    if (d->groups == 0 || d->offset_groups == 0) {
        return PNV_FAIL(reason, DEFORM ": groups and offset_groups must be >= 1, got %u and %u",
                        d->groups, d->offset_groups);
    }
    uint32_t known = PN_LAYER_FLAG_HAS_BIAS | PN_DEFORMABLE_HAS_MASK;
    if ((d->flags & ~known) != 0) {
        return PNV_FAIL(reason, DEFORM ": unknown flags 0x%x (PN_LAYER_FLAG_HAS_BIAS, "
                        "PN_DEFORMABLE_HAS_MASK)", d->flags & ~known);
    }
    return PN_OK;
}

/* The output's spatial dims and the kernel's size K from x, the weights and the descriptor. */
static pn_status deform_geometry(const pn_layer* layer, const pn_deformable_convolution_desc* d,
                                 pn_tensor_info* y, int64_t* taps, pn_string_out* reason) {
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[1];
    int64_t channels = x->dims[1];
    if (channels % d->groups != 0 || w->dims[0] % d->groups != 0) {
        return PNV_FAIL(reason, DEFORM ": groups (%u) must divide the input channels (%lld) and "
                        "the output channels (weights dim 0 = %lld)", d->groups,
                        (long long)channels, (long long)w->dims[0]);
    }
    if (channels % d->offset_groups != 0) {
        return PNV_FAIL(reason, DEFORM ": offset_groups (%u) must divide the input channels (%lld)",
                        d->offset_groups, (long long)channels);
    }
    if (w->dims[1] != channels / d->groups) {
        return PNV_FAIL(reason, DEFORM ": weights dim 1 is %lld, expected input channels / groups "
                        "= %lld", (long long)w->dims[1], (long long)(channels / d->groups));
    }
    y->rank = d->spatial_rank + 2;
    y->dims[0] = x->dims[0];
    y->dims[1] = w->dims[0];
    *taps = 1;
    for (uint32_t a = 0; a < d->spatial_rank; ++a) {
        int64_t k = w->dims[2 + a];
        if (k < 1 || k > UINT32_MAX) {
            return PNV_FAIL(reason, DEFORM ": the kernel size of spatial axis %u is %lld; it must "
                            "be 1..%u", a, (long long)k, UINT32_MAX);
        }
        int64_t out = pn_window_output_size(x->dims[2 + a], d->pads_begin[a], d->pads_end[a],
                                            (uint32_t)k, d->strides[a], d->dilations[a], 0);
        if (out < 1) {
            return PNV_FAIL(reason, DEFORM ": the window of spatial axis %u (kernel %lld, dilation "
                            "%u) does not fit the padded input (%lld + %u + %u)", a, (long long)k,
                            d->dilations[a], (long long)x->dims[2 + a], d->pads_begin[a],
                            d->pads_end[a]);
        }
        y->dims[2 + a] = out;
        *taps *= k;
    }
    return PN_OK;
}

/* [N, channels, out...]: the shape of offset and mask. */
static pn_tensor_info per_position(const pn_tensor_info* y, int64_t channels) {
    pn_tensor_info info = *y;
    info.dims[1] = channels;
    return info;
}

pn_status pn_validate_deformable_convolution(const pn_layer* layer, pn_string_out* reason) {
    const pn_deformable_convolution_desc* d =
        (const pn_deformable_convolution_desc*)layer->descriptor;
    PNV_TRY(check_deform_desc(d, reason));
    int has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    int has_mask = (d->flags & PN_DEFORMABLE_HAS_MASK) != 0;
    uint32_t expected = 3u + (uint32_t)has_bias + (uint32_t)has_mask;
    PNV_TRY(pnv_counts(layer, expected, expected, reason));
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_FLOAT, reason));
    uint32_t rank = d->spatial_rank + 2;
    PNV_TRY(pnv_rank(layer, &layer->inputs[0], "input x", rank, rank, reason));
    PNV_TRY(pnv_rank(layer, &layer->inputs[1], "weights", rank, rank, reason));
    pn_tensor_info y = {0};
    int64_t taps = 1;
    PNV_TRY(deform_geometry(layer, d, &y, &taps, reason));
    int64_t groups = d->offset_groups;
    pn_tensor_info offset = per_position(&y, groups * taps * (int64_t)d->spatial_rank);
    PNV_TRY(pnv_shape_is(layer, &layer->inputs[2], &offset, "offset", reason));
    uint32_t next = 3;
    if (has_bias) {
        pn_tensor_info bias = {0};
        bias.rank = 1;
        bias.dims[0] = y.dims[1];
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[next], &bias, "bias", reason));
        ++next;
    }
    if (has_mask) {
        pn_tensor_info mask = per_position(&y, groups * taps);
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[next], &mask, "mask", reason));
    }
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}
