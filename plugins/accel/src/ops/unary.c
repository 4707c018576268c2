/* ELEMENTWISE_UNARY on float32: the float operations transformers and CNN exports use, one
 * vectorized pass (kernels/row_kernels_body.h's unary_row) split over the pool; and ABS, NEG and
 * SIGN on int32 and int64 (position arithmetic: T5's relative position buckets), in two's
 * complement as CpuRef computes them (the lowest value's ABS and NEG wrap to itself). The rest is
 * refused. */
#include "ops/create.h"
#include "kernels/row_kernels.h"

#include <stdlib.h>

#define MIN_PARALLEL 32768 /* elements per thread below which a wake-up does not pay */

typedef struct unary_priv {
    pn_unary_op op;
    const accel_row_kernels* tk;
    pn_data_type dtype;
} unary_priv;

static int integer_op(pn_unary_op op) { return op == PN_UNARY_ABS || op == PN_UNARY_NEG || op == PN_UNARY_SIGN; }

/* The name of a float operation CpuAcc runs, NULL for the others. */
static const char* runs(pn_unary_op op) {
    switch (op) {
    case PN_UNARY_ABS: return "ABS";
    case PN_UNARY_NEG: return "NEG";
    case PN_UNARY_SIGN: return "SIGN";
    case PN_UNARY_RECIPROCAL: return "RECIPROCAL";
    case PN_UNARY_SQRT: return "SQRT";
    case PN_UNARY_RSQRT: return "RSQRT";
    case PN_UNARY_EXP: return "EXP";
    case PN_UNARY_LOG: return "LOG";
    case PN_UNARY_ERF: return "ERF";
    case PN_UNARY_SIN: return "SIN";
    case PN_UNARY_COS: return "COS";
    case PN_UNARY_FLOOR: return "FLOOR";
    case PN_UNARY_CEIL: return "CEIL";
    case PN_UNARY_ROUND: return "ROUND";
    default: return NULL;
    }
}

/* The name of any other operation, for refusals. */
static const char* other_name(pn_unary_op op) {
    static const char* const names[] = {"TAN", "ASIN", "ACOS", "ATAN", "SINH", "COSH", "ASINH",
                                        "ACOSH", "ATANH"};
    static const char* const tests[] = {"IS_NAN", "IS_INF", "IS_POS_INF", "IS_NEG_INF",
                                        "LOGICAL_NOT", "BITWISE_NOT"};
    if (op >= PN_UNARY_TAN && op <= PN_UNARY_ATANH) {
        return names[op - PN_UNARY_TAN];
    }
    if (op >= PN_UNARY_IS_NAN && op <= PN_UNARY_BITWISE_NOT) {
        return tests[op - PN_UNARY_IS_NAN];
    }
    return "?";
}

pn_status accel_unary_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_elementwise_unary_desc* d = (const pn_elementwise_unary_desc*)layer->descriptor;
    if (runs(d->op) == NULL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s has no ElementwiseUnary kernel for %s (it runs ABS, NEG, SIGN on float32, int32 "
                       "and int64, RECIPROCAL, SQRT, RSQRT, EXP, LOG, ERF, SIN, COS, FLOOR, CEIL, ROUND on float32)",
                       plugin->id, other_name(d->op));
    }
    const pn_data_type t = layer->inputs[0].dtype;
    if ((t == PN_DTYPE_INT32 || t == PN_DTYPE_INT64) && !integer_op(d->op)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs ElementwiseUnary on %s for ABS, NEG and SIGN only, not %s",
                       plugin->id, pn_dtype_name(t), runs(d->op));
    }
    return t == PN_DTYPE_INT32 || t == PN_DTYPE_INT64 ? PN_OK : pn_plugin_float32_only(plugin, layer, reason);
}

#define INTEGER_ROW(T, U)                                                                         \
    {                                                                                             \
        const T* x = (const T*)j->x + b;                                                          \
        T* y = (T*)j->y + b;                                                                      \
        for (int64_t i = 0; i < e - b; ++i) {                                                     \
            const U a = (U)x[i];                                                                  \
            y[i] = p->op == PN_UNARY_NEG ? (T)(0u - a)                                             \
                   : p->op == PN_UNARY_ABS ? (x[i] < 0 ? (T)(0u - a) : x[i])                        \
                                           : (T)(x[i] < 0 ? -1 : x[i] > 0);                        \
        }                                                                                         \
    }                                                                                             \
    break;

typedef struct unary_job {
    const accel_op* op;
    const float* x;
    float* y;
} unary_job;

static void unary_range(void* raw, int64_t b, int64_t e) {
    const unary_job* j = (const unary_job*)raw;
    const unary_priv* p = (const unary_priv*)j->op->priv;
    switch (p->dtype) {
    case PN_DTYPE_INT32: INTEGER_ROW(int32_t, uint32_t)
    case PN_DTYPE_INT64: INTEGER_ROW(int64_t, uint64_t)
    default: p->tk->unary_row(p->op, j->x + b, j->y + b, e - b); break;
    }
}
#undef INTEGER_ROW

static void unary_kernel(const accel_op* op, const float* const* in, float* const* out) {
    unary_job j = {op, in[0], out[0]};
    accel_parallel_for_grain(op->env.threads, pn_num_elements(&op->outputs[0]), MIN_PARALLEL,
                             unary_range, &j);
}

pn_status accel_unary_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    unary_priv* p = (unary_priv*)malloc(sizeof(*p));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    p->op = ((const pn_elementwise_unary_desc*)layer->descriptor)->op;
    p->tk = accel_kernel_set_for(env->isa)->rows;
    p->dtype = layer->inputs[0].dtype;
    return accel_workload_new(env, layer, 0, NULL, unary_kernel, p, workload_out, message_out);
}
