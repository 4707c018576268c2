/* Validation of the indexing kinds, GATHER, SCATTER and ONE_HOT (backend_api.h): the
 * descriptor, the counts, the index types and every shape. Index values are the data's to
 * judge (execute() fails for one out of range). */
#include "pn_validate_internal.h"

/* Dims [from, to) of `src` appended to `out`. */
static void append_dims(pn_tensor_info* out, const pn_tensor_info* src, uint32_t from,
                        uint32_t to) {
    for (uint32_t i = from; i < to; ++i) {
        out->dims[out->rank++] = src->dims[i];
    }
}

static pn_tensor_info empty_shape(void) {
    pn_tensor_info info = {0};
    info.struct_size = (uint32_t)sizeof(info);
    return info;
}

static pn_status check_axis(const pn_layer* layer, int32_t axis, uint32_t rank,
                            pn_string_out* reason) {
    if (pn_normalize_axis(axis, rank) < 0) {
        return PNV_FAIL(reason, "%s: axis %d is out of range for rank %u",
                        pn_layer_kind_name(layer->kind), axis, rank);
    }
    return PN_OK;
}

/* indices dims <= data dims on every axis but `axis` (ELEMENTS forms); same rank. */
static pn_status check_elements_shape(const pn_layer* layer, const pn_tensor_info* data,
                                      const pn_tensor_info* indices, uint32_t axis,
                                      pn_string_out* reason) {
    char ds[160], is[160];
    if (indices->rank != data->rank) {
        return PNV_FAIL(reason, "%s: indices of shape %s must have the rank of data %s",
                        pn_layer_kind_name(layer->kind), pn_format_shape(indices, is, sizeof(is)),
                        pn_format_shape(data, ds, sizeof(ds)));
    }
    for (uint32_t i = 0; i < data->rank; ++i) {
        if (i != axis && indices->dims[i] > data->dims[i]) {
            return PNV_FAIL(reason, "%s: indices of shape %s exceed data %s on axis %u (only "
                            "axis %u may be larger)", pn_layer_kind_name(layer->kind),
                            pn_format_shape(indices, is, sizeof(is)),
                            pn_format_shape(data, ds, sizeof(ds)), i, axis);
        }
    }
    return PN_OK;
}

/* ---- GATHER ------------------------------------------------------------------------- */

static pn_status gather_expected(const pn_layer* layer, const pn_gather_desc* d,
                                 pn_tensor_info* expected, pn_string_out* reason) {
    const pn_tensor_info* data = &layer->inputs[0];
    const pn_tensor_info* indices = &layer->inputs[1];
    char ds[160], is[160];
    *expected = empty_shape();
    if (d->op == PN_GATHER_TAKE || d->op == PN_GATHER_ELEMENTS) {
        if (d->batch_dims != 0) {
            return PNV_FAIL(reason, "Gather: batch_dims is ND's, got %u", d->batch_dims);
        }
        PNV_TRY(check_axis(layer, d->axis, data->rank, reason));
        uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, data->rank);
        if (d->op == PN_GATHER_ELEMENTS) {
            PNV_TRY(check_elements_shape(layer, data, indices, axis, reason));
            append_dims(expected, indices, 0, indices->rank);
            return PN_OK;
        }
        if (data->rank - 1 + indices->rank > PN_MAX_DIMS) {
            return PNV_FAIL(reason, "Gather: data %s and indices %s give an output of rank %u > %d",
                            pn_format_shape(data, ds, sizeof(ds)),
                            pn_format_shape(indices, is, sizeof(is)),
                            data->rank - 1 + indices->rank, PN_MAX_DIMS);
        }
        append_dims(expected, data, 0, axis);
        append_dims(expected, indices, 0, indices->rank);
        append_dims(expected, data, axis + 1, data->rank);
        return PN_OK;
    }
    /* ND */
    if (d->axis != 0) {
        return PNV_FAIL(reason, "Gather: axis is TAKE's and ELEMENTS', ND takes 0, got %d",
                        d->axis);
    }
    uint32_t b = d->batch_dims;
    uint32_t q = indices->rank;
    uint32_t lowest = q < data->rank ? q : data->rank;
    if (q < 1 || b >= lowest) {
        return PNV_FAIL(reason, "Gather: ND batch_dims %u must be below the ranks of data %s and "
                        "indices %s", b, pn_format_shape(data, ds, sizeof(ds)),
                        pn_format_shape(indices, is, sizeof(is)));
    }
    for (uint32_t i = 0; i < b; ++i) {
        if (data->dims[i] != indices->dims[i]) {
            return PNV_FAIL(reason, "Gather: ND data %s and indices %s differ in batch dim %u",
                            pn_format_shape(data, ds, sizeof(ds)),
                            pn_format_shape(indices, is, sizeof(is)), i);
        }
    }
    int64_t k = indices->dims[q - 1];
    if (k < 1 || k > (int64_t)(data->rank - b)) {
        return PNV_FAIL(reason, "Gather: ND indices' last dim %lld must be in 1..%u (data's rank "
                        "%u minus batch_dims %u)", (long long)k, data->rank - b, data->rank, b);
    }
    if (q - 1 + data->rank - b - (uint32_t)k > PN_MAX_DIMS) {
        return PNV_FAIL(reason, "Gather: ND output rank %u exceeds %d",
                        q - 1 + data->rank - b - (uint32_t)k, PN_MAX_DIMS);
    }
    append_dims(expected, indices, 0, q - 1);
    append_dims(expected, data, b + (uint32_t)k, data->rank);
    return PN_OK;
}

pn_status pn_validate_gather(const pn_layer* layer, pn_string_out* reason) {
    const pn_gather_desc* d = (const pn_gather_desc*)layer->descriptor;
    if (d->op < PN_GATHER_TAKE || d->op > PN_GATHER_ND) {
        return PNV_FAIL(reason, "Gather: unknown operation %d", (int)d->op);
    }
    PNV_TRY(pnv_counts(layer, 2, 2, reason));
    PNV_TRY(pnv_type_class(layer, &layer->inputs[1], "input 1 (indices)", PNV_INDEX, reason));
    if (layer->outputs[0].dtype != layer->inputs[0].dtype) {
        return PNV_FAIL(reason, "Gather: the output is %s but data is %s",
                        pn_dtype_name(layer->outputs[0].dtype),
                        pn_dtype_name(layer->inputs[0].dtype));
    }
    PNV_TRY(pnv_rank(layer, &layer->inputs[0], "input 0 (data)", 1, PN_MAX_DIMS, reason));
    pn_tensor_info expected;
    PNV_TRY(gather_expected(layer, d, &expected, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason);
}

/* ---- SCATTER ------------------------------------------------------------------------ */

static pn_status scatter_shapes(const pn_layer* layer, const pn_scatter_desc* d,
                                pn_string_out* reason) {
    const pn_tensor_info* data = &layer->inputs[0];
    const pn_tensor_info* indices = &layer->inputs[1];
    const pn_tensor_info* updates = &layer->inputs[2];
    char ds[160], is[160];
    if (d->op == PN_SCATTER_ELEMENTS) {
        PNV_TRY(check_axis(layer, d->axis, data->rank, reason));
        uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, data->rank);
        PNV_TRY(check_elements_shape(layer, data, indices, axis, reason));
        PNV_TRY(pnv_shape_is(layer, updates, indices, "input 2 (updates, the indices' shape)",
                             reason));
    } else {
        if (d->axis != 0) {
            return PNV_FAIL(reason, "Scatter: axis is ELEMENTS', ND takes 0, got %d", d->axis);
        }
        uint32_t q = indices->rank;
        int64_t k = q >= 1 ? indices->dims[q - 1] : 0;
        if (q < 1 || k < 1 || k > (int64_t)data->rank) {
            return PNV_FAIL(reason, "Scatter: ND indices %s need rank >= 1 and a last dim in "
                            "1..%u (data %s)", pn_format_shape(indices, is, sizeof(is)),
                            data->rank, pn_format_shape(data, ds, sizeof(ds)));
        }
        if (q - 1 + data->rank - (uint32_t)k > PN_MAX_DIMS) {
            return PNV_FAIL(reason, "Scatter: ND updates would have rank %u > %d",
                            q - 1 + data->rank - (uint32_t)k, PN_MAX_DIMS);
        }
        pn_tensor_info expected = empty_shape();
        append_dims(&expected, indices, 0, q - 1);
        append_dims(&expected, data, (uint32_t)k, data->rank);
        PNV_TRY(pnv_shape_is(layer, updates, &expected,
                             "input 2 (updates, indices[:-1] + data[k:])", reason));
    }
    return pnv_shape_is(layer, &layer->outputs[0], data, "output (data's shape)", reason);
}

pn_status pn_validate_scatter(const pn_layer* layer, pn_string_out* reason) {
    const pn_scatter_desc* d = (const pn_scatter_desc*)layer->descriptor;
    if (d->op < PN_SCATTER_ELEMENTS || d->op > PN_SCATTER_ND) {
        return PNV_FAIL(reason, "Scatter: unknown operation %d", (int)d->op);
    }
    if (d->reduction < PN_SCATTER_REDUCTION_NONE || d->reduction > PN_SCATTER_REDUCTION_MIN) {
        return PNV_FAIL(reason, "Scatter: unknown reduction %d", (int)d->reduction);
    }
    PNV_TRY(pnv_counts(layer, 3, 3, reason));
    PNV_TRY(pnv_type_class(layer, &layer->inputs[1], "input 1 (indices)", PNV_INDEX, reason));
    pn_data_type t = layer->inputs[0].dtype;
    if (layer->inputs[2].dtype != t || layer->outputs[0].dtype != t) {
        return PNV_FAIL(reason, "Scatter: data (%s), updates (%s) and the output (%s) must share "
                        "one type", pn_dtype_name(t), pn_dtype_name(layer->inputs[2].dtype),
                        pn_dtype_name(layer->outputs[0].dtype));
    }
    if (d->reduction != PN_SCATTER_REDUCTION_NONE) {
        PNV_TRY(pnv_type_class(layer, &layer->inputs[0], "data (with a reduction)", PNV_NUMERIC,
                               reason));
    }
    PNV_TRY(pnv_rank(layer, &layer->inputs[0], "input 0 (data)", 1, PN_MAX_DIMS, reason));
    return scatter_shapes(layer, d, reason);
}

/* ---- ONE_HOT ------------------------------------------------------------------------ */

pn_status pn_validate_one_hot(const pn_layer* layer, pn_string_out* reason) {
    const pn_one_hot_desc* d = (const pn_one_hot_desc*)layer->descriptor;
    PNV_TRY(pnv_counts(layer, 2, 2, reason));
    const pn_tensor_info* indices = &layer->inputs[0];
    const pn_tensor_info* values = &layer->inputs[1];
    const pn_tensor_info* y = &layer->outputs[0];
    PNV_TRY(pnv_type_class(layer, indices, "input 0 (indices)", PNV_NUMERIC, reason));
    if (values->rank != 1 || values->dims[0] != 2) {
        char vs[160];
        return PNV_FAIL(reason, "OneHot: input 1 (values) must be [off, on] of shape [2], got %s",
                        pn_format_shape(values, vs, sizeof(vs)));
    }
    if (y->dtype != values->dtype) {
        return PNV_FAIL(reason, "OneHot: the output is %s but the values are %s",
                        pn_dtype_name(y->dtype), pn_dtype_name(values->dtype));
    }
    if (indices->rank + 1 > PN_MAX_DIMS) {
        return PNV_FAIL(reason, "OneHot: indices of rank %u give an output of rank %u > %d",
                        indices->rank, indices->rank + 1, PN_MAX_DIMS);
    }
    PNV_TRY(check_axis(layer, d->axis, indices->rank + 1, reason));
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, indices->rank + 1);
    if (y->rank != indices->rank + 1) {
        return PNV_FAIL(reason, "OneHot: the output must have rank %u (the indices' plus one), got "
                        "%u", indices->rank + 1, y->rank);
    }
    pn_tensor_info expected = empty_shape();
    append_dims(&expected, indices, 0, axis);
    expected.dims[expected.rank++] = y->dims[axis];
    append_dims(&expected, indices, axis, indices->rank);
    return pnv_shape_is(layer, y, &expected, "output (the indices' shape with the depth inserted)",
                        reason);
}
