/* REDUCE: the twelve reductions of backend_api.h (pn_reduce_op) on every element type each
 * allows. Floats are read as double and reduced in double; integers exactly (SUM, PROD, L1,
 * SUM_SQUARE modulo 2^64, which the store wraps to the type's width; MAX, MIN, ARG_* compared
 * as int64 or uint64; MEAN and L2 in double, truncated by the store). */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

/* x seen as the kept axes (one output element each) and the reduced axes (walked per
 * output element), each with x's element strides. */
typedef struct reduce_plan {
    uint32_t kept_rank, reduced_rank;
    int64_t kept_dims[PN_MAX_DIMS], kept_strides[PN_MAX_DIMS];
    int64_t reduced_dims[PN_MAX_DIMS], reduced_strides[PN_MAX_DIMS];
    int64_t count;   /* elements per reduction (1 when nothing is reduced) */
    int64_t outputs; /* output elements */
} reduce_plan;

/* Walks the offsets of a dense index space: `offset` follows index . strides. */
typedef struct odometer {
    uint32_t rank;
    const int64_t* dims;
    const int64_t* strides;
    int64_t index[PN_MAX_DIMS];
    int64_t offset;
} odometer;

static void odometer_start(odometer* o, uint32_t rank, const int64_t* dims, const int64_t* strides,
                           int64_t base) {
    o->rank = rank;
    o->dims = dims;
    o->strides = strides;
    for (uint32_t i = 0; i < PN_MAX_DIMS; ++i) {
        o->index[i] = 0;
    }
    o->offset = base;
}

static void odometer_next(odometer* o) {
    for (uint32_t k = o->rank; k-- > 0;) {
        o->offset += o->strides[k];
        if (++o->index[k] < o->dims[k]) {
            return;
        }
        o->offset -= o->strides[k] * o->dims[k];
        o->index[k] = 0;
    }
}

/* ---- One reduction per element class --------------------------------------------- */

/* Larger (ARG_MAX) or smaller (ARG_MIN) in the order where NaN is the most extreme value:
 * 1 when a beats b, 0 when they tie, -1 when b beats a. */
static int float_rank(double a, double b, int max) {
    int an = isnan(a), bn = isnan(b);
    if (an || bn) {
        return an - bn;
    }
    if (a == b) {
        return 0;
    }
    return (a > b) == (max != 0) ? 1 : -1;
}

static double reduce_float(const reduce_plan* p, pn_reduce_op op, int last, pn_data_type t,
                           const void* x, int64_t base) {
    odometer o;
    odometer_start(&o, p->reduced_rank, p->reduced_dims, p->reduced_strides, base);
    double acc = 0.0;
    switch (op) {
    case PN_REDUCE_MAX:
    case PN_REDUCE_MIN:
    case PN_REDUCE_LOG_SUM_EXP: {
        int max = op != PN_REDUCE_MIN;
        acc = max ? -INFINITY : INFINITY;
        for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
            double v = pn_load_double(t, x, o.offset);
            if (isnan(v) || (max ? v > acc : v < acc)) {
                acc = isnan(acc) ? acc : v;
            }
        }
        if (op != PN_REDUCE_LOG_SUM_EXP || isnan(acc) || isinf(acc)) {
            return acc; /* LOG_SUM_EXP: all -inf (or none) is -inf, a +inf gives +inf */
        }
        double shift = acc, sum = 0.0;
        odometer_start(&o, p->reduced_rank, p->reduced_dims, p->reduced_strides, base);
        for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
            sum += exp(pn_load_double(t, x, o.offset) - shift);
        }
        return shift + log(sum);
    }
    case PN_REDUCE_ARG_MAX:
    case PN_REDUCE_ARG_MIN: {
        int max = op == PN_REDUCE_ARG_MAX;
        double best = pn_load_double(t, x, o.offset);
        int64_t at = 0;
        odometer_next(&o);
        for (int64_t i = 1; i < p->count; ++i, odometer_next(&o)) {
            int r = float_rank(pn_load_double(t, x, o.offset), best, max);
            if (r > 0 || (r == 0 && last)) {
                best = pn_load_double(t, x, o.offset);
                at = i;
            }
        }
        return (double)at;
    }
    case PN_REDUCE_PROD: acc = 1.0; break;
    default: break;
    }
    for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
        double v = pn_load_double(t, x, o.offset);
        switch (op) {
        case PN_REDUCE_PROD: acc *= v; break;
        case PN_REDUCE_L1: acc += fabs(v); break;
        case PN_REDUCE_L2:
        case PN_REDUCE_SUM_SQUARE: acc += v * v; break;
        default: acc += v; break; /* SUM, MEAN, LOG_SUM */
        }
    }
    switch (op) {
    case PN_REDUCE_MEAN: return p->count > 0 ? acc / (double)p->count : NAN;
    case PN_REDUCE_L2: return sqrt(acc);
    case PN_REDUCE_LOG_SUM: return log(acc);
    default: return acc;
    }
}

/* The lowest and highest value of an integer (or BOOL) type, as int64 (signed) or uint64. */
static int64_t signed_lowest(pn_data_type t) {
    switch (t) {
    case PN_DTYPE_INT8: return INT8_MIN;
    case PN_DTYPE_INT16: return INT16_MIN;
    case PN_DTYPE_INT32: return INT32_MIN;
    default: return INT64_MIN;
    }
}

static int64_t signed_highest(pn_data_type t) {
    switch (t) {
    case PN_DTYPE_INT8: return INT8_MAX;
    case PN_DTYPE_INT16: return INT16_MAX;
    case PN_DTYPE_INT32: return INT32_MAX;
    default: return INT64_MAX;
    }
}

static uint64_t unsigned_highest(pn_data_type t) {
    switch (t) {
    case PN_DTYPE_BOOL: return 1u;
    case PN_DTYPE_UINT8: return UINT8_MAX;
    case PN_DTYPE_UINT16: return UINT16_MAX;
    case PN_DTYPE_UINT32: return UINT32_MAX;
    default: return UINT64_MAX;
    }
}

/* MAX, MIN, ARG_MAX, ARG_MIN of a signed integer type; stores the result at out[i]. */
static void reduce_signed_order(const reduce_plan* p, pn_reduce_op op, int last, pn_data_type t,
                                const void* x, int64_t base, pn_data_type out_t, void* out,
                                int64_t i_out) {
    odometer o;
    odometer_start(&o, p->reduced_rank, p->reduced_dims, p->reduced_strides, base);
    int max = op == PN_REDUCE_MAX || op == PN_REDUCE_ARG_MAX;
    int64_t best = max ? signed_lowest(t) : signed_highest(t), at = -1;
    for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
        int64_t v = pn_load_int64(t, x, o.offset);
        int better = max ? v > best : v < best;
        if (at < 0 || better || (last && v == best)) {
            best = v;
            at = i;
        }
    }
    if (op == PN_REDUCE_ARG_MAX || op == PN_REDUCE_ARG_MIN) {
        pn_store_int64(out_t, out, i_out, at);
    } else {
        pn_store_int64(out_t, out, i_out, best);
    }
}

/* The same for the unsigned integer types and BOOL. */
static void reduce_unsigned_order(const reduce_plan* p, pn_reduce_op op, int last, pn_data_type t,
                                  const void* x, int64_t base, pn_data_type out_t, void* out,
                                  int64_t i_out) {
    odometer o;
    odometer_start(&o, p->reduced_rank, p->reduced_dims, p->reduced_strides, base);
    int max = op == PN_REDUCE_MAX || op == PN_REDUCE_ARG_MAX;
    uint64_t best = max ? 0u : unsigned_highest(t);
    int64_t at = -1;
    for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
        uint64_t v = pn_load_uint64(t, x, o.offset);
        int better = max ? v > best : v < best;
        if (at < 0 || better || (last && v == best)) {
            best = v;
            at = i;
        }
    }
    if (op == PN_REDUCE_ARG_MAX || op == PN_REDUCE_ARG_MIN) {
        pn_store_int64(out_t, out, i_out, at);
    } else {
        pn_store_uint64(out_t, out, i_out, best);
    }
}

/* SUM, PROD, L1, SUM_SQUARE of an integer type, exact modulo 2^64 (the store wraps). */
static uint64_t reduce_integer_wrapping(const reduce_plan* p, pn_reduce_op op, pn_data_type t,
                                        const void* x, int64_t base) {
    odometer o;
    odometer_start(&o, p->reduced_rank, p->reduced_dims, p->reduced_strides, base);
    int is_signed = pn_dtype_is_signed(t);
    uint64_t acc = op == PN_REDUCE_PROD ? 1u : 0u;
    for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
        uint64_t v = pn_load_uint64(t, x, o.offset); /* signed values: their two's complement */
        switch (op) {
        case PN_REDUCE_PROD: acc *= v; break;
        case PN_REDUCE_L1:
            acc += is_signed && pn_load_int64(t, x, o.offset) < 0 ? 0u - v : v;
            break;
        case PN_REDUCE_SUM_SQUARE: acc += v * v; break;
        default: acc += v; break;
        }
    }
    return acc;
}

/* MEAN and L2 of an integer type, in double (the store truncates toward zero). */
static double reduce_integer_in_double(const reduce_plan* p, pn_reduce_op op, pn_data_type t,
                                       const void* x, int64_t base) {
    odometer o;
    odometer_start(&o, p->reduced_rank, p->reduced_dims, p->reduced_strides, base);
    double acc = 0.0;
    for (int64_t i = 0; i < p->count; ++i, odometer_next(&o)) {
        double v = pn_load_double(t, x, o.offset);
        acc += op == PN_REDUCE_L2 ? v * v : v;
    }
    if (op == PN_REDUCE_L2) {
        return sqrt(acc);
    }
    return p->count > 0 ? acc / (double)p->count : 0.0;
}

/* ---- Kernel ------------------------------------------------------------------------ */

static pn_status reduce_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    (void)message_out;
    const reduce_plan* p = (const reduce_plan*)op->priv;
    const pn_reduce_desc* d = &op->desc.reduce;
    pn_data_type t = op->inputs[0].dtype, out_t = op->outputs[0].dtype;
    int last = d->select_last_index != 0;
    int order = d->op == PN_REDUCE_MAX || d->op == PN_REDUCE_MIN || d->op == PN_REDUCE_ARG_MAX ||
                d->op == PN_REDUCE_ARG_MIN;
    odometer kept;
    odometer_start(&kept, p->kept_rank, p->kept_dims, p->kept_strides, 0);
    for (int64_t i = 0; i < p->outputs; ++i, odometer_next(&kept)) {
        int64_t base = kept.offset;
        if (pn_dtype_is_float(t)) {
            double v = reduce_float(p, d->op, last, t, in[0], base);
            if (out_t == PN_DTYPE_INT64) {
                pn_store_int64(out_t, out[0], i, (int64_t)v); /* an ARG_* index */
            } else {
                pn_store_double(out_t, out[0], i, v);
            }
        } else if (order) {
            if (pn_dtype_is_signed(t)) {
                reduce_signed_order(p, d->op, last, t, in[0], base, out_t, out[0], i);
            } else {
                reduce_unsigned_order(p, d->op, last, t, in[0], base, out_t, out[0], i);
            }
        } else if (d->op == PN_REDUCE_MEAN || d->op == PN_REDUCE_L2) {
            pn_store_double(out_t, out[0], i, reduce_integer_in_double(p, d->op, t, in[0], base));
        } else {
            pn_store_uint64(out_t, out[0], i, reduce_integer_wrapping(p, d->op, t, in[0], base));
        }
    }
    return PN_OK;
}

pn_status cpuref_reduce_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    (void)context;
    const pn_reduce_desc* d = (const pn_reduce_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    reduce_plan* p = (reduce_plan*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a Reduce "
                       "workload");
    }
    int64_t stride = 1;
    int64_t strides[PN_MAX_DIMS];
    for (uint32_t i = x->rank; i-- > 0;) {
        strides[i] = stride;
        stride *= x->dims[i];
    }
    p->count = 1;
    p->outputs = 1;
    for (uint32_t i = 0; i < x->rank; ++i) {
        int reduced = 0;
        for (uint32_t j = 0; j < d->num_axes; ++j) {
            reduced |= d->axes[j] == i;
        }
        if (reduced) {
            p->reduced_dims[p->reduced_rank] = x->dims[i];
            p->reduced_strides[p->reduced_rank++] = strides[i];
            p->count *= x->dims[i];
        } else {
            p->kept_dims[p->kept_rank] = x->dims[i];
            p->kept_strides[p->kept_rank++] = strides[i];
            p->outputs *= x->dims[i];
        }
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_reduce_desc), NULL, reduce_kernel, p,
                                     workload_out, message_out);
}
