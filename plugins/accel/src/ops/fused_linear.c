/* CpuAcc fused linear layer (ops/fused_linear.h): one GEMM over a's rows with a prepacked constant b,
 * the bias, residual and activation in its epilogue. a is read in place (gemm_indirect) by the
 * AVX2 and AVX-512 micro-kernels, as MatMul and FullyConnected read it (ops/matmul.c). */
#include "kernels/vector_kernels.h"
#include "ops/fused_linear.h"
#include "gemm/gemm.h"
#include "ops/shared_weights.h"
#include "kernels/row_kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct linear_state {
    accel_env env;
    const gemm_arch* arch;
    const accel_kernels* kern;
    int64_t m, n, k;
    float alpha;
    int has_addend, has_act;
    uint32_t addend_index; /* the residual's input */
    pn_activation_desc act;
    uint32_t num_inputs;
    const float* bias;   /* beta * the bias (N floats: the constant itself when beta is 1), or NULL */
    float* own_bias;     /* the scaled copy when beta is not 1 (malloc) */
    const float* bpack;  /* b packed: a shared block (accel_packs) */
    const accel_row_kernels* tk;
    int has_norm, norm_rms, norm_in_epilogue; /* the normalization; in the epilogue: whole rows */
    float norm_eps;
    const float* norm_scale; /* N floats (constants) */
    const float* norm_bias;  /* N floats, or NULL */
    int64_t* offs;       /* 0..k-1: a read in place, or NULL: a packed */
    size_t ws_floats;
    uint32_t parts;      /* outputs: 1, or a Split's pieces (columns [col0[q], col0[q] + pn[q])) */
    int64_t col0[ACCEL_LINEAR_GROUP_MAX], pn[ACCEL_LINEAR_GROUP_MAX];
    int direct;          /* pieces of whole panels: the GEMM stores into them (gemm_run_parts) */
    size_t c_floats;     /* else the product's place in the workspace, after the GEMM's scratch */
} linear_state;

void accel_linear_release(void* payload) { free(payload); }

static void linear_state_release(void* vs) {
    linear_state* s = (linear_state*)vs;
    if (s != NULL) {
        free(s->own_bias);
        free(s->offs);
        free(s);
    }
}

typedef struct linear_epi {
    const linear_state* s;
    const float* addend;
    float* const* out;   /* the pieces of a split result */
} linear_epi;

/* The finished block: * alpha, + bias, + addend, activation (the unfused layers' order, each by
 * the kernel the unfused layer runs or one that rounds the same: tx add_rows). */
static void epilogue_steps(const linear_epi* e, float* y, int64_t ldc, int64_t m0, int64_t n0, int64_t mb,
                           int64_t nb) {
    const linear_state* s = e->s;
    const float* bias = s->bias != NULL ? s->bias + n0 : NULL;
    const float* add = e->addend != NULL ? e->addend + m0 * s->n + n0 : NULL;
    /* each step over the whole block before the next: every element still goes through the
     * same operations in the same order */
    if (s->alpha != 1.0f) {
        for (int64_t i = 0; i < mb; ++i) {
            s->kern->scale(y + i * ldc, s->alpha, nb);
        }
    }
    s->tk->add_rows(y, ldc, mb, nb, bias, add, s->n);
    if (s->has_act) {
        if (ldc == nb) { /* whole rows: one contiguous run (BERT's GELU: 128 calls -> 1) */
            accel_apply_activation(s->env.isa, &s->act, y, mb * nb);
        } else {
            for (int64_t i = 0; i < mb; ++i) {
                accel_apply_activation(s->env.isa, &s->act, y + i * ldc, nb);
            }
        }
    }
}

/* The columns [lo, hi) of the whole result that piece q holds within the block's [n0, n0 + nb);
 * 0 when none. */
static int piece_span(const linear_state* s, uint32_t q, int64_t n0, int64_t nb, int64_t* lo, int64_t* hi) {
    *lo = n0 > s->col0[q] ? n0 : s->col0[q];
    *hi = n0 + nb < s->col0[q] + s->pn[q] ? n0 + nb : s->col0[q] + s->pn[q];
    return *lo < *hi;
}

/* gemm_run_parts' epilogue: the steps on each piece's part of the block, where it is stored. */
static void parts_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb, int64_t nb) {
    (void)c;
    (void)ldc;
    const linear_epi* e = (const linear_epi*)vctx;
    const linear_state* s = e->s;
    for (uint32_t q = 0; q < s->parts; ++q) {
        int64_t lo, hi;
        if (piece_span(s, q, n0, nb, &lo, &hi)) {
            epilogue_steps(e, e->out[q] + m0 * s->pn[q] + (lo - s->col0[q]), s->pn[q], m0, lo, mb, hi - lo);
        }
    }
}

/* The result in the workspace: the steps on the block, then each piece's part copied out. */
static void copy_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb, int64_t nb) {
    const linear_epi* e = (const linear_epi*)vctx;
    const linear_state* s = e->s;
    epilogue_steps(e, c, ldc, m0, n0, mb, nb);
    for (uint32_t q = 0; q < s->parts; ++q) {
        int64_t lo, hi;
        if (!piece_span(s, q, n0, nb, &lo, &hi)) {
            continue;
        }
        float* y = e->out[q] + m0 * s->pn[q] + (lo - s->col0[q]);
        for (int64_t i = 0; i < mb; ++i) {
            memcpy(y + i * s->pn[q], c + i * ldc + (lo - n0), (size_t)(hi - lo) * sizeof(float));
        }
    }
}

static void linear_epilogue(void* vctx, float* y, int64_t ldc, int64_t m0, int64_t n0, int64_t mb,
                            int64_t nb) {
    const linear_epi* e = (const linear_epi*)vctx;
    const linear_state* s = e->s;
    epilogue_steps(e, y, ldc, m0, n0, mb, nb);
    if (s->norm_in_epilogue) { /* the block holds whole rows (n0 == 0, nb == n) */
        s->tk->norm_rows(s->norm_rms, y, y, mb, nb, s->norm_scale, s->norm_bias, s->norm_eps);
    }
}

#define NORM_MIN_PARALLEL 16384 /* elements per thread below which a wake-up does not pay (ops/normalization.c) */

typedef struct linear_norm_job {
    const linear_state* s;
    float* y;
} linear_norm_job;

static void norm_range(void* raw, int64_t b, int64_t e) {
    const linear_norm_job* j = (const linear_norm_job*)raw;
    const linear_state* s = j->s;
    s->tk->norm_rows(s->norm_rms, j->y + b * s->n, j->y + b * s->n, e - b, s->n, s->norm_scale, s->norm_bias,
                     s->norm_eps);
}

static pn_status linear_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const linear_state* s = (const linear_state*)vs;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != s->parts) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc execute: the fused linear layer expects %u inputs and %u outputs", s->num_inputs,
                       s->parts);
    }
    if (s->m * s->n == 0) {
        return PN_OK;
    }
    const float* a = (const float*)args->inputs[0].data;
    float* y = (float*)args->outputs[0].data;
    float* out[ACCEL_LINEAR_GROUP_MAX] = {NULL, NULL, NULL, NULL};
    for (uint32_t q = 0; q < s->parts; ++q) {
        out[q] = (float*)args->outputs[q].data;
    }
    linear_epi e = {s, s->has_addend ? (const float*)args->inputs[s->addend_index].data : NULL, out};
    if ((s->parts == 1 && y == NULL) || (s->k > 0 && a == NULL) || (s->has_addend && e.addend == NULL)) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: fused linear layer tensor without data");
    }
    if (s->ws_floats > 0 && args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: the fused linear layer needs a workspace");
    }
    const gemm_indirect ind = {a, s->offs, s->m, 0, s->k}; /* row i at a + i * k */
    gemm_operand ga = {a, s->k, 1, NULL, NULL, NULL, NULL, s->offs != NULL ? &ind : NULL};
    gemm_operand gb = {NULL, s->n, 1, s->bpack, NULL, NULL, NULL, NULL};
    if (s->parts > 1) { /* a split result (no normalization) */
        if (s->direct) {
            gemm_cparts parts;
            parts.count = (int)s->parts;
            for (uint32_t q = 0; q < s->parts; ++q) {
                parts.col0[q] = s->col0[q];
                parts.base[q] = out[q];
                parts.ld[q] = s->pn[q];
            }
            parts.col0[s->parts] = s->n;
            gemm_run_parts(&s->env, s->arch, s->m, s->n, s->k, &ga, &gb, &parts, (float*)args->workspace,
                           parts_epilogue, &e);
        } else {
            float* c = (float*)args->workspace + s->c_floats;
            gemm_run(&s->env, s->arch, s->m, s->n, s->k, &ga, &gb, c, s->n, 0, (float*)args->workspace,
                     copy_epilogue, &e);
        }
        return PN_OK;
    }
    int need_epi = s->alpha != 1.0f || s->bias != NULL || e.addend != NULL || s->has_act || s->norm_in_epilogue;
    gemm_run(&s->env, s->arch, s->m, s->n, s->k, &ga, &gb, y, s->n, 0, (float*)args->workspace,
             need_epi ? linear_epilogue : NULL, &e);
    if (s->has_norm && !s->norm_in_epilogue) {
        linear_norm_job j = {s, y};
        accel_parallel_for_grain(s->env.threads, s->m, NORM_MIN_PARALLEL / (s->n > 0 ? s->n : 1) + 1, norm_range, &j);
    }
    return PN_OK;
}

/* 1 when t's dims are all 1 but the last (which may be anything); rank 0 too. */
static int only_last_dim(const pn_tensor_info* t) {
    for (uint32_t i = 0; i + 1 < t->rank; ++i) {
        if (t->dims[i] != 1) {
            return 0;
        }
    }
    return 1;
}

/* NULL when the layer's tensors follow ops/fused_linear.h's rules for payload p, else what is wrong;
 * *m, *n, *k the GEMM's sizes. */
static const char* check_tensors(const accel_linear* p, const pn_layer* layer, int64_t* m, int64_t* n,
                                 int64_t* k) {
    const uint32_t outs = p->num_outputs > 1 ? p->num_outputs : 1;
    if (layer->num_inputs != p->num_inputs || layer->num_outputs != outs || outs > ACCEL_LINEAR_GROUP_MAX ||
        (outs > 1 && p->has_norm)) {
        return "its number of inputs or outputs is not its payload's";
    }
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        if (layer->inputs[i].dtype != PN_DTYPE_FLOAT32) {
            return "an input is not float32";
        }
    }
    for (uint32_t q = 0; q < outs; ++q) {
        if (layer->outputs[q].dtype != PN_DTYPE_FLOAT32) {
            return "an output is not float32";
        }
    }
    const pn_tensor_info* ai = &layer->inputs[0];
    const pn_tensor_info* bi = &layer->inputs[1];
    if (ai->rank < 1 || bi->rank < 2) {
        return "a has rank 0 or b a rank below 2";
    }
    for (uint32_t i = 0; i + 2 < bi->rank; ++i) {
        if (bi->dims[i] != 1) {
            return "b has a leading dim other than 1";
        }
    }
    *k = ai->dims[ai->rank - 1];
    *m = accel_span(ai, 0, ai->rank - 1);
    int64_t bk = bi->dims[bi->rank - (p->transpose_b ? 1 : 2)];
    *n = bi->dims[bi->rank - (p->transpose_b ? 2 : 1)];
    if (bk != *k) {
        return "b's rows are not a's last dim";
    }
    if (layer->constant_data == NULL || layer->constant_data[1] == NULL) {
        return "b is not a constant";
    }
    uint32_t next = 2;
    if (p->has_bias) {
        const pn_tensor_info* ci = &layer->inputs[next];
        if (!only_last_dim(ci) || pn_num_elements(ci) != *n || (ci->rank == 0 && *n != 1)) {
            return "the bias is not [N] or [1, ..., 1, N]";
        }
        if (layer->constant_data[next] == NULL) {
            return "the bias is not a constant";
        }
        ++next;
    }
    if (p->has_addend && pn_num_elements(&layer->inputs[next++]) != *m * *n) {
        return "the residual does not have M * N elements";
    }
    for (uint32_t i = 0; i < (p->has_norm ? 1u : 0u) + (p->has_norm_bias ? 1u : 0u); ++i, ++next) {
        const pn_tensor_info* t = &layer->inputs[next];
        if (!only_last_dim(t) || pn_num_elements(t) != *n || (t->rank == 0 && *n != 1)) {
            return "a normalization operand is not [N] or [1, ..., 1, N]";
        }
        if (layer->constant_data[next] == NULL) {
            return "a normalization operand is not a constant";
        }
    }
    if (outs == 1) {
        return pn_num_elements(&layer->outputs[0]) != *m * *n ? "the output does not have M * N elements" : NULL;
    }
    int64_t sum = 0;
    for (uint32_t q = 0; q < outs; ++q) {
        if (p->split_n[q] < 0 || pn_num_elements(&layer->outputs[q]) != *m * p->split_n[q]) {
            return "a piece of the split result does not have M times its width elements";
        }
        sum += p->split_n[q];
    }
    return sum != *n ? "the pieces' widths do not add up to N" : NULL;
}

static pn_status linear_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                              pn_workload** workload_out, pn_string_out* message_out) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const accel_linear* p = d != NULL ? (const accel_linear*)d->payload : NULL;
    if (p == NULL || p->magic != ACCEL_LINEAR_MAGIC) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled layer '%s' was not made by this CpuAcc build", layer->name);
    }
    int64_t m = 0, n = 0, k = 0;
    const char* wrong = check_tensors(p, layer, &m, &n, &k);
    if (wrong != NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc: precompiled linear layer '%s': %s",
                       layer->name, wrong);
    }
    linear_state* s = (linear_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    s->kern = accel_kernel_set_for(env->isa)->vector;
    s->m = m;
    s->n = n;
    s->k = k;
    s->alpha = p->alpha;
    s->has_addend = p->has_addend != 0;
    s->addend_index = 2u + (p->has_bias ? 1u : 0u);
    s->has_act = p->has_act && accel_copy_activation(&p->act, &s->act);
    s->num_inputs = layer->num_inputs;
    if (p->has_bias) {
        const float* c = (const float*)layer->constant_data[2];
        s->bias = c;
        if (p->beta != 1.0f && n > 0) {
            s->own_bias = (float*)malloc((size_t)n * sizeof(float));
            if (s->own_bias == NULL) {
                linear_state_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
            }
            for (int64_t j = 0; j < n; ++j) s->own_bias[j] = p->beta * c[j];
            s->bias = s->own_bias;
        }
    }
    s->tk = accel_kernel_set_for(env->isa)->rows;
    if (p->has_norm) {
        const uint32_t at = 2u + (p->has_bias ? 1u : 0u) + (p->has_addend ? 1u : 0u);
        s->has_norm = 1;
        s->norm_rms = p->norm_rms != 0;
        s->norm_eps = p->norm_eps;
        s->norm_scale = (const float*)layer->constant_data[at];
        s->norm_bias = p->has_norm_bias ? (const float*)layer->constant_data[at + 1] : NULL;
        /* one thread: one job, whose N blocks hold whole rows when N fits one (gemm/gemm.c) */
        s->norm_in_epilogue = accel_threads_count(env->threads) == 1 &&
                              (n + s->arch->nr - 1) / s->arch->nr * s->arch->nr <= s->arch->ncj;
    }
    const float* bc = (const float*)layer->constant_data[1];
    if (k > 0 && n > 0) {
        size_t each = 0;
        s->bpack = accel_pack_gemm(packs, env->isa, 0, bc, k, n, p->transpose_b ? 1 : n, p->transpose_b ? k : 1, 1,
                                   0, &each);
        if (s->bpack == NULL) {
            linear_state_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing b");
        }
    }
    if (s->arch->ukr_ind != NULL && k > 0 && m > 1) { /* m == 1: the GEMV kernel */
        s->offs = (int64_t*)malloc((size_t)k * sizeof(int64_t));
        if (s->offs == NULL) {
            linear_state_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
        }
        for (int64_t q = 0; q < k; ++q) s->offs[q] = q;
    }
    s->ws_floats = gemm_workspace_floats(s->arch, accel_threads_count(env->threads), m, n, k, s->offs != NULL,
                                         1, 0);
    s->parts = p->num_outputs > 1 ? p->num_outputs : 1;
    s->direct = k > 0;
    for (uint32_t q = 0; q < s->parts; ++q) {
        s->pn[q] = s->parts > 1 ? p->split_n[q] : n;
        s->col0[q] = q > 0 ? s->col0[q - 1] + s->pn[q - 1] : 0;
        s->direct = s->direct && s->col0[q] % s->arch->nr == 0;
    }
    if (s->parts > 1 && !s->direct) { /* the result in the workspace, after the GEMM's scratch */
        s->c_floats = (s->ws_floats + 15) / 16 * 16;
        s->ws_floats = s->c_floats + (size_t)(m * n);
    }
    pn_workload* wl = pn_workload_new(s, linear_execute, linear_state_release, s->ws_floats * sizeof(float) + 64);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_linear_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, linear_build, workload_out, message_out);
}

/* ---- Sibling projections (accel_linear_group) --------------------------------------------- */

typedef struct group_state {
    accel_env env;
    const gemm_arch* arch;
    const accel_row_kernels* tk;
    int64_t m, k, ntot;
    uint32_t g;
    int64_t n[ACCEL_LINEAR_GROUP_MAX], col0[ACCEL_LINEAR_GROUP_MAX]; /* output g: columns [col0, col0 + n) */
    const float* bias[ACCEL_LINEAR_GROUP_MAX]; /* constants, or NULL */
    const float* bpack;  /* the b's side by side, packed: a shared block */
    int64_t* offs;       /* 0..k-1 (a read in place), or NULL */
    size_t gemm_floats;  /* the GEMM's scratch; the [M, ntot] product follows it (not direct) */
    int direct;          /* every output but the last a whole number of the arch's panels (and
                            K > 0): the GEMM stores into the outputs (gemm_run_parts) */
} group_state;

static void group_state_release(void* vs) {
    group_state* s = (group_state*)vs;
    if (s != NULL) {
        free(s->offs);
        free(s);
    }
}

typedef struct group_epi {
    const group_state* s;
    float* const* out;
} group_epi;

/* The finished block [m0, m0 + mb) x [n0, n0 + nb) of the product: each output's columns, plus
 * its bias, stored into that output (bias + product rounded once, as its Add). */
static void group_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb, int64_t nb) {
    const group_epi* e = (const group_epi*)vctx;
    const group_state* s = e->s;
    for (uint32_t g = 0; g < s->g; ++g) {
        const int64_t lo = n0 > s->col0[g] ? n0 : s->col0[g];
        const int64_t hi = n0 + nb < s->col0[g] + s->n[g] ? n0 + nb : s->col0[g] + s->n[g];
        if (lo >= hi) {
            continue;
        }
        float* y = e->out[g] + m0 * s->n[g] + (lo - s->col0[g]);
        const float* src = c + (lo - n0);
        for (int64_t i = 0; i < mb; ++i) {
            memcpy(y + i * s->n[g], src + i * ldc, (size_t)(hi - lo) * sizeof(float));
        }
        if (s->bias[g] != NULL) {
            s->tk->add_rows(y, s->n[g], mb, hi - lo, s->bias[g] + (lo - s->col0[g]), NULL, 0);
        }
    }
}

/* gemm_run_parts' epilogue: each output's bias added to its columns of the finished block. */
static void group_bias_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb, int64_t nb) {
    (void)c;
    (void)ldc;
    const group_epi* e = (const group_epi*)vctx;
    const group_state* s = e->s;
    for (uint32_t g = 0; g < s->g; ++g) {
        const int64_t lo = n0 > s->col0[g] ? n0 : s->col0[g];
        const int64_t hi = n0 + nb < s->col0[g] + s->n[g] ? n0 + nb : s->col0[g] + s->n[g];
        if (lo < hi && s->bias[g] != NULL) {
            s->tk->add_rows(e->out[g] + m0 * s->n[g] + (lo - s->col0[g]), s->n[g], mb, hi - lo,
                            s->bias[g] + (lo - s->col0[g]), NULL, 0);
        }
    }
}

static pn_status group_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const group_state* s = (const group_state*)vs;
    if (args == NULL || args->num_outputs != s->g) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: the fused projections expect %u outputs", s->g);
    }
    if (s->m * s->ntot == 0) {
        return PN_OK;
    }
    float* out[ACCEL_LINEAR_GROUP_MAX];
    for (uint32_t g = 0; g < s->g; ++g) {
        out[g] = (float*)args->outputs[g].data;
    }
    const float* a = (const float*)args->inputs[0].data;
    float* ws = (float*)args->workspace;
    if (ws == NULL || (s->k > 0 && a == NULL)) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: the fused projections need a and a workspace");
    }
    group_epi e = {s, out};
    const gemm_indirect ind = {a, s->offs, s->m, 0, s->k};
    gemm_operand ga = {a, s->k, 1, NULL, NULL, NULL, NULL, s->offs != NULL ? &ind : NULL};
    gemm_operand gb = {NULL, s->ntot, 1, s->bpack, NULL, NULL, NULL, NULL};
    if (s->direct) { /* the GEMM writes each output itself; the bias on each finished block */
        gemm_cparts parts;
        parts.count = (int)s->g;
        for (uint32_t g = 0; g < s->g; ++g) {
            parts.col0[g] = s->col0[g];
            parts.base[g] = out[g];
            parts.ld[g] = s->n[g];
        }
        parts.col0[s->g] = s->ntot;
        gemm_run_parts(&s->env, s->arch, s->m, s->ntot, s->k, &ga, &gb, &parts, ws, group_bias_epilogue, &e);
        return PN_OK;
    }
    float* c = ws + s->gemm_floats; /* else the product in the workspace, copied out by the epilogue */
    gemm_run(&s->env, s->arch, s->m, s->ntot, s->k, &ga, &gb, c, s->ntot, 0, ws, group_epilogue, &e);
    return PN_OK;
}

/* NULL when the layer's tensors follow ops/fused_linear.h's rules for payload p, else what is wrong. */
static const char* check_group(const accel_linear_group* p, const pn_layer* layer, int64_t* m, int64_t* k,
                               int64_t n[ACCEL_LINEAR_GROUP_MAX]) {
    if (p->num_outputs < 2 || p->num_outputs > ACCEL_LINEAR_GROUP_MAX || layer->num_outputs != p->num_outputs ||
        layer->num_inputs != p->num_inputs) {
        return "its number of inputs or outputs is not its payload's";
    }
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        if (layer->inputs[i].dtype != PN_DTYPE_FLOAT32 || (i > 0 && (layer->constant_data == NULL ||
                                                                     layer->constant_data[i] == NULL))) {
            return "an input is not float32, or a b or bias is not a constant";
        }
    }
    const pn_tensor_info* ai = &layer->inputs[0];
    if (ai->rank < 1) {
        return "a has rank 0";
    }
    *k = ai->dims[ai->rank - 1];
    *m = accel_span(ai, 0, ai->rank - 1);
    uint32_t next = 1 + p->num_outputs;
    for (uint32_t g = 0; g < p->num_outputs; ++g) {
        const pn_tensor_info* bi = &layer->inputs[1 + g];
        if (bi->rank < 2 || bi->dims[bi->rank - 2] != *k) {
            return "a b's rows are not a's last dim";
        }
        for (uint32_t i = 0; i + 2 < bi->rank; ++i) {
            if (bi->dims[i] != 1) {
                return "a b has a leading dim other than 1";
            }
        }
        n[g] = bi->dims[bi->rank - 1];
        if (layer->outputs[g].dtype != PN_DTYPE_FLOAT32 || pn_num_elements(&layer->outputs[g]) != *m * n[g]) {
            return "an output does not have M * N elements";
        }
        if (p->has_bias[g]) {
            const pn_tensor_info* ci = &layer->inputs[next++];
            if (!only_last_dim(ci) || pn_num_elements(ci) != n[g] || (ci->rank == 0 && n[g] != 1)) {
                return "a bias is not [N] or [1, ..., 1, N]";
            }
        }
    }
    return next == layer->num_inputs ? NULL : "its number of biases is not its payload's";
}

static pn_status group_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                             pn_workload** workload_out, pn_string_out* message_out) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const accel_linear_group* p = d != NULL ? (const accel_linear_group*)d->payload : NULL;
    if (p == NULL || p->magic != ACCEL_LINEAR_GROUP_MAGIC) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled layer '%s' was not made by this CpuAcc build", layer->name);
    }
    int64_t m = 0, k = 0, n[ACCEL_LINEAR_GROUP_MAX] = {0};
    const char* wrong = check_group(p, layer, &m, &k, n);
    if (wrong != NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc: precompiled projections '%s': %s",
                       layer->name, wrong);
    }
    group_state* s = (group_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    s->tk = accel_kernel_set_for(env->isa)->rows;
    s->m = m;
    s->k = k;
    s->g = p->num_outputs;
    uint32_t next = 1 + s->g;
    for (uint32_t g = 0; g < s->g; ++g) {
        s->n[g] = n[g];
        s->col0[g] = s->ntot;
        s->ntot += n[g];
        s->bias[g] = p->has_bias[g] ? (const float*)layer->constant_data[next++] : NULL;
    }
    if (k > 0 && s->ntot > 0) { /* the b's side by side, packed once (shared by reshape) */
        accel_pack_key key;
        accel_pack_key_init(&key, ACCEL_PACK_GEMM_B_SIDE, env->isa, layer->constant_data[1], layer->constant_data[2]);
        key.params[0] = k;
        key.params[1] = s->g;
        for (uint32_t g = 0; g < s->g; ++g) {
            key.params[2 + g] = n[g];
        }
        for (uint32_t g = 2; g < s->g; ++g) { /* the other b's by address (what source names for the first two) */
            key.params[2 + ACCEL_LINEAR_GROUP_MAX + (g - 2)] = (int64_t)(intptr_t)layer->constant_data[1 + g];
        }
        int fresh = 0;
        float* dst = accel_packs_get(packs, &key, gemm_packed_b_floats(s->arch, k, s->ntot), &fresh);
        float* side = fresh && dst != NULL ? (float*)malloc((size_t)(k * s->ntot) * sizeof(float)) : NULL;
        if (dst == NULL || (fresh && side == NULL)) {
            free(side);
            group_state_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing b");
        }
        if (fresh) {
            for (uint32_t g = 0; g < s->g; ++g) {
                const float* b = (const float*)layer->constant_data[1 + g];
                for (int64_t q = 0; q < k; ++q) {
                    memcpy(side + q * s->ntot + s->col0[g], b + q * n[g], (size_t)n[g] * sizeof(float));
                }
            }
            gemm_pack_b_full(s->arch, k, s->ntot, side, s->ntot, 1, dst);
            free(side);
        }
        s->bpack = dst;
    }
    if (s->arch->ukr_ind != NULL && k > 0 && m > 1) {
        s->offs = (int64_t*)malloc((size_t)k * sizeof(int64_t));
        if (s->offs == NULL) {
            group_state_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
        }
        for (int64_t q = 0; q < k; ++q) s->offs[q] = q;
    }
    s->direct = k > 0;
    for (uint32_t g = 1; g < s->g; ++g) {
        s->direct = s->direct && s->col0[g] % s->arch->nr == 0;
    }
    s->gemm_floats = (gemm_workspace_floats(s->arch, accel_threads_count(env->threads), m, s->ntot, k,
                                            s->offs != NULL, 1, 0) + 15) / 16 * 16;
    pn_workload* wl = pn_workload_new(s, group_execute, group_state_release,
                                      (s->gemm_floats + (s->direct ? 0 : (size_t)(m * s->ntot))) * sizeof(float) + 64);
    if (wl == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_linear_group_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, group_build, workload_out, message_out);
}
