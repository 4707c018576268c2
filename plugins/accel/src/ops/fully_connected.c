/* CpuAcc FULLY_CONNECTED (ONNX Gemm): y = act(alpha * op(a) @ op(b) + beta * c + addend).
 * A constant b is prepacked once; alpha/c/addend/activation run in the GEMM epilogue. An a
 * that is not transposed is read in place by the AVX2 and AVX-512 micro-kernels (its rows
 * through pointers: gemm_indirect with offsets 0..k-1), not packed (see ops/matmul.c). */
#include "ops/create.h"
#include "gemm/gemm.h"
#include "ops/shared_weights.h"

#include <stdlib.h>
#include <string.h>

typedef struct fc_state {
    accel_env env;
    const gemm_arch* arch;
    int64_t m, n, k;
    int transpose_a, transpose_b;
    float alpha, beta;
    int has_c, has_addend, has_act;
    int64_t c_rs, c_cs; /* c's broadcast strides over [m, n] */
    pn_activation_desc act;
    uint32_t num_inputs;
    const float* bpack; /* constant b prepacked: a shared block (accel_packs), or NULL */
    int64_t* offs; /* 0..k-1: a read in place, or NULL: a packed */
    size_t ws_floats;
} fc_state;

static void fc_release(void* vs) {
    fc_state* s = (fc_state*)vs;
    if (s != NULL) {
        free(s->offs);
        free(s);
    }
}

typedef struct fc_epi {
    const fc_state* s;
    const float* c;
    const float* addend;
} fc_epi;

static void fc_epilogue(void* vctx, float* y, int64_t ldc, int64_t m0, int64_t n0, int64_t mb,
                        int64_t nb) {
    const fc_epi* e = (const fc_epi*)vctx;
    const fc_state* s = e->s;
    for (int64_t i = 0; i < mb; ++i) {
        float* row = y + i * ldc;
        if (s->alpha != 1.0f) {
            for (int64_t j = 0; j < nb; ++j) row[j] *= s->alpha;
        }
        if (e->c != NULL) {
            const float* cr = e->c + (m0 + i) * s->c_rs + n0 * s->c_cs;
            if (s->c_cs == 1) {
                for (int64_t j = 0; j < nb; ++j) row[j] += s->beta * cr[j];
            } else {
                for (int64_t j = 0; j < nb; ++j) row[j] += s->beta * cr[j * s->c_cs];
            }
        }
        if (e->addend != NULL) {
            const float* ar = e->addend + (m0 + i) * s->n + n0;
            for (int64_t j = 0; j < nb; ++j) row[j] += ar[j];
        }
        if (s->has_act) {
            accel_apply_activation(s->env.isa, &s->act, row, nb);
        }
    }
}

static pn_status fc_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const fc_state* s = (const fc_state*)vs;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc execute: FullyConnected expects %u inputs and 1 output", s->num_inputs);
    }
    if (s->m * s->n == 0) {
        return PN_OK;
    }
    if (args->outputs[0].data == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: output has no data");
    }
    const float* a = (const float*)args->inputs[0].data;
    const float* b = (const float*)args->inputs[1].data;
    uint32_t next = 2;
    fc_epi e = {s, NULL, NULL};
    if (s->has_c) e.c = (const float*)args->inputs[next++].data;
    if (s->has_addend) e.addend = (const float*)args->inputs[next].data;
    if (s->ws_floats > 0 && args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: FullyConnected needs a workspace");
    }
    const gemm_indirect ind = {a, s->offs, s->m, 0, s->k}; /* row i at a + i * k */
    gemm_operand ga = {a, s->transpose_a ? 1 : s->k, s->transpose_a ? s->m : 1, NULL, NULL, NULL, NULL,
                       s->offs != NULL ? &ind : NULL};
    gemm_operand gb = {b, s->transpose_b ? 1 : s->n, s->transpose_b ? s->k : 1, s->bpack, NULL, NULL, NULL, NULL};
    int need_epi = s->alpha != 1.0f || e.c != NULL || e.addend != NULL || s->has_act;
    gemm_run(&s->env, s->arch, s->m, s->n, s->k, &ga, &gb, (float*)args->outputs[0].data, s->n, 0,
             (float*)args->workspace, need_epi ? fc_epilogue : NULL, &e);
    return PN_OK;
}

static pn_status fc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                          pn_workload** workload_out, pn_string_out* message_out) {
    const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)layer->descriptor;
    fc_state* s = (fc_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    const pn_tensor_info* ai = &layer->inputs[0];
    const pn_tensor_info* yi = &layer->outputs[0];
    s->m = yi->dims[0];
    s->n = yi->dims[1];
    s->k = d->transpose_a ? ai->dims[0] : ai->dims[1];
    s->transpose_a = d->transpose_a != 0;
    s->transpose_b = d->transpose_b != 0;
    s->alpha = d->alpha;
    s->beta = d->beta;
    s->has_c = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    s->has_addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0;
    if (s->has_c) {
        int64_t cs[PN_MAX_DIMS] = {0};
        pn_broadcast_strides(&layer->inputs[2], yi, cs);
        s->c_rs = cs[0];
        s->c_cs = cs[1];
    }
    s->has_act = accel_copy_activation(d->fused_activation, &s->act);
    s->num_inputs = layer->num_inputs;
    const float* bc = layer->constant_data != NULL ? (const float*)layer->constant_data[1] : NULL;
    if (bc != NULL && s->k > 0 && s->n > 0) {
        size_t each = 0;
        s->bpack = accel_pack_gemm(packs, env->isa, 0, bc, s->k, s->n, s->transpose_b ? 1 : s->n,
                                   s->transpose_b ? s->k : 1, 1, 0, &each);
        if (s->bpack == NULL) {
            fc_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing b");
        }
    }
    if (!s->transpose_a && s->arch->ukr_ind != NULL && s->k > 0 && s->m > 1) { /* m == 1: gemv */
        s->offs = (int64_t*)malloc((size_t)s->k * sizeof(int64_t));
        if (s->offs == NULL) {
            fc_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
        }
        for (int64_t p = 0; p < s->k; ++p) s->offs[p] = p;
    }
    s->ws_floats = gemm_workspace_floats(s->arch, accel_threads_count(env->threads), s->m, s->n, s->k,
                                         s->offs != NULL, s->bpack != NULL, 0);
    pn_workload* wl = pn_workload_new(s, fc_execute, fc_release, s->ws_floats * sizeof(float) + 64);
    if (wl == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_fully_connected_create(void* context, const pn_layer* layer,
                                       pn_workload** workload_out, pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, fc_build, workload_out, message_out);
}
