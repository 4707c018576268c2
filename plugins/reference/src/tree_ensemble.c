/* TREE_ENSEMBLE (ONNX-ML TreeEnsembleRegressor, TreeEnsembleClassifier, TreeEnsemble): every
 * row walks every tree; leaf weights aggregated in double, base values, post transform.
 *
 * create_workload lays the constant arrays out once (the shared validation checked every index):
 * one 24-byte record per node, a tree's nodes consecutive (children after their parent), a leaf
 * pointing at itself, and per tree its depth (the longest path from its root). execute() takes
 * the rows in blocks of BLOCK and, per block, each tree in turn (its nodes stay in cache while
 * the block walks it), LANES rows at once in lockstep for the tree's depth in steps: a step is a
 * load, a comparison and a select with no branch (a row at its leaf stays there), so the rows'
 * chains of loads overlap and no step mispredicts. When every branch has one mode
 * (scikit-learn and LightGBM: LEQ, XGBoost: LT) the step tests that comparison; mixed modes go
 * through a switch. A forest with one target and one weight per leaf (regressors, boosted
 * binary classifiers) adds each leaf's value directly. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TREES "TreeEnsemble"
#define BLOCK 64
#define LANES 8

enum { X, OFFSETS, MODES, FEATURES, THRESHOLDS, TRUE_IDS, FALSE_IDS, TARGETS, WEIGHTS, BASE };

typedef struct tree_node {
    double threshold;
    int32_t feature;
    int32_t yes;           /* the child when the test holds (a leaf: itself) */
    int32_t no;            /* the other child (a leaf: itself) */
    uint8_t mode;          /* pn_tree_node_mode */
    uint8_t missing_true;  /* a NaN feature takes `yes` */
} tree_node;

typedef struct forest {
    pn_tree_ensemble_desc desc;
    int64_t trees, targets, features;
    int uniform_mode;      /* the one mode of every branch, or 0 when they differ */
    int single;            /* one target, and every leaf has exactly one weight */
    int32_t* roots;        /* [trees] */
    int32_t* depths;       /* [trees]: branch nodes on the longest path */
    tree_node* nodes;      /* [M] */
    int32_t* leaf_first;   /* [M]: a leaf's first weight */
    int32_t* leaf_count;   /* [M]: its number of weights */
    double* leaf_value;    /* [M]: with `single`, a leaf's weight */
    int32_t* leaf_targets; /* [W] */
    double* leaf_weights;  /* [W] */
    double* base;          /* [targets] */
} forest;

static int test(int mode, double v, double threshold) {
    switch (mode) {
    case PN_TREE_NODE_LEQ: return v <= threshold;
    case PN_TREE_NODE_LT: return v < threshold;
    case PN_TREE_NODE_GTE: return v >= threshold;
    case PN_TREE_NODE_GT: return v > threshold;
    case PN_TREE_NODE_EQ: return v == threshold;
    case PN_TREE_NODE_NEQ: return v != threshold;
    default: return 1; /* LEAF: its children are itself */
    }
}

/* `lanes` rows (x: the first, `stride` elements apart) walk `depth` steps from `root`; at[j]
 * receives row j's leaf. */
#define DEFINE_WALK(NAME, T, COND)                                                          \
    static void NAME(const tree_node* nodes, int32_t root, int32_t depth, const T* x,       \
                     int64_t stride, int lanes, int32_t* at) {                              \
        int32_t i[LANES];                                                                   \
        for (int j = 0; j < LANES; ++j) {                                                   \
            i[j] = root;                                                                    \
        }                                                                                   \
        if (lanes == LANES) {                                                               \
            for (int32_t step = 0; step < depth; ++step) {                                  \
                for (int j = 0; j < LANES; ++j) {                                           \
                    const tree_node* n = &nodes[i[j]];                                      \
                    double v = (double)x[j * stride + n->feature];                          \
                    int go = (COND) | (n->missing_true & (v != v));                         \
                    i[j] = go ? n->yes : n->no;                                             \
                }                                                                           \
            }                                                                               \
        } else {                                                                            \
            for (int32_t step = 0; step < depth; ++step) {                                  \
                for (int j = 0; j < lanes; ++j) {                                           \
                    const tree_node* n = &nodes[i[j]];                                      \
                    double v = (double)x[j * stride + n->feature];                          \
                    int go = (COND) | (n->missing_true & (v != v));                         \
                    i[j] = go ? n->yes : n->no;                                             \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (int j = 0; j < lanes; ++j) {                                                   \
            at[j] = i[j];                                                                   \
        }                                                                                   \
    }

/* One row x walks `lanes` trees (roots[0..lanes)) at once for `depth` steps (the deepest of
 * them): what a block of fewer rows than LANES runs, so a single row's walks overlap too. */
#define DEFINE_WALK_TREES(NAME, T, COND)                                                    \
    static void NAME(const tree_node* nodes, const int32_t* roots, int32_t depth,           \
                     const T* x, int lanes, int32_t* at) {                                  \
        int32_t i[LANES];                                                                   \
        for (int j = 0; j < LANES; ++j) {                                                   \
            i[j] = roots[j < lanes ? j : 0];                                                \
        }                                                                                   \
        for (int32_t step = 0; step < depth; ++step) {                                      \
            for (int j = 0; j < LANES; ++j) {                                               \
                const tree_node* n = &nodes[i[j]];                                          \
                double v = (double)x[n->feature];                                           \
                int go = (COND) | (n->missing_true & (v != v));                             \
                i[j] = go ? n->yes : n->no;                                                 \
            }                                                                               \
        }                                                                                   \
        for (int j = 0; j < lanes; ++j) {                                                   \
            at[j] = i[j];                                                                   \
        }                                                                                   \
    }

DEFINE_WALK_TREES(trees_leq_f32, float, v <= n->threshold)
DEFINE_WALK_TREES(trees_lt_f32, float, v < n->threshold)
DEFINE_WALK_TREES(trees_any_f32, float, test(n->mode, v, n->threshold))
DEFINE_WALK_TREES(trees_leq_f64, double, v <= n->threshold)
DEFINE_WALK_TREES(trees_lt_f64, double, v < n->threshold)
DEFINE_WALK_TREES(trees_any_f64, double, test(n->mode, v, n->threshold))

DEFINE_WALK(walk_leq_f32, float, v <= n->threshold)
DEFINE_WALK(walk_lt_f32, float, v < n->threshold)
DEFINE_WALK(walk_any_f32, float, test(n->mode, v, n->threshold))
DEFINE_WALK(walk_leq_f64, double, v <= n->threshold)
DEFINE_WALK(walk_lt_f64, double, v < n->threshold)
DEFINE_WALK(walk_any_f64, double, test(n->mode, v, n->threshold))

typedef void (*walk_f32)(const tree_node*, int32_t, int32_t, const float*, int64_t, int, int32_t*);
typedef void (*walk_f64)(const tree_node*, int32_t, int32_t, const double*, int64_t, int, int32_t*);
typedef void (*trees_f32)(const tree_node*, const int32_t*, int32_t, const float*, int, int32_t*);
typedef void (*trees_f64)(const tree_node*, const int32_t*, int32_t, const double*, int, int32_t*);

/* Row r's leaf weights into its accumulators a (K targets), by the aggregate. */
static void gather_leaf(const forest* f, int32_t leaf, double* a, unsigned char* seen,
                        pn_tree_aggregate agg) {
    int32_t first = f->leaf_first[leaf], end = first + f->leaf_count[leaf];
    for (int32_t w = first; w < end; ++w) {
        int32_t target = f->leaf_targets[w];
        double value = f->leaf_weights[w];
        if (seen == NULL) {
            a[target] += value;
        } else if (!seen[target] ||
                   (agg == PN_TREE_AGGREGATE_MIN ? value < a[target] : value > a[target])) {
            a[target] = value;
            seen[target] = 1;
        }
    }
}

static pn_status tree_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                             pn_string_out* message_out) {
    const forest* f = (const forest*)op->priv;
    const int64_t n = op->inputs[X].dims[0], k = f->targets, features = f->features;
    const int is_f32 = op->inputs[X].dtype == PN_DTYPE_FLOAT32;
    const pn_tree_aggregate agg = f->desc.aggregate;
    const int min_max = agg == PN_TREE_AGGREGATE_MIN || agg == PN_TREE_AGGREGATE_MAX;
    const walk_f32 walk32 = f->uniform_mode == PN_TREE_NODE_LEQ  ? walk_leq_f32
                            : f->uniform_mode == PN_TREE_NODE_LT ? walk_lt_f32
                                                                 : walk_any_f32;
    const walk_f64 walk64 = f->uniform_mode == PN_TREE_NODE_LEQ  ? walk_leq_f64
                            : f->uniform_mode == PN_TREE_NODE_LT ? walk_lt_f64
                                                                 : walk_any_f64;
    const trees_f32 trees32 = f->uniform_mode == PN_TREE_NODE_LEQ  ? trees_leq_f32
                              : f->uniform_mode == PN_TREE_NODE_LT ? trees_lt_f32
                                                                   : trees_any_f32;
    const trees_f64 trees64 = f->uniform_mode == PN_TREE_NODE_LEQ  ? trees_leq_f64
                              : f->uniform_mode == PN_TREE_NODE_LT ? trees_lt_f64
                                                                   : trees_any_f64;
    double* acc = (double*)malloc((size_t)(BLOCK * k) * sizeof(double));
    unsigned char* seen = min_max ? (unsigned char*)malloc((size_t)(BLOCK * k)) : NULL;
    if (acc == NULL || (min_max && seen == NULL)) {
        free(acc);
        free(seen);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: " TREES ": out of memory");
    }
    for (int64_t row0 = 0; row0 < n; row0 += BLOCK) {
        int64_t rows = n - row0 < BLOCK ? n - row0 : BLOCK;
        memset(acc, 0, (size_t)(rows * k) * sizeof(double));
        if (seen != NULL) {
            memset(seen, 0, (size_t)(rows * k));
        }
        if (rows < LANES) { /* few rows: each row walks LANES trees at once */
            for (int64_t r = 0; r < rows; ++r) {
                double* a = acc + r * k;
                unsigned char* seen_r = seen != NULL ? seen + r * k : NULL;
                for (int64_t t = 0; t < f->trees; t += LANES) {
                    int lanes = f->trees - t < LANES ? (int)(f->trees - t) : LANES;
                    int32_t depth = 0, leaf[LANES];
                    for (int j = 0; j < lanes; ++j) {
                        depth = f->depths[t + j] > depth ? f->depths[t + j] : depth;
                    }
                    if (is_f32) {
                        trees32(f->nodes, f->roots + t, depth,
                                (const float*)in[X] + (row0 + r) * features, lanes, leaf);
                    } else {
                        trees64(f->nodes, f->roots + t, depth,
                                (const double*)in[X] + (row0 + r) * features, lanes, leaf);
                    }
                    for (int j = 0; j < lanes; ++j) {
                        if (f->single && !min_max) {
                            a[0] += f->leaf_value[leaf[j]];
                        } else {
                            gather_leaf(f, leaf[j], a, seen_r, agg);
                        }
                    }
                }
            }
        }
        for (int64_t t = 0; t < f->trees && rows >= LANES; ++t) {
            for (int64_t r0 = 0; r0 < rows; r0 += LANES) {
                int lanes = rows - r0 < LANES ? (int)(rows - r0) : LANES;
                int32_t leaf[LANES];
                if (is_f32) {
                    walk32(f->nodes, f->roots[t], f->depths[t],
                           (const float*)in[X] + (row0 + r0) * features, features, lanes, leaf);
                } else {
                    walk64(f->nodes, f->roots[t], f->depths[t],
                           (const double*)in[X] + (row0 + r0) * features, features, lanes, leaf);
                }
                for (int j = 0; j < lanes; ++j) {
                    if (f->single && !min_max) {
                        acc[r0 + j] += f->leaf_value[leaf[j]];
                    } else {
                        gather_leaf(f, leaf[j], acc + (r0 + j) * k,
                                    seen != NULL ? seen + (r0 + j) * k : NULL, agg);
                    }
                }
            }
        }
        for (int64_t r = 0; r < rows; ++r) {
            double* a = acc + r * k;
            const int64_t best = pn_tree_finish_row(agg, f->trees, f->base, f->desc.post_transform, a, k);
            if (f->desc.op == PN_TREE_ENSEMBLE_CLASSIFIER) {
                ((int64_t*)out[1])[row0 + r] = best;
            }
            for (int64_t j = 0; j < k; ++j) {
                if (is_f32) {
                    ((float*)out[0])[(row0 + r) * k + j] = (float)a[j];
                } else {
                    ((double*)out[0])[(row0 + r) * k + j] = a[j];
                }
            }
        }
    }
    free(acc);
    free(seen);
    return PN_OK;
}

/* One allocation holding the forest and its arrays (freed with free() by the workload). */
static forest* lay_out(const pn_layer* layer) {
    const pn_tree_ensemble_desc* d = (const pn_tree_ensemble_desc*)layer->descriptor;
    const void* const* c = layer->constant_data;
    int64_t trees = layer->inputs[OFFSETS].dims[0] - 1, nodes = layer->inputs[MODES].dims[0];
    int64_t weights = layer->inputs[TARGETS].dims[0], targets = layer->inputs[BASE].dims[0];
    size_t size = sizeof(forest) + (size_t)nodes * (sizeof(tree_node) + sizeof(double)) +
                  (size_t)weights * sizeof(double) + (size_t)targets * sizeof(double) +
                  ((size_t)trees * 2 + (size_t)nodes * 2 + (size_t)weights) * sizeof(int32_t) + 64;
    forest* f = (forest*)calloc(1, size);
    if (f == NULL) {
        return NULL;
    }
    char* p = (char*)(f + 1);
    f->nodes = (tree_node*)p;
    p += (size_t)nodes * sizeof(tree_node);
    f->leaf_value = (double*)p;
    p += (size_t)nodes * sizeof(double);
    f->leaf_weights = (double*)p;
    p += (size_t)weights * sizeof(double);
    f->base = (double*)p;
    p += (size_t)targets * sizeof(double);
    f->roots = (int32_t*)p;
    p += (size_t)trees * sizeof(int32_t);
    f->depths = (int32_t*)p;
    p += (size_t)trees * sizeof(int32_t);
    f->leaf_first = (int32_t*)p;
    p += (size_t)nodes * sizeof(int32_t);
    f->leaf_count = (int32_t*)p;
    p += (size_t)nodes * sizeof(int32_t);
    f->leaf_targets = (int32_t*)p;
    f->desc = *d;
    f->trees = trees;
    f->targets = targets;
    f->features = layer->inputs[X].dims[1];
    const int64_t* offsets = (const int64_t*)c[OFFSETS];
    const uint8_t* modes = (const uint8_t*)c[MODES];
    const int64_t* feature = (const int64_t*)c[FEATURES];
    const double* threshold = (const double*)c[THRESHOLDS];
    const int64_t* yes = (const int64_t*)c[TRUE_IDS];
    const int64_t* no = (const int64_t*)c[FALSE_IDS];
    const int64_t* leaf_targets = (const int64_t*)c[TARGETS];
    const double* leaf_weights = (const double*)c[WEIGHTS];
    int uniform = -1;
    f->single = targets == 1;
    for (int64_t i = 0; i < nodes; ++i) {
        tree_node* node = &f->nodes[i];
        node->mode = (uint8_t)(modes[i] & ~PN_TREE_MISSING_TRUE);
        if (node->mode == PN_TREE_NODE_LEAF) {
            node->yes = node->no = (int32_t)i;
            f->leaf_first[i] = (int32_t)yes[i];
            f->leaf_count[i] = (int32_t)no[i];
            f->single = f->single && no[i] == 1;
            f->leaf_value[i] = no[i] == 1 ? leaf_weights[yes[i]] : 0.0;
            continue;
        }
        node->missing_true = (modes[i] & PN_TREE_MISSING_TRUE) != 0;
        node->feature = (int32_t)feature[i];
        node->threshold = threshold[i];
        node->yes = (int32_t)yes[i];
        node->no = (int32_t)no[i];
        uniform = uniform == -1 ? node->mode : (uniform == node->mode ? uniform : 0);
    }
    f->uniform_mode = uniform < 0 ? 0 : uniform;
    /* depths: children lie after their node, so one pass from each tree's last node back */
    int32_t* depth = (int32_t*)malloc((size_t)(nodes > 0 ? nodes : 1) * sizeof(int32_t));
    if (depth == NULL) {
        free(f);
        return NULL;
    }
    for (int64_t t = 0; t < trees; ++t) {
        f->roots[t] = (int32_t)offsets[t];
        for (int64_t i = offsets[t + 1] - 1; i >= offsets[t]; --i) {
            const tree_node* node = &f->nodes[i];
            if (node->mode == PN_TREE_NODE_LEAF) {
                depth[i] = 0;
            } else {
                int32_t a = depth[node->yes], b = depth[node->no];
                depth[i] = 1 + (a > b ? a : b);
            }
        }
        f->depths[t] = depth[offsets[t]];
    }
    free(depth);
    for (int64_t w = 0; w < weights; ++w) {
        f->leaf_targets[w] = (int32_t)leaf_targets[w];
        f->leaf_weights[w] = leaf_weights[w];
    }
    memcpy(f->base, c[BASE], (size_t)targets * sizeof(double));
    return f;
}

pn_status cpuref_tree_ensemble_create(void* context, const pn_layer* layer,
                                      pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    if (layer->inputs[MODES].dims[0] > INT32_MAX || layer->inputs[TARGETS].dims[0] > INT32_MAX) {
        return pn_fail(message_out, PN_ERR_UNSUPPORTED, "CpuRef: " TREES ": at most 2^31 - 1 "
                       "nodes and weights, got %lld and %lld",
                       (long long)layer->inputs[MODES].dims[0],
                       (long long)layer->inputs[TARGETS].dims[0]);
    }
    forest* f = lay_out(layer);
    if (f == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory laying out a "
                       TREES " of %lld nodes", (long long)layer->inputs[MODES].dims[0]);
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_tree_ensemble_desc), NULL, tree_kernel, f,
                                     workload_out, message_out);
}
