/* Validation of PN_LAYER_DATA_DEPENDENT (NonZero, Unique, NonMaxSuppression, Compress): the
 * descriptor, the inputs, and outputs that are exactly the upper bounds backend_api.h derives
 * from the input shapes (NON_MAX_SUPPRESSION: any bound up to the largest possible). */
#include "plugnn/pn_validate.h"

#include <stdio.h>

#include "pn_validate_internal.h"

static const char* op_name(pn_data_dependent_op op) {
    switch (op) {
    case PN_DATA_DEPENDENT_NON_ZERO: return "NonZero";
    case PN_DATA_DEPENDENT_UNIQUE: return "Unique";
    case PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION: return "NonMaxSuppression";
    case PN_DATA_DEPENDENT_COMPRESS: return "Compress";
    default: return "?";
    }
}

static pn_status check_flag(const char* op, pn_bool value, const char* field,
                            pn_string_out* reason) {
    if (value > 1) {
        return PNV_FAIL(reason, "DataDependent %s: %s must be 0 or 1, got %u", op, field, value);
    }
    return PN_OK;
}

static pn_status check_counts(const pn_layer* layer, const char* op, uint32_t min_inputs,
                              uint32_t max_inputs, uint32_t outputs, pn_string_out* reason) {
    if (layer->num_inputs < min_inputs || layer->num_inputs > max_inputs ||
        layer->num_outputs != outputs) {
        return PNV_FAIL(reason, "DataDependent %s takes %u to %u inputs and has %u output(s), "
                        "got %u and %u", op, min_inputs, max_inputs, outputs, layer->num_inputs,
                        layer->num_outputs);
    }
    return PN_OK;
}

/* Output i is of `dtype` with the dims of `bound`. */
static pn_status check_output(const pn_layer* layer, const char* op, uint32_t i,
                              pn_data_type dtype, const pn_tensor_info* bound, const char* what,
                              pn_string_out* reason) {
    if (layer->outputs[i].dtype != dtype) {
        return PNV_FAIL(reason, "DataDependent %s: output %u (%s) must be %s, not %s", op, i, what,
                        pn_dtype_name(dtype), pn_dtype_name(layer->outputs[i].dtype));
    }
    char text[64];
    snprintf(text, sizeof(text), "output %u (%s, the upper bound)", i, what);
    return pnv_shape_is(layer, &layer->outputs[i], bound, text, reason);
}

static pn_tensor_info shape_of(uint32_t rank, const int64_t* dims) {
    pn_tensor_info info = {0};
    info.struct_size = (uint32_t)sizeof(pn_tensor_info);
    info.rank = rank;
    for (uint32_t i = 0; i < rank; ++i) {
        info.dims[i] = dims[i];
    }
    return info;
}

static pn_status non_zero(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(check_counts(layer, "NonZero", 1, 1, 1, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "input 0 (x)", 1, PN_MAX_DIMS, reason));
    int64_t dims[2] = {x->rank, pn_num_elements(x)};
    pn_tensor_info bound = shape_of(2, dims);
    return check_output(layer, "NonZero", 0, PN_DTYPE_INT64, &bound, "indices", reason);
}

static pn_status unique(const pn_layer* layer, const pn_data_dependent_desc* d,
                        pn_string_out* reason) {
    PNV_TRY(check_counts(layer, "Unique", 1, 1, 4, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    int64_t items;
    pn_tensor_info y;
    if (d->has_axis) {
        int32_t axis = pn_normalize_axis(d->axis, x->rank);
        if (x->rank == 0 || axis < 0) {
            return PNV_FAIL(reason, "DataDependent Unique: axis %d is out of range for rank %u",
                            d->axis, x->rank);
        }
        items = x->dims[axis];
        y = *x;
    } else {
        items = pn_num_elements(x);
        y = shape_of(1, &items);
    }
    PNV_TRY(check_output(layer, "Unique", 0, x->dtype, &y, "y", reason));
    pn_tensor_info list = shape_of(1, &items);
    PNV_TRY(check_output(layer, "Unique", 1, PN_DTYPE_INT64, &list, "indices", reason));
    PNV_TRY(check_output(layer, "Unique", 2, PN_DTYPE_INT64, &list, "inverse_indices", reason));
    return check_output(layer, "Unique", 3, PN_DTYPE_INT64, &list, "counts", reason);
}

static pn_status one_element(const pn_layer* layer, uint32_t i, const char* what,
                             pn_data_type dtype, pn_string_out* reason) {
    const pn_tensor_info* t = &layer->inputs[i];
    if (pn_num_elements(t) != 1 || t->dtype != dtype) {
        char text[160];
        return PNV_FAIL(reason, "DataDependent NonMaxSuppression: input %u (%s) must be one %s "
                        "element, got %s %s", i, what, pn_dtype_name(dtype),
                        pn_dtype_name(t->dtype), pn_format_shape(t, text, sizeof(text)));
    }
    return PN_OK;
}

static pn_status non_max_suppression(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(check_counts(layer, "NonMaxSuppression", 2, 5, 1, reason));
    const pn_tensor_info* boxes = &layer->inputs[0];
    const pn_tensor_info* scores = &layer->inputs[1];
    PNV_TRY(pnv_type_class(layer, boxes, "input 0 (boxes)", PNV_FLOAT, reason));
    if (scores->dtype != boxes->dtype) {
        return PNV_FAIL(reason, "DataDependent NonMaxSuppression: input 1 (scores) is %s, "
                        "input 0 (boxes) %s", pn_dtype_name(scores->dtype),
                        pn_dtype_name(boxes->dtype));
    }
    if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
        scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1]) {
        char a[160], b[160];
        return PNV_FAIL(reason, "DataDependent NonMaxSuppression: boxes must be [B, N, 4] and "
                        "scores [B, C, N], got %s and %s", pn_format_shape(boxes, a, sizeof(a)),
                        pn_format_shape(scores, b, sizeof(b)));
    }
    if (layer->num_inputs > 2) {
        PNV_TRY(one_element(layer, 2, "max_output_boxes_per_class", PN_DTYPE_INT64, reason));
    }
    if (layer->num_inputs > 3) {
        PNV_TRY(one_element(layer, 3, "iou_threshold", boxes->dtype, reason));
    }
    if (layer->num_inputs > 4) {
        PNV_TRY(one_element(layer, 4, "score_threshold", boxes->dtype, reason));
    }
    const pn_tensor_info* out = &layer->outputs[0];
    int64_t most = boxes->dims[0] * scores->dims[1] * boxes->dims[1];
    if (out->dtype != PN_DTYPE_INT64 || out->rank != 2 || out->dims[1] != 3 || out->dims[0] < 0 ||
        out->dims[0] > most) {
        char text[160];
        return PNV_FAIL(reason, "DataDependent NonMaxSuppression: output 0 (selected_indices) "
                        "must be int64 [R, 3] with R <= B * C * N = %lld (its upper bound), got "
                        "%s %s", (long long)most, pn_dtype_name(out->dtype),
                        pn_format_shape(out, text, sizeof(text)));
    }
    return PN_OK;
}

static pn_status compress(const pn_layer* layer, const pn_data_dependent_desc* d,
                          pn_string_out* reason) {
    PNV_TRY(check_counts(layer, "Compress", 2, 2, 1, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* condition = &layer->inputs[1];
    if (condition->dtype != PN_DTYPE_BOOL || condition->rank != 1) {
        char text[160];
        return PNV_FAIL(reason, "DataDependent Compress: input 1 (condition) must be a rank-1 "
                        "bool tensor, got %s %s", pn_dtype_name(condition->dtype),
                        pn_format_shape(condition, text, sizeof(text)));
    }
    int64_t length = condition->dims[0];
    pn_tensor_info bound;
    int64_t span;
    if (d->has_axis) {
        int32_t axis = pn_normalize_axis(d->axis, x->rank);
        if (x->rank == 0 || axis < 0) {
            return PNV_FAIL(reason, "DataDependent Compress: axis %d is out of range for rank %u",
                            d->axis, x->rank);
        }
        span = x->dims[axis];
        bound = *x;
        bound.dims[axis] = length < span ? length : span;
    } else {
        span = pn_num_elements(x);
        int64_t n = length < span ? length : span;
        bound = shape_of(1, &n);
    }
    if (length > span) {
        return PNV_FAIL(reason, "DataDependent Compress: the condition has %lld elements, more "
                        "than the %lld it selects from", (long long)length, (long long)span);
    }
    return check_output(layer, "Compress", 0, x->dtype, &bound, "output", reason);
}

pn_status pn_validate_data_dependent(const pn_layer* layer, pn_string_out* reason) {
    const pn_data_dependent_desc* d = (const pn_data_dependent_desc*)layer->descriptor;
    if (d->op < PN_DATA_DEPENDENT_NON_ZERO || d->op > PN_DATA_DEPENDENT_COMPRESS) {
        return PNV_FAIL(reason, "DataDependent: unknown op %d", (int)d->op);
    }
    const char* op = op_name(d->op);
    PNV_TRY(check_flag(op, d->has_axis, "has_axis", reason));
    PNV_TRY(check_flag(op, d->sorted, "sorted", reason));
    PNV_TRY(check_flag(op, d->center_point_box, "center_point_box", reason));
    int axis_op = d->op == PN_DATA_DEPENDENT_UNIQUE || d->op == PN_DATA_DEPENDENT_COMPRESS;
    if ((!axis_op && d->has_axis) || (!d->has_axis && d->axis != 0) ||
        (d->op != PN_DATA_DEPENDENT_UNIQUE && d->sorted) ||
        (d->op != PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION && d->center_point_box)) {
        return PNV_FAIL(reason, "DataDependent %s: a field that does not apply to it is set "
                        "(has_axis %u, axis %d, sorted %u, center_point_box %u)", op, d->has_axis,
                        d->axis, d->sorted, d->center_point_box);
    }
    switch (d->op) {
    case PN_DATA_DEPENDENT_NON_ZERO: return non_zero(layer, reason);
    case PN_DATA_DEPENDENT_UNIQUE: return unique(layer, d, reason);
    case PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION: return non_max_suppression(layer, reason);
    default: return compress(layer, d, reason);
    }
}
