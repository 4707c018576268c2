/* SCATTER (ONNX ScatterElements, ScatterND; backend_api.h, pn_scatter_desc): the output is data
 * (copied over the pool) with every update written in row-major order of the updates, so with
 * repeated indices the last one wins. NONE moves elements of any type of 1, 2, 4 or 8 bytes;
 * the reductions ADD, MUL, MAX and MIN run on float32 (a float32 sum or product is the double
 * one rounded once: CpuRef's bits), int32 and int64 (wrapping). ELEMENTS walks the updates a
 * row at a time (the offset of the other axes computed once per row); ND copies each update
 * slice with memcpy when replacing. An index outside [-size, size) fails execute naming it. */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK (1 << 18) /* bytes per copy job */

typedef struct scatter_state {
    accel_env env;
    pn_scatter_desc desc;
    pn_tensor_info infos[4]; /* data, indices, updates, output */
    uint32_t axis;
    size_t size;             /* element bytes */
} scatter_state;

typedef struct copy_job {
    const char* from;
    char* to;
    size_t bytes;
} copy_job;

static void copy_range(void* raw, int64_t b, int64_t e) {
    const copy_job* j = (const copy_job*)raw;
    const size_t lo = (size_t)b * COPY_CHUNK, hi = (size_t)e * COPY_CHUNK < j->bytes ? (size_t)e * COPY_CHUNK : j->bytes;
    memcpy(j->to + lo, j->from + lo, hi - lo);
}

static pn_status index_error(const char* what, int64_t index, uint32_t axis, int64_t size, pn_string_out* message_out) {
    return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "%s: index %lld is out of range for axis %u of size %lld "
                   "(valid: %lld to %lld)", what, (long long)index, axis, (long long)size, (long long)-size,
                   (long long)(size - 1));
}

/* out[o] = reduction(out[o], u), element type t. */
static void combine(const scatter_state* s, char* out, int64_t o, const char* updates, int64_t u) {
    const pn_scatter_reduction r = s->desc.reduction;
    if (r == PN_SCATTER_REDUCTION_NONE) {
        switch (s->size) {
        case 1: out[o] = updates[u]; break;
        case 2: ((uint16_t*)out)[o] = ((const uint16_t*)updates)[u]; break;
        case 4: ((uint32_t*)out)[o] = ((const uint32_t*)updates)[u]; break;
        default: ((uint64_t*)out)[o] = ((const uint64_t*)updates)[u]; break;
        }
        return;
    }
    switch (s->infos[0].dtype) {
    case PN_DTYPE_FLOAT32: {
        float* y = (float*)out + o;
        const float a = *y, v = ((const float*)updates)[u];
        *y = r == PN_SCATTER_REDUCTION_ADD ? a + v : r == PN_SCATTER_REDUCTION_MUL ? a * v
             : r == PN_SCATTER_REDUCTION_MAX ? (v > a ? v : a) : (v < a ? v : a);
        break;
    }
    case PN_DTYPE_INT32: {
        int32_t* y = (int32_t*)out + o;
        const int32_t a = *y, v = ((const int32_t*)updates)[u];
        *y = r == PN_SCATTER_REDUCTION_ADD ? (int32_t)((uint32_t)a + (uint32_t)v)
             : r == PN_SCATTER_REDUCTION_MUL ? (int32_t)((uint32_t)a * (uint32_t)v)
             : r == PN_SCATTER_REDUCTION_MAX ? (v > a ? v : a) : (v < a ? v : a);
        break;
    }
    default: {
        int64_t* y = (int64_t*)out + o;
        const int64_t a = *y, v = ((const int64_t*)updates)[u];
        *y = r == PN_SCATTER_REDUCTION_ADD ? (int64_t)((uint64_t)a + (uint64_t)v)
             : r == PN_SCATTER_REDUCTION_MUL ? (int64_t)((uint64_t)a * (uint64_t)v)
             : r == PN_SCATTER_REDUCTION_MAX ? (v > a ? v : a) : (v < a ? v : a);
        break;
    }
    }
}

static int64_t index_at(const pn_tensor_info* indices, const void* data, int64_t i) {
    return indices->dtype == PN_DTYPE_INT64 ? ((const int64_t*)data)[i] : ((const int32_t*)data)[i];
}

/* Update [i..] goes to data [i.. with i_axis replaced by indices[i..]]. */
static pn_status scatter_elements(const scatter_state* s, const void* indices, const char* updates, char* out,
                                  pn_string_out* message_out) {
    const pn_tensor_info* data = &s->infos[0];
    const pn_tensor_info* shape = &s->infos[1];
    const uint32_t rank = data->rank, axis = s->axis, last = rank - 1;
    const int64_t size = data->dims[axis];
    int64_t strides[PN_MAX_DIMS];
    strides[last] = 1;
    for (int d = (int)last - 1; d >= 0; --d) {
        strides[d] = strides[d + 1] * data->dims[d + 1];
    }
    const int64_t n = pn_num_elements(shape), width = shape->dims[last];
    if (n == 0) {
        return PN_OK;
    }
    int64_t at[PN_MAX_DIMS] = {0};
    for (int64_t row = 0; row < n; row += width) {
        int64_t base = 0; /* the row's offset in data over every axis but `axis` and the last */
        for (uint32_t d = 0; d < last; ++d) {
            base += d == axis ? 0 : at[d] * strides[d];
        }
        for (int64_t j = 0; j < width; ++j) {
            int64_t index = index_at(shape, indices, row + j);
            if (index < -size || index >= size) {
                return index_error("Scatter", index, axis, size, message_out);
            }
            index = index < 0 ? index + size : index;
            const int64_t o = base + (axis == last ? index : j + index * strides[axis]);
            combine(s, out, o, updates, row + j);
        }
        for (int d = (int)last - 1; d >= 0; --d) { /* the next row's multi-index */
            if (++at[d] < shape->dims[d]) {
                break;
            }
            at[d] = 0;
        }
    }
    return PN_OK;
}

/* Each k-tuple of indices names the slice data[i0, .., ik-1, ...] its update slice goes to. */
static pn_status scatter_nd(const scatter_state* s, const void* indices, const char* updates, char* out,
                            pn_string_out* message_out) {
    const pn_tensor_info* data = &s->infos[0];
    const pn_tensor_info* shape = &s->infos[1];
    const uint32_t q = shape->rank, k = (uint32_t)shape->dims[q - 1];
    int64_t strides[PN_MAX_DIMS], block = 1, tuples = 1;
    for (int d = (int)data->rank - 1; d >= 0; --d) {
        strides[d] = block;
        block *= data->dims[d];
    }
    block = 1;
    for (uint32_t d = k; d < data->rank; ++d) {
        block *= data->dims[d];
    }
    for (uint32_t d = 0; d + 1 < q; ++d) {
        tuples *= shape->dims[d];
    }
    for (int64_t t = 0; t < tuples; ++t) {
        int64_t offset = 0;
        for (uint32_t j = 0; j < k; ++j) {
            int64_t index = index_at(shape, indices, t * k + j);
            if (index < -data->dims[j] || index >= data->dims[j]) {
                return index_error("Scatter", index, j, data->dims[j], message_out);
            }
            offset += (index < 0 ? index + data->dims[j] : index) * strides[j];
        }
        if (s->desc.reduction == PN_SCATTER_REDUCTION_NONE) {
            memcpy(out + (size_t)offset * s->size, updates + (size_t)(t * block) * s->size, (size_t)block * s->size);
        } else {
            for (int64_t e = 0; e < block; ++e) {
                combine(s, out, offset + e, updates, t * block + e);
            }
        }
    }
    return PN_OK;
}

static pn_status scatter_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const scatter_state* s = (const scatter_state*)raw;
    pn_status st = pn_check_execute_args(args, 3, s->infos, 1, &s->infos[3], "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    char* out = (char*)args->outputs[0].data;
    copy_job job = {(const char*)args->inputs[0].data, out, pn_num_bytes(&s->infos[3])};
    if (job.bytes > 0) {
        accel_parallel_for_grain(s->env.threads, (int64_t)((job.bytes + COPY_CHUNK - 1) / COPY_CHUNK), 1, copy_range,
                                 &job);
    }
    const void* indices = args->inputs[1].data;
    const char* updates = (const char*)args->inputs[2].data;
    return s->desc.op == PN_SCATTER_ELEMENTS ? scatter_elements(s, indices, updates, out, message_out)
                                             : scatter_nd(s, indices, updates, out, message_out);
}

pn_status accel_scatter_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_scatter_desc* d = (const pn_scatter_desc*)layer->descriptor;
    const pn_data_type t = layer->inputs[0].dtype;
    const size_t size = pn_dtype_size(t);
    if (d->reduction == PN_SCATTER_REDUCTION_NONE) {
        if (size != 1 && size != 2 && size != 4 && size != 8) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Scatter on elements of 1, 2, 4 or 8 bytes; input 0 is %s",
                           plugin->id, pn_dtype_name(t));
        }
        return PN_OK;
    }
    if (t != PN_DTYPE_FLOAT32 && t != PN_DTYPE_INT32 && t != PN_DTYPE_INT64) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Scatter with a reduction on float32, int32 and int64 only; "
                       "input 0 is %s", plugin->id, pn_dtype_name(t));
    }
    return PN_OK;
}

static void scatter_release(void* raw) { free(raw); }

pn_status accel_scatter_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    scatter_state* s = (scatter_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Scatter workload");
    }
    s->env = *(const accel_env*)context;
    s->desc = *(const pn_scatter_desc*)layer->descriptor;
    accel_copy_layer_infos(s->infos, layer); /* data, indices, updates, output */
    s->size = pn_dtype_size(s->infos[0].dtype);
    s->axis = s->desc.op == PN_SCATTER_ELEMENTS ? (uint32_t)pn_normalize_axis(s->desc.axis, s->infos[0].rank) : 0;
    *workload_out = pn_workload_new(s, scatter_execute, scatter_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Scatter workload");
    }
    return PN_OK;
}
