/* CpuAcc CONVOLUTION (the N-D kind, pn_convolution_desc) on float32:
 *
 * - FORWARD 1-D and 2-D run on CONVOLUTION_2D's paths (ops/convolution_2d.c: the blocked direct kernel, the
 *   GEMMs, depthwise) through the 2-D view of the layer: a 1-D layer as one of height 1
 *   (x [N, C, L] -> [N, C, 1, L], w [O, C/g, K] -> [O, C/g, 1, K], kernel, stride and dilation
 *   1 and no padding along the added axis). The importer maps every 1-D Conv here (the zoo's
 *   audio_m5), and so does a network built with add_convolution.
 * - FORWARD 3-D of groups 1 with constant weights, on CPUs with the AVX-512 kernels: the direct
 *   blocked convolution of ops/conv_nchwc_3d.c (the 2-D NCHW16c kernels over the depth taps).
 * - FORWARD 3-D otherwise (grouped, weights given at run time, no AVX-512): per image and group one GEMM Y_g[O/g, out] = W_g[O/g, C/g * kvol] x
 *   im2col[C/g * kvol, out], the weights prepacked, im2col packed straight into the GEMM's
 *   panels (never stored whole), bias and activation in the GEMM's epilogue.
 * - TRANSPOSED 1-, 2- and 3-D (ONNX ConvTranspose: U-Net's 2x2 stride-2 upsampling): per image
 *   and group, col[O/g * kvol, in] = W_g^T[O/g * kvol, C/g] x X_g[C/g, in] (W^T prepacked, X
 *   read as the GEMM's B in place), then col2im: every column value is added to the output
 *   position j * stride + t * dilation - pad_begin of its tap t (positions outside the output,
 *   cropped by the pads, are dropped; positions no tap reaches, e.g. output_padding, keep the
 *   bias). The input is taken in chunks of whole input rows, so col stays within about 4 MiB
 *   (in cache for col2im). col2im splits the output channels over the threads; each output
 *   element is summed in one fixed order (taps in order, chunks in order), so the result does
 *   not depend on the thread count. When no two (input, tap) pairs reach one output position
 *   (dilation 1 and kernel <= stride on every axis: U-Net's 2x2 stride 2), there is nothing to
 *   sum: the GEMM's epilogue adds the bias, applies the activation and stores each block of
 *   col into its output positions as soon as the micro-kernels finished it (no col2im pass, no
 *   first pass over the output unless some positions are reached by no tap), the k rows of one
 *   output row interleaved. On a Zen 5 core (CPU time of one thread) that took 32 -> 16 2x2 s2
 *   on 112 x 112 from 0.54 ms (col2im) to 0.32 ms (onnxruntime 0.34 ms).
 *
 * 1-D and 2-D layers of the last two paths are 3-D layers whose leading spatial axes have size
 * 1. Every workload is reshapable and keeps its packed weights in shared blocks
 * (ops/shared_weights.h). */
#include "ops/create.h"
#include "ops/conv_nchwc_3d.h"
#include "gemm/gemm.h"

#include <stdlib.h>
#include <string.h>

/* The geometry, spatial axes right-aligned in 3-D (unused leading axes: size 1). */
typedef struct nd_geom {
    int64_t n, c, o, groups, cg, og;
    int64_t in[3], k[3], out[3], stride[3], dil[3], pad[3];
    int64_t kvol, in_vol, out_vol;
} nd_geom;

static void nd_geometry(nd_geom* g, const pn_layer* layer) {
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[1];
    const pn_tensor_info* y = &layer->outputs[0];
    uint32_t rank = d->spatial_rank;
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->o = y->dims[1];
    g->groups = d->groups;
    g->cg = g->c / g->groups;
    g->og = g->o / g->groups;
    for (uint32_t slot = 0; slot < 3; ++slot) {
        int used = slot >= 3 - rank;
        uint32_t a = used ? slot - (3 - rank) : 0;
        g->in[slot] = used ? x->dims[2 + a] : 1;
        g->k[slot] = used ? w->dims[2 + a] : 1;
        g->out[slot] = used ? y->dims[2 + a] : 1;
        g->stride[slot] = used ? d->strides[a] : 1;
        g->dil[slot] = used ? d->dilations[a] : 1;
        g->pad[slot] = used ? d->pads_begin[a] : 0;
    }
    g->kvol = g->k[0] * g->k[1] * g->k[2];
    g->in_vol = g->in[0] * g->in[1] * g->in[2];
    g->out_vol = g->out[0] * g->out[1] * g->out[2];
}

/* The first and one-past-last input column j (of `in` columns) whose output column
 * j * stride + off lies inside [0, out). */
static void valid_cols(int64_t in, int64_t out, int64_t stride, int64_t off, int64_t* lo, int64_t* hi) {
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = out - 1 - off >= 0 ? (out - 1 - off) / stride + 1 : 0;
    if (h > in) h = in;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Every tensor that has elements has data (x: n * c * in_vol, weights, bias: o, the output). */
static pn_status check_data(const pn_execute_args* args, const nd_geom* g, pn_string_out* msg) {
    int64_t counts[3] = {g->n * g->c * g->in_vol, g->c * g->og * g->kvol, g->o};
    for (uint32_t i = 0; i < args->num_inputs && i < 3; ++i) {
        if (args->inputs[i].data == NULL && counts[i] > 0) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution input %u has no data", i);
        }
    }
    if (args->outputs[0].data == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution output has no data");
    }
    return PN_OK;
}

/* ---- FORWARD 1-D and 2-D: the 2-D view ------------------------------------------------ */

static void lift_info(pn_tensor_info* dst, const pn_tensor_info* src, uint32_t spatial_rank) {
    *dst = *src;
    dst->struct_size = (uint32_t)sizeof(pn_tensor_info);
    dst->extension = NULL;
    if (spatial_rank == 1 && src->rank == 3) { /* [a, b, L] -> [a, b, 1, L] */
        dst->rank = 4;
        dst->dims[3] = src->dims[2];
        dst->dims[2] = 1;
    }
}

static pn_status forward_2d_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    int two = d->spatial_rank == 2;
    pn_convolution_2d_desc c2;
    memset(&c2, 0, sizeof(c2));
    c2.struct_size = (uint32_t)sizeof(c2);
    c2.layout = PN_LAYOUT_NCHW;
    c2.stride_h = two ? d->strides[0] : 1;
    c2.stride_w = d->strides[two ? 1 : 0];
    c2.pad_top = two ? d->pads_begin[0] : 0;
    c2.pad_bottom = two ? d->pads_end[0] : 0;
    c2.pad_left = d->pads_begin[two ? 1 : 0];
    c2.pad_right = d->pads_end[two ? 1 : 0];
    c2.dilation_h = two ? d->dilations[0] : 1;
    c2.dilation_w = d->dilations[two ? 1 : 0];
    c2.groups = d->groups;
    c2.flags = d->flags & PN_LAYER_FLAG_HAS_BIAS;
    c2.fused_activation = d->fused_activation;
    pn_tensor_info infos[4];
    for (uint32_t i = 0; i < layer->num_inputs && i < 3; ++i) {
        lift_info(&infos[i], &layer->inputs[i], i < 2 ? d->spatial_rank : 0);
    }
    lift_info(&infos[3], &layer->outputs[0], d->spatial_rank);
    pn_layer view = *layer;
    view.kind = PN_LAYER_CONVOLUTION_2D;
    view.descriptor = &c2;
    view.inputs = infos;
    view.outputs = &infos[3];
    return accel_conv2d_build(env, &view, packs, workload_out, message_out);
}

/* ---- FORWARD 3-D: GEMM over an implicit im2col -------------------------------------- */

typedef struct fwd_state {
    accel_env env;
    const gemm_arch* arch;
    nd_geom g;
    int has_bias, has_act;
    pn_activation_desc act;
    uint32_t num_inputs;
    const float* wpack;      /* groups packed A blocks (shared), or NULL: weights at run time */
    size_t wstride;
    int64_t kdim;            /* cg * kvol */
    int64_t* row_c;          /* per im2col row: its input channel's offset c * in_vol */
    int64_t (*row_d)[3];     /* per im2col row: its tap's offsets t * dilation per axis */
    size_t ws_floats;
} fwd_state;

static void fwd_release(void* vs) {
    fwd_state* s = (fwd_state*)vs;
    if (s != NULL) {
        free(s->row_c);
        free(s->row_d);
        free(s);
    }
}

typedef struct fwd_ctx {
    const fwd_state* s;
    const float* x;          /* the image's first channel of the group */
    const float* bias;       /* the group's first output channel, or NULL */
} fwd_ctx;

/* pack_b: im2col rows [p0, p0 + kc) x output positions [j0, j0 + nb) as nb / nr panels. */
static void fwd_pack_b(const void* vctx, int nr, int64_t j0, int64_t nb, int64_t p0, int64_t kc, float* dst) {
    const fwd_ctx* c = (const fwd_ctx*)vctx;
    const fwd_state* s = c->s;
    const nd_geom* g = &s->g;
    int64_t base[GEMM_NR_MAX][3];
    for (int64_t c0 = 0; c0 < nb; c0 += nr) {
        int cols = 0;
        for (int q = 0; q < nr; ++q) {
            int64_t j = j0 + c0 + q;
            if (j >= g->out_vol) {
                break;
            }
            int64_t oz = j / (g->out[1] * g->out[2]), oy = (j / g->out[2]) % g->out[1], ox = j % g->out[2];
            base[q][0] = oz * g->stride[0] - g->pad[0];
            base[q][1] = oy * g->stride[1] - g->pad[1];
            base[q][2] = ox * g->stride[2] - g->pad[2];
            cols = q + 1;
        }
        float* d = dst + c0 * kc;
        for (int64_t pp = 0; pp < kc; ++pp) {
            const int64_t* off = s->row_d[p0 + pp];
            const float* xc = c->x + s->row_c[p0 + pp];
            float* dp = d + pp * nr;
            for (int q = 0; q < cols; ++q) {
                int64_t iz = base[q][0] + off[0], iy = base[q][1] + off[1], ix = base[q][2] + off[2];
                int inside = iz >= 0 && iz < g->in[0] && iy >= 0 && iy < g->in[1] && ix >= 0 && ix < g->in[2];
                dp[q] = inside ? xc[(iz * g->in[1] + iy) * g->in[2] + ix] : 0.0f;
            }
            for (int q = cols; q < nr; ++q) dp[q] = 0.0f;
        }
    }
}

static void fwd_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb, int64_t nb) {
    const fwd_ctx* e = (const fwd_ctx*)vctx;
    (void)n0;
    for (int64_t i = 0; i < mb; ++i) {
        float* row = c + i * ldc;
        if (e->bias != NULL) {
            float b = e->bias[m0 + i];
            for (int64_t j = 0; j < nb; ++j) row[j] += b;
        }
        if (e->s->has_act) {
            accel_apply_activation(e->s->env.isa, &e->s->act, row, nb);
        }
    }
}

static pn_status fwd_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const fwd_state* s = (const fwd_state*)vs;
    const nd_geom* g = &s->g;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution expects %u inputs and 1 output",
                       s->num_inputs);
    }
    if (g->n * g->o * g->out_vol == 0) {
        return PN_OK;
    }
    pn_status st = check_data(args, g, msg);
    if (st != PN_OK) {
        return st;
    }
    if (args->workspace == NULL && s->ws_floats > 0) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution output or workspace missing");
    }
    const float* x = (const float*)args->inputs[0].data;
    const float* w = (const float*)args->inputs[1].data;
    const float* bias = s->has_bias ? (const float*)args->inputs[2].data : NULL;
    float* y = (float*)args->outputs[0].data;
    for (int64_t n = 0; n < g->n; ++n) {
        for (int64_t gr = 0; gr < g->groups; ++gr) {
            fwd_ctx ctx = {s, x + (n * g->c + gr * g->cg) * g->in_vol, bias != NULL ? bias + gr * g->og : NULL};
            gemm_operand a = {w + gr * g->og * s->kdim, s->kdim, 1,
                              s->wpack != NULL ? s->wpack + gr * s->wstride : NULL, NULL, NULL, NULL, NULL};
            gemm_operand b = {NULL, 0, 0, NULL, fwd_pack_b, &ctx, NULL, NULL};
            int epi = ctx.bias != NULL || s->has_act;
            gemm_run(&s->env, s->arch, g->og, g->out_vol, s->kdim, &a, &b, y + (n * g->o + gr * g->og) * g->out_vol,
                     g->out_vol, 0, (float*)args->workspace, epi ? fwd_epilogue : NULL, &ctx);
        }
    }
    return PN_OK;
}

static pn_status forward_3d_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    pn_status blocked = accel_conv3d_nchwc_build(env, layer, packs, workload_out, message_out);
    if (blocked != PN_OK || *workload_out != NULL) {
        return blocked;
    }
    fwd_state* s = (fwd_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    nd_geometry(&s->g, layer);
    const nd_geom* g = &s->g;
    s->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    s->has_act = accel_copy_activation(d->fused_activation, &s->act);
    s->num_inputs = layer->num_inputs;
    s->kdim = g->cg * g->kvol;
    size_t rows = (size_t)(s->kdim > 0 ? s->kdim : 1);
    s->row_c = (int64_t*)malloc(rows * sizeof(int64_t));
    s->row_d = (int64_t(*)[3])malloc(rows * sizeof(*s->row_d));
    if (s->row_c == NULL || s->row_d == NULL) {
        fwd_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    for (int64_t r = 0; r < s->kdim; ++r) { /* r = (ci, tz, ty, tx), the weights' own order */
        int64_t t = r % g->kvol;
        s->row_c[r] = (r / g->kvol) * g->in_vol;
        s->row_d[r][0] = (t / (g->k[1] * g->k[2])) * g->dil[0];
        s->row_d[r][1] = ((t / g->k[2]) % g->k[1]) * g->dil[1];
        s->row_d[r][2] = (t % g->k[2]) * g->dil[2];
    }
    const float* wc = layer->constant_data != NULL ? (const float*)layer->constant_data[1] : NULL;
    if (wc != NULL && g->og > 0 && s->kdim > 0) {
        s->wpack = accel_pack_gemm(packs, env->isa, 1, wc, g->og, s->kdim, s->kdim, 1, g->groups, g->og * s->kdim,
                                   &s->wstride);
        if (s->wpack == NULL) {
            fwd_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
        }
    }
    s->ws_floats = gemm_workspace_floats(s->arch, accel_threads_count(env->threads), g->og, g->out_vol, s->kdim,
                                         s->wpack != NULL, 0, 0);
    pn_workload* wl = pn_workload_new(s, fwd_execute, fwd_release, s->ws_floats * sizeof(float) + 64);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

/* ---- TRANSPOSED: GEMM + col2im ------------------------------------------------------------ */

/* Floats of col a chunk may fill (4 MiB), and the columns a chunk should have at least (so the
 * GEMM has whole micro-tile columns to work on). */
#define DECONV_COL_FLOATS ((int64_t)1 << 20)
#define DECONV_MIN_COLS 256

typedef struct deconv_state {
    accel_env env;
    const gemm_arch* arch;
    nd_geom g;
    int64_t m;               /* og * kvol: rows of col */
    int64_t chunk_rows;      /* input rows (of in[2] columns) per chunk */
    int has_bias, has_act;
    pn_activation_desc act;
    uint32_t num_inputs;
    const float* wpack;      /* groups packed A = W_g^T blocks (shared), or NULL */
    size_t wstride;
    size_t gemm_ws;          /* floats of the GEMM's workspace; col follows it */
    int scatter;             /* no two (input, tap) pairs reach one output position (dilation 1,
                                kernel <= stride on every axis): the GEMM's epilogue adds the bias,
                                applies the activation and stores each finished block of col
                                straight into the output, while it is in cache (no col2im pass) */
    int covered;             /* scatter, and every output position is reached (kernel == stride,
                                no cropping at the start, out == in * stride): nothing else to
                                write; else the planes are first filled with act(bias) */
} deconv_state;

static void deconv_release(void* vs) { free(vs); }

typedef struct col2im_ctx {
    const deconv_state* s;
    const float* col;        /* [m][cols] of this chunk */
    int64_t row0, rows;      /* the chunk's input rows: row = z * in[1] + y */
    float* y;                /* the group's first output plane of this image */
    const float* bias;       /* the group's first output channel, or NULL */
    int first, last;         /* the image's first chunk (planes start at the bias), last (activation) */
} col2im_ctx;

/* Output planes [begin, end) of the group: the chunk's columns added to their positions. */
static void col2im_range(void* vctx, int64_t begin, int64_t end) {
    const col2im_ctx* c = (const col2im_ctx*)vctx;
    const deconv_state* s = c->s;
    const nd_geom* g = &s->g;
    const int64_t cols = c->rows * g->in[2];
    for (int64_t o = begin; o < end; ++o) {
        float* plane = c->y + o * g->out_vol;
        if (c->first) {
            float b = c->bias != NULL ? c->bias[o] : 0.0f;
            for (int64_t i = 0; i < g->out_vol; ++i) plane[i] = b;
        }
        for (int64_t t = 0; t < g->kvol; ++t) {
            int64_t tz = t / (g->k[1] * g->k[2]), ty = (t / g->k[2]) % g->k[1], tx = t % g->k[2];
            int64_t offx = tx * g->dil[2] - g->pad[2], lo, hi;
            valid_cols(g->in[2], g->out[2], g->stride[2], offx, &lo, &hi);
            if (lo >= hi) {
                continue;
            }
            const float* cr = c->col + (o * g->kvol + t) * cols;
            for (int64_t rr = 0; rr < c->rows; ++rr) {
                int64_t jr = c->row0 + rr, jz = jr / g->in[1], jy = jr % g->in[1];
                int64_t oz = jz * g->stride[0] + tz * g->dil[0] - g->pad[0];
                int64_t oy = jy * g->stride[1] + ty * g->dil[1] - g->pad[1];
                if (oz < 0 || oz >= g->out[0] || oy < 0 || oy >= g->out[1]) {
                    continue;
                }
                float* orow = plane + (oz * g->out[1] + oy) * g->out[2] + offx;
                const float* src = cr + rr * g->in[2];
                if (g->stride[2] == 1) {
                    for (int64_t j = lo; j < hi; ++j) orow[j] += src[j];
                } else if (g->stride[2] == 2) {
                    for (int64_t j = lo; j < hi; ++j) orow[2 * j] += src[j];
                } else {
                    for (int64_t j = lo; j < hi; ++j) orow[j * g->stride[2]] += src[j];
                }
            }
        }
        if (c->last && s->has_act) {
            accel_apply_activation(s->env.isa, &s->act, plane, g->out_vol);
        }
    }
}

/* The scatter epilogue (deconv_state.scatter): block rows [m0, m0 + mb) of col, columns
 * [n0, n0 + nb) of the chunk that starts at input position q0 (whole input rows). */
typedef struct scatter_ctx {
    const deconv_state* s;
    float* y;                /* the group's first output plane of this image */
    const float* bias;       /* the group's first output channel, or NULL */
    int64_t q0;
} scatter_ctx;

/* The rows tx = 0 .. k - 1 of one (o, tz, ty) of a block, kernel == stride along x and no
 * cropping along x: together they fill whole output row spans, interleaved (y[jx * k + tx] =
 * row tx [jx] + bias), which are then contiguous for the activation. */
static void scatter_group(const scatter_ctx* e, const float* c, int64_t ldc, int64_t m, int64_t n0, int64_t nb) {
    const deconv_state* s = e->s;
    const nd_geom* g = &s->g;
    const int64_t k = g->k[2], o = m / g->kvol, t = m % g->kvol;
    const int64_t tz = t / (g->k[1] * k), ty = (t / k) % g->k[1];
    const float b = e->bias != NULL ? e->bias[o] : 0.0f;
    float* plane = e->y + o * g->out_vol;
    for (int64_t j = 0; j < nb;) { /* one run per input row */
        int64_t q = e->q0 + n0 + j, jr = q / g->in[2], jx0 = q % g->in[2];
        int64_t run = g->in[2] - jx0 < nb - j ? g->in[2] - jx0 : nb - j;
        int64_t jz = jr / g->in[1], jy = jr % g->in[1];
        int64_t oz = jz * g->stride[0] + tz - g->pad[0], oy = jy * g->stride[1] + ty - g->pad[1];
        if (oz >= 0 && oz < g->out[0] && oy >= 0 && oy < g->out[1]) {
            float* out = plane + (oz * g->out[1] + oy) * g->out[2] + jx0 * k;
            const float* r0 = c + j;
            if (k == 2) {
                const float* r1 = r0 + ldc;
                for (int64_t x = 0; x < run; ++x) {
                    out[2 * x] = r0[x] + b;
                    out[2 * x + 1] = r1[x] + b;
                }
            } else {
                for (int64_t tx = 0; tx < k; ++tx) {
                    const float* r = r0 + tx * ldc;
                    for (int64_t x = 0; x < run; ++x) out[x * k + tx] = r[x] + b;
                }
            }
            if (s->has_act) {
                accel_apply_activation(s->env.isa, &s->act, out, run * k);
            }
        }
        j += run;
    }
}

static void scatter_epilogue(void* vctx, float* c, int64_t ldc, int64_t m0, int64_t n0, int64_t mb, int64_t nb) {
    const scatter_ctx* e = (const scatter_ctx*)vctx;
    const deconv_state* s = e->s;
    const nd_geom* g = &s->g;
    const int whole_x = g->k[2] == g->stride[2] && g->pad[2] == 0 && g->out[2] >= g->in[2] * g->stride[2];
    for (int64_t i = 0; i < mb;) {
        int64_t m = m0 + i, o = m / g->kvol, t = m % g->kvol;
        int64_t tz = t / (g->k[1] * g->k[2]), ty = (t / g->k[2]) % g->k[1], tx = t % g->k[2];
        if (whole_x && tx == 0 && i + g->k[2] <= mb) {
            scatter_group(e, c + i * ldc, ldc, m, n0, nb);
            i += g->k[2];
            continue;
        }
        float* row = c + i * ldc;
        ++i;
        if (e->bias != NULL) {
            float b = e->bias[o];
            for (int64_t j = 0; j < nb; ++j) row[j] += b;
        }
        if (s->has_act) {
            accel_apply_activation(s->env.isa, &s->act, row, nb);
        }
        float* plane = e->y + o * g->out_vol;
        int64_t offx = tx - g->pad[2];
        for (int64_t j = 0; j < nb;) { /* one run per input row */
            int64_t q = e->q0 + n0 + j, jr = q / g->in[2], jx0 = q % g->in[2];
            int64_t run = g->in[2] - jx0 < nb - j ? g->in[2] - jx0 : nb - j;
            int64_t jz = jr / g->in[1], jy = jr % g->in[1];
            int64_t oz = jz * g->stride[0] + tz - g->pad[0], oy = jy * g->stride[1] + ty - g->pad[1];
            if (oz >= 0 && oz < g->out[0] && oy >= 0 && oy < g->out[1]) {
                int64_t lo, hi;
                valid_cols(g->in[2], g->out[2], g->stride[2], offx, &lo, &hi);
                lo = lo > jx0 ? lo : jx0;
                hi = hi < jx0 + run ? hi : jx0 + run;
                float* orow = plane + (oz * g->out[1] + oy) * g->out[2] + offx;
                const float* src = row + j - jx0;
                for (int64_t x = lo; x < hi; ++x) orow[x * g->stride[2]] = src[x];
            }
            j += run;
        }
    }
}

/* Planes [begin, end) of the group filled with act(bias) (the positions no tap reaches). */
static void fill_range(void* vctx, int64_t begin, int64_t end) {
    const scatter_ctx* e = (const scatter_ctx*)vctx;
    const deconv_state* s = e->s;
    for (int64_t o = begin; o < end; ++o) {
        float* plane = e->y + o * s->g.out_vol;
        float b = e->bias != NULL ? e->bias[o] : 0.0f;
        for (int64_t i = 0; i < s->g.out_vol; ++i) plane[i] = b;
        if (s->has_act) {
            accel_apply_activation(s->env.isa, &s->act, plane, s->g.out_vol);
        }
    }
}

static pn_status deconv_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const deconv_state* s = (const deconv_state*)vs;
    const nd_geom* g = &s->g;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution expects %u inputs and 1 output",
                       s->num_inputs);
    }
    if (g->n * g->o * g->out_vol == 0) {
        return PN_OK;
    }
    pn_status st = check_data(args, g, msg);
    if (st != PN_OK) {
        return st;
    }
    if (args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Convolution output or workspace missing");
    }
    const float* x = (const float*)args->inputs[0].data;
    const float* w = (const float*)args->inputs[1].data;
    const float* bias = s->has_bias ? (const float*)args->inputs[2].data : NULL;
    float* y = (float*)args->outputs[0].data;
    float* gws = (float*)args->workspace;
    float* col = accel_align64(gws + s->gemm_ws);
    const int64_t in_rows = g->in[0] * g->in[1];
    int64_t grain = g->out_vol * g->kvol >= 16384 ? 1 : 16384 / (g->out_vol * g->kvol + 1) + 1;
    for (int64_t n = 0; n < g->n; ++n) {
        for (int64_t gr = 0; gr < g->groups; ++gr) {
            const float* xg = x + (n * g->c + gr * g->cg) * g->in_vol;
            col2im_ctx c = {s, col, 0, 0, y + (n * g->o + gr * g->og) * g->out_vol,
                            bias != NULL ? bias + gr * g->og : NULL, 1, 0};
            scatter_ctx sc = {s, c.y, c.bias, 0};
            if (s->scatter && (!s->covered || in_rows * g->in[2] == 0)) {
                accel_parallel_for_grain(s->env.threads, g->og, grain, fill_range, &sc);
            }
            for (int64_t r0 = 0; r0 < in_rows || (r0 == 0 && in_rows == 0); r0 += s->chunk_rows) {
                int64_t rows = in_rows - r0 < s->chunk_rows ? in_rows - r0 : s->chunk_rows;
                int64_t cols = rows * g->in[2];
                /* col = W_g^T [m, cg] x X_g[:, chunk] */
                gemm_operand a = {w + gr * g->cg * s->m, 1, s->m,
                                  s->wpack != NULL ? s->wpack + gr * s->wstride : NULL, NULL, NULL, NULL, NULL};
                gemm_operand b = {xg + r0 * g->in[2], g->in_vol, 1, NULL, NULL, NULL, NULL, NULL};
                if (s->scatter) {
                    sc.q0 = r0 * g->in[2];
                    gemm_run(&s->env, s->arch, s->m, cols, g->cg, &a, &b, col, cols, 0, gws, scatter_epilogue, &sc);
                    if (in_rows == 0) {
                        break;
                    }
                    continue;
                }
                gemm_run(&s->env, s->arch, s->m, cols, g->cg, &a, &b, col, cols, 0, gws, NULL, NULL);
                c.row0 = r0;
                c.rows = rows;
                c.last = r0 + s->chunk_rows >= in_rows;
                accel_parallel_for_grain(s->env.threads, g->og, grain, col2im_range, &c);
                c.first = 0;
                if (in_rows == 0) {
                    break;
                }
            }
        }
    }
    return PN_OK;
}

static pn_status transposed_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    deconv_state* s = (deconv_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    nd_geometry(&s->g, layer);
    const nd_geom* g = &s->g;
    s->m = g->og * g->kvol;
    s->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    s->has_act = accel_copy_activation(d->fused_activation, &s->act);
    s->num_inputs = layer->num_inputs;
    int64_t in_rows = g->in[0] * g->in[1], row_floats = s->m * g->in[2];
    int64_t by_size = row_floats > 0 ? DECONV_COL_FLOATS / row_floats : in_rows;
    int64_t by_cols = g->in[2] > 0 ? (DECONV_MIN_COLS + g->in[2] - 1) / g->in[2] : in_rows;
    s->chunk_rows = by_size > by_cols ? by_size : by_cols;
    s->scatter = 1;
    s->covered = 1;
    for (int a = 0; a < 3; ++a) {
        s->scatter &= g->dil[a] == 1 && g->k[a] <= g->stride[a];
        s->covered &= g->k[a] == g->stride[a] && g->pad[a] == 0 && g->out[a] == g->in[a] * g->stride[a];
    }
    s->covered &= s->scatter;
    if (s->chunk_rows > in_rows) s->chunk_rows = in_rows;
    if (s->chunk_rows < 1) s->chunk_rows = 1;
    const float* wc = layer->constant_data != NULL ? (const float*)layer->constant_data[1] : NULL;
    if (wc != NULL && s->m > 0 && g->cg > 0) {
        /* A_g[m][c] = W[g * cg + c][m]: W's group block [cg][m] read transposed */
        s->wpack = accel_pack_gemm(packs, env->isa, 1, wc, s->m, g->cg, 1, s->m, g->groups, g->cg * s->m,
                                   &s->wstride);
        if (s->wpack == NULL) {
            deconv_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
        }
    }
    int64_t cols = s->chunk_rows * g->in[2];
    s->gemm_ws = gemm_workspace_floats(s->arch, accel_threads_count(env->threads), s->m, cols, g->cg,
                                       s->wpack != NULL, 0, 0);
    size_t bytes = (s->gemm_ws + 16 + (size_t)(s->m * cols)) * sizeof(float) + 64;
    pn_workload* wl = pn_workload_new(s, deconv_execute, deconv_release, bytes);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

/* ---- the kind ------------------------------------------------------------------------------- */

static pn_status convolution_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    if (d->op == PN_CONVOLUTION_TRANSPOSED) {
        return transposed_build(env, layer, packs, workload_out, message_out);
    }
    return d->spatial_rank <= 2 ? forward_2d_build(env, layer, packs, workload_out, message_out)
                                : forward_3d_build(env, layer, packs, workload_out, message_out);
}

pn_status accel_convolution_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                   pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, convolution_build, workload_out, message_out);
}
