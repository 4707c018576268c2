/* DATA_DEPENDENT: NonZero, Unique, NonMaxSuppression and Compress, whose output shapes depend
 * on the data. Each kernel writes its outputs densely in their actual shapes from the start of
 * the (upper-bound sized) buffers and reports the actual dims in op->output_dims
 * (backend_api.h, "Data-dependent layers"). Element values are compared exactly: floats in
 * double (NaNs equal to one another and after every number), signed integers in int64,
 * unsigned integers and BOOL in uint64. */
#include "cpuref.h"

#include <stdlib.h>
#include <string.h>

static void report(const cpuref_op* op, uint32_t output, uint32_t rank, const int64_t* dims) {
    int64_t* row = op->output_dims + (size_t)output * PN_MAX_DIMS;
    for (uint32_t i = 0; i < rank; ++i) {
        row[i] = dims[i];
    }
}

static pn_status out_of_memory(const char* op, pn_string_out* message_out) {
    return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef DataDependent %s: out of memory", op);
}

/* -1, 0 or 1 as element i of a is below, equal to or above element j of b (same type). */
static int compare(pn_data_type dtype, const void* a, int64_t i, const void* b, int64_t j) {
    switch (cpuref_domain_of(dtype)) {
    case CPUREF_FLOAT: {
        double x = pn_load_double(dtype, a, i), y = pn_load_double(dtype, b, j);
        int xn = x != x, yn = y != y;
        if (xn || yn) {
            return xn - yn; /* NaN after every number, NaNs equal */
        }
        return (x > y) - (x < y);
    }
    case CPUREF_SIGNED: {
        int64_t x = pn_load_int64(dtype, a, i), y = pn_load_int64(dtype, b, j);
        return (x > y) - (x < y);
    }
    default: {
        uint64_t x = pn_load_uint64(dtype, a, i), y = pn_load_uint64(dtype, b, j);
        return (x > y) - (x < y);
    }
    }
}

static int is_nonzero(pn_data_type dtype, const void* data, int64_t i) {
    switch (cpuref_domain_of(dtype)) {
    case CPUREF_FLOAT: return pn_load_double(dtype, data, i) != 0.0;
    case CPUREF_SIGNED: return pn_load_int64(dtype, data, i) != 0;
    default: return pn_load_uint64(dtype, data, i) != 0;
    }
}

/* A stable merge sort of `n` int64 items with a comparator and its context. */
typedef int (*item_order)(const void* context, int64_t a, int64_t b);

static void merge_sort(int64_t* items, int64_t* scratch, int64_t n, item_order order,
                       const void* context) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                scratch[k++] = order(context, items[b], items[a]) < 0 ? items[b++] : items[a++];
            }
            while (a < mid) {
                scratch[k++] = items[a++];
            }
            while (b < hi) {
                scratch[k++] = items[b++];
            }
        }
        memcpy(items, scratch, (size_t)n * sizeof(int64_t));
    }
}

/* ---- NON_ZERO --------------------------------------------------------------------------- */

static pn_status non_zero_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                 pn_string_out* message_out) {
    (void)message_out;
    const pn_tensor_info* x = &op->inputs[0];
    int64_t n = pn_num_elements(x);
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
        count += is_nonzero(x->dtype, in[0], i);
    }
    int64_t* y = (int64_t*)out[0];
    int64_t index[PN_MAX_DIMS];
    int64_t column = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!is_nonzero(x->dtype, in[0], i)) {
            continue;
        }
        cpuref_unravel(x, i, index);
        for (uint32_t d = 0; d < x->rank; ++d) {
            y[d * count + column] = index[d];
        }
        ++column;
    }
    int64_t dims[2] = {x->rank, count};
    report(op, 0, 2, dims);
    return PN_OK;
}

/* ---- UNIQUE ------------------------------------------------------------------------------ */

typedef struct unique_view {
    pn_data_type dtype;
    const void* data;
    int64_t items, outer, inner; /* item k's elements: data[(o * items + k) * inner + t] */
} unique_view;

/* Items a and b compared lexicographically by their elements in row-major order. */
static int item_compare(const void* context, int64_t a, int64_t b) {
    const unique_view* v = (const unique_view*)context;
    for (int64_t o = 0; o < v->outer; ++o) {
        for (int64_t t = 0; t < v->inner; ++t) {
            int c = compare(v->dtype, v->data, (o * v->items + a) * v->inner + t, v->data,
                            (o * v->items + b) * v->inner + t);
            if (c != 0) {
                return c;
            }
        }
    }
    return 0;
}

static int by_value(const void* context, int64_t a, int64_t b) {
    const int64_t* first = (const int64_t*)context;
    return (first[a] > first[b]) - (first[a] < first[b]);
}

static pn_status unique_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    const pn_data_dependent_desc* d = &op->desc.data_dependent;
    const pn_tensor_info* x = &op->inputs[0];
    unique_view v = {x->dtype, in[0], pn_num_elements(x), 1, 1};
    uint32_t axis = 0;
    if (d->has_axis) {
        axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
        v.items = x->dims[axis];
        v.outer = cpuref_span(x, 0, axis);
        v.inner = cpuref_span(x, axis + 1, x->rank);
    }
    int64_t n = v.items;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
    int64_t* order = (int64_t*)malloc(bytes);
    int64_t* scratch = (int64_t*)malloc(bytes);
    int64_t* group_of = (int64_t*)malloc(bytes);  /* item -> its group (in sorted order) */
    int64_t* first = (int64_t*)malloc(bytes);     /* group -> first item */
    int64_t* count = (int64_t*)malloc(bytes);     /* group -> occurrences */
    int64_t* rank_of = (int64_t*)malloc(bytes);   /* group -> output position */
    if (order == NULL || scratch == NULL || group_of == NULL || first == NULL || count == NULL ||
        rank_of == NULL) {
        free(order), free(scratch), free(group_of), free(first), free(count), free(rank_of);
        return out_of_memory("Unique", message_out);
    }
    for (int64_t i = 0; i < n; ++i) {
        order[i] = i;
    }
    /* Stable: each group of equal items starts with its first occurrence. */
    merge_sort(order, scratch, n, item_compare, &v);
    int64_t groups = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (i == 0 || item_compare(&v, order[i - 1], order[i]) != 0) {
            first[groups] = order[i];
            count[groups] = 0;
            ++groups;
        }
        group_of[order[i]] = groups - 1;
        ++count[groups - 1];
    }
    /* Output order: the groups as sorted, or by first occurrence. */
    int64_t* placed = order; /* reused: output position -> group */
    for (int64_t g = 0; g < groups; ++g) {
        placed[g] = g;
    }
    if (!d->sorted) {
        merge_sort(placed, scratch, groups, by_value, first);
    }
    for (int64_t k = 0; k < groups; ++k) {
        rank_of[placed[k]] = k;
    }
    size_t size = pn_dtype_size(x->dtype);
    size_t row = (size_t)v.inner * size;
    for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t k = 0; k < groups; ++k) {
            if (row > 0) {
                memcpy((char*)out[0] + ((size_t)(o * groups + k)) * row,
                       (const char*)in[0] + ((size_t)(o * n + first[placed[k]])) * row, row);
            }
        }
    }
    int64_t* indices = (int64_t*)out[1];
    int64_t* inverse = (int64_t*)out[2];
    int64_t* counts = (int64_t*)out[3];
    for (int64_t k = 0; k < groups; ++k) {
        indices[k] = first[placed[k]];
        counts[k] = count[placed[k]];
    }
    for (int64_t i = 0; i < n; ++i) {
        inverse[i] = rank_of[group_of[i]];
    }
    int64_t y_dims[PN_MAX_DIMS];
    if (d->has_axis) {
        memcpy(y_dims, x->dims, sizeof(y_dims));
        y_dims[axis] = groups;
        report(op, 0, x->rank, y_dims);
    } else {
        report(op, 0, 1, &groups);
    }
    report(op, 1, 1, &groups);
    report(op, 2, 1, &n);
    report(op, 3, 1, &groups);
    free(order), free(scratch), free(group_of), free(first), free(count), free(rank_of);
    return PN_OK;
}

/* ---- NON_MAX_SUPPRESSION ------------------------------------------------------------------- */

typedef struct nms_scores {
    pn_data_type dtype;
    const void* data;
    int64_t offset; /* of the (batch, class) row */
} nms_scores;

/* Higher scores first, NaN after every number, equal scores (and NaNs) by lower box index (the
 * merge sort is stable): a total order. */
static int by_score(const void* context, int64_t a, int64_t b) {
    const nms_scores* s = (const nms_scores*)context;
    double x = pn_load_double(s->dtype, s->data, s->offset + a);
    double y = pn_load_double(s->dtype, s->data, s->offset + b);
    int xn = x != x, yn = y != y;
    if (xn || yn) {
        return xn - yn;
    }
    return (x < y) - (x > y);
}

typedef struct nms_box {
    double x_min, x_max, y_min, y_max;
} nms_box;

static nms_box load_box(const cpuref_op* op, const void* boxes, int64_t at, int center) {
    pn_data_type t = op->inputs[0].dtype;
    double a = pn_load_double(t, boxes, at), b = pn_load_double(t, boxes, at + 1);
    double c = pn_load_double(t, boxes, at + 2), e = pn_load_double(t, boxes, at + 3);
    nms_box box;
    if (center) { /* [x_center, y_center, width, height] */
        box.x_min = a - c / 2, box.x_max = a + c / 2;
        box.y_min = b - e / 2, box.y_max = b + e / 2;
    } else { /* [y1, x1, y2, x2], any two opposite corners */
        box.y_min = a < c ? a : c, box.y_max = a < c ? c : a;
        box.x_min = b < e ? b : e, box.x_max = b < e ? e : b;
    }
    return box;
}

/* The IoU of p and q exceeds the threshold (0 without a positive intersection, areas and union). */
static int suppresses(const nms_box* p, const nms_box* q, double threshold) {
    double x0 = p->x_min > q->x_min ? p->x_min : q->x_min;
    double x1 = p->x_max < q->x_max ? p->x_max : q->x_max;
    double y0 = p->y_min > q->y_min ? p->y_min : q->y_min;
    double y1 = p->y_max < q->y_max ? p->y_max : q->y_max;
    if (x1 <= x0 || y1 <= y0) {
        return 0;
    }
    double inter = (x1 - x0) * (y1 - y0);
    double area_p = (p->x_max - p->x_min) * (p->y_max - p->y_min);
    double area_q = (q->x_max - q->x_min) * (q->y_max - q->y_min);
    double uni = area_p + area_q - inter;
    if (inter <= 0 || area_p <= 0 || area_q <= 0 || uni <= 0) {
        return 0;
    }
    return inter / uni > threshold;
}

static pn_status nms_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                            pn_string_out* message_out) {
    const pn_tensor_info* boxes = &op->inputs[0];
    const pn_tensor_info* scores = &op->inputs[1];
    pn_data_type t = boxes->dtype;
    int64_t batches = boxes->dims[0], n = boxes->dims[1], classes = scores->dims[1];
    int64_t most = op->num_inputs > 2 ? pn_load_int64(PN_DTYPE_INT64, in[2], 0) : 0;
    double iou = op->num_inputs > 3 ? pn_load_double(t, in[3], 0) : 0.0;
    int has_threshold = op->num_inputs > 4;
    double threshold = has_threshold ? pn_load_double(t, in[4], 0) : 0.0;
    int center = op->desc.data_dependent.center_point_box != 0;
    int64_t bound = op->outputs[0].dims[0];
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
    int64_t* order = (int64_t*)malloc(bytes);
    int64_t* scratch = (int64_t*)malloc(bytes);
    int64_t* chosen = (int64_t*)malloc(bytes);
    if (order == NULL || scratch == NULL || chosen == NULL) {
        free(order), free(scratch), free(chosen);
        return out_of_memory("NonMaxSuppression", message_out);
    }
    int64_t* y = (int64_t*)out[0];
    int64_t rows = 0;
    pn_status status = PN_OK;
    for (int64_t b = 0; b < batches && status == PN_OK; ++b) {
        for (int64_t c = 0; c < classes && status == PN_OK; ++c) {
            nms_scores s = {t, in[1], (b * classes + c) * n};
            int64_t candidates = 0;
            for (int64_t i = 0; i < n; ++i) {
                if (!has_threshold || pn_load_double(t, in[1], s.offset + i) > threshold) {
                    order[candidates++] = i;
                }
            }
            merge_sort(order, scratch, candidates, by_score, &s);
            int64_t taken = 0;
            for (int64_t k = 0; k < candidates && taken < most; ++k) {
                nms_box box = load_box(op, in[0], (b * n + order[k]) * 4, center);
                int keep = 1;
                for (int64_t j = 0; j < taken && keep; ++j) {
                    nms_box other = load_box(op, in[0], (b * n + chosen[j]) * 4, center);
                    keep = !suppresses(&box, &other, iou);
                }
                if (!keep) {
                    continue;
                }
                if (rows >= bound) {
                    status = pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                                     "CpuRef DataDependent NonMaxSuppression: more than the "
                                     "%lld selected boxes the layer's output bound holds",
                                     (long long)bound);
                    break;
                }
                chosen[taken++] = order[k];
                y[rows * 3] = b, y[rows * 3 + 1] = c, y[rows * 3 + 2] = order[k];
                ++rows;
            }
        }
    }
    free(order), free(scratch), free(chosen);
    if (status == PN_OK) {
        int64_t dims[2] = {rows, 3};
        report(op, 0, 2, dims);
    }
    return status;
}

/* ---- COMPRESS ------------------------------------------------------------------------------- */

static pn_status compress_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                 pn_string_out* message_out) {
    (void)message_out;
    const pn_data_dependent_desc* d = &op->desc.data_dependent;
    const pn_tensor_info* x = &op->inputs[0];
    const uint8_t* condition = (const uint8_t*)in[1];
    int64_t length = op->inputs[1].dims[0];
    int64_t items = pn_num_elements(x), outer = 1, inner = 1;
    uint32_t axis = 0;
    if (d->has_axis) {
        axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
        items = x->dims[axis];
        outer = cpuref_span(x, 0, axis);
        inner = cpuref_span(x, axis + 1, x->rank);
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < length && i < items; ++i) {
        kept += condition[i] != 0;
    }
    size_t row = (size_t)inner * pn_dtype_size(x->dtype);
    char* y = (char*)out[0];
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < length && i < items; ++i) {
            if (condition[i] && row > 0) {
                memcpy(y, (const char*)in[0] + ((size_t)(o * items + i)) * row, row);
                y += row;
            }
        }
    }
    if (d->has_axis) {
        int64_t dims[PN_MAX_DIMS];
        memcpy(dims, x->dims, sizeof(dims));
        dims[axis] = kept;
        report(op, 0, x->rank, dims);
    } else {
        report(op, 0, 1, &kept);
    }
    return PN_OK;
}

pn_status cpuref_data_dependent_create(void* context, const pn_layer* layer,
                                       pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_data_dependent_desc* d = (const pn_data_dependent_desc*)layer->descriptor;
    cpuref_typed_kernel kernel = compress_kernel;
    if (d->op == PN_DATA_DEPENDENT_NON_ZERO) {
        kernel = non_zero_kernel;
    } else if (d->op == PN_DATA_DEPENDENT_UNIQUE) {
        kernel = unique_kernel;
    } else if (d->op == PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION) {
        kernel = nms_kernel;
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_data_dependent_desc), NULL, kernel, NULL,
                                     workload_out, message_out);
}
