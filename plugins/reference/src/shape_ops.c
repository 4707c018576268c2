/* CONCAT, RESHAPE, TRANSPOSE and COPY: data movement only. */
#include "cpuref.h"

/* ---- CONCAT -------------------------------------------------------------------- */

static void concat_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_tensor_info* y = &op->outputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.concat.axis, y->rank);
    int64_t outer = cpuref_span(y, 0, axis);
    int64_t inner = cpuref_span(y, axis + 1, y->rank);
    float* dst = out[0];
    for (int64_t o = 0; o < outer; ++o) {
        for (uint32_t k = 0; k < op->num_inputs; ++k) {
            /* Input k contributes one block of dims[axis] * inner per outer index. */
            int64_t block = op->inputs[k].dims[axis] * inner;
            cpuref_copy_floats(dst, in[k] + o * block, block);
            dst += block;
        }
    }
}

pn_status cpuref_concat_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_concat_desc), NULL, concat_kernel, workload_out,
                               message_out);
}

/* ---- RESHAPE and COPY: the same dense bytes ------------------------------------------ */

static void dense_copy_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    cpuref_copy_floats(out[0], in[0], pn_num_elements(&op->outputs[0]));
}

pn_status cpuref_reshape_create(void* context, const pn_layer* layer,
                                pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, 0, NULL, dense_copy_kernel, workload_out, message_out);
}

pn_status cpuref_copy_create(void* context, const pn_layer* layer,
                             pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, 0, NULL, dense_copy_kernel, workload_out, message_out);
}

/* ---- TRANSPOSE ----------------------------------------------------------------------- */

static void transpose_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_transpose_desc* d = &op->desc.transpose;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
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
        out[0][i] = in[0][cpuref_dot(index, y_strides, y->rank)];
    }
}

pn_status cpuref_transpose_create(void* context, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_transpose_desc), NULL, transpose_kernel,
                               workload_out, message_out);
}
