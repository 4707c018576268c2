/* ELEMENTWISE_UNARY: every pn_unary_op on every element type it takes. Floats through C99's
 * <math.h> in double (rounded once when stored), integers exactly (wrapping to the width). */
#include "cpuref.h"

#include <math.h>

static double sign_of(double x) {
    if (x > 0.0) {
        return 1.0;
    }
    return x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : x); /* NaN stays NaN */
}

static double unary_float(pn_unary_op op, double x) {
    switch (op) {
    case PN_UNARY_ABS: return fabs(x);
    case PN_UNARY_NEG: return -x;
    case PN_UNARY_SIGN: return sign_of(x);
    case PN_UNARY_RECIPROCAL: return 1.0 / x;
    case PN_UNARY_SQRT: return sqrt(x);
    case PN_UNARY_RSQRT: return 1.0 / sqrt(x);
    case PN_UNARY_EXP: return exp(x);
    case PN_UNARY_LOG: return log(x);
    case PN_UNARY_ERF: return erf(x);
    case PN_UNARY_SIN: return sin(x);
    case PN_UNARY_COS: return cos(x);
    case PN_UNARY_TAN: return tan(x);
    case PN_UNARY_ASIN: return asin(x);
    case PN_UNARY_ACOS: return acos(x);
    case PN_UNARY_ATAN: return atan(x);
    case PN_UNARY_SINH: return sinh(x);
    case PN_UNARY_COSH: return cosh(x);
    case PN_UNARY_ASINH: return asinh(x);
    case PN_UNARY_ACOSH: return acosh(x);
    case PN_UNARY_ATANH: return atanh(x);
    case PN_UNARY_FLOOR: return floor(x);
    case PN_UNARY_CEIL: return ceil(x);
    case PN_UNARY_ROUND: return nearbyint(x); /* the default rounding mode: halves to even */
    default: return NAN; /* unreachable: validation gives floats no other value operation */
    }
}

/* The BOOL result of an IS_* test. */
static int unary_test(pn_unary_op op, double x) {
    switch (op) {
    case PN_UNARY_IS_NAN: return isnan(x) != 0;
    case PN_UNARY_IS_INF: return isinf(x) != 0;
    case PN_UNARY_IS_POS_INF: return isinf(x) && x > 0.0;
    case PN_UNARY_IS_NEG_INF: return isinf(x) && x < 0.0;
    default: return 0; /* unreachable */
    }
}

/* Integer operations on the 64-bit pattern of a value (sign-extended when signed). */
static uint64_t unary_int(pn_unary_op op, uint64_t a, int is_signed) {
    int negative = is_signed && (int64_t)a < 0;
    switch (op) {
    case PN_UNARY_ABS: return negative ? 0u - a : a; /* the lowest signed value wraps to itself */
    case PN_UNARY_NEG: return 0u - a;
    case PN_UNARY_SIGN: return negative ? UINT64_MAX : (a != 0 ? 1u : 0u);
    case PN_UNARY_LOGICAL_NOT: return a == 0;
    case PN_UNARY_BITWISE_NOT: return ~a;
    default: return 0; /* unreachable: validation gives integers no other operation */
    }
}

static pn_status unary_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                              pn_string_out* message_out) {
    (void)message_out;
    pn_unary_op uop = op->desc.unary.op;
    pn_data_type x_type = op->inputs[0].dtype, y_type = op->outputs[0].dtype;
    cpuref_domain domain = cpuref_domain_of(x_type);
    int64_t n = pn_num_elements(&op->outputs[0]);
    for (int64_t i = 0; i < n; ++i) {
        if (pn_unary_op_gives_bool(uop)) {
            ((uint8_t*)out[0])[i] = (uint8_t)unary_test(uop, pn_load_double(x_type, in[0], i));
        } else if (domain == CPUREF_FLOAT) {
            pn_store_double(y_type, out[0], i, unary_float(uop, pn_load_double(x_type, in[0], i)));
        } else {
            int is_signed = domain == CPUREF_SIGNED;
            uint64_t a = is_signed ? (uint64_t)pn_load_int64(x_type, in[0], i)
                                   : pn_load_uint64(x_type, in[0], i);
            pn_store_uint64(y_type, out[0], i, unary_int(uop, a, is_signed));
        }
    }
    return PN_OK;
}

pn_status cpuref_unary_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_elementwise_unary_desc), NULL, unary_kernel,
                                     NULL, workload_out, message_out);
}
