/* CpuAcc pattern fusion (opt/patterns.h): MatMul, scale, mask, Softmax, MatMul as one fused attention (ops/attention.h). */
#include "opt/pattern_match.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Attention ------------------------------------------------------------------------------- */

/* An operand of the fused attention: a tensor of the subgraph seen through absorbed layers. */
typedef struct operand {
    uint32_t id;                    /* the tensor read */
    pn_tensor_info info;            /* its info */
    uint32_t rank;                  /* the logical operand */
    int64_t dims[PN_MAX_DIMS];
    int64_t strides[PN_MAX_DIMS];   /* elements of the tensor read */
    uint32_t perm[PN_MAX_DIMS];     /* axis j is axis perm[j] of the Transpose's input (permuted) */
    int permuted, reshaped;         /* a Transpose, a Reshape absorbed */
    int rs_known;                   /* the Reshape's grouping of axes in rs */
    pn_reshape_groups rs;
} operand;

/* A factor of a Mul or Div by a constant scalar that keeps the shape, read only by the next
 * layer: the tensor operand's id into *id, the factor into *scale. */
static int fold_scale(pat_ctx* c, uint32_t* id, double* scale) {
    const int64_t p = prod(c, *id);
    if (p < 0 || !inner(c, *id, 1)) {
        return 0;
    }
    const pn_layer* l = layer_at(c, p);
    float v;
    if (is_binary(l, PN_BINARY_DIV) && const_scalar(l, 1, &v) && v != 0.0f && keeps_shape(l, 0)) {
        if (!add_member(c, p)) return 0;
        *scale /= (double)v;
        *id = l->input_ids[0];
        return 1;
    }
    for (uint32_t s = 0; s < 2 && is_binary(l, PN_BINARY_MUL); ++s) {
        if (const_scalar(l, s, &v) && keeps_shape(l, 1 - s)) {
            if (!add_member(c, p)) return 0;
            *scale *= (double)v;
            *id = l->input_ids[1 - s];
            return 1;
        }
    }
    return 0;
}

/* The operand of a MatMul input: tensor id (info as the MatMul sees it), through a constant
 * scale (when `scale` is not NULL), a Transpose, another constant scale and a Reshape of a
 * tensor that only they read. */
static void input_operand(pat_ctx* c, uint32_t id, const pn_tensor_info* info, double* scale, operand* o) {
    if (scale != NULL) {
        fold_scale(c, &id, scale);
    }
    o->rank = info->rank;
    for (uint32_t i = 0; i < info->rank; ++i) {
        o->dims[i] = info->dims[i];
    }
    contiguous_strides(info, o->strides);
    o->id = id;
    o->info = *info;
    o->permuted = o->reshaped = o->rs_known = 0;
    for (uint32_t i = 0; i < PN_MAX_DIMS; ++i) {
        o->perm[i] = i;
    }
    int64_t p = prod(c, id);
    if (p >= 0 && inner(c, id, 1) && layer_at(c, p)->kind == PN_LAYER_TRANSPOSE && add_member(c, p)) {
        const pn_layer* t = layer_at(c, p);
        const pn_transpose_desc* d = (const pn_transpose_desc*)t->descriptor;
        int64_t s[PN_MAX_DIMS];
        contiguous_strides(&t->inputs[0], s);
        for (uint32_t i = 0; i < d->rank; ++i) {
            o->strides[i] = s[d->perm[i]];
            o->perm[i] = d->perm[i];
        }
        o->permuted = 1;
        id = t->input_ids[0];
        o->id = id;
        o->info = t->inputs[0];
        if (scale != NULL && fold_scale(c, &id, scale)) {
            o->id = id; /* the same dims and layout as the scaled tensor */
        }
    }
    p = prod(c, o->id);
    if (p >= 0 && inner(c, o->id, 1) && layer_at(c, p)->kind == PN_LAYER_RESHAPE && add_member(c, p)) {
        const pn_layer* rl = layer_at(c, p);
        o->id = rl->input_ids[0]; /* the same elements in the same order */
        o->info = rl->inputs[0];
        o->reshaped = 1;
        o->rs_known = pn_reshape_groups_make(rl->inputs[0].rank, rl->inputs[0].dims, rl->outputs[0].rank,
                                             rl->outputs[0].dims, &o->rs);
    }
}

/* Batch strides of operand o (matrix dims last) broadcast to the batch dims bd[0..nb). */
static int batch_strides(const operand* o, uint32_t nb, const int64_t* bd, int64_t* out) {
    return accel_attention_batch_strides(o->rank, o->dims, o->strides, nb, bd, out);
}

/* The masks added to the scores between the first product (and its scale) and the softmax. */
#define MAX_MASKS 4
#define MAX_OWN_MASK (1 << 22) /* floats of a summed constant mask, at most */
typedef struct mask_chain {
    uint32_t count;
    uint32_t id[MAX_MASKS];
    pn_tensor_info info[MAX_MASKS];
    const void* data[MAX_MASKS];       /* constant data, or NULL */
    pn_tensor_info at[MAX_MASKS];      /* the shape the mask is added at (its Add's output) */
    int reshaped;                      /* a Reshape lies between a mask and the scores */
} mask_chain;

/* Tensor id comes from a MatMul through Reshapes, Adds (of either operand) and Muls or Divs
 * by constants, each read only by the next. */
static int leads_to_matmul(const pat_ctx* c, uint32_t id, int depth) {
    const int64_t p = prod(c, id);
    if (p < 0 || !inner(c, id, 1) || depth > 8) {
        return 0;
    }
    const pn_layer* l = layer_at(c, p);
    float v;
    switch (l->kind) {
    case PN_LAYER_MATMUL: return 1;
    case PN_LAYER_RESHAPE: return leads_to_matmul(c, l->input_ids[0], depth + 1);
    case PN_LAYER_ELEMENTWISE_BINARY:
        if (is_binary(l, PN_BINARY_ADD)) {
            return leads_to_matmul(c, l->input_ids[0], depth + 1) || leads_to_matmul(c, l->input_ids[1], depth + 1);
        }
        if (is_binary(l, PN_BINARY_MUL) || is_binary(l, PN_BINARY_DIV)) {
            return (const_scalar(l, 1, &v) && leads_to_matmul(c, l->input_ids[0], depth + 1)) ||
                   (is_binary(l, PN_BINARY_MUL) && const_scalar(l, 0, &v) &&
                    leads_to_matmul(c, l->input_ids[1], depth + 1));
        }
        return 0;
    default: return 0;
    }
}

/* From the softmax's input *t back over Adds of masks and Reshapes (each read only by the
 * next, each Add keeping its scores operand's shape) to the tensor before them; 0 when a step
 * does not fit. */
static int mask_steps(pat_ctx* c, uint32_t* t, mask_chain* mc) {
    int reshape_seen = 0;
    for (int step = 0; step < 2 * MAX_MASKS; ++step) {
        const int64_t p = prod(c, *t);
        if (p < 0 || !inner(c, *t, 1)) {
            return 1;
        }
        const pn_layer* l = layer_at(c, p);
        if (l->kind == PN_LAYER_RESHAPE) {
            if (!leads_to_matmul(c, l->input_ids[0], 0) || !add_member(c, p)) {
                return 1; /* not ours: the product comes through something else */
            }
            reshape_seen = 1;
            *t = l->input_ids[0];
            continue;
        }
        if (!is_binary(l, PN_BINARY_ADD)) {
            return 1;
        }
        uint32_t s = 2;
        for (uint32_t k = 0; k < 2 && s == 2; ++k) {
            if (keeps_shape(l, k) && leads_to_matmul(c, l->input_ids[k], 0)) {
                s = k;
            }
        }
        if (s == 2 || mc->count >= MAX_MASKS || !add_member(c, p)) {
            return 0;
        }
        mc->id[mc->count] = l->input_ids[1 - s];
        mc->info[mc->count] = l->inputs[1 - s];
        mc->data[mc->count] = l->constant_data != NULL ? l->constant_data[1 - s] : NULL;
        mc->at[mc->count] = l->outputs[0];
        mc->reshaped |= reshape_seen;
        ++mc->count;
        *t = l->input_ids[s];
    }
    return 0;
}

/* The masks of mc (all constant) summed into one float array of the scores' shape (elements in
 * the same order: Reshapes keep it); 1, 0 when a mask is not constant or the sum would be too
 * large, -1 when out of memory. */
static int combine_masks(const mask_chain* mc, const pn_tensor_info* scores, float** out) {
    const int64_t n = pn_num_elements(scores);
    if (n > MAX_OWN_MASK) {
        return 0;
    }
    for (uint32_t k = 0; k < mc->count; ++k) {
        if (mc->data[k] == NULL || mc->info[k].dtype != PN_DTYPE_FLOAT32 || pn_num_elements(&mc->at[k]) != n) {
            return 0;
        }
    }
    float* sum = (float*)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (sum == NULL) {
        return -1;
    }
    /* in the order the Adds run: the one nearest the product first */
    for (int64_t e = 0; e < n; ++e) {
        sum[e] = 0.0f;
    }
    for (int32_t k = (int32_t)mc->count - 1; k >= 0; --k) {
        const pn_tensor_info* at = &mc->at[k];
        int64_t str[PN_MAX_DIMS];
        if (pn_broadcast_strides(&mc->info[k], at, str) != 0) {
            free(sum);
            return 0;
        }
        const float* m = (const float*)mc->data[k];
        int64_t idx[PN_MAX_DIMS] = {0};
        for (int64_t e = 0; e < n; ++e) {
            int64_t off = 0;
            for (uint32_t i = 0; i < at->rank; ++i) {
                off += idx[i] * str[i];
            }
            sum[e] += m[off];
            for (int32_t i = (int32_t)at->rank - 1; i >= 0; --i) {
                if (++idx[i] < at->dims[i]) {
                    break;
                }
                idx[i] = 0;
            }
        }
    }
    *out = sum;
    return 1;
}

/* softmax(scale * A B + mask) V from the Softmax layer `sm`. */
int accel_match_attention(pat_ctx* c, int64_t sm, pat_match* m) {
    const pn_layer* sl = layer_at(c, sm);
    if (sl->kind != PN_LAYER_SOFTMAX) {
        return 0;
    }
    const pn_tensor_info* st = &sl->inputs[0];
    if (st->rank < 2 || pn_normalize_axis(((const pn_softmax_desc*)sl->descriptor)->axis, st->rank) !=
                            (int32_t)st->rank - 1) {
        return 0;
    }
    c->num_members = 0;
    add_member(c, sm);
    /* the second product: P @ V, P this softmax's output */
    const int64_t pv = consumer(c, sl->output_ids[0]);
    if (pv < 0 || layer_at(c, pv)->kind != PN_LAYER_MATMUL || layer_at(c, pv)->input_ids[0] != sl->output_ids[0] ||
        !add_member(c, pv)) {
        return 0;
    }
    const pn_layer* ml2 = layer_at(c, pv);
    /* the masks (Adds, Reshapes between them), the scale and the first product */
    uint32_t t = sl->input_ids[0];
    mask_chain mc;
    memset(&mc, 0, sizeof(mc));
    double scale = 1.0;
    if (!mask_steps(c, &t, &mc)) {
        return 0;
    }
    fold_scale(c, &t, &scale);
    const int64_t pm1 = prod(c, t);
    if (pm1 < 0 || !inner(c, t, 1) || layer_at(c, pm1)->kind != PN_LAYER_MATMUL || !add_member(c, pm1)) {
        return 0;
    }
    const pn_layer* ml1 = layer_at(c, pm1);
    const pn_tensor_info* scores = &ml1->outputs[0];
    if (ml1->inputs[0].rank < 2 || ml1->inputs[1].rank < 2 || ml2->inputs[1].rank < 2 ||
        scores->rank != ml2->outputs[0].rank || !pn_same_dims(scores, st)) {
        return 0;
    }
    operand q, k, v;
    input_operand(c, ml1->input_ids[0], &ml1->inputs[0], &scale, &q);
    input_operand(c, ml1->input_ids[1], &ml1->inputs[1], &scale, &k);
    input_operand(c, ml2->input_ids[1], &ml2->inputs[1], NULL, &v);
    /* the output, through a Transpose and a Reshape that only it feeds */
    const pn_tensor_info* oi = &ml2->outputs[0];
    int64_t os[PN_MAX_DIMS];
    contiguous_strides(oi, os);
    uint32_t out_id = ml2->output_ids[0];
    pn_tensor_info out_info = *oi;
    uint32_t perm_out[PN_MAX_DIMS];
    int out_permuted = 0, out_reshaped = 0;
    int64_t pt = consumer(c, out_id);
    if (pt >= 0 && layer_at(c, pt)->kind == PN_LAYER_TRANSPOSE && add_member(c, pt)) {
        const pn_layer* tl = layer_at(c, pt);
        const pn_transpose_desc* d = (const pn_transpose_desc*)tl->descriptor;
        int64_t fs[PN_MAX_DIMS];
        contiguous_strides(&tl->outputs[0], fs);
        for (uint32_t i = 0; i < d->rank; ++i) {
            os[d->perm[i]] = fs[i];
            perm_out[i] = d->perm[i];
        }
        out_permuted = 1;
        out_id = tl->output_ids[0];
        out_info = tl->outputs[0];
        const int64_t pr = consumer(c, out_id);
        if (pr >= 0 && layer_at(c, pr)->kind == PN_LAYER_RESHAPE && add_member(c, pr)) {
            out_id = layer_at(c, pr)->output_ids[0];
            out_info = layer_at(c, pr)->outputs[0];
            out_reshaped = 1;
        }
    }
    /* dims: A [.., sq, d] B [.., d, sk] V [.., sk, dv] out [.., sq, dv] */
    const uint32_t r = scores->rank, nb = r - 2;
    const int64_t sq = scores->dims[r - 2], sk = scores->dims[r - 1];
    const int64_t dd = q.dims[q.rank - 1], dv = v.dims[v.rank - 1];
    if (q.dims[q.rank - 2] != sq || k.dims[k.rank - 2] != dd || k.dims[k.rank - 1] != sk ||
        v.dims[v.rank - 2] != sk || oi->dims[r - 2] != sq || oi->dims[r - 1] != dv || nb > PN_MAX_DIMS - 2 ||
        sk < 1) {
        return 0;
    }
    for (uint32_t i = 0; i < nb; ++i) {
        if (oi->dims[i] != scores->dims[i]) {
            return 0; /* V broadcasting P's batch larger */
        }
    }
    accel_attention* a = (accel_attention*)calloc(1, sizeof(*a));
    if (a == NULL) {
        return -1;
    }
    a->magic = ACCEL_ATTN_MAGIC;
    a->batch_rank = nb;
    for (uint32_t i = 0; i < nb; ++i) {
        a->bdims[i] = scores->dims[i];
        a->ob[i] = os[i];
    }
    /* one mask added at the scores' own shape: an input of the layer, read through broadcast
     * strides; several, or any behind a Reshape: all constant, summed now into one of the
     * scores' shape that the payload owns */
    const int has_mask = mc.count > 0;
    const int mask_input = mc.count == 1 && !mc.reshaped;
    int64_t ms[PN_MAX_DIMS] = {0};
    if (!batch_strides(&q, nb, a->bdims, a->qb) || !batch_strides(&k, nb, a->bdims, a->kb) ||
        !batch_strides(&v, nb, a->bdims, a->vb) ||
        (mask_input && pn_broadcast_strides(&mc.info[0], scores, ms) != 0)) {
        free(a);
        return 0;
    }
    if (has_mask && !mask_input) {
        const int made = combine_masks(&mc, scores, &a->own_mask);
        if (made <= 0) {
            free(a);
            return made;
        }
        contiguous_strides(scores, ms);
    }
    for (uint32_t i = 0; i < nb; ++i) {
        a->mb[i] = ms[i];
    }
    a->sq = sq;
    a->sk = sk;
    a->d = dd;
    a->dv = dv;
    a->q_rs = q.strides[q.rank - 2];
    a->q_cs = q.strides[q.rank - 1];
    a->k_ps = k.strides[k.rank - 2];
    a->k_js = k.strides[k.rank - 1];
    a->v_js = v.strides[v.rank - 2];
    a->v_cs = v.strides[v.rank - 1];
    a->m_rs = ms[nb];
    a->m_cs = ms[nb + 1];
    a->o_rs = os[r - 2];
    a->o_cs = os[r - 1];
    a->scale = (float)scale;
    const operand* ops[3] = {&q, &k, &v};
    for (uint32_t i = 0; i < 3; ++i) {
        a->op_rank[i] = ops[i]->rank;
        memcpy(a->op_dims[i], ops[i]->dims, sizeof(a->op_dims[i]));
        memcpy(a->op_strides[i], ops[i]->strides, sizeof(a->op_strides[i]));
        memcpy(a->perm[i], ops[i]->perm, sizeof(a->perm[i]));
        a->permuted[i] = (unsigned char)ops[i]->permuted;
        a->reshaped[i] = (unsigned char)ops[i]->reshaped;
        a->rs_known[i] = (unsigned char)ops[i]->rs_known;
        a->rs[i] = ops[i]->rs;
    }
    for (uint32_t i = 0; out_permuted && i < r; ++i) {
        a->perm_out[i] = perm_out[i];
    }
    a->out_permuted = (unsigned char)out_permuted;
    a->out_reshaped = (unsigned char)out_reshaped;
    for (uint32_t i = 0; i < 3; ++i) {
        m->input_ids[i] = ops[i]->id;
        m->inputs[i] = ops[i]->info;
        m->constants[i] = NULL;
        a->inputs[i] = ops[i]->info;
    }
    m->num_inputs = 3;
    if (mask_input) {
        m->input_ids[3] = mc.id[0];
        m->inputs[3] = mc.info[0];
        m->constants[3] = mc.data[0];
        a->inputs[3] = mc.info[0];
        m->num_inputs = 4;
    }
    a->num_inputs = m->num_inputs;
    a->output = out_info;
    snprintf(a->label, sizeof(a->label),
             "attention: %lld x %lld batch(es) of [%lld, %lld] x [%lld, %lld]^T, scale %g%s, softmax, x V [%lld, %lld]",
             (long long)(nb > 0 ? a->bdims[0] : 1), (long long)(nb > 1 ? a->bdims[nb - 1] : 1), (long long)sq,
             (long long)dd, (long long)sk, (long long)dd, (double)a->scale,
             !has_mask ? "" : mask_input ? ", mask" : ", constant masks summed",
             (long long)sk, (long long)dv);
    for (uint32_t i = 0; i < 4; ++i) {
        a->inputs[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
    }
    a->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    m->kind = PN_LAYER_PRECOMPILED;
    m->payload = a;
    m->output_id = out_id;
    m->output = out_info;
    return 1;
}

