/* GATHER (take, elements, nd) and ONE_HOT: reading by index, any element type (elements are
 * moved as bytes of pn_dtype_size). Indices out of range fail execute(). */
#include "cpuref.h"

#include <math.h>
#include <string.h>

void cpuref_dense_strides(const pn_tensor_info* info, int64_t strides[PN_MAX_DIMS]) {
    for (uint32_t i = 0; i < info->rank; ++i) {
        strides[i] = cpuref_span(info, i + 1, info->rank);
    }
}

pn_status cpuref_load_index(const cpuref_op* op, pn_data_type dtype, const void* indices,
                            int64_t i, uint32_t axis, int64_t size, int64_t* index_out,
                            pn_string_out* message_out) {
    int64_t index = pn_load_int64(dtype, indices, i);
    if (index < -size || index >= size) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s: index %lld is out of range for axis %u of size %lld (valid: %lld to "
                       "%lld)", pn_layer_kind_name(op->kind), (long long)index, axis,
                       (long long)size, (long long)-size, (long long)(size - 1));
    }
    *index_out = index < 0 ? index + size : index;
    return PN_OK;
}

/* ---- GATHER ------------------------------------------------------------------------- */

/* out[o, j, i] = data[o, indices[j], i] with o before the axis and i after it. */
static pn_status gather_take(const cpuref_op* op, const void* const* in, void* const* out,
                             pn_string_out* message_out) {
    const pn_tensor_info* data = &op->inputs[0];
    const pn_tensor_info* indices = &op->inputs[1];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.gather.axis, data->rank);
    int64_t size = data->dims[axis];
    int64_t outer = cpuref_span(data, 0, axis);
    int64_t count = pn_num_elements(indices);
    size_t block = (size_t)cpuref_span(data, axis + 1, data->rank) * pn_dtype_size(data->dtype);
    const char* src = (const char*)in[0];
    char* dst = (char*)out[0];
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < count; ++j) {
            int64_t index;
            pn_status s = cpuref_load_index(op, indices->dtype, in[1], j, axis, size, &index,
                                            message_out);
            if (s != PN_OK) {
                return s;
            }
            memcpy(dst + (size_t)(o * count + j) * block,
                   src + (size_t)(o * size + index) * block, block);
        }
    }
    return PN_OK;
}

/* out[i..] = data[i.. with i_axis replaced by indices[i..]]. */
static pn_status gather_elements(const cpuref_op* op, const void* const* in, void* const* out,
                                 pn_string_out* message_out) {
    const pn_tensor_info* data = &op->inputs[0];
    const pn_tensor_info* indices = &op->inputs[1];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.gather.axis, data->rank);
    size_t es = pn_dtype_size(data->dtype);
    int64_t strides[PN_MAX_DIMS], at[PN_MAX_DIMS];
    cpuref_dense_strides(data, strides);
    int64_t n = pn_num_elements(indices);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(indices, i, at);
        pn_status s = cpuref_load_index(op, indices->dtype, in[1], i, axis, data->dims[axis],
                                        &at[axis], message_out);
        if (s != PN_OK) {
            return s;
        }
        memcpy((char*)out[0] + (size_t)i * es,
               (const char*)in[0] + (size_t)cpuref_dot(at, strides, data->rank) * es, es);
    }
    return PN_OK;
}

/* Per batch and per k-tuple of indices, the slice data[batch.., i0, .., ik-1, ...]. */
static pn_status gather_nd(const cpuref_op* op, const void* const* in, void* const* out,
                           pn_string_out* message_out) {
    const pn_tensor_info* data = &op->inputs[0];
    const pn_tensor_info* indices = &op->inputs[1];
    uint32_t b = op->desc.gather.batch_dims;
    uint32_t q = indices->rank;
    uint32_t k = (uint32_t)indices->dims[q - 1];
    int64_t strides[PN_MAX_DIMS];
    cpuref_dense_strides(data, strides);
    int64_t batches = cpuref_span(indices, 0, b);
    int64_t tuples = cpuref_span(indices, b, q - 1);
    int64_t batch_elements = cpuref_span(data, b, data->rank);
    size_t block = (size_t)cpuref_span(data, b + k, data->rank) * pn_dtype_size(data->dtype);
    for (int64_t bi = 0; bi < batches; ++bi) {
        for (int64_t t = 0; t < tuples; ++t) {
            int64_t tuple = bi * tuples + t;
            int64_t offset = bi * batch_elements;
            for (uint32_t j = 0; j < k; ++j) {
                int64_t index;
                pn_status s = cpuref_load_index(op, indices->dtype, in[1], tuple * k + j, b + j,
                                                data->dims[b + j], &index, message_out);
                if (s != PN_OK) {
                    return s;
                }
                offset += index * strides[b + j];
            }
            memcpy((char*)out[0] + (size_t)tuple * block,
                   (const char*)in[0] + (size_t)offset * pn_dtype_size(data->dtype), block);
        }
    }
    return PN_OK;
}

pn_status cpuref_gather_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    (void)context;
    const pn_gather_desc* d = (const pn_gather_desc*)layer->descriptor;
    cpuref_typed_kernel kernel = d->op == PN_GATHER_TAKE       ? gather_take
                                 : d->op == PN_GATHER_ELEMENTS ? gather_elements
                                                               : gather_nd;
    return cpuref_typed_workload_new(layer, sizeof(pn_gather_desc), NULL, kernel, NULL,
                                     workload_out, message_out);
}

/* ---- ONE_HOT ------------------------------------------------------------------------ */

/* The position of the "on" value in a row of `depth`, or -1 for an all-off row. */
static int64_t one_hot_position(pn_data_type dtype, const void* indices, int64_t i,
                                int64_t depth) {
    double v;
    if (pn_dtype_is_float(dtype)) {
        v = trunc(pn_load_double(dtype, indices, i));
    } else if (pn_dtype_is_unsigned(dtype)) {
        uint64_t u = pn_load_uint64(dtype, indices, i);
        return u < (uint64_t)depth ? (int64_t)u : -1;
    } else {
        int64_t s = pn_load_int64(dtype, indices, i);
        if (s < -depth || s >= depth) {
            return -1;
        }
        return s < 0 ? s + depth : s;
    }
    if (!(v >= -(double)depth && v < (double)depth)) {
        return -1; /* NaN too */
    }
    int64_t s = (int64_t)v;
    return s < 0 ? s + depth : s;
}

static pn_status one_hot_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    (void)message_out;
    const pn_tensor_info* indices = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.one_hot.axis, y->rank);
    int64_t depth = y->dims[axis];
    int64_t outer = cpuref_span(indices, 0, axis);
    int64_t inner = cpuref_span(indices, axis, indices->rank);
    size_t es = pn_dtype_size(y->dtype);
    const char* off = (const char*)in[1];
    const char* on = off + es;
    char* dst = (char*)out[0];
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            int64_t hot = one_hot_position(indices->dtype, in[0], o * inner + i, depth);
            for (int64_t j = 0; j < depth; ++j) {
                memcpy(dst + (size_t)((o * depth + j) * inner + i) * es, j == hot ? on : off, es);
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_one_hot_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_one_hot_desc), NULL, one_hot_kernel, NULL,
                                     workload_out, message_out);
}
