/* SOFTMAX along one axis, stable: exp(x - max) / sum(exp(x - max)), computed in double on
 * every float type (read and written in the tensor's own type, rounded once). A NaN in a line
 * makes the line NaN (it wins the max). */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

typedef struct softmax_state {
    int64_t outer, len, inner;
} softmax_state;

/* One softmax line: `len` elements `stride` apart from element `start`. */
static void softmax_line(pn_data_type t, const void* x, void* y, int64_t start, int64_t len,
                         int64_t stride) {
    double max = -INFINITY;
    for (int64_t i = 0; i < len; ++i) {
        double v = pn_load_double(t, x, start + i * stride);
        max = v > max || isnan(v) ? v : max;
        if (isnan(max)) {
            break;
        }
    }
    double sum = 0.0;
    for (int64_t i = 0; i < len; ++i) {
        sum += exp(pn_load_double(t, x, start + i * stride) - max);
    }
    for (int64_t i = 0; i < len; ++i) {
        int64_t at = start + i * stride;
        pn_store_double(t, y, at, exp(pn_load_double(t, x, at) - max) / sum);
    }
}

static pn_status softmax_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    (void)message_out;
    const softmax_state* s = (const softmax_state*)op->priv;
    pn_data_type t = op->inputs[0].dtype;
    for (int64_t o = 0; o < s->outer; ++o) {
        for (int64_t i = 0; i < s->inner; ++i) {
            softmax_line(t, in[0], out[0], o * s->len * s->inner + i, s->len, s->inner);
        }
    }
    return PN_OK;
}

pn_status cpuref_softmax_create(void* context, const pn_layer* layer,
                                pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_softmax_desc* d = (const pn_softmax_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    softmax_state* s = (softmax_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "Softmax workload");
    }
    s->outer = cpuref_span(x, 0, axis);
    s->len = x->dims[axis];
    s->inner = cpuref_span(x, axis + 1, x->rank);
    return cpuref_typed_workload_new(layer, sizeof(pn_softmax_desc), NULL, softmax_kernel, s,
                                     workload_out, message_out);
}
