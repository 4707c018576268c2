/* CONCAT, RESHAPE, TRANSPOSE and COPY: data movement only, any element type. */
#include "cpuref.h"

#include <string.h>

/* memcpy of n bytes that accepts n == 0 with NULL pointers. */
static void copy_bytes(void* dst, const void* src, int64_t n) {
    if (n > 0) {
        memcpy(dst, src, (size_t)n);
    }
}

/* ---- CONCAT -------------------------------------------------------------------- */

static pn_status concat_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    (void)message_out;
    const pn_tensor_info* y = &op->outputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.concat.axis, y->rank);
    int64_t size = (int64_t)pn_dtype_size(y->dtype);
    int64_t outer = cpuref_span(y, 0, axis);
    int64_t inner = cpuref_span(y, axis + 1, y->rank) * size;
    char* dst = (char*)out[0];
    for (int64_t o = 0; o < outer; ++o) {
        for (uint32_t k = 0; k < op->num_inputs; ++k) {
            /* Input k contributes one block of dims[axis] * inner per outer index. */
            int64_t block = op->inputs[k].dims[axis] * inner;
            copy_bytes(dst, (const char*)in[k] + o * block, block);
            dst += block;
        }
    }
    return PN_OK;
}

pn_status cpuref_concat_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_concat_desc), NULL, concat_kernel, NULL,
                                     workload_out, message_out);
}

/* ---- RESHAPE and COPY: the same dense bytes ------------------------------------------ */

static pn_status dense_copy_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                   pn_string_out* message_out) {
    (void)message_out;
    copy_bytes(out[0], in[0], (int64_t)pn_num_bytes(&op->outputs[0]));
    return PN_OK;
}

pn_status cpuref_reshape_create(void* context, const pn_layer* layer,
                                pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, 0, NULL, dense_copy_kernel, NULL, workload_out,
                                     message_out);
}

pn_status cpuref_copy_create(void* context, const pn_layer* layer,
                             pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, 0, NULL, dense_copy_kernel, NULL, workload_out,
                                     message_out);
}

/* ---- TRANSPOSE ----------------------------------------------------------------------- */

static pn_status transpose_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                  pn_string_out* message_out) {
    (void)message_out;
    const pn_transpose_desc* d = &op->desc.transpose;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    size_t size = pn_dtype_size(y->dtype);
    /* Output dim i walks input dim perm[i]: its stride is that dim's input stride. */
    int64_t x_strides[PN_MAX_DIMS], y_strides[PN_MAX_DIMS], index[PN_MAX_DIMS];
    for (uint32_t i = 0; i < x->rank; ++i) {
        x_strides[i] = cpuref_span(x, i + 1, x->rank);
    }
    for (uint32_t i = 0; i < y->rank; ++i) {
        y_strides[i] = x_strides[d->perm[i]];
    }
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(y, i, index);
        memcpy((char*)out[0] + i * (int64_t)size,
               (const char*)in[0] + cpuref_dot(index, y_strides, y->rank) * (int64_t)size, size);
    }
    return PN_OK;
}

pn_status cpuref_transpose_create(void* context, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_transpose_desc), NULL, transpose_kernel,
                                     NULL, workload_out, message_out);
}
