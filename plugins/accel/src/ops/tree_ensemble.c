/* CpuAcc TREE_ENSEMBLE (ONNX-ML TreeEnsembleRegressor, TreeEnsembleClassifier, TreeEnsemble),
 * backend_api.h "Tree ensembles".
 *
 * The forest is packed once (create_workload; a workload made by reshape shares the block,
 * ops/shared_weights.h) into 16-byte records, each tree breadth-first from its root: a
 * branch's two children lie side by side (the true child at `child`, the false one at
 * child + 1), so a step is one record load, one feature load, a comparison and an add, with
 * no branch. A leaf's `child` points at its sink, a pair of records (after every tree) that
 * point at the first of them, so a row that reached its leaf stays on it however many steps
 * remain: a block of rows walks a tree in lockstep for the tree's depth, and each row's
 * final record names its leaf (leaf_of). Shared subtrees (a node the child of several) are
 * copied for each parent; the check refuses a forest whose copies would exceed 2^28 records.
 *
 * execute() takes the rows in blocks of BLOCK, each block walking every tree in turn (the
 * tree stays in cache), LANES rows at once (their chains of loads overlap); a batch of fewer
 * than LANES rows walks LANES trees at once per row instead. Large batches are split by rows
 * over the backend's pool. Leaf weights accumulate in double, tree by tree in order (the
 * order CpuRef adds them), base values and the post transform (pn_tree_apply_post_transform) in
 * double, rounded once to x's type. */
#include "ops/create.h"
#include "ops/shared_weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TREES "TreeEnsemble"
#define BLOCK 256
#define LANES 8
#define CHILD_MASK 0x0FFFFFFFu
#define MAX_RECORDS ((int64_t)CHILD_MASK)
#define MODE_SHIFT 28
#define MISSING_BIT 0x80000000u

enum { X, OFFSETS, MODES, FEATURES, THRESHOLDS, TRUE_IDS, FALSE_IDS, TARGETS, WEIGHTS, BASE,
       NUM_INPUTS };

/* One node: 16 bytes. code: bits 0..27 the true child (the false one follows it), bits 28..30
 * the pn_tree_node_mode (0 for leaves and sinks), bit 31 PN_TREE_MISSING_TRUE. A leaf's and
 * its sink's threshold holds the leaf's single weight (leaf_value; 0 when it has several), so a
 * forest with `single` reads its result from the record the walk ends on. */
typedef struct tree_record {
    double threshold;
    int32_t feature;
    uint32_t code;
} tree_record;

/* The packed forest: one shared block, its arrays after it. */
typedef struct tree_pack {
    int64_t trees, targets, records;
    int uniform_mode;        /* every branch's mode, or 0 when they differ */
    int single;              /* one target and every leaf exactly one weight */
    tree_record* records_at; /* [records] */
    int32_t* roots;          /* [trees] */
    int32_t* depths;         /* [trees]: branches on the longest path */
    int32_t* leaf_of;        /* [records]: a leaf's or sink's original node */
    int32_t* leaf_first;     /* [M] */
    int32_t* leaf_count;     /* [M] */
    double* leaf_value;      /* [M]: with `single`, the leaf's weight */
    int32_t* leaf_targets;   /* [W] */
    double* leaf_weights;    /* [W] */
    double* base;            /* [targets] */
} tree_pack;

typedef struct tree_state {
    accel_env env;
    const tree_pack* pack; /* in a shared block (the reshapable workload's packs) */
    pn_tree_ensemble_desc desc;
    pn_tensor_info inputs[NUM_INPUTS], outputs[2];
    uint32_t num_outputs;
    int64_t rows, features;
    int is_f32;
    int64_t chunks;        /* row ranges execute() splits the batch into (1: no threads) */
    size_t chunk_bytes;    /* workspace bytes per chunk */
} tree_state;

/* ---- Sizes: what packing a forest takes (the check and the packer agree) ---------- */

/* Records of the packed forest (copies of shared subtrees included, two sink records per
 * leaf copy), saturating above MAX_RECORDS. sizes: scratch of M. */
static int64_t packed_records(const pn_layer* layer, int64_t* sizes) {
    const void* const* c = layer->constant_data;
    const int64_t* offsets = (const int64_t*)c[OFFSETS];
    const uint8_t* modes = (const uint8_t*)c[MODES];
    const int64_t* yes = (const int64_t*)c[TRUE_IDS];
    const int64_t* no = (const int64_t*)c[FALSE_IDS];
    int64_t trees = layer->inputs[OFFSETS].dims[0] - 1, total = 0;
    for (int64_t t = 0; t < trees; ++t) {
        for (int64_t i = offsets[t + 1] - 1; i >= offsets[t]; --i) {
            if ((modes[i] & ~PN_TREE_MISSING_TRUE) == PN_TREE_NODE_LEAF) {
                sizes[i] = 3; /* the leaf and its sink */
            } else {
                int64_t s = 1 + sizes[yes[i]] + sizes[no[i]];
                sizes[i] = s > MAX_RECORDS ? MAX_RECORDS + 1 : s;
            }
        }
        total += sizes[offsets[t]];
        if (total > MAX_RECORDS) {
            return MAX_RECORDS + 1;
        }
    }
    return total;
}

pn_status accel_tree_ensemble_check(const pn_plugin* plugin, const pn_layer* layer,
                                    pn_string_out* reason) {
    (void)plugin;
    int64_t nodes = layer->inputs[MODES].dims[0], weights = layer->inputs[TARGETS].dims[0];
    if (nodes > INT32_MAX || weights > INT32_MAX) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "CpuAcc: " TREES ": at most 2^31 - 1 nodes "
                       "and weights, got %lld and %lld", (long long)nodes, (long long)weights);
    }
    int64_t* sizes = (int64_t*)malloc((size_t)(nodes > 0 ? nodes : 1) * sizeof(int64_t));
    if (sizes == NULL) {
        return pn_fail(reason, PN_ERR_OUT_OF_MEMORY, "CpuAcc: " TREES ": out of memory");
    }
    int64_t records = packed_records(layer, sizes);
    free(sizes);
    if (records > MAX_RECORDS) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "CpuAcc: " TREES ": the forest's shared "
                       "subtrees unfold to more than 2^28 nodes");
    }
    return PN_OK;
}

/* ---- Packing ------------------------------------------------------------------------ */

static size_t align8(size_t n) { return (n + 7u) & ~(size_t)7u; }

/* Bytes of the block for `records` records (layout: pack_into). */
static size_t pack_bytes(int64_t trees, int64_t records, int64_t nodes, int64_t weights,
                         int64_t targets) {
    return align8(sizeof(tree_pack)) + (size_t)records * sizeof(tree_record) +
           align8((size_t)trees * 2 * sizeof(int32_t)) + align8((size_t)records * sizeof(int32_t)) +
           align8((size_t)nodes * 2 * sizeof(int32_t)) + (size_t)nodes * sizeof(double) +
           align8((size_t)weights * sizeof(int32_t)) + (size_t)weights * sizeof(double) +
           (size_t)targets * sizeof(double);
}

/* Lays the forest out in `block` (pack_bytes large). queue: scratch of `records` pairs. */
static void pack_into(const pn_layer* layer, int64_t records, char* block, int64_t* queue) {
    const void* const* c = layer->constant_data;
    const int64_t* offsets = (const int64_t*)c[OFFSETS];
    const uint8_t* modes = (const uint8_t*)c[MODES];
    const int64_t* feature = (const int64_t*)c[FEATURES];
    const double* threshold = (const double*)c[THRESHOLDS];
    const int64_t* yes = (const int64_t*)c[TRUE_IDS];
    const int64_t* no = (const int64_t*)c[FALSE_IDS];
    const int64_t* leaf_targets = (const int64_t*)c[TARGETS];
    const double* leaf_weights = (const double*)c[WEIGHTS];
    int64_t trees = layer->inputs[OFFSETS].dims[0] - 1, nodes = layer->inputs[MODES].dims[0];
    int64_t weights = layer->inputs[TARGETS].dims[0], targets = layer->inputs[BASE].dims[0];
    tree_pack* p = (tree_pack*)block;
    char* at = block + align8(sizeof(tree_pack));
    p->records_at = (tree_record*)at;
    at += (size_t)records * sizeof(tree_record);
    p->roots = (int32_t*)at;
    p->depths = p->roots + trees;
    at += align8((size_t)trees * 2 * sizeof(int32_t));
    p->leaf_of = (int32_t*)at;
    at += align8((size_t)records * sizeof(int32_t));
    p->leaf_first = (int32_t*)at;
    p->leaf_count = p->leaf_first + nodes;
    at += align8((size_t)nodes * 2 * sizeof(int32_t));
    p->leaf_value = (double*)at;
    at += (size_t)nodes * sizeof(double);
    p->leaf_targets = (int32_t*)at;
    at += align8((size_t)weights * sizeof(int32_t));
    p->leaf_weights = (double*)at;
    at += (size_t)weights * sizeof(double);
    p->base = (double*)at;
    p->trees = trees;
    p->targets = targets;
    p->records = records;
    p->single = targets == 1;
    int uniform = -1;
    for (int64_t i = 0; i < nodes; ++i) {
        int mode = modes[i] & ~PN_TREE_MISSING_TRUE;
        if (mode == PN_TREE_NODE_LEAF) {
            p->leaf_first[i] = (int32_t)yes[i];
            p->leaf_count[i] = (int32_t)no[i];
            p->single = p->single && no[i] == 1;
            p->leaf_value[i] = no[i] == 1 ? leaf_weights[yes[i]] : 0.0;
        } else {
            p->leaf_first[i] = p->leaf_count[i] = 0;
            p->leaf_value[i] = 0.0;
            uniform = uniform == -1 ? mode : (uniform == mode ? uniform : 0);
        }
    }
    p->uniform_mode = uniform < 0 ? 0 : uniform;
    /* Breadth-first per tree: queue[2q] the original node of record queue[2q + 1]. Sinks go
     * after the tree's records (counted first: a tree's record count is its nodes' copies). */
    int64_t next = 0;
    for (int64_t t = 0; t < trees; ++t) {
        int64_t head = 0, tail = 0, root = next;
        queue[tail++] = offsets[t];
        queue[tail++] = next++;
        int32_t depth = 0;
        /* the queue's levels: depth counts the levels that hold a branch */
        int64_t level_end = tail;
        int level_has_branch = 0;
        int64_t tree_records = 0;
        while (head < tail) {
            int64_t node = queue[head], slot = queue[head + 1];
            head += 2;
            tree_record* r = &p->records_at[slot];
            int mode = modes[node] & ~PN_TREE_MISSING_TRUE;
            p->leaf_of[slot] = (int32_t)node;
            if (mode == PN_TREE_NODE_LEAF) {
                r->threshold = p->leaf_value[node]; /* the walk's result: never compared to decide */
                r->feature = 0;
                r->code = 0; /* its sink, set below */
            } else {
                level_has_branch = 1;
                r->threshold = threshold[node];
                r->feature = (int32_t)feature[node];
                r->code = (uint32_t)next | ((uint32_t)mode << MODE_SHIFT) |
                          ((modes[node] & PN_TREE_MISSING_TRUE) ? MISSING_BIT : 0u);
                queue[tail++] = yes[node];
                queue[tail++] = next++;
                queue[tail++] = no[node];
                queue[tail++] = next++;
            }
            if (head == level_end) {
                depth += level_has_branch;
                level_has_branch = 0;
                level_end = tail;
            }
        }
        tree_records = next - root;
        /* the sinks: one pair per leaf record of this tree */
        for (int64_t slot = root; slot < root + tree_records; ++slot) {
            tree_record* r = &p->records_at[slot];
            if (((r->code >> MODE_SHIFT) & 7u) == 0) {
                int64_t sink = next;
                next += 2;
                r->code = (uint32_t)sink;
                for (int64_t s = sink; s < sink + 2; ++s) {
                    p->records_at[s].threshold = r->threshold;
                    p->records_at[s].feature = 0;
                    p->records_at[s].code = (uint32_t)sink;
                    p->leaf_of[s] = p->leaf_of[slot];
                }
            }
        }
        p->roots[t] = (int32_t)root;
        p->depths[t] = depth;
    }
    for (int64_t w = 0; w < weights; ++w) {
        p->leaf_targets[w] = (int32_t)leaf_targets[w];
        p->leaf_weights[w] = leaf_weights[w];
    }
    memcpy(p->base, c[BASE], (size_t)targets * sizeof(double));
}

/* ---- Walking ------------------------------------------------------------------------ */

static inline int node_test(uint32_t code, double v, double threshold) {
    switch ((code >> MODE_SHIFT) & 7u) {
    case PN_TREE_NODE_LEQ: return v <= threshold;
    case PN_TREE_NODE_LT: return v < threshold;
    case PN_TREE_NODE_GTE: return v >= threshold;
    case PN_TREE_NODE_GT: return v > threshold;
    case PN_TREE_NODE_EQ: return v == threshold;
    case PN_TREE_NODE_NEQ: return v != threshold;
    default: return 1; /* a leaf or a sink: either child is its sink */
    }
}

/* One step of record r for value v: the next record. */
#define STEP(COND)                                                                          \
    (int32_t)((r->code & CHILD_MASK) +                                                      \
              (uint32_t)!((COND) | ((r->code >> 31) & (uint32_t)(v != v))))

/* `lanes` rows (the first at x, `stride` elements apart) walk `depth` steps from `root`;
 * at[j] receives row j's final record. */
#define DEFINE_WALK_ROWS(NAME, T, COND)                                                     \
    static void NAME(const tree_record* rec, int32_t root, int32_t depth, const void* xv,  \
                     int64_t stride, int lanes, int32_t* at) {                              \
        const T* x = (const T*)xv;                                                          \
        int32_t i[LANES];                                                                   \
        for (int j = 0; j < LANES; ++j) i[j] = root;                                        \
        if (lanes == LANES) {                                                               \
            for (int32_t step = 0; step < depth; ++step) {                                  \
                for (int j = 0; j < LANES; ++j) {                                           \
                    const tree_record* r = &rec[i[j]];                                      \
                    double v = (double)x[j * stride + r->feature];                          \
                    i[j] = STEP(COND);                                                      \
                }                                                                           \
            }                                                                               \
        } else {                                                                            \
            for (int32_t step = 0; step < depth; ++step) {                                  \
                for (int j = 0; j < lanes; ++j) {                                           \
                    const tree_record* r = &rec[i[j]];                                      \
                    double v = (double)x[j * stride + r->feature];                          \
                    i[j] = STEP(COND);                                                      \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (int j = 0; j < lanes; ++j) at[j] = i[j];                                       \
    }

/* One row x walks `lanes` trees (roots[0..lanes)) at once for `depth` steps (the deepest). */
#define DEFINE_WALK_TREES(NAME, T, COND)                                                    \
    static void NAME(const tree_record* rec, const int32_t* roots, int32_t depth,           \
                     const void* xv, int lanes, int32_t* at) {                              \
        const T* x = (const T*)xv;                                                          \
        int32_t i[LANES];                                                                   \
        for (int j = 0; j < LANES; ++j) i[j] = roots[j < lanes ? j : 0];                    \
        for (int32_t step = 0; step < depth; ++step) {                                      \
            for (int j = 0; j < LANES; ++j) {                                               \
                const tree_record* r = &rec[i[j]];                                          \
                double v = (double)x[r->feature];                                           \
                i[j] = STEP(COND);                                                          \
            }                                                                               \
        }                                                                                   \
        for (int j = 0; j < lanes; ++j) at[j] = i[j];                                       \
    }

DEFINE_WALK_ROWS(rows_leq_f32, float, v <= r->threshold)
DEFINE_WALK_ROWS(rows_lt_f32, float, v < r->threshold)
DEFINE_WALK_ROWS(rows_any_f32, float, node_test(r->code, v, r->threshold))
DEFINE_WALK_ROWS(rows_leq_f64, double, v <= r->threshold)
DEFINE_WALK_ROWS(rows_lt_f64, double, v < r->threshold)
DEFINE_WALK_ROWS(rows_any_f64, double, node_test(r->code, v, r->threshold))
DEFINE_WALK_TREES(trees_leq_f32, float, v <= r->threshold)
DEFINE_WALK_TREES(trees_lt_f32, float, v < r->threshold)
DEFINE_WALK_TREES(trees_any_f32, float, node_test(r->code, v, r->threshold))
DEFINE_WALK_TREES(trees_leq_f64, double, v <= r->threshold)
DEFINE_WALK_TREES(trees_lt_f64, double, v < r->threshold)
DEFINE_WALK_TREES(trees_any_f64, double, node_test(r->code, v, r->threshold))

typedef void (*rows_fn)(const tree_record*, int32_t, int32_t, const void*, int64_t, int, int32_t*);
typedef void (*trees_fn)(const tree_record*, const int32_t*, int32_t, const void*, int, int32_t*);

/* The walks for a forest: by x's type and the branches' one mode. */
typedef struct tree_walks {
    rows_fn rows;
    trees_fn trees;
} tree_walks;

#define WALKS(M, T) {rows_##M##_##T, trees_##M##_##T}

static tree_walks walks_for(int uniform_mode, int is_f32) {
    static const tree_walks f32[3] = {WALKS(any, f32), WALKS(leq, f32), WALKS(lt, f32)};
    static const tree_walks f64[3] = {WALKS(any, f64), WALKS(leq, f64), WALKS(lt, f64)};
    int which = uniform_mode == PN_TREE_NODE_LEQ ? 1 : (uniform_mode == PN_TREE_NODE_LT ? 2 : 0);
    return is_f32 ? f32[which] : f64[which];
}

/* ---- Rows ----------------------------------------------------------------------------- */

/* A leaf's weights into one row's accumulators a (seen: MIN/MAX's first-weight flags). */
static void add_leaf(const tree_pack* p, int32_t leaf, double* a, unsigned char* seen,
                     pn_tree_aggregate agg) {
    int32_t first = p->leaf_first[leaf], end = first + p->leaf_count[leaf];
    for (int32_t w = first; w < end; ++w) {
        int32_t target = p->leaf_targets[w];
        double value = p->leaf_weights[w];
        if (seen == NULL) {
            a[target] += value;
        } else if (!seen[target] ||
                   (agg == PN_TREE_AGGREGATE_MIN ? value < a[target] : value > a[target])) {
            a[target] = value;
            seen[target] = 1;
        }
    }
}

typedef struct tree_run {
    const tree_state* s;
    const void* x;
    void* scores;
    int64_t* labels;
    char* workspace;
} tree_run;

/* Rows [row0, row0 + rows) (rows <= BLOCK) with accumulators acc and flags seen. */
static void run_block(const tree_run* run, int64_t row0, int64_t rows, double* acc,
                      unsigned char* seen) {
    const tree_state* s = run->s;
    const tree_pack* p = s->pack;
    const int64_t k = p->targets, f = s->features;
    const pn_tree_aggregate agg = s->desc.aggregate;
    const int min_max = agg == PN_TREE_AGGREGATE_MIN || agg == PN_TREE_AGGREGATE_MAX;
    const int direct = p->single && !min_max;
    const tree_walks walk = walks_for(p->uniform_mode, s->is_f32);
    const size_t elem = s->is_f32 ? sizeof(float) : sizeof(double);
    const char* x = (const char*)run->x + (size_t)(row0 * f) * elem;
    unsigned char* seen_or_null = min_max ? seen : NULL;
    memset(acc, 0, (size_t)(rows * k) * sizeof(double));
    if (min_max) {
        memset(seen, 0, (size_t)(rows * k));
    }
    int32_t at[LANES];
    if (rows < LANES) { /* few rows: each walks LANES trees at once */
        for (int64_t r = 0; r < rows; ++r) {
            double* a = acc + r * k;
            for (int64_t t = 0; t < p->trees; t += LANES) {
                int lanes = p->trees - t < LANES ? (int)(p->trees - t) : LANES;
                int32_t depth = 0;
                for (int j = 0; j < lanes; ++j) {
                    depth = p->depths[t + j] > depth ? p->depths[t + j] : depth;
                }
                walk.trees(p->records_at, p->roots + t, depth, x + (size_t)(r * f) * elem, lanes, at);
                for (int j = 0; j < lanes; ++j) {
                    if (direct) {
                        a[0] += p->records_at[at[j]].threshold;
                    } else {
                        add_leaf(p, p->leaf_of[at[j]], a, seen_or_null != NULL ? seen + r * k : NULL, agg);
                    }
                }
            }
        }
    } else {
        for (int64_t t = 0; t < p->trees; ++t) {
            for (int64_t r0 = 0; r0 < rows; r0 += LANES) {
                int lanes = rows - r0 < LANES ? (int)(rows - r0) : LANES;
                walk.rows(p->records_at, p->roots[t], p->depths[t], x + (size_t)(r0 * f) * elem,
                          f, lanes, at);
                for (int j = 0; j < lanes; ++j) {
                    if (direct) {
                        acc[r0 + j] += p->records_at[at[j]].threshold;
                    } else {
                        add_leaf(p, p->leaf_of[at[j]], acc + (r0 + j) * k,
                                 seen_or_null != NULL ? seen + (r0 + j) * k : NULL, agg);
                    }
                }
            }
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
        double* a = acc + r * k;
        const int64_t best = pn_tree_finish_row(agg, p->trees, p->base, s->desc.post_transform, a, k);
        if (run->labels != NULL) {
            run->labels[row0 + r] = best;
        }
        if (s->is_f32) {
            float* y = (float*)run->scores + (row0 + r) * k;
            for (int64_t j = 0; j < k; ++j) y[j] = (float)a[j];
        } else {
            memcpy((double*)run->scores + (row0 + r) * k, a, (size_t)k * sizeof(double));
        }
    }
}

/* Chunks [begin, end) of the batch: chunk c covers rows [c * N / chunks, (c + 1) * N / chunks)
 * with its own slice of the workspace. */
static void run_chunks(void* ctx, int64_t begin, int64_t end) {
    const tree_run* run = (const tree_run*)ctx;
    const tree_state* s = run->s;
    const int64_t k = s->pack->targets;
    for (int64_t c = begin; c < end; ++c) {
        char* ws = run->workspace + (size_t)c * s->chunk_bytes;
        double* acc = (double*)ws;
        unsigned char* seen = (unsigned char*)(acc + BLOCK * k);
        int64_t first = c * s->rows / s->chunks, last = (c + 1) * s->rows / s->chunks;
        for (int64_t r = first; r < last; r += BLOCK) {
            run_block(run, r, last - r < BLOCK ? last - r : BLOCK, acc, seen);
        }
    }
}

static pn_status tree_execute(void* vs, const pn_execute_args* args, pn_string_out* message_out) {
    const tree_state* s = (const tree_state*)vs;
    pn_status st = pn_check_execute_args(args, NUM_INPUTS, s->inputs, s->num_outputs, s->outputs,
                                         "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    if (s->rows == 0) {
        return PN_OK;
    }
    if (args->workspace == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: " TREES " needs a "
                       "workspace");
    }
    char* ws = (char*)(((uintptr_t)args->workspace + 63u) & ~(uintptr_t)63u);
    tree_run run = {s, args->inputs[X].data, args->outputs[0].data,
                    s->num_outputs > 1 ? (int64_t*)args->outputs[1].data : NULL, ws};
    if (s->chunks > 1) {
        accel_parallel_for(s->env.threads, s->chunks, run_chunks, &run);
    } else {
        run_chunks(&run, 0, 1);
    }
    return PN_OK;
}

/* ---- The workload ---------------------------------------------------------------------- */

static void copy_info(pn_tensor_info* dst, const pn_tensor_info* src) {
    memset(dst, 0, sizeof(*dst));
    dst->struct_size = (uint32_t)sizeof(pn_tensor_info);
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof(dst->dims));
}

/* Rows per chunk below which a batch is not split over threads, and the tree steps (rows x
 * trees x depth) a split needs to pay for waking the pool. */
#define CHUNK_ROWS 32
#define SPLIT_STEPS 200000

static pn_status tree_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                            pn_workload** workload_out, pn_string_out* message_out) {
    const int64_t nodes = layer->inputs[MODES].dims[0], trees = layer->inputs[OFFSETS].dims[0] - 1;
    const int64_t weights = layer->inputs[TARGETS].dims[0], targets = layer->inputs[BASE].dims[0];
    tree_state* s = (tree_state*)calloc(1, sizeof(*s));
    int64_t* scratch = (int64_t*)malloc((size_t)(nodes > 0 ? nodes : 1) * sizeof(int64_t));
    if (s == NULL || scratch == NULL) {
        free(s);
        free(scratch);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: " TREES ": out of memory");
    }
    int64_t records = packed_records(layer, scratch);
    free(scratch);
    accel_pack_key key;
    accel_pack_key_init(&key, ACCEL_PACK_TREES, ACCEL_ISA_PORTABLE, layer->constant_data[MODES],
                        layer->constant_data[TRUE_IDS]);
    key.params[0] = nodes;
    key.params[1] = trees;
    key.params[2] = weights;
    key.params[3] = targets;
    key.params[4] = records;
    size_t bytes = pack_bytes(trees, records, nodes, weights, targets);
    int fresh = 0;
    char* block = (char*)accel_packs_get(packs, &key, (bytes + sizeof(float) - 1) / sizeof(float), &fresh);
    int64_t* queue = fresh ? (int64_t*)malloc((size_t)(2 * records + 2) * sizeof(int64_t)) : NULL;
    if (block == NULL || (fresh && queue == NULL)) {
        free(s);
        free(queue);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing a " TREES
                       " of %lld nodes", (long long)nodes);
    }
    if (fresh) {
        pack_into(layer, records, block, queue);
        free(queue);
    }
    s->env = *env;
    s->pack = (const tree_pack*)block;
    memset(&s->desc, 0, sizeof(s->desc));
    memcpy(&s->desc, layer->descriptor, sizeof(s->desc)); /* the validator checked its size */
    for (uint32_t i = 0; i < NUM_INPUTS; ++i) copy_info(&s->inputs[i], &layer->inputs[i]);
    s->num_outputs = layer->num_outputs;
    for (uint32_t i = 0; i < layer->num_outputs; ++i) copy_info(&s->outputs[i], &layer->outputs[i]);
    s->rows = layer->inputs[X].dims[0];
    s->features = layer->inputs[X].dims[1];
    s->is_f32 = layer->inputs[X].dtype == PN_DTYPE_FLOAT32;
    int64_t steps = 0;
    for (int64_t t = 0; t < trees; ++t) steps += s->pack->depths[t] + 1;
    int threads = accel_threads_count(env->threads);
    s->chunks = 1;
    if (threads > 1 && s->rows >= 2 * CHUNK_ROWS && s->rows * steps >= SPLIT_STEPS) {
        int64_t most = s->rows / CHUNK_ROWS, want = 4 * (int64_t)threads;
        s->chunks = want < most ? want : most;
    }
    s->chunk_bytes = align8((size_t)(BLOCK * targets) * (sizeof(double) + 1)) + 64;
    pn_workload* wl = pn_workload_new(s, tree_execute, free, (size_t)s->chunks * s->chunk_bytes + 64);
    if (wl == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_tree_ensemble_create(void* context, const pn_layer* layer,
                                     pn_workload** workload_out, pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, tree_build, workload_out,
                                message_out);
}
