/* CpuAcc MATMUL (NumPy matmul): rank-1 promotion, batch broadcasting.
 *
 * How a MatMul of `batches` matrix products of [m, k] @ [k, n] runs:
 * - Batches folded into rows: when b is one matrix for every batch (rank 2, or batch dims
 *   that all broadcast) and a's batches are all distinct, a is one [batches * m, k] matrix and
 *   the whole layer one GEMM (the projections of transformers, [B, S, E] @ [E, F], run as one
 *   [B * S, E] @ [E, F] GEMM, not B small ones).
 * - A constant b (weights) is packed once at create time, every distinct matrix of it.
 * - Batches split over the threads: when there are at least as many GEMMs as threads (the
 *   attention products [B, H, S, D] @ [B, H, D, S] are B * H small GEMMs), each thread runs a
 *   contiguous range of whole GEMMs on its own (one parallel loop for the layer, no threads
 *   meeting per GEMM, each GEMM's packing done once); the last batches % threads GEMMs, fewer
 *   than the threads, each run split over all of them. A GEMM gives the same bits on one
 *   thread as on many (gemm/gemm.h), so the result does not depend on the thread count.
 * - One row against a b given at run time ([1, k] @ [k, n]: a decode step's attention products,
 *   [B, H, 1, D] @ [B, H, D, T]) is a matrix-vector product: y = sum over p of a[p] * b's row
 *   p (the vector table's axpy rows), b read once in place; a GEMM would pack b first, which
 *   for these small products costs more than the product. Used when one product is small (k * n
 *   <= 64 Ki) or there are 16 or more (the threads then take whole products), so a few large
 *   products still split over the threads as GEMMs; chosen by shape alone (same bits at every
 *   thread count).
 * - a is read in place, not packed (the AVX2 and AVX-512 micro-kernels take A's rows through
 *   pointers, gemm_indirect with offsets 0..k-1), as onnxruntime's MLAS does: packing a
 *   [128, 64] Q per head cost as much as a third of its product with K^T.
 */
#include "ops/create.h"
#include "gemm/gemm.h"
#include "ops/shared_weights.h"
#include "kernels/vector_kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct matmul_state {
    accel_env env;
    const gemm_arch* arch;
    int64_t m, n, k, batches; /* after folding: m = batches_folded * m, batches = 1 */
    uint32_t brank;           /* rank of the output's batch dims */
    int64_t bdims[PN_MAX_DIMS];
    int64_t as[PN_MAX_DIMS], bs[PN_MAX_DIMS]; /* batch strides in matrices */
    int threads;              /* the pool's threads */
    const float* bpack;       /* constant b: its distinct matrices packed, a shared block
                                 (accel_packs; NULL: packed per run) */
    int64_t* offs;            /* 0..k-1: a read in place (gemm_indirect), or NULL: a packed */
    size_t bpack_floats;      /* floats of one packed matrix */
    size_t ws_one, ws_many;   /* workspace floats of a single-thread GEMM, of a threaded one */
    const accel_kernels* vk;  /* the vector table (axpy rows), when products are matrix-vector */
} matmul_state;

static void matmul_release(void* vs) {
    matmul_state* s = (matmul_state*)vs;
    if (s != NULL) {
        free(s->offs);
        free(s);
    }
}

static pn_tensor_info leading(const pn_tensor_info* t, uint32_t matrix_rank) {
    pn_tensor_info r;
    memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    r.dtype = t->dtype;
    r.rank = t->rank > matrix_rank ? t->rank - matrix_rank : 0;
    for (uint32_t i = 0; i < r.rank; ++i) r.dims[i] = t->dims[i];
    return r;
}

/* The matrices of batch t: offsets (in matrices) into a and b. */
static void batch_offsets(const matmul_state* s, int64_t t, int64_t* aoff, int64_t* boff) {
    int64_t rem = t;
    *aoff = 0;
    *boff = 0;
    for (int32_t d = (int32_t)s->brank - 1; d >= 0; --d) {
        int64_t idx = rem % s->bdims[d];
        rem /= s->bdims[d];
        *aoff += idx * s->as[d];
        *boff += idx * s->bs[d];
    }
}

typedef struct matmul_run {
    const matmul_state* s;
    const float* a;
    const float* b;
    float* y;
    float* ws;
    int64_t lanes, lane_batches; /* batches [0, lanes * lane_batches) run lane by lane */
} matmul_run;

/* Batch t with env (NULL: on the calling thread alone) and workspace ws. */
static void run_batch(const matmul_run* r, int64_t t, const accel_env* env, float* ws) {
    const matmul_state* s = r->s;
    int64_t aoff, boff;
    batch_offsets(s, t, &aoff, &boff);
    const float* a = r->a + aoff * s->m * s->k;
    if (s->vk != NULL) { /* [1, k] @ [k, n], b at run time */
        const float* b = r->b + boff * s->k * s->n;
        float* y = r->y + t * s->n;
        memset(y, 0, (size_t)s->n * sizeof(float));
        for (int64_t p = 0; p < s->k; ++p) {
            s->vk->axpy_row(y, a[p], b + p * s->n, s->n);
        }
        return;
    }
    const gemm_indirect ind = {a, s->offs, s->m, 0, s->k}; /* row i at a + i * k */
    gemm_operand ga = {a, s->k, 1, NULL, NULL, NULL, NULL, s->offs != NULL ? &ind : NULL};
    gemm_operand gb = {r->b + boff * s->k * s->n, s->n, 1, NULL, NULL, NULL, NULL, NULL};
    if (s->bpack != NULL) {
        gb.packed = s->bpack + (size_t)boff * s->bpack_floats;
    }
    gemm_run(env, s->arch, s->m, s->n, s->k, &ga, &gb, r->y + t * s->m * s->n, s->n, 0, ws, NULL, NULL);
}

/* Lanes [begin, end): each runs its range of whole GEMMs on this thread with its own workspace. */
static void lane_range(void* vctx, int64_t begin, int64_t end) {
    const matmul_run* r = (const matmul_run*)vctx;
    for (int64_t lane = begin; lane < end; ++lane) {
        float* ws = r->ws + (size_t)lane * r->s->ws_one;
        for (int64_t t = lane * r->lane_batches; t < (lane + 1) * r->lane_batches; ++t) {
            run_batch(r, t, NULL, ws);
        }
    }
}

static pn_status matmul_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const matmul_state* s = (const matmul_state*)vs;
    if (args == NULL || args->num_inputs != 2 || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: MatMul expects 2 inputs and 1 output");
    }
    if (s->batches * s->m * s->n == 0) {
        return PN_OK;
    }
    matmul_run r = {s, (const float*)args->inputs[0].data, (const float*)args->inputs[1].data,
                    (float*)args->outputs[0].data, (float*)args->workspace, 0, 0};
    if (r.y == NULL || (s->k > 0 && (r.a == NULL || (r.b == NULL && s->bpack == NULL)))) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: MatMul tensor without data");
    }
    if (r.ws == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: MatMul needs a workspace");
    }
    int64_t first_shared = 0; /* batches from here on run one at a time, each over every thread */
    if (s->threads > 1 && s->batches >= s->threads) {
        r.lanes = s->threads;
        r.lane_batches = s->batches / s->threads;
        first_shared = r.lanes * r.lane_batches;
        accel_parallel_for(s->env.threads, r.lanes, lane_range, &r);
    }
    for (int64_t t = first_shared; t < s->batches; ++t) {
        run_batch(&r, t, &s->env, r.ws);
    }
    return PN_OK;
}

/* Whether every batch multiplies by the same b (all of b's batch strides are 0) while a's
 * batches are a's own consecutive matrices: then a is one [batches * m, k] matrix. */
static int folds(const matmul_state* s) {
    int64_t expect = 1;
    for (int32_t d = (int32_t)s->brank - 1; d >= 0; --d) {
        if (s->bs[d] != 0 || (s->bdims[d] > 1 && s->as[d] != expect)) {
            return 0;
        }
        expect *= s->bdims[d];
    }
    return 1;
}

static pn_status matmul_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                              pn_workload** workload_out, pn_string_out* message_out) {
    matmul_state* s = (matmul_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    s->threads = accel_threads_count(env->threads);
    const pn_tensor_info* ai = &layer->inputs[0];
    const pn_tensor_info* bi = &layer->inputs[1];
    s->m = ai->rank >= 2 ? ai->dims[ai->rank - 2] : 1;
    s->k = ai->dims[ai->rank - 1];
    s->n = bi->rank >= 2 ? bi->dims[bi->rank - 1] : 1;
    uint32_t ymr = (ai->rank >= 2) + (bi->rank >= 2);
    pn_tensor_info yb = leading(&layer->outputs[0], ymr);
    pn_tensor_info ab = leading(ai, 2), bb = leading(bi, 2);
    pn_broadcast_strides(&ab, &yb, s->as);
    pn_broadcast_strides(&bb, &yb, s->bs);
    s->brank = yb.rank;
    for (uint32_t i = 0; i < yb.rank; ++i) s->bdims[i] = yb.dims[i];
    s->batches = pn_num_elements(&yb);
    if (s->batches > 1 && folds(s)) {
        s->m *= s->batches;
        s->batches = 1;
        s->brank = 0;
    }
    const float* bc = layer->constant_data != NULL ? (const float*)layer->constant_data[1] : NULL;
    if (bc != NULL && s->k > 0 && s->n > 0) {
        int64_t matrices = pn_num_elements(&bb); /* b's own batch matrices (1 for rank <= 2) */
        s->bpack = accel_pack_gemm(packs, env->isa, 0, bc, s->k, s->n, s->n, 1, matrices, s->k * s->n,
                                   &s->bpack_floats);
        if (s->bpack == NULL) {
            matmul_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing MatMul's b");
        }
    }
    if (s->arch->ukr_ind != NULL && s->k > 0 && s->m > 1) { /* m == 1 with a packed b: gemv */
        s->offs = (int64_t*)malloc((size_t)s->k * sizeof(int64_t));
        if (s->offs == NULL) {
            matmul_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
        }
        for (int64_t p = 0; p < s->k; ++p) s->offs[p] = p;
    }
    /* by shape alone, so every thread count gives the same bits */
    if (s->m == 1 && s->bpack == NULL && s->k > 0 && (s->batches >= 16 || s->k * s->n <= 65536)) {
        s->vk = accel_kernel_set_for(env->isa)->vector;
    }
    int prepacked = s->bpack != NULL, in_place = s->offs != NULL;
    s->ws_one = gemm_workspace_floats(s->arch, 1, s->m, s->n, s->k, in_place, prepacked, 0);
    s->ws_many = gemm_workspace_floats(s->arch, s->threads, s->m, s->n, s->k, in_place, prepacked, 0);
    size_t ws = s->ws_many;
    if (s->threads > 1 && s->batches >= s->threads && (size_t)s->threads * s->ws_one > ws) {
        ws = (size_t)s->threads * s->ws_one;
    }
    pn_workload* wl = pn_workload_new(s, matmul_execute, matmul_release, ws * sizeof(float) + 64);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_matmul_create(void* context, const pn_layer* layer,
                              pn_workload** workload_out, pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, matmul_build, workload_out, message_out);
}
