/* SOFTMAX along one axis, stable: exp(x - max) / sum(exp(x - max)). Last axis: one line per
 * row; other axes: the inner dimension is vectorized (column form). */
#include "ops/create.h"

#include <math.h>
#include <stdlib.h>

#define COLS 1024 /* inner columns per work unit (column form) */

typedef struct softmax_job {
    const accel_op* op;
    const float* x;
    float* y;
    int64_t len, inner, col_chunks;
} softmax_job;

static void rows_range(void* raw, int64_t b, int64_t e) {
    const softmax_job* j = (const softmax_job*)raw;
    const accel_kernels* k = j->op->k;
    for (int64_t r = b; r < e; ++r) {
        const float* x = j->x + r * j->len;
        float* y = j->y + r * j->len;
        float m = k->max_row(x, j->len);
        float s = k->exp_sub_sum(x, m, y, j->len);
        k->scale(y, 1.0f / s, j->len);
    }
}

static void cols_range(void* raw, int64_t b, int64_t e) {
    const softmax_job* j = (const softmax_job*)raw;
    const accel_kernels* k = j->op->k;
    float m[COLS], s[COLS];
    for (int64_t u = b; u < e; ++u) {
        int64_t o = u / j->col_chunks, c0 = (u % j->col_chunks) * COLS;
        int64_t w = j->inner - c0 < COLS ? j->inner - c0 : COLS;
        const float* x = j->x + o * j->len * j->inner + c0;
        float* y = j->y + o * j->len * j->inner + c0;
        for (int64_t i = 0; i < w; ++i) {
            m[i] = -INFINITY;
            s[i] = 0.0f;
        }
        for (int64_t l = 0; l < j->len; ++l) {
            k->max_cols(m, x + l * j->inner, w);
        }
        for (int64_t l = 0; l < j->len; ++l) {
            k->exp_sub_cols(x + l * j->inner, m, y + l * j->inner, s, w);
        }
        for (int64_t i = 0; i < w; ++i) {
            s[i] = 1.0f / s[i];
        }
        for (int64_t l = 0; l < j->len; ++l) {
            k->mul_cols(y + l * j->inner, s, w);
        }
    }
}

static void softmax_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const pn_tensor_info* x = &op->inputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.softmax.axis, x->rank);
    int64_t outer = accel_span(x, 0, axis);
    softmax_job j = {op, in[0], out[0], x->dims[axis], accel_span(x, axis + 1, x->rank), 1};
    if (j.len == 0) {
        return;
    }
    if (j.inner == 1) {
        accel_parallel_for_grain(op->env.threads, outer, 16384 / j.len + 1, rows_range, &j);
    } else {
        j.col_chunks = (j.inner + COLS - 1) / COLS;
        int64_t per_unit = j.len * (j.inner < COLS ? j.inner : COLS);
        accel_parallel_for_grain(op->env.threads, outer * j.col_chunks, 16384 / per_unit + 1,
                                 cols_range, &j);
    }
}

pn_status accel_softmax_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    return accel_workload_new(env, layer, sizeof(pn_softmax_desc), NULL, softmax_kernel, NULL,
                              workload_out, message_out);
}
