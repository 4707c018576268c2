/* ELEMENTWISE_BINARY and ELEMENTWISE_VARIADIC: broadcasting collapsed into rows whose
 * inputs are each either contiguous or one scalar, rows (and long rows' chunks) split
 * over the pool. */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

#define ROW_CHUNK 8192          /* elements per work unit of a long row */
#define MIN_PARALLEL 32768      /* fewer elements per thread than this: not worth a wake-up */

/* a op b broadcast to the output, as rows: dims[0..rank-1) are walked, dims[rank-1] is the
 * row; sa/sb are element strides (the row strides are 0 or 1). */
typedef struct bcast_plan {
    uint32_t rank;
    int64_t dims[PN_MAX_DIMS];
    int64_t sa[PN_MAX_DIMS];
    int64_t sb[PN_MAX_DIMS];
    int64_t rows;
    int64_t chunks_per_row;
} bcast_plan;

static void plan_make(const pn_tensor_info* a, const pn_tensor_info* b, const pn_tensor_info* y,
                      bcast_plan* p) {
    int64_t sa[PN_MAX_DIMS] = {0}, sb[PN_MAX_DIMS] = {0};
    if (pn_broadcast_strides(a, y, sa) != 0 || pn_broadcast_strides(b, y, sb) != 0) {
        for (uint32_t i = 0; i < PN_MAX_DIMS; ++i) { /* unreachable after validation */
            sa[i] = sb[i] = 0;
        }
    }
    uint32_t r = 0;
    for (uint32_t i = 0; i < y->rank; ++i) {
        if (y->dims[i] == 1) {
            continue; /* size-1 dims move nothing */
        }
        if (r > 0 && p->sa[r - 1] == sa[i] * y->dims[i] && p->sb[r - 1] == sb[i] * y->dims[i]) {
            p->dims[r - 1] *= y->dims[i]; /* merge with the previous dim */
            p->sa[r - 1] = sa[i];
            p->sb[r - 1] = sb[i];
            continue;
        }
        p->dims[r] = y->dims[i];
        p->sa[r] = sa[i];
        p->sb[r] = sb[i];
        ++r;
    }
    if (r == 0) {
        p->dims[0] = 1;
        p->sa[0] = p->sb[0] = 1;
        r = 1;
    }
    p->rank = r;
    int64_t len = p->dims[r - 1];
    p->rows = 1;
    for (uint32_t i = 0; i + 1 < r; ++i) {
        p->rows *= p->dims[i];
    }
    p->chunks_per_row = len > ROW_CHUNK ? (len + ROW_CHUNK - 1) / ROW_CHUNK : 1;
}

typedef struct bcast_job {
    const accel_op* op;
    const bcast_plan* plan;
    pn_binary_op binop;
    const float* a;
    const float* b;
    float* y;
    const pn_activation_desc* act; /* applied to each finished chunk, or NULL */
} bcast_job;

static void bcast_range(void* raw, int64_t u0, int64_t u1) {
    const bcast_job* j = (const bcast_job*)raw;
    const bcast_plan* p = j->plan;
    const uint32_t inner = p->rank - 1;
    const int64_t len = p->dims[inner];
    const int ra = p->sa[inner] != 0, rb = p->sb[inner] != 0;
    const int64_t cpr = p->chunks_per_row;
    int64_t u = u0;
    while (u < u1) {
        int64_t row = u / cpr, c = u % cpr;
        int64_t offa = 0, offb = 0, rem = row;
        for (int32_t d = (int32_t)inner - 1; d >= 0; --d) {
            int64_t idx = rem % p->dims[d];
            rem /= p->dims[d];
            offa += idx * p->sa[d];
            offb += idx * p->sb[d];
        }
        int64_t c_end = c + (u1 - u);
        c_end = c_end > cpr ? cpr : c_end;
        int64_t begin = c * ROW_CHUNK;
        int64_t end = cpr == 1 ? len : c_end * ROW_CHUNK;
        end = end > len ? len : end;
        float* y = j->y + row * len + begin;
        const float* a = j->a + offa + (ra ? begin : 0);
        const float* b = j->b + offb + (rb ? begin : 0);
        if (j->op->stream_out) {
            j->op->k->binary_row_stream(j->binop, a, ra, b, rb, j->act, y, end - begin);
        } else {
            j->op->k->binary_row(j->binop, a, ra, b, rb, y, end - begin);
            if (j->act != NULL) {
                j->op->k->activation(j->act, y, y, end - begin);
            }
        }
        u += c_end - c;
    }
}

static void bcast_run(const accel_op* op, const bcast_plan* p, pn_binary_op binop, const float* a,
                      const float* b, float* y, const pn_activation_desc* act) {
    bcast_job j = {op, p, binop, a, b, y, act};
    int64_t units = p->rows * p->chunks_per_row;
    int64_t per_unit = p->dims[p->rank - 1] / p->chunks_per_row + 1;
    int64_t grain = MIN_PARALLEL / per_unit;
    accel_parallel_for_grain(op->env.threads, units, grain, bcast_range, &j);
}

/* ---- ELEMENTWISE_BINARY ------------------------------------------------------ */

/* A binary layer's plan; `expanded` (one allocation with it) is operand `which` broadcast to
 * the output's shape, or NULL. */
typedef struct binary_priv {
    bcast_plan plan;
    int which;
    float* expanded;
} binary_priv;

static void binary_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const binary_priv* p = (const binary_priv*)op->priv;
    const float* a = p->expanded != NULL && p->which == 0 ? p->expanded : in[0];
    const float* b = p->expanded != NULL && p->which == 1 ? p->expanded : in[1];
    bcast_run(op, &p->plan, op->desc.binary.op, a, b, out[0],
              op->has_activation ? &op->activation : NULL);
}

/* Rows shorter than this, with a constant operand broadcast along the dims outside them (YOLO's
 * anchors [1, 3, 1, 1, 2] times box sizes [1, 3, 28, 28, 2]: 2352 rows of 2), cost a call and
 * an offset computation per row: the constant is expanded to the output's shape once, when the
 * workload is made (at most EXPAND_MAX elements), and the layer runs as one contiguous row. */
#define SHORT_ROW 16
#define EXPAND_MAX 65536

pn_status accel_binary_create(void* context, const pn_layer* layer,
                              pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    if (accel_logic_binary(layer)) { /* LOGICAL_AND/OR/XOR on BOOL: ops/mask_ops.c */
        return accel_logic_create(context, layer, workload_out, message_out);
    }
    const pn_tensor_info* y = &layer->outputs[0];
    bcast_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan_make(&layer->inputs[0], &layer->inputs[1], y, &plan);
    int which = -1;
    const int64_t total = pn_num_elements(y);
    for (int k = 1; k >= 0 && plan.rows > 1 && plan.dims[plan.rank - 1] < SHORT_ROW && total <= EXPAND_MAX; --k) {
        if (which < 0 && layer->constant_data != NULL && layer->constant_data[k] != NULL &&
            layer->inputs[k].dtype == PN_DTYPE_FLOAT32 && !pn_same_dims(&layer->inputs[k], y)) {
            which = k;
        }
    }
    size_t extra = which >= 0 ? (size_t)total * sizeof(float) : 0;
    binary_priv* p = (binary_priv*)calloc(1, sizeof(*p) + extra);
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    p->plan = plan;
    p->which = which;
    if (which >= 0) {
        int64_t st[PN_MAX_DIMS] = {0}, idx[PN_MAX_DIMS] = {0};
        const float* c = (const float*)layer->constant_data[which];
        p->expanded = (float*)(void*)(p + 1);
        if (pn_broadcast_strides(&layer->inputs[which], y, st) != 0) {
            free(p);
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc: operand %d does not broadcast", which);
        }
        int64_t off = 0;
        for (int64_t i = 0; i < total; ++i) { /* an odometer over y's dims, off the constant's element */
            p->expanded[i] = c[off];
            for (int32_t a = (int32_t)y->rank - 1; a >= 0; --a) {
                off += st[a];
                if (++idx[a] < y->dims[a]) break;
                off -= st[a] * y->dims[a];
                idx[a] = 0;
            }
        }
        const pn_tensor_info* other = &layer->inputs[1 - which];
        plan_make(which == 0 ? y : other, which == 1 ? y : other, y, &p->plan);
    }
    return accel_workload_new(env, layer, sizeof(*d), d->fused_activation, binary_kernel, p,
                              workload_out, message_out);
}

/* ---- ELEMENTWISE_VARIADIC: a left fold of binary steps ------------------------ */

static pn_binary_op variadic_step_op(pn_variadic_op op) {
    switch (op) {
    case PN_VARIADIC_MAXIMUM: return PN_BINARY_MAXIMUM;
    case PN_VARIADIC_MINIMUM: return PN_BINARY_MINIMUM;
    default: return PN_BINARY_ADD; /* SUM, MEAN */
    }
}

typedef struct scale_job {
    const accel_op* op;
    float* y;
    float s;
} scale_job;

static void scale_range(void* raw, int64_t b, int64_t e) {
    const scale_job* j = (const scale_job*)raw;
    j->op->k->scale(j->y + b, j->s, e - b);
}

static void variadic_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const bcast_plan* plans = (const bcast_plan*)op->priv;
    const uint32_t n = op->num_inputs;
    pn_binary_op step = variadic_step_op(op->desc.variadic.op);
    if (n == 1) {
        /* max(x, x) == x, NaN included: a broadcast copy. */
        bcast_run(op, &plans[0], PN_BINARY_MAXIMUM, in[0], in[0], out[0], NULL);
        return;
    }
    bcast_run(op, &plans[0], step, in[0], in[1], out[0], NULL);
    for (uint32_t k = 2; k < n; ++k) {
        bcast_run(op, &plans[k - 1], step, out[0], in[k], out[0], NULL);
    }
    if (op->desc.variadic.op == PN_VARIADIC_MEAN) {
        scale_job j = {op, out[0], 1.0f / (float)n};
        accel_parallel_for_grain(op->env.threads, pn_num_elements(&op->outputs[0]), MIN_PARALLEL,
                                 scale_range, &j);
    }
}

pn_status accel_variadic_create(void* context, const pn_layer* layer,
                                pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    uint32_t n = layer->num_inputs;
    bcast_plan* plans = (bcast_plan*)calloc(n > 1 ? n - 1 : 1, sizeof(*plans));
    if (plans == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    const pn_tensor_info* y = &layer->outputs[0];
    if (n == 1) {
        plan_make(&layer->inputs[0], &layer->inputs[0], y, &plans[0]);
    } else {
        plan_make(&layer->inputs[0], &layer->inputs[1], y, &plans[0]);
        for (uint32_t k = 2; k < n; ++k) {
            plan_make(y, &layer->inputs[k], y, &plans[k - 1]);
        }
    }
    return accel_workload_new(env, layer, sizeof(pn_elementwise_variadic_desc), NULL,
                              variadic_kernel, plans, workload_out, message_out);
}
