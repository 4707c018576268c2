/* TOP_K: each line along the axis sorted by a stable merge sort (largest or smallest first,
 * NaN larger than every number, equal values in index order), its first k elements copied
 * out with their indices. Always sorted, whatever `sorted` says. Any numeric type: floats
 * compared as double, signed integers as int64, unsigned as uint64 (all exact). */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    double f;       /* float types */
    int64_t s;      /* signed integers */
    uint64_t u;     /* unsigned integers */
    int64_t index;  /* position along the axis */
} entry;

typedef enum key_class { KEY_FLOAT, KEY_SIGNED, KEY_UNSIGNED } key_class;

/* The workload's geometry and a line's worth of scratch (one execute at a time). */
typedef struct topk_state {
    int64_t outer, len, inner, k;
    key_class keys;
    int largest;
    entry* line;
    entry* merge;
    entry data[];
} topk_state;

/* 1 when a is larger than b (NaN is larger than every number; NaNs tie), -1 smaller, 0 equal. */
static int compare(const entry* a, const entry* b, key_class keys) {
    switch (keys) {
    case KEY_FLOAT: {
        int an = isnan(a->f), bn = isnan(b->f);
        if (an || bn) {
            return an - bn;
        }
        return a->f > b->f ? 1 : (a->f < b->f ? -1 : 0);
    }
    case KEY_SIGNED: return a->s > b->s ? 1 : (a->s < b->s ? -1 : 0);
    case KEY_UNSIGNED: return a->u > b->u ? 1 : (a->u < b->u ? -1 : 0);
    }
    return 0;
}

/* 1 when b must come before a (strictly): the merge then takes b; ties keep a (stable). */
static int goes_first(const entry* b, const entry* a, const topk_state* s) {
    int c = compare(b, a, s->keys);
    return s->largest ? c > 0 : c < 0;
}

/* Bottom-up stable merge sort of s->line[0..len). */
static void sort_line(topk_state* s) {
    entry* src = s->line;
    entry* dst = s->merge;
    for (int64_t width = 1; width < s->len; width *= 2) {
        for (int64_t lo = 0; lo < s->len; lo += 2 * width) {
            int64_t mid = lo + width < s->len ? lo + width : s->len;
            int64_t hi = lo + 2 * width < s->len ? lo + 2 * width : s->len;
            int64_t i = lo, j = mid, out = lo;
            while (i < mid && j < hi) {
                dst[out++] = goes_first(&src[j], &src[i], s) ? src[j++] : src[i++];
            }
            while (i < mid) {
                dst[out++] = src[i++];
            }
            while (j < hi) {
                dst[out++] = src[j++];
            }
        }
        entry* swap = src;
        src = dst;
        dst = swap;
    }
    if (src != s->line) {
        memcpy(s->line, src, (size_t)s->len * sizeof(entry));
    }
}

static pn_status topk_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                             pn_string_out* message_out) {
    (void)message_out;
    topk_state* s = (topk_state*)op->priv;
    pn_data_type t = op->inputs[0].dtype;
    size_t bytes = pn_dtype_size(t);
    const unsigned char* x = (const unsigned char*)in[0];
    unsigned char* values = (unsigned char*)out[0];
    for (int64_t o = 0; o < s->outer; ++o) {
        for (int64_t i = 0; i < s->inner; ++i) {
            int64_t in_base = o * s->len * s->inner + i;
            for (int64_t j = 0; j < s->len; ++j) {
                int64_t at = in_base + j * s->inner;
                entry* e = &s->line[j];
                e->f = s->keys == KEY_FLOAT ? pn_load_double(t, x, at) : 0.0;
                e->s = s->keys == KEY_SIGNED ? pn_load_int64(t, x, at) : 0;
                e->u = s->keys == KEY_UNSIGNED ? pn_load_uint64(t, x, at) : 0u;
                e->index = j;
            }
            sort_line(s);
            int64_t out_base = o * s->k * s->inner + i;
            for (int64_t j = 0; j < s->k; ++j) {
                int64_t to = out_base + j * s->inner;
                int64_t from = in_base + s->line[j].index * s->inner;
                memcpy(values + (size_t)to * bytes, x + (size_t)from * bytes, bytes);
                ((int64_t*)out[1])[to] = s->line[j].index;
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_top_k_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    (void)context;
    const pn_top_k_desc* d = (const pn_top_k_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    int64_t len = x->dims[axis];
    topk_state* s = (topk_state*)calloc(1, sizeof(*s) + 2 * (size_t)len * sizeof(entry));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a TopK "
                       "workload");
    }
    s->outer = cpuref_span(x, 0, axis);
    s->len = len;
    s->inner = cpuref_span(x, axis + 1, x->rank);
    s->k = layer->outputs[0].dims[axis];
    s->keys = pn_dtype_is_float(x->dtype) ? KEY_FLOAT
              : pn_dtype_is_signed(x->dtype) ? KEY_SIGNED : KEY_UNSIGNED;
    s->largest = d->largest != 0;
    s->line = s->data;
    s->merge = s->data + len;
    return cpuref_typed_workload_new(layer, sizeof(pn_top_k_desc), NULL, topk_kernel, s,
                                     workload_out, message_out);
}
