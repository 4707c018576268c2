/* FULLY_CONNECTED (ONNX Gemm) and MATMUL (NumPy matmul). */
#include "cpuref.h"

/* A row-major matrix view, optionally read transposed. */
typedef struct matrix {
    const float* data;
    int64_t rows, cols; /* of the stored matrix */
    int transposed;     /* read element (r, c) of op(m) = m^T */
} matrix;

static double at(const matrix* m, int64_t r, int64_t c) {
    return m->transposed ? m->data[c * m->cols + r] : m->data[r * m->cols + c];
}

/* sum_k op(a)[r, k] * op(b)[k, c] in double. */
static double dot_row_col(const matrix* a, const matrix* b, int64_t r, int64_t c, int64_t k) {
    double acc = 0.0;
    for (int64_t i = 0; i < k; ++i) {
        acc += at(a, r, i) * at(b, i, c);
    }
    return acc;
}

/* ---- FULLY_CONNECTED -------------------------------------------------------- */

static void fully_connected_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_fully_connected_desc* d = &op->desc.fc;
    const pn_tensor_info* y = &op->outputs[0];
    const pn_tensor_info* a_info = &op->inputs[0];
    matrix a = {in[0], a_info->dims[0], a_info->dims[1], d->transpose_a != 0};
    matrix b = {in[1], op->inputs[1].dims[0], op->inputs[1].dims[1], d->transpose_b != 0};
    int64_t m = y->dims[0], n = y->dims[1];
    int64_t k = d->transpose_a ? a_info->dims[0] : a_info->dims[1];
    uint32_t next = 2;
    const float* c = NULL;
    int64_t cs[PN_MAX_DIMS] = {0};
    if (d->flags & PN_LAYER_FLAG_HAS_BIAS) {
        pn_broadcast_strides(&op->inputs[next], y, cs); /* validated: it broadcasts */
        c = in[next++];
    }
    const float* addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) ? in[next] : NULL;
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t col = 0; col < n; ++col) {
            double v = (double)d->alpha * dot_row_col(&a, &b, r, col, k);
            if (c != NULL) {
                v += (double)d->beta * c[r * cs[0] + col * cs[1]];
            }
            if (addend != NULL) {
                v += addend[r * n + col];
            }
            out[0][r * n + col] = (float)cpuref_fused(op, v);
        }
    }
}

pn_status cpuref_fully_connected_create(void* context, const pn_layer* layer,
                                        pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)layer->descriptor;
    return cpuref_workload_new(layer, sizeof(*d), d->fused_activation, fully_connected_kernel,
                               workload_out, message_out);
}

/* ---- MATMUL ------------------------------------------------------------------ */

/* The leading (batch) dims of `t`, leaving out its last `matrix_rank` dims. */
static pn_tensor_info leading_dims(const pn_tensor_info* t, uint32_t matrix_rank) {
    pn_tensor_info r = {0};
    r.rank = t->rank > matrix_rank ? t->rank - matrix_rank : 0;
    for (uint32_t i = 0; i < r.rank; ++i) {
        r.dims[i] = t->dims[i];
    }
    return r;
}

static void matmul_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_tensor_info* ai = &op->inputs[0];
    const pn_tensor_info* bi = &op->inputs[1];
    /* NumPy promotion: a [K] is [1, K], b [K] is [K, 1]; those 1s are not in the output. */
    int64_t m = ai->rank >= 2 ? ai->dims[ai->rank - 2] : 1;
    int64_t k = ai->dims[ai->rank - 1];
    int64_t n = bi->rank >= 2 ? bi->dims[bi->rank - 1] : 1;
    uint32_t y_matrix_rank = (ai->rank >= 2) + (bi->rank >= 2);
    pn_tensor_info yb = leading_dims(&op->outputs[0], y_matrix_rank);
    pn_tensor_info ab = leading_dims(ai, 2), bb = leading_dims(bi, 2);
    int64_t as[PN_MAX_DIMS] = {0}, bs[PN_MAX_DIMS] = {0}, index[PN_MAX_DIMS];
    pn_broadcast_strides(&ab, &yb, as); /* validated: they broadcast */
    pn_broadcast_strides(&bb, &yb, bs);
    int64_t batches = pn_num_elements(&yb);
    for (int64_t t = 0; t < batches; ++t) {
        cpuref_unravel(&yb, t, index);
        matrix a = {in[0] + cpuref_dot(index, as, yb.rank) * m * k, m, k, 0};
        matrix b = {in[1] + cpuref_dot(index, bs, yb.rank) * k * n, k, n, 0};
        float* y = out[0] + t * m * n;
        for (int64_t r = 0; r < m; ++r) {
            for (int64_t c = 0; c < n; ++c) {
                y[r * n + c] = (float)dot_row_col(&a, &b, r, c, k);
            }
        }
    }
}

pn_status cpuref_matmul_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, 0, NULL, matmul_kernel, workload_out, message_out);
}
