/* TREE_ENSEMBLE (ONNX-ML TreeEnsembleRegressor, TreeEnsembleClassifier, TreeEnsemble): every
 * row walks every tree; leaf weights aggregated in double, base values, post transform.
 *
 * create_workload lays the constant arrays out once (the shared validation checked every index):
 * one 24-byte record per node, a tree's nodes consecutive (children after their parent, so a walk
 * moves forward through memory), leaf weights in their own arrays. execute() takes the rows in
 * blocks of BLOCK and, per block, each tree in turn, so a tree's nodes stay in cache while the
 * block's rows walk it. When every branch has one mode (scikit-learn and LightGBM: LEQ, XGBoost:
 * LT) the walk tests that one comparison. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TREES "TreeEnsemble"
#define BLOCK 64

enum { X, OFFSETS, MODES, FEATURES, THRESHOLDS, TRUE_IDS, FALSE_IDS, TARGETS, WEIGHTS, BASE };

typedef struct tree_node {
    double threshold;
    int32_t feature;
    int32_t yes;           /* branch: the child when the test holds; leaf: first weight */
    int32_t no;            /* branch: the other child; leaf: number of weights */
    uint8_t mode;          /* pn_tree_node_mode */
    uint8_t missing_true;  /* a NaN feature takes `yes` */
} tree_node;

typedef struct forest {
    pn_tree_ensemble_desc desc;
    int64_t trees, targets, features;
    int uniform_mode;      /* the one mode of every branch, or 0 when they differ */
    int32_t* roots;        /* [trees] */
    tree_node* nodes;      /* [M] */
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
    default: return v != threshold; /* NEQ */
    }
}

/* The leaf row `x` reaches from node i; MODE is the uniform mode (0: read each node's). */
#define DEFINE_WALK(NAME, T, COND)                                                         \
    static const tree_node* NAME(const tree_node* nodes, int32_t i, const T* x) {          \
        for (;;) {                                                                         \
            const tree_node* n = &nodes[i];                                                \
            if (n->mode == PN_TREE_NODE_LEAF) {                                            \
                return n;                                                                  \
            }                                                                              \
            double v = (double)x[n->feature];                                              \
            int go = (COND) || (n->missing_true && v != v);                                \
            i = go ? n->yes : n->no;                                                       \
        }                                                                                  \
    }

DEFINE_WALK(walk_leq_f32, float, v <= n->threshold)
DEFINE_WALK(walk_lt_f32, float, v < n->threshold)
DEFINE_WALK(walk_any_f32, float, test(n->mode, v, n->threshold))
DEFINE_WALK(walk_leq_f64, double, v <= n->threshold)
DEFINE_WALK(walk_lt_f64, double, v < n->threshold)
DEFINE_WALK(walk_any_f64, double, test(n->mode, v, n->threshold))

/* sqrt(2) * erfinv(2p - 1): Winitzki's approximation (a = 0.147) refined by Newton steps on
 * erf, in double. */
static double probit(double p) {
    double y = 2.0 * p - 1.0;
    if (!(y > -1.0 && y < 1.0)) {
        return y == -1.0 ? -INFINITY : (y == 1.0 ? INFINITY : NAN);
    }
    const double a = 0.147, two_over_pi_a = 2.0 / (3.14159265358979323846 * a);
    double l = log((1.0 - y) * (1.0 + y));
    double u = two_over_pi_a + 0.5 * l;
    double z = sqrt(sqrt(u * u - l / a) - u);
    z = y < 0.0 ? -z : z;
    for (int k = 0; k < 8; ++k) {
        double step = (erf(z) - y) / (1.1283791670955126 * exp(-z * z));
        z -= step;
        if (fabs(step) <= 1e-15 * (1.0 + fabs(z))) {
            break;
        }
    }
    return 1.4142135623730951 * z;
}

static void post_transform(pn_tree_post_transform post, double* s, int64_t k) {
    switch (post) {
    case PN_TREE_POST_LOGISTIC:
        for (int64_t j = 0; j < k; ++j) {
            s[j] = 1.0 / (1.0 + exp(-s[j]));
        }
        break;
    case PN_TREE_POST_SOFTMAX:
    case PN_TREE_POST_SOFTMAX_ZERO: {
        int zero = post == PN_TREE_POST_SOFTMAX_ZERO;
        double top = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
            if (!(zero && fabs(s[j]) <= 1e-7) && s[j] > top) {
                top = s[j];
            }
        }
        for (int64_t j = 0; j < k; ++j) {
            if (zero && fabs(s[j]) <= 1e-7) {
                s[j] = 0.0;
            } else {
                s[j] = exp(s[j] - top);
                sum += s[j];
            }
        }
        for (int64_t j = 0; j < k; ++j) {
            s[j] = sum > 0.0 ? s[j] / sum : s[j];
        }
        break;
    }
    case PN_TREE_POST_PROBIT:
        for (int64_t j = 0; j < k; ++j) {
            s[j] = probit(s[j]);
        }
        break;
    default: /* NONE */
        break;
    }
}

static pn_status tree_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                             pn_string_out* message_out) {
    const forest* f = (const forest*)op->priv;
    const int64_t n = op->inputs[X].dims[0], k = f->targets, features = f->features;
    const int is_f32 = op->inputs[X].dtype == PN_DTYPE_FLOAT32;
    const pn_tree_aggregate agg = f->desc.aggregate;
    const int min_max = agg == PN_TREE_AGGREGATE_MIN || agg == PN_TREE_AGGREGATE_MAX;
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
        for (int64_t t = 0; t < f->trees; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
                const tree_node* leaf;
                if (is_f32) {
                    const float* x = (const float*)in[X] + (row0 + r) * features;
                    leaf = f->uniform_mode == PN_TREE_NODE_LEQ ? walk_leq_f32(f->nodes, f->roots[t], x)
                           : f->uniform_mode == PN_TREE_NODE_LT ? walk_lt_f32(f->nodes, f->roots[t], x)
                                                                : walk_any_f32(f->nodes, f->roots[t], x);
                } else {
                    const double* x = (const double*)in[X] + (row0 + r) * features;
                    leaf = f->uniform_mode == PN_TREE_NODE_LEQ ? walk_leq_f64(f->nodes, f->roots[t], x)
                           : f->uniform_mode == PN_TREE_NODE_LT ? walk_lt_f64(f->nodes, f->roots[t], x)
                                                                : walk_any_f64(f->nodes, f->roots[t], x);
                }
                double* a = acc + r * k;
                for (int32_t w = leaf->yes; w < leaf->yes + leaf->no; ++w) {
                    int32_t j = f->leaf_targets[w];
                    double value = f->leaf_weights[w];
                    if (!min_max) {
                        a[j] += value;
                    } else if (!seen[r * k + j] ||
                               (agg == PN_TREE_AGGREGATE_MIN ? value < a[j] : value > a[j])) {
                        a[j] = value;
                        seen[r * k + j] = 1;
                    }
                }
            }
        }
        for (int64_t r = 0; r < rows; ++r) {
            double* a = acc + r * k;
            int64_t best = 0;
            for (int64_t j = 0; j < k; ++j) {
                if (agg == PN_TREE_AGGREGATE_AVERAGE) {
                    a[j] /= (double)f->trees;
                }
                a[j] += f->base[j];
                if (a[j] > a[best]) {
                    best = j;
                }
            }
            if (f->desc.op == PN_TREE_ENSEMBLE_CLASSIFIER) {
                ((int64_t*)out[1])[row0 + r] = best;
            }
            post_transform(f->desc.post_transform, a, k);
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
    size_t size = sizeof(forest) + (size_t)nodes * sizeof(tree_node) +
                  (size_t)trees * sizeof(int32_t) + (size_t)weights * (sizeof(int32_t) + sizeof(double)) +
                  (size_t)targets * sizeof(double) + 64;
    forest* f = (forest*)calloc(1, size);
    if (f == NULL) {
        return NULL;
    }
    char* p = (char*)(f + 1);
    f->nodes = (tree_node*)p;
    p += (size_t)nodes * sizeof(tree_node);
    f->leaf_weights = (double*)p;
    p += (size_t)weights * sizeof(double);
    f->base = (double*)p;
    p += (size_t)targets * sizeof(double);
    f->roots = (int32_t*)p;
    p += (size_t)trees * sizeof(int32_t);
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
    int uniform = -1;
    for (int64_t t = 0; t < trees; ++t) {
        f->roots[t] = (int32_t)offsets[t];
    }
    for (int64_t i = 0; i < nodes; ++i) {
        tree_node* n = &f->nodes[i];
        n->mode = (uint8_t)(modes[i] & ~PN_TREE_MISSING_TRUE);
        n->missing_true = (modes[i] & PN_TREE_MISSING_TRUE) != 0;
        n->feature = (int32_t)feature[i];
        n->threshold = threshold[i];
        n->yes = (int32_t)yes[i];
        n->no = (int32_t)no[i];
        if (n->mode != PN_TREE_NODE_LEAF) {
            uniform = uniform == -1 ? n->mode : (uniform == n->mode ? uniform : 0);
        }
    }
    f->uniform_mode = uniform < 0 ? 0 : uniform;
    for (int64_t w = 0; w < weights; ++w) {
        f->leaf_targets[w] = (int32_t)((const int64_t*)c[TARGETS])[w];
        f->leaf_weights[w] = ((const double*)c[WEIGHTS])[w];
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
