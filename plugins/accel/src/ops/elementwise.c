/* ELEMENTWISE_BINARY and ELEMENTWISE_VARIADIC: broadcasting collapsed into rows whose
 * inputs are each either contiguous or one scalar, rows (and long rows' chunks) split
 * over the pool. Float32 arithmetic runs the ISA's row kernels; integer arithmetic (int32,
 * int64: the shape and position arithmetic of exported transformers) and comparisons (bool
 * output, float32 or integer operands) run plain C loops over the same rows (accel_binary_typed). */
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

/* Where row `row` of the plan starts in a and in b (element offsets). */
static void row_offsets(const bcast_plan* p, int64_t row, int64_t* offa, int64_t* offb) {
    int64_t a = 0, b = 0, rem = row;
    for (int32_t d = (int32_t)p->rank - 2; d >= 0; --d) {
        int64_t idx = rem % p->dims[d];
        rem /= p->dims[d];
        a += idx * p->sa[d];
        b += idx * p->sb[d];
    }
    *offa = a;
    *offb = b;
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
        int64_t offa, offb;
        row_offsets(p, row, &offa, &offb);
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

/* ---- Integer arithmetic and comparisons ------------------------------------------ */

/* Whether `op` on operands of `t` has a loop below: ADD, SUB, MUL (wrapping, as the header
 * asks), MAXIMUM, MINIMUM and the bitwise ones on int32 / int64; the comparisons on those and
 * float32. DIV, MOD, FMOD and POWER on integers (which fail execute() on a zero divisor or a
 * negative exponent), the shifts and every other type are CpuRef's. */
static int typed_op(pn_binary_op op, pn_data_type t) {
    const int integer = t == PN_DTYPE_INT32 || t == PN_DTYPE_INT64;
    switch (op) {
    case PN_BINARY_ADD: case PN_BINARY_SUB: case PN_BINARY_MUL: case PN_BINARY_MAXIMUM: case PN_BINARY_MINIMUM:
    case PN_BINARY_BITWISE_AND: case PN_BINARY_BITWISE_OR: case PN_BINARY_BITWISE_XOR:
        return integer;
    case PN_BINARY_EQUAL: case PN_BINARY_LESS: case PN_BINARY_LESS_EQUAL: case PN_BINARY_GREATER:
    case PN_BINARY_GREATER_EQUAL:
        return integer || t == PN_DTYPE_FLOAT32;
    default:
        return 0;
    }
}

int accel_binary_typed(const pn_layer* layer) {
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    return d != NULL && layer->num_inputs == 2 && typed_op(d->op, layer->inputs[0].dtype);
}

/* y[i] = a[i * ra] op b[i * rb] for i < n, T the operands' type, U its unsigned twin (the
 * wrapping arithmetic), Y the output's (T, or unsigned char for a comparison). */
#define TYPED_ROW(NAME, T, U)                                                                        \
    static void NAME(pn_binary_op op, const T* a, int ra, const T* b, int rb, void* out, int64_t n) { \
        T* y = (T*)out;                                                                              \
        unsigned char* m = (unsigned char*)out;                                                      \
        for (int64_t i = 0; i < n; ++i) {                                                            \
            const T x = a[ra ? i : 0], z = b[rb ? i : 0];                                            \
            switch (op) {                                                                            \
            case PN_BINARY_ADD: y[i] = (T)((U)x + (U)z); break;                                      \
            case PN_BINARY_SUB: y[i] = (T)((U)x - (U)z); break;                                      \
            case PN_BINARY_MUL: y[i] = (T)((U)x * (U)z); break;                                      \
            case PN_BINARY_MAXIMUM: y[i] = x > z ? x : z; break;                                     \
            case PN_BINARY_MINIMUM: y[i] = x < z ? x : z; break;                                     \
            case PN_BINARY_BITWISE_AND: y[i] = (T)((U)x & (U)z); break;                              \
            case PN_BINARY_BITWISE_OR: y[i] = (T)((U)x | (U)z); break;                               \
            case PN_BINARY_BITWISE_XOR: y[i] = (T)((U)x ^ (U)z); break;                              \
            case PN_BINARY_EQUAL: m[i] = x == z; break;                                              \
            case PN_BINARY_LESS: m[i] = x < z; break;                                                \
            case PN_BINARY_LESS_EQUAL: m[i] = x <= z; break;                                         \
            case PN_BINARY_GREATER: m[i] = x > z; break;                                             \
            case PN_BINARY_GREATER_EQUAL: m[i] = x >= z; break;                                      \
            default: break; /* refused at create (typed_op) */                                       \
            }                                                                                        \
        }                                                                                            \
    }

TYPED_ROW(row_int32, int32_t, uint32_t)
TYPED_ROW(row_int64, int64_t, uint64_t)

/* Float32 operands: only the comparisons come here (NaN compares false, as in C). */
static void row_float32_compare(pn_binary_op op, const float* a, int ra, const float* b, int rb, void* out,
                                int64_t n) {
    unsigned char* m = (unsigned char*)out;
    for (int64_t i = 0; i < n; ++i) {
        const float x = a[ra ? i : 0], z = b[rb ? i : 0];
        switch (op) {
        case PN_BINARY_EQUAL: m[i] = x == z; break;
        case PN_BINARY_LESS: m[i] = x < z; break;
        case PN_BINARY_LESS_EQUAL: m[i] = x <= z; break;
        case PN_BINARY_GREATER: m[i] = x > z; break;
        case PN_BINARY_GREATER_EQUAL: m[i] = x >= z; break;
        default: break;
        }
    }
}

typedef struct typed_job {
    const bcast_plan* plan;
    pn_binary_op binop;
    pn_data_type dtype;    /* the operands' */
    size_t in_size, out_size;
    const unsigned char* a;
    const unsigned char* b;
    unsigned char* y;
} typed_job;

static void typed_range(void* raw, int64_t u0, int64_t u1) {
    const typed_job* j = (const typed_job*)raw;
    const bcast_plan* p = j->plan;
    const uint32_t inner = p->rank - 1;
    const int64_t len = p->dims[inner];
    const int ra = p->sa[inner] != 0, rb = p->sb[inner] != 0;
    for (int64_t row = u0; row < u1; ++row) { /* one unit per row: these rows are short */
        int64_t offa, offb;
        row_offsets(p, row, &offa, &offb);
        const unsigned char* a = j->a + (size_t)offa * j->in_size;
        const unsigned char* b = j->b + (size_t)offb * j->in_size;
        unsigned char* y = j->y + (size_t)(row * len) * j->out_size;
        if (j->dtype == PN_DTYPE_INT64) {
            row_int64(j->binop, (const int64_t*)(const void*)a, ra, (const int64_t*)(const void*)b, rb, y, len);
        } else if (j->dtype == PN_DTYPE_INT32) {
            row_int32(j->binop, (const int32_t*)(const void*)a, ra, (const int32_t*)(const void*)b, rb, y, len);
        } else {
            row_float32_compare(j->binop, (const float*)(const void*)a, ra, (const float*)(const void*)b, rb, y,
                                len);
        }
    }
}

static void typed_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const bcast_plan* p = (const bcast_plan*)op->priv;
    const pn_data_type t = op->inputs[0].dtype;
    typed_job j = {p, op->desc.binary.op, t, pn_dtype_size(t), pn_dtype_size(op->outputs[0].dtype),
                   (const unsigned char*)(const void*)in[0], (const unsigned char*)(const void*)in[1],
                   (unsigned char*)(void*)out[0]};
    const int64_t len = p->dims[p->rank - 1];
    accel_parallel_for_grain(op->env.threads, p->rows, MIN_PARALLEL / (len + 1) + 1, typed_range, &j);
}

static pn_status typed_create(const accel_env* env, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    bcast_plan* p = (bcast_plan*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    plan_make(&layer->inputs[0], &layer->inputs[1], &layer->outputs[0], p);
    return accel_workload_new(env, layer, sizeof(pn_elementwise_binary_desc), NULL, typed_kernel, p,
                              workload_out, message_out);
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
    if (accel_binary_typed(layer)) { /* integers, comparisons: above */
        return typed_create(env, layer, workload_out, message_out);
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

/* int32 / int64 SUM (wrapping), MAXIMUM and MINIMUM: the same left fold over the typed rows
 * (T5's relative-position buckets: a Min of int64 positions). One input is a broadcast copy. */
static void typed_variadic_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const bcast_plan* plans = (const bcast_plan*)op->priv;
    const uint32_t n = op->num_inputs;
    const pn_data_type t = op->inputs[0].dtype;
    const size_t size = pn_dtype_size(t);
    const pn_binary_op step = n == 1 ? PN_BINARY_MAXIMUM : variadic_step_op(op->desc.variadic.op);
    unsigned char* y = (unsigned char*)(void*)out[0];
    for (uint32_t k = 1; k < (n > 1 ? n : 2); ++k) {
        const bcast_plan* p = &plans[k - 1];
        const unsigned char* a = k == 1 ? (const unsigned char*)(const void*)in[0] : y;
        const unsigned char* b = (const unsigned char*)(const void*)in[n > 1 ? k : 0];
        typed_job j = {p, step, t, size, size, a, b, y};
        const int64_t len = p->dims[p->rank - 1];
        accel_parallel_for_grain(op->env.threads, p->rows, MIN_PARALLEL / (len + 1) + 1, typed_range, &j);
    }
}

int accel_variadic_typed(const pn_layer* layer) {
    const pn_elementwise_variadic_desc* d = (const pn_elementwise_variadic_desc*)layer->descriptor;
    const pn_data_type t = layer->num_inputs > 0 ? layer->inputs[0].dtype : PN_DTYPE_INVALID;
    return d != NULL && (t == PN_DTYPE_INT32 || t == PN_DTYPE_INT64) && d->op >= PN_VARIADIC_SUM &&
           d->op <= PN_VARIADIC_MINIMUM;
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
                              accel_variadic_typed(layer) ? typed_variadic_kernel : variadic_kernel, plans,
                              workload_out, message_out);
}
