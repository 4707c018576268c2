/* The layers transformers' exports build their attention masks with, so a mask of [S, S]
 * elements does not cross to the next backend three times per run:
 *   SELECT (ONNX Where) with a BOOL condition and a, b and output of any element type of 1, 2, 4
 *   or 8 bytes (float32 from two scalars: the ISA's select_row);
 *   EXPAND of any element type (a broadcast copy, element by element of its size);
 *   ELEMENTWISE_BINARY LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR on BOOL.
 * Every operand is broadcast to the output through element strides (dims of size 1 and
 * missing leading dims stride 0), the output walked row by row, rows split over the pool.
 * BOOL bytes are read as "not 0" and written 0 or 1. */
#include "ops/create.h"
#include "kernels/row_kernels.h"

#include <stdlib.h>
#include <string.h>

#define MIN_PARALLEL 65536 /* elements per thread below which a wake-up does not pay */
#define MAX_OPERANDS 3

typedef struct mask_plan {
    uint32_t rank;                          /* the merged output dims, rows last */
    int64_t dims[PN_MAX_DIMS];
    int64_t st[MAX_OPERANDS][PN_MAX_DIMS];  /* element strides of each operand */
    uint32_t n;                             /* operands */
    int64_t rows;                           /* product of dims[0, rank - 1) */
    size_t es;                              /* output element size (EXPAND) */
    int op;                                 /* 0 SELECT, 1 EXPAND, else the pn_binary_op */
    int float_values;                       /* SELECT of float32 values */
    const accel_row_kernels* tk;             /* SELECT of two scalars: the ISA's select_row */
} mask_plan;

/* The output dims with the operands' broadcast strides, size-1 dims dropped and dims merged
 * where every operand is contiguous across them. */
static void plan_make(const pn_layer* layer, uint32_t n, mask_plan* p) {
    const pn_tensor_info* y = &layer->outputs[0];
    int64_t s[MAX_OPERANDS][PN_MAX_DIMS];
    for (uint32_t k = 0; k < n; ++k) {
        if (pn_broadcast_strides(&layer->inputs[k], y, s[k]) != 0) {
            memset(s[k], 0, sizeof(s[k])); /* unreachable after validation */
        }
    }
    uint32_t r = 0;
    for (uint32_t i = 0; i < y->rank; ++i) {
        if (y->dims[i] == 1) {
            continue;
        }
        int merge = r > 0;
        for (uint32_t k = 0; k < n && merge; ++k) {
            merge = p->st[k][r - 1] == s[k][i] * y->dims[i];
        }
        if (merge) {
            p->dims[r - 1] *= y->dims[i];
            for (uint32_t k = 0; k < n; ++k) {
                p->st[k][r - 1] = s[k][i];
            }
            continue;
        }
        p->dims[r] = y->dims[i];
        for (uint32_t k = 0; k < n; ++k) {
            p->st[k][r] = s[k][i];
        }
        ++r;
    }
    if (r == 0) {
        p->dims[0] = 1;
        for (uint32_t k = 0; k < n; ++k) {
            p->st[k][0] = 0;
        }
        r = 1;
    }
    p->rank = r;
    p->n = n;
    p->rows = 1;
    for (uint32_t i = 0; i + 1 < r; ++i) {
        p->rows *= p->dims[i];
    }
}

/* Element offsets of each operand at the start of output row `row`. */
static void row_offsets(const mask_plan* p, int64_t row, int64_t* off) {
    for (uint32_t k = 0; k < p->n; ++k) {
        off[k] = 0;
    }
    for (int32_t i = (int32_t)p->rank - 2; i >= 0; --i) {
        const int64_t idx = row % p->dims[i];
        row /= p->dims[i];
        for (uint32_t k = 0; k < p->n; ++k) {
            off[k] += idx * p->st[k][i];
        }
    }
}

typedef struct mask_job {
    const mask_plan* p;
    const void* const* in;
    void* out;
} mask_job;

#define SELECT_LOOP(T)                                                                      \
    {                                                                                       \
        const T* a = (const T*)in[1] + off[1];                                              \
        const T* b = (const T*)in[2] + off[2];                                              \
        T* y = (T*)out;                                                                     \
        for (int64_t i = 0; i < len; ++i) {                                                 \
            y[i] = c[i * sc] != 0 ? a[i * sa] : b[i * sb];                                  \
        }                                                                                   \
    }                                                                                       \
    break;

/* One output row of values moved as elements of p->es bytes (the ISA's select_row for float32
 * rows from a condition and two scalars). */
static void select_row(const mask_plan* p, const int64_t* off, const void* const* in, void* out, int64_t len) {
    const uint8_t* c = (const uint8_t*)in[0] + off[0];
    const int64_t sc = p->st[0][p->rank - 1], sa = p->st[1][p->rank - 1], sb = p->st[2][p->rank - 1];
    if (p->float_values && sc == 1 && sa == 0 && sb == 0) { /* a mask from a condition and two constants */
        p->tk->select_row(c, len, ((const float*)in[1] + off[1])[0], ((const float*)in[2] + off[2])[0], (float*)out);
        return;
    }
    switch (p->es) {
    case 1: SELECT_LOOP(uint8_t)
    case 2: SELECT_LOOP(uint16_t)
    case 4: SELECT_LOOP(uint32_t)
    default: SELECT_LOOP(uint64_t)
    }
}
#undef SELECT_LOOP

static void expand_row(const mask_plan* p, const int64_t* off, const void* const* in, char* y, int64_t len) {
    const size_t es = p->es;
    const char* x = (const char*)in[0] + off[0] * (int64_t)es;
    const int64_t sx = p->st[0][p->rank - 1];
    if (sx == 1) {
        memcpy(y, x, (size_t)len * es);
        return;
    }
    switch (es) { /* sx == 0: one element repeated */
    case 1: memset(y, x[0], (size_t)len); break;
    case 2: { uint16_t v; memcpy(&v, x, 2); for (int64_t i = 0; i < len; ++i) memcpy(y + 2 * i, &v, 2); } break;
    case 4: { uint32_t v; memcpy(&v, x, 4); for (int64_t i = 0; i < len; ++i) memcpy(y + 4 * i, &v, 4); } break;
    default: for (int64_t i = 0; i < len; ++i) memcpy(y + (size_t)i * es, x, es); break;
    }
}

/* a op b over one row, for the stride pairs broadcasts make (1 1, 1 0, 0 1) and any other. */
#define LOGIC_LOOPS(EXPR)                                                                    \
    do {                                                                                     \
        if (sa == 1 && sb == 1) {                                                            \
            for (int64_t i = 0; i < len; ++i) { const int x = a[i] != 0, z = b[i] != 0; y[i] = (uint8_t)(EXPR); } \
        } else if (sa == 0 && sb == 1) {                                                     \
            const int x = a[0] != 0;                                                         \
            for (int64_t i = 0; i < len; ++i) { const int z = b[i] != 0; y[i] = (uint8_t)(EXPR); } \
        } else if (sa == 1 && sb == 0) {                                                     \
            const int z = b[0] != 0;                                                         \
            for (int64_t i = 0; i < len; ++i) { const int x = a[i] != 0; y[i] = (uint8_t)(EXPR); } \
        } else {                                                                             \
            for (int64_t i = 0; i < len; ++i) {                                              \
                const int x = a[i * sa] != 0, z = b[i * sb] != 0;                            \
                y[i] = (uint8_t)(EXPR);                                                      \
            }                                                                                \
        }                                                                                    \
    } while (0)

static void logic_row(const mask_plan* p, const int64_t* off, const void* const* in, uint8_t* y, int64_t len) {
    const uint8_t* a = (const uint8_t*)in[0] + off[0];
    const uint8_t* b = (const uint8_t*)in[1] + off[1];
    const int64_t sa = p->st[0][p->rank - 1], sb = p->st[1][p->rank - 1];
    if ((sa == 0) != (sb == 0)) { /* one operand one value along the row (an [S, 1] & [1, S] mask) */
        const int x = (sa == 0 ? a[0] : b[0]) != 0;
        const uint8_t* v = sa == 0 ? b : a;
        const int64_t sv = sa == 0 ? sb : sa;
        const int fill = p->op == PN_BINARY_LOGICAL_AND ? (x ? -1 : 0) : p->op == PN_BINARY_LOGICAL_OR ? (x ? 1 : -1)
                                                                                                     : -1;
        if (fill >= 0) { /* AND with 0, OR with 1: the row is that value */
            memset(y, fill, (size_t)len);
        } else if (sv == 1) { /* the other operand as 0 / 1, inverted for XOR with 1 */
            const uint8_t flip = (uint8_t)(p->op == PN_BINARY_LOGICAL_XOR && x);
            for (int64_t i = 0; i < len; ++i) {
                y[i] = (uint8_t)((v[i] != 0) ^ flip);
            }
        } else {
            const uint8_t flip = (uint8_t)(p->op == PN_BINARY_LOGICAL_XOR && x);
            for (int64_t i = 0; i < len; ++i) {
                y[i] = (uint8_t)((v[i * sv] != 0) ^ flip);
            }
        }
        return;
    }
    switch (p->op) {
    case PN_BINARY_LOGICAL_AND: LOGIC_LOOPS(x & z); break;
    case PN_BINARY_LOGICAL_OR: LOGIC_LOOPS(x | z); break;
    default: LOGIC_LOOPS(x ^ z); break; /* LOGICAL_XOR */
    }
}
#undef LOGIC_LOOPS

static void rows_range(void* raw, int64_t b, int64_t e) {
    const mask_job* j = (const mask_job*)raw;
    const mask_plan* p = j->p;
    const int64_t len = p->dims[p->rank - 1];
    for (int64_t r = b; r < e; ++r) {
        int64_t off[MAX_OPERANDS];
        row_offsets(p, r, off);
        if (p->op == 0) {
            select_row(p, off, j->in, (char*)j->out + (size_t)(r * len) * p->es, len);
        } else if (p->op == 1) {
            expand_row(p, off, j->in, (char*)j->out + (size_t)(r * len) * p->es, len);
        } else {
            logic_row(p, off, j->in, (uint8_t*)j->out + r * len, len);
        }
    }
}

static void mask_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const mask_plan* p = (const mask_plan*)op->priv;
    mask_job j = {p, (const void* const*)in, out[0]};
    const int64_t len = p->dims[p->rank - 1];
    accel_parallel_for_grain(op->env.threads, p->rows, MIN_PARALLEL / (len > 0 ? len : 1) + 1, rows_range, &j);
}

static pn_status create(void* context, const pn_layer* layer, uint32_t n, int op, pn_workload** workload_out,
                        pn_string_out* message_out) {
    mask_plan* p = (mask_plan*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    plan_make(layer, n, p);
    p->op = op;
    p->es = pn_dtype_size(layer->outputs[0].dtype);
    p->float_values = layer->outputs[0].dtype == PN_DTYPE_FLOAT32;
    p->tk = accel_kernel_set_for(((const accel_env*)context)->isa)->rows;
    return accel_workload_new((const accel_env*)context, layer, 0, NULL, mask_kernel, p, workload_out,
                              message_out);
}

/* ---- SELECT -------------------------------------------------------------------------------- */

/* Values of any element type the kinds that move bytes take (accel_move_check: 1, 2, 4 or 8
 * bytes, quantized ones sharing one scale and zero point), a and b of one type (the shared
 * validation); the condition BOOL. */
pn_status accel_select_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const size_t es = pn_dtype_size(layer->inputs[1].dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Select on values of 1, 2, 4 or 8 bytes; input 1 is %s",
                       plugin->id, pn_dtype_name(layer->inputs[1].dtype));
    }
    const pn_tensor_info* t[3] = {&layer->inputs[1], &layer->inputs[2], &layer->outputs[0]};
    for (uint32_t i = 1; i < 3; ++i) {
        const int qa = PN_HAS_FIELD(t[0], pn_tensor_info, quant_zero_point);
        const int qb = PN_HAS_FIELD(t[i], pn_tensor_info, quant_zero_point);
        if ((qa ? t[0]->quant_scale : 0.0f) != (qb ? t[i]->quant_scale : 0.0f) ||
            (qa ? t[0]->quant_zero_point : 0) != (qb ? t[i]->quant_zero_point : 0)) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Select as a move of elements: %s's quantization is "
                           "not input 1's", plugin->id, i == 1 ? "input 2" : "output 0");
        }
    }
    return PN_OK;
}

pn_status accel_select_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    return create(context, layer, 3, 0, workload_out, message_out);
}

/* ---- EXPAND ---------------------------------------------------------------------------------- */

pn_status accel_expand_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    return create(context, layer, 1, 1, workload_out, message_out);
}

/* ---- ELEMENTWISE_BINARY on BOOL ---------------------------------------------------------------- */

int accel_logic_binary(const pn_layer* layer) {
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    return d != NULL && layer->num_inputs == 2 && layer->inputs[0].dtype == PN_DTYPE_BOOL &&
           (d->op == PN_BINARY_LOGICAL_AND || d->op == PN_BINARY_LOGICAL_OR || d->op == PN_BINARY_LOGICAL_XOR);
}

pn_status accel_logic_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    return create(context, layer, 2, (int)d->op, workload_out, message_out);
}
