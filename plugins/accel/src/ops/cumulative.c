/* CUMULATIVE (ONNX CumSum, CumProd; backend_api.h, pn_cumulative_desc) on int32, int64 and
 * float32 along any axis, forward or reverse, inclusive or exclusive: integers modulo 2^64
 * stored wrapped to their width, float32 accumulated in double and each output rounded once,
 * as CpuRef computes (its bits). The position ids exported transformers make (Range as an
 * exclusive cumulative sum of ones, GPT-2's and Llama's cumsum of the attention mask) run here.
 * Lines split over the pool. */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

typedef struct cumulative_state {
    accel_env env;
    pn_cumulative_desc desc;
    pn_tensor_info infos[2]; /* x, output */
    int64_t outer, len, inner;
} cumulative_state;

typedef struct cumulative_job {
    const cumulative_state* s;
    const void* x;
    void* y;
} cumulative_job;

#define LINE(T, ACC, ZERO, ONE, ADD, MUL)                                                          \
    {                                                                                             \
        const T* x = (const T*)j->x;                                                              \
        T* y = (T*)j->y;                                                                          \
        ACC value = prod ? (ONE) : (ZERO);                                                        \
        for (int64_t step = 0; step < s->len; ++step) {                                           \
            const int64_t at = base + (s->desc.reverse ? s->len - 1 - step : step) * s->inner;    \
            if (s->desc.exclusive) {                                                              \
                y[at] = (T)value;                                                                 \
            }                                                                                     \
            value = prod ? MUL(value, x[at]) : ADD(value, x[at]);                                 \
            if (!s->desc.exclusive) {                                                             \
                y[at] = (T)value;                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

#define WRAP_ADD(a, b) ((a) + (uint64_t)(int64_t)(b))
#define WRAP_MUL(a, b) ((a) * (uint64_t)(int64_t)(b))
#define F_ADD(a, b) ((a) + (double)(b))
#define F_MUL(a, b) ((a) * (double)(b))

static void cumulative_lines(void* raw, int64_t begin, int64_t end) {
    const cumulative_job* j = (const cumulative_job*)raw;
    const cumulative_state* s = j->s;
    const int prod = s->desc.op == PN_CUMULATIVE_PROD;
    for (int64_t line = begin; line < end; ++line) {
        const int64_t base = (line / s->inner) * s->len * s->inner + line % s->inner;
        switch (s->infos[0].dtype) {
        case PN_DTYPE_INT32: LINE(int32_t, uint64_t, 0u, 1u, WRAP_ADD, WRAP_MUL) break;
        case PN_DTYPE_INT64: LINE(int64_t, uint64_t, 0u, 1u, WRAP_ADD, WRAP_MUL) break;
        default: LINE(float, double, 0.0, 1.0, F_ADD, F_MUL) break;
        }
    }
}

static pn_status cumulative_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const cumulative_state* s = (const cumulative_state*)raw;
    pn_status st = pn_check_execute_args(args, 1, &s->infos[0], 1, &s->infos[1], "CpuAcc", message_out);
    const int64_t lines = s->outer * s->inner;
    if (st != PN_OK || lines == 0 || s->len == 0) {
        return st;
    }
    cumulative_job job = {s, args->inputs[0].data, args->outputs[0].data};
    accel_parallel_for_grain(s->env.threads, lines, 16384 / (s->len + 1) + 1, cumulative_lines, &job);
    return PN_OK;
}

pn_status accel_cumulative_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_data_type t = layer->inputs[0].dtype;
    if (t != PN_DTYPE_INT32 && t != PN_DTYPE_INT64 && t != PN_DTYPE_FLOAT32) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Cumulative on int32, int64 and float32 only; input 0 is %s",
                       plugin->id, pn_dtype_name(t));
    }
    return PN_OK;
}

static void cumulative_release(void* raw) { free(raw); }

pn_status accel_cumulative_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                  pn_string_out* message_out) {
    cumulative_state* s = (cumulative_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Cumulative workload");
    }
    s->env = *(const accel_env*)context;
    s->desc = *(const pn_cumulative_desc*)layer->descriptor;
    accel_copy_layer_infos(s->infos, layer); /* x, output */
    const pn_tensor_info* x = &s->infos[0];
    const uint32_t axis = (uint32_t)pn_normalize_axis(s->desc.axis, x->rank);
    s->outer = accel_span(x, 0, axis);
    s->len = x->dims[axis];
    s->inner = accel_span(x, axis + 1, x->rank);
    *workload_out = pn_workload_new(s, cumulative_execute, cumulative_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Cumulative workload");
    }
    return PN_OK;
}
