/* Validation of the reductions and their relatives (backend_api.h): PN_LAYER_REDUCE,
 * PN_LAYER_NORMALIZATION, PN_LAYER_TOP_K and PN_LAYER_CUMULATIVE: the descriptor, the
 * counts, the element types each op allows and every shape. */
#include "pn_validate_internal.h"

#include <math.h>
#include <stdio.h>

static pn_status check_bool(const pn_layer* layer, pn_bool value, const char* field,
                            pn_string_out* reason) {
    if (value > 1) {
        return PNV_FAIL(reason, "%s: %s must be 0 or 1, got %u", pn_layer_kind_name(layer->kind),
                        field, value);
    }
    return PN_OK;
}

static pn_status check_axis(const pn_layer* layer, int32_t axis, uint32_t rank,
                            pn_string_out* reason) {
    if (rank == 0) {
        return PNV_FAIL(reason, "%s: the input must have rank >= 1 (it has an axis %d), got rank 0",
                        pn_layer_kind_name(layer->kind), axis);
    }
    if (pn_normalize_axis(axis, rank) < 0) {
        return PNV_FAIL(reason, "%s: axis %d is out of range for rank %u",
                        pn_layer_kind_name(layer->kind), axis, rank);
    }
    return PN_OK;
}

/* ---- REDUCE ---------------------------------------------------------------- */

static const char* reduce_op_name(pn_reduce_op op) {
    switch (op) {
    case PN_REDUCE_SUM: return "SUM";
    case PN_REDUCE_MEAN: return "MEAN";
    case PN_REDUCE_MAX: return "MAX";
    case PN_REDUCE_MIN: return "MIN";
    case PN_REDUCE_PROD: return "PROD";
    case PN_REDUCE_L1: return "L1";
    case PN_REDUCE_L2: return "L2";
    case PN_REDUCE_LOG_SUM: return "LOG_SUM";
    case PN_REDUCE_LOG_SUM_EXP: return "LOG_SUM_EXP";
    case PN_REDUCE_SUM_SQUARE: return "SUM_SQUARE";
    case PN_REDUCE_ARG_MAX: return "ARG_MAX";
    case PN_REDUCE_ARG_MIN: return "ARG_MIN";
    case PN_REDUCE_INVALID: break;
    }
    return "?";
}

/* The element types of x each op takes (backend_api.h, pn_reduce_op). */
static pnv_class reduce_class(pn_reduce_op op) {
    switch (op) {
    case PN_REDUCE_MAX:
    case PN_REDUCE_MIN: return PNV_ANY; /* numeric or BOOL */
    case PN_REDUCE_LOG_SUM:
    case PN_REDUCE_LOG_SUM_EXP: return PNV_FLOAT;
    default: return PNV_NUMERIC;
    }
}

static int reduce_is_arg(pn_reduce_op op) {
    return op == PN_REDUCE_ARG_MAX || op == PN_REDUCE_ARG_MIN;
}

/* The axes: at most the rank, each in range, strictly increasing; ARG_* exactly one, of
 * size >= 1. */
static pn_status check_reduce_axes(const pn_reduce_desc* d, const pn_tensor_info* x,
                                   pn_string_out* reason) {
    if (d->num_axes > x->rank) {
        return PNV_FAIL(reason, "Reduce: num_axes %u is more than the input's rank %u", d->num_axes,
                        x->rank);
    }
    for (uint32_t i = 0; i < d->num_axes; ++i) {
        if (d->axes[i] >= x->rank) {
            return PNV_FAIL(reason, "Reduce: axes[%u] = %u is out of range for rank %u (axes are "
                            "resolved: 0 <= axis < rank)", i, d->axes[i], x->rank);
        }
        if (i > 0 && d->axes[i] <= d->axes[i - 1]) {
            return PNV_FAIL(reason, "Reduce: axes must be strictly increasing, got axes[%u] = %u "
                            "after %u", i, d->axes[i], d->axes[i - 1]);
        }
    }
    if (reduce_is_arg(d->op)) {
        if (d->num_axes != 1) {
            return PNV_FAIL(reason, "Reduce: %s takes exactly one axis, got %u",
                            reduce_op_name(d->op), d->num_axes);
        }
        if (x->dims[d->axes[0]] == 0) {
            return PNV_FAIL(reason, "Reduce: %s over axis %u of size 0 has no index to give",
                            reduce_op_name(d->op), d->axes[0]);
        }
    } else if (d->select_last_index) {
        return PNV_FAIL(reason, "Reduce: select_last_index is ARG_MAX's and ARG_MIN's, the op is %s",
                        reduce_op_name(d->op));
    }
    return PN_OK;
}

pn_status pn_validate_reduce(const pn_layer* layer, pn_string_out* reason) {
    const pn_reduce_desc* d = (const pn_reduce_desc*)layer->descriptor;
    if (d->op < PN_REDUCE_SUM || d->op > PN_REDUCE_ARG_MIN) {
        return PNV_FAIL(reason, "Reduce: unknown operation %d", (int)d->op);
    }
    PNV_TRY(check_bool(layer, d->keep_dims, "keep_dims", reason));
    PNV_TRY(check_bool(layer, d->select_last_index, "select_last_index", reason));
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    int arg = reduce_is_arg(d->op);
    const pn_tensor_info* x = &layer->inputs[0];
    if (pnv_type_class(layer, x, "input 0", reduce_class(d->op), NULL) != PN_OK) { /* the label: for the message */
        char what[48];
        snprintf(what, sizeof(what), "input 0 of %s", reduce_op_name(d->op));
        return pnv_type_class(layer, x, what, reduce_class(d->op), reason);
    }
    pn_data_type out_type = arg ? PN_DTYPE_INT64 : x->dtype;
    if (layer->outputs[0].dtype != out_type) {
        return PNV_FAIL(reason, "Reduce: the output of %s must be %s, got %s", reduce_op_name(d->op),
                        pn_dtype_name(out_type), pn_dtype_name(layer->outputs[0].dtype));
    }
    PNV_TRY(check_reduce_axes(d, x, reason));
    pn_tensor_info expected = {0};
    uint32_t next = 0;
    for (uint32_t i = 0; i < x->rank; ++i) {
        int reduced = 0;
        for (uint32_t j = 0; j < d->num_axes; ++j) {
            reduced |= d->axes[j] == i;
        }
        if (!reduced) {
            expected.dims[next++] = x->dims[i];
        } else if (d->keep_dims) {
            expected.dims[next++] = 1;
        }
    }
    expected.rank = next;
    return pnv_shape_is(layer, &layer->outputs[0], &expected,
                        d->keep_dims ? "output (reduced axes kept as 1)"
                                     : "output (reduced axes dropped)", reason);
}

/* ---- NORMALIZATION ----------------------------------------------------------- */

static const char* normalization_op_name(pn_normalization_op op) {
    switch (op) {
    case PN_NORMALIZATION_LAYER: return "LAYER";
    case PN_NORMALIZATION_RMS: return "RMS";
    case PN_NORMALIZATION_GROUP: return "GROUP";
    case PN_NORMALIZATION_LP: return "LP";
    case PN_NORMALIZATION_INVALID: break;
    }
    return "?";
}

/* scale or bias (`what`) broadcasts to x.shape[axis:], with a rank no larger. */
static pn_status check_trailing_parameter(const pn_tensor_info* param, const pn_tensor_info* x,
                                          uint32_t axis, const char* what, pn_string_out* reason) {
    pn_tensor_info normalized = {0};
    normalized.rank = x->rank - axis;
    for (uint32_t i = axis; i < x->rank; ++i) {
        normalized.dims[i - axis] = x->dims[i];
    }
    int64_t strides[PN_MAX_DIMS];
    if (param->rank > normalized.rank || pn_broadcast_strides(param, &normalized, strides) != 0) {
        char ps[160], ns[160];
        return PNV_FAIL(reason, "Normalization: %s of shape %s does not broadcast to the normalized "
                        "dims %s (x's dims from axis %u)", what, pn_format_shape(param, ps, sizeof(ps)),
                        pn_format_shape(&normalized, ns, sizeof(ns)), axis);
    }
    return PN_OK;
}

static pn_status check_normalization_descriptor(const pn_normalization_desc* d,
                                                pn_string_out* reason) {
    if (d->op < PN_NORMALIZATION_LAYER || d->op > PN_NORMALIZATION_LP) {
        return PNV_FAIL(reason, "Normalization: unknown operation %d", (int)d->op);
    }
    if ((d->flags & ~PN_LAYER_FLAG_HAS_BIAS) != 0) {
        return PNV_FAIL(reason, "Normalization: unknown flags 0x%x", d->flags & ~PN_LAYER_FLAG_HAS_BIAS);
    }
    if (d->op == PN_NORMALIZATION_LP) {
        if (d->num_groups != 1 && d->num_groups != 2) {
            return PNV_FAIL(reason, "Normalization: LP takes the order p = 1 or 2 (in num_groups), "
                            "got %u", d->num_groups);
        }
        if (d->flags != 0) {
            return PNV_FAIL(reason, "Normalization: LP takes no bias (flags must be 0, got 0x%x)",
                            d->flags);
        }
        return PN_OK;
    }
    if (!(d->epsilon >= 0.0f) || !isfinite(d->epsilon)) {
        return PNV_FAIL(reason, "Normalization: epsilon must be finite and >= 0, got %g",
                        (double)d->epsilon);
    }
    return PN_OK;
}

pn_status pn_validate_normalization(const pn_layer* layer, pn_string_out* reason) {
    const pn_normalization_desc* d = (const pn_normalization_desc*)layer->descriptor;
    PNV_TRY(check_normalization_descriptor(d, reason));
    int lp = d->op == PN_NORMALIZATION_LP;
    uint32_t inputs = lp ? 1u : ((d->flags & PN_LAYER_FLAG_HAS_BIAS) ? 3u : 2u);
    if (layer->num_inputs != inputs) {
        return PNV_FAIL(reason, "Normalization: %s takes %u input(s) (%s), got %u",
                        normalization_op_name(d->op), inputs,
                        lp ? "x" : (inputs == 3 ? "x, scale, bias" : "x, scale"), layer->num_inputs);
    }
    PNV_TRY(pnv_counts(layer, inputs, inputs, reason));
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_FLOAT, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], x, "output (x's shape)", reason));
    static const char* const names[] = {"x", "scale", "bias"};
    if (d->op == PN_NORMALIZATION_GROUP) {
        PNV_TRY(pnv_rank(layer, x, "x of GROUP [N, C, ...]", 2, PN_MAX_DIMS, reason));
        int64_t channels = x->dims[1];
        if (d->num_groups < 1 || channels % (int64_t)d->num_groups != 0) {
            return PNV_FAIL(reason, "Normalization: GROUP's num_groups %u must be >= 1 and divide "
                            "the %lld channels", d->num_groups, (long long)channels);
        }
        pn_tensor_info per_channel = {0};
        per_channel.rank = 1;
        per_channel.dims[0] = channels;
        for (uint32_t i = 1; i < inputs; ++i) {
            PNV_TRY(pnv_shape_is(layer, &layer->inputs[i], &per_channel, names[i], reason));
        }
        return PN_OK;
    }
    PNV_TRY(check_axis(layer, d->axis, x->rank, reason));
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    for (uint32_t i = 1; i < inputs; ++i) {
        PNV_TRY(check_trailing_parameter(&layer->inputs[i], x, axis, names[i], reason));
    }
    return PN_OK;
}

/* ---- TOP_K ----------------------------------------------------------------------- */

pn_status pn_validate_top_k(const pn_layer* layer, pn_string_out* reason) {
    const pn_top_k_desc* d = (const pn_top_k_desc*)layer->descriptor;
    PNV_TRY(check_bool(layer, d->largest, "largest", reason));
    PNV_TRY(check_bool(layer, d->sorted, "sorted", reason));
    if (layer->num_inputs != 1 || layer->num_outputs != 2) {
        return PNV_FAIL(reason, "TopK takes 1 input (x) and has 2 outputs (values, indices), got %u "
                        "and %u", layer->num_inputs, layer->num_outputs);
    }
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_type_class(layer, x, "input 0", PNV_NUMERIC, reason));
    if (layer->outputs[0].dtype != x->dtype) {
        return PNV_FAIL(reason, "TopK: output 0 (values) is %s but input 0 is %s",
                        pn_dtype_name(layer->outputs[0].dtype), pn_dtype_name(x->dtype));
    }
    if (layer->outputs[1].dtype != PN_DTYPE_INT64) {
        return PNV_FAIL(reason, "TopK: output 1 (indices) must be int64, not %s",
                        pn_dtype_name(layer->outputs[1].dtype));
    }
    PNV_TRY(check_axis(layer, d->axis, x->rank, reason));
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    const pn_tensor_info* values = &layer->outputs[0];
    if (values->rank != x->rank) {
        return PNV_FAIL(reason, "TopK: output 0 (values) has rank %u, x has rank %u", values->rank,
                        x->rank);
    }
    int64_t k = values->dims[axis];
    if (k > x->dims[axis]) {
        return PNV_FAIL(reason, "TopK: k = %lld (the outputs' dim %u) is more than x's dim %u (%lld)",
                        (long long)k, axis, axis, (long long)x->dims[axis]);
    }
    pn_tensor_info expected = *x;
    expected.dims[axis] = k;
    PNV_TRY(pnv_shape_is(layer, values, &expected, "output 0 (values)", reason));
    return pnv_shape_is(layer, &layer->outputs[1], &expected, "output 1 (indices)", reason);
}

/* ---- CUMULATIVE ---------------------------------------------------------------------- */

pn_status pn_validate_cumulative(const pn_layer* layer, pn_string_out* reason) {
    const pn_cumulative_desc* d = (const pn_cumulative_desc*)layer->descriptor;
    if (d->op < PN_CUMULATIVE_SUM || d->op > PN_CUMULATIVE_PROD) {
        return PNV_FAIL(reason, "Cumulative: unknown operation %d", (int)d->op);
    }
    PNV_TRY(check_bool(layer, d->exclusive, "exclusive", reason));
    PNV_TRY(check_bool(layer, d->reverse, "reverse", reason));
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_NUMERIC, reason));
    PNV_TRY(check_axis(layer, d->axis, layer->inputs[0].rank, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output (x's shape)", reason);
}
