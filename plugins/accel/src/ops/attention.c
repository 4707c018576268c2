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

int accel_attention_batch_strides(uint32_t rank, const int64_t* dims, const int64_t* strides, uint32_t nb,
                                  const int64_t* bd, int64_t* out) {
    const int32_t ob = (int32_t)rank - 2;
    for (uint32_t i = 0; i < nb; ++i) {
        const int32_t a = (int32_t)i - ((int32_t)nb - ob);
        if (a < 0 || dims[a] == 1) {
            out[i] = 0;
        } else if (dims[a] == bd[i]) {
            out[i] = strides[a];
        } else {
            return 0;
        }
    }
    return 1;
}

static void contiguous(uint32_t rank, const int64_t* dims, int64_t* strides) {
    int64_t n = 1;
    for (int32_t i = (int32_t)rank - 1; i >= 0; --i) {
        strides[i] = n;
        n *= dims[i];
    }
}

static int64_t count(uint32_t rank, const int64_t* dims) {
    int64_t n = 1;
    for (uint32_t i = 0; i < rank; ++i) {
        n *= dims[i];
    }
    return n;
}

/* The payload `a` at the dims of `layer`'s tensors, worked out again from its recipe into *at:
 * 1, or 0 when they do not follow from it (attention.h). */
static int attention_at(const accel_attention* a, const pn_layer* layer, accel_attention* at) {
    *at = *a;
    const uint32_t nb = a->batch_rank, r = nb + 2;
    for (uint32_t i = 0; i < 3; ++i) {
        const pn_tensor_info* x = &layer->inputs[i];
        const uint32_t rank = a->op_rank[i];
        if (x->dtype != a->inputs[i].dtype || x->rank != a->inputs[i].rank || rank < 2 || rank > PN_MAX_DIMS) {
            return 0;
        }
        /* the tensor the products read (before a Transpose): x, or the output of the Reshape of x */
        const int64_t* td = x->dims;
        uint32_t tr = x->rank;
        int64_t reshaped[PN_MAX_DIMS];
        if (a->reshaped[i]) {
            if (!a->rs_known[i]) { /* a Reshape whose grouping is not known: x keeps its dims */
                if (!pn_same_dims(x, &a->inputs[i])) {
                    return 0;
                }
                continue;
            }
            if (a->rs[i].in_rank != x->rank || !pn_reshape_groups_apply(&a->rs[i], x->dims, reshaped)) {
                return 0;
            }
            td = reshaped;
            tr = a->rs[i].out_rank;
        }
        if (tr != rank) {
            return 0;
        }
        int64_t s[PN_MAX_DIMS];
        contiguous(tr, td, s);
        for (uint32_t j = 0; j < rank; ++j) {
            const uint32_t from = a->permuted[i] ? a->perm[i][j] : j;
            if (from >= tr) {
                return 0;
            }
            at->op_dims[i][j] = td[from];
            at->op_strides[i][j] = s[from];
        }
    }
    const int64_t* q = at->op_dims[0];
    const int64_t* k = at->op_dims[1];
    const int64_t* v = at->op_dims[2];
    const uint32_t rq = a->op_rank[0], rk = a->op_rank[1], rv = a->op_rank[2];
    if (rq - 2 > nb || rk - 2 > nb || rv - 2 > nb) {
        return 0;
    }
    /* the batch: q's and k's broadcast (v may broadcast to it, never widen it) */
    for (uint32_t i = 0; i < nb; ++i) {
        const int32_t iq = (int32_t)i - (int32_t)(nb - (rq - 2)), ik = (int32_t)i - (int32_t)(nb - (rk - 2));
        const int64_t dq = iq >= 0 ? q[iq] : 1, dk = ik >= 0 ? k[ik] : 1;
        if (dq != dk && dq != 1 && dk != 1) {
            return 0;
        }
        at->bdims[i] = dq == 1 ? dk : dq;
    }
    at->sq = q[rq - 2];
    at->d = q[rq - 1];
    at->sk = k[rk - 1];
    at->dv = v[rv - 1];
    if (k[rk - 2] != at->d || v[rv - 2] != at->sk || at->sk < 1) {
        return 0;
    }
    if (!accel_attention_batch_strides(rq, q, at->op_strides[0], nb, at->bdims, at->qb) ||
        !accel_attention_batch_strides(rk, k, at->op_strides[1], nb, at->bdims, at->kb) ||
        !accel_attention_batch_strides(rv, v, at->op_strides[2], nb, at->bdims, at->vb)) {
        return 0;
    }
    at->q_rs = at->op_strides[0][rq - 2];
    at->q_cs = at->op_strides[0][rq - 1];
    at->k_ps = at->op_strides[1][rk - 2];
    at->k_js = at->op_strides[1][rk - 1];
    at->v_js = at->op_strides[2][rv - 2];
    at->v_cs = at->op_strides[2][rv - 1];
    /* the mask, broadcast to the scores [batch, sq, sk]; a summed constant one is made for its dims */
    pn_tensor_info scores;
    memset(&scores, 0, sizeof(scores));
    scores.struct_size = (uint32_t)sizeof(scores);
    scores.dtype = PN_DTYPE_FLOAT32;
    scores.rank = r;
    memcpy(scores.dims, at->bdims, nb * sizeof(int64_t));
    scores.dims[nb] = at->sq;
    scores.dims[nb + 1] = at->sk;
    if (a->own_mask != NULL) {
        if (at->sq != a->sq || at->sk != a->sk || memcmp(at->bdims, a->bdims, nb * sizeof(int64_t)) != 0) {
            return 0;
        }
    } else if (a->num_inputs > 3) {
        const pn_tensor_info* m = &layer->inputs[3];
        int64_t ms[PN_MAX_DIMS];
        if (m->dtype != a->inputs[3].dtype || m->rank != a->inputs[3].rank || pn_broadcast_strides(m, &scores, ms) != 0) {
            return 0;
        }
        memcpy(at->mb, ms, nb * sizeof(int64_t));
        at->m_rs = ms[nb];
        at->m_cs = ms[nb + 1];
    }
    /* the output: the product [batch, sq, dv], through its Transpose and Reshape */
    int64_t od[PN_MAX_DIMS], os[PN_MAX_DIMS], fd[PN_MAX_DIMS];
    memcpy(od, at->bdims, nb * sizeof(int64_t));
    od[nb] = at->sq;
    od[nb + 1] = at->dv;
    contiguous(r, od, os);
    memcpy(fd, od, sizeof(od));
    if (a->out_permuted) {
        int64_t fs[PN_MAX_DIMS];
        for (uint32_t i = 0; i < r; ++i) {
            if (a->perm_out[i] >= r) {
                return 0;
            }
            fd[i] = od[a->perm_out[i]];
        }
        contiguous(r, fd, fs);
        for (uint32_t i = 0; i < r; ++i) {
            os[a->perm_out[i]] = fs[i];
        }
    }
    const pn_tensor_info* out = &layer->outputs[0];
    if (out->dtype != a->output.dtype || out->rank != a->output.rank) {
        return 0;
    }
    if (a->out_reshaped) {
        if (pn_num_elements(out) != count(r, od)) {
            return 0;
        }
    } else if (out->rank != r || memcmp(out->dims, fd, r * sizeof(int64_t)) != 0) {
        return 0;
    }
    memcpy(at->ob, os, nb * sizeof(int64_t));
    at->o_rs = os[r - 2];
    at->o_cs = os[r - 1];
    for (uint32_t i = 0; i < a->num_inputs; ++i) {
        at->inputs[i].rank = layer->inputs[i].rank;
        memcpy(at->inputs[i].dims, layer->inputs[i].dims, sizeof(at->inputs[i].dims));
    }
    at->output.rank = out->rank;
    memcpy(at->output.dims, out->dims, sizeof(at->output.dims));
    return 1;
}

int accel_attention_at_execute(const pn_layer* layer, uint32_t* fixed_inputs) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const accel_attention* a = d != NULL ? (const accel_attention*)d->payload : NULL;
    if (a == NULL || a->magic != ACCEL_ATTN_MAGIC || a->own_mask != NULL) {
        return 0;
    }
    uint32_t fixed = 0;
    for (uint32_t i = 0; i < 3; ++i) {
        fixed |= a->reshaped[i] && !a->rs_known[i] ? 1u << i : 0u;
    }
    *fixed_inputs = fixed;
    return 1;
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
    int same = same_info(&layer->outputs[0], &a->output);
    for (uint32_t i = 0; i < a->num_inputs; ++i) {
        same = same && same_info(&layer->inputs[i], &a->inputs[i]);
    }
    accel_attention derived;
    if (!same) {
        if (!attention_at(a, layer, &derived)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled attention '%s': its tensors' dims are not ones its payload "
                           "(made for other dims) derives its operands from", layer->name);
        }
        a = &derived;
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
