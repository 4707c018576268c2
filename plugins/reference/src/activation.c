/* ACTIVATION layers and the fused activation of other layers. */
#include "cpuref.h"

#include <math.h>

static double clamp01(double v) { return v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v); }

/* Each formula as backend_api.h states it; NaN passes through. */
double cpuref_activate(const pn_activation_desc* act, double x) {
    double alpha = act->alpha, beta = act->beta;
    switch (act->kind) {
    case PN_ACTIVATION_RELU: return x < 0.0 ? 0.0 : x;
    case PN_ACTIVATION_BOUNDED_RELU: {
        double lo = x < alpha ? alpha : x;
        return lo > beta ? beta : lo;
    }
    case PN_ACTIVATION_LEAKY_RELU: return x >= 0.0 ? x : alpha * x;
    case PN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PN_ACTIVATION_TANH: return tanh(x);
    case PN_ACTIVATION_ELU: return x >= 0.0 ? x : alpha * expm1(x);
    case PN_ACTIVATION_HARD_SWISH: return x * clamp01(x / 6.0 + 0.5);
    case PN_ACTIVATION_HARD_SIGMOID: return clamp01(alpha * x + beta);
    case PN_ACTIVATION_ABS: return fabs(x);
    case PN_ACTIVATION_SQRT: return sqrt(x);
    case PN_ACTIVATION_SQUARE: return x * x;
    case PN_ACTIVATION_LINEAR: return alpha * x + beta;
    /* The 1.1 kinds ONNX's recurrent operators use (softplus without overflow). */
    case PN_ACTIVATION_SOFTPLUS: return x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case PN_ACTIVATION_SOFTSIGN: return x / (1.0 + fabs(x));
    case PN_ACTIVATION_THRESHOLDED_RELU: return x > alpha ? x : 0.0;
    case PN_ACTIVATION_SCALED_TANH: return alpha * tanh(beta * x);
    case PN_ACTIVATION_INVALID: break;
    }
    return x; /* unreachable: validation refuses unknown kinds */
}

double cpuref_fused(const cpuref_op* op, double v) {
    return op->has_activation ? cpuref_activate(&op->activation, v) : v;
}

static void activation_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    int64_t n = pn_num_elements(&op->outputs[0]);
    for (int64_t i = 0; i < n; ++i) {
        out[0][i] = (float)cpuref_activate(&op->desc.activation, in[0][i]);
    }
}

pn_status cpuref_activation_create(void* context, const pn_layer* layer,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_activation_desc), NULL, activation_kernel,
                               workload_out, message_out);
}
