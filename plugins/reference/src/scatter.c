/* SCATTER (elements, nd) with the reductions none, add, mul, max and min: the output is data
 * with every update combined into it in row-major order of the updates. Replacing moves bytes
 * (any element type); the reductions compute floats in double (rounded once per update) and
 * integers exactly, wrapping to the width. Indices out of range fail execute(). */
#include "cpuref.h"

#include <string.h>

/* out[o] = reduction(out[o], updates[u]). */
static void combine(pn_data_type dtype, pn_scatter_reduction reduction, void* out, int64_t o,
                    const void* updates, int64_t u) {
    if (reduction == PN_SCATTER_REDUCTION_NONE) {
        size_t es = pn_dtype_size(dtype);
        memcpy((char*)out + (size_t)o * es, (const char*)updates + (size_t)u * es, es);
        return;
    }
    if (pn_dtype_is_float(dtype)) {
        double a = pn_load_double(dtype, out, o), v = pn_load_double(dtype, updates, u);
        double r = reduction == PN_SCATTER_REDUCTION_ADD   ? a + v
                   : reduction == PN_SCATTER_REDUCTION_MUL ? a * v
                   : reduction == PN_SCATTER_REDUCTION_MAX ? (v > a ? v : a)
                                                           : (v < a ? v : a);
        pn_store_double(dtype, out, o, r);
    } else if (pn_dtype_is_unsigned(dtype)) {
        uint64_t a = pn_load_uint64(dtype, out, o), v = pn_load_uint64(dtype, updates, u);
        uint64_t r = reduction == PN_SCATTER_REDUCTION_ADD   ? a + v
                     : reduction == PN_SCATTER_REDUCTION_MUL ? a * v
                     : reduction == PN_SCATTER_REDUCTION_MAX ? (v > a ? v : a)
                                                             : (v < a ? v : a);
        pn_store_uint64(dtype, out, o, r);
    } else {
        int64_t a = pn_load_int64(dtype, out, o), v = pn_load_int64(dtype, updates, u);
        /* Sums and products modulo 2^64 (no signed overflow), then wrapped to the width. */
        int64_t r = reduction == PN_SCATTER_REDUCTION_ADD   ? (int64_t)((uint64_t)a + (uint64_t)v)
                    : reduction == PN_SCATTER_REDUCTION_MUL ? (int64_t)((uint64_t)a * (uint64_t)v)
                    : reduction == PN_SCATTER_REDUCTION_MAX ? (v > a ? v : a)
                                                            : (v < a ? v : a);
        pn_store_int64(dtype, out, o, r);
    }
}

/* Update [i..] goes to data [i.. with i_axis replaced by indices[i..]]. */
static pn_status scatter_elements(const cpuref_op* op, const void* const* in, void* const* out,
                                  pn_string_out* message_out) {
    const pn_tensor_info* data = &op->inputs[0];
    const pn_tensor_info* indices = &op->inputs[1];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.scatter.axis, data->rank);
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
        combine(data->dtype, op->desc.scatter.reduction, out[0],
                cpuref_dot(at, strides, data->rank), in[2], i);
    }
    return PN_OK;
}

/* Each k-tuple of indices names the slice data[i0, .., ik-1, ...] its update slice goes to. */
static pn_status scatter_nd(const cpuref_op* op, const void* const* in, void* const* out,
                            pn_string_out* message_out) {
    const pn_tensor_info* data = &op->inputs[0];
    const pn_tensor_info* indices = &op->inputs[1];
    uint32_t q = indices->rank;
    uint32_t k = (uint32_t)indices->dims[q - 1];
    int64_t strides[PN_MAX_DIMS];
    cpuref_dense_strides(data, strides);
    int64_t tuples = cpuref_span(indices, 0, q - 1);
    int64_t block = cpuref_span(data, k, data->rank);
    for (int64_t t = 0; t < tuples; ++t) {
        int64_t offset = 0;
        for (uint32_t j = 0; j < k; ++j) {
            int64_t index;
            pn_status s = cpuref_load_index(op, indices->dtype, in[1], t * k + j, j,
                                            data->dims[j], &index, message_out);
            if (s != PN_OK) {
                return s;
            }
            offset += index * strides[j];
        }
        for (int64_t e = 0; e < block; ++e) {
            combine(data->dtype, op->desc.scatter.reduction, out[0], offset + e, in[2],
                    t * block + e);
        }
    }
    return PN_OK;
}

static pn_status scatter_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    memcpy(out[0], in[0], pn_num_bytes(&op->outputs[0]));
    if (op->desc.scatter.op == PN_SCATTER_ELEMENTS) {
        return scatter_elements(op, in, out, message_out);
    }
    return scatter_nd(op, in, out, message_out);
}

pn_status cpuref_scatter_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_scatter_desc), NULL, scatter_kernel, NULL,
                                     workload_out, message_out);
}
