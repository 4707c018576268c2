/* GRID_SAMPLE (ONNX GridSample): x sampled at the grid's normalized coordinates, NEAREST,
 * LINEAR or CUBIC along each of the r spatial axes, with ZEROS, BORDER or REFLECTION padding
 * (backend_api.h). Coordinates, weights and sums in double; NEAREST copies elements exactly. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPATIAL (PN_MAX_DIMS - 2)
#define MAX_TAPS 4

typedef struct grid_state {
    uint32_t r;                       /* spatial axes */
    int64_t batch, channels;
    int64_t in_dims[MAX_SPATIAL];
    int64_t in_strides[MAX_SPATIAL];  /* element strides within one [n, c] plane */
    int64_t in_plane;                 /* elements of one [n, c] plane of x */
    int64_t out_plane;                /* output positions per [n, c] */
} grid_state;

/* The taps of one axis: input indices (-1: reads 0) and their weights. */
typedef struct axis_taps {
    int count;
    int64_t index[MAX_TAPS];
    double weight[MAX_TAPS];
} axis_taps;

/* u mirrored at lo and hi until it lies within them (backend_api.h). */
static double reflect(double u, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0.0) {
        return lo;
    }
    if (u < lo) {
        double dx = lo - u;
        double k = floor(dx / range);
        double rest = dx - k * range;
        return fmod(k, 2.0) == 0.0 ? lo + rest : hi - rest;
    }
    if (u > hi) {
        double dx = u - hi;
        double k = floor(dx / range);
        double rest = dx - k * range;
        return fmod(k, 2.0) == 0.0 ? hi - rest : lo + rest;
    }
    return u;
}

static double clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* A tap index j of an axis of size d as the padding reads it (-1: the value 0). */
static int64_t tap_index(const pn_grid_sample_desc* desc, int64_t j, int64_t d, double lo,
                         double hi) {
    if (j >= 0 && j < d) {
        return j;
    }
    switch (desc->padding) {
    case PN_GRID_PADDING_BORDER: return j < 0 ? 0 : d - 1;
    case PN_GRID_PADDING_REFLECTION: {
        int64_t k = (int64_t)reflect((double)j, lo, hi); /* an integer: truncation is exact */
        return k < 0 ? 0 : (k >= d ? d - 1 : k);
    }
    default: return -1;
    }
}

/* Keys' cubic convolution weights for the taps -1..2 at fraction f, a = -0.75. */
static void cubic_weights(double f, double w[4]) {
    const double a = -0.75;
    double x = f + 1.0;
    w[0] = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    x = f;
    w[1] = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    x = 1.0 - f;
    w[2] = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    x = 2.0 - f;
    w[3] = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
}

/* The taps of one axis of size d for normalized coordinate g; 0 when the coordinate is not
 * finite or lies so far outside (ZEROS) that no tap reads the input. */
static int axis_taps_of(const pn_grid_sample_desc* desc, double g, int64_t d, axis_taps* taps) {
    double lo = desc->align_corners ? 0.0 : -0.5;
    double hi = desc->align_corners ? (double)d - 1.0 : (double)d - 0.5;
    double u = desc->align_corners ? (g + 1.0) / 2.0 * ((double)d - 1.0)
                                   : ((g + 1.0) * (double)d - 1.0) / 2.0;
    if (!isfinite(u) || d == 0) {
        return 0;
    }
    if (desc->mode == PN_RESIZE_NEAREST) {
        u = nearbyint(u); /* halves to even in the default rounding mode */
    }
    if (u < lo || u > hi) {
        if (desc->padding == PN_GRID_PADDING_BORDER) {
            u = clamp(u, 0.0, (double)d - 1.0);
        } else if (desc->padding == PN_GRID_PADDING_REFLECTION) {
            u = reflect(u, lo, hi);
        } else if (u < -4.0 || u > (double)d + 3.0) {
            return 0; /* ZEROS: every tap lies outside */
        }
    }
    double base = floor(u);
    double f = u - base;
    int64_t b = (int64_t)base;
    if (desc->mode == PN_RESIZE_NEAREST) {
        taps->count = 1;
        taps->index[0] = tap_index(desc, b, d, lo, hi);
        taps->weight[0] = 1.0;
    } else if (desc->mode == PN_RESIZE_LINEAR) {
        taps->count = 2;
        taps->index[0] = tap_index(desc, b, d, lo, hi);
        taps->index[1] = tap_index(desc, b + 1, d, lo, hi);
        taps->weight[0] = 1.0 - f;
        taps->weight[1] = f;
    } else {
        taps->count = 4;
        cubic_weights(f, taps->weight);
        for (int t = 0; t < 4; ++t) {
            taps->index[t] = tap_index(desc, b - 1 + t, d, lo, hi);
        }
    }
    return 1;
}

/* One output element of plane (n, c): the weighted sum over every combination of taps. */
static double interpolate(const grid_state* s, const axis_taps* taps, pn_data_type t,
                          const void* x, int64_t plane_offset) {
    int pick[MAX_SPATIAL] = {0};
    double sum = 0.0;
    for (;;) {
        double w = 1.0;
        int64_t at = 0;
        int outside = 0;
        for (uint32_t a = 0; a < s->r; ++a) {
            int64_t j = taps[a].index[pick[a]];
            w *= taps[a].weight[pick[a]];
            outside |= j < 0;
            at += j * s->in_strides[a];
        }
        if (!outside) {
            sum += w * pn_load_double(t, x, plane_offset + at);
        }
        uint32_t a = s->r;
        while (a > 0 && ++pick[a - 1] == taps[a - 1].count) {
            pick[--a] = 0;
        }
        if (a == 0) {
            return sum;
        }
    }
}

static pn_status grid_sample_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                    pn_string_out* message_out) {
    (void)message_out;
    const grid_state* s = (const grid_state*)op->priv;
    const pn_grid_sample_desc* desc = &op->desc.grid_sample;
    pn_data_type xt = op->inputs[0].dtype, gt = op->inputs[1].dtype;
    size_t size = pn_dtype_size(xt);
    const unsigned char* xbytes = (const unsigned char*)in[0];
    unsigned char* ybytes = (unsigned char*)out[0];
    axis_taps taps[MAX_SPATIAL];
    for (int64_t n = 0; n < s->batch; ++n) {
        for (int64_t p = 0; p < s->out_plane; ++p) {
            int inside = 1;
            for (uint32_t a = 0; a < s->r && inside; ++a) {
                /* grid[n, p, r - 1 - a]: the coordinates come in reverse axis order. */
                int64_t at = (n * s->out_plane + p) * s->r + (s->r - 1 - a);
                double g = pn_load_double(gt, in[1], at);
                inside = axis_taps_of(desc, g, s->in_dims[a], &taps[a]);
            }
            for (int64_t c = 0; c < s->channels; ++c) {
                int64_t plane = n * s->channels + c;
                int64_t y = plane * s->out_plane + p;
                if (!inside) {
                    memset(ybytes + (size_t)y * size, 0, size);
                    continue;
                }
                if (desc->mode == PN_RESIZE_NEAREST) {
                    int64_t at = 0;
                    int outside = 0;
                    for (uint32_t a = 0; a < s->r; ++a) {
                        outside |= taps[a].index[0] < 0;
                        at += taps[a].index[0] * s->in_strides[a];
                    }
                    if (outside) {
                        memset(ybytes + (size_t)y * size, 0, size);
                    } else {
                        memcpy(ybytes + (size_t)y * size,
                               xbytes + (size_t)(plane * s->in_plane + at) * size, size);
                    }
                    continue;
                }
                double v = interpolate(s, taps, xt, in[0], plane * s->in_plane);
                pn_store_double(xt, out[0], y, v);
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_grid_sample_create(void* context, const pn_layer* layer,
                                    pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_tensor_info* x = &layer->inputs[0];
    grid_state* s = (grid_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "GridSample workload");
    }
    s->r = x->rank - 2;
    s->batch = x->dims[0];
    s->channels = x->dims[1];
    s->in_plane = cpuref_span(x, 2, x->rank);
    s->out_plane = cpuref_span(&layer->outputs[0], 2, layer->outputs[0].rank);
    int64_t stride = 1;
    for (int32_t a = (int32_t)s->r - 1; a >= 0; --a) {
        s->in_dims[a] = x->dims[2 + a];
        s->in_strides[a] = stride;
        stride *= x->dims[2 + a];
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_grid_sample_desc), NULL, grid_sample_kernel,
                                     s, workload_out, message_out);
}
