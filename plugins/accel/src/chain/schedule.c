/* CpuAcc blocked chains (chain/chain.h). The schedule: the jobs of each step, their split over the threads (rows first, owned cuts), the levels of steps run as one parallel loop, and one run of the chain. */
#include "chain/packed_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(ACCEL_HAVE_X86_KERNELS)

/* The view of image n of tensor t shifted by (dr, dc) pixels from its storage origin. */
static nchwc_view view_of(const nchwc_tensor* t, int64_t n, int64_t dr, int64_t dc) {
    nchwc_view v = {t->data + n * t->image_floats + (dr * t->cols + dc) * B, t->rows, t->cols};
    return v;
}

typedef struct step_run {
    const chain_state* s;
    const packed_step* st;
    const float* w;          /* the step's packed weights and bias (convolutions) */
    const float* bias;
} step_run;

static int64_t step_jobs(const packed_step* st, int64_t n) {
    return n * chain_step_units(st) * ((st->g.oh + st->rpj - 1) / st->rpj);
}

/* About the floating-point operations of one of a step's jobs (at least 1): a pooling step's
 * taps are its window's (its geometry g has no kernel), 2 operations each as for a product. */
static int64_t step_job_flops(const packed_step* st) {
    const nchwc_geom* g = &st->g;
    int64_t taps = st->pooling ? st->pp.kh * st->pp.kw : g->kh * g->kw, per_job;
    if (chain_step_weightless(st) || st->depthwise) {
        per_job = 2 * taps * g->ow * B * st->rpj;
    } else if (st->deconv) { /* every output vector: cb * 16 products */
        per_job = 2 * g->cb * B * g->ow * B * st->rpj;
    } else {
        int64_t nb = g->ocb >= 2 && !st->grouped ? 2 : 1;
        per_job = 2 * taps * g->cb * g->ib * nb * B * g->ow * st->rpj;
    }
    return per_job > 0 ? per_job : 1;
}

/* Jobs per thread at least, so that a part is worth waking a thread for (about 4 us):
 * small layers run on the calling thread alone. */
static int64_t step_grain(const packed_step* st) {
    return ACCEL_NCHWC_MIN_PART_FLOPS / step_job_flops(st) + 1;
}

/* Zeros the halo beside output rows [oy, oy + rows) of blocks [b0, b1) of image n of t, and
 * the halo rows above and below the image when those are its first or last rows. */
static void zero_halo(const nchwc_tensor* t, int64_t n, int64_t b0, int64_t b1, int64_t oy, int64_t rows) {
    const int64_t hb = t->rows - t->ht - t->h, hr = t->cols - t->hl - t->w;
    const size_t row = (size_t)(t->cols * t->ib);
    for (int64_t b = b0; b < b1; ++b) {
        float* plane = t->data + n * t->image_floats + b * t->rows * row;
        if (oy == 0 && t->ht > 0) memset(plane, 0, (size_t)t->ht * row * sizeof(float));
        if (oy + rows == t->h && hb > 0) memset(plane + (t->ht + t->h) * row, 0, (size_t)hb * row * sizeof(float));
        for (int64_t r = t->ht + oy; r < t->ht + oy + rows; ++r) {
            if (t->hl > 0) memset(plane + r * row, 0, (size_t)(t->hl * t->ib) * sizeof(float));
            if (hr > 0) memset(plane + r * row + (t->hl + t->w) * t->ib, 0, (size_t)(hr * t->ib) * sizeof(float));
        }
    }
}

/* Output rows [oy, oy + rows) of unit u (a pair of output blocks of a dense step, one block of
 * a depthwise or pooling step) of image n. */
static void step_block(const step_run* r, int64_t n, int64_t u, int64_t oy, int64_t rows) {
    const packed_step* st = r->st;
    const nchwc_geom* g = &st->g;
    const nchwc_tensor* xt = &r->s->storage[st->x];
    const nchwc_tensor* yt = &r->s->storage[st->y];
    const int single = chain_step_single_blocks(st);
    const int64_t b0 = single ? u : 2 * u, b1 = single ? u + 1 : (2 * u + 2 < g->ocb ? 2 * u + 2 : g->ocb);
    if (r->s->dirty[st->y]) {
        zero_halo(yt, n, b0, b1, oy, rows);
    }
    nchwc_view xv = view_of(xt, n, xt->ht - st->pt, xt->hl - st->pl);
    nchwc_view yv = view_of(yt, n, yt->ht, yt->hl);
    nchwc_epilogue epi = {{NULL, 0, 0}, st->lo, st->hi};
    if (st->addend >= 0) {
        const nchwc_tensor* at = &r->s->storage[st->addend];
        epi.addend = view_of(at, n, at->ht, at->hl);
    }
    if (st->concat) { /* block u of y is block u - part_block[k] of part k */
        uint32_t k = 0;
        while (k + 1 < st->num_parts && st->part_block[k + 1] <= u) ++k;
        const nchwc_tensor* pt = &r->s->storage[st->part[k]];
        const nchwc_view pv = view_of(pt, n, pt->ht, pt->hl);
        const float* src = pv.data + (u - st->part_block[k]) * pv.rows * pv.cols * B;
        float* dst = yv.data + u * yv.rows * yv.cols * B;
        for (int64_t y = oy; y < oy + rows; ++y) {
            memcpy(dst + y * yv.cols * B, src + y * pv.cols * B, (size_t)(g->ow * B) * sizeof(float));
        }
        return;
    }
    if (st->scale_step) {
        const nchwc_tensor* sct = &r->s->storage[st->scale];
        const float* sv = view_of(sct, n, sct->ht, sct->hl).data + u * sct->rows * sct->cols * B;
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) accel_nchwc_scale_row_avx512(&image, sv, &yv, u, y, g->ow);
        return;
    }
    if (st->pooling) {
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) accel_nchwc_pool_row_avx512(&st->pp, &image, &yv, u, y);
    } else if (st->deconv) {
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_deconv_row_avx512(&image, r->w, r->bias, &yv, g->cb, g->ic_last, g->kh, g->kw, g->ow / g->kw, u,
                                          y, st->lo, st->hi);
        }
    } else if (st->resize) {
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_resize_row_avx512(&image, &yv, u, y, g->ow, st->rs_idx + 2 * y, st->rs_w + 2 * y,
                                          st->rs_idx + 2 * g->oh, st->rs_w + 2 * g->oh, st->resize == 2);
        }
    } else if (st->grouped) {
        nchwc_view xg = xv;
        xg.data += accel_nchwc_group_first(st->c, st->o, st->groups, g->cb, u) * xt->rows * xt->cols * B;
        accel_nchwc_conv_rows_avx512(g, &xg, r->w, r->bias, &yv, &epi, u, 1, oy, rows);
    } else if (st->depthwise) {
        for (int64_t y = oy; y < oy + rows; ++y) accel_nchwc_dwconv_row_avx512(g, &xv, r->w, r->bias, &yv, &epi, u, y);
    } else if (st->sum_step) {
        const nchwc_tensor* at = &r->s->storage[st->addend];
        const nchwc_view av = view_of(at, n, at->ht, at->hl);
        const float* xr = xv.data + u * xv.rows * xv.cols * B;
        const float* ar = av.data + u * av.rows * av.cols * B;
        float* yr = yv.data + u * yv.rows * yv.cols * B;
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_add_row_avx512(xr + y * xv.cols * B, ar + y * av.cols * B, yr + y * yv.cols * B, g->ow, st->lo,
                                       st->hi);
        }
    } else if (st->bn_step) {
        const float* xr = xv.data + u * xv.rows * xv.cols * B;
        float* yr = yv.data + u * yv.rows * yv.cols * B;
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_affine_row_avx512(xr + y * xv.cols * B, st->bn_coef + u * 3 * B, yr + y * yv.cols * B, g->ow,
                                          st->lo, st->hi);
        }
    } else {
        int64_t ob = u * 2;
        accel_nchwc_conv_rows_passes_avx512(g, &xv, r->w, r->bias, &yv, &epi, ob, g->ocb - ob >= 2 ? 2 : 1, oy, rows,
                                            st->pass_blocks);
    }
    if (st->post_act) { /* the rows just written, still in the caches */
        for (int64_t b = b0; b < b1; ++b) {
            for (int64_t y = oy; y < oy + rows; ++y) {
                float* row = yv.data + (b * yv.rows + y) * yv.cols * B;
                if (st->act.kind == PN_ACTIVATION_SWISH && st->act.alpha == 1.0f) {
                    accel_nchwc_silu_avx512(row, g->ow * B); /* SiLU: EfficientNet's every layer */
                } else {
                    accel_apply_activation(r->s->env.isa, &st->act, row, g->ow * B);
                }
                if (st->rezero && b == g->ocb - 1) { /* act(0) != 0: the lanes past the last channel */
                    accel_nchwc_zero_tail_avx512(row, g->ow, g->oc_last);
                }
            }
        }
    }
}

/* Jobs [begin, end) of a step. By output blocks: job = (image, unit, row group). Rows first:
 * job = (image, row group, unit), so a range is a band of rows across the units, run unit by
 * unit over the range's row groups (one call each: the unit's weights stay in the caches
 * across the band). */
static void step_range(void* vctx, int64_t begin, int64_t end) {
    const step_run* r = (const step_run*)vctx;
    const packed_step* st = r->st;
    const int64_t units = chain_step_units(st), rpj = st->rpj, oh = st->g.oh;
    const int64_t groups = (oh + rpj - 1) / rpj, per_image = groups * units;
    if (!st->rows_first) {
        for (int64_t job = begin; job < end; ++job) {
            int64_t oy = (job % groups) * rpj, u = (job / groups) % units, n = job / per_image;
            step_block(r, n, u, oy, oh - oy < rpj ? oh - oy : rpj);
        }
        return;
    }
    for (int64_t n = begin / per_image; n * per_image < end; ++n) {
        int64_t lo = begin - n * per_image > 0 ? begin - n * per_image : 0;
        int64_t hi = end - n * per_image < per_image ? end - n * per_image : per_image;
        for (int64_t u = 0; u < units; ++u) {
            int64_t g0 = lo <= u ? 0 : (lo - u + units - 1) / units; /* first g: g * units + u >= lo */
            int64_t g1 = hi - 1 < u ? -1 : (hi - 1 - u) / units;       /* last g: g * units + u < hi */
            if (g0 <= g1) {
                int64_t oy = g0 * rpj, last = (g1 + 1) * rpj < oh ? (g1 + 1) * rpj : oh;
                step_block(r, n, u, oy, last - oy);
            }
        }
    }
}

/* How a step's jobs are run on the pool. A rows-first step gives each thread its own band:
 * the row groups up to the boundary nearest to t * oh / T (whole images when the batch has one
 * per thread), so the band lines up with the one the thread wrote in the step before, whatever
 * the two steps' row groups: cuts[0..T] and 1. A step by output blocks, or with fewer row
 * groups (and images) than threads, is split first come: 0. */
static int step_cuts(const chain_state* s, const packed_step* st, int threads, int64_t* cuts) {
    const int64_t n = s->storage[st->y].n, jobs = step_jobs(st, n), per_image = jobs / n;
    const int64_t rpj = st->rpj, groups = (st->g.oh + rpj - 1) / rpj;
    if (!st->rows_first || threads < 2 || threads > ACCEL_MAX_THREADS ||
        (n < threads && (n > 1 || groups < threads))) {
        return 0;
    }
    cuts[0] = 0;
    for (int t = 1; t < threads; ++t) {
        if (n >= threads) {
            cuts[t] = (t * n + threads / 2) / threads * per_image;
        } else { /* the group boundary nearest to row t * oh / threads */
            int64_t g = (2 * t * st->g.oh + threads * rpj) / (2 * threads * rpj);
            cuts[t] = g * chain_step_units(st);
        }
    }
    cuts[threads] = jobs;
    return 1;
}

/* Runs a step's jobs on the pool (step_cuts). */
static void step_parallel(const chain_state* s, const packed_step* st, step_run* r) {
    const int threads = accel_threads_count(s->env.threads);
    int64_t cuts[ACCEL_MAX_THREADS + 1];
    if (!step_cuts(s, st, threads, cuts)) {
        accel_parallel_for_grain(s->env.threads, step_jobs(st, s->storage[st->y].n), step_grain(st), step_range, r);
        return;
    }
    accel_parallel_for_owned(s->env.threads, cuts[threads], step_grain(st), cuts, step_range, r);
}

/* The steps of one group run as one parallel loop (chain_schedule): thread t's share is its
 * part of every step of the group, one after the other (a segment each). */
#define GROUP_MAX 32
#define GROUP_SEGMENTS 256
typedef struct group_run {
    uint32_t count, num_segments;
    step_run runs[GROUP_MAX];
    struct {
        uint32_t step;
        int64_t first, local, len; /* jobs [first, first + len) of the loop: the step's [local, ...) */
    } seg[GROUP_SEGMENTS];
} group_run;

static void group_range(void* vctx, int64_t begin, int64_t end) {
    const group_run* gr = (const group_run*)vctx;
    uint32_t k = 0;
    while (k + 1 < gr->num_segments && gr->seg[k + 1].first <= begin) ++k;
    for (; k < gr->num_segments && gr->seg[k].first < end; ++k) {
        const int64_t f = gr->seg[k].first;
        const int64_t b = begin > f ? begin : f, e = end < f + gr->seg[k].len ? end : f + gr->seg[k].len;
        if (b < e) step_range((void*)&gr->runs[gr->seg[k].step], gr->seg[k].local + b - f, gr->seg[k].local + e - f);
    }
}

/* Runs independent steps as one loop: one barrier for the group instead of one per step, and
 * the small steps (GoogLeNet's 16-channel reductions and pooling branches on 14 x 14), which
 * alone would run on one thread while the other waits, share the threads with the large ones.
 * Each step is cut as step_parallel cuts it (a rows-first step in the bands its input was
 * written in, any other evenly by jobs), and thread t owns its part of every step; what a
 * thread has left the others take from the back. */
static void group_parallel(const chain_state* s, group_run* gr) {
    const int threads = accel_threads_count(s->env.threads);
    int64_t total = 0, jobs = 0;
    for (uint32_t k = 0; k < gr->count; ++k) {
        const packed_step* st = gr->runs[k].st;
        total += step_job_flops(st) * step_jobs(st, s->storage[st->y].n);
    }
    if (threads < 2 || (uint32_t)threads * gr->count > GROUP_SEGMENTS || total < 2 * ACCEL_NCHWC_MIN_PART_FLOPS) {
        for (uint32_t k = 0; k < gr->count; ++k) step_parallel(s, gr->runs[k].st, &gr->runs[k]);
        return;
    }
    int64_t cuts[ACCEL_MAX_THREADS + 1], owned[ACCEL_MAX_THREADS + 1];
    gr->num_segments = 0;
    for (int t = 0; t < threads; ++t) {
        owned[t] = jobs;
        for (uint32_t k = 0; k < gr->count; ++k) {
            const packed_step* st = gr->runs[k].st;
            const int64_t sj = step_jobs(st, s->storage[st->y].n);
            if (!step_cuts(s, st, threads, cuts)) {
                cuts[t] = sj * t / threads;
                cuts[t + 1] = sj * (t + 1) / threads;
            }
            if (cuts[t + 1] > cuts[t]) {
                gr->seg[gr->num_segments].step = k;
                gr->seg[gr->num_segments].first = jobs;
                gr->seg[gr->num_segments].local = cuts[t];
                gr->seg[gr->num_segments].len = cuts[t + 1] - cuts[t];
                jobs += cuts[t + 1] - cuts[t];
                gr->num_segments += 1;
            }
        }
    }
    owned[threads] = jobs;
    accel_parallel_for_owned(s->env.threads, jobs, 1, owned, group_range, gr);
}

/* The order the steps run in and their groups. On one thread, and in a chain where no level
 * (below) has three or more steps that run, the chain's order, each step a group. Else each
 * step's level (0 for a step reading only the chain's inputs, else one
 * more than the latest level whose step writes what it reads; a step that runs nothing, a view
 * or a concatenation written in place, passes its level on as it is), the steps sorted by
 * level (stable), each level a group: its steps read nothing another of them writes
 * (GoogLeNet's four branches: the three 1x1 convolutions and the pooling, then the 3x3 and
 * 5x5 and the pooling's 1x1). The storage plan (chain_plan_storage) keeps every tensor a group
 * reads or writes apart from the others it writes. Returns the number of groups, 0 when out
 * of memory. */
uint32_t chain_schedule(const accel_chain* ch, int threads, uint32_t* exec, uint32_t* time_of,
                               uint32_t* group_first) {
    const uint32_t ns = ch->num_steps;
    if (threads < 2) {
        for (uint32_t k = 0; k <= ns; ++k) {
            if (k < ns) exec[k] = time_of[k] = k;
            group_first[k] = k;
        }
        return ns;
    }
    uint32_t* avail = (uint32_t*)calloc(ch->num_tensors + 1, sizeof(uint32_t));
    if (avail == NULL) {
        return 0;
    }
    uint32_t levels = 0;
    for (uint32_t k = 0; k < ns; ++k) {
        const packed_step* st = &ch->steps[k];
        uint32_t lvl = avail[st->x];
        if (st->addend >= 0 && avail[st->addend] > lvl) lvl = avail[st->addend];
        if (st->scale >= 0 && avail[st->scale] > lvl) lvl = avail[st->scale];
        for (uint32_t q = 0; q < st->num_parts; ++q) lvl = avail[st->part[q]] > lvl ? avail[st->part[q]] : lvl;
        time_of[k] = lvl;
        avail[st->y] = st->in_place ? lvl : lvl + 1;
        levels = lvl + 1 > levels ? lvl + 1 : levels;
    }
    free(avail);
    uint32_t widest = 0; /* the most steps that run at one level */
    for (uint32_t g = 0; g < levels; ++g) {
        uint32_t count = 0;
        for (uint32_t k = 0; k < ns; ++k) count += time_of[k] == g && !ch->steps[k].in_place;
        widest = count > widest ? count : widest;
    }
    if (widest < 3) { /* two branches at most (a residual's projection, a fire module's two
                         expansions): the chain's order, each step its own loop (grouped, they
                         ran 1-2 % slower: SqueezeNet 1.1, YOLO) */
        return chain_schedule(ch, 1, exec, time_of, group_first);
    }
    uint32_t at = 0;
    for (uint32_t g = 0; g < levels; ++g) { /* counting sort, stable */
        group_first[g] = at;
        for (uint32_t k = 0; k < ns; ++k) {
            if (time_of[k] == g) exec[at++] = k;
        }
    }
    group_first[levels] = at;
    return levels;
}


static uint64_t now_ns(void) { return (uint64_t)accel_now_ns(); }

/* A profiled run's time of one loop (a step, or a group of steps run as one loop) to the
 * steps' first layers: a group's time split by the steps' shares of its operations (they ran
 * interleaved on the threads, so no step has a wall time of its own); the parts add up to at
 * most `ns`. */
static void charge(chain_state* s, const group_run* gr, uint64_t ns) {
    if (gr->count == 1) {
        if (gr->runs[0].st->num_names > 0) s->layer_ns[gr->runs[0].st->name_of[0]] += ns;
        return;
    }
    double total = 0.0;
    for (uint32_t k = 0; k < gr->count; ++k) {
        const packed_step* st = gr->runs[k].st;
        total += (double)step_job_flops(st) * (double)step_jobs(st, s->storage[st->y].n);
    }
    for (uint32_t k = 0; k < gr->count; ++k) {
        const packed_step* st = gr->runs[k].st;
        const double share = (double)step_job_flops(st) * (double)step_jobs(st, s->storage[st->y].n);
        if (st->num_names > 0 && total > 0.0) s->layer_ns[st->name_of[0]] += (uint64_t)((double)ns * share / total);
    }
}

pn_status chain_read_profile(void* vs, pn_profile_entry* entries, uint32_t capacity, uint32_t* count_out,
                             pn_string_out* msg) {
    const chain_state* s = (const chain_state*)vs;
    if (!s->profiled) {
        return pn_fail(msg, PN_ERR_INVALID_STATE, "CpuAcc read_profile: the blocked chain's last execute was not "
                       "profiled (pn_execute_args.profile) or failed");
    }
    return pn_profile_copy((const char* const*)s->ch->layer_names, s->layer_ns, s->ch->num_layer_names, entries,
                           capacity, count_out, msg);
}

pn_status chain_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    chain_state* s = (chain_state*)vs;
    const accel_chain* ch = s->ch;
    const int profiling = pn_execute_profiling(args);
    s->profiled = 0;
    if (profiling) {
        memset(s->layer_ns, 0, (size_t)ch->num_layer_names * sizeof(uint64_t));
    }
    if (args == NULL || args->num_inputs != ch->num_inputs + ch->num_consts || args->num_outputs != ch->num_outputs) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: the blocked chain expects %u inputs and %u outputs",
                       ch->num_inputs + ch->num_consts, ch->num_outputs);
    }
    for (uint32_t i = 0; i < ch->num_inputs; ++i) {
        if (args->inputs[i].data == NULL) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: blocked chain input %u has no data", i);
        }
    }
    for (uint32_t i = 0; i < ch->num_outputs; ++i) {
        if (args->outputs[i].data == NULL) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: blocked chain output %u has no data", i);
        }
    }
    for (uint32_t i = 0; i < ch->num_inputs; ++i) {
        accel_nchwc_pack(s->env.threads, (const float*)args->inputs[i].data, &s->storage[ch->inputs[i]]);
    }
    for (uint32_t g = 0; g < s->num_groups; ++g) {
        group_run gr; /* about 9 KiB */
        gr.count = 0;
        for (uint32_t q = s->group_first[g]; q < s->group_first[g + 1]; ++q) {
            const uint32_t i = s->exec[q];
            const packed_step* st = &ch->steps[i];
            if (!st->in_place) { /* a view, or a concatenation its parts were written into: nothing to do */
                step_run r = {s, st, s->w[i], s->bias[i]};
                gr.runs[gr.count++] = r;
            }
            if (gr.count == GROUP_MAX || (q + 1 == s->group_first[g + 1] && gr.count > 0)) {
                const uint64_t start = profiling ? now_ns() : 0;
                if (gr.count == 1) {
                    step_parallel(s, gr.runs[0].st, &gr.runs[0]);
                } else {
                    group_parallel(s, &gr);
                }
                if (profiling) {
                    charge(s, &gr, now_ns() - start);
                }
                gr.count = 0;
            }
        }
    }
    for (uint32_t i = 0; i < ch->num_outputs; ++i) {
        accel_nchwc_unpack(s->env.threads, s->env.isa, &s->storage[ch->outputs[i]], (float*)args->outputs[i].data,
                           NULL, NULL);
    }
    s->profiled = profiling;
    return PN_OK;
}

#endif
