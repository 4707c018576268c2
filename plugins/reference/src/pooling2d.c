/* POOLING_2D: MAX, AVERAGE (padding excluded or included) and LP, NCHW or NHWC. */
#include "cpuref.h"

#include <math.h>

/* The taps of a window along one axis. */
typedef struct pool_axis {
    int64_t in;         /* input size */
    int64_t start;      /* input index of tap 0 (may be negative: padding) */
    int64_t step;       /* dilation */
    int64_t taps;       /* kernel size */
    int64_t padded_end; /* in + pad_end: taps at or past it lie beyond the padding */
} pool_axis;

static pool_axis pool_axis_of(int64_t in, int64_t o, uint32_t stride, uint32_t pad_begin,
                              uint32_t pad_end, uint32_t kernel, uint32_t dilation) {
    pool_axis a;
    a.in = in;
    a.start = o * (int64_t)stride - (int64_t)pad_begin;
    a.step = dilation;
    a.taps = kernel;
    a.padded_end = in + (int64_t)pad_end;
    return a;
}

/* Taps inside the padded input: the window size AVERAGE/INCLUDE divides by.
 * (Only a CEIL-rounded last window reaches past the end padding.) */
static int64_t padded_taps(const pool_axis* a) {
    int64_t count = 0;
    for (int64_t t = 0; t < a->taps; ++t) {
        count += a->start + t * a->step < a->padded_end;
    }
    return count;
}

typedef struct pool_result {
    double value;     /* max, sum, or sum of |x|^p over the real elements */
    int64_t count;    /* real elements seen */
} pool_result;

static pool_result pool_window(const pn_pooling_2d_desc* d, const float* plane,
                               const int64_t xs[4], const pool_axis* ay, const pool_axis* ax) {
    pool_result r = {d->kind == PN_POOLING_MAX ? -INFINITY : 0.0, 0};
    for (int64_t ty = 0; ty < ay->taps; ++ty) {
        int64_t iy = ay->start + ty * ay->step;
        if (iy < 0 || iy >= ay->in) {
            continue;
        }
        for (int64_t tx = 0; tx < ax->taps; ++tx) {
            int64_t ix = ax->start + tx * ax->step;
            if (ix < 0 || ix >= ax->in) {
                continue;
            }
            double v = plane[iy * xs[2] + ix * xs[3]];
            if (d->kind == PN_POOLING_MAX) {
                r.value = (v > r.value || isnan(v)) && !isnan(r.value) ? v : r.value;
            } else if (d->kind == PN_POOLING_AVERAGE) {
                r.value += v;
            } else {
                r.value += pow(fabs(v), (double)d->p);
            }
            r.count += 1;
        }
    }
    return r;
}

static double pool_finish(const pn_pooling_2d_desc* d, pool_result r, const pool_axis* ay,
                          const pool_axis* ax) {
    switch (d->kind) {
    case PN_POOLING_AVERAGE: {
        int64_t divisor = d->padding_method == PN_PADDING_INCLUDE
                              ? padded_taps(ay) * padded_taps(ax) : r.count;
        return r.value / (double)divisor;
    }
    case PN_POOLING_LP: return pow(r.value, 1.0 / (double)d->p);
    default: return r.value;
    }
}

static void pooling2d_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_pooling_2d_desc* d = &op->desc.pool;
    int64_t x_nchw[4], y_nchw[4], xs[4], ys[4];
    pn_layout_nchw(&op->inputs[0], d->layout, x_nchw);
    pn_layout_nchw(&op->outputs[0], d->layout, y_nchw);
    cpuref_layout_strides(d->layout, x_nchw, xs);
    cpuref_layout_strides(d->layout, y_nchw, ys);
    for (int64_t n = 0; n < y_nchw[0]; ++n) {
        for (int64_t c = 0; c < y_nchw[1]; ++c) {
            const float* plane = in[0] + n * xs[0] + c * xs[1];
            for (int64_t oy = 0; oy < y_nchw[2]; ++oy) {
                pool_axis ay = pool_axis_of(x_nchw[2], oy, d->stride_h, d->pad_top,
                                            d->pad_bottom, d->kernel_h, d->dilation_h);
                for (int64_t ox = 0; ox < y_nchw[3]; ++ox) {
                    pool_axis ax = pool_axis_of(x_nchw[3], ox, d->stride_w, d->pad_left,
                                                d->pad_right, d->kernel_w, d->dilation_w);
                    pool_result r = pool_window(d, plane, xs, &ay, &ax);
                    int64_t at = n * ys[0] + c * ys[1] + oy * ys[2] + ox * ys[3];
                    out[0][at] = (float)pool_finish(d, r, &ay, &ax);
                }
            }
        }
    }
}

pn_status cpuref_pooling2d_create(void* context, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_pooling_2d_desc), NULL, pooling2d_kernel,
                               workload_out, message_out);
}
