/* TOP_K on float32 (backend_api.h, pn_top_k_desc): per line along the axis, each element becomes
 * one 64-bit key, the best the largest, that orders as the header asks: in the high half its
 * value's bits made monotonic (-0.0 read as +0.0, every NaN one key above +inf; complemented
 * for the smallest), in the low half 2^32 - 1 - its index (so equal values keep the lower index
 * first). The k best keys are chosen by
 * quickselect (linear on average) and only those k are sorted, always (as CpuRef, whatever
 * `sorted` says): CpuRef's values and indices, bit for bit. Lines are split over the pool. */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

typedef struct topk_state {
    accel_env env;
    pn_tensor_info infos[3]; /* x, values, indices */
    int64_t outer, len, inner, k;
    int largest;
} topk_state;

/* The value's key: larger floats give larger keys, every NaN the largest, -0.0 = +0.0. */
static uint32_t float_key(float v) {
    uint32_t bits;
    if (v != v) {
        return 0xFFFFFFFFu;
    }
    if (v == 0.0f) {
        v = 0.0f;
    }
    memcpy(&bits, &v, sizeof(bits));
    return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

static void swap(uint64_t* a, uint64_t* b) {
    const uint64_t t = *a;
    *a = *b, *b = t;
}

/* Rearranges keys[0..n) so that keys[0..k) are the k largest, in any order. */
static void select_largest(uint64_t* keys, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (hi > lo && k > lo && k <= hi) {
        const int64_t mid = lo + (hi - lo) / 2; /* median of three as the pivot, at hi */
        if (keys[mid] > keys[lo]) swap(&keys[mid], &keys[lo]);
        if (keys[hi] > keys[lo]) swap(&keys[hi], &keys[lo]);
        if (keys[mid] > keys[hi]) swap(&keys[mid], &keys[hi]);
        const uint64_t pivot = keys[hi];
        int64_t store = lo;
        for (int64_t i = lo; i < hi; ++i) {
            if (keys[i] > pivot) {
                swap(&keys[i], &keys[store++]);
            }
        }
        swap(&keys[store], &keys[hi]); /* keys[lo..store) > pivot >= keys(store..hi] */
        if (store == k || store + 1 == k) {
            return;
        }
        if (store > k) {
            hi = store - 1;
        } else {
            lo = store + 1;
        }
    }
}

static int descending(const void* a, const void* b) {
    const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return (x < y) - (x > y);
}

typedef struct topk_job {
    const topk_state* s;
    const float* x;
    float* values;
    int64_t* indices;
    int failed;
} topk_job;

static void topk_lines(void* raw, int64_t begin, int64_t end) {
    topk_job* j = (topk_job*)raw;
    const topk_state* s = j->s;
    uint64_t* keys = (uint64_t*)malloc(sizeof(uint64_t) * (size_t)(s->len > 0 ? s->len : 1));
    if (keys == NULL) {
        j->failed = 1;
        return;
    }
    for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / s->inner, i = line % s->inner;
        const float* x = j->x + o * s->len * s->inner + i;
        for (int64_t p = 0; p < s->len; ++p) {
            const uint64_t value = float_key(x[p * s->inner]);
            keys[p] = s->largest ? (uint64_t)value << 32 | (0xFFFFFFFFu - (uint32_t)p)
                                 : (uint64_t)(uint32_t)~value << 32 | (0xFFFFFFFFu - (uint32_t)p);
        }
        select_largest(keys, s->len, s->k);
        qsort(keys, (size_t)s->k, sizeof(uint64_t), descending);
        float* values = j->values + o * s->k * s->inner + i;
        int64_t* indices = j->indices + o * s->k * s->inner + i;
        for (int64_t r = 0; r < s->k; ++r) {
            const int64_t p = (int64_t)(0xFFFFFFFFu - (uint32_t)keys[r]);
            values[r * s->inner] = x[p * s->inner];
            indices[r * s->inner] = p;
        }
    }
    free(keys);
}

static pn_status topk_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const topk_state* s = (const topk_state*)raw;
    pn_status st = pn_check_execute_args(args, 1, &s->infos[0], 2, &s->infos[1], "CpuAcc", message_out);
    if (st != PN_OK || s->k == 0 || s->outer * s->inner == 0) {
        return st;
    }
    topk_job job = {s, (const float*)args->inputs[0].data, (float*)args->outputs[0].data,
                    (int64_t*)args->outputs[1].data, 0};
    const int64_t lines = s->outer * s->inner;
    accel_parallel_for_grain(s->env.threads, lines, 4096 / (s->len + 1) + 1, topk_lines, &job);
    if (job.failed) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc TopK: out of memory for a line of %lld keys",
                       (long long)s->len);
    }
    return PN_OK;
}

pn_status accel_top_k_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_tensor_info* x = &layer->inputs[0];
    if (x->dtype != PN_DTYPE_FLOAT32) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs TopK on float32 only; input 0 is %s", plugin->id,
                       pn_dtype_name(x->dtype));
    }
    const pn_top_k_desc* d = (const pn_top_k_desc*)layer->descriptor;
    const int64_t len = x->dims[pn_normalize_axis(d->axis, x->rank)];
    if (len > 0xFFFFFFFFll) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs TopK along axes of at most 2^32 - 1 elements; this one "
                       "has %lld", plugin->id, (long long)len);
    }
    return PN_OK;
}

static void topk_release(void* raw) { free(raw); }

pn_status accel_top_k_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    topk_state* s = (topk_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a TopK workload");
    }
    s->env = *(const accel_env*)context;
    accel_copy_layer_infos(s->infos, layer); /* x, values, indices */
    const pn_top_k_desc* d = (const pn_top_k_desc*)layer->descriptor;
    const pn_tensor_info* x = &s->infos[0];
    const uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    s->outer = 1, s->inner = 1;
    for (uint32_t a = 0; a < axis; ++a) {
        s->outer *= x->dims[a];
    }
    for (uint32_t a = axis + 1; a < x->rank; ++a) {
        s->inner *= x->dims[a];
    }
    s->len = x->dims[axis];
    s->k = s->infos[1].dims[axis];
    s->largest = d->largest != 0;
    *workload_out = pn_workload_new(s, topk_execute, topk_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a TopK workload");
    }
    return PN_OK;
}
