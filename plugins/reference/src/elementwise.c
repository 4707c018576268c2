/* ELEMENTWISE_BINARY and ELEMENTWISE_VARIADIC with NumPy broadcasting. */
#include "cpuref.h"

#include <math.h>

/* NumPy maximum/minimum: a NaN on either side wins. */
static double maximum(double a, double b) { return isnan(a) || a >= b ? a : b; }
static double minimum(double a, double b) { return isnan(a) || a <= b ? a : b; }

static double binary_op(pn_binary_op op, double a, double b) {
    switch (op) {
    case PN_BINARY_ADD: return a + b;
    case PN_BINARY_SUB: return a - b;
    case PN_BINARY_MUL: return a * b;
    case PN_BINARY_DIV: return a / b;
    case PN_BINARY_MAXIMUM: return maximum(a, b);
    case PN_BINARY_MINIMUM: return minimum(a, b);
    case PN_BINARY_POWER: return pow(a, b);
    case PN_BINARY_PRELU: return a >= 0.0 ? a : a * b;
    case PN_BINARY_INVALID: break;
    }
    return NAN; /* unreachable: validation refuses unknown operations */
}

/* Broadcast strides of every input against the output (validated to exist). */
static void input_strides(const cpuref_op* op, uint32_t i, int64_t strides[PN_MAX_DIMS]) {
    if (pn_broadcast_strides(&op->inputs[i], &op->outputs[0], strides) != 0) {
        for (uint32_t k = 0; k < PN_MAX_DIMS; ++k) {
            strides[k] = 0; /* unreachable after validation */
        }
    }
}

static void binary_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_tensor_info* y = &op->outputs[0];
    int64_t sa[PN_MAX_DIMS] = {0}, sb[PN_MAX_DIMS] = {0}, index[PN_MAX_DIMS];
    input_strides(op, 0, sa);
    input_strides(op, 1, sb);
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(y, i, index);
        double a = in[0][cpuref_dot(index, sa, y->rank)];
        double b = in[1][cpuref_dot(index, sb, y->rank)];
        out[0][i] = (float)cpuref_fused(op, binary_op(op->desc.binary.op, a, b));
    }
}

pn_status cpuref_binary_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    return cpuref_workload_new(layer, sizeof(*d), d->fused_activation, binary_kernel,
                               workload_out, message_out);
}

/* One output element of a variadic op: its inputs folded in order. */
static double variadic_element(const cpuref_op* op, const float* const* in,
                               const int64_t* index, int64_t (*strides)[PN_MAX_DIMS]) {
    uint32_t rank = op->outputs[0].rank;
    double acc = in[0][cpuref_dot(index, strides[0], rank)];
    for (uint32_t k = 1; k < op->num_inputs; ++k) {
        double v = in[k][cpuref_dot(index, strides[k], rank)];
        switch (op->desc.variadic.op) {
        case PN_VARIADIC_MAXIMUM: acc = maximum(acc, v); break;
        case PN_VARIADIC_MINIMUM: acc = minimum(acc, v); break;
        default: acc += v; break; /* SUM and MEAN */
        }
    }
    return op->desc.variadic.op == PN_VARIADIC_MEAN ? acc / (double)op->num_inputs : acc;
}

static void variadic_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    int64_t (*strides)[PN_MAX_DIMS] = op->strides;
    const pn_tensor_info* y = &op->outputs[0];
    int64_t index[PN_MAX_DIMS];
    for (uint32_t k = 0; k < op->num_inputs; ++k) {
        input_strides(op, k, strides[k]);
    }
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(y, i, index);
        out[0][i] = (float)variadic_element(op, in, index, strides);
    }
}

pn_status cpuref_variadic_create(void* context, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_elementwise_variadic_desc), NULL, variadic_kernel,
                               workload_out, message_out);
}
