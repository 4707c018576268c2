/* CpuAcc fused attention: the workload of the PRECOMPILED layer opt/patterns.c makes
 * (ops/attention.h). */
#include "ops/attention.h"
#include "gemm/gemm.h"
#include "kernels/row_kernels.h"

#include <stdlib.h>
#include <string.h>

#define MIN_WORK 65536 /* multiply-adds per unit of work below which a wake-up does not pay */

typedef struct attn_state {
    accel_attention a;        /* a copy of the payload */
    accel_env env;
    const accel_row_kernels* tk;
    gemm_store_t_fn store_t;  /* the ISA's 16 x 16 register-block transpose (pack_kt) */
    int threads;              /* the pool's threads */
    int64_t ldk, ldv;         /* padded row lengths of the packed K^T and V */
    int v_in_place;           /* V read where it is (contiguous columns, dv a multiple of vw) */
    int64_t batches;          /* product of the batch dims */
    int64_t chunks;           /* row ranges per batch */
    int64_t chunk_rows;       /* rows per range (a multiple of ACCEL_ROW_MR) */
    int64_t items;            /* the units in that many equal runs, each with a workspace slot
                                 of its own (so no two threads share one) */
    size_t slot_floats;       /* floats of one slot: K^T, V, the scores of ACCEL_ROW_MR rows, a mask block */
} attn_state;

void accel_attention_release(void* payload) {
    accel_attention* a = (accel_attention*)payload;
    if (a != NULL) {
        free(a->own_mask);
        free(a);
    }
}

static void attn_release(void* raw) { free(raw); }

/* Element offsets of batch t in q, k, v, mask, out. */
static void batch_offsets(const accel_attention* a, int64_t t, int64_t off[5]) {
    for (int i = 0; i < 5; ++i) {
        off[i] = 0;
    }
    for (int32_t d = (int32_t)a->batch_rank - 1; d >= 0; --d) {
        const int64_t idx = t % a->bdims[d];
        t /= a->bdims[d];
        off[0] += idx * a->qb[d];
        off[1] += idx * a->kb[d];
        off[2] += idx * a->vb[d];
        off[3] += idx * a->mb[d];
        off[4] += idx * a->ob[d];
    }
}

typedef struct attn_job {
    attn_state* s;
    const float* q;
    const float* k;
    const float* v;
    const float* m;
    float* o;
    float* ws;
} attn_job;

/* K^T of one batch into kt [d][ldk] (zeros past sk); keys with contiguous depth (the usual
 * K, [keys, depth] rows) through the ISA's register-block transpose. */
static void pack_kt(const accel_attention* a, gemm_store_t_fn store_t, const float* k, float* kt,
                    int64_t ldk) {
    if (a->k_ps == 1 && a->k_js != 1) {
        store_t(k, a->k_js, kt, ldk, a->sk, a->d);
    }
    for (int64_t p = 0; p < a->d; ++p) {
        float* row = kt + p * ldk;
        const float* src = k + p * a->k_ps;
        if (a->k_js == 1) {
            memcpy(row, src, (size_t)a->sk * sizeof(float));
        } else if (a->k_ps != 1) {
            for (int64_t j = 0; j < a->sk; ++j) {
                row[j] = src[j * a->k_js];
            }
        }
        memset(row + a->sk, 0, (size_t)(ldk - a->sk) * sizeof(float));
    }
}

/* V of one batch into vp [sk][ldv] (zeros past dv). */
static void pack_v(const accel_attention* a, const float* v, float* vp, int64_t ldv) {
    for (int64_t j = 0; j < a->sk; ++j) {
        float* row = vp + j * ldv;
        const float* src = v + j * a->v_js;
        if (a->v_cs == 1) {
            memcpy(row, src, (size_t)a->dv * sizeof(float));
        } else {
            for (int64_t c = 0; c < a->dv; ++c) {
                row[c] = src[c * a->v_cs];
            }
        }
        memset(row + a->dv, 0, (size_t)(ldv - a->dv) * sizeof(float));
    }
}

/* Units [b, e) with workspace slot `slot`. */
static void run_units(const attn_job* j, int64_t b, int64_t e, int64_t slot) {
    const attn_state* s = j->s;
    const accel_attention* a = &s->a;
    const accel_row_kernels* tk = s->tk;
    float* kt = j->ws + (size_t)slot * s->slot_floats;
    float* vp = kt + a->d * s->ldk;
    float* sc = vp + (s->v_in_place ? 0 : a->sk * s->ldv);
    float* mbuf = sc + ACCEL_ROW_MR * s->ldk;
    int64_t packed = -1;
    for (int64_t u = b; u < e; ++u) {
        const int64_t t = u / s->chunks;
        const int64_t r0 = (u % s->chunks) * s->chunk_rows;
        const int64_t r1 = r0 + s->chunk_rows < a->sq ? r0 + s->chunk_rows : a->sq;
        int64_t off[5];
        batch_offsets(a, t, off);
        if (t != packed) {
            pack_kt(a, s->store_t, j->k + off[1], kt, s->ldk);
            if (!s->v_in_place) {
                pack_v(a, j->v + off[2], vp, s->ldv);
            }
            packed = t;
        }
        const float* v = s->v_in_place ? j->v + off[2] : vp;
        const int64_t ldv = s->v_in_place ? a->v_js : s->ldv;
        for (int64_t i = r0; i < r1; i += ACCEL_ROW_MR) {
            const int64_t nr = r1 - i < ACCEL_ROW_MR ? r1 - i : ACCEL_ROW_MR;
            const float* mask = NULL;
            int64_t mrs = 0;
            if (j->m != NULL) {
                const float* m = j->m + off[3] + i * a->m_rs;
                if (a->m_cs == 1) {
                    mask = m;
                    mrs = a->m_rs;
                } else { /* a mask broadcast (or strided) along the keys: its rows gathered */
                    for (int64_t r = 0; r < nr; ++r) {
                        for (int64_t c = 0; c < a->sk; ++c) {
                            mbuf[r * s->ldk + c] = m[r * a->m_rs + c * a->m_cs];
                        }
                    }
                    mask = mbuf;
                    mrs = s->ldk;
                }
            }
            float mx[ACCEL_ROW_MR], inv[ACCEL_ROW_MR];
            tk->attn_scores(nr, a->sk, a->d, j->q + off[0] + i * a->q_rs, a->q_rs, a->q_cs, kt, s->ldk,
                            a->scale, mask, mrs, sc, s->ldk, mx);
            tk->attn_softmax_rows(sc, nr, a->sk, s->ldk, mx, inv);
            tk->attn_pv(nr, a->sk, a->dv, sc, s->ldk, v, ldv, inv, j->o + off[4] + i * a->o_rs, a->o_rs,
                        a->o_cs);
        }
    }
}

/* Items [b, e): item t runs its share of the units with slot t. */
static void items_range(void* raw, int64_t b, int64_t e) {
    const attn_job* j = (const attn_job*)raw;
    const int64_t units = j->s->batches * j->s->chunks, items = j->s->items;
    for (int64_t t = b; t < e; ++t) {
        run_units(j, t * units / items, (t + 1) * units / items, t);
    }
}

static pn_status attn_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    attn_state* s = (attn_state*)raw;
    const accel_attention* a = &s->a;
    pn_status st = pn_check_execute_args(args, a->num_inputs, a->inputs, 1, &a->output, "CpuAcc",
                                         message_out);
    if (st != PN_OK) {
        return st;
    }
    if (pn_num_elements(&a->output) == 0) {
        return PN_OK;
    }
    if (args->workspace == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc attention: execute() was given no workspace (it asked for one)");
    }
    attn_job j = {s,
                  (const float*)args->inputs[0].data,
                  (const float*)args->inputs[1].data,
                  (const float*)args->inputs[2].data,
                  a->num_inputs > 3 ? (const float*)args->inputs[3].data : a->own_mask,
                  (float*)args->outputs[0].data,
                  (float*)args->workspace};
    const int64_t per_item = s->batches * s->chunks / s->items * s->chunk_rows * a->sk * (a->d + a->dv);
    accel_parallel_for_grain(s->env.threads, s->items, MIN_WORK / (per_item > 0 ? per_item : 1) + 1,
                             items_range, &j);
    return PN_OK;
}

static int same_info(const pn_tensor_info* a, const pn_tensor_info* b) {
    return a->dtype == b->dtype && pn_same_dims(a, b);
}

pn_status accel_attention_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const accel_attention* a = (const accel_attention*)d->payload;
    if (layer->num_inputs != a->num_inputs || layer->num_outputs != 1) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled attention '%s' has %u inputs and %u outputs, its payload %u and 1",
                       layer->name, layer->num_inputs, layer->num_outputs, a->num_inputs);
    }
    for (uint32_t i = 0; i < a->num_inputs; ++i) {
        if (!same_info(&layer->inputs[i], &a->inputs[i])) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled attention '%s' input %u does not have its payload's shape",
                           layer->name, i);
        }
    }
    if (!same_info(&layer->outputs[0], &a->output)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled attention '%s' output does not have its payload's shape",
                       layer->name);
    }
    attn_state* s = (attn_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->a = *a;
    s->env = *env;
    s->tk = accel_kernel_set_for(env->isa)->rows;
    s->store_t = accel_kernel_set_for(env->isa)->gemm->store_t;
    s->threads = accel_threads_count(env->threads);
    const int64_t vw = s->tk->vw;
    s->ldk = (a->sk + 2 * vw - 1) / (2 * vw) * (2 * vw);
    s->ldv = (a->dv + vw - 1) / vw * vw;
    s->v_in_place = a->v_cs == 1 && a->dv % vw == 0;
    s->batches = 1;
    for (uint32_t i = 0; i < a->batch_rank; ++i) {
        s->batches *= a->bdims[i];
    }
    /* rows split so that there are about two units per thread, each of at least 16 rows */
    int64_t want = s->batches >= 2 * s->threads ? 1 : (2 * s->threads + s->batches - 1) / s->batches;
    int64_t rows = (a->sq + want - 1) / (want > 0 ? want : 1);
    rows = rows < 16 ? 16 : rows;
    s->chunk_rows = (rows + ACCEL_ROW_MR - 1) / ACCEL_ROW_MR * ACCEL_ROW_MR;
    s->chunks = (a->sq + s->chunk_rows - 1) / s->chunk_rows;
    s->slot_floats = (size_t)(a->d * s->ldk + (s->v_in_place ? 0 : a->sk * s->ldv) + 2 * ACCEL_ROW_MR * s->ldk + 16);
    s->slot_floats = (s->slot_floats + 15) / 16 * 16; /* slots start on 64 bytes */
    /* four runs of units per thread at most (as many as parallel_for makes parts) */
    const int64_t units = s->batches * s->chunks;
    s->items = units < 4 * (int64_t)s->threads ? units : 4 * (int64_t)s->threads;
    s->items = s->items > 0 ? s->items : 1;
    *workload_out = pn_workload_new(s, attn_execute, attn_release,
                                    (size_t)s->items * s->slot_floats * sizeof(float));
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    return PN_OK;
}
