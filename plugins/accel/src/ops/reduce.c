/* REDUCE on float32 over any set of axes, keep_dims or not. The dims are merged into runs of
 * reduced and kept dims (size-1 dims dropped), then:
 *   - the innermost merged dim reduced: every output element reduces runs of that many
 *     contiguous floats, one vector pass per run (kernels/row_kernels_body.h's reduce_run), output elements
 *     split over the pool;
 *   - the innermost merged dim kept: output rows of that many floats accumulate whole rows of x
 *     (reduce_cols, in double), rows and column chunks split over the pool.
 * ARG_MAX / ARG_MIN (one axis; INT64 output): a strided scan per output element, or the
 * column form when the axis is not innermost. Floats accumulate in float vector lanes over
 * blocks, in double across blocks and runs; the result is rounded once. */
#include "ops/create.h"
#include "kernels/row_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_PARALLEL 32768 /* elements per thread below which a wake-up does not pay */
#define COLS 512           /* output columns per unit of the column form */

typedef struct red_dims {
    uint32_t n;
    int64_t size[PN_MAX_DIMS];
    int64_t stride[PN_MAX_DIMS]; /* in x's elements */
} red_dims;

typedef struct reduce_priv {
    const accel_row_kernels* tk;
    pn_reduce_op op;
    int inner_reduced;      /* 1: runs of `inner` contiguous floats are reduced */
    int64_t inner;          /* the innermost merged dim's size (reduced or kept) */
    red_dims kept, red;     /* the other merged dims (inner excluded), in order */
    int64_t count;          /* elements reduced per output element */
    int64_t outer;          /* output elements (inner reduced) or output rows (inner kept) */
    int64_t chunks;         /* column chunks per output row (inner kept) */
    /* ARG_MAX / ARG_MIN */
    int is_min, last;
    int64_t a_outer, a_len, a_inner;
} reduce_priv;

pn_status accel_reduce_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_reduce_desc* d = (const pn_reduce_desc*)layer->descriptor;
    if (d->op == PN_REDUCE_ARG_MAX || d->op == PN_REDUCE_ARG_MIN) {
        if (layer->inputs[0].dtype != PN_DTYPE_FLOAT32) { /* the output is INT64 by definition */
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Reduce on float32 only; input 0 is %s",
                           plugin->id, pn_dtype_name(layer->inputs[0].dtype));
        }
        return PN_OK;
    }
    return pn_plugin_float32_only(plugin, layer, reason);
}

/* The offset of index t of the dims d (row-major over d's sizes). */
static int64_t offset_of(const red_dims* d, int64_t t) {
    int64_t off = 0;
    for (int32_t i = (int32_t)d->n - 1; i >= 0; --i) {
        off += (t % d->size[i]) * d->stride[i];
        t /= d->size[i];
    }
    return off;
}

static accel_row_red accumulation(pn_reduce_op op) {
    switch (op) {
    case PN_REDUCE_MAX: return ACCEL_ROW_MAX;
    case PN_REDUCE_MIN: return ACCEL_ROW_MIN;
    case PN_REDUCE_PROD: return ACCEL_ROW_PROD;
    case PN_REDUCE_L1: return ACCEL_ROW_ABS;
    case PN_REDUCE_L2:
    case PN_REDUCE_SUM_SQUARE: return ACCEL_ROW_SUMSQ;
    case PN_REDUCE_LOG_SUM_EXP: return ACCEL_ROW_MAX; /* first pass; then EXPSUM */
    default: return ACCEL_ROW_SUM;                    /* SUM, MEAN, LOG_SUM */
    }
}

/* The start value of an accumulation. */
static double start_of(accel_row_red red) {
    return red == ACCEL_ROW_MAX ? -INFINITY : red == ACCEL_ROW_MIN ? INFINITY : red == ACCEL_ROW_PROD ? 1.0 : 0.0;
}

/* Combines two partial results of `red` (NaN wins for MAX and MIN). */
static double combine(accel_row_red red, double a, double b) {
    switch (red) {
    case ACCEL_ROW_MAX: return (b > a || b != b) && a == a ? b : a;
    case ACCEL_ROW_MIN: return (b < a || b != b) && a == a ? b : a;
    case ACCEL_ROW_PROD: return a * b;
    default: return a + b;
    }
}

/* The output of op from the accumulated value (and the max m of LOG_SUM_EXP). */
static float finish(pn_reduce_op op, double acc, double m, int64_t count) {
    switch (op) {
    case PN_REDUCE_MEAN: return (float)(acc / (double)count);
    case PN_REDUCE_L2: return (float)sqrt(acc);
    case PN_REDUCE_LOG_SUM: return (float)log(acc);
    case PN_REDUCE_LOG_SUM_EXP:
        /* m NaN: a NaN was reduced; m -inf: all -inf; m +inf: +inf (x - m would be NaN) */
        return m != m || isinf(m) ? (float)m : (float)(m + log(acc));
    default: return (float)acc;
    }
}

/* The value of an empty reduction (backend_api.h). */
static float empty_value(pn_reduce_op op) {
    switch (op) {
    case PN_REDUCE_PROD: return 1.0f;
    case PN_REDUCE_MEAN: return NAN;
    case PN_REDUCE_MAX: return -INFINITY;
    case PN_REDUCE_MIN: return INFINITY;
    case PN_REDUCE_LOG_SUM:
    case PN_REDUCE_LOG_SUM_EXP: return -INFINITY;
    default: return 0.0f;
    }
}

typedef struct reduce_job {
    const reduce_priv* p;
    const float* x;
    float* y;
    int64_t* yi;
} reduce_job;

/* ---- The innermost merged dim reduced: output elements [b, e) ------------------------------ */

/* The accumulation `red` over every run of output element o (EXPSUM about m). */
static double runs_of(const reduce_priv* p, const float* x, accel_row_red red, float m) {
    double acc = start_of(red);
    const int64_t runs = p->count / p->inner;
    for (int64_t t = 0; t < runs; ++t) {
        acc = combine(red, acc, p->tk->reduce_run(red, x + offset_of(&p->red, t), p->inner, m));
    }
    return acc;
}

static void inner_range(void* raw, int64_t b, int64_t e) {
    const reduce_job* j = (const reduce_job*)raw;
    const reduce_priv* p = j->p;
    const accel_row_red red = accumulation(p->op);
    for (int64_t o = b; o < e; ++o) {
        const float* x = j->x + offset_of(&p->kept, o);
        double acc = runs_of(p, x, red, 0.0f), m = 0.0;
        if (p->op == PN_REDUCE_LOG_SUM_EXP) {
            m = acc;
            acc = m == m && !isinf(m) ? runs_of(p, x, ACCEL_ROW_EXPSUM, (float)m) : 0.0;
        }
        j->y[o] = finish(p->op, acc, m, p->count);
    }
}

/* ---- The innermost merged dim kept: (output row, column chunk) units [b, e) ---------------- */

static void cols_range(void* raw, int64_t b, int64_t e) {
    const reduce_job* j = (const reduce_job*)raw;
    const reduce_priv* p = j->p;
    const accel_row_red red = accumulation(p->op);
    double acc[COLS], m[COLS];
    for (int64_t u = b; u < e; ++u) {
        const int64_t row = u / p->chunks, c0 = (u % p->chunks) * COLS;
        const int64_t w = p->inner - c0 < COLS ? p->inner - c0 : COLS;
        const float* x = j->x + offset_of(&p->kept, row) + c0;
        for (int64_t i = 0; i < w; ++i) {
            acc[i] = start_of(red);
        }
        for (int64_t t = 0; t < p->count; ++t) {
            p->tk->reduce_cols(red, acc, x + offset_of(&p->red, t), w, NULL);
        }
        if (p->op == PN_REDUCE_LOG_SUM_EXP) {
            for (int64_t i = 0; i < w; ++i) {
                m[i] = acc[i];
                acc[i] = 0.0;
            }
            for (int64_t t = 0; t < p->count; ++t) {
                p->tk->reduce_cols(ACCEL_ROW_EXPSUM, acc, x + offset_of(&p->red, t), w, m);
            }
        }
        float* y = j->y + row * p->inner + c0;
        for (int64_t i = 0; i < w; ++i) {
            y[i] = finish(p->op, acc[i], p->op == PN_REDUCE_LOG_SUM_EXP ? m[i] : 0.0, p->count);
        }
    }
}

/* ---- ARG_MAX / ARG_MIN ----------------------------------------------------------------------- */

static void arg_range(void* raw, int64_t b, int64_t e) {
    const reduce_job* j = (const reduce_job*)raw;
    const reduce_priv* p = j->p;
    for (int64_t u = b; u < e; ++u) {
        if (p->a_inner == 1) {
            j->yi[u] = p->tk->arg_run(p->is_min, p->last, j->x + u * p->a_len, p->a_len, 1);
            continue;
        }
        const int64_t o = u / p->chunks, c0 = (u % p->chunks) * COLS;
        const int64_t w = p->a_inner - c0 < COLS ? p->a_inner - c0 : COLS;
        const float* x = j->x + o * p->a_len * p->a_inner + c0;
        int64_t* idx = j->yi + o * p->a_inner + c0;
        float best[COLS];
        memcpy(best, x, (size_t)w * sizeof(float));
        memset(idx, 0, (size_t)w * sizeof(int64_t));
        for (int64_t l = 1; l < p->a_len; ++l) {
            p->tk->arg_cols(p->is_min, p->last, best, idx, x + l * p->a_inner, w, l);
        }
    }
}

static void reduce_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const reduce_priv* p = (const reduce_priv*)op->priv;
    reduce_job j = {p, in[0], out[0], (int64_t*)(void*)out[0]};
    if (p->op == PN_REDUCE_ARG_MAX || p->op == PN_REDUCE_ARG_MIN) {
        const int64_t units = p->a_inner == 1 ? p->a_outer : p->a_outer * p->chunks;
        const int64_t per = p->a_inner == 1 ? p->a_len : p->a_len * COLS;
        accel_parallel_for_grain(op->env.threads, units, MIN_PARALLEL / per + 1, arg_range, &j);
        return;
    }
    if (p->count == 0) {
        const int64_t n = pn_num_elements(&op->outputs[0]);
        const float v = empty_value(p->op);
        for (int64_t i = 0; i < n; ++i) {
            j.y[i] = v;
        }
        return;
    }
    if (p->inner_reduced) {
        accel_parallel_for_grain(op->env.threads, p->outer, MIN_PARALLEL / p->count + 1, inner_range, &j);
    } else {
        const int64_t per = p->count * (p->inner < COLS ? p->inner : COLS);
        accel_parallel_for_grain(op->env.threads, p->outer * p->chunks, MIN_PARALLEL / per + 1,
                                 cols_range, &j);
    }
}

/* Merges x's dims (size-1 dims dropped) into runs of reduced and kept dims and splits off the
 * innermost one. */
static void plan(const pn_tensor_info* x, const pn_reduce_desc* d, reduce_priv* p) {
    unsigned char reduced[PN_MAX_DIMS] = {0};
    for (uint32_t i = 0; i < d->num_axes; ++i) {
        reduced[d->axes[i]] = 1;
    }
    int64_t size[PN_MAX_DIMS], stride[PN_MAX_DIMS];
    unsigned char flag[PN_MAX_DIMS];
    uint32_t n = 0;
    int64_t s = 1;
    for (int32_t i = (int32_t)x->rank - 1; i >= 0; --i) { /* innermost first */
        const int64_t dim = x->dims[i];
        if (dim != 1) {
            if (n > 0 && flag[n - 1] == reduced[i]) {
                size[n - 1] *= dim;
            } else {
                size[n] = dim;
                stride[n] = s;
                flag[n] = reduced[i];
                ++n;
            }
        }
        s *= dim;
    }
    p->count = 1;
    for (uint32_t i = 0; i < n; ++i) {
        p->count *= flag[i] ? size[i] : 1;
    }
    if (n == 0) { /* every dim is 1: one element, nothing merged */
        size[0] = 1;
        stride[0] = 1;
        flag[0] = 0;
        n = 1;
    }
    p->inner_reduced = flag[0];
    p->inner = size[0];
    for (int32_t i = (int32_t)n - 1; i >= 1; --i) { /* outermost first */
        red_dims* t = flag[i] ? &p->red : &p->kept;
        t->size[t->n] = size[i];
        t->stride[t->n] = stride[i];
        ++t->n;
    }
    p->outer = 1;
    for (uint32_t i = 0; i < p->kept.n; ++i) {
        p->outer *= p->kept.size[i];
    }
    p->chunks = (p->inner + COLS - 1) / COLS;
}

pn_status accel_reduce_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_reduce_desc* d = (const pn_reduce_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    reduce_priv* p = (reduce_priv*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    p->tk = accel_kernel_set_for(env->isa)->rows;
    p->op = d->op;
    if (d->op == PN_REDUCE_ARG_MAX || d->op == PN_REDUCE_ARG_MIN) {
        const uint32_t axis = d->axes[0];
        p->is_min = d->op == PN_REDUCE_ARG_MIN;
        p->last = d->select_last_index != 0;
        p->a_outer = accel_span(x, 0, axis);
        p->a_len = x->dims[axis];
        p->a_inner = accel_span(x, axis + 1, x->rank);
        p->chunks = (p->a_inner + COLS - 1) / COLS;
    } else {
        plan(x, d, p);
    }
    return accel_workload_new(env, layer, 0, NULL, reduce_kernel, p, workload_out, message_out);
}
