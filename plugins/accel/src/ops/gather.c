/* GATHER TAKE (ONNX Gather) on data of any element type of 1, 2, 4 or 8 bytes (it moves bytes:
 * accel_move_check) with INT32 or INT64 indices, along any axis: every index is checked first
 * (an index outside [-size, size) fails execute() with PN_ERR_INVALID_ARGUMENT naming it, its
 * position and the axis; nothing is written), then out[o, j, :] = data[o, idx[j], :] row by
 * row (token embeddings: whole rows copied), rows split over the pool. ND (batch_dims
 * included: detection heads pick their boxes with it) copies one slice per index tuple and
 * ELEMENTS one element per index, after the same check of every index. */
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
    pn_gather_op op;
    uint32_t batch_dims, k;   /* ND: batch dims, indices per tuple */
    size_t es;                /* element bytes */
} gather_state;

pn_status accel_gather_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
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

/* ND: tuple t (of the indices' dims before the last, the first batch_dims of them the batch)
 * picks the slice data[batch.., i0, .., ik-1, ...]; one copy of the slice per tuple. */
static void gather_nd(const gather_state* s, const char* data, char* out) {
    const pn_tensor_info* x = &s->infos[0];
    const pn_tensor_info* ix = &s->infos[1];
    int64_t strides[PN_MAX_DIMS], n = 1;
    for (int d = (int)x->rank - 1; d >= 0; --d) {
        strides[d] = n;
        n *= x->dims[d];
    }
    const int64_t tuples = s->count / s->k;
    const int64_t per_batch = tuples / (accel_span(ix, 0, s->batch_dims) > 0 ? accel_span(ix, 0, s->batch_dims) : 1);
    const int64_t batch_stride = s->batch_dims > 0 ? strides[s->batch_dims - 1] : 0;
    const size_t bytes = (size_t)(accel_span(x, s->batch_dims + s->k, x->rank) * (int64_t)s->es);
    for (int64_t t = 0; t < tuples; ++t) {
        int64_t offset = per_batch > 0 ? (t / per_batch) * batch_stride : 0;
        for (uint32_t j = 0; j < s->k; ++j) {
            offset += s->resolved[t * s->k + j] * strides[s->batch_dims + j];
        }
        memcpy(out + (size_t)t * bytes, data + (size_t)offset * s->es, bytes);
    }
}

/* ELEMENTS: out[i..] = data[i.. with i_axis replaced by indices[i..]], a row of the indices at
 * a time. */
static void gather_elements(const gather_state* s, const char* data, char* out) {
    const pn_tensor_info* x = &s->infos[0];
    const pn_tensor_info* ix = &s->infos[1];
    const uint32_t rank = x->rank, last = rank - 1, axis = s->axis;
    int64_t strides[PN_MAX_DIMS], at[PN_MAX_DIMS] = {0}, n = 1;
    for (int d = (int)last; d >= 0; --d) {
        strides[d] = n;
        n *= x->dims[d];
    }
    const int64_t width = ix->dims[last];
    for (int64_t row = 0; row < s->count; row += width) {
        int64_t base = 0;
        for (uint32_t d = 0; d < last; ++d) {
            base += d == axis ? 0 : at[d] * strides[d];
        }
        for (int64_t j = 0; j < width; ++j) {
            const int64_t i = s->resolved[row + j];
            const int64_t from = base + (axis == last ? i : j + i * strides[axis]);
            memcpy(out + (size_t)(row + j) * s->es, data + (size_t)from * s->es, s->es);
        }
        for (int d = (int)last - 1; d >= 0; --d) {
            if (++at[d] < ix->dims[d]) {
                break;
            }
            at[d] = 0;
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
    const pn_tensor_info* data = &s->infos[0];
    for (int64_t k = 0; k < s->count; ++k) {
        const int64_t i = wide ? ((const int64_t*)idx)[k] : (int64_t)((const int32_t*)idx)[k];
        const uint32_t axis = s->op == PN_GATHER_ND ? s->batch_dims + (uint32_t)(k % s->k) : s->axis;
        const int64_t size = data->dims[axis];
        if (i < -size || i >= size) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc Gather '%s': index %lld (element %lld of the indices) is out of "
                           "range for axis %u of size %lld (valid: %lld to %lld)",
                           s->name, (long long)i, (long long)k, axis, (long long)size,
                           (long long)-size, (long long)(size - 1));
        }
        s->resolved[k] = i < 0 ? i + size : i;
    }
    if (s->op == PN_GATHER_ND) {
        gather_nd(s, (const char*)args->inputs[0].data, (char*)args->outputs[0].data);
        return PN_OK;
    }
    if (s->op == PN_GATHER_ELEMENTS) {
        gather_elements(s, (const char*)args->inputs[0].data, (char*)args->outputs[0].data);
        return PN_OK;
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
    s->op = d->op;
    s->es = pn_dtype_size(data->dtype);
    if (d->op != PN_GATHER_TAKE) {
        s->axis = d->op == PN_GATHER_ELEMENTS ? s->axis : 0;
        s->batch_dims = d->op == PN_GATHER_ND ? d->batch_dims : 0;
        s->k = d->op == PN_GATHER_ND ? (uint32_t)layer->inputs[1].dims[layer->inputs[1].rank - 1] : 1;
    }
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
