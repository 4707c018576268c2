/* CpuAcc's direct blocked 3-D convolution (FORWARD, groups 1, float32, AVX-512): the
 * NCHW16c kernels of kernels/nchwc_conv_avx512.c run over the depth taps.
 *
 * A tensor [N, C, D, H, W] in NCDHW16c is [N][ceil(C/16)][D][H][W][16]. Viewed with D * H
 * storage rows per block, plane z of it is a 2-D blocked image whose view (nchwc_view) starts
 * z * H * W * 16 floats further: the 2-D kernels read and write planes of a 3-D tensor without
 * a change. Output plane oz of a convolution with kd depth taps is
 *   y[oz] = clamp(bias + sum over the taps tz whose input plane iz = oz * sd - pd + tz * dd
 *                 lies in [0, D) of conv2d(x[iz], w[:, :, tz]))
 * computed as one call of accel_nchwc_conv_rows_avx512 per tap on the same output tile: the
 * first starts from the bias, each later one adds its products to the sums the one before
 * stored (the output tile as its addend, in place, as the kernel's passes over input blocks
 * do), and only the last clamps (relu and clip; any other activation runs on the NCDHW rows
 * after the transpose). The taps that read only the depth padding are skipped, as CpuRef
 * skips them (their products would be with zeros).
 *
 * The workload copies the NCDHW input into a zero-padded NCDHW16c image (the padding along H
 * and W becomes each plane's halo; along D nothing is stored, the taps are skipped), runs jobs
 * of (image, output block pair, output plane, output row group) on the pool, and transposes
 * each job's rows into the NCDHW output while they are in the core's cache. Weights are packed
 * once (a shared block, ACCEL_PACK_NCHWC_3D): per depth tap the 2-D layout
 * [ocb][cb][kh][kw][ib][16] of accel_nchwc_pack_weights, then the bias padded to whole blocks,
 * then as many zeros (the later taps' bias). Each output element is summed in one fixed order
 * (taps in order), so the result does not depend on the thread count. */
#include "kernels/gemm_kernels.h"
#include "ops/conv_nchwc.h"
#include "ops/conv_nchwc_3d.h"
#include "ops/shared_weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B NCHWC_BLOCK
/* Column segments of long rows, and the weights that run with the pairs innermost
 * (accel_conv3d_nchwc_build) */
#define CONV3D_SEGMENT_COLS 112
#define CONV3D_PAIRS_INNER_BYTES (512 * 1024)

#if defined(ACCEL_HAVE_X86_KERNELS) /* the blocked kernels exist only with the AVX-512 build */

static int64_t blocks(int64_t v) { return (v + B - 1) / B; }

/* What pack3d_range packs: output blocks [begin, end) of every depth tap. */
typedef struct pack3d_ctx {
    const float* w;          /* [o][c][kd][kh][kw] */
    float* dst;
    int64_t o, c, kd, kh, kw, ib, cb, slice;
} pack3d_ctx;

static void pack3d_range(void* vctx, int64_t begin, int64_t end) {
    const pack3d_ctx* p = (const pack3d_ctx*)vctx;
    const int64_t kk = p->kh * p->kw;
    for (int64_t tz = 0; tz < p->kd; ++tz) {
        for (int64_t ob = begin; ob < end; ++ob) {
            float* dst = p->dst + tz * p->slice + ob * p->cb * kk * p->ib * B;
            for (int64_t co = 0; co < B; ++co) {
                int64_t oc = ob * B + co;
                for (int64_t ic = 0; ic < p->cb * p->ib; ++ic) {
                    float* d = dst + ((ic / p->ib) * kk * p->ib + ic % p->ib) * B + co; /* + t * ib * B */
                    const float* src = oc < p->o && ic < p->c ? p->w + ((oc * p->c + ic) * p->kd + tz) * kk : NULL;
                    for (int64_t t = 0; t < kk; ++t) d[t * p->ib * B] = src != NULL ? src[t] : 0.0f;
                }
            }
        }
    }
}

typedef struct conv3d_state {
    accel_env env;
    nchwc_geom g;            /* one plane's 2-D geometry (the kernel's) */
    int64_t n, c, o;
    int64_t d, h, w;         /* input */
    int64_t od;              /* output planes (g.oh x g.ow each) */
    int64_t kd, sd, dd, pd;  /* depth taps, stride, dilation, padding before */
    int64_t rows, cols;      /* one input plane's storage rows and columns (halo included) */
    size_t x_image, y_image; /* floats of one blocked image */
    int64_t kb;              /* input blocks per pass (accel_nchwc_pass_blocks), 0: one */
    int64_t segs, seg_cols;  /* column segments per output row, and their columns (ow: one) */
    int pairs_inner;         /* jobs run every output block pair of a row before the next row */
    int has_act;
    pn_activation_desc act;  /* applied after the transpose (has_act), else the clamp */
    float lo, hi;
    uint32_t num_inputs;
    const float* wb;         /* kd slices of [ocb][cb][kh][kw][ib][16] */
    size_t slice;            /* floats of one slice */
    const float* bias;       /* ocb * 16, followed by ocb * 16 zeros */
} conv3d_state;

static void conv3d_release(void* vs) { free(vs); }

typedef struct conv3d_run {
    const conv3d_state* s;
    const float* x;          /* NCDHW */
    float* y;                /* NCDHW */
    float* xb;               /* the blocked input */
    float* yb;               /* the blocked output */
} conv3d_run;

/* Storage rows [begin, end) of the blocked input, row = (image, block, plane, storage row). */
static void pack_x_range(void* vctx, int64_t begin, int64_t end) {
    const conv3d_run* r = (const conv3d_run*)vctx;
    const conv3d_state* s = r->s;
    const int64_t ib = s->g.ib, cb = s->g.cb, ht = s->g.img_top, hl = s->g.img_left;
    const int64_t plane = s->d * s->h * s->w;
    for (int64_t row = begin; row < end; ++row) {
        int64_t sr = row % s->rows, z = (row / s->rows) % s->d, b = (row / (s->rows * s->d)) % cb;
        int64_t n = row / (s->rows * s->d * cb);
        float* dst = r->xb + n * s->x_image + ((b * s->d + z) * s->rows + sr) * s->cols * ib;
        int64_t y = sr - ht;
        if (y < 0 || y >= s->h) {
            memset(dst, 0, (size_t)(s->cols * ib) * sizeof(float));
            continue;
        }
        if (hl > 0) {
            memset(dst, 0, (size_t)(hl * ib) * sizeof(float));
        }
        if (s->cols > hl + s->w) {
            memset(dst + (hl + s->w) * ib, 0, (size_t)((s->cols - hl - s->w) * ib) * sizeof(float));
        }
        float* d = dst + hl * ib;
        int64_t channels = s->c - b * ib < ib ? s->c - b * ib : ib;
        const float* src = r->x + ((n * s->c + b * ib) * s->d + z) * s->h * s->w + y * s->w;
        if (channels < ib) { /* the lanes past the last channel stay zero */
            memset(d, 0, (size_t)(s->w * ib) * sizeof(float));
        }
        if (ib == 3 && channels == 3) {
            accel_nchwc_pack_row3_avx512(src, plane, d, s->w);
            continue;
        }
        gemm_store_t_avx512(src, plane, d, ib, channels, s->w); /* d[x * ib + ci] = src[ci * plane + x] */
    }
}

/* Output rows [oy, oy + rows) of plane oz of block ob of image n, columns [c0, c0 + cols)
 * (cols < ow only when rows is 1): transposed into the NCDHW output, then the activation that
 * is not a clamp. */
static void unpack_rows(const conv3d_run* r, int64_t n, int64_t ob, int64_t oz, int64_t oy, int64_t rows, int64_t c0,
                        int64_t cols) {
    const conv3d_state* s = r->s;
    const nchwc_geom* g = &s->g;
    const int64_t plane = s->od * g->oh * g->ow, count = cols < g->ow ? cols : rows * g->ow;
    const float* src = r->yb + n * s->y_image + (((ob * s->od + oz) * g->oh + oy) * g->ow + c0) * B;
    int64_t channels = s->o - ob * B < B ? s->o - ob * B : B;
    float* dst = r->y + (n * s->o + ob * B) * plane + (oz * g->oh + oy) * g->ow + c0;
    gemm_store_t_avx512(src, B, dst, plane, count, channels); /* dst[co * plane + p] = src[p * 16 + co] */
    if (s->has_act) {
        for (int64_t co = 0; co < channels; ++co) {
            accel_apply_activation(s->env.isa, &s->act, dst + co * plane, count);
        }
    }
}

/* Jobs [begin, end), job = (image, output block pair, output plane, row group, column
 * segment): pairs outermost when a pair's weights are worth keeping in cache across the rows
 * (conv3d_state.pairs_inner 0), else innermost, so that the input rows a job reads are read
 * again, from the core's cache, by the jobs of the other pairs right after. */
static void conv3d_range(void* vctx, int64_t begin, int64_t end) {
    const conv3d_run* r = (const conv3d_run*)vctx;
    const conv3d_state* s = r->s;
    const nchwc_geom* g = &s->g;
    const int64_t pairs = (g->ocb + 1) / 2, segs = s->segs;
    const int64_t rpj = accel_nchwc_rows_per_job(g->ow, g->ocb), groups = (g->oh + rpj - 1) / rpj;
    const int64_t xplane = s->rows * s->cols * g->ib, yplane = g->oh * g->ow * B;
    for (int64_t job = begin; job < end; ++job) {
        int64_t pair, rest;
        if (s->pairs_inner) {
            pair = job % pairs;
            rest = job / pairs;
        } else {
            pair = (job / (segs * groups * s->od)) % pairs;
            rest = job % (segs * groups * s->od) + job / (segs * groups * s->od * pairs) * (segs * groups * s->od);
        }
        int64_t seg = rest % segs, oy = (rest / segs % groups) * rpj, oz = rest / (segs * groups) % s->od;
        int64_t n = rest / (segs * groups * s->od), ob = pair * 2;
        int64_t nb = g->ocb - ob >= 2 ? 2 : 1, rows = g->oh - oy < rpj ? g->oh - oy : rpj;
        int64_t c0 = seg * s->seg_cols, c1 = c0 + s->seg_cols < g->ow ? c0 + s->seg_cols : g->ow;
        nchwc_geom part = *g;
        part.ow = c1 - c0;
        part.img_left = g->img_left - c0 * g->sw;
        nchwc_view yv = {r->yb + n * s->y_image + oz * yplane + c0 * B, s->od * g->oh, g->ow};
        /* the taps whose input plane lies inside the image */
        int64_t z0 = oz * s->sd - s->pd, t0 = 0, t1 = s->kd;
        while (t0 < t1 && z0 + t0 * s->dd < 0) ++t0;
        while (t1 > t0 && z0 + (t1 - 1) * s->dd >= s->d) --t1;
        if (t0 == t1) { /* only depth padding: the bias, clamped */
            for (int64_t b = 0; b < nb; ++b)
                for (int64_t y = 0; y < rows; ++y) {
                    float* row = yv.data + ((ob + b) * yv.rows + oy + y) * yv.cols * B;
                    for (int64_t p = 0; p < part.ow; ++p)
                        for (int64_t l = 0; l < B; ++l) {
                            float v = s->bias[(ob + b) * B + l];
                            v = v < s->lo ? s->lo : v;
                            row[p * B + l] = v > s->hi ? s->hi : v;
                        }
                }
        }
        for (int64_t tz = t0; tz < t1; ++tz) {
            int64_t iz = z0 + tz * s->dd;
            nchwc_view xv = {r->xb + n * s->x_image + iz * xplane + c0 * g->sw * g->ib, s->d * s->rows, s->cols};
            nchwc_epilogue epi = {{NULL, 0, 0}, s->lo, s->hi};
            if (tz > t0) {
                epi.addend = yv; /* the sums of the taps before, added in place */
            }
            if (tz + 1 < t1) {
                epi.lo = -INFINITY;
                epi.hi = INFINITY;
            }
            const float* bias = tz == t0 ? s->bias : s->bias + g->ocb * B;
            accel_nchwc_conv_rows_passes_avx512(&part, &xv, s->wb + tz * s->slice, bias, &yv, &epi, ob, (int)nb, oy,
                                                rows, s->kb);
        }
        for (int64_t b = 0; b < nb; ++b) {
            unpack_rows(r, n, ob + b, oz, oy, rows, c0, c1 - c0);
        }
    }
}

static pn_status conv3d_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const conv3d_state* s = (const conv3d_state*)vs;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution expects %u inputs and 1 output",
                       s->num_inputs);
    }
    if (args->inputs[0].data == NULL || args->outputs[0].data == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution input or output has no data");
    }
    if (args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution needs a workspace");
    }
    const nchwc_geom* g = &s->g;
    conv3d_run r = {s, (const float*)args->inputs[0].data, (float*)args->outputs[0].data, NULL, NULL};
    r.xb = accel_align64((float*)args->workspace);
    r.yb = accel_align64(r.xb + s->n * s->x_image);
    int64_t xrows = s->n * g->cb * s->d * s->rows;
    accel_parallel_for_grain(s->env.threads, xrows, ACCEL_NCHWC_MIN_PART_FLOATS / (s->cols * g->ib) + 1, pack_x_range,
                             &r);
    const int64_t rpj = accel_nchwc_rows_per_job(g->ow, g->ocb), groups = (g->oh + rpj - 1) / rpj;
    const int64_t per_job = 2 * s->kd * g->kh * g->kw * g->cb * g->ib * (g->ocb >= 2 ? 2 : 1) * B *
                            (s->segs > 1 ? s->seg_cols : g->ow * rpj);
    const int64_t jobs = s->n * ((g->ocb + 1) / 2) * s->od * groups * s->segs;
    accel_parallel_for_grain(s->env.threads, jobs, ACCEL_NCHWC_MIN_PART_FLOPS / per_job + 1, conv3d_range, &r);
    return PN_OK;
}

pn_status accel_conv3d_nchwc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    *workload_out = NULL;
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    if (!accel_kernel_set_for(env->isa)->nchwc || d->op != PN_CONVOLUTION_FORWARD || d->spatial_rank != 3 ||
        d->groups != 1 || layer->constant_data == NULL || layer->constant_data[1] == NULL) {
        return PN_OK;
    }
    const int has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    if (has_bias && layer->constant_data[2] == NULL) {
        return PN_OK; /* a bias known only at run time: the GEMM path reads it then */
    }
    const pn_tensor_info* xi = &layer->inputs[0];
    const pn_tensor_info* wi = &layer->inputs[1];
    const pn_tensor_info* yi = &layer->outputs[0];
    const int64_t n = xi->dims[0], c = xi->dims[1], o = yi->dims[1];
    const int64_t ib = accel_nchwc_input_block(c);
    if (ib == 0 || !accel_nchwc_blocks_pay(o) || n * yi->dims[2] * yi->dims[3] * yi->dims[4] == 0 ||
        xi->dims[2] * xi->dims[3] * xi->dims[4] == 0) {
        return PN_OK;
    }
    conv3d_state* s = (conv3d_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->n = n;
    s->c = c;
    s->o = o;
    s->d = xi->dims[2];
    s->h = xi->dims[3];
    s->w = xi->dims[4];
    s->od = yi->dims[2];
    s->kd = wi->dims[2];
    s->sd = d->strides[0];
    s->dd = d->dilations[0];
    s->pd = d->pads_begin[0];
    nchwc_geom* g = &s->g;
    /* A kd x 1 x 1 kernel with stride 1 and no padding along H and W (R(2+1)D's temporal
     * convolutions, 1x1x1 projections of stride 1): the tensors viewed as 2-D images of D rows
     * of H * W pixels, one 2-D convolution of kd x 1 taps, so the depth taps accumulate in the
     * kernel's registers, not through the output tile once per tap (R(2+1)D-18's 144 -> 64 on
     * 8 x 56 x 56 took 16.3 ms per tap call on one Zen 4 core) */
    const int fold = wi->dims[3] == 1 && wi->dims[4] == 1 && d->strides[1] == 1 && d->strides[2] == 1 &&
                     d->pads_begin[1] == 0 && d->pads_end[1] == 0 && d->pads_begin[2] == 0 && d->pads_end[2] == 0;
    int64_t kh = wi->dims[3], kw = wi->dims[4], pads[2][2] = {{d->pads_begin[1], d->pads_end[1]},
                                                              {d->pads_begin[2], d->pads_end[2]}};
    int64_t strides[2] = {d->strides[1], d->strides[2]}, dilations[2] = {d->dilations[1], d->dilations[2]};
    if (fold) {
        s->h = s->d; /* the input: 1 plane of D rows of H * W pixels */
        s->w = xi->dims[3] * xi->dims[4];
        s->d = 1;
        s->od = 1;
        kh = s->kd;
        kw = 1;
        pads[0][0] = d->pads_begin[0];
        pads[0][1] = d->pads_end[0];
        strides[0] = d->strides[0];
        dilations[0] = d->dilations[0];
        dilations[1] = 1;
        s->kd = s->sd = s->dd = 1;
        s->pd = 0;
    }
    g->cb = (c + ib - 1) / ib;
    g->ib = ib;
    g->ic_last = c - (g->cb - 1) * ib;
    g->ocb = blocks(o);
    g->oc_last = o - (g->ocb - 1) * B;
    g->oh = fold ? yi->dims[2] : yi->dims[3];
    g->ow = fold ? yi->dims[3] * yi->dims[4] : yi->dims[4];
    g->kh = kh;
    g->kw = kw;
    g->sh = strides[0];
    g->sw = strides[1];
    g->dh = dilations[0];
    g->dw = dilations[1];
    g->img_top = pads[0][0]; /* the kernel reads x from the storage's origin */
    g->img_h = s->h;
    g->img_left = pads[1][0];
    g->img_w = s->w;
    /* each plane's padded storage holds every tap of every output (at least the padded image) */
    int64_t need_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1, need_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    int64_t rows = s->h + pads[0][0] + pads[0][1], cols = s->w + pads[1][0] + pads[1][1];
    s->rows = rows > need_h ? rows : need_h;
    s->cols = cols > need_w ? cols : need_w;
    s->x_image = (size_t)(g->cb * s->d * s->rows * s->cols * ib);
    s->y_image = (size_t)(g->ocb * s->od * g->oh * g->ow * B);
    s->kb = accel_nchwc_pass_blocks(g);
    /* Rows of more than CONV3D_SEGMENT_COLS pixels (the folded kd x 1 x 1 layers' H * W) run in
     * segments of that many, so that a job's input rows stay in the core's L2 for the other
     * pairs; the pairs run innermost when all the weights fit in half of it
     * (CONV3D_PAIRS_INNER_BYTES). R(2+1)D-18's 144 -> 64 3x1x1 on 8 x 56 x 56, whole rows of
     * 3136 pixels, pairs outermost: 24.3 ms on one Zen 4 core (CPU time; onnxruntime 23.7),
     * in segments, pairs innermost: 22.4 (onnxruntime 23.6), the machine shared (load 7-10). */
    s->seg_cols = g->ow > CONV3D_SEGMENT_COLS ? CONV3D_SEGMENT_COLS : g->ow;
    s->segs = (g->ow + s->seg_cols - 1) / s->seg_cols;
    s->pairs_inner = (int64_t)sizeof(float) * s->kd * g->ocb * B * g->cb * ib * g->kh * g->kw <= CONV3D_PAIRS_INNER_BYTES;
    s->has_act = accel_copy_activation(d->fused_activation, &s->act);
    s->lo = -INFINITY;
    s->hi = INFINITY;
    if (s->has_act && (s->act.kind == PN_ACTIVATION_RELU || s->act.kind == PN_ACTIVATION_BOUNDED_RELU)) {
        s->lo = s->act.kind == PN_ACTIVATION_RELU ? 0.0f : s->act.alpha;
        s->hi = s->act.kind == PN_ACTIVATION_RELU ? INFINITY : s->act.beta;
        s->has_act = 0;
    }
    s->num_inputs = layer->num_inputs;
    const float* wsrc = (const float*)layer->constant_data[1];
    const float* bsrc = has_bias ? (const float*)layer->constant_data[2] : NULL;
    s->slice = (size_t)(g->ocb * g->cb * g->kh * g->kw * ib * B);
    accel_pack_key key;
    accel_pack_key_init(&key, ACCEL_PACK_NCHWC_3D, ACCEL_ISA_AVX512, wsrc, bsrc);
    key.params[0] = o;
    key.params[1] = c;
    key.params[2] = s->kd;
    key.params[3] = g->kh;
    key.params[4] = g->kw;
    key.params[5] = ib;
    key.params[6] = fold;
    int fresh = 0;
    float* wb = accel_packs_get(packs, &key, (size_t)s->kd * s->slice + (size_t)(2 * g->ocb * B), &fresh);
    if (wb == NULL) {
        conv3d_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
    }
    if (fresh) {
        pack3d_ctx p = {wsrc, wb, o, c, s->kd, g->kh, g->kw, ib, g->cb, (int64_t)s->slice};
        accel_parallel_for(env->threads, g->ocb, pack3d_range, &p);
        float* bdst = wb + (size_t)s->kd * s->slice; /* a multiple of 16 floats: 64-byte aligned */
        for (int64_t oc = 0; oc < 2 * g->ocb * B; ++oc) {
            bdst[oc] = bsrc != NULL && oc < o ? bsrc[oc] : 0.0f;
        }
    }
    s->wb = wb;
    s->bias = wb + (size_t)s->kd * s->slice;
    size_t ws = ((size_t)n * (s->x_image + s->y_image) + 32) * sizeof(float);
    pn_workload* wl = pn_workload_new(s, conv3d_execute, conv3d_release, ws);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

#else

pn_status accel_conv3d_nchwc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    (void)env;
    (void)layer;
    (void)packs;
    (void)message_out;
    *workload_out = NULL; /* no AVX-512 kernel on this architecture */
    return PN_OK;
}

#endif
