/* RESIZE, ONNX Resize semantics (backend_api.h): NEAREST on every element type (elements are
 * copied), LINEAR and CUBIC on float types in double, one axis after another as ONNX's
 * reference computes them. Every axis' taps and weights are planned when the workload is
 * created; execute() only applies them. */
#include "cpuref.h"
#include "plugnn/pn_resize_plan.h"

#include <stdlib.h>
#include <string.h>

enum { NORMAL = PN_RESIZE_NORMAL, EXTRAPOLATE = PN_RESIZE_EXTRAPOLATE, ZERO = PN_RESIZE_ZERO };

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

/* Plans output index o of an axis (plugin_common's pn_resize_plan.h). */
static void plan_index(const pn_resize_desc* d, uint32_t axis, resize_axis* ax, int64_t o) {
    pn_resize_plan_index(d, axis, ax->in, ax->out, ax->taps, o, &ax->first[o], ax->weights + o * ax->taps,
                         &ax->special[o]);
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
        int64_t taps = pn_resize_taps(d, a);
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
        ax->taps = pn_resize_taps(d, a);
        ax->skip = pn_resize_axis_skipped(d, a, ax->in, ax->out);
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
