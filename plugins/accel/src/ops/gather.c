/* GATHER TAKE (ONNX Gather) on data of any element type of 1, 2, 4 or 8 bytes (it moves bytes:
 * accel_move_check) with INT32 or INT64 indices, along any axis: every index is checked first
 * (an index outside [-size, size) fails execute() with PN_ERR_INVALID_ARGUMENT naming it, its
 * position and the axis; nothing is written), then out[o, j, :] = data[o, idx[j], :] row by
 * row (token embeddings: whole rows copied), rows split over the pool. ELEMENTS and ND are
 * refused. */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

#define MIN_PARALLEL 65536 /* bytes per thread below which a wake-up does not pay */

typedef struct gather_state {
    accel_env env;
    pn_tensor_info infos[3];  /* data, indices, output */
    char name[96];            /* the layer's name, for messages (truncated) */
    uint32_t axis;
    int64_t outer, size, count, block; /* block: bytes per copied row */
    int64_t* resolved;        /* the count indices, made non-negative by execute() */
} gather_state;

pn_status accel_gather_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_gather_desc* d = (const pn_gather_desc*)layer->descriptor;
    if (d->op != PN_GATHER_TAKE) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s runs Gather TAKE only; it has no %s kernel", plugin->id,
                       d->op == PN_GATHER_ELEMENTS ? "ELEMENTS" : "ND");
    }
    return accel_move_check(plugin, layer, reason); /* indices INT32 or INT64, the output of the
                                                      data's type: the shared validation */
}

static void gather_release(void* raw) {
    gather_state* s = (gather_state*)raw;
    if (s != NULL) {
        free(s->resolved);
        free(s);
    }
}

typedef struct gather_job {
    const gather_state* s;
    const char* data;
    char* out;
} gather_job;

static void rows_range(void* raw, int64_t b, int64_t e) {
    const gather_job* j = (const gather_job*)raw;
    const gather_state* s = j->s;
    const size_t bytes = (size_t)s->block;
    for (int64_t u = b; u < e; ++u) {
        const int64_t o = u / s->count, k = u % s->count;
        const char* src = j->data + (o * s->size + s->resolved[k]) * s->block;
        char* dst = j->out + u * s->block;
        switch (s->block) { /* rows of one element: a fixed-size copy, not a call */
        case 4: memcpy(dst, src, 4); break;
        case 8: memcpy(dst, src, 8); break;
        case 1: *dst = *src; break;
        default: memcpy(dst, src, bytes); break;
        }
    }
}

static pn_status gather_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    gather_state* s = (gather_state*)raw;
    pn_status st = pn_check_execute_args(args, 2, s->infos, 1, &s->infos[2], "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    const void* idx = args->inputs[1].data;
    const int wide = s->infos[1].dtype == PN_DTYPE_INT64;
    for (int64_t k = 0; k < s->count; ++k) {
        const int64_t i = wide ? ((const int64_t*)idx)[k] : (int64_t)((const int32_t*)idx)[k];
        if (i < -s->size || i >= s->size) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc Gather '%s': index %lld (element %lld of the indices) is out of "
                           "range for axis %u of size %lld (valid: %lld to %lld)",
                           s->name, (long long)i, (long long)k, s->axis, (long long)s->size,
                           (long long)-s->size, (long long)(s->size - 1));
        }
        s->resolved[k] = i < 0 ? i + s->size : i;
    }
    const int64_t rows = s->outer * s->count;
    if (rows == 0 || s->block == 0) {
        return PN_OK;
    }
    gather_job j = {s, (const char*)args->inputs[0].data, (char*)args->outputs[0].data};
    accel_parallel_for_grain(s->env.threads, rows, MIN_PARALLEL / s->block + 1, rows_range, &j);
    return PN_OK;
}

pn_status accel_gather_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_gather_desc* d = (const pn_gather_desc*)layer->descriptor;
    gather_state* s = (gather_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    for (uint32_t i = 0; i < 3; ++i) {
        const pn_tensor_info* src = i < 2 ? &layer->inputs[i] : &layer->outputs[0];
        s->infos[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        s->infos[i].dtype = src->dtype;
        s->infos[i].rank = src->rank;
        memcpy(s->infos[i].dims, src->dims, sizeof(s->infos[i].dims));
    }
    pn_write(&(pn_string_out){s->name, sizeof(s->name)}, "%s", layer->name != NULL ? layer->name : "");
    const pn_tensor_info* data = &layer->inputs[0];
    s->axis = (uint32_t)pn_normalize_axis(d->axis, data->rank);
    s->outer = accel_span(data, 0, s->axis);
    s->size = data->dims[s->axis];
    s->count = pn_num_elements(&layer->inputs[1]);
    s->block = accel_span(data, s->axis + 1, data->rank) * (int64_t)pn_dtype_size(data->dtype);
    s->resolved = (int64_t*)malloc((size_t)(s->count > 0 ? s->count : 1) * sizeof(int64_t));
    if (s->resolved == NULL) {
        free(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = pn_workload_new(s, gather_execute, gather_release, 0);
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    return PN_OK;
}
