/* RESIZE, ONNX Resize semantics (backend_api.h): NEAREST on every element type (elements are
 * copied), LINEAR and CUBIC on float types in double, one axis after another as ONNX's
 * reference computes them. Every axis' taps and weights are planned when the workload is
 * created; execute() only applies them. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NORMAL = 0, EXTRAPOLATE = 1, ZERO = 2 };

/* One axis' plan: for output index o, taps `taps` input indices (clamped to the input) from
 * first[o] with weights[o * taps ...], or a special value. */
typedef struct resize_axis {
    int skip;               /* the identity: left as it is */
    int64_t in, out, taps;
    int64_t* first;         /* [out]: the unclamped index of tap 0 */
    double* weights;        /* [out * taps] (NEAREST: 0 or 1) */
    unsigned char* special; /* [out]: NORMAL, EXTRAPOLATE, ZERO (NEAREST's excluded tap) */
} resize_axis;

typedef struct resize_state {
    uint32_t rank;
    resize_axis axes[PN_MAX_DIMS];
    double* a;              /* LINEAR / CUBIC: two pass buffers */
    double* b;
    int64_t buffer;         /* elements of each */
    double data[];
} resize_state;

/* ---- Coordinates and weights (ONNX's reference, in double) ------------------------------ */

static int isclose(double a, double b) {
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return a == b || fabs(a - b) <= 1e-9 * scale;
}

static double source_coordinate(const pn_resize_desc* d, uint32_t axis, int64_t in, int64_t out,
                                 double y) {
    double scale = d->scales[axis];
    double length = scale * (double)in;
    double r0 = d->roi_start[axis], r1 = d->roi_end[axis];
    switch (d->coordinates) {
    case PN_COORDINATES_ALIGN_CORNERS:
        return length == 1.0 ? 0.0 : y * (double)(in - 1) / (length - 1.0);
    case PN_COORDINATES_ASYMMETRIC: return y / scale;
    case PN_COORDINATES_TF_CROP_AND_RESIZE: {
        double x = length == 1.0 ? (r1 - r0) * (double)(in - 1) / 2.0
                                 : y * (r1 - r0) * (double)(in - 1) / (length - 1.0);
        return x + r0 * (double)(in - 1);
    }
    case PN_COORDINATES_PYTORCH_HALF_PIXEL:
        return length == 1.0 ? -0.5 : (y + 0.5) / scale - 0.5;
    case PN_COORDINATES_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / length;
        double offset = (double)in / 2.0 * (1.0 - adjustment);
        return offset + (y + 0.5) / scale - 0.5;
    }
    case PN_COORDINATES_HALF_PIXEL:
    default: return (y + 0.5) / scale - 0.5;
    }
}

static double cubic(double a, double x) {
    x = fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1.0) {
        return (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0;
    }
    if (x < 2.0) {
        return a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a;
    }
    return 0.0;
}

/* The first tap's offset (t0) of a stretched kernel of `support` (antialias). */
static int64_t stretched_start(double support, double scale) {
    double s = scale < 1.0 ? scale : 1.0;
    return (int64_t)floor(-support / s) + 1;
}

static int64_t taps_of(const pn_resize_desc* d, uint32_t axis) {
    if (d->mode == PN_RESIZE_NEAREST) {
        return 2;
    }
    if (!d->antialias) {
        return d->mode == PN_RESIZE_LINEAR ? 2 : 4;
    }
    double s = d->scales[axis] < 1.0 ? d->scales[axis] : 1.0;
    double support = d->mode == PN_RESIZE_LINEAR ? 1.0 : 2.0;
    double n = 2.0 - 2.0 * (floor(-support / s) + 1.0);
    return n < 1e9 ? (int64_t)n : -1;
}

/* The weights of one output position from r in (0, 1]. */
static void weights_of(const pn_resize_desc* d, uint32_t axis, double r, int64_t taps,
                       double* w) {
    double a = (double)d->cubic_coeff_a, scale = d->scales[axis];
    if (d->mode == PN_RESIZE_NEAREST) {
        int up = r == 1.0;
        if (!up) {
            switch (d->nearest_mode) {
            case PN_NEAREST_ROUND_PREFER_CEIL: up = r >= 0.5; break;
            case PN_NEAREST_FLOOR: up = 0; break;
            case PN_NEAREST_CEIL: up = 1; break;
            default: up = r > 0.5; break;
            }
        }
        w[0] = up ? 0.0 : 1.0;
        w[1] = up ? 1.0 : 0.0;
        return;
    }
    if (!d->antialias) {
        if (d->mode == PN_RESIZE_LINEAR) {
            w[0] = 1.0 - r;
            w[1] = r;
            return;
        }
        double q = 1.0 - r;
        w[0] = ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a;
        w[1] = ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0;
        w[2] = ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0;
        w[3] = ((a * (q + 1.0) - 5.0 * a) * (q + 1.0) + 8.0 * a) * (q + 1.0) - 4.0 * a;
        return;
    }
    double s = scale < 1.0 ? scale : 1.0;
    int linear = d->mode == PN_RESIZE_LINEAR;
    int64_t start = stretched_start(linear ? 1.0 : 2.0, scale);
    double sum = 0.0;
    for (int64_t t = 0; t < taps; ++t) {
        double arg = linear ? ((double)(start + t) - r) * s : s * ((double)(start + t) - r);
        double v = linear ? 1.0 - fabs(arg) : cubic(a, arg);
        if (linear) {
            v = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        }
        w[t] = v;
        sum += v;
    }
    for (int64_t t = 0; t < taps; ++t) {
        w[t] /= sum;
    }
}

/* Plans output index o of an axis. */
static void plan_index(const pn_resize_desc* d, uint32_t axis, resize_axis* ax, int64_t o) {
    double x = source_coordinate(d, axis, ax->in, ax->out, (double)o);
    double xi = floor(x);
    double r = x == xi ? 1.0 : x - xi;
    int64_t n = ax->taps, half = n / 2;
    double xp = x + (double)half;
    double p = floor(xp);
    int64_t first = (int64_t)p + (xp - p == 0.0 ? -half : -half + 1) - half;
    double* w = ax->weights + o * n;
    weights_of(d, axis, r, n, w);
    ax->first[o] = first;
    ax->special[o] = NORMAL;
    if (d->exclude_outside) {
        double sum = 0.0;
        for (int64_t t = 0; t < n; ++t) {
            if (first + t < 0 || first + t >= ax->in) {
                w[t] = 0.0;
            }
            sum += w[t];
        }
        for (int64_t t = 0; t < n; ++t) {
            w[t] /= sum == 0.0 ? 1.0 : sum;
        }
        if (d->mode == PN_RESIZE_NEAREST && w[0] == 0.0 && w[1] == 0.0) {
            ax->special[o] = ZERO;
        }
    }
    if (d->coordinates == PN_COORDINATES_TF_CROP_AND_RESIZE &&
        (x < 0.0 || x > (double)(ax->in - 1))) {
        ax->special[o] = EXTRAPOLATE;
    }
}

static int64_t clamp_index(int64_t i, int64_t in) {
    return i < 0 ? 0 : (i >= in ? in - 1 : i);
}

/* ---- NEAREST: a gather of whole elements ------------------------------------------------ */

/* The input index output index o of an axis reads (its chosen tap, clamped). */
static int64_t nearest_source(const resize_axis* ax, int64_t o) {
    if (ax->skip) {
        return o;
    }
    int64_t t = ax->weights[o * 2 + 1] != 0.0 ? 1 : 0;
    return clamp_index(ax->first[o] + t, ax->in);
}

static pn_status nearest_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    (void)message_out;
    const resize_state* s = (const resize_state*)op->priv;
    const pn_resize_desc* d = &op->desc.resize;
    pn_data_type dtype = op->inputs[0].dtype;
    size_t size = pn_dtype_size(dtype);
    int64_t strides[PN_MAX_DIMS], index[PN_MAX_DIMS] = {0};
    int64_t stride = 1;
    for (int32_t a = (int32_t)s->rank - 1; a >= 0; --a) {
        strides[a] = stride;
        stride *= s->axes[a].in;
    }
    int64_t count = pn_num_elements(&op->outputs[0]);
    for (int64_t i = 0; i < count; ++i) {
        int special = NORMAL;
        int64_t offset = 0;
        for (uint32_t a = 0; a < s->rank; ++a) {
            const resize_axis* ax = &s->axes[a];
            if (!ax->skip && ax->special[index[a]] != NORMAL) {
                special = ax->special[index[a]]; /* the last resized axis decides */
            }
            offset += nearest_source(ax, index[a]) * strides[a];
        }
        if (special == EXTRAPOLATE) {
            pn_store_double(dtype, out[0], i, (double)d->extrapolation_value);
        } else if (special == ZERO) {
            pn_store_double(dtype, out[0], i, 0.0);
        } else {
            memcpy((char*)out[0] + (size_t)i * size, (const char*)in[0] + (size_t)offset * size,
                   size);
        }
        for (int32_t a = (int32_t)s->rank - 1; a >= 0 && ++index[a] == s->axes[a].out; --a) {
            index[a] = 0;
        }
    }
    return PN_OK;
}

/* ---- LINEAR and CUBIC: one weighted pass per resized axis -------------------------------- */

static void interpolate_axis(const resize_axis* ax, double extrapolation, int64_t outer,
                             int64_t inner, const double* src, double* dst) {
    for (int64_t b = 0; b < outer; ++b) {
        const double* from = src + b * ax->in * inner;
        double* to = dst + b * ax->out * inner;
        for (int64_t o = 0; o < ax->out; ++o) {
            const double* w = ax->weights + o * ax->taps;
            for (int64_t j = 0; j < inner; ++j) {
                double v = 0.0;
                if (ax->special[o] == EXTRAPOLATE) {
                    v = extrapolation;
                } else {
                    for (int64_t t = 0; t < ax->taps; ++t) {
                        v += w[t] * from[clamp_index(ax->first[o] + t, ax->in) * inner + j];
                    }
                }
                to[o * inner + j] = v;
            }
        }
    }
}

static pn_status interpolate_kernel(const cpuref_op* op, const void* const* in,
                                    void* const* out, pn_string_out* message_out) {
    (void)message_out;
    const resize_state* s = (const resize_state*)op->priv;
    int64_t dims[PN_MAX_DIMS];
    for (uint32_t a = 0; a < s->rank; ++a) {
        dims[a] = s->axes[a].in;
    }
    double* cur = s->a;
    double* next = s->b;
    pn_convert(PN_DTYPE_FLOAT64, cur, op->inputs[0].dtype, in[0],
               pn_num_elements(&op->inputs[0]));
    for (uint32_t a = 0; a < s->rank; ++a) {
        const resize_axis* ax = &s->axes[a];
        if (ax->skip) {
            continue;
        }
        int64_t outer = 1, inner = 1;
        for (uint32_t i = 0; i < a; ++i) {
            outer *= dims[i];
        }
        for (uint32_t i = a + 1; i < s->rank; ++i) {
            inner *= dims[i];
        }
        interpolate_axis(ax, (double)op->desc.resize.extrapolation_value, outer, inner, cur,
                         next);
        dims[a] = ax->out;
        double* t = cur;
        cur = next;
        next = t;
    }
    pn_convert(op->outputs[0].dtype, out[0], PN_DTYPE_FLOAT64, cur,
               pn_num_elements(&op->outputs[0]));
    return PN_OK;
}

/* ---- Create -------------------------------------------------------------------------- */

/* Doubles needed for every axis' tables, and the largest intermediate of the passes (in
 * *buffer); -1 when a table is too large. */
static int64_t plan_size(const pn_resize_desc* d, const pn_tensor_info* x,
                         const pn_tensor_info* y, int64_t* buffer) {
    double total = 0.0, largest = (double)pn_num_elements(x), current = largest;
    for (uint32_t a = 0; a < d->rank; ++a) {
        int64_t taps = taps_of(d, a);
        if (taps < 0) {
            return -1;
        }
        /* first (int64), weights, special (rounded up to a double each) */
        total += (double)y->dims[a] * (double)(taps + 2);
        if (x->dims[a] > 0) {
            current = current / (double)x->dims[a] * (double)y->dims[a];
        } else {
            current = 0.0;
        }
        largest = current > largest ? current : largest;
    }
    *buffer = (int64_t)largest;
    if (d->mode != PN_RESIZE_NEAREST) {
        total += 2.0 * largest;
    }
    return total < 1e15 ? (int64_t)total : -1;
}

static void plan_axes(resize_state* s, const pn_resize_desc* d, const pn_tensor_info* x,
                      const pn_tensor_info* y) {
    double* next = s->data;
    for (uint32_t a = 0; a < d->rank; ++a) {
        resize_axis* ax = &s->axes[a];
        ax->in = x->dims[a];
        ax->out = y->dims[a];
        ax->taps = taps_of(d, a);
        int roi_identity = d->coordinates != PN_COORDINATES_TF_CROP_AND_RESIZE ||
                           (d->roi_start[a] == 0.0 && isclose(d->roi_end[a], 1.0));
        ax->skip = ax->in == ax->out && isclose(d->scales[a], 1.0) && roi_identity;
        ax->first = (int64_t*)(void*)next;
        next += ax->out;
        ax->weights = next;
        next += ax->out * ax->taps;
        ax->special = (unsigned char*)(void*)next;
        next += ax->out;
        for (int64_t o = 0; !ax->skip && o < ax->out; ++o) {
            plan_index(d, a, ax, o);
        }
    }
    s->a = next;
    s->b = next + s->buffer;
}

pn_status cpuref_resize_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_resize_desc* d = (const pn_resize_desc*)layer->descriptor;
    int64_t buffer = 0;
    int64_t doubles = plan_size(d, &layer->inputs[0], &layer->outputs[0], &buffer);
    resize_state* s = NULL;
    if (doubles >= 0 &&
        (uint64_t)doubles <= (uint64_t)((SIZE_MAX - sizeof(resize_state)) / sizeof(double))) {
        s = (resize_state*)malloc(sizeof(resize_state) + (size_t)doubles * sizeof(double));
    }
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating a Resize workload (its tap tables or "
                       "buffers are too large)");
    }
    s->rank = d->rank;
    s->buffer = buffer;
    plan_axes(s, d, &layer->inputs[0], &layer->outputs[0]);
    return cpuref_typed_workload_new(
        layer, sizeof(*d), NULL,
        d->mode == PN_RESIZE_NEAREST ? nearest_kernel : interpolate_kernel, s, workload_out,
        message_out);
}
