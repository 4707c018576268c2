/* CUMULATIVE (ONNX CumSum, CumProd) along one axis, forward or reverse, inclusive or
 * exclusive, on every numeric type: floats accumulated in double (each output rounded once),
 * integers modulo 2^64 (the store wraps to the type's width). */
#include "cpuref.h"

#include <stdlib.h>

typedef struct cumulative_state {
    int64_t outer, len, inner;
} cumulative_state;

static pn_status cumulative_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                   pn_string_out* message_out) {
    (void)message_out;
    const cumulative_state* s = (const cumulative_state*)op->priv;
    const pn_cumulative_desc* d = &op->desc.cumulative;
    pn_data_type t = op->inputs[0].dtype;
    int prod = d->op == PN_CUMULATIVE_PROD;
    int is_float = pn_dtype_is_float(t);
    for (int64_t o = 0; o < s->outer; ++o) {
        for (int64_t i = 0; i < s->inner; ++i) {
            int64_t base = o * s->len * s->inner + i;
            double f = prod ? 1.0 : 0.0;
            uint64_t n = prod ? 1u : 0u;
            for (int64_t step = 0; step < s->len; ++step) {
                int64_t j = d->reverse ? s->len - 1 - step : step;
                int64_t at = base + j * s->inner;
                /* Exclusive: store the running value before x[j] joins it. */
                if (d->exclusive) {
                    if (is_float) {
                        pn_store_double(t, out[0], at, f);
                    } else {
                        pn_store_uint64(t, out[0], at, n);
                    }
                }
                if (is_float) {
                    double v = pn_load_double(t, in[0], at);
                    f = prod ? f * v : f + v;
                } else {
                    uint64_t v = pn_load_uint64(t, in[0], at); /* signed: two's complement */
                    n = prod ? n * v : n + v;
                }
                if (!d->exclusive) {
                    if (is_float) {
                        pn_store_double(t, out[0], at, f);
                    } else {
                        pn_store_uint64(t, out[0], at, n);
                    }
                }
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_cumulative_create(void* context, const pn_layer* layer,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_cumulative_desc* d = (const pn_cumulative_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    cumulative_state* s = (cumulative_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "Cumulative workload");
    }
    s->outer = cpuref_span(x, 0, axis);
    s->len = x->dims[axis];
    s->inner = cpuref_span(x, axis + 1, x->rank);
    return cpuref_typed_workload_new(layer, sizeof(pn_cumulative_desc), NULL, cumulative_kernel, s,
                                     workload_out, message_out);
}
