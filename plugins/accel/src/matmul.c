/* CpuAcc MATMUL (NumPy matmul): rank-1 promotion, batch broadcasting, one GEMM per batch. */
#include "families.h"
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

typedef struct matmul_state {
    accel_env env;
    const gemm_arch* arch;
    int64_t m, n, k, batches;
    uint32_t brank; /* rank of the output's batch dims */
    int64_t bdims[PN_MAX_DIMS];
    int64_t as[PN_MAX_DIMS], bs[PN_MAX_DIMS]; /* batch strides in matrices */
    size_t ws_floats;
} matmul_state;

static pn_tensor_info leading(const pn_tensor_info* t, uint32_t matrix_rank) {
    pn_tensor_info r;
    memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    r.dtype = t->dtype;
    r.rank = t->rank > matrix_rank ? t->rank - matrix_rank : 0;
    for (uint32_t i = 0; i < r.rank; ++i) r.dims[i] = t->dims[i];
    return r;
}

static pn_status matmul_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const matmul_state* s = (const matmul_state*)vs;
    if (args == NULL || args->num_inputs != 2 || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: MatMul expects 2 inputs and 1 output");
    }
    if (s->batches * s->m * s->n == 0) {
        return PN_OK;
    }
    const float* a = (const float*)args->inputs[0].data;
    const float* b = (const float*)args->inputs[1].data;
    float* y = (float*)args->outputs[0].data;
    if (y == NULL || (s->k > 0 && (a == NULL || b == NULL))) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: MatMul tensor without data");
    }
    if (args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: MatMul needs a workspace");
    }
    for (int64_t t = 0; t < s->batches; ++t) {
        int64_t rem = t, aoff = 0, boff = 0;
        for (int32_t d = (int32_t)s->brank - 1; d >= 0; --d) {
            int64_t idx = rem % s->bdims[d];
            rem /= s->bdims[d];
            aoff += idx * s->as[d];
            boff += idx * s->bs[d];
        }
        gemm_operand ga = {a + aoff * s->m * s->k, s->k, 1, NULL, NULL, NULL, NULL, NULL};
        gemm_operand gb = {b + boff * s->k * s->n, s->n, 1, NULL, NULL, NULL, NULL, NULL};
        gemm_run(&s->env, s->arch, s->m, s->n, s->k, &ga, &gb, y + t * s->m * s->n, s->n, 0,
                 (float*)args->workspace, NULL, NULL);
    }
    return PN_OK;
}

pn_status accel_matmul_create(void* context, const pn_layer* layer,
                              pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    matmul_state* s = (matmul_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = gemm_arch_for(env->isa);
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
    s->ws_floats = gemm_workspace_floats(s->arch, accel_threads_count(env->threads), s->m, s->n, s->k, 0, 0, 0);
    pn_workload* wl = pn_workload_new(s, matmul_execute, free, s->ws_floats * sizeof(float) + 64);
    if (wl == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}
