/* CpuAcc blocked chains (chain/chain.h). The payload's rewrites: concatenations whose parts are written in place, resizes moved past the steps that commute with them, channel views of a tensor's blocks. */
#include "chain/packed_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 when concatenation step a's parts are the first parts of step b's, in order. */
static int parts_prefix(const packed_step* a, const packed_step* b) {
    if (a->num_parts > b->num_parts) {
        return 0;
    }
    for (uint32_t k = 0; k < a->num_parts; ++k) {
        if (a->part[k] != b->part[k]) return 0;
    }
    return 1;
}

/* Concatenations written in place: the parts of a concatenation R (the root) live inside R's
 * storage at their blocks, and so does every concatenation of R's first parts (DenseNet's:
 * each dense layer concatenates every feature so far, a prefix of the block's last
 * concatenation), so no part is ever copied; those concatenation steps run nothing. A root
 * takes its parts when each is written by a step of the chain other than a concatenation,
 * appears in R once, and is a part of no concatenation but R and R's prefixes; else its steps
 * copy, as without this. The members' halos become the widest of the group (one storage
 * geometry). */
void chain_alias_concats(accel_chain* ch) {
    for (uint32_t r = 0; r < ch->num_steps; ++r) {
        packed_step* root = &ch->steps[r];
        if (!root->concat) continue;
        int is_root = 1, ok = 1;
        for (uint32_t i = 0; i < ch->num_steps && is_root; ++i) { /* no longer concatenation extends it */
            const packed_step* o = &ch->steps[i];
            is_root = !(o->concat && i != r && o->num_parts > root->num_parts && parts_prefix(root, o));
        }
        if (!is_root) continue;
        for (uint32_t k = 0; k < root->num_parts && ok; ++k) {
            const uint32_t p = root->part[k];
            ok = ch->tensors[p].produced && ch->tensors[p].alias_of < 0;
            for (uint32_t q = 0; q < k && ok; ++q) ok = root->part[q] != p;
            for (uint32_t i = 0; i < ch->num_steps && ok; ++i) {
                const packed_step* o = &ch->steps[i];
                if (o->y == p && (o->concat || o->view)) ok = 0; /* a concatenation of concatenations
                                                                    or of views: copied */
                for (uint32_t q = 0; o->concat && i != r && q < o->num_parts && ok; ++q) {
                    /* another concatenation reading p must be a prefix of the root, not one that
                       extends a prefix of it differently */
                    if (o->part[q] == p && !parts_prefix(o, root)) ok = 0;
                }
            }
        }
        if (!ok) continue;
        chain_tensor* rt = &ch->tensors[root->y];
        int64_t ht = rt->ht, hl = rt->hl, hb = rt->hb, hr = rt->hr;
        for (int pass = 0; pass < 2; ++pass) { /* the widest halo, then given to every member */
            for (uint32_t i = 0; i < ch->num_steps; ++i) {
                packed_step* o = &ch->steps[i];
                if (!o->concat || !parts_prefix(o, root)) continue;
                for (uint32_t k = 0; k <= o->num_parts; ++k) {
                    chain_tensor* t = &ch->tensors[k < o->num_parts ? o->part[k] : o->y];
                    if (pass == 0) {
                        ht = max64(ht, t->ht);
                        hl = max64(hl, t->hl);
                        hb = max64(hb, t->hb);
                        hr = max64(hr, t->hr);
                        continue;
                    }
                    t->ht = ht;
                    t->hl = hl;
                    t->hb = hb;
                    t->hr = hr;
                    if (t != rt) {
                        t->alias_of = (int32_t)root->y;
                        t->alias_block = k < o->num_parts ? o->part_block[k] : 0;
                    }
                }
                o->in_place = 1;
            }
        }
    }
}

/* A 1x1 convolution (stride 1, no padding, groups 1, no activation, no addend) of a resized
 * tensor r that nothing else reads: conv(resize(x)) = resize(conv(x)), since each resized value
 * is a weighted sum of input values whose weights sum to 1 (LINEAR) or one input value (NEAREST),
 * so the convolution runs on the smaller input and the resize on its output (a U-Net's bilinear
 * decoder: Resize 2x then a 1x1 convolution halving the channels; the products drop to a quarter
 * and the resize moves half the channels). r's entry becomes the convolution's output at the input's
 * size; the two steps swap places. The sums differ from the unswapped ones by the rounding of
 * the weights' sum (and the bias is multiplied by it). */
void chain_commute_resizes(accel_chain* ch, const uint32_t* export_ids, uint32_t num_export) {
    for (uint32_t i = 0; i + 1 < ch->num_steps; ++i) {
        packed_step* rs = &ch->steps[i];
        packed_step* cv = &ch->steps[i + 1];
        const uint32_t r = rs->y;
        int ok = rs->resize && cv->x == r && !chain_step_single_blocks(cv) && cv->addend < 0 && !cv->post_act &&
                 cv->lo == -INFINITY && cv->hi == INFINITY && cv->g.ib == B && cv->win.full_kh == 1 &&
                 cv->win.full_kw == 1 && cv->g.sh == 1 && cv->g.sw == 1 && cv->pt == 0 && cv->pl == 0 &&
                 ch->tensors[r].alias_of < 0;
        for (uint32_t e = 0; e < num_export && ok; ++e) ok = export_ids[e] != ch->tensors[r].id;
        for (uint32_t k = 0; k < ch->num_steps && ok; ++k) {
            const packed_step* o = &ch->steps[k];
            if (k == i + 1) continue;
            ok = o->x != r && o->addend != (int32_t)r && o->scale != (int32_t)r;
            for (uint32_t q = 0; q < o->num_parts && ok; ++q) ok = o->part[q] != r;
        }
        if (!ok) continue;
        const chain_tensor* xt = &ch->tensors[rs->x];
        chain_tensor* t = &ch->tensors[r]; /* now the convolution's output at x's size */
        t->info.dims[1] = cv->o;
        t->info.dims[2] = xt->info.dims[2];
        t->info.dims[3] = xt->info.dims[3];
        t->ht = t->hl = t->hb = t->hr = 0; /* read by the resize only: inside the image */
        const uint32_t c = cv->y;
        cv->x = rs->x;
        cv->y = r;
        cv->g.oh = cv->g.img_h = xt->info.dims[2];
        cv->g.ow = cv->g.img_w = xt->info.dims[3];
        rs->x = r;
        rs->y = c;
        pointwise_geometry(rs, &ch->tensors[c].info);
        const packed_step swap = *rs;
        *rs = *cv;
        *cv = swap;
    }
}

/* The step that writes tensor t, or -1 (an input of the chain). */
static int64_t producer_of(const accel_chain* ch, uint32_t t) {
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        if (ch->steps[i].y == t) return (int64_t)i;
    }
    return -1;
}

/* A concatenation's consecutive parts that are views of one tensor x, in order, covering every
 * block of x (C2f's Concat(Slice(x, 0:h), Slice(x, h:2h), ...)), become the one part x: x is then
 * written into the concatenation in place (chain_alias_concats) and the views alias it there
 * (chain_alias_views), so nothing is copied. */
void chain_merge_view_parts(accel_chain* ch) {
    for (uint32_t r = 0; r < ch->num_steps; ++r) {
        packed_step* cat = &ch->steps[r];
        if (!cat->concat) continue;
        for (uint32_t k = 0; k < cat->num_parts; ++k) {
            const int64_t v = producer_of(ch, cat->part[k]);
            if (v < 0 || !ch->steps[v].view || ch->steps[v].view_block != 0) continue;
            const uint32_t x = ch->steps[v].x;
            const int64_t xblocks = chain_blocks(ch->tensors[x].info.dims[1]);
            int64_t covered = 0;
            uint32_t m = k;
            while (m < cat->num_parts && covered < xblocks) {
                const int64_t p = producer_of(ch, cat->part[m]);
                if (p < 0 || !ch->steps[p].view || ch->steps[p].x != x || ch->steps[p].view_block != covered) break;
                covered += chain_blocks(ch->tensors[cat->part[m]].info.dims[1]);
                ++m;
            }
            if (covered != xblocks || m - k < 1) continue;
            cat->part[k] = x; /* parts [k, m) -> x at part k's block */
            for (uint32_t q = m; q < cat->num_parts; ++q) {
                cat->part[k + 1 + q - m] = cat->part[q];
                cat->part_block[k + 1 + q - m] = cat->part_block[q];
            }
            cat->num_parts -= m - k - 1;
        }
    }
}

/* Views alias their x: y is x's blocks [view_block, ...) in x's storage (or in the storage of
 * the concatenation x was placed in), with x's halo, which is widened beforehand (chain_views_halo)
 * to cover what y's readers need. Nothing runs for a view. */
void chain_views_halo(accel_chain* ch) {
    for (uint32_t i = ch->num_steps; i-- > 0;) { /* last to first: a view of a view reaches its root */
        const packed_step* st = &ch->steps[i];
        if (!st->view) continue;
        chain_tensor *xt = &ch->tensors[st->x], *yt = &ch->tensors[st->y];
        xt->ht = max64(xt->ht, yt->ht);
        xt->hl = max64(xt->hl, yt->hl);
        xt->hb = max64(xt->hb, yt->hb);
        xt->hr = max64(xt->hr, yt->hr);
    }
}

void chain_alias_views(accel_chain* ch) {
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        packed_step* st = &ch->steps[i];
        if (!st->view) continue;
        const chain_tensor* xt = &ch->tensors[st->x];
        chain_tensor* yt = &ch->tensors[st->y];
        yt->ht = xt->ht;
        yt->hl = xt->hl;
        yt->hb = xt->hb;
        yt->hr = xt->hr;
        yt->alias_of = xt->alias_of >= 0 ? xt->alias_of : (int32_t)st->x;
        yt->alias_block = (xt->alias_of >= 0 ? xt->alias_block : 0) + st->view_block;
        st->in_place = 1;
    }
}
