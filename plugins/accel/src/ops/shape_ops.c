/* RESHAPE/COPY (memcpy, any element type) and TRANSPOSE (float32 by 16 x 16 blocks where the inner
 * run is strided, every other type and case as ops/data_movement.c's region copy): data movement
 * split over the pool
 * (CONCAT, SLICE, SPLIT: ops/data_movement.c). */
#include "ops/create.h"
#include "gemm/gemm.h"

#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK (1 << 18) /* bytes per work unit of a plain copy */

/* ---- RESHAPE and COPY ------------------------------------------------------------------ */

/* Bytes of any element type (accel_move_check). */
typedef struct copy_job {
    const char* x;
    char* y;
    int64_t n;
} copy_job;

static void copy_range(void* raw, int64_t b, int64_t e) {
    const copy_job* j = (const copy_job*)raw;
    int64_t begin = b * COPY_CHUNK, end = e * COPY_CHUNK;
    end = end > j->n ? j->n : end;
    memcpy(j->y + begin, j->x + begin, (size_t)(end - begin));
}

static void copy_kernel(const accel_op* op, const float* const* in, float* const* out) {
    copy_job j = {(const char*)in[0], (char*)out[0],
                  pn_num_elements(&op->outputs[0]) * (int64_t)pn_dtype_size(op->outputs[0].dtype)};
    accel_parallel_for_grain(op->env.threads, (j.n + COPY_CHUNK - 1) / COPY_CHUNK, 4, copy_range, &j);
}

pn_status accel_copy_create(void* context, const pn_layer* layer,
                            pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    return accel_workload_new(env, layer, 0, NULL, copy_kernel, NULL, workload_out, message_out);
}

/* CONCAT: ops/data_movement.c (with SLICE and SPLIT). */

/* ---- TRANSPOSE --------------------------------------------------------------------------- */

/* The transpose with size-1 dims dropped and runs of input dims that stay adjacent merged:
 * output dim i has size dims[i] and input stride xs[i]. When the innermost output dim is not
 * contiguous in the input (xs[inner] != 1, e.g. attention's K^T: [B, H, S, D] -> [B, H, D, S]),
 * q is the output dim that is (xs[q] == 1): each slab [dims[q], dims[inner]] of the output is
 * then a matrix transpose of the input, done in 16 x 16 register blocks by the GEMM's
 * transposed store (store_t of the ISA), not one strided element at a time. */
typedef struct transpose_plan {
    uint32_t rank;
    int64_t dims[PN_MAX_DIMS];
    int64_t xs[PN_MAX_DIMS];
    int64_t ys[PN_MAX_DIMS];  /* output strides */
    int32_t q;                /* the output dim with input stride 1 when the inner one is not, else -1 */
    int64_t qchunks;          /* q split into chunks of TRANSPOSE_Q_CHUNK */
    gemm_store_t_fn store_t;
} transpose_plan;

#define TRANSPOSE_Q_CHUNK 64

static void transpose_plan_make(const pn_tensor_info* x, const pn_transpose_desc* d, accel_isa isa,
                                transpose_plan* p) {
    int64_t x_strides[PN_MAX_DIMS];
    for (uint32_t i = 0; i < x->rank; ++i) {
        x_strides[i] = accel_span(x, i + 1, x->rank);
    }
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; ++i) {
        int64_t size = x->dims[d->perm[i]], stride = x_strides[d->perm[i]];
        if (size == 1) {
            continue;
        }
        if (r > 0 && p->xs[r - 1] == stride * size) {
            p->dims[r - 1] *= size;
            p->xs[r - 1] = stride;
            continue;
        }
        p->dims[r] = size;
        p->xs[r] = stride;
        ++r;
    }
    if (r == 0) {
        p->dims[0] = 1;
        p->xs[0] = 1;
        r = 1;
    }
    p->rank = r;
    p->ys[r - 1] = 1;
    for (int32_t i = (int32_t)r - 2; i >= 0; --i) p->ys[i] = p->ys[i + 1] * p->dims[i + 1];
    p->q = -1;
    for (uint32_t i = 0; i + 1 < r && p->xs[r - 1] != 1; ++i) {
        if (p->xs[i] == 1) p->q = (int32_t)i;
    }
    p->qchunks = p->q >= 0 ? (p->dims[p->q] + TRANSPOSE_Q_CHUNK - 1) / TRANSPOSE_Q_CHUNK : 1;
    p->store_t = accel_kernel_set_for(isa)->gemm->store_t;
}

typedef struct transpose_job {
    const transpose_plan* p;
    const float* x;
    float* y;
} transpose_job;

static void transpose_range(void* raw, int64_t b, int64_t e) {
    const transpose_job* j = (const transpose_job*)raw;
    const transpose_plan* p = j->p;
    const uint32_t inner = p->rank - 1;
    const int64_t len = p->dims[inner], s = p->xs[inner];
    for (int64_t row = b; row < e; ++row) {
        int64_t off = 0, rem = row;
        for (int32_t d = (int32_t)inner - 1; d >= 0; --d) {
            off += (rem % p->dims[d]) * p->xs[d];
            rem /= p->dims[d];
        }
        const float* x = j->x + off;
        float* y = j->y + row * len;
        if (s == 1) {
            memcpy(y, x, (size_t)len * sizeof(float));
        } else {
            for (int64_t i = 0; i < len; ++i) {
                y[i] = x[i * s];
            }
        }
    }
}

/* Items [b, e) of the slab form: item = (the other dims' index, chunk of q); each a
 * [chunk of q] x [inner] output block, the transpose of x's [inner] x [chunk] block (rows
 * xs[inner] apart, contiguous along q). */
static void transpose_slab_range(void* raw, int64_t b, int64_t e) {
    const transpose_job* j = (const transpose_job*)raw;
    const transpose_plan* p = j->p;
    const uint32_t inner = p->rank - 1;
    const int32_t q = p->q;
    for (int64_t item = b; item < e; ++item) {
        const int64_t chunk = item % p->qchunks;
        int64_t rem = item / p->qchunks, xoff = 0, yoff = 0;
        for (int32_t d = (int32_t)inner - 1; d >= 0; --d) {
            if (d == q) continue;
            const int64_t idx = rem % p->dims[d];
            rem /= p->dims[d];
            xoff += idx * p->xs[d];
            yoff += idx * p->ys[d];
        }
        const int64_t q0 = chunk * TRANSPOSE_Q_CHUNK;
        const int64_t qn = p->dims[q] - q0 < TRANSPOSE_Q_CHUNK ? p->dims[q] - q0 : TRANSPOSE_Q_CHUNK;
        /* out[jq * ys[q] + i] = x[i * xs[inner] + jq] for i < dims[inner], jq < qn */
        p->store_t(j->x + xoff + q0, p->xs[inner], j->y + yoff + q0 * p->ys[q], p->ys[q], p->dims[inner], qn);
    }
}

static void transpose_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const transpose_plan* p = (const transpose_plan*)op->priv;
    transpose_job j = {p, in[0], out[0]};
    if (p->q >= 0) {
        const int64_t slab = p->dims[p->rank - 1] * (p->dims[p->q] < TRANSPOSE_Q_CHUNK ? p->dims[p->q] : TRANSPOSE_Q_CHUNK);
        const int64_t items = pn_num_elements(&op->outputs[0]) / (p->dims[p->rank - 1] * p->dims[p->q]) * p->qchunks;
        accel_parallel_for_grain(op->env.threads, items, 32768 / (slab + 1) + 1, transpose_slab_range, &j);
        return;
    }
    int64_t rows = 1;
    for (uint32_t i = 0; i + 1 < p->rank; ++i) {
        rows *= p->dims[i];
    }
    accel_parallel_for_grain(op->env.threads, rows, 32768 / (p->dims[p->rank - 1] + 1) + 1,
                             transpose_range, &j);
}

pn_status accel_transpose_create(void* context, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    if (layer->inputs[0].dtype != PN_DTYPE_FLOAT32) { /* every other element type: moved as bytes */
        return accel_permute_create(env, layer, workload_out, message_out);
    }
    transpose_plan* p = (transpose_plan*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    transpose_plan_make(&layer->inputs[0], (const pn_transpose_desc*)layer->descriptor, env->isa, p);
    if (p->q < 0) { /* a contiguous inner run: ops/data_movement.c's region copy */
        free(p);
        return accel_permute_create(env, layer, workload_out, message_out);
    }
    return accel_workload_new(env, layer, sizeof(pn_transpose_desc), NULL, transpose_kernel, p,
                              workload_out, message_out);
}
