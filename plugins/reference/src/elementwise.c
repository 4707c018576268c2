/* ELEMENTWISE_BINARY and ELEMENTWISE_VARIADIC with NumPy broadcasting, on every element type
 * the kinds allow, and the broadcasting walk and number domains the elementwise families share.
 *
 * Floats are computed in double and rounded once when stored; integers exactly, in int64 for
 * the signed types and uint64 for the unsigned ones (and BOOL), wrapping to the type's width
 * when stored (backend_api.h, pn_binary_op). */
#include "cpuref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- Shared by the elementwise families -------------------------------------- */

cpuref_domain cpuref_domain_of(pn_data_type dtype) {
    if (pn_dtype_is_float(dtype)) {
        return CPUREF_FLOAT;
    }
    return pn_dtype_is_unsigned(dtype) || dtype == PN_DTYPE_BOOL ? CPUREF_UNSIGNED : CPUREF_SIGNED;
}

void cpuref_broadcast_begin(const cpuref_op* op, int64_t (*strides)[PN_MAX_DIMS],
                            int64_t* offsets, int64_t index[PN_MAX_DIMS]) {
    for (uint32_t k = 0; k < op->num_inputs; ++k) {
        if (pn_broadcast_strides(&op->inputs[k], &op->outputs[0], strides[k]) != 0) {
            for (uint32_t d = 0; d < PN_MAX_DIMS; ++d) {
                strides[k][d] = 0; /* unreachable after validation */
            }
        }
        offsets[k] = 0;
    }
    for (uint32_t d = 0; d < PN_MAX_DIMS; ++d) {
        index[d] = 0;
    }
}

void cpuref_broadcast_next(const cpuref_op* op, int64_t (*strides)[PN_MAX_DIMS], int64_t* offsets,
                           int64_t index[PN_MAX_DIMS]) {
    const pn_tensor_info* y = &op->outputs[0];
    for (int32_t d = (int32_t)y->rank - 1; d >= 0; --d) {
        if (++index[d] < y->dims[d]) {
            for (uint32_t k = 0; k < op->num_inputs; ++k) {
                offsets[k] += strides[k][d];
            }
            return;
        }
        index[d] = 0; /* carry: back to the start of this dim */
        for (uint32_t k = 0; k < op->num_inputs; ++k) {
            offsets[k] -= strides[k][d] * (y->dims[d] - 1);
        }
    }
}

uint32_t cpuref_bits(pn_data_type dtype) { return (uint32_t)pn_dtype_size(dtype) * 8u; }

/* NumPy maximum/minimum: a NaN on either side wins. */
static double maximum(double a, double b) { return isnan(a) || a >= b ? a : b; }
static double minimum(double a, double b) { return isnan(a) || a <= b ? a : b; }

/* ---- ELEMENTWISE_BINARY on floats ----------------------------------------------- */

/* NumPy's floating remainder: the sign of b, a zero result signed like b. */
static double numpy_mod(double a, double b) {
    double r = fmod(a, b);
    if (r != 0.0) {
        if ((b < 0.0) != (r < 0.0)) {
            r += b;
        }
        return r;
    }
    return copysign(0.0, b);
}

/* A comparison's truth (as 0 or 1), or -1 when `op` is no comparison. */
static int compare_float(pn_binary_op op, double a, double b) {
    switch (op) {
    case PN_BINARY_EQUAL: return a == b;
    case PN_BINARY_LESS: return a < b;
    case PN_BINARY_LESS_EQUAL: return a <= b;
    case PN_BINARY_GREATER: return a > b;
    case PN_BINARY_GREATER_EQUAL: return a >= b;
    default: return -1;
    }
}

static double binary_float(pn_binary_op op, double a, double b) {
    switch (op) {
    case PN_BINARY_ADD: return a + b;
    case PN_BINARY_SUB: return a - b;
    case PN_BINARY_MUL: return a * b;
    case PN_BINARY_DIV: return a / b;
    case PN_BINARY_MAXIMUM: return maximum(a, b);
    case PN_BINARY_MINIMUM: return minimum(a, b);
    case PN_BINARY_POWER: return pow(a, b);
    case PN_BINARY_PRELU: return a >= 0.0 ? a : a * b;
    case PN_BINARY_MOD: return numpy_mod(a, b);
    case PN_BINARY_FMOD: return fmod(a, b);
    default: return NAN; /* unreachable: validation gives floats no other operation */
    }
}

/* ---- ELEMENTWISE_BINARY on integers ---------------------------------------------- */

/* What an integer operation decided beyond its value: nothing, or why it failed. */
typedef enum int_fault { INT_OK, INT_DIVISION_BY_ZERO, INT_NEGATIVE_EXPONENT } int_fault;

/* base^exponent modulo 2^64 (exponent >= 0), by squaring. */
static uint64_t power_wrapping(uint64_t base, uint64_t exponent) {
    uint64_t result = 1;
    while (exponent != 0) {
        if (exponent & 1u) {
            result *= base;
        }
        base *= base;
        exponent >>= 1;
    }
    return result;
}

/* A comparison's truth for integers of one signedness (signed: compared as int64). */
static int compare_int(pn_binary_op op, uint64_t a, uint64_t b, int is_signed) {
    int less = is_signed ? (int64_t)a < (int64_t)b : a < b;
    int equal = a == b;
    switch (op) {
    case PN_BINARY_EQUAL: return equal;
    case PN_BINARY_LESS: return less;
    case PN_BINARY_LESS_EQUAL: return less || equal;
    case PN_BINARY_GREATER: return !less && !equal;
    case PN_BINARY_GREATER_EQUAL: return !less;
    default: return -1;
    }
}

/* Signed division operations on int64 (every signed type loads into it exactly). */
static uint64_t divide_signed(pn_binary_op op, int64_t a, int64_t b, int_fault* fault) {
    if (b == 0) {
        *fault = INT_DIVISION_BY_ZERO;
        return 0;
    }
    if (b == -1) { /* INT64_MIN / -1 overflows in C: the wrapped results */
        return op == PN_BINARY_DIV ? 0u - (uint64_t)a : 0u;
    }
    if (op == PN_BINARY_DIV) {
        return (uint64_t)(a / b); /* C truncates toward zero */
    }
    int64_t r = a % b; /* the sign of a: FMOD */
    if (op == PN_BINARY_MOD && r != 0 && ((r < 0) != (b < 0))) {
        r += b;
    }
    return (uint64_t)r;
}

/* A shift of a value of `bits` bits (loaded sign- or zero-extended into 64). */
static uint64_t shift(pn_binary_op op, uint64_t a, int64_t amount, uint32_t bits, int is_signed) {
    int negative = is_signed && (int64_t)a < 0;
    if (amount < 0 || (uint64_t)amount >= bits) {
        return op == PN_BINARY_SHIFT_RIGHT && negative ? UINT64_MAX : 0u;
    }
    if (op == PN_BINARY_SHIFT_LEFT) {
        return a << amount; /* the store keeps the low `bits` bits */
    }
    /* Right: arithmetic for negative signed values (without relying on C's >> of them). */
    return negative ? ~(~a >> amount) : a >> amount;
}

/* An arithmetic, bitwise or logic operation of two integers of one type (as 64-bit patterns),
 * the result's pattern (wrapped to the width when stored). */
static uint64_t binary_int(pn_binary_op op, uint64_t a, uint64_t b, pn_data_type dtype,
                           int_fault* fault) {
    int is_signed = cpuref_domain_of(dtype) == CPUREF_SIGNED;
    switch (op) {
    case PN_BINARY_ADD: return a + b;
    case PN_BINARY_SUB: return a - b;
    case PN_BINARY_MUL: return a * b;
    case PN_BINARY_MAXIMUM: return compare_int(PN_BINARY_LESS, a, b, is_signed) ? b : a;
    case PN_BINARY_MINIMUM: return compare_int(PN_BINARY_LESS, b, a, is_signed) ? b : a;
    case PN_BINARY_DIV:
    case PN_BINARY_MOD:
    case PN_BINARY_FMOD:
        if (is_signed) {
            return divide_signed(op, (int64_t)a, (int64_t)b, fault);
        }
        if (b == 0) {
            *fault = INT_DIVISION_BY_ZERO;
            return 0;
        }
        return op == PN_BINARY_DIV ? a / b : a % b; /* MOD and FMOD agree without signs */
    case PN_BINARY_POWER:
        if (is_signed && (int64_t)b < 0) {
            *fault = INT_NEGATIVE_EXPONENT;
            return 0;
        }
        return power_wrapping(a, b);
    case PN_BINARY_LOGICAL_AND: return a && b;
    case PN_BINARY_LOGICAL_OR: return a || b;
    case PN_BINARY_LOGICAL_XOR: return (a != 0) != (b != 0);
    case PN_BINARY_BITWISE_AND: return a & b;
    case PN_BINARY_BITWISE_OR: return a | b;
    case PN_BINARY_BITWISE_XOR: return a ^ b;
    case PN_BINARY_SHIFT_LEFT:
    case PN_BINARY_SHIFT_RIGHT:
        /* An unsigned amount beyond INT64_MAX is beyond every width too. */
        return shift(op, a, !is_signed && b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)b,
                     cpuref_bits(dtype), is_signed);
    default: return 0; /* unreachable: validation gives integers no other operation */
    }
}

/* Element `i` of input `k` as a 64-bit pattern: signed types sign-extended. */
static uint64_t load_pattern(const cpuref_op* op, const void* const* in, uint32_t k, int64_t i) {
    pn_data_type dtype = op->inputs[k].dtype;
    return cpuref_domain_of(dtype) == CPUREF_SIGNED ? (uint64_t)pn_load_int64(dtype, in[k], i)
                                                    : pn_load_uint64(dtype, in[k], i);
}

static const char* binary_op_name(pn_binary_op op) {
    switch (op) {
    case PN_BINARY_DIV: return "DIV";
    case PN_BINARY_MOD: return "MOD";
    case PN_BINARY_FMOD: return "FMOD";
    case PN_BINARY_POWER: return "POWER";
    default: return "?";
    }
}

static void format_integer(uint64_t v, int is_signed, char* buf, size_t capacity) {
    if (is_signed) {
        snprintf(buf, capacity, "%lld", (long long)(int64_t)v);
    } else {
        snprintf(buf, capacity, "%llu", (unsigned long long)v);
    }
}

static pn_status integer_failure(const cpuref_op* op, int_fault fault, uint64_t a, uint64_t b,
                                 int64_t element, pn_string_out* message_out) {
    int is_signed = cpuref_domain_of(op->inputs[0].dtype) == CPUREF_SIGNED;
    char av[32], bv[32];
    format_integer(a, is_signed, av, sizeof(av));
    format_integer(b, is_signed, bv, sizeof(bv));
    const char* dtype = pn_dtype_name(op->inputs[0].dtype);
    if (fault == INT_DIVISION_BY_ZERO) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "ElementwiseBinary: %s integer division by zero (%s %s %s) at output "
                       "element %lld", dtype, av, binary_op_name(op->desc.binary.op), bv,
                       (long long)element);
    }
    return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                   "ElementwiseBinary: %s POWER with a negative exponent (%s to the power %s) at "
                   "output element %lld; integer powers need exponents >= 0", dtype, av, bv,
                   (long long)element);
}

static pn_status binary_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    const pn_tensor_info* y = &op->outputs[0];
    pn_binary_op bop = op->desc.binary.op;
    pn_data_type dtype = op->inputs[0].dtype;
    int comparison = pn_binary_op_is_comparison(bop);
    int floats = cpuref_domain_of(dtype) == CPUREF_FLOAT;
    int64_t offsets[2], index[PN_MAX_DIMS];
    cpuref_broadcast_begin(op, op->strides, offsets, index);
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        if (floats) {
            double a = pn_load_double(dtype, in[0], offsets[0]);
            double b = pn_load_double(dtype, in[1], offsets[1]);
            if (comparison) {
                ((uint8_t*)out[0])[i] = (uint8_t)compare_float(bop, a, b);
            } else {
                pn_store_double(y->dtype, out[0], i, cpuref_fused(op, binary_float(bop, a, b)));
            }
        } else {
            uint64_t a = load_pattern(op, in, 0, offsets[0]);
            uint64_t b = load_pattern(op, in, 1, offsets[1]);
            if (comparison) {
                ((uint8_t*)out[0])[i] =
                    (uint8_t)compare_int(bop, a, b, cpuref_domain_of(dtype) == CPUREF_SIGNED);
            } else {
                int_fault fault = INT_OK;
                uint64_t r = binary_int(bop, a, b, dtype, &fault);
                if (fault != INT_OK) {
                    return integer_failure(op, fault, a, b, i, message_out);
                }
                pn_store_uint64(y->dtype, out[0], i, r);
            }
        }
        cpuref_broadcast_next(op, op->strides, offsets, index);
    }
    return PN_OK;
}

pn_status cpuref_binary_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    return cpuref_typed_workload_new(layer, sizeof(*d), d->fused_activation, binary_kernel, NULL,
                                     workload_out, message_out);
}

/* ---- ELEMENTWISE_VARIADIC ----------------------------------------------------------- */

/* One output element of floats: the inputs folded in order, in double. */
static double variadic_float(const cpuref_op* op, const void* const* in, const int64_t* offsets) {
    double acc = pn_load_double(op->inputs[0].dtype, in[0], offsets[0]);
    for (uint32_t k = 1; k < op->num_inputs; ++k) {
        double v = pn_load_double(op->inputs[k].dtype, in[k], offsets[k]);
        switch (op->desc.variadic.op) {
        case PN_VARIADIC_MAXIMUM: acc = maximum(acc, v); break;
        case PN_VARIADIC_MINIMUM: acc = minimum(acc, v); break;
        default: acc += v; break; /* SUM and MEAN */
        }
    }
    return op->desc.variadic.op == PN_VARIADIC_MEAN ? acc / (double)op->num_inputs : acc;
}

/* One output element of integers (MEAN is float only): exact, SUM wrapping. */
static uint64_t variadic_int(const cpuref_op* op, const void* const* in, const int64_t* offsets) {
    int is_signed = cpuref_domain_of(op->inputs[0].dtype) == CPUREF_SIGNED;
    uint64_t acc = load_pattern(op, in, 0, offsets[0]);
    for (uint32_t k = 1; k < op->num_inputs; ++k) {
        uint64_t v = load_pattern(op, in, k, offsets[k]);
        switch (op->desc.variadic.op) {
        case PN_VARIADIC_MAXIMUM: acc = compare_int(PN_BINARY_LESS, acc, v, is_signed) ? v : acc; break;
        case PN_VARIADIC_MINIMUM: acc = compare_int(PN_BINARY_LESS, v, acc, is_signed) ? v : acc; break;
        default: acc += v; break;
        }
    }
    return acc;
}

static pn_status variadic_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                 pn_string_out* message_out) {
    (void)message_out;
    const pn_tensor_info* y = &op->outputs[0];
    int64_t* offsets = (int64_t*)op->priv;
    int64_t index[PN_MAX_DIMS];
    int floats = cpuref_domain_of(y->dtype) == CPUREF_FLOAT;
    cpuref_broadcast_begin(op, op->strides, offsets, index);
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        if (floats) {
            pn_store_double(y->dtype, out[0], i, variadic_float(op, in, offsets));
        } else {
            pn_store_uint64(y->dtype, out[0], i, variadic_int(op, in, offsets));
        }
        cpuref_broadcast_next(op, op->strides, offsets, index);
    }
    return PN_OK;
}

pn_status cpuref_variadic_create(void* context, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    int64_t* offsets = (int64_t*)calloc(layer->num_inputs, sizeof(int64_t));
    if (offsets == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating an ElementwiseVariadic workload");
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_elementwise_variadic_desc), NULL,
                                     variadic_kernel, offsets, workload_out, message_out);
}
