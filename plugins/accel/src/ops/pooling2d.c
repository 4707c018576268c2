/* POOLING_2D: MAX, AVERAGE (EXCLUDE/INCLUDE) and LP, NCHW or NHWC; output rows split over
 * the pool. NCHW: the pool_nchw kernel (row buffer of stride phases, vectors of output
 * columns); NHWC vectorizes over channels. Global MAX/AVERAGE (the window is the whole
 * unpadded plane) is a reduction: per plane (NCHW) or per block of channels (NHWC).
 * MAX also on int8 and uint8 tensors (ONNX MaxPool since opset 12: a quantized network's
 * pooling), exactly: see int_pool_rows below. */
#include "ops/create.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Channels per NHWC global-pooling item. */
#define GLOBAL_NHWC_BLOCK 256
/* Elements below which one work item is not worth waking a thread. */
#define POOL_GRAIN_WORK 65536

typedef struct pool_job {
    const accel_op* op;
    const accel_pooling_params* pp;
    const float* x;
    float* y;
    int64_t x_image; /* elements per image (NHWC) or per plane (NCHW) */
    int64_t y_image;
} pool_job;

static void pool_range(void* raw, int64_t u0, int64_t u1) {
    const pool_job* j = (const pool_job*)raw;
    const int64_t oh = j->pp->oh;
    const int nhwc = j->op->desc.pool.layout == PN_LAYOUT_NHWC;
    for (int64_t u = u0; u < u1;) {
        int64_t image = u / oh, oy = u % oh;
        int64_t oy_end = oy + (u1 - u);
        oy_end = oy_end > oh ? oh : oy_end;
        const float* x = j->x + image * j->x_image;
        float* y = j->y + image * j->y_image;
        if (nhwc) {
            j->op->k->pool_nhwc(j->pp, x, y, oy, oy_end);
        } else {
            j->op->k->pool_nchw(j->pp, x, y, oy, oy_end);
        }
        u += oy_end - oy;
    }
}

/* Global pooling, NCHW: y[plane] = max (NaN wins) or mean of the plane, planes [u0, u1). */
static void global_nchw_range(void* raw, int64_t u0, int64_t u1) {
    const pool_job* j = (const pool_job*)raw;
    const int64_t hw = j->x_image;
    for (int64_t u = u0; u < u1; ++u) {
        const float* x = j->x + u * hw;
        j->y[u] = j->pp->kind == PN_POOLING_MAX ? j->op->k->max_row(x, hw)
                                                : j->op->k->sum_row(x, hw) / (float)hw;
    }
}

/* Global pooling, NHWC: items (image, block of GLOBAL_NHWC_BLOCK channels); the output
 * channels accumulate pixel by pixel (max with NaN winning, or sum then times 1 / (h * w)). */
static void global_nhwc_range(void* raw, int64_t u0, int64_t u1) {
    const pool_job* j = (const pool_job*)raw;
    const accel_kernels* k = j->op->k;
    const int64_t c = j->pp->c, hw = j->pp->ih * j->pp->iw;
    const int64_t blocks = (c + GLOBAL_NHWC_BLOCK - 1) / GLOBAL_NHWC_BLOCK;
    const int max = j->pp->kind == PN_POOLING_MAX;
    for (int64_t u = u0; u < u1; ++u) {
        int64_t n = u / blocks, c0 = (u % blocks) * GLOBAL_NHWC_BLOCK;
        int64_t len = c - c0 < GLOBAL_NHWC_BLOCK ? c - c0 : GLOBAL_NHWC_BLOCK;
        const float* x = j->x + n * j->x_image + c0;
        float* y = j->y + n * c + c0;
        for (int64_t i = 0; i < len; ++i) {
            y[i] = max ? -INFINITY : 0.0f;
        }
        for (int64_t p = 0; p < hw; ++p) {
            if (max) {
                k->max_cols(y, x + p * c, len);
            } else {
                k->binary_row(PN_BINARY_ADD, y, 1, x + p * c, 1, y, len);
            }
        }
        if (!max) {
            k->scale(y, 1.0f / (float)hw, len);
        }
    }
}

/* ---- MAX over int8 / uint8 --------------------------------------------------------------- */

/* Elements of the row buffer on the stack; wider rows take the per-tap path. */
#define INT_POOL_ROW_MAX 16384

/* Output rows [oy0, oy1) of one plane (NCHW, c = 1) or image (NHWC, c channels per pixel) of
 * type T: the valid rows of each window max'ed into a row buffer (contiguous: vector maxima),
 * then each output pixel the max of its valid columns in it (INT_POOL_COLUMNS); a row wider than
 * the buffer gives its columns to the output row by row. Taps in the padding are never
 * candidates; a window with none (all padding) gives the type's minimum. */
#define INT_POOL_ROWS(NAME, T, T_MIN)                                                                   \
    static void NAME(const accel_pooling_params* pp, int64_t c, const T* x, T* y, int64_t oy0,        \
                     int64_t oy1) {                                                                     \
        T row[INT_POOL_ROW_MAX];                                                                        \
        const int64_t iwc = pp->iw * c, owc = pp->ow * c;                                               \
        const int buffered = iwc <= INT_POOL_ROW_MAX;                                                   \
        for (int64_t oy = oy0; oy < oy1; ++oy) {                                                        \
            T* out = y + oy * owc;                                                                      \
            for (int64_t i = 0; i < owc; ++i) {                                                         \
                out[i] = T_MIN;                                                                         \
            }                                                                                           \
            int64_t rows = 0;                                                                           \
            for (int64_t ky = 0; ky < pp->kh; ++ky) {                                                   \
                const int64_t iy = oy * pp->sh - pp->pt + ky * pp->dh;                                  \
                if (iy < 0 || iy >= pp->ih) {                                                           \
                    continue;                                                                           \
                }                                                                                       \
                const T* src = x + iy * iwc;                                                            \
                if (buffered) { /* the window's rows max'ed into row, its columns taken once below */ \
                    if (rows++ == 0) {                                                                  \
                        memcpy(row, src, (size_t)iwc * sizeof(T));                                      \
                    } else {                                                                            \
                        for (int64_t i = 0; i < iwc; ++i) {                                             \
                            row[i] = src[i] > row[i] ? src[i] : row[i];                                 \
                        }                                                                               \
                    }                                                                                   \
                    continue;                                                                           \
                }                                                                                       \
                int_pool_columns_##NAME(pp, c, src, out); /* a row too wide for the buffer */           \
            }                                                                                           \
            if (buffered && rows > 0) {                                                                 \
                int_pool_columns_##NAME(pp, c, row, out);                                               \
            }                                                                                           \
        }                                                                                               \
    }

/* out (ow pixels of c) = max(out, the window columns of each output pixel in src, a row of iw
 * pixels): per column tap, over the output columns whose tap is inside the row (no branch in
 * the inner loops). */
#define INT_POOL_COLUMNS(NAME, T)                                                                       \
    static void int_pool_columns_##NAME(const accel_pooling_params* pp, int64_t c, const T* src, T* out) { \
        for (int64_t kx = 0; kx < pp->kw; ++kx) {                                                       \
            const int64_t off = kx * pp->dw - pp->pl; /* ix = ox * sw + off */                          \
            int64_t lo = off >= 0 ? 0 : (-off + pp->sw - 1) / pp->sw;                                   \
            int64_t hi = pp->iw - 1 - off < 0 ? 0 : (pp->iw - 1 - off) / pp->sw + 1;                    \
            hi = hi < pp->ow ? hi : pp->ow;                                                             \
            if (c == 1) {                                                                               \
                for (int64_t ox = lo; ox < hi; ++ox) {                                                  \
                    const T v = src[ox * pp->sw + off];                                                 \
                    out[ox] = v > out[ox] ? v : out[ox];                                                \
                }                                                                                       \
                continue;                                                                               \
            }                                                                                           \
            for (int64_t ox = lo; ox < hi; ++ox) {                                                      \
                const T* s = src + (ox * pp->sw + off) * c;                                             \
                T* o = out + ox * c;                                                                    \
                for (int64_t ch = 0; ch < c; ++ch) {                                                    \
                    o[ch] = s[ch] > o[ch] ? s[ch] : o[ch];                                              \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }

INT_POOL_COLUMNS(int_pool_rows_u8, uint8_t)
INT_POOL_COLUMNS(int_pool_rows_s8, int8_t)
INT_POOL_ROWS(int_pool_rows_u8, uint8_t, 0)
INT_POOL_ROWS(int_pool_rows_s8, int8_t, INT8_MIN)

typedef struct int_pool_job {
    const accel_pooling_params* pp;
    const void* x;
    void* y;
    int64_t x_image, y_image; /* elements per plane (NCHW) or image (NHWC) */
    int64_t c;                /* elements per pixel: 1 (NCHW) or the channels (NHWC) */
    int is_signed;
} int_pool_job;

static void int_pool_range(void* raw, int64_t u0, int64_t u1) {
    const int_pool_job* j = (const int_pool_job*)raw;
    const int64_t oh = j->pp->oh;
    for (int64_t u = u0; u < u1;) {
        const int64_t image = u / oh, oy = u % oh;
        const int64_t oy_end = oy + (u1 - u) < oh ? oy + (u1 - u) : oh;
        if (j->is_signed) {
            int_pool_rows_s8(j->pp, j->c, (const int8_t*)j->x + image * j->x_image,
                             (int8_t*)j->y + image * j->y_image, oy, oy_end);
        } else {
            int_pool_rows_u8(j->pp, j->c, (const uint8_t*)j->x + image * j->x_image,
                             (uint8_t*)j->y + image * j->y_image, oy, oy_end);
        }
        u += oy_end - oy;
    }
}

static void int_pooling2d_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const accel_pooling_params* pp = (const accel_pooling_params*)op->priv;
    const int nhwc = op->desc.pool.layout == PN_LAYOUT_NHWC;
    int64_t xn[4], yn[4];
    pn_layout_nchw(&op->inputs[0], op->desc.pool.layout, xn);
    pn_layout_nchw(&op->outputs[0], op->desc.pool.layout, yn);
    int_pool_job j = {pp, in[0], out[0], xn[2] * xn[3], yn[2] * yn[3], 1,
                      op->inputs[0].dtype == PN_DTYPE_INT8};
    int64_t images = xn[0] * xn[1];
    if (nhwc) {
        j.c = xn[1];
        j.x_image *= xn[1];
        j.y_image *= yn[1];
        images = xn[0];
    }
    const int64_t work_per_row = pp->ow * j.c * (pp->kh + pp->kw) + 1;
    accel_parallel_for_grain(op->env.threads, images * pp->oh, POOL_GRAIN_WORK / work_per_row, int_pool_range, &j);
}

/* Whether the layer pools MAX or AVERAGE over each whole unpadded plane. */
static int is_global(const accel_pooling_params* pp) {
    return (pp->kind == PN_POOLING_MAX || pp->kind == PN_POOLING_AVERAGE) && pp->oh == 1 &&
           pp->ow == 1 && pp->kh == pp->ih && pp->kw == pp->iw && pp->pt == 0 && pp->pl == 0 &&
           pp->pb == 0 && pp->pr == 0 && (pp->kh == 1 || pp->dh == 1) &&
           (pp->kw == 1 || pp->dw == 1);
}

static void pooling2d_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const accel_pooling_params* pp = (const accel_pooling_params*)op->priv;
    int64_t xn[4], yn[4];
    pn_layout_nchw(&op->inputs[0], op->desc.pool.layout, xn);
    pn_layout_nchw(&op->outputs[0], op->desc.pool.layout, yn);
    pool_job j = {op, pp, in[0], out[0], 0, 0};
    int64_t images;
    if (is_global(pp)) {
        int64_t hw = xn[2] * xn[3];
        int64_t grain = POOL_GRAIN_WORK / (hw > 0 ? hw : 1);
        if (op->desc.pool.layout == PN_LAYOUT_NHWC) {
            j.x_image = hw * xn[1];
            int64_t blocks = (xn[1] + GLOBAL_NHWC_BLOCK - 1) / GLOBAL_NHWC_BLOCK;
            grain = POOL_GRAIN_WORK / (hw * GLOBAL_NHWC_BLOCK > 0 ? hw * GLOBAL_NHWC_BLOCK : 1);
            accel_parallel_for_grain(op->env.threads, xn[0] * blocks, grain, global_nhwc_range, &j);
        } else {
            j.x_image = hw;
            accel_parallel_for_grain(op->env.threads, xn[0] * xn[1], grain, global_nchw_range, &j);
        }
        return;
    }
    if (op->desc.pool.layout == PN_LAYOUT_NHWC) {
        images = xn[0];
        j.x_image = xn[1] * xn[2] * xn[3];
        j.y_image = yn[1] * yn[2] * yn[3];
    } else {
        images = xn[0] * xn[1]; /* planes */
        j.x_image = xn[2] * xn[3];
        j.y_image = yn[2] * yn[3];
    }
    int64_t work_per_row = (j.y_image / (pp->oh > 0 ? pp->oh : 1)) * pp->kh * pp->kw + 1;
    accel_parallel_for_grain(op->env.threads, images * pp->oh, POOL_GRAIN_WORK / work_per_row,
                             pool_range, &j);
}

pn_status accel_pooling2d_create(void* context, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_pooling_2d_desc* d = (const pn_pooling_2d_desc*)layer->descriptor;
    accel_pooling_params* pp = (accel_pooling_params*)calloc(1, sizeof(*pp));
    if (pp == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    int64_t xn[4], yn[4];
    pn_layout_nchw(&layer->inputs[0], d->layout, xn);
    pn_layout_nchw(&layer->outputs[0], d->layout, yn);
    pp->kind = (int)d->kind;
    pp->include_padding = d->kind == PN_POOLING_AVERAGE && d->padding_method == PN_PADDING_INCLUDE;
    pp->p = d->kind == PN_POOLING_LP ? d->p : 1.0f;
    pp->c = xn[1];
    pp->ih = xn[2];
    pp->iw = xn[3];
    pp->oh = yn[2];
    pp->ow = yn[3];
    pp->kh = d->kernel_h;
    pp->kw = d->kernel_w;
    pp->sh = d->stride_h;
    pp->sw = d->stride_w;
    pp->dh = d->dilation_h;
    pp->dw = d->dilation_w;
    pp->pt = d->pad_top;
    pp->pl = d->pad_left;
    pp->pb = d->pad_bottom;
    pp->pr = d->pad_right;
    pp->stream_out = accel_streams(env, layer);
    const int integer = layer->inputs[0].dtype != PN_DTYPE_FLOAT32; /* int8 / uint8 MAX (accel_pooling2d_check) */
    return accel_workload_new(env, layer, sizeof(*d), NULL, integer ? int_pooling2d_kernel : pooling2d_kernel, pp,
                              workload_out, message_out);
}

pn_status accel_pooling2d_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    /* the shared validation admits int8 and uint8 for MAX alone (ONNX MaxPool) */
    const pn_data_type t = layer->num_inputs > 0 ? layer->inputs[0].dtype : PN_DTYPE_FLOAT32;
    if (t == PN_DTYPE_UINT8 || t == PN_DTYPE_INT8) {
        return pn_plugin_check_dtype(plugin, layer, t, reason);
    }
    return pn_plugin_float32_only(plugin, layer, reason);
}
