/* SOFTMAX along one axis, stable: exp(x - max) / sum(exp(x - max)). */
#include "cpuref.h"

#include <math.h>

/* One softmax line: `len` elements `stride` apart. */
static void softmax_line(const float* x, float* y, int64_t len, int64_t stride) {
    double max = -INFINITY;
    for (int64_t i = 0; i < len; ++i) {
        double v = x[i * stride];
        max = v > max || isnan(v) ? v : max;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < len; ++i) {
        sum += exp((double)x[i * stride] - max);
    }
    for (int64_t i = 0; i < len; ++i) {
        y[i * stride] = (float)(exp((double)x[i * stride] - max) / sum);
    }
}

static void softmax_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_tensor_info* x = &op->inputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.softmax.axis, x->rank);
    int64_t outer = cpuref_span(x, 0, axis);
    int64_t len = x->dims[axis];
    int64_t inner = cpuref_span(x, axis + 1, x->rank);
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            int64_t start = o * len * inner + i;
            softmax_line(in[0] + start, out[0] + start, len, inner);
        }
    }
}

pn_status cpuref_softmax_create(void* context, const pn_layer* layer,
                                pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_softmax_desc), NULL, softmax_kernel, workload_out,
                               message_out);
}
