/* CpuAcc direct NCHW16c convolution workload: layout conversions, weight prepacking,
 * threading (the kernel is in conv_nchwc_avx512.c; see conv_nchwc.h). */
#include "conv_nchwc.h"

#include <stdlib.h>
#include <string.h>

#if defined(ACCEL_HAVE_X86_KERNELS)

#define B NCHWC_BLOCK

typedef struct nchwc_state {
    accel_env env;
    nchwc_geom g;
    int64_t n, c, h, w, o;   /* NCHW sizes */
    int64_t pt, pl;          /* padding before the image inside the padded input */
    int has_bias, has_addend, has_act;
    pn_activation_desc act;
    uint32_t num_inputs;
    float* wb;               /* [ocb][cb][kh][kw][16][16], 64-byte aligned, inside wb_raw */
    float* bias;             /* ocb * 16 (zeros without a bias), 64-byte aligned, inside wb_raw */
    float* wb_raw;           /* the allocation holding both */
    size_t x_floats, y_floats; /* per image: padded blocked input, blocked output */
} nchwc_state;

static int64_t blocks(int64_t v) { return (v + B - 1) / B; }

static float* align64(float* p) { return (float*)(((uintptr_t)p + 63u) & ~(uintptr_t)63u); }

static void nchwc_release(void* vs) {
    nchwc_state* s = (nchwc_state*)vs;
    if (s != NULL) {
        free(s->wb_raw);
        free(s);
    }
}

/* ---- execute ----------------------------------------------------------------------- */

typedef struct nchwc_run {
    const nchwc_state* s;
    const float* x;      /* NCHW input */
    const float* addend; /* NCHW, or NULL */
    float* y;            /* NCHW output */
    float* xb;           /* N padded blocked images */
    float* yb;           /* N blocked outputs */
} nchwc_run;

/* Rows [begin, end) of the padded blocked input, row r = (image, block, padded row). */
static void convert_in_range(void* vctx, int64_t begin, int64_t end) {
    const nchwc_run* r = (const nchwc_run*)vctx;
    const nchwc_state* s = r->s;
    const nchwc_geom* g = &s->g;
    for (int64_t row = begin; row < end; ++row) {
        int64_t iy = row % g->ihp, cb = (row / g->ihp) % g->cb, n = row / (g->ihp * g->cb);
        float* dst = r->xb + n * s->x_floats + (cb * g->ihp + iy) * g->iwp * B;
        int64_t y = iy - s->pt;
        if (y < 0 || y >= s->h) {
            memset(dst, 0, (size_t)(g->iwp * B) * sizeof(float));
            continue;
        }
        memset(dst, 0, (size_t)(s->pl * B) * sizeof(float));
        int64_t right = g->iwp - s->pl - s->w;
        memset(dst + (s->pl + s->w) * B, 0, (size_t)(right * B) * sizeof(float));
        float* d = dst + s->pl * B;
        int64_t channels = s->c - cb * B < B ? s->c - cb * B : B;
        const float* src = r->x + ((n * s->c + cb * B) * s->h + y) * s->w;
        for (int64_t ci = 0; ci < channels; ++ci) {
            const float* sp = src + ci * s->h * s->w;
            for (int64_t x = 0; x < s->w; ++x) d[x * B + ci] = sp[x];
        }
        for (int64_t ci = channels; ci < B; ++ci) {
            for (int64_t x = 0; x < s->w; ++x) d[x * B + ci] = 0.0f;
        }
    }
}

/* Jobs [begin, end), job = (image, output block pair, output row). */
static void compute_range(void* vctx, int64_t begin, int64_t end) {
    const nchwc_run* r = (const nchwc_run*)vctx;
    const nchwc_state* s = r->s;
    const nchwc_geom* g = &s->g;
    int64_t pairs = (g->ocb + 1) / 2;
    for (int64_t job = begin; job < end; ++job) {
        int64_t oy = job % g->oh, pair = (job / g->oh) % pairs, n = job / (g->oh * pairs);
        int64_t ob = pair * 2;
        int nb = g->ocb - ob >= 2 ? 2 : 1;
        accel_nchwc_conv_row_avx512(g, r->xb + n * s->x_floats, s->wb, s->bias,
                                    r->yb + n * s->y_floats, ob, nb, oy);
    }
}

/* Rows [begin, end) of the blocked output, row = (image, output block, output row): written
 * to the NCHW output with the addend and the activation applied. */
static void convert_out_range(void* vctx, int64_t begin, int64_t end) {
    const nchwc_run* r = (const nchwc_run*)vctx;
    const nchwc_state* s = r->s;
    const nchwc_geom* g = &s->g;
    int64_t plane = g->oh * g->ow;
    for (int64_t row = begin; row < end; ++row) {
        int64_t oy = row % g->oh, ob = (row / g->oh) % g->ocb, n = row / (g->oh * g->ocb);
        const float* src = r->yb + n * s->y_floats + (ob * g->oh + oy) * g->ow * B;
        int64_t channels = s->o - ob * B < B ? s->o - ob * B : B;
        for (int64_t co = 0; co < channels; ++co) {
            int64_t off = ((n * s->o + ob * B + co) * g->oh + oy) * g->ow;
            float* d = r->y + off;
            for (int64_t x = 0; x < g->ow; ++x) d[x] = src[x * B + co];
            if (r->addend != NULL) {
                const float* a = r->addend + off;
                for (int64_t x = 0; x < g->ow; ++x) d[x] += a[x];
            }
            if (s->has_act) {
                accel_apply_activation(s->env.isa, &s->act, d, g->ow);
            }
        }
        (void)plane;
    }
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
    float* xb = align64((float*)args->workspace);
    nchwc_run r = {s, (const float*)args->inputs[0].data, addend, (float*)args->outputs[0].data, xb,
                   align64(xb + s->n * s->x_floats)};
    const nchwc_geom* g = &s->g;
    accel_parallel_for_grain(s->env.pool, s->n * g->cb * g->ihp, 4, convert_in_range, &r);
    accel_parallel_for(s->env.pool, s->n * ((g->ocb + 1) / 2) * g->oh, compute_range, &r);
    accel_parallel_for_grain(s->env.pool, s->n * g->ocb * g->oh, 4, convert_out_range, &r);
    return PN_OK;
}

/* ---- create ------------------------------------------------------------------------ */

/* True when 16-wide blocks of `v` channels waste at most a quarter of the work. */
static int blocks_pay(int64_t v) { return v >= B && blocks(v) * B * 4 <= v * 5; }

pn_status accel_conv_nchwc_create(const accel_env* env, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    *workload_out = NULL;
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    if (env->isa != ACCEL_ISA_AVX512 || d->layout != PN_LAYOUT_NCHW || d->groups != 1 ||
        layer->constant_data == NULL || layer->constant_data[1] == NULL) {
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
    if (!blocks_pay(c) || !blocks_pay(o) || n * oh * ow * kh * kw == 0) {
        return PN_OK;
    }
    nchwc_state* s = (nchwc_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->n = n;
    s->c = c;
    s->h = h;
    s->w = w;
    s->o = o;
    s->pt = d->pad_top;
    s->pl = d->pad_left;
    nchwc_geom* g = &s->g;
    g->cb = blocks(c);
    g->ocb = blocks(o);
    g->oh = oh;
    g->ow = ow;
    g->kh = kh;
    g->kw = kw;
    g->sh = d->stride_h;
    g->sw = d->stride_w;
    g->dh = d->dilation_h;
    g->dw = d->dilation_w;
    /* The padded input holds every tap of every output (at least the padded image). */
    int64_t need_h = (oh - 1) * g->sh + (kh - 1) * g->dh + 1, need_w = (ow - 1) * g->sw + (kw - 1) * g->dw + 1;
    g->ihp = h + d->pad_top + d->pad_bottom > need_h ? h + d->pad_top + d->pad_bottom : need_h;
    g->iwp = w + d->pad_left + d->pad_right > need_w ? w + d->pad_left + d->pad_right : need_w;
    s->x_floats = (size_t)(g->cb * g->ihp * g->iwp * B);
    s->y_floats = (size_t)(g->ocb * oh * ow * B);
    s->has_bias = has_bias;
    s->has_addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0;
    if (d->fused_activation != NULL && d->fused_activation->kind != PN_ACTIVATION_INVALID) {
        s->has_act = 1;
        s->act = *d->fused_activation;
        s->act.struct_size = sizeof(s->act);
    }
    s->num_inputs = layer->num_inputs;
    size_t wfloats = (size_t)(g->ocb * g->cb * kh * kw * B * B);
    s->wb_raw = (float*)malloc((wfloats + (size_t)(g->ocb * B) + 32) * sizeof(float));
    if (s->wb_raw == NULL) {
        nchwc_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing weights");
    }
    s->wb = align64(s->wb_raw);
    s->bias = align64(s->wb + wfloats);
    /* wb[ob][cb][ky][kx][ci][co] = W[ob*16 + co][cb*16 + ci][ky][kx], zero past O and C. */
    const float* wsrc = (const float*)layer->constant_data[1];
    float* dst = s->wb;
    for (int64_t ob = 0; ob < g->ocb; ++ob)
        for (int64_t cb = 0; cb < g->cb; ++cb)
            for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx)
                    for (int64_t ci = 0; ci < B; ++ci)
                        for (int64_t co = 0; co < B; ++co) {
                            int64_t oc = ob * B + co, ic = cb * B + ci;
                            *dst++ = oc < o && ic < c ? wsrc[((oc * c + ic) * kh + ky) * kw + kx] : 0.0f;
                        }
    const float* bsrc = has_bias ? (const float*)layer->constant_data[2] : NULL;
    for (int64_t oc = 0; oc < g->ocb * B; ++oc) {
        s->bias[oc] = bsrc != NULL && oc < o ? bsrc[oc] : 0.0f;
    }
    size_t ws = ((size_t)n * (s->x_floats + s->y_floats) + 32) * sizeof(float);
    pn_workload* wl = pn_workload_new(s, nchwc_execute, nchwc_release, ws);
    if (wl == NULL) {
        nchwc_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

#else

pn_status accel_conv_nchwc_create(const accel_env* env, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    (void)env;
    (void)layer;
    (void)message_out;
    *workload_out = NULL; /* no AVX-512 kernel on this architecture */
    return PN_OK;
}

#endif
