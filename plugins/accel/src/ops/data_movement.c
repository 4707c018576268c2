/* CpuAcc SLICE, SPLIT and CONCAT: strided copies of any element size, planned when the
 * workload is made and split over the thread pool.
 *
 * Every output (SLICE's one, each of SPLIT's, each input of CONCAT) is one "region copy": a
 * box of dims[] elements read at source strides xs[] and written at destination strides ys[]
 * (in elements, negative source strides for negative SLICE steps), from element offsets x0 /
 * y0. The plan drops size-1 dims and merges each dim into the one inside it when both sides
 * stay contiguous across them, so a channel half of an NCHW tensor is one run, and the
 * innermost dim becomes a run of `len` elements: a memcpy when it is contiguous on both sides,
 * else a loop typed on the element size (1, 2, 4 or 8 bytes: every element type of the ABI).
 * Work units are rows of the run, and long runs are cut into chunks of CHUNK_BYTES so one
 * large contiguous copy (a channel split at batch 1) still spreads over the threads; units of
 * all regions of a layer run in one parallel loop. Copies only: the results do not depend on
 * the kernel set or the thread count. */
#include "ops/create.h"
#include "ops/index_copy.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((int64_t)1 << 16)   /* a long contiguous run is cut into chunks of this */
#define TASK_BYTES ((int64_t)1 << 15)    /* the least a thread is given (smaller layers run inline) */

typedef struct region {
    uint32_t rank;              /* >= 1 after merging; dims[rank - 1] is the run */
    int64_t dims[PN_MAX_DIMS];
    int64_t xs[PN_MAX_DIMS];    /* source strides, elements */
    int64_t ys[PN_MAX_DIMS];    /* destination strides, elements */
    int64_t x0, y0;             /* element offsets of the box's first element */
    uint32_t src, dst;          /* the input / output tensor it reads / writes */
    int64_t rows;               /* product of dims[0 .. rank-2] */
    int64_t chunk;              /* elements per unit along the run */
    int64_t chunks;             /* units per row */
    int64_t first_unit;         /* units of the regions before this one */
} region;

typedef struct move_state {
    accel_env env;
    pn_layer_kind kind;
    uint32_t num_inputs, num_outputs;
    pn_tensor_info* infos;      /* inputs then outputs */
    size_t es;                  /* element size, bytes */
    uint32_t num_regions;
    region* regions;
    int64_t units, grain;
} move_state;

typedef struct move_run {
    const move_state* s;
    const pn_execute_args* args;
} move_run;

static void move_release(void* vs) {
    move_state* s = (move_state*)vs;
    if (s != NULL) {
        free(s->infos);
        free(s->regions);
        free(s);
    }
}

/* Row-major strides of a tensor, in elements. */
static void strides_of(const pn_tensor_info* t, int64_t* st) {
    int64_t n = 1;
    for (int32_t a = (int32_t)t->rank - 1; a >= 0; --a) {
        st[a] = n;
        n *= t->dims[a];
    }
}

/* Drops size-1 dims of the box and merges each dim into the next inner one where both sides
 * stay contiguous across them; then sizes its units. An empty box keeps rows 0. */
static void region_finish(region* r, uint32_t rank, const int64_t* dims, const int64_t* xs,
                          const int64_t* ys, size_t es) {
    uint32_t n = 0;
    int64_t total = 1;
    for (uint32_t a = 0; a < rank; ++a) total *= dims[a];
    for (uint32_t a = 0; a < rank; ++a) {
        if (dims[a] == 1) continue;
        r->dims[n] = dims[a];
        r->xs[n] = xs[a];
        r->ys[n] = ys[a];
        ++n;
    }
    /* merge from the inside out: dim i joins dim i+1 when x and y are contiguous across */
    uint32_t m = 0;
    for (uint32_t a = 0; a < n; ++a) {
        if (m > 0 && r->xs[m - 1] == r->xs[a] * r->dims[a] && r->ys[m - 1] == r->ys[a] * r->dims[a]) {
            r->dims[m - 1] *= r->dims[a];
            r->xs[m - 1] = r->xs[a];
            r->ys[m - 1] = r->ys[a];
            continue;
        }
        r->dims[m] = r->dims[a];
        r->xs[m] = r->xs[a];
        r->ys[m] = r->ys[a];
        ++m;
    }
    if (m == 0) {
        r->dims[0] = 1;
        r->xs[0] = r->ys[0] = 1;
        m = 1;
    }
    r->rank = m;
    const int64_t len = r->dims[m - 1];
    r->rows = total == 0 ? 0 : total / len;
    const int64_t per_chunk = CHUNK_BYTES / (int64_t)es;
    r->chunks = len > per_chunk ? (len + per_chunk - 1) / per_chunk : 1;
    r->chunk = (len + r->chunks - 1) / r->chunks;
}

/* Copies `n` elements of size es from x (stride sx) to y (stride sy). */
static void copy_run(char* y, int64_t sy, const char* x, int64_t sx, int64_t n, size_t es) {
    if (sx == 1 && sy == 1) {
        memcpy(y, x, (size_t)n * es);
        return;
    }
#define STRIDED(T)                                                   \
    {                                                                \
        const T* xt = (const T*)(const void*)x;                      \
        T* yt = (T*)(void*)y;                                        \
        if (sy == 1) {                                               \
            for (int64_t i = 0; i < n; ++i) yt[i] = xt[i * sx];      \
        } else {                                                     \
            for (int64_t i = 0; i < n; ++i) yt[i * sy] = xt[i * sx]; \
        }                                                            \
    }                                                                \
    break;
    switch (es) {
    case 1: STRIDED(uint8_t)
    case 2: STRIDED(uint16_t)
    case 4: STRIDED(uint32_t)
    case 8: STRIDED(uint64_t)
    default:
        for (int64_t i = 0; i < n; ++i) memcpy(y + i * sy * (int64_t)es, x + i * sx * (int64_t)es, es);
        break;
    }
#undef STRIDED
}

/* A short contiguous run of `bytes` (at most SHORT_RUN): 16-byte moves the compiler inlines, no
 * call, the last one ending at the run's end (overlapping the one before when bytes is not a
 * multiple of 16); runs under 16 bytes as two 8- or 4-byte moves likewise (YOLO's box
 * coordinates: rows of 2 floats split off rows of 85). */
#define SHORT_RUN 512
static void copy_short(char* y, const char* x, int64_t bytes) {
    if (bytes >= 16) {
        int64_t i = 0;
        for (; i + 16 <= bytes; i += 16) {
            memcpy(y + i, x + i, 16);
        }
        if (i < bytes) {
            memcpy(y + bytes - 16, x + bytes - 16, 16);
        }
    } else if (bytes >= 8) {
        memcpy(y, x, 8);
        memcpy(y + bytes - 8, x + bytes - 8, 8);
    } else if (bytes >= 4) {
        memcpy(y, x, 4);
        memcpy(y + bytes - 4, x + bytes - 4, 4);
    } else {
        for (int64_t i = 0; i < bytes; ++i) y[i] = x[i];
    }
}

/* Units [b, e) of region r: row u / chunks, chunk u % chunks. The row's offsets follow an
 * index odometer over the outer dims (no division per row). */
static void region_units(const move_run* run, const region* r, int64_t b, int64_t e) {
    const size_t es = run->s->es;
    const uint32_t inner = r->rank - 1;
    const int64_t len = r->dims[inner], sx = r->xs[inner], sy = r->ys[inner];
    const char* x = (const char*)run->args->inputs[r->src].data;
    char* y = (char*)run->args->outputs[r->dst].data;
    if (r->rank == 1 && sx == 1 && sy == 1 && x + r->x0 * (int64_t)es == y + r->y0 * (int64_t)es) {
        return; /* the source already is the destination (its producer wrote in place) */
    }
    int64_t row = b / r->chunks, part = b % r->chunks;
    int64_t idx[PN_MAX_DIMS];
    int64_t rem = row, xo = r->x0, yo = r->y0;
    for (int32_t a = (int32_t)inner - 1; a >= 0; --a) {
        idx[a] = rem % r->dims[a];
        rem /= r->dims[a];
        xo += idx[a] * r->xs[a];
        yo += idx[a] * r->ys[a];
    }
    const int64_t run_bytes = len * (int64_t)es;
    if (r->chunks == 1 && sx == 1 && sy == 1 && run_bytes <= SHORT_RUN) {
        for (int64_t u = b; u < e; ++u) { /* whole short rows */
            copy_short(y + yo * (int64_t)es, x + xo * (int64_t)es, run_bytes);
            for (int32_t a = (int32_t)inner - 1; a >= 0; --a) {
                xo += r->xs[a];
                yo += r->ys[a];
                if (++idx[a] < r->dims[a]) break;
                idx[a] = 0;
                xo -= r->dims[a] * r->xs[a];
                yo -= r->dims[a] * r->ys[a];
            }
        }
        return;
    }
    for (int64_t u = b; u < e;) {
        for (; part < r->chunks && u < e; ++part, ++u) {
            const int64_t at = part * r->chunk;
            const int64_t n = len - at < r->chunk ? len - at : r->chunk;
            copy_run(y + (yo + at * sy) * (int64_t)es, sy, x + (xo + at * sx) * (int64_t)es, sx, n, es);
        }
        part = 0;
        for (int32_t a = (int32_t)inner - 1; a >= 0; --a) {
            xo += r->xs[a];
            yo += r->ys[a];
            if (++idx[a] < r->dims[a]) break;
            idx[a] = 0;
            xo -= r->dims[a] * r->xs[a];
            yo -= r->dims[a] * r->ys[a];
        }
    }
}

static void move_units(void* vctx, int64_t b, int64_t e) {
    const move_run* run = (const move_run*)vctx;
    const move_state* s = run->s;
    for (uint32_t i = 0; i < s->num_regions && b < e; ++i) {
        const region* r = &s->regions[i];
        const int64_t end = r->first_unit + r->rows * r->chunks;
        if (b >= end) continue;
        const int64_t stop = e < end ? e : end;
        region_units(run, r, b - r->first_unit, stop - r->first_unit);
        b = stop;
    }
}

/* 1 when every non-empty region's source already is its destination. */
static int all_in_place(const move_state* s, const pn_execute_args* args) {
    for (uint32_t i = 0; i < s->num_regions; ++i) {
        const region* r = &s->regions[i];
        const char* x = (const char*)args->inputs[r->src].data;
        const char* y = (const char*)args->outputs[r->dst].data;
        if (r->rows > 0 && (r->rank != 1 || r->xs[0] != 1 || r->ys[0] != 1 ||
                            x + r->x0 * (int64_t)s->es != y + r->y0 * (int64_t)s->es)) {
            return 0;
        }
    }
    return 1;
}

static pn_status move_execute(void* vs, const pn_execute_args* args, pn_string_out* message_out) {
    const move_state* s = (const move_state*)vs;
    pn_status st = pn_check_execute_args(args, s->num_inputs, s->infos, s->num_outputs, s->infos + s->num_inputs,
                                         "CpuAcc", message_out);
    if (st != PN_OK || s->units == 0) {
        return st;
    }
    if (all_in_place(s, args)) {
        return PN_OK; /* the runtime planned every part at its place (PN_BACKEND_MOVES_IN_PLACE) */
    }
    move_run run = {s, args};
    accel_parallel_for_grain(s->env.threads, s->units, s->grain, move_units, &run);
    return PN_OK;
}

/* The state with the layer's infos copied and room for n regions. */
static move_state* state_new(const accel_env* env, const pn_layer* layer, uint32_t n) {
    move_state* s = (move_state*)calloc(1, sizeof(*s));
    if (s == NULL) return NULL;
    s->infos = (pn_tensor_info*)calloc(layer->num_inputs + layer->num_outputs, sizeof(pn_tensor_info));
    s->regions = (region*)calloc(n > 0 ? n : 1, sizeof(region));
    if (s->infos == NULL || s->regions == NULL) {
        move_release(s);
        return NULL;
    }
    s->env = *env;
    s->kind = layer->kind;
    s->num_inputs = layer->num_inputs;
    s->num_outputs = layer->num_outputs;
    for (uint32_t i = 0; i < layer->num_inputs; ++i) s->infos[i] = layer->inputs[i];
    for (uint32_t i = 0; i < layer->num_outputs; ++i) s->infos[layer->num_inputs + i] = layer->outputs[i];
    for (uint32_t i = 0; i < layer->num_inputs + layer->num_outputs; ++i) s->infos[i].extension = NULL;
    s->es = pn_dtype_size(layer->outputs[0].dtype);
    s->num_regions = n;
    return s;
}

/* Numbers the regions' units and sets the grain (units of at least TASK_BYTES per thread). */
static pn_status state_finish(move_state* s, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    int64_t units = 0, bytes = 0;
    for (uint32_t i = 0; i < s->num_regions; ++i) {
        region* r = &s->regions[i];
        r->first_unit = units;
        units += r->rows * r->chunks;
        bytes += r->rows * r->dims[r->rank - 1] * (int64_t)s->es;
    }
    s->units = units;
    const int64_t per_unit = units > 0 ? bytes / units + 1 : 1;
    s->grain = TASK_BYTES / per_unit + 1;
    *workload_out = pn_workload_new(s, move_execute, move_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s workload",
                       pn_layer_kind_name(layer->kind));
    }
    return PN_OK;
}

static pn_status out_of_memory(const pn_layer* layer, pn_string_out* message_out) {
    return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s workload",
                   pn_layer_kind_name(layer->kind));
}

/* ---- The element-type rule ----------------------------------------------------------------- */

/* The kinds that move bytes (SLICE, SPLIT, CONCAT, RESHAPE, COPY, TRANSPOSE, GATHER's data): every
 * element type whose size is 1, 2, 4 or 8 bytes runs (all of the ABI's: BOOL, INT8, UINT8;
 * FLOAT16, BFLOAT16, INT16, UINT16; FLOAT32, INT32, UINT32; FLOAT64, INT64, UINT64),
 * quantized INT8/UINT8 included when every output, and every other input of input 0's type
 * (CONCAT's), has input 0's scale and zero point (bytes moved as they are would otherwise
 * mean other values). */
pn_status accel_move_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_tensor_info* x = &layer->inputs[0];
    const size_t es = pn_dtype_size(x->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs %s on elements of 1, 2, 4 or 8 bytes; input 0 is %s",
                       plugin->id, pn_layer_kind_name(layer->kind), pn_dtype_name(x->dtype));
    }
    const int xq = PN_HAS_FIELD(x, pn_tensor_info, quant_zero_point);
    const float xs = xq ? x->quant_scale : 0.0f;
    const int32_t xz = xq ? x->quant_zero_point : 0;
    for (uint32_t i = 1; i < layer->num_inputs + layer->num_outputs; ++i) {
        const int out = i >= layer->num_inputs;
        const uint32_t at = out ? i - layer->num_inputs : i;
        const pn_tensor_info* y = out ? &layer->outputs[at] : &layer->inputs[i];
        if (!out && y->dtype != x->dtype) {
            continue; /* GATHER's indices */
        }
        const int yq = PN_HAS_FIELD(y, pn_tensor_info, quant_zero_point);
        const float ys = yq ? y->quant_scale : 0.0f;
        const int32_t yz = yq ? y->quant_zero_point : 0;
        if (xs != ys || xz != yz) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED,
                           "%s runs %s as a move of bytes: %s %u's quantization (scale %g, zero point %d) is "
                           "not input 0's (scale %g, zero point %d)", plugin->id, pn_layer_kind_name(layer->kind),
                           out ? "output" : "input", at, (double)ys, (int)yz, (double)xs, (int)xz);
        }
    }
    return PN_OK;
}

/* ---- SLICE -------------------------------------------------------------------------------- */

pn_status accel_slice_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    const pn_slice_desc* d = (const pn_slice_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    move_state* s = state_new((const accel_env*)context, layer, 1);
    if (s == NULL) return out_of_memory(layer, message_out);
    int64_t xst[PN_MAX_DIMS], yst[PN_MAX_DIMS], xs[PN_MAX_DIMS];
    strides_of(x, xst);
    strides_of(y, yst);
    region* r = &s->regions[0];
    r->x0 = 0;
    for (uint32_t a = 0; a < x->rank; ++a) {
        xs[a] = xst[a] * d->steps[a];
        r->x0 += d->starts[a] * xst[a];
    }
    region_finish(r, x->rank, y->dims, xs, yst, s->es);
    r->y0 = 0;
    if (pn_num_elements(y) == 0) r->rows = 0;
    return state_finish(s, layer, workload_out, message_out);
}

/* ---- SPLIT ---------------------------------------------------------------------------------- */

/* Regions [0, n): piece k (`pieces[k]`) and its place along `axis` of `whole`, the pieces at
 * consecutive offsets: read from the whole into output k (Split, concat 0) or written from input
 * k into the whole (Concat, concat 1). An empty piece moves nothing. */
static void axis_regions(move_state* s, const pn_tensor_info* whole, const pn_tensor_info* pieces, uint32_t n,
                         uint32_t axis, int concat) {
    int64_t wst[PN_MAX_DIMS], pst[PN_MAX_DIMS];
    strides_of(whole, wst);
    int64_t at = 0;
    for (uint32_t k = 0; k < n; ++k) {
        const pn_tensor_info* p = &pieces[k];
        region* r = &s->regions[k];
        strides_of(p, pst);
        if (concat) {
            region_finish(r, whole->rank, p->dims, pst, wst, s->es);
            r->src = k;
            r->y0 = at * wst[axis];
        } else {
            region_finish(r, whole->rank, p->dims, wst, pst, s->es);
            r->x0 = at * wst[axis];
            r->dst = k;
        }
        if (pn_num_elements(p) == 0) r->rows = 0;
        at += p->dims[axis];
    }
}

pn_status accel_split_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    const pn_split_desc* d = (const pn_split_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
    move_state* s = state_new((const accel_env*)context, layer, layer->num_outputs);
    if (s == NULL) return out_of_memory(layer, message_out);
    axis_regions(s, x, layer->outputs, layer->num_outputs, axis, 0);
    return state_finish(s, layer, workload_out, message_out);
}

/* ---- TRANSPOSE whose innermost output dim is contiguous in the input ------------------------ */

/* One region: the output's dims read at the permuted input strides (ops/shape_ops.c hands over the
 * transposes that keep a contiguous inner run; those that do not take its block transposes). */
pn_status accel_permute_create(const accel_env* env, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    const pn_transpose_desc* d = (const pn_transpose_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    move_state* s = state_new(env, layer, 1);
    if (s == NULL) return out_of_memory(layer, message_out);
    int64_t xst[PN_MAX_DIMS], yst[PN_MAX_DIMS], xs[PN_MAX_DIMS];
    strides_of(x, xst);
    strides_of(y, yst);
    for (uint32_t a = 0; a < y->rank; ++a) xs[a] = xst[d->perm[a]];
    region_finish(&s->regions[0], y->rank, y->dims, xs, yst, s->es);
    if (pn_num_elements(y) == 0) s->regions[0].rows = 0;
    return state_finish(s, layer, workload_out, message_out);
}

/* ---- The fused reshape-transpose (ops/index_copy.h) ---------------------------------------------- */

void accel_index_copy_release(void* payload) { free(payload); }

static int same_info(const pn_tensor_info* a, const pn_tensor_info* b) {
    return a->dtype == b->dtype && pn_same_dims(a, b);
}

pn_status accel_index_copy_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                  pn_string_out* message_out) {
    const accel_index_copy* c = (const accel_index_copy*)((const pn_precompiled_desc*)layer->descriptor)->payload;
    if (layer->num_inputs != 1 || layer->num_outputs != 1 || !same_info(&layer->inputs[0], &c->input) ||
        !same_info(&layer->outputs[0], &c->output)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled reshape-transpose '%s' does not have its payload's one input and output",
                       layer->name != NULL ? layer->name : "");
    }
    move_state* s = state_new((const accel_env*)context, layer, 1);
    if (s == NULL) return out_of_memory(layer, message_out);
    int64_t ys[PN_MAX_DIMS] = {0};
    int64_t n = 1;
    for (int32_t a = (int32_t)c->rank - 1; a >= 0; --a) {
        ys[a] = n;
        n *= c->dims[a];
    }
    region_finish(&s->regions[0], c->rank, c->dims, c->xs, ys, s->es);
    if (n == 0) s->regions[0].rows = 0;
    return state_finish(s, layer, workload_out, message_out);
}

/* ---- CONCAT --------------------------------------------------------------------------------- */

/* Each input is the region of the output at its offset along the axis. An input whose data
 * already is that region (a runtime that lets producers write into the concatenation's output,
 * batch-1 channel concatenations: each input is one contiguous run) is not copied. */
pn_status accel_concat_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    const pn_concat_desc* d = (const pn_concat_desc*)layer->descriptor;
    const pn_tensor_info* y = &layer->outputs[0];
    const uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, y->rank);
    move_state* s = state_new((const accel_env*)context, layer, layer->num_inputs);
    if (s == NULL) return out_of_memory(layer, message_out);
    axis_regions(s, y, layer->inputs, layer->num_inputs, axis, 1);
    return state_finish(s, layer, workload_out, message_out);
}
