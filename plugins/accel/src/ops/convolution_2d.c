/* CpuAcc CONVOLUTION_2D, NCHW: 1x1/stride-1 direct GEMM, im2col + GEMM (weights
 * prepacked per group), depthwise direct kernel; bias/addend/activation in the epilogue.
 * An NCHW GEMM runs in one of two orientations, chosen at create time: Y_g[OC, P] =
 * W_g[OC, K] x im2col[K, P] (OC in micro-tile rows, P in columns), or, when the weights
 * are constant and it pads less work, Y_g^T[P, OC] = im2col^T x W_g^T (P in rows, OC in
 * columns, written transposed into the NCHW output). In the transposed orientation, when the
 * arch has an indirect-A kernel (AVX2, AVX-512), im2col^T is not packed but read in place
 * from a zero-padded copy of the image (x^T straight from x for 1x1): gemm_indirect. */
#include "ops/create.h"
#include "ops/conv_nchwc.h"
#include "ops/depthwise.h"
#include "gemm/gemm.h"
#include "ops/shared_weights.h"

#include <stdlib.h>
#include <string.h>

enum conv_mode {
    CONV_GEMM_1X1 = 1,
    CONV_GEMM_IM2COL = 2,
    CONV_DEPTHWISE = 3,
    CONV_NHWC_GEMM_1X1 = 4,
    CONV_NHWC_GEMM = 5,
    CONV_NHWC_DEPTHWISE = 6
};

typedef struct conv_state {
    accel_env env;
    const gemm_arch* arch;
    int mode;
    int nhwc;
    int trans;              /* NCHW GEMM in the transposed orientation (P rows, OC columns) */
    int ind;                /* transposed: A read in place (im2col: from a padded copy of x) */
    int64_t hp, wp;         /* ind: the padded image's height and width */
    int64_t* offs;          /* ind: kdim offsets of (ci, ky, kx) in the padded image (or x) */
    int64_t n, c, h, w, o, oh, ow, kh, kw;
    int64_t sh, sw, pt, pl, dh, dw;
    int64_t groups, cg, og, kdim, p; /* p = oh * ow */
    int has_bias, has_addend, has_act;
    pn_activation_desc act;
    uint32_t num_inputs;
    const float* wpack;     /* groups prepacked A or B blocks (a shared block, accel_packs),
                               or NULL (weights at run time) */
    struct im2col_row* rows; /* kdim entries (im2col mode) */
    accel_dw* depthwise;     /* depthwise modes: the kernels' state (ops/depthwise.c) */
    size_t wpack_stride;    /* floats per group */
    size_t gemm_ws_floats;
} conv_state;

static void conv_release(void* vs) {
    conv_state* s = (conv_state*)vs;
    if (s != NULL) {
        free(s->rows);
        accel_dw_destroy(s->depthwise);
        free(s->offs);
        free(s);
    }
}

/* ---- epilogue --------------------------------------------------------------------- */

typedef struct conv_epi {
    const conv_state* s;
    int col_bias;        /* NHWC: channels are columns, so bias is per column */
    const float* bias;   /* at this group's first output channel, or NULL */
    const float* addend; /* at (image, group's first channel, 0), or NULL */
} conv_epi;

static void conv_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb,
                          int64_t nb) {
    const conv_epi* e = (const conv_epi*)vctx;
    for (int64_t i = 0; i < mb; ++i) {
        float* row = c + i * ldc;
        if (e->bias != NULL && e->col_bias) {
            const float* br = e->bias + n0;
            for (int64_t j = 0; j < nb; ++j) row[j] += br[j];
        } else if (e->bias != NULL) {
            float bv = e->bias[m0 + i];
            for (int64_t j = 0; j < nb; ++j) row[j] += bv;
        }
        if (e->addend != NULL) {
            const float* ar = e->addend + (m0 + i) * ldc + n0;
            for (int64_t j = 0; j < nb; ++j) row[j] += ar[j];
        }
        if (e->s->has_act) {
            accel_apply_activation(e->s->env.isa, &e->s->act, row, nb);
        }
    }
}

/* ---- im2col ------------------------------------------------------------------------ */

/* First and one-past-last output column whose input column lies inside [0, w). */
static void valid_ox(const conv_state* s, int64_t kx, int64_t* lo, int64_t* hi) {
    int64_t off = kx * s->dw - s->pl; /* ix = ox * sw + off */
    int64_t l = off >= 0 ? 0 : (-off + s->sw - 1) / s->sw;
    int64_t h = (s->w - 1 - off) >= 0 ? (s->w - 1 - off) / s->sw + 1 : 0;
    if (h > s->ow) h = s->ow;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Implicit im2col: B[r][j] = x[ci, oy*sh + ky*dh - pt, ox*sw + kx*dw - pl] (0 outside),
 * r = (ci*kh + ky)*kw + kx, j = oy*ow + ox; packed straight into GEMM panels. */
typedef struct im2col_row {
    int64_t xoff;    /* ci * h * w + kx * dw - pl */
    int64_t iyoff;   /* ky * dh - pt */
    int64_t lo, hi;  /* output columns whose input column is inside the row */
} im2col_row;

typedef struct im2col_ctx {
    const conv_state* s;
    const float* x; /* image, group's first channel */
} im2col_ctx;

/* One im2col row over output positions [j0, j0+len): t[q] = B[row][j0 + q] (zeros outside
 * the image and past p), one output-row run at a time; (oy0, ox0) is position j0. */
static void im2col_row_span(const conv_state* s, const float* x, const im2col_row* row, int64_t j0,
                            int64_t oy0, int64_t ox0, int64_t len, float* t) {
    int64_t cols = s->p - j0 < len ? s->p - j0 : len;
    int64_t q = 0, oy = oy0, ox = ox0;
    while (q < cols) {
        int64_t run = cols - q < s->ow - ox ? cols - q : s->ow - ox;
        int64_t iy = oy * s->sh + row->iyoff;
        float* tq = t + q - ox; /* tq[o] is output column o of this output row */
        if (iy < 0 || iy >= s->h) {
            memset(t + q, 0, (size_t)run * sizeof(float));
        } else {
            const float* xr = x + row->xoff + iy * s->w; /* input for output column 0 */
            int64_t end = ox + run;
            int64_t a = row->lo > ox ? row->lo : ox;
            int64_t b = row->hi < end ? row->hi : end;
            if (b < a) b = a;
            for (int64_t o = ox; o < a; ++o) tq[o] = 0.0f;
            if (s->sw == 1) {
                for (int64_t o = a; o < b; ++o) tq[o] = xr[o]; /* short runs: no libc call */
            } else if (s->sw == 2) {
                for (int64_t o = a; o < b; ++o) tq[o] = xr[2 * o]; /* constant stride: vectorized */
            } else {
                for (int64_t o = a; o < b; ++o) tq[o] = xr[o * s->sw];
            }
            for (int64_t o = b; o < end; ++o) tq[o] = 0.0f;
        }
        q += run;
        ++oy;
        ox = 0;
    }
    if (q < len) {
        memset(t + q, 0, (size_t)(len - q) * sizeof(float));
    }
}

/* Most positions of one im2col row span in conv_pack_im2col (spans are whole panels). */
#define IM2COL_SPAN 512

/* Implicit im2col packed straight into GEMM panels: positions [j0, j0+nb) (nb / wdt
 * panels of wdt positions) x im2col rows [p0, p0+kc), panel r at dst + r * wdt * kc in
 * [kc][wdt] layout. Serves as B's pack_b (normal orientation, panels of nr columns) and
 * as A's pack_a (transposed orientation, panels of mr rows): the layouts are the same.
 * Each im2col row is first built over a span of whole panels, then cut into the panels. */
static void conv_pack_im2col(const void* vctx, int wdt, int64_t j0, int64_t nb, int64_t p0,
                             int64_t kc, float* dst) {
    const im2col_ctx* ic = (const im2col_ctx*)vctx;
    const conv_state* s = ic->s;
    float span[IM2COL_SPAN];
    int64_t span_len = IM2COL_SPAN / wdt * wdt;
    for (int64_t c0 = 0; c0 < nb; c0 += span_len) {
        int64_t len = nb - c0 < span_len ? nb - c0 : span_len;
        int64_t oy0 = (j0 + c0) / s->ow, ox0 = (j0 + c0) % s->ow;
        float* d0 = dst + c0 * kc;
        for (int64_t pp = 0; pp < kc; ++pp) {
            im2col_row_span(s, ic->x, &s->rows[p0 + pp], j0 + c0, oy0, ox0, len, span);
            for (int64_t r = 0; r < len; r += wdt) {
                gemm_copy_row(d0 + r * kc + pp * wdt, span + r, wdt);
            }
        }
    }
}

/* ---- NHWC ------------------------------------------------------------------------------ */

/* Implicit im2col for NHWC, one A panel (positions [i0, i0+mr), zeros past p):
 * A[pos][k] = x[iy, ix, ci] with k = (ci*kh + ky)*kw + kx (the weights' own order, so
 * B = W_g^T is a strided view), pos = oy*ow + ox. */
static void nhwc_pack_panel(const im2col_ctx* ic, int mr, int64_t i0, int64_t p0, int64_t kc, float* dst) {
    const conv_state* s = ic->s;
    int64_t y0[GEMM_MR_MAX], x0[GEMM_MR_MAX];
    int rows = (int)(s->p - i0 < mr ? s->p - i0 : mr);
    for (int i = 0; i < rows; ++i) {
        int64_t pos = i0 + i;
        y0[i] = (pos / s->ow) * s->sh - s->pt;
        x0[i] = (pos % s->ow) * s->sw - s->pl;
    }
    for (int64_t pp = 0; pp < kc; ++pp) {
        const im2col_row* kr = &s->rows[p0 + pp]; /* NHWC: xoff = ci, iyoff = dy, lo = dx */
        int64_t ci = kr->xoff, dy = kr->iyoff, dx = kr->lo;
        float* d = dst + pp * mr;
        for (int i = 0; i < rows; ++i) {
            int64_t iy = y0[i] + dy, ix = x0[i] + dx;
            d[i] = (iy >= 0 && iy < s->h && ix >= 0 && ix < s->w) ? ic->x[(iy * s->w + ix) * s->c + ci]
                                                                   : 0.0f;
        }
        for (int i = rows; i < mr; ++i) d[i] = 0.0f;
    }
}

/* NHWC A's pack_a: rows [i0, i0+mb) as mb / mr panels (see nhwc_pack_panel). */
static void nhwc_pack_a(const void* vctx, int mr, int64_t i0, int64_t mb, int64_t p0, int64_t kc,
                        float* dst) {
    for (int64_t i = 0; i < mb; i += mr) {
        nhwc_pack_panel((const im2col_ctx*)vctx, mr, i0 + i, p0, kc, dst + i * kc);
    }
}

static void conv_execute_nhwc(const conv_state* s, const float* x, const float* w, const float* bias,
                              const float* addend, float* y, float* gws) {
    for (int64_t n = 0; n < s->n; ++n) {
        const float* xn = x + n * s->h * s->w * s->c;
        for (int64_t g = 0; g < s->groups; ++g) {
            im2col_ctx ic = {s, xn + g * s->cg};
            gemm_operand a = {xn + g * s->cg, s->c, 1, NULL, NULL, NULL, NULL, NULL};
            if (s->mode == CONV_NHWC_GEMM) {
                a.pack_a = nhwc_pack_a;
                a.pack_ctx = &ic;
            }
            gemm_operand b = {w + g * s->og * s->kdim, 1, s->kdim,
                              s->wpack != NULL ? s->wpack + g * s->wpack_stride : NULL, NULL, NULL, NULL, NULL};
            conv_epi e = {s, 1, bias != NULL ? bias + g * s->og : NULL,
                          addend != NULL ? addend + n * s->p * s->o + g * s->og : NULL};
            int need_epi = e.bias != NULL || e.addend != NULL || s->has_act;
            gemm_run(&s->env, s->arch, s->p, s->og, s->kdim, &a, &b, y + n * s->p * s->o + g * s->og,
                     s->o, 0, gws, need_epi ? conv_epilogue : NULL, &e);
        }
    }
}

/* ---- execute -------------------------------------------------------------------------- */

/* The padded copy of one image/group for the in-place (ind) path. */
typedef struct pad_ctx {
    const conv_state* s;
    const float* x; /* image, group's first channel */
    float* dst;     /* cg x hp x wp */
} pad_ctx;

/* Channels [begin, end) of the padded copy: dst[ci][r][c] = x[ci][r - pt][c - pl] inside the
 * image, 0 outside; hp x wp covers every input the outputs read. */
static void conv_pad_range(void* vctx, int64_t begin, int64_t end) {
    const pad_ctx* pc = (const pad_ctx*)vctx;
    const conv_state* s = pc->s;
    int64_t c0 = s->pl < s->wp ? s->pl : s->wp;              /* first column inside */
    int64_t c1 = s->pl + s->w < s->wp ? s->pl + s->w : s->wp; /* one past the last */
    if (c1 < c0) c1 = c0;
    for (int64_t ci = begin; ci < end; ++ci) {
        for (int64_t r = 0; r < s->hp; ++r) {
            float* d = pc->dst + (ci * s->hp + r) * s->wp;
            int64_t iy = r - s->pt;
            if (iy < 0 || iy >= s->h || c1 == c0) {
                memset(d, 0, (size_t)s->wp * sizeof(float));
                continue;
            }
            memset(d, 0, (size_t)c0 * sizeof(float));
            memcpy(d + c0, pc->x + (ci * s->h + iy) * s->w + (c0 - s->pl), (size_t)(c1 - c0) * sizeof(float));
            memset(d + c1, 0, (size_t)(s->wp - c1) * sizeof(float));
        }
    }
}

/* The NCHW orientation rule: transposed (P in micro-tile rows, OC in columns) when that costs
 * strictly less per K step: multiply-adds padded to whole micro-tiles plus the packing of
 * im2col (GEMM_PACK_COST per float), which the OC-rows orientation always does and the
 * transposed one only without an indirect-A kernel. E.g. with 7 x 32 micro-tiles, P = 196 =
 * 28 x 7 rows instead of 7 x 32 = 224 columns. */
static int conv_prefers_transposed(const gemm_arch* arch, int64_t og, int64_t p) {
    int64_t mr = arch->mr, nr = arch->nr;
    int64_t p_cols = (p + nr - 1) / nr * nr, p_rows = (p + mr - 1) / mr * mr;
    int64_t normal = (og + mr - 1) / mr * mr * p_cols + GEMM_PACK_COST * p_cols;
    int64_t trans = p_rows * ((og + nr - 1) / nr * nr) + (arch->ukr_ind != NULL ? 0 : GEMM_PACK_COST * p_rows);
    return trans < normal;
}

static pn_status conv_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const conv_state* s = (const conv_state*)vs;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution2d expects %u inputs and 1 output",
                       s->num_inputs);
    }
    if (s->n * s->o * s->p == 0) {
        return PN_OK;
    }
    for (uint32_t i = 0; i < args->num_inputs; ++i) {
        if (args->inputs[i].data == NULL && pn_num_elements(args->inputs[i].info) > 0) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: input %u has no data", i);
        }
    }
    if (args->outputs[0].data == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: output has no data");
    }
    const float* x = (const float*)args->inputs[0].data;
    const float* w = (const float*)args->inputs[1].data;
    uint32_t next = 2;
    const float* bias = s->has_bias ? (const float*)args->inputs[next++].data : NULL;
    const float* addend = s->has_addend ? (const float*)args->inputs[next].data : NULL;
    float* y = (float*)args->outputs[0].data;

    if (s->mode == CONV_DEPTHWISE || s->mode == CONV_NHWC_DEPTHWISE) {
        if (args->workspace == NULL && accel_dw_workspace_bytes(s->depthwise) > 0) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution2d needs a workspace");
        }
        accel_dw_run(s->depthwise, x, w, bias, addend, y, args->workspace);
        return PN_OK;
    }
    if (args->workspace == NULL && s->gemm_ws_floats > 0) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution2d needs a workspace");
    }
    float* gws = (float*)args->workspace;
    if (s->nhwc) {
        conv_execute_nhwc(s, x, w, bias, addend, y, gws);
        return PN_OK;
    }
    for (int64_t n = 0; n < s->n; ++n) {
        for (int64_t g = 0; g < s->groups; ++g) {
            const float* xg = x + (n * s->c + g * s->cg) * s->h * s->w;
            const float* wg = w + g * s->og * s->kdim;
            const float* wpg = s->wpack != NULL ? s->wpack + g * s->wpack_stride : NULL;
            float* yg = y + (n * s->o + g * s->og) * s->p;
            im2col_ctx ic = {s, xg};
            conv_epi e = {s, 0, bias != NULL ? bias + g * s->og : NULL,
                          addend != NULL ? addend + (n * s->o + g * s->og) * s->p : NULL};
            gemm_epilogue_fn epi = e.bias != NULL || e.addend != NULL || s->has_act ? conv_epilogue : NULL;
            if (s->trans) {
                /* A = im2col^T [P, K] (x^T for 1x1), B = W_g^T [K, OC] prepacked */
                gemm_operand a = {xg, 1, s->p, NULL, NULL, NULL, NULL, NULL};
                gemm_indirect ind = {xg, s->offs, s->p, 0, 1}; /* 1x1: base(pos) = pos */
                if (s->ind && s->mode == CONV_GEMM_1X1) {
                    a.ind = &ind;
                } else if (s->ind) {
                    /* the padded image follows the GEMM's workspace */
                    float* pad = (float*)(((uintptr_t)(gws + s->gemm_ws_floats) + 63u) & ~(uintptr_t)63u);
                    pad_ctx pc = {s, xg, pad};
                    accel_cc_parallel(&s->env, s->cg, conv_pad_range, &pc);
                    ind.x = pad;
                    ind.ow = s->ow;
                    ind.row_step = s->sh * s->wp;
                    ind.col_step = s->sw;
                    a.ind = &ind;
                } else if (s->mode == CONV_GEMM_IM2COL) {
                    a.pack_a = conv_pack_im2col;
                    a.pack_ctx = &ic;
                }
                gemm_operand b = {wg, 1, s->kdim, wpg, NULL, NULL, NULL, NULL};
                gemm_run(&s->env, s->arch, s->p, s->og, s->kdim, &a, &b, yg, s->p, 1, gws, epi, &e);
                continue;
            }
            gemm_operand a = {wg, s->kdim, 1, wpg, NULL, NULL, NULL, NULL};
            gemm_operand b = {xg, s->p, 1, NULL, NULL, NULL, NULL, NULL};
            if (s->mode == CONV_GEMM_IM2COL) {
                b.pack_b = conv_pack_im2col;
                b.pack_ctx = &ic;
            }
            gemm_run(&s->env, s->arch, s->og, s->p, s->kdim, &a, &b, yg, s->p, 0, gws, epi, &e);
        }
    }
    return PN_OK;
}

pn_status accel_conv2d_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                             pn_workload** workload_out, pn_string_out* message_out) {
    pn_workload* direct = NULL;
    pn_status st = accel_conv_nchwc_build(env, layer, packs, &direct, message_out);
    if (st != PN_OK || direct != NULL) {
        *workload_out = direct;
        return st;
    }
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    conv_state* s = (conv_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    const pn_tensor_info* xi = &layer->inputs[0];
    const pn_tensor_info* wi = &layer->inputs[1];
    const pn_tensor_info* yi = &layer->outputs[0];
    int64_t xd[4], yd[4];
    pn_layout_nchw(xi, d->layout, xd);
    pn_layout_nchw(yi, d->layout, yd);
    s->nhwc = d->layout == PN_LAYOUT_NHWC;
    s->n = xd[0];
    s->c = xd[1];
    s->h = xd[2];
    s->w = xd[3];
    s->o = yd[1];
    s->oh = yd[2];
    s->ow = yd[3];
    s->kh = wi->dims[2];
    s->kw = wi->dims[3];
    s->sh = d->stride_h;
    s->sw = d->stride_w;
    s->pt = d->pad_top;
    s->pl = d->pad_left;
    s->dh = d->dilation_h;
    s->dw = d->dilation_w;
    s->groups = d->groups;
    s->cg = s->c / s->groups;
    s->og = s->o / s->groups;
    s->kdim = s->cg * s->kh * s->kw;
    s->p = s->oh * s->ow;
    s->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    s->has_addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0;
    s->has_act = accel_copy_activation(d->fused_activation, &s->act);
    s->num_inputs = layer->num_inputs;
    int threads = accel_threads_count(env->threads);
    size_t ws_bytes = 0;
    int depthwise = s->groups == s->c && s->cg == 1;
    int pointwise = s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->pt == 0 &&
                    s->pl == 0 && s->oh == s->h && s->ow == s->w;
    const float* wc = layer->constant_data != NULL ? (const float*)layer->constant_data[1] : NULL;
    if (depthwise && (s->nhwc || s->og <= 4)) {
        s->mode = s->nhwc ? CONV_NHWC_DEPTHWISE : CONV_DEPTHWISE;
        st = accel_dw_create(env, layer, &s->depthwise, message_out);
        if (st != PN_OK) {
            conv_release(s);
            return st;
        }
        ws_bytes = accel_dw_workspace_bytes(s->depthwise);
    } else if (s->nhwc) {
        s->mode = pointwise ? CONV_NHWC_GEMM_1X1 : CONV_NHWC_GEMM;
        if (wc != NULL && s->og > 0 && s->kdim > 0) {
            /* B_g[k][o] = W[g*og + o][k]: prepack W_g^T */
            s->wpack = accel_pack_gemm(packs, env->isa, 0, wc, s->kdim, s->og, 1, s->kdim, s->groups,
                                       s->og * s->kdim, &s->wpack_stride);
            if (s->wpack == NULL) {
                conv_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
            }
        }
        s->rows = (im2col_row*)malloc((size_t)(s->kdim > 0 ? s->kdim : 1) * sizeof(im2col_row));
        if (s->rows == NULL) {
            conv_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
        }
        for (int64_t r = 0; r < s->kdim; ++r) {
            s->rows[r].xoff = r / (s->kh * s->kw);
            s->rows[r].iyoff = ((r / s->kw) % s->kh) * s->dh;
            s->rows[r].lo = (r % s->kw) * s->dw;
            s->rows[r].hi = 0;
        }
        s->gemm_ws_floats = gemm_workspace_floats(s->arch, threads, s->p, s->og, s->kdim, 0,
                                                  s->wpack != NULL, 0);
        ws_bytes = s->gemm_ws_floats * sizeof(float) + 64;
    } else {
        s->mode = pointwise ? CONV_GEMM_1X1 : CONV_GEMM_IM2COL;
        s->trans = wc != NULL && conv_prefers_transposed(s->arch, s->og, s->p);
        if (wc != NULL && s->og > 0 && s->kdim > 0) {
            /* Reshaped from a workload that packed the weights in the other orientation (its
             * output had another size): keep that one, so the two share one copy. */
            accel_pack_key mine, other;
            accel_pack_gemm_key(&mine, env->isa, !s->trans, wc, s->trans ? s->kdim : s->og,
                                s->trans ? s->og : s->kdim, s->trans ? 1 : s->kdim, s->trans ? s->kdim : 1,
                                s->groups, s->og * s->kdim);
            accel_pack_gemm_key(&other, env->isa, s->trans, wc, s->trans ? s->og : s->kdim,
                                s->trans ? s->kdim : s->og, s->trans ? s->kdim : 1, s->trans ? 1 : s->kdim,
                                s->groups, s->og * s->kdim);
            if (!accel_packs_offered(packs, &mine) && accel_packs_offered(packs, &other)) {
                s->trans = !s->trans;
            }
            s->wpack = s->trans ? accel_pack_gemm(packs, env->isa, 0, wc, s->kdim, s->og, 1, s->kdim, s->groups,
                                                  s->og * s->kdim, &s->wpack_stride)
                                : accel_pack_gemm(packs, env->isa, 1, wc, s->og, s->kdim, s->kdim, 1, s->groups,
                                                  s->og * s->kdim, &s->wpack_stride);
            if (s->wpack == NULL) {
                conv_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
            }
        }
        if (s->mode == CONV_GEMM_IM2COL) {
            s->rows = (im2col_row*)malloc((size_t)(s->kdim > 0 ? s->kdim : 1) * sizeof(im2col_row));
            if (s->rows == NULL) {
                conv_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
            }
            for (int64_t r = 0; r < s->kdim; ++r) {
                int64_t ci = r / (s->kh * s->kw), ky = (r / s->kw) % s->kh, kx = r % s->kw;
                s->rows[r].xoff = ci * s->h * s->w + kx * s->dw - s->pl;
                s->rows[r].iyoff = ky * s->dh - s->pt;
                valid_ox(s, kx, &s->rows[r].lo, &s->rows[r].hi);
            }
        }
        /* Read A = im2col^T in place from a padded copy of the image (x^T straight from x for
         * 1x1) when the arch has an indirect-A kernel. */
        int ind_1x1 = s->mode == CONV_GEMM_1X1;
        s->ind = s->trans && s->arch->ukr_ind != NULL && s->kdim > 0;
        size_t pad_floats = 0;
        if (s->ind) {
            s->offs = (int64_t*)malloc((size_t)s->kdim * sizeof(int64_t));
            if (s->offs == NULL) {
                conv_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
            }
        }
        if (s->ind && ind_1x1) {
            for (int64_t r = 0; r < s->kdim; ++r) {
                s->offs[r] = r * s->p; /* A[pos][ci] = x[ci * P + pos] */
            }
        } else if (s->ind) {
            s->hp = (s->oh - 1) * s->sh + (s->kh - 1) * s->dh + 1;
            s->wp = (s->ow - 1) * s->sw + (s->kw - 1) * s->dw + 1;
            pad_floats = (size_t)(s->cg * s->hp * s->wp);
            for (int64_t r = 0; r < s->kdim; ++r) {
                int64_t ci = r / (s->kh * s->kw), ky = (r / s->kw) % s->kh, kx = r % s->kw;
                s->offs[r] = (ci * s->hp + ky * s->dh) * s->wp + kx * s->dw;
            }
        }
        s->gemm_ws_floats = s->trans ? gemm_workspace_floats(s->arch, threads, s->p, s->og, s->kdim, s->ind,
                                                             s->wpack != NULL, 1)
                                     : gemm_workspace_floats(s->arch, threads, s->og, s->p, s->kdim,
                                                             s->wpack != NULL, 0, 0);
        ws_bytes = (s->gemm_ws_floats + 16 + pad_floats) * sizeof(float) + 64;
    }
    pn_workload* wl = pn_workload_new(s, conv_execute, conv_release, ws_bytes);
    if (wl == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_conv2d_create(void* context, const pn_layer* layer,
                              pn_workload** workload_out, pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, accel_conv2d_build, workload_out,
                                message_out);
}
