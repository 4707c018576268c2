/* FULLY_CONNECTED (ONNX Gemm) and MATMUL (NumPy matmul; float32 through the float kernel, every
 * other numeric type through a typed one). */
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

/* A matmul's shape: NumPy promotion (a [K] is [1, K], b [K] is [K, 1]; those 1s are not in
 * the output), the output's batch dims and each operand's broadcast batch strides. */
typedef struct matmul_geometry {
    int64_t m, k, n;
    pn_tensor_info batch;                          /* the output's batch dims */
    int64_t a_strides[PN_MAX_DIMS], b_strides[PN_MAX_DIMS];
} matmul_geometry;

static matmul_geometry matmul_geometry_of(const cpuref_op* op) {
    const pn_tensor_info* ai = &op->inputs[0];
    const pn_tensor_info* bi = &op->inputs[1];
    matmul_geometry g;
    g.m = ai->rank >= 2 ? ai->dims[ai->rank - 2] : 1;
    g.k = ai->dims[ai->rank - 1];
    g.n = bi->rank >= 2 ? bi->dims[bi->rank - 1] : 1;
    g.batch = leading_dims(&op->outputs[0], (ai->rank >= 2) + (bi->rank >= 2));
    pn_tensor_info ab = leading_dims(ai, 2), bb = leading_dims(bi, 2);
    for (uint32_t i = 0; i < PN_MAX_DIMS; ++i) {
        g.a_strides[i] = g.b_strides[i] = 0;
    }
    pn_broadcast_strides(&ab, &g.batch, g.a_strides); /* validated: they broadcast */
    pn_broadcast_strides(&bb, &g.batch, g.b_strides);
    return g;
}

/* The first element of batch t's matrices in a and b. */
static void matmul_batch(const matmul_geometry* g, int64_t t, int64_t* a_start, int64_t* b_start) {
    int64_t index[PN_MAX_DIMS];
    cpuref_unravel(&g->batch, t, index);
    *a_start = cpuref_dot(index, g->a_strides, g->batch.rank) * g->m * g->k;
    *b_start = cpuref_dot(index, g->b_strides, g->batch.rank) * g->k * g->n;
}

/* float32: sums in double over the float data. */
static void matmul_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    matmul_geometry g = matmul_geometry_of(op);
    int64_t batches = pn_num_elements(&g.batch);
    for (int64_t t = 0; t < batches; ++t) {
        int64_t a_start, b_start;
        matmul_batch(&g, t, &a_start, &b_start);
        matrix a = {in[0] + a_start, g.m, g.k, 0};
        matrix b = {in[1] + b_start, g.k, g.n, 0};
        float* y = out[0] + t * g.m * g.n;
        for (int64_t r = 0; r < g.m; ++r) {
            for (int64_t c = 0; c < g.n; ++c) {
                y[r * g.n + c] = (float)dot_row_col(&a, &b, r, c, g.k);
            }
        }
    }
}

/* One output element of another type: floats summed in double and rounded once, integers
 * exactly modulo 2^64 (so modulo the type's width once stored). */
static void matmul_element(const cpuref_op* op, const void* const* in, void* y, int64_t at,
                           int64_t a_row, int64_t b_col, int64_t k, int64_t n) {
    pn_data_type dtype = op->inputs[0].dtype;
    cpuref_domain domain = cpuref_domain_of(dtype);
    if (domain == CPUREF_FLOAT) {
        double acc = 0.0;
        for (int64_t i = 0; i < k; ++i) {
            acc += pn_load_double(dtype, in[0], a_row + i) * pn_load_double(dtype, in[1], b_col + i * n);
        }
        pn_store_double(dtype, y, at, acc);
        return;
    }
    uint64_t acc = 0;
    for (int64_t i = 0; i < k; ++i) {
        uint64_t a = domain == CPUREF_SIGNED ? (uint64_t)pn_load_int64(dtype, in[0], a_row + i)
                                             : pn_load_uint64(dtype, in[0], a_row + i);
        uint64_t b = domain == CPUREF_SIGNED ? (uint64_t)pn_load_int64(dtype, in[1], b_col + i * n)
                                             : pn_load_uint64(dtype, in[1], b_col + i * n);
        acc += a * b;
    }
    pn_store_uint64(dtype, y, at, acc);
}

static pn_status matmul_typed_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                     pn_string_out* message_out) {
    (void)message_out;
    matmul_geometry g = matmul_geometry_of(op);
    int64_t batches = pn_num_elements(&g.batch);
    for (int64_t t = 0; t < batches; ++t) {
        int64_t a_start, b_start;
        matmul_batch(&g, t, &a_start, &b_start);
        for (int64_t r = 0; r < g.m; ++r) {
            for (int64_t c = 0; c < g.n; ++c) {
                matmul_element(op, in, out[0], (t * g.m + r) * g.n + c, a_start + r * g.k,
                               b_start + c, g.k, g.n);
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_matmul_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    if (layer->inputs[0].dtype == PN_DTYPE_FLOAT32) {
        return cpuref_workload_new(layer, 0, NULL, matmul_kernel, workload_out, message_out);
    }
    return cpuref_typed_workload_new(layer, 0, NULL, matmul_typed_kernel, NULL, workload_out,
                                     message_out);
}
