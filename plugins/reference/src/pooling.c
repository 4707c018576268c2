/* POOLING: 1-, 2- and 3-D MAX, AVERAGE (padding excluded or included) and LP pooling,
 * channels first. Floats are computed in double; MAX on integer types compares the integers
 * exactly. A 1-D or 2-D layer runs as a 3-D one whose leading spatial axes have size 1. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

typedef struct pool_state {
    int64_t planes;                        /* N * C */
    int64_t in[3], out[3];
    int64_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
    double* x;                             /* float input in double, else NULL */
    double data[];
} pool_state;

/* The taps of one window along one axis. */
typedef struct window {
    int64_t start;   /* input index of tap 0 (negative: padding) */
    int64_t step;    /* dilation */
    int64_t taps;    /* kernel */
    int64_t in;      /* input size */
    int64_t padded;  /* taps inside the padded input (what INCLUDE divides by) */
} window;

static window window_of(const pool_state* s, int axis, int64_t o) {
    window w;
    w.start = o * s->stride[axis] - s->pad_begin[axis];
    w.step = s->dilation[axis];
    w.taps = s->kernel[axis];
    w.in = s->in[axis];
    w.padded = 0;
    for (int64_t t = 0; t < w.taps; ++t) {
        w.padded += w.start + t * w.step < w.in + s->pad_end[axis];
    }
    return w;
}

/* The input index of tap t, or -1 when it lies in the padding. */
static int64_t tap(const window* w, int64_t t) {
    int64_t i = w->start + t * w->step;
    return i >= 0 && i < w->in ? i : -1;
}

/* One float window: max, or the sum of x or |x|^p, and the count of real elements. */
static double float_window(const pn_pooling_desc* d, const pool_state* s, const double* plane,
                           const window w[3], int64_t* count) {
    double acc = d->kind == PN_POOLING_MAX ? -INFINITY : 0.0;
    *count = 0;
    for (int64_t tz = 0; tz < w[0].taps; ++tz) {
        int64_t iz = tap(&w[0], tz);
        for (int64_t ty = 0; iz >= 0 && ty < w[1].taps; ++ty) {
            int64_t iy = tap(&w[1], ty);
            for (int64_t tx = 0; iy >= 0 && tx < w[2].taps; ++tx) {
                int64_t ix = tap(&w[2], tx);
                if (ix < 0) {
                    continue;
                }
                double v = plane[(iz * s->in[1] + iy) * s->in[2] + ix];
                if (d->kind == PN_POOLING_MAX) {
                    if (!isnan(acc) && (isnan(v) || v > acc)) {
                        acc = v; /* NaN propagates */
                    }
                } else if (d->kind == PN_POOLING_AVERAGE) {
                    acc += v;
                } else {
                    acc += pow(fabs(v), (double)d->p);
                }
                *count += 1;
            }
        }
    }
    return acc;
}

static double float_result(const pn_pooling_desc* d, double acc, int64_t count,
                           const window w[3]) {
    if (d->kind == PN_POOLING_AVERAGE) {
        int64_t divisor = d->padding_method == PN_PADDING_INCLUDE
                              ? w[0].padded * w[1].padded * w[2].padded
                              : count;
        return acc / (double)divisor;
    }
    if (d->kind == PN_POOLING_LP) {
        return pow(acc, 1.0 / (double)d->p);
    }
    return acc;
}

/* Integer MAX of one window (signed or unsigned, exact); every window holds an element. */
static void integer_window(const pool_state* s, pn_data_type dtype, const void* x, int64_t base,
                           const window w[3], void* y, int64_t at) {
    int is_unsigned = pn_dtype_is_unsigned(dtype);
    int64_t best_s = INT64_MIN;
    uint64_t best_u = 0;
    for (int64_t tz = 0; tz < w[0].taps; ++tz) {
        int64_t iz = tap(&w[0], tz);
        for (int64_t ty = 0; iz >= 0 && ty < w[1].taps; ++ty) {
            int64_t iy = tap(&w[1], ty);
            for (int64_t tx = 0; iy >= 0 && tx < w[2].taps; ++tx) {
                int64_t ix = tap(&w[2], tx);
                if (ix < 0) {
                    continue;
                }
                int64_t i = base + (iz * s->in[1] + iy) * s->in[2] + ix;
                if (is_unsigned) {
                    uint64_t v = pn_load_uint64(dtype, x, i);
                    best_u = v > best_u ? v : best_u;
                } else {
                    int64_t v = pn_load_int64(dtype, x, i);
                    best_s = v > best_s ? v : best_s;
                }
            }
        }
    }
    if (is_unsigned) {
        pn_store_uint64(dtype, y, at, best_u);
    } else {
        pn_store_int64(dtype, y, at, best_s);
    }
}

static pn_status pooling_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    (void)message_out;
    const pn_pooling_desc* d = &op->desc.poolnd;
    pool_state* s = (pool_state*)op->priv;
    pn_data_type dtype = op->inputs[0].dtype;
    int64_t in_plane = s->in[0] * s->in[1] * s->in[2];
    int64_t out_plane = s->out[0] * s->out[1] * s->out[2];
    if (s->x != NULL) {
        pn_convert(PN_DTYPE_FLOAT64, s->x, dtype, in[0], s->planes * in_plane);
    }
    window w[3];
    for (int64_t plane = 0; plane < s->planes; ++plane) {
        for (int64_t oz = 0; oz < s->out[0]; ++oz) {
            w[0] = window_of(s, 0, oz);
            for (int64_t oy = 0; oy < s->out[1]; ++oy) {
                w[1] = window_of(s, 1, oy);
                for (int64_t ox = 0; ox < s->out[2]; ++ox) {
                    w[2] = window_of(s, 2, ox);
                    int64_t at = plane * out_plane + (oz * s->out[1] + oy) * s->out[2] + ox;
                    if (s->x == NULL) {
                        integer_window(s, dtype, in[0], plane * in_plane, w, out[0], at);
                        continue;
                    }
                    int64_t count = 0;
                    double acc = float_window(d, s, s->x + plane * in_plane, w, &count);
                    pn_store_double(dtype, out[0], at, float_result(d, acc, count, w));
                }
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_pooling_create(void* context, const pn_layer* layer,
                                pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_pooling_desc* d = (const pn_pooling_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    int is_float = pn_dtype_is_float(x->dtype);
    int64_t count = is_float ? pn_num_elements(x) : 0;
    pool_state* s = NULL;
    if ((uint64_t)count <= (uint64_t)((SIZE_MAX - sizeof(pool_state)) / sizeof(double))) {
        s = (pool_state*)malloc(sizeof(pool_state) + (size_t)count * sizeof(double));
    }
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating a Pooling workload");
    }
    uint32_t rank = d->spatial_rank;
    s->planes = x->dims[0] * x->dims[1];
    cpuref_spatial3_dims(rank, x->dims + 2, 1, s->in);
    cpuref_spatial3_dims(rank, layer->outputs[0].dims + 2, 1, s->out);
    cpuref_spatial3_u32(rank, d->kernel, 1, s->kernel);
    cpuref_spatial3_u32(rank, d->strides, 1, s->stride);
    cpuref_spatial3_u32(rank, d->dilations, 1, s->dilation);
    cpuref_spatial3_u32(rank, d->pads_begin, 0, s->pad_begin);
    cpuref_spatial3_u32(rank, d->pads_end, 0, s->pad_end);
    s->x = is_float ? s->data : NULL;
    return cpuref_typed_workload_new(layer, sizeof(*d), NULL, pooling_kernel, s, workload_out,
                                     message_out);
}
