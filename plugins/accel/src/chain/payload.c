/* CpuAcc blocked chains (chain/chain.h). The payload: accel_chain_new turns the steps into packed steps over chain tensors (their halos, taps, job shapes), with its rewrites (chain/payload_rewrites.c), and releases it. */
#include "chain/packed_chain.h"
#include "plugnn/pn_resize_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the payload ------------------------------------------------------------------------ */

void accel_chain_release(void* payload) {
    accel_chain* ch = (accel_chain*)payload;
    if (ch == NULL) {
        return;
    }
    for (uint32_t i = 0; ch->steps != NULL && i < ch->num_steps; ++i) {
        free(ch->steps[i].bn_coef);
        free(ch->steps[i].rs_idx);
        free(ch->steps[i].rs_w);
    }
    for (uint32_t i = 0; i < ch->num_layer_names; ++i) {
        free(ch->layer_names[i]);
    }
    free(ch->steps);
    free(ch->layer_names);
    free(ch->const_ids);
    free(ch->const_infos);
    free(ch->tensors);
    free(ch->inputs);
    free(ch->outputs);
    free(ch);
}

/* The index of tensor `id`, added with `info` when new; -1 when out of room. */
static int32_t tensor_index(accel_chain* ch, uint32_t id, const pn_tensor_info* info) {
    for (uint32_t i = 0; i < ch->num_tensors; ++i) {
        if (ch->tensors[i].id == id) {
            return (int32_t)i;
        }
    }
    chain_tensor* t = &ch->tensors[ch->num_tensors];
    memset(t, 0, sizeof(*t));
    t->id = id;
    t->ib = B;
    t->alias_of = -1;
    t->info = *info;
    t->info.struct_size = sizeof(t->info);
    t->info.extension = NULL;
    return (int32_t)ch->num_tensors++;
}

/* The taps [t0, t0 + n) of a kernel axis of k taps that read an input element for some output:
 * output i reads input i * stride - pad + t * dilation, inside [0, in) for some i in [0, out).
 * The others read only padding whatever the output (a dilated convolution on a small map:
 * DeepLabV3's ASPP rates 24 and 36 on 14 x 14 leave only the middle tap of 3), so the chain
 * runs without them, with the padding shifted by t0 taps: the same sums, less work, and a
 * narrower halo. */
static void chain_taps(int64_t k, int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t dil, int64_t* t0,
                       int64_t* n) {
    int64_t first = -1, last = -1;
    for (int64_t t = 0; t < k; ++t) {
        int64_t lo = t * dil - pad;                                   /* output 0's input */
        int64_t i0 = lo >= 0 ? 0 : (-lo + stride - 1) / stride;      /* the first output at or past 0 */
        if (i0 < out && lo + i0 * stride < in) {
            first = first < 0 ? t : first;
            last = t;
        }
    }
    *t0 = first < 0 ? 0 : first; /* no tap reads the input (all padding): keep one, it reads zeros */
    *n = first < 0 ? 1 : last - first + 1;
}

/* The index of constant tensor `id` among the chain's constant inputs, added when new. */
static uint32_t const_input(accel_chain* ch, uint32_t id, const pn_tensor_info* info) {
    for (uint32_t i = 0; i < ch->num_consts; ++i) {
        if (ch->const_ids[i] == id) {
            return i;
        }
    }
    ch->const_ids[ch->num_consts] = id;
    ch->const_infos[ch->num_consts] = *info;
    ch->const_infos[ch->num_consts].struct_size = sizeof(pn_tensor_info);
    ch->const_infos[ch->num_consts].extension = NULL;
    return ch->num_consts++;
}

/* Row groups of a step's jobs: as many rows as leave at least CHAIN_MIN_JOBS jobs over the `n`
 * images (a job is a call with its own setup; tens of rows amortize it), in whole multi-row
 * tiles for dense steps (accel_nchwc_rows_per_job). */
#define CHAIN_MIN_JOBS 16
static int64_t step_rows_per_job(const packed_step* st, int64_t n) {
    int64_t base = chain_step_weightless(st) || st->depthwise || st->deconv ? 1
                   : accel_nchwc_rows_per_job(st->g.ow, st->grouped ? 1 : st->g.ocb);
    int64_t units = n * chain_step_units(st);
    int64_t groups = (CHAIN_MIN_JOBS + units - 1) / units;
    int64_t rows = st->g.oh / groups / base * base;
    return rows > base ? rows : base;
}

/* Whether a step's threads split its output by rows (each its own band of every output block)
 * rather than by output blocks (each all rows of its blocks): where the step's weights are
 * fewer floats than its input and output together. A band is what the thread wrote in the
 * step before (the cuts of step_parallel), so its input is in its own caches, but every
 * thread then reads all of the step's weights. It matters most where the two cores do not
 * share a last-level cache (a VM whose vCPUs the host put on different core complexes: a
 * cache line's round trip between them takes 320-580 ns instead of 50-160): two threads, old and
 * new build alternated in one process with onnxruntime, medians of rounds tagged by that
 * latency: MobileNetV2 224 6.91 -> 6.29 ms (onnxruntime 6.62) apart, 3.87 -> 3.86 ms
 * (onnxruntime 4.07) on a shared L3; ResNet-18 224 18.02 -> 17.65 ms apart. Splitting every
 * step by rows, weight-heavy 7 x 7 steps included, was 3 % slower on a shared L3. */
static int step_rows_first(const packed_step* st) {
    if (chain_step_weightless(st)) {
        return 1; /* no weights */
    }
    const nchwc_geom* g = &st->g;
    if (st->deconv) { /* each output pixel reads one input pixel */
        return g->cb * B * g->kh * g->kw * g->ocb * B <
               g->cb * B * (g->oh / g->kh) * (g->ow / g->kw) + g->ocb * B * g->oh * g->ow;
    }
    int64_t weights = (st->depthwise ? 1 : g->cb * g->ib) * g->kh * g->kw * g->ocb * B;
    int64_t in = (st->grouped ? chain_blocks(st->c) * B : g->cb * g->ib) * ((g->oh - 1) * g->sh + 1) *
                 ((g->ow - 1) * g->sw + 1);
    int64_t out = g->ocb * B * g->oh * g->ow;
    return weights < in + out;
}

/* The chain's label: its convolutions, then the count of each other kind of step it has
 * ("blocked NCHW16c chain of 7 convolutions, 1 pooling, 3 concatenations"). */
static void chain_label(accel_chain* ch, uint32_t count) {
    uint32_t n[8] = {0};
    static const char* const names[8] = {"pooling", "scales", "concatenations", "batch normalizations",
                                         "transposed convolutions", "resizes", "views", "sums"};
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        const packed_step* st = &ch->steps[i];
        n[0] += (uint32_t)(st->pooling != 0);
        n[1] += (uint32_t)(st->scale_step != 0);
        n[2] += (uint32_t)(st->concat != 0);
        n[3] += (uint32_t)(st->bn_step != 0);
        n[4] += (uint32_t)(st->deconv != 0);
        n[5] += (uint32_t)(st->resize != 0);
        n[6] += (uint32_t)(st->view != 0);
        n[7] += (uint32_t)(st->sum_step != 0);
    }
    uint32_t convs = count;
    for (int k = 0; k < 8; ++k) convs -= n[k];
    int at = snprintf(ch->label, sizeof(ch->label), "blocked NCHW16c chain of %u convolutions", convs);
    for (int k = 0; k < 8 && at > 0 && (size_t)at < sizeof(ch->label); ++k) {
        if (n[k] > 0) at += snprintf(ch->label + at, sizeof(ch->label) - (size_t)at, ", %u %s", n[k], names[k]);
    }
}

/* The step's original layers as indices into ch->layer_names, each name added once (a SPLIT's
 * views are one layer). 0 when out of memory. */
static int chain_name_step(accel_chain* ch, packed_step* st, const accel_chain_step* cs) {
    st->num_names = 0;
    for (uint32_t k = 0; k < cs->num_names && k < ACCEL_CHAIN_MAX_NAMES; ++k) {
        const char* name = cs->names[k] != NULL ? cs->names[k] : "?";
        uint32_t j = 0;
        while (j < ch->num_layer_names && strcmp(ch->layer_names[j], name) != 0) ++j;
        if (j == ch->num_layer_names) {
            size_t len = strlen(name) + 1;
            ch->layer_names[j] = (char*)malloc(len);
            if (ch->layer_names[j] == NULL) {
                return 0;
            }
            memcpy(ch->layer_names[j], name, len);
            ch->num_layer_names += 1;
        }
        st->name_of[st->num_names++] = j;
    }
    return 1;
}

accel_chain* accel_chain_new(const accel_chain_step* steps, uint32_t count, const uint32_t* export_ids,
                             uint32_t num_export) {
    accel_chain* ch = (accel_chain*)calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return NULL;
    }
    ch->magic = CHAIN_MAGIC;
    size_t slots = 1; /* tensors a step names: x, addend, scale and y, or a concatenation's parts and y */
    for (uint32_t i = 0; i < count; ++i) {
        slots += steps[i].layer->kind == PN_LAYER_CONCAT ? (size_t)steps[i].layer->num_inputs + 1 : 4;
    }
    ch->tensors = (chain_tensor*)calloc(slots, sizeof(chain_tensor));
    ch->steps = (packed_step*)calloc((size_t)count + 1, sizeof(packed_step));
    ch->inputs = (uint32_t*)calloc(slots, sizeof(uint32_t));
    ch->outputs = (uint32_t*)calloc((size_t)count + 1, sizeof(uint32_t));
    ch->const_ids = (uint32_t*)calloc((size_t)count * 2 + 1, sizeof(uint32_t));
    ch->const_infos = (pn_tensor_info*)calloc((size_t)count * 2 + 1, sizeof(pn_tensor_info));
    ch->layer_names = (char**)calloc((size_t)count * ACCEL_CHAIN_MAX_NAMES + 1, sizeof(char*));
    if (ch->tensors == NULL || ch->steps == NULL || ch->inputs == NULL || ch->outputs == NULL ||
        ch->const_ids == NULL || ch->const_infos == NULL || ch->layer_names == NULL) {
        accel_chain_release(ch);
        return NULL;
    }
    for (uint32_t i = 0; i < count; ++i) {
        const accel_chain_step* cs = &steps[i];
        const pn_layer* l = cs->layer;
        const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)l->descriptor;
        packed_step* st = &ch->steps[ch->num_steps++];
        if (!chain_name_step(ch, st, cs)) {
            accel_chain_release(ch);
            return NULL;
        }
        uint32_t xslot = 0;
        while (xslot + 1 < l->num_inputs && l->input_ids[xslot] != cs->x_id) ++xslot;
        int32_t x = tensor_index(ch, cs->x_id, &l->inputs[xslot]);
        if (!ch->tensors[x].produced) {
            int seen = 0;
            for (uint32_t k = 0; k < ch->num_inputs; ++k) seen |= ch->inputs[k] == (uint32_t)x;
            if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)x;
        }
        st->x = (uint32_t)x;
        st->addend = -1;
        if (cs->addend_id != 0) {
            int32_t a = tensor_index(ch, cs->addend_id, cs->y_info);
            if (!ch->tensors[a].produced) {
                int seen = 0;
                for (uint32_t k = 0; k < ch->num_inputs; ++k) seen |= ch->inputs[k] == (uint32_t)a;
                if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)a;
            }
            st->addend = a;
        }
        st->scale = -1;
        if (cs->scale_id != 0) {
            uint32_t sslot = 0;
            while (sslot + 1 < l->num_inputs && l->input_ids[sslot] != cs->scale_id) ++sslot;
            int32_t sc = tensor_index(ch, cs->scale_id, &l->inputs[sslot]);
            if (!ch->tensors[sc].produced) {
                int seen = 0;
                for (uint32_t k = 0; k < ch->num_inputs; ++k) seen |= ch->inputs[k] == (uint32_t)sc;
                if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)sc;
            }
            st->scale = sc;
        }
        int32_t y = tensor_index(ch, cs->y_id, cs->y_info);
        ch->tensors[y].produced = 1;
        st->y = (uint32_t)y;
        int64_t view_start = 0, view_count = 0;
        if (chain_view_range(cs, &view_start, &view_count)) { /* y is blocks of x: chain_alias_views */
            st->view = 1;
            st->view_block = view_start / B;
            pointwise_geometry(st, cs->y_info);
            continue;
        }
        if (l->kind == PN_LAYER_ELEMENTWISE_BINARY && cs->scale_id == 0) { /* a sum: reads only inside the image */
            st->sum_step = 1;
            pointwise_geometry(st, cs->y_info);
            st->g.oc_last = cs->y_info->dims[1] - (st->g.ocb - 1) * B;
            if (!chain_clamp_of(chain_step_act(cs), &st->lo, &st->hi)) {
                st->post_act = accel_copy_activation(chain_step_act(cs), &st->act);
                st->rezero = st->post_act && st->g.oc_last < B && !chain_keeps_zero(ACCEL_ISA_PORTABLE, chain_step_act(cs));
            }
            continue;
        }
        if (l->kind == PN_LAYER_CONCAT) { /* reads only inside the image: no halo, no weights */
            st->concat = 1;
            st->num_parts = l->num_inputs;
            int64_t first = 0;
            for (uint32_t k = 0; k < l->num_inputs; ++k) {
                int32_t part = tensor_index(ch, l->input_ids[k], &l->inputs[k]);
                if (!ch->tensors[part].produced) {
                    int seen = 0;
                    for (uint32_t q = 0; q < ch->num_inputs; ++q) seen |= ch->inputs[q] == (uint32_t)part;
                    if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)part;
                }
                st->part[k] = (uint32_t)part;
                st->part_block[k] = first;
                first += chain_blocks(l->inputs[k].dims[1]);
            }
            pointwise_geometry(st, cs->y_info);
            continue;
        }
        if (cs->scale_id != 0) { /* reads only inside the image: no halo, no weights */
            st->scale_step = 1;
            pointwise_geometry(st, cs->y_info);
            continue;
        }
        if (l->kind == PN_LAYER_PRECOMPILED) { /* batch normalization: reads only inside the image */
            const accel_bn_act* p = chain_bn_act_of(l);
            const int64_t c = p->channels, cb = chain_blocks(c);
            st->bn_step = 1;
            st->g.ib = B;
            st->g.cb = st->g.ocb = cb;
            st->g.oc_last = c - (cb - 1) * B;
            st->g.oh = cs->y_info->dims[2];
            st->g.ow = cs->y_info->dims[3];
            st->g.kh = st->g.kw = 1;
            st->bn_coef = (float*)malloc((size_t)(cb * 3 * B) * sizeof(float));
            if (st->bn_coef == NULL) {
                accel_chain_release(ch);
                return NULL;
            }
            for (int64_t k = 0; k < cb * B; ++k) { /* zeros past the channels: 0 stays 0 before the activation */
                float* v = st->bn_coef + (k / B) * 3 * B + k % B;
                v[0] = k < c ? p->coef[k] : 0.0f;
                v[B] = k < c ? p->coef[c + k] : 0.0f;
                v[2 * B] = k < c ? p->coef[2 * c + k] : 0.0f;
            }
            if (!chain_clamp_of(&p->act, &st->lo, &st->hi)) {
                st->post_act = accel_copy_activation(&p->act, &st->act);
                st->rezero = st->post_act && st->g.oc_last < B && !chain_keeps_zero(ACCEL_ISA_PORTABLE, &p->act);
            }
            continue;
        }
        if (l->kind == PN_LAYER_CONVOLUTION) { /* transposed, kernel = stride: reads only inside the image */
            const pn_convolution_desc* dd = (const pn_convolution_desc*)l->descriptor;
            const int64_t c = l->inputs[0].dims[1], o = cs->y_info->dims[1];
            const pn_activation_desc* act = cs->act != NULL ? cs->act : dd->fused_activation;
            st->deconv = 1;
            st->g.ib = B;
            st->g.cb = chain_blocks(c);
            st->g.ic_last = c - (st->g.cb - 1) * B;
            st->g.ocb = chain_blocks(o);
            st->g.oc_last = o - (st->g.ocb - 1) * B;
            st->g.oh = cs->y_info->dims[2];
            st->g.ow = cs->y_info->dims[3];
            st->g.kh = st->g.sh = l->inputs[1].dims[2];
            st->g.kw = st->g.sw = l->inputs[1].dims[3];
            if (!chain_clamp_of(act, &st->lo, &st->hi)) {
                st->post_act = accel_copy_activation(act, &st->act);
                st->rezero = st->post_act && st->g.oc_last < B && !chain_keeps_zero(ACCEL_ISA_PORTABLE, act);
            }
            st->o = o;
            st->c = c;
            st->w_in = (int32_t)const_input(ch, l->input_ids[1], &l->inputs[1]);
            st->b_in = (dd->flags & PN_LAYER_FLAG_HAS_BIAS) != 0
                           ? (int32_t)const_input(ch, l->input_ids[2], &l->inputs[2])
                           : -1;
            continue;
        }
        if (l->kind == PN_LAYER_RESIZE) { /* reads only inside the image: no halo, no weights */
            const pn_resize_desc* rd = (const pn_resize_desc*)l->descriptor;
            const int64_t oh = cs->y_info->dims[2], ow = cs->y_info->dims[3];
            st->resize = rd->mode == PN_RESIZE_NEAREST ? 2 : 1;
            pointwise_geometry(st, cs->y_info);
            st->rs_idx = (int32_t*)malloc((size_t)(2 * (oh + ow)) * sizeof(int32_t));
            st->rs_w = (float*)malloc((size_t)(2 * (oh + ow)) * sizeof(float));
            if (st->rs_idx == NULL || st->rs_w == NULL) {
                accel_chain_release(ch);
                return NULL;
            }
            for (uint32_t a = 2; a < 4; ++a) { /* the plan CpuRef's is (pn_resize_plan.h), weights in float */
                const int64_t in = l->inputs[0].dims[a], out = cs->y_info->dims[a];
                int32_t* idx = st->rs_idx + (a == 2 ? 0 : 2 * oh);
                float* wt = st->rs_w + (a == 2 ? 0 : 2 * oh);
                for (int64_t q = 0; q < out; ++q) {
                    int64_t first = q;
                    double w[2] = {1.0, 0.0};
                    unsigned char special = PN_RESIZE_NORMAL;
                    if (!pn_resize_axis_skipped(rd, a, in, out)) {
                        pn_resize_plan_index(rd, a, in, out, 2, q, &first, w, &special);
                    }
                    for (int64_t t = 0; t < 2; ++t) {
                        int64_t i = st->resize == 2 ? first + (w[1] != 0.0 ? 1 : 0) : first + t;
                        idx[2 * q + t] = (int32_t)(i < 0 ? 0 : (i >= in ? in - 1 : i));
                        wt[2 * q + t] = (float)w[t];
                    }
                }
            }
            continue;
        }
        if (l->kind == PN_LAYER_POOLING_2D) {
            const pn_pooling_2d_desc* p = (const pn_pooling_2d_desc*)l->descriptor;
            nchwc_pool pp = {p->kind, p->padding_method == PN_PADDING_INCLUDE,
                             l->inputs[0].dims[2], l->inputs[0].dims[3], cs->y_info->dims[2],
                             cs->y_info->dims[3], p->kernel_h, p->kernel_w, p->stride_h, p->stride_w,
                             p->dilation_h, p->dilation_w, p->pad_top, p->pad_left, p->pad_bottom,
                             p->pad_right};
            st->pooling = 1;
            st->pp = pp;
            st->g.ib = B;
            st->g.cb = st->g.ocb = chain_blocks(l->inputs[0].dims[1]);
            st->g.oh = pp.oh;
            st->g.ow = pp.ow;
            continue; /* reads only inside the image: no halo, no weights */
        }
        const pn_tensor_info* xi = &l->inputs[0];
        const pn_tensor_info* wi = &l->inputs[1];
        int64_t c = xi->dims[1], h = xi->dims[2], w = xi->dims[3], o = cs->y_info->dims[1];
        nchwc_geom* g = &st->g;
        st->depthwise = d->groups != 1 && d->groups == c && o == c;
        st->grouped = d->groups != 1 && !st->depthwise;
        st->groups = d->groups;
        /* a narrow input: one block (the first step only, never a tiny map's input: fit) */
        g->ib = d->groups == 1 && !chain_blocks_pay(c) && !chain_tiny_map(l) ? c : B;
        ch->tensors[x].ib = g->ib;
        g->cb = (c + g->ib - 1) / g->ib;
        g->ic_last = c - (g->cb - 1) * g->ib;
        if (st->grouped) { /* the kernel's view: gcb whole blocks from each output block's first */
            g->cb = accel_nchwc_group_blocks(c, o, st->groups);
            g->ic_last = B;
        }
        g->ocb = chain_blocks(o);
        g->oc_last = o - (g->ocb - 1) * B;
        g->oh = cs->y_info->dims[2];
        g->ow = cs->y_info->dims[3];
        g->sh = d->stride_h;
        g->sw = d->stride_w;
        g->dh = d->dilation_h;
        g->dw = d->dilation_w;
        st->win.full_kh = wi->dims[2];
        st->win.full_kw = wi->dims[3];
        chain_taps(wi->dims[2], h, cs->y_info->dims[2], g->sh, d->pad_top, g->dh, &st->win.ky0, &st->win.kh);
        chain_taps(wi->dims[3], w, cs->y_info->dims[3], g->sw, d->pad_left, g->dw, &st->win.kx0, &st->win.kw);
        g->kh = st->win.kh;
        g->kw = st->win.kw;
        st->pt = (int64_t)d->pad_top - st->win.ky0 * g->dh; /* < 0: the window starts inside the image */
        st->pl = (int64_t)d->pad_left - st->win.kx0 * g->dw;
        g->img_top = st->pt; /* the kernel reads x from the view at (ht - pt, hl - pl) */
        g->img_h = h;
        g->img_left = st->pl; /* and the columns: one-row tiles skip the tap columns outside */
        g->img_w = w;
        if (!chain_clamp_of(chain_step_act(cs), &st->lo, &st->hi)) { /* lo, hi: +-inf */
            st->post_act = accel_copy_activation(chain_step_act(cs), &st->act);
            st->rezero = st->post_act && g->oc_last < B && !chain_keeps_zero(ACCEL_ISA_PORTABLE, chain_step_act(cs));
        }
        /* The input's halo covers this convolution's padding and every tap it reads. */
        chain_tensor* xt = &ch->tensors[x];
        int64_t need_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
        int64_t need_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
        xt->ht = max64(xt->ht, st->pt);
        xt->hl = max64(xt->hl, st->pl);
        xt->hb = max64(xt->hb, need_h - st->pt - h);
        xt->hr = max64(xt->hr, need_w - st->pl - w);
        st->o = o;
        st->c = c;
        st->w_in = (int32_t)const_input(ch, l->input_ids[1], &l->inputs[1]);
        st->b_in = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0 ? (int32_t)const_input(ch, l->input_ids[2], &l->inputs[2])
                                                          : -1;
    }
    chain_commute_resizes(ch, export_ids, num_export);
    chain_merge_view_parts(ch);
    chain_views_halo(ch);
    chain_alias_concats(ch);
    chain_alias_views(ch);
    for (uint32_t i = 0; i < ch->num_steps; ++i) { /* constants follow the activations */
        if (!chain_step_weightless(&ch->steps[i])) {
            ch->steps[i].w_in += (int32_t)ch->num_inputs;
            ch->steps[i].b_in += ch->steps[i].b_in >= 0 ? (int32_t)ch->num_inputs : 0;
        }
    }
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        packed_step* st = &ch->steps[i];
        st->rpj = step_rows_per_job(st, ch->tensors[st->y].info.dims[0]);
        st->rows_first = step_rows_first(st);
        if (!chain_step_single_blocks(st)) {
            st->pass_blocks = accel_nchwc_pass_blocks(&st->g);
        }
    }
    for (uint32_t e = 0; e < num_export; ++e) {
        for (uint32_t i = 0; i < ch->num_tensors; ++i) {
            if (ch->tensors[i].id == export_ids[e] && ch->tensors[i].produced) {
                ch->outputs[ch->num_outputs++] = i;
                break;
            }
        }
    }
    chain_label(ch, count);
    return ch;
}

uint32_t accel_chain_num_inputs(const accel_chain* ch) { return ch->num_inputs + ch->num_consts; }
uint32_t accel_chain_num_outputs(const accel_chain* ch) { return ch->num_outputs; }
const char* accel_chain_label(const accel_chain* ch) { return ch->label; }

void accel_chain_input(const accel_chain* ch, uint32_t i, uint32_t* id, pn_tensor_info* info) {
    if (i >= ch->num_inputs) {
        *id = ch->const_ids[i - ch->num_inputs];
        *info = ch->const_infos[i - ch->num_inputs];
        return;
    }
    *id = ch->tensors[ch->inputs[i]].id;
    *info = ch->tensors[ch->inputs[i]].info;
}

void accel_chain_output(const accel_chain* ch, uint32_t i, uint32_t* id, pn_tensor_info* info) {
    *id = ch->tensors[ch->outputs[i]].id;
    *info = ch->tensors[ch->outputs[i]].info;
}
