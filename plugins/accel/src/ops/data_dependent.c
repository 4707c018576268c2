/* DATA_DEPENDENT layers (backend_api.h, "Data-dependent layers"): NON_MAX_SUPPRESSION on float32
 * boxes and scores, and NON_ZERO on 1-, 4- and 8-byte element types. Each writes its output
 * densely in its actual shape and reports the dims in pn_execute_args.output_dims. The
 * results are CpuRef's, bit for bit (tests/cpuacc/test_data_dependent.py).
 *
 * NonMaxSuppression, per batch and class: the candidates above the score threshold sorted by
 * descending score (equal scores: lower box index first; NaN scores after every number), then
 * the greedy pass, each candidate tested against the boxes selected before it. The boxes are
 * read once into double corners and areas (CpuRef's arithmetic: kernels/box_rows.h decides a
 * suppression exactly as CpuRef does, many boxes per step and without a division in the
 * common case). Boxes that cannot overlap are not tested: the selected boxes are kept in cells
 * of a grid along x, a cell as wide as the widest candidate, so a candidate is tested against
 * the cells its x-range reaches (torchvision's batched_nms offsets each class's boxes by the
 * class times the largest coordinate, so one NMS over 91 classes tests a box against its own
 * class's boxes only). A box not in the scanned cells has x0 >= the candidate's x1 or x1 <=
 * its x0 (one cell of margin on both sides for the rounding of cell indices), and such a box
 * never suppresses. Boxes with a non-finite corner are kept apart and tested always; boxes
 * of no positive area never suppress and are not kept. One thread: the pass is sequential,
 * and the per-class work of an NMS of several classes is small.
 *
 * NonZero: one pass counting (split over the pool), one writing the indices. */
#include "ops/create.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- NON_MAX_SUPPRESSION ------------------------------------------------------------------- */

typedef struct nms_state {
    const struct accel_kernels* k;
    pn_tensor_info infos[6];  /* boxes, scores, [max, iou, score_threshold], output */
    uint32_t num_inputs;
    int center;
} nms_state;

typedef struct nms_candidate {
    float score;
    int64_t box;
} nms_candidate;

/* Descending score, NaN after every number, then ascending box index: a total order. */
static int by_score(const void* pa, const void* pb) {
    const nms_candidate* a = (const nms_candidate*)pa;
    const nms_candidate* b = (const nms_candidate*)pb;
    const int an = a->score != a->score, bn = b->score != b->score;
    if (an != bn) {
        return an - bn;
    }
    if (!an && a->score != b->score) {
        return a->score > b->score ? -1 : 1;
    }
    return (a->box > b->box) - (a->box < b->box);
}

/* The selected boxes of one (batch, class): per cell of the x grid a run of slots (CSR:
 * cell c holds slots [start[c], start[c] + used[c])), the last cell `cells` for boxes with a
 * non-finite corner. Corners and areas in structure-of-arrays form for kernels/box_rows.h. */
typedef struct nms_grid {
    double *x0, *y0, *x1, *y1, *area; /* [n] each, by slot */
    int64_t* start;                   /* [cells + 2] */
    int64_t* used;                    /* [cells + 1] */
    int64_t* cell_of;                 /* [n] each candidate's cell (by candidate rank) */
    int64_t cells;
    double base, width;               /* cell c covers x0 in [base + c * width, base + (c + 1) * width) */
    double widest;                    /* the widest candidate of finite corners and positive area */
} nms_grid;

#define NMS_CELLS 65536 /* cells of the x grid at most */

typedef struct nms_box {
    double x0, y0, x1, y1, area;
} nms_box;

static nms_box load_box(const float* b, int center) {
    const double a = b[0], c = b[1], e = b[2], f = b[3];
    nms_box r;
    if (center) { /* [x_center, y_center, width, height] */
        r.x0 = a - e / 2, r.x1 = a + e / 2;
        r.y0 = c - f / 2, r.y1 = c + f / 2;
    } else { /* [y1, x1, y2, x2], any two opposite corners */
        r.y0 = a < e ? a : e, r.y1 = a < e ? e : a;
        r.x0 = c < f ? c : f, r.x1 = c < f ? f : c;
    }
    r.area = (r.x1 - r.x0) * (r.y1 - r.y0);
    return r;
}

static int finite_box(const nms_box* b) {
    return isfinite(b->x0) && isfinite(b->x1) && isfinite(b->y0) && isfinite(b->y1) && isfinite(b->area);
}

static int64_t cell_index(const nms_grid* g, double x) {
    const double c = floor((x - g->base) / g->width);
    return c < 0.0 ? 0 : c >= (double)g->cells ? g->cells - 1 : (int64_t)c;
}

/* Builds the grid for the candidates (boxes[rank] in sorted order), sizing each cell for
 * every candidate that could be selected into it. */
static void grid_plan(nms_grid* g, const nms_box* boxes, int64_t count) {
    double lo = INFINITY, hi = -INFINITY, widest = 0.0;
    for (int64_t r = 0; r < count; ++r) {
        if (!finite_box(&boxes[r]) || !(boxes[r].area > 0.0)) {
            continue;
        }
        lo = boxes[r].x0 < lo ? boxes[r].x0 : lo;
        hi = boxes[r].x0 > hi ? boxes[r].x0 : hi;
        const double w = boxes[r].x1 - boxes[r].x0;
        widest = w > widest ? w : widest;
    }
    g->base = lo;
    g->widest = widest;
    g->cells = 1;
    g->width = 1.0;
    if (lo < hi && widest > 0.0) { /* cells at least as wide as the widest box, at most NMS_CELLS */
        g->width = (hi - lo) / (NMS_CELLS - 1) > widest ? (hi - lo) / (NMS_CELLS - 1) : widest;
        const double cells = floor((hi - lo) / g->width) + 1.0;
        g->cells = cells < NMS_CELLS ? (int64_t)cells : NMS_CELLS;
    }
    memset(g->used, 0, sizeof(int64_t) * (size_t)(g->cells + 1));
    memset(g->start, 0, sizeof(int64_t) * (size_t)(g->cells + 2));
    for (int64_t r = 0; r < count; ++r) {
        int64_t c = -1;
        if (!finite_box(&boxes[r])) {
            c = g->cells;
        } else if (boxes[r].area > 0.0) {
            c = cell_index(g, boxes[r].x0);
        }
        g->cell_of[r] = c;
        if (c >= 0) {
            g->start[c + 1] += 1;
        }
    }
    for (int64_t c = 0; c <= g->cells; ++c) {
        g->start[c + 1] += g->start[c];
    }
}

static int grid_suppressed(const struct accel_kernels* k, const nms_grid* g, const nms_box* q, double iou) {
    int64_t first = 0, last = g->cells - 1;
    if (finite_box(q)) {
        /* boxes with x0 <= q.x0 - widest (and so x1 <= q.x0) or x0 >= q.x1 cannot overlap */
        first = cell_index(g, q->x0 - g->widest) - 1;
        last = cell_index(g, q->x1) + 1;
        first = first < 0 ? 0 : first;
        last = last >= g->cells ? g->cells - 1 : last;
    }
    for (int64_t c = first; c <= last; ++c) {
        const int64_t s = g->start[c], n = g->used[c];
        if (n > 0 && k->box_suppressed(g->x0 + s, g->y0 + s, g->x1 + s, g->y1 + s, g->area + s, n, q->x0, q->y0,
                                       q->x1, q->y1, q->area, iou)) {
            return 1;
        }
    }
    const int64_t s = g->start[g->cells], n = g->used[g->cells];
    return n > 0 && k->box_suppressed(g->x0 + s, g->y0 + s, g->x1 + s, g->y1 + s, g->area + s, n, q->x0, q->y0,
                                      q->x1, q->y1, q->area, iou);
}

static void grid_add(nms_grid* g, int64_t cell, const nms_box* b) {
    if (cell < 0) {
        return; /* no positive area: never suppresses */
    }
    const int64_t slot = g->start[cell] + g->used[cell]++;
    g->x0[slot] = b->x0, g->y0[slot] = b->y0, g->x1[slot] = b->x1, g->y1[slot] = b->y1;
    g->area[slot] = b->area;
}

static pn_status nms_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const nms_state* s = (const nms_state*)raw;
    pn_status st = pn_check_execute_args(args, s->num_inputs, s->infos, 1, &s->infos[5], "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    if (!PN_HAS_FIELD(args, pn_execute_args, output_dims) || args->output_dims == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc DataDependent NonMaxSuppression: the execute "
                       "arguments give no output_dims to report the outputs' actual dims in");
    }
    const pn_tensor_info* boxes_info = &s->infos[0];
    const int64_t batches = boxes_info->dims[0], n = boxes_info->dims[1], classes = s->infos[1].dims[1];
    const float* boxes = (const float*)args->inputs[0].data;
    const float* scores = (const float*)args->inputs[1].data;
    const int64_t most = s->num_inputs > 2 ? *(const int64_t*)args->inputs[2].data : 0;
    const double iou = s->num_inputs > 3 ? (double)*(const float*)args->inputs[3].data : 0.0;
    const int has_threshold = s->num_inputs > 4;
    const double threshold = has_threshold ? (double)*(const float*)args->inputs[4].data : 0.0;
    const int64_t bound = s->infos[5].dims[0];
    int64_t* y = (int64_t*)args->outputs[0].data;
    int64_t rows = 0;
    if (n > 0 && batches > 0 && classes > 0 && most > 0) {
        const size_t m = (size_t)n;
        nms_candidate* order = (nms_candidate*)malloc(m * sizeof(nms_candidate));
        nms_box* sorted = (nms_box*)malloc(m * sizeof(nms_box));
        nms_grid g = {0};
        g.x0 = (double*)malloc(5 * m * sizeof(double));
        g.cell_of = (int64_t*)malloc(m * sizeof(int64_t));
        g.start = (int64_t*)malloc((NMS_CELLS + 2) * sizeof(int64_t));
        g.used = (int64_t*)malloc((NMS_CELLS + 1) * sizeof(int64_t));
        if (order == NULL || sorted == NULL || g.x0 == NULL || g.cell_of == NULL || g.start == NULL || g.used == NULL) {
            free(order), free(sorted), free(g.x0), free(g.cell_of), free(g.start), free(g.used);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc DataDependent NonMaxSuppression: out of memory "
                           "for %lld boxes", (long long)n);
        }
        g.y0 = g.x0 + m, g.x1 = g.y0 + m, g.y1 = g.x1 + m, g.area = g.y1 + m;
        for (int64_t b = 0; b < batches && st == PN_OK; ++b) {
            for (int64_t c = 0; c < classes && st == PN_OK; ++c) {
                const float* row = scores + (b * classes + c) * n;
                int64_t count = 0;
                for (int64_t i = 0; i < n; ++i) {
                    if (!has_threshold || (double)row[i] > threshold) {
                        order[count].score = row[i], order[count].box = i;
                        ++count;
                    }
                }
                if (count == 0) {
                    continue;
                }
                qsort(order, (size_t)count, sizeof(nms_candidate), by_score);
                for (int64_t r = 0; r < count; ++r) {
                    sorted[r] = load_box(boxes + (b * n + order[r].box) * 4, s->center);
                }
                grid_plan(&g, sorted, count);
                int64_t taken = 0;
                for (int64_t r = 0; r < count && taken < most; ++r) {
                    if (sorted[r].area > 0.0 && grid_suppressed(s->k, &g, &sorted[r], iou)) {
                        continue;
                    }
                    if (rows >= bound) {
                        st = pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc DataDependent NonMaxSuppression: "
                                     "more than the %lld selected boxes the layer's output bound holds",
                                     (long long)bound);
                        break;
                    }
                    grid_add(&g, g.cell_of[r], &sorted[r]);
                    ++taken;
                    y[rows * 3] = b, y[rows * 3 + 1] = c, y[rows * 3 + 2] = order[r].box;
                    ++rows;
                }
            }
        }
        free(order), free(sorted), free(g.x0), free(g.cell_of), free(g.start), free(g.used);
    }
    if (st == PN_OK) {
        args->output_dims[0] = rows, args->output_dims[1] = 3;
    }
    return st;
}

/* ---- NON_ZERO ------------------------------------------------------------------------------ */

#define NZ_CHUNK 65536 /* elements per counting job */

typedef struct nz_state {
    accel_env env;
    pn_tensor_info infos[2]; /* x, output */
    size_t size;             /* x's element size: 1, 4 or 8 */
    int is_float;            /* float32: != 0.0f (NaN is nonzero, -0.0 is not) */
} nz_state;

static int nz_at(const nz_state* s, const char* x, int64_t i) {
    switch (s->size) {
    case 1: return ((const uint8_t*)x)[i] != 0;
    case 4: return s->is_float ? ((const float*)x)[i] != 0.0f : ((const int32_t*)x)[i] != 0;
    default: return ((const int64_t*)x)[i] != 0;
    }
}

typedef struct nz_job {
    const nz_state* s;
    const char* x;
    int64_t n;
    int64_t* counts; /* per chunk */
} nz_job;

static void nz_count(void* raw, int64_t b, int64_t e) {
    const nz_job* j = (const nz_job*)raw;
    for (int64_t chunk = b; chunk < e; ++chunk) {
        const int64_t i0 = chunk * NZ_CHUNK, i1 = i0 + NZ_CHUNK < j->n ? i0 + NZ_CHUNK : j->n;
        int64_t count = 0;
        for (int64_t i = i0; i < i1; ++i) {
            count += nz_at(j->s, j->x, i);
        }
        j->counts[chunk] = count;
    }
}

static pn_status nz_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const nz_state* s = (const nz_state*)raw;
    pn_status st = pn_check_execute_args(args, 1, &s->infos[0], 1, &s->infos[1], "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    if (!PN_HAS_FIELD(args, pn_execute_args, output_dims) || args->output_dims == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc DataDependent NonZero: the execute arguments "
                       "give no output_dims to report the outputs' actual dims in");
    }
    const pn_tensor_info* x = &s->infos[0];
    const int64_t n = pn_num_elements(x);
    const char* data = (const char*)args->inputs[0].data;
    const int64_t chunks = (n + NZ_CHUNK - 1) / NZ_CHUNK;
    int64_t total = 0;
    if (chunks > 0) {
        int64_t* counts = (int64_t*)malloc((size_t)chunks * sizeof(int64_t));
        if (counts == NULL) {
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc DataDependent NonZero: out of memory");
        }
        nz_job job = {s, data, n, counts};
        accel_parallel_for_grain(s->env.threads, chunks, 1, nz_count, &job);
        for (int64_t c = 0; c < chunks; ++c) {
            total += counts[c];
        }
        free(counts);
    }
    int64_t* y = (int64_t*)args->outputs[0].data;
    const uint32_t rank = x->rank;
    int64_t index[PN_MAX_DIMS] = {0};
    int64_t column = 0;
    for (int64_t i = 0; i < n && column < total; ++i) {
        if (nz_at(s, data, i)) {
            for (uint32_t d = 0; d < rank; ++d) {
                y[d * total + column] = index[d];
            }
            ++column;
        }
        for (int d = (int)rank - 1; d >= 0; --d) { /* the next element's multi-index */
            if (++index[d] < x->dims[d]) {
                break;
            }
            index[d] = 0;
        }
    }
    args->output_dims[0] = rank, args->output_dims[1] = total;
    return PN_OK;
}

/* ---- the family ---------------------------------------------------------------------------- */

static size_t nz_size(pn_data_type t, int* is_float) {
    *is_float = t == PN_DTYPE_FLOAT32;
    switch (t) {
    case PN_DTYPE_BOOL:
    case PN_DTYPE_UINT8:
    case PN_DTYPE_INT8: return 1;
    case PN_DTYPE_INT32:
    case PN_DTYPE_UINT32:
    case PN_DTYPE_FLOAT32: return 4;
    case PN_DTYPE_INT64:
    case PN_DTYPE_UINT64: return 8;
    default: return 0;
    }
}

static int plain(const pn_tensor_info* t) {
    return !(PN_HAS_FIELD(t, pn_tensor_info, quant_zero_point) && t->quant_scale != 0.0f);
}

pn_status accel_data_dependent_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_data_dependent_desc* d = (const pn_data_dependent_desc*)layer->descriptor;
    if (d->op == PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION) {
        if (layer->inputs[0].dtype != PN_DTYPE_FLOAT32) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs NonMaxSuppression on float32 boxes and scores only; "
                           "input 0 is %s", plugin->id, pn_dtype_name(layer->inputs[0].dtype));
        }
        return PN_OK;
    }
    if (d->op == PN_DATA_DEPENDENT_NON_ZERO) {
        int is_float = 0;
        if (nz_size(layer->inputs[0].dtype, &is_float) == 0 || !plain(&layer->inputs[0])) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs NonZero on plain bool, 8-, 32- and 64-bit integer "
                           "and float32 tensors only; input 0 is %s%s", plugin->id,
                           plain(&layer->inputs[0]) ? "" : "quantized ", pn_dtype_name(layer->inputs[0].dtype));
        }
        return PN_OK;
    }
    return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs the DataDependent operations NonZero and NonMaxSuppression "
                   "only, not %s", plugin->id, d->op == PN_DATA_DEPENDENT_UNIQUE ? "Unique" : "Compress");
}

static void release(void* raw) { free(raw); }

pn_status accel_data_dependent_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                      pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_data_dependent_desc* d = (const pn_data_dependent_desc*)layer->descriptor;
    void* state = NULL;
    pn_execute_fn execute = NULL;
    if (d->op == PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION) {
        nms_state* s = (nms_state*)calloc(1, sizeof(*s));
        if (s != NULL) {
            s->k = accel_kernel_set_for(env->isa)->vector;
            s->num_inputs = layer->num_inputs;
            accel_copy_infos(s->infos, layer->inputs, layer->num_inputs);
            accel_copy_infos(&s->infos[5], layer->outputs, 1);
            s->center = d->center_point_box != 0;
        }
        state = s, execute = nms_execute;
    } else {
        nz_state* s = (nz_state*)calloc(1, sizeof(*s));
        if (s != NULL) {
            s->env = *env;
            accel_copy_layer_infos(s->infos, layer);
            s->size = nz_size(layer->inputs[0].dtype, &s->is_float);
        }
        state = s, execute = nz_execute;
    }
    if (state == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a DataDependent workload");
    }
    *workload_out = pn_workload_new(state, execute, release, 0);
    if (*workload_out == NULL) { /* state released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a DataDependent workload");
    }
    return PN_OK;
}
