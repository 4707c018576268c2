/* ACTIVATION layers and the fused activation of other layers: every formula of
 * pn_activation_kind, computed in double on any float type and rounded once when stored. */
#include "cpuref.h"

#include <math.h>

static double clamp01(double v) { return v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v); }

/* log(1 + exp(x)) without overflow. */
static double softplus(double x) { return x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static double gelu_tanh(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535587989211986876;
    return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

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
    case PN_ACTIVATION_GELU: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440084436210485));
    case PN_ACTIVATION_GELU_TANH: return gelu_tanh(x);
    case PN_ACTIVATION_SWISH: return x / (1.0 + exp(-alpha * x));
    case PN_ACTIVATION_MISH: return x * tanh(softplus(x));
    case PN_ACTIVATION_SOFTPLUS: return softplus(x);
    case PN_ACTIVATION_SOFTSIGN: return x / (1.0 + fabs(x));
    case PN_ACTIVATION_SELU: return beta * (x > 0.0 ? x : alpha * expm1(x));
    case PN_ACTIVATION_CELU: /* the min term is 0 exactly when x >= 0 (either sign of alpha) */
        return x >= 0.0 ? x : (x < 0.0 ? alpha * expm1(x / alpha) : x);
    case PN_ACTIVATION_THRESHOLDED_RELU: return x > alpha ? x : 0.0;
    case PN_ACTIVATION_SHRINK: return x < -alpha ? x + beta : (x > alpha ? x - beta : 0.0);
    case PN_ACTIVATION_SCALED_TANH: return alpha * tanh(beta * x);
    case PN_ACTIVATION_INVALID: break;
    }
    return x; /* unreachable: validation refuses unknown kinds */
}

double cpuref_fused(const cpuref_op* op, double v) {
    return op->has_activation ? cpuref_activate(&op->activation, v) : v;
}

static pn_status activation_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                   pn_string_out* message_out) {
    (void)message_out;
    pn_data_type dtype = op->outputs[0].dtype;
    int64_t n = pn_num_elements(&op->outputs[0]);
    for (int64_t i = 0; i < n; ++i) {
        double x = pn_load_double(dtype, in[0], i);
        pn_store_double(dtype, out[0], i, cpuref_activate(&op->desc.activation, x));
    }
    return PN_OK;
}

pn_status cpuref_activation_create(void* context, const pn_layer* layer,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_activation_desc), NULL, activation_kernel,
                                     NULL, workload_out, message_out);
}
