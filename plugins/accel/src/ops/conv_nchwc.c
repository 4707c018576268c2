/* CpuAcc blocked-layout (NCHW16c) helpers and the single-layer direct convolution workload
 * (the kernels are in kernels/nchwc_conv_avx512.c; see ops/conv_nchwc.h). */
#include "kernels/vector_kernels.h"
#include "ops/conv_nchwc.h"
#include "gemm/gemm.h"
#include "ops/shared_weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B NCHWC_BLOCK

static int64_t blocks(int64_t v) { return (v + B - 1) / B; }

int accel_nchwc_blocks_pay(int64_t channels) {
    return channels >= B && blocks(channels) * B * 4 <= channels * 5;
}

int64_t accel_nchwc_input_block(int64_t c) {
    return accel_nchwc_blocks_pay(c) ? B : c >= 1 && c <= 64 ? c : 0;
}

void accel_nchwc_pack_weights(const float* w, int64_t o, int64_t c, int64_t kh, int64_t kw,
                              int64_t ib, float* dst) {
    for (int64_t ob = 0; ob < blocks(o); ++ob)
        for (int64_t cb = 0; cb < (c + ib - 1) / ib; ++cb)
            for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx)
                    for (int64_t ci = 0; ci < ib; ++ci)
                        for (int64_t co = 0; co < B; ++co) {
                            int64_t oc = ob * B + co, ic = cb * ib + ci;
                            *dst++ = oc < o && ic < c ? w[((oc * c + ic) * kh + ky) * kw + kx] : 0.0f;
                        }
}

void accel_nchwc_pack_dw_weights(const float* w, int64_t c, int64_t kh, int64_t kw, float* dst) {
    for (int64_t cb = 0; cb < blocks(c); ++cb)
        for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx)
                for (int64_t ci = 0; ci < B; ++ci) {
                    int64_t ch = cb * B + ci;
                    *dst++ = ch < c ? w[(ch * kh + ky) * kw + kx] : 0.0f;
                }
}

/* What tile_pack packs. */
typedef struct pack_tiles {
    const float* w;
    float* dst;
    int64_t o, c;
    const nchwc_window* win;
    int64_t ib, cb;
    int depthwise;
} pack_tiles;

/* Output blocks [begin, end): each a tile of 16 output channels read row by row from the source
 * (contiguous taps) and written into its [cb][kh][kw][ib][16] part (a few KiB: in L1), instead of
 * gathering every destination float from 16 rows far apart. */
static void tile_pack(void* vctx, int64_t begin, int64_t end) {
    const pack_tiles* t = (const pack_tiles*)vctx;
    const nchwc_window* win = t->win;
    const int64_t kh = win->kh, kw = win->kw, fkh = win->full_kh, fkw = win->full_kw, ib = t->ib;
    for (int64_t b = begin; b < end; ++b) {
        if (t->depthwise) { /* [cb][kh][kw][16] */
            float* dst = t->dst + b * kh * kw * B;
            for (int64_t ci = 0; ci < B; ++ci) {
                int64_t ch = b * B + ci;
                for (int64_t ky = 0; ky < kh; ++ky)
                    for (int64_t kx = 0; kx < kw; ++kx)
                        dst[(ky * kw + kx) * B + ci] = ch < t->c ? t->w[(ch * fkh + win->ky0 + ky) * fkw + win->kx0 + kx] : 0.0f;
            }
            continue;
        }
        float* dst = t->dst + b * t->cb * kh * kw * ib * B;
        for (int64_t co = 0; co < B; ++co) {
            int64_t oc = b * B + co;
            for (int64_t ic = 0; ic < t->cb * ib; ++ic) {
                int64_t cbi = ic / ib, ci = ic % ib;
                float* d = dst + (cbi * kh * kw * ib + ci) * B + co; /* + (ky * kw + kx) * ib * B */
                const float* src = oc < t->o && ic < t->c ? t->w + ((oc * t->c + ic) * fkh + win->ky0) * fkw + win->kx0
                                                          : NULL;
                for (int64_t ky = 0; ky < kh; ++ky)
                    for (int64_t kx = 0; kx < kw; ++kx)
                        d[(ky * kw + kx) * ib * B] = src != NULL ? src[ky * fkw + kx] : 0.0f;
            }
        }
    }
}

const float* accel_nchwc_packed(accel_packs* packs, accel_threads* threads, const float* w, const float* bias,
                                int64_t o, int64_t c, const nchwc_window* win, int64_t ib, int depthwise) {
    accel_pack_key key;
    accel_pack_key_init(&key, depthwise ? ACCEL_PACK_NCHWC_DW : ACCEL_PACK_NCHWC, ACCEL_ISA_AVX512, w, bias);
    key.params[0] = o;
    key.params[1] = c;
    key.params[2] = win->kh;
    key.params[3] = win->kw;
    key.params[4] = ib;
    key.params[5] = win->ky0 * win->full_kw + win->kx0; /* the window inside the full kernel */
    key.params[6] = win->full_kh;
    key.params[7] = win->full_kw;
    const int64_t kh = win->kh, kw = win->kw;
    const int64_t cb = (c + ib - 1) / ib;
    size_t wfloats = depthwise ? (size_t)(blocks(c) * kh * kw * B) : (size_t)(blocks(o) * cb * kh * kw * ib * B);
    int64_t ob = depthwise ? blocks(c) : blocks(o);
    int fresh = 0;
    float* wb = accel_packs_get(packs, &key, wfloats + (size_t)(ob * B), &fresh);
    if (wb != NULL && fresh) {
        /* the layouts of accel_nchwc_pack_weights / accel_nchwc_pack_dw_weights, taps of the window,
         * one 16-channel output block at a time over the threads (tile_pack) */
        pack_tiles t = {w, wb, o, c, win, ib, cb, depthwise};
        accel_parallel_for(threads, depthwise ? blocks(c) : blocks(o), tile_pack, &t);
        float* bdst = wb + wfloats; /* wfloats is a multiple of 16: 64-byte aligned */
        for (int64_t oc = 0; oc < ob * B; ++oc) {
            bdst[oc] = bias != NULL && oc < (depthwise ? c : o) ? bias[oc] : 0.0f;
        }
    }
    return wb;
}

void accel_nchwc_full_window(nchwc_window* win, int64_t kh, int64_t kw) {
    win->ky0 = win->kx0 = 0;
    win->kh = win->full_kh = kh;
    win->kw = win->full_kw = kw;
}

#if defined(ACCEL_HAVE_X86_KERNELS) /* blocked tensors exist only with the AVX-512 kernels */

/* ---- layout conversions --------------------------------------------------------------- */

typedef struct pack_ctx {
    const nchwc_tensor* t;
    const float* x;
    float* y;
    const float* addend;
    const pn_activation_desc* act;
    accel_isa isa;
    const accel_kernels* k;  /* accel_kernel_set_for(isa)->vector */
} pack_ctx;

/* Storage rows [begin, end), row = (image, block, storage row). */
static void pack_range(void* vctx, int64_t begin, int64_t end) {
    const pack_ctx* p = (const pack_ctx*)vctx;
    const nchwc_tensor* t = p->t;
    const int64_t ib = t->ib;
    for (int64_t row = begin; row < end; ++row) {
        int64_t r = row % t->rows, cb = (row / t->rows) % t->cb, n = row / (t->rows * t->cb);
        float* dst = t->data + n * t->image_floats + (cb * t->rows + r) * t->cols * ib;
        int64_t y = r - t->ht;
        if (y < 0 || y >= t->h) {
            memset(dst, 0, (size_t)(t->cols * ib) * sizeof(float));
            continue;
        }
        if (t->hl > 0) { /* (a memset of nothing still costs tens of cycles, twice per row) */
            memset(dst, 0, (size_t)(t->hl * ib) * sizeof(float));
        }
        if (t->cols > t->hl + t->w) {
            memset(dst + (t->hl + t->w) * ib, 0, (size_t)((t->cols - t->hl - t->w) * ib) * sizeof(float));
        }
        float* d = dst + t->hl * ib;
        int64_t channels = t->c - cb * ib < ib ? t->c - cb * ib : ib;
        const float* src = p->x + ((n * t->c + cb * ib) * t->h + y) * t->w;
        if (channels < ib) { /* the lanes past the last channel stay zero */
            memset(d, 0, (size_t)(t->w * ib) * sizeof(float));
        }
        if (ib == 3 && channels == 3) { /* an RGB image: permutes instead of 16x16 transposes */
            accel_nchwc_pack_row3_avx512(src, t->h * t->w, d, t->w);
            continue;
        }
        /* d[x * ib + ci] = src[ci * h * w + x]: a transposed store */
        gemm_store_t_avx512(src, t->h * t->w, d, ib, channels, t->w);
    }
}

/* Whether the conversions of t run a whole block of an image per call (pack_blocks,
 * unpack_blocks) instead of a row: when its rows have no halo beside them, so an image's rows
 * are one run in both layouts, and there are blocks enough to share among the threads. One
 * transpose of h * w pixels instead of h of w pixels: DenseNet-121 packs the input of each of
 * its 58 dense layers, 7 x 7 and 14 x 14 maps of up to 62 blocks among them, where the calls
 * per row of 7 pixels cost more than the transposes. The same copies either way. */
static int whole_blocks(const nchwc_tensor* t) {
    return t->cols == t->w && t->n * t->cb >= 8;
}

/* Blocks [begin, end), block = (image, block): the halo rows above and below zeroed, the image's
 * h * w pixels in one transposed store (whole_blocks). */
static void pack_blocks(void* vctx, int64_t begin, int64_t end) {
    const pack_ctx* p = (const pack_ctx*)vctx;
    const nchwc_tensor* t = p->t;
    const int64_t ib = t->ib, hw = t->h * t->w, row = t->cols * ib;
    for (int64_t job = begin; job < end; ++job) {
        int64_t cb = job % t->cb, n = job / t->cb;
        float* plane = t->data + n * t->image_floats + cb * t->rows * row;
        if (t->ht > 0) memset(plane, 0, (size_t)(t->ht * row) * sizeof(float));
        if (t->rows > t->ht + t->h) {
            memset(plane + (t->ht + t->h) * row, 0, (size_t)((t->rows - t->ht - t->h) * row) * sizeof(float));
        }
        float* d = plane + t->ht * row;
        int64_t channels = t->c - cb * ib < ib ? t->c - cb * ib : ib;
        const float* src = p->x + (n * t->c + cb * ib) * hw;
        if (channels < ib) { /* the lanes past the last channel stay zero */
            memset(d, 0, (size_t)(hw * ib) * sizeof(float));
        }
        if (ib == 3 && channels == 3) {
            accel_nchwc_pack_row3_avx512(src, hw, d, hw);
        } else {
            gemm_store_t_avx512(src, hw, d, ib, channels, hw);
        }
    }
}

void accel_nchwc_pack(accel_threads* threads, const float* x, const nchwc_tensor* t) {
    pack_ctx p = {t, x, NULL, NULL, NULL, ACCEL_ISA_AVX512, NULL};
    if (whole_blocks(t)) {
        accel_parallel_for_grain(threads, t->n * t->cb, ACCEL_NCHWC_MIN_PART_FLOATS / (t->rows * t->cols * t->ib) + 1,
                                 pack_blocks, &p);
        return;
    }
    accel_parallel_for_grain(threads, t->n * t->cb * t->rows, ACCEL_NCHWC_MIN_PART_FLOATS / (t->cols * t->ib) + 1,
                             pack_range, &p);
}

/* Image rows [begin, end), row = (image, block, image row). */
static void unpack_range(void* vctx, int64_t begin, int64_t end) {
    const pack_ctx* p = (const pack_ctx*)vctx;
    const nchwc_tensor* t = p->t;
    for (int64_t row = begin; row < end; ++row) {
        int64_t y = row % t->h, cb = (row / t->h) % t->cb, n = row / (t->h * t->cb);
        const float* src = t->data + n * t->image_floats + ((cb * t->rows + t->ht + y) * t->cols + t->hl) * B;
        int64_t channels = t->c - cb * B < B ? t->c - cb * B : B;
        int64_t first = ((n * t->c + cb * B) * t->h + y) * t->w, plane = t->h * t->w;
        /* y[co * plane + x] = src[x * 16 + co]: a transposed store */
        gemm_store_t_avx512(src, B, p->y + first, plane, t->w, channels);
        for (int64_t co = 0; co < channels; ++co) {
            float* d = p->y + first + co * plane;
            if (p->addend != NULL) {
                p->k->binary_row(PN_BINARY_ADD, d, 1, p->addend + first + co * plane, 1, d, t->w);
            }
            if (p->act != NULL) {
                accel_apply_activation(p->isa, p->act, d, t->w);
            }
        }
    }
}

/* Blocks [begin, end), block = (image, block): the image's h * w pixels in one transposed store,
 * then the addend and activation over each channel's plane (whole_blocks). */
static void unpack_blocks(void* vctx, int64_t begin, int64_t end) {
    const pack_ctx* p = (const pack_ctx*)vctx;
    const nchwc_tensor* t = p->t;
    const int64_t plane = t->h * t->w;
    for (int64_t job = begin; job < end; ++job) {
        int64_t cb = job % t->cb, n = job / t->cb;
        const float* src = t->data + n * t->image_floats + (cb * t->rows + t->ht) * t->cols * B;
        int64_t channels = t->c - cb * B < B ? t->c - cb * B : B;
        int64_t first = (n * t->c + cb * B) * plane;
        gemm_store_t_avx512(src, B, p->y + first, plane, plane, channels);
        for (int64_t co = 0; co < channels; ++co) {
            float* d = p->y + first + co * plane;
            if (p->addend != NULL) {
                p->k->binary_row(PN_BINARY_ADD, d, 1, p->addend + first + co * plane, 1, d, plane);
            }
            if (p->act != NULL) {
                accel_apply_activation(p->isa, p->act, d, plane);
            }
        }
    }
}

void accel_nchwc_unpack(accel_threads* threads, accel_isa isa, const nchwc_tensor* t, float* y,
                        const float* addend, const pn_activation_desc* act) {
    pack_ctx p = {t, NULL, y, addend, act, isa, accel_kernel_set_for(isa)->vector};
    if (whole_blocks(t)) {
        accel_parallel_for_grain(threads, t->n * t->cb, ACCEL_NCHWC_MIN_PART_FLOATS / (t->h * t->w * B) + 1,
                                 unpack_blocks, &p);
        return;
    }
    accel_parallel_for_grain(threads, t->n * t->cb * t->h, ACCEL_NCHWC_MIN_PART_FLOATS / (t->w * B) + 1,
                             unpack_range, &p);
}

/* ---- the single-layer workload --------------------------------------------------------- */


typedef struct nchwc_state {
    accel_env env;
    nchwc_geom g;
    nchwc_tensor x, y;       /* shapes; data set per run inside the workspace */
    int has_addend, has_act;
    pn_activation_desc act;
    float lo, hi;            /* the activation as the kernels' clamp (has_act 0), else +-inf */
    uint32_t num_inputs;
    int depthwise;           /* groups = channels, multiplier 1: accel_nchwc_dwconv_row_avx512 */
    int64_t groups;          /* grouped (1 < groups, not depthwise): one output block per job,
                                g.cb = its gcb input blocks from accel_nchwc_group_first */
    int64_t c, o;
    const float* wb;         /* [ocb][cb][kh][kw][16][16], 64-byte aligned (accel_nchwc_packed) */
    const float* bias;       /* ocb * 16 (zeros without a bias) right after wb */
} nchwc_state;

static void nchwc_release(void* vs) { free(vs); }

typedef struct nchwc_run {
    const nchwc_state* s;
    nchwc_tensor x, y;
    nchwc_epilogue epi;
    const pack_ctx* unpack; /* y into the caller's NCHW output, with the addend and activation */
} nchwc_run;

/* Jobs [begin, end), job = (image, output block pair, output row group): the pair's rows, then
 * those rows unpacked into the NCHW output while they are still in the core's caches, instead
 * of a pass over all of y after a barrier. Benchmark rows, two threads, two runs each way:
 * 7x7 stem 0.625-0.636 -> 0.550-0.559 ms, 1x1 256 -> 1024 on 14x14 0.272-0.313 -> 0.251-0.302,
 * 3x3 64 on 56x56 0.564-0.566 -> 0.497-0.553; one thread the same within 2 %. */
/* Output rows of one block per job (depthwise and grouped layers): job = (image, block, row). */
static void block_range(void* vctx, int64_t begin, int64_t end) {
    const nchwc_run* r = (const nchwc_run*)vctx;
    const nchwc_state* s = r->s;
    const nchwc_geom* g = &s->g;
    for (int64_t job = begin; job < end; ++job) {
        int64_t oy = job % g->oh, b = (job / g->oh) % g->ocb, n = job / (g->oh * g->ocb);
        nchwc_view xv = {r->x.data + n * r->x.image_floats, r->x.rows, r->x.cols};
        nchwc_view yv = {r->y.data + n * r->y.image_floats, r->y.rows, r->y.cols};
        if (s->depthwise) {
            accel_nchwc_dwconv_row_avx512(g, &xv, s->wb, s->bias, &yv, &r->epi, b, oy);
        } else {
            xv.data += accel_nchwc_group_first(s->c, s->o, s->groups, g->cb, b) * r->x.rows * r->x.cols * B;
            accel_nchwc_conv_rows_avx512(g, &xv, s->wb, s->bias, &yv, &r->epi, b, 1, oy, 1);
        }
        int64_t row0 = (n * r->y.cb + b) * r->y.h + oy;
        unpack_range((void*)r->unpack, row0, row0 + 1);
    }
}

static void compute_range(void* vctx, int64_t begin, int64_t end) {
    const nchwc_run* r = (const nchwc_run*)vctx;
    const nchwc_geom* g = &r->s->g;
    int64_t pairs = (g->ocb + 1) / 2;
    int64_t rpj = accel_nchwc_rows_per_job(g->ow, g->ocb), groups = (g->oh + rpj - 1) / rpj;
    for (int64_t job = begin; job < end; ++job) {
        int64_t oy = (job % groups) * rpj, pair = (job / groups) % pairs, n = job / (groups * pairs);
        int64_t ob = pair * 2;
        nchwc_view xv = {r->x.data + n * r->x.image_floats, r->x.rows, r->x.cols};
        nchwc_view yv = {r->y.data + n * r->y.image_floats, r->y.rows, r->y.cols};
        int64_t nb = g->ocb - ob >= 2 ? 2 : 1, rows = g->oh - oy < rpj ? g->oh - oy : rpj;
        accel_nchwc_conv_rows_avx512(g, &xv, r->s->wb, r->s->bias, &yv, &r->epi, ob, nb, oy, rows);
        for (int64_t b = 0; b < nb; ++b) { /* unpack rows are (image, block, image row) */
            int64_t row0 = (n * r->y.cb + ob + b) * r->y.h + oy;
            unpack_range((void*)r->unpack, row0, row0 + rows);
        }
    }
}

/* Column segments of a dense layer with fewer jobs than threads (a 1-D convolution has one
 * output row: M5's 1 -> 32 on 16000 samples was one job, 30 us on one of two threads): job =
 * (image, output block pair, row group, segment), segment k the columns from k * ow / segs
 * rounded down to whole 14-pixel tiles. The rows are unpacked after every segment is done. */
typedef struct segment_run {
    const nchwc_run* r;
    int64_t segs, groups, rpj;
} segment_run;

static void segment_range(void* vctx, int64_t begin, int64_t end) {
    const segment_run* sr = (const segment_run*)vctx;
    const nchwc_run* r = sr->r;
    const nchwc_geom* g = &r->s->g;
    const int64_t pairs = (g->ocb + 1) / 2;
    for (int64_t job = begin; job < end; ++job) {
        const int64_t seg = job % sr->segs, rest = job / sr->segs;
        const int64_t oy = (rest % sr->groups) * sr->rpj, pair = (rest / sr->groups) % pairs;
        const int64_t n = rest / (sr->groups * pairs), ob = pair * 2;
        const int64_t c0 = seg * g->ow / sr->segs / 14 * 14;
        const int64_t c1 = seg + 1 == sr->segs ? g->ow : (seg + 1) * g->ow / sr->segs / 14 * 14;
        nchwc_geom part = *g;
        part.ow = c1 - c0;
        part.img_left = g->img_left - c0 * g->sw;
        nchwc_view xv = {r->x.data + n * r->x.image_floats + c0 * g->sw * g->ib, r->x.rows, r->x.cols};
        nchwc_view yv = {r->y.data + n * r->y.image_floats + c0 * B, r->y.rows, r->y.cols};
        int64_t nb = g->ocb - ob >= 2 ? 2 : 1, rows = g->oh - oy < sr->rpj ? g->oh - oy : sr->rpj;
        accel_nchwc_conv_rows_avx512(&part, &xv, r->s->wb, r->s->bias, &yv, &r->epi, ob, nb, oy, rows);
    }
}

/* Segments per row for `jobs` whole-row jobs on `threads` threads: 1 when there are jobs
 * enough, else as many as give every thread one, each at least 28 columns and
 * ACCEL_NCHWC_MIN_PART_FLOPS of work (`per_job` for a whole row group). */
static int64_t row_segments(const nchwc_geom* g, int64_t jobs, int64_t threads, int64_t per_job) {
    if (jobs >= threads) {
        return 1;
    }
    int64_t segs = (threads + jobs - 1) / jobs;
    while (segs > 1 && (g->ow / segs < 28 || per_job / segs < ACCEL_NCHWC_MIN_PART_FLOPS)) --segs;
    return segs;
}

static pn_status nchwc_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const nchwc_state* s = (const nchwc_state*)vs;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc execute: Convolution2d expects %u inputs and 1 output", s->num_inputs);
    }
    if (args->inputs[0].data == NULL || args->outputs[0].data == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution2d input or output has no data");
    }
    if (args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution2d needs a workspace");
    }
    const float* addend = NULL;
    if (s->has_addend) {
        addend = (const float*)args->inputs[s->num_inputs - 1].data;
        if (addend == NULL) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution2d addend has no data");
        }
    }
    nchwc_run r = {s, s->x, s->y, {{NULL, 0, 0}, s->lo, s->hi}, NULL};
    r.x.data = accel_align64((float*)args->workspace);
    r.y.data = accel_align64(r.x.data + s->x.n * s->x.image_floats);
    pack_ctx unpack = {&r.y, NULL, (float*)args->outputs[0].data, addend, s->has_act ? &s->act : NULL,
                       s->env.isa, accel_kernel_set_for(s->env.isa)->vector};
    r.unpack = &unpack;
    accel_nchwc_pack(s->env.threads, (const float*)args->inputs[0].data, &r.x);
    if (s->depthwise || s->groups > 1) {
        int64_t per_row = 2 * s->g.kh * s->g.kw * B * s->g.ow * (s->depthwise ? 1 : s->g.cb * B);
        accel_parallel_for_grain(s->env.threads, s->x.n * s->g.ocb * s->g.oh, ACCEL_NCHWC_MIN_PART_FLOPS / per_row + 1,
                                 block_range, &r);
        return PN_OK;
    }
    int64_t rpj = accel_nchwc_rows_per_job(s->g.ow, s->g.ocb), groups = (s->g.oh + rpj - 1) / rpj;
    int64_t per_job = 2 * s->g.kh * s->g.kw * s->g.cb * s->g.ib * (s->g.ocb >= 2 ? 2 : 1) * B * s->g.ow * rpj;
    int64_t jobs = s->x.n * ((s->g.ocb + 1) / 2) * groups;
    segment_run sr = {&r, row_segments(&s->g, jobs, accel_threads_count(s->env.threads), per_job), groups, rpj};
    if (sr.segs > 1) {
        accel_parallel_for_grain(s->env.threads, jobs * sr.segs, 1, segment_range, &sr);
        accel_parallel_for_grain(s->env.threads, r.y.n * r.y.cb * r.y.h, ACCEL_NCHWC_MIN_PART_FLOATS / (r.y.w * B) + 1,
                                 unpack_range, &unpack);
        return PN_OK;
    }
    accel_parallel_for_grain(s->env.threads, jobs, ACCEL_NCHWC_MIN_PART_FLOPS / per_job + 1, compute_range, &r);
    return PN_OK;
}

pn_status accel_conv_nchwc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    *workload_out = NULL;
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    if (!accel_kernel_set_for(env->isa)->nchwc || d->layout != PN_LAYOUT_NCHW || layer->constant_data == NULL ||
        layer->constant_data[1] == NULL) {
        return PN_OK;
    }
    int has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    if (has_bias && layer->constant_data[2] == NULL) {
        return PN_OK; /* a bias known only at run time: the GEMM path reads it then */
    }
    const pn_tensor_info* xi = &layer->inputs[0];
    const pn_tensor_info* wi = &layer->inputs[1];
    const pn_tensor_info* yi = &layer->outputs[0];
    int64_t n = xi->dims[0], c = xi->dims[1], h = xi->dims[2], w = xi->dims[3];
    int64_t o = yi->dims[1], oh = yi->dims[2], ow = yi->dims[3], kh = wi->dims[2], kw = wi->dims[3];
    int64_t ib = accel_nchwc_input_block(c);
    if (ib == 0 || !accel_nchwc_blocks_pay(o) || n * oh * ow * kh * kw == 0) {
        return PN_OK;
    }
    /* Depthwise layers of 5 x 5 taps or more (EfficientNet's, ConvNeXt's 7 x 7): the blocked
     * kernel keeps a tap row's weights in registers and loads each input vector once per tap
     * row; with the conversions at both edges, ConvNeXt's 7 x 7 on 96 x 56 x 56 took 480 us
     * through ops/depthwise.c, (onnxruntime 188) on a Zen 5 core, 3x3 layers stay there (rows read
     * in place). Grouped layers of 4+ input channels per group run one output block at a time
     * on the dense kernel (ops/conv_nchwc.h). */
    const int depthwise = d->groups > 1 && (int64_t)d->groups == c && o == c;
    const int64_t gcb = d->groups > 1 && !depthwise ? accel_nchwc_group_blocks(c, o, (int64_t)d->groups) : 0;
    if (d->groups > 1 && (ib != B || (depthwise ? kh * kw < 25 : gcb == 0))) {
        return PN_OK;
    }
    /* A lone 1x1 convolution runs here too, conversions at both edges included: on a Zen 5
     * core, 256 -> 1024 on 14 x 14 took 450 us against 640 through the GEMM, which reads x in
     * place (onnxruntime 430); 1024 -> 256 on 14 x 14 450 against 627, 16 -> 96 on 112 x 112
     * 395 against 538; only 64 -> 256 on 56 x 56 was slower (616 against 577 us, one thread). */
    nchwc_state* s = (nchwc_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    nchwc_geom* g = &s->g;
    g->cb = (c + ib - 1) / ib;
    g->ib = ib;
    g->ic_last = c - (g->cb - 1) * ib;
    s->depthwise = depthwise;
    s->groups = d->groups;
    s->c = c;
    s->o = o;
    const int64_t xcb = g->cb; /* the input's blocks (the kernel's view of a grouped layer: gcb) */
    if (gcb > 0) {
        g->cb = gcb;
        g->ic_last = B;
    }
    g->ocb = blocks(o);
    g->oc_last = o - (g->ocb - 1) * B;
    g->oh = oh;
    g->ow = ow;
    g->kh = kh;
    g->kw = kw;
    g->sh = d->stride_h;
    g->sw = d->stride_w;
    g->dh = d->dilation_h;
    g->dw = d->dilation_w;
    g->img_top = d->pad_top; /* the kernel reads x from the storage's origin, the image at row pad_top */
    g->img_h = h;
    g->img_left = d->pad_left; /* likewise the columns */
    g->img_w = w;
    /* The padded input holds every tap of every output (at least the padded image). */
    int64_t need_h = (oh - 1) * g->sh + (kh - 1) * g->dh + 1, need_w = (ow - 1) * g->sw + (kw - 1) * g->dw + 1;
    int64_t rows = h + d->pad_top + d->pad_bottom, cols = w + d->pad_left + d->pad_right;
    nchwc_tensor xt = {n, c, h, w, ib, xcb, rows > need_h ? rows : need_h, cols > need_w ? cols : need_w,
                       d->pad_top, d->pad_left, 0, NULL};
    xt.image_floats = (size_t)(xt.cb * xt.rows * xt.cols * ib);
    nchwc_tensor yt = {n, o, oh, ow, B, g->ocb, oh, ow, 0, 0, (size_t)(g->ocb * oh * ow * B), NULL};
    s->x = xt;
    s->y = yt;
    s->has_addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0;
    s->has_act = accel_copy_activation(d->fused_activation, &s->act);
    s->lo = -INFINITY;
    s->hi = INFINITY;
    /* relu and clip without an addend (added after the kernel, in NCHW) run as the kernels'
     * clamp, not over each NCHW row of the output after its transpose: 55-pixel rows of 64
     * channels (SqueezeNet's 16 -> 64 on 55 x 55) spent a fifth of the layer's time there */
    if (s->has_act && !s->has_addend &&
        (s->act.kind == PN_ACTIVATION_RELU || s->act.kind == PN_ACTIVATION_BOUNDED_RELU)) {
        s->lo = s->act.kind == PN_ACTIVATION_RELU ? 0.0f : s->act.alpha;
        s->hi = s->act.kind == PN_ACTIVATION_RELU ? INFINITY : s->act.beta;
        s->has_act = 0;
    }
    s->num_inputs = layer->num_inputs;
    size_t wfloats = depthwise ? (size_t)(g->ocb * kh * kw * B) : (size_t)(g->ocb * g->cb * kh * kw * ib * B);
    nchwc_window win;
    accel_nchwc_full_window(&win, kh, kw);
    const float* wsrc = (const float*)layer->constant_data[1];
    const float* bsrc = has_bias ? (const float*)layer->constant_data[2] : NULL;
    s->wb = gcb > 0 ? accel_nchwc_packed_grouped(packs, env->threads, wsrc, bsrc, o, c, (int64_t)d->groups, &win)
                    : accel_nchwc_packed(packs, env->threads, wsrc, bsrc, o, c, &win, ib, depthwise);
    if (s->wb == NULL) {
        nchwc_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
    }
    s->bias = s->wb + wfloats;
    size_t ws = ((size_t)n * (xt.image_floats + yt.image_floats) + 32) * sizeof(float);
    pn_workload* wl = pn_workload_new(s, nchwc_execute, nchwc_release, ws);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

#else

pn_status accel_conv_nchwc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    (void)env;
    (void)layer;
    (void)packs;
    (void)message_out;
    *workload_out = NULL; /* no AVX-512 kernel on this architecture */
    return PN_OK;
}

#endif
