/* Validation of PN_LAYER_TREE_ENSEMBLE (ONNX-ML TreeEnsembleRegressor, TreeEnsembleClassifier,
 * TreeEnsemble) (backend_api.h, "Tree ensembles"): the counts, types and shapes, and every value
 * of the constant arrays, so a kernel walks trees without checking an index. */
#include "pn_validate_internal.h"

#include <math.h>

#define TREES "TreeEnsemble"

enum { X, OFFSETS, MODES, FEATURES, THRESHOLDS, TRUE_IDS, FALSE_IDS, TARGETS, WEIGHTS, BASE,
       NUM_INPUTS };

static const char* const input_names[NUM_INPUTS] = {
    "x", "tree_offsets", "node_modes", "node_features", "node_thresholds", "node_true",
    "node_false", "leaf_targets", "leaf_weights", "base_values"};

static pn_status check_desc(const pn_tree_ensemble_desc* d, pn_string_out* reason) {
    if (d->op != PN_TREE_ENSEMBLE_REGRESSOR && d->op != PN_TREE_ENSEMBLE_CLASSIFIER) {
        return PNV_FAIL(reason, TREES ": unknown op %d (REGRESSOR or CLASSIFIER)", (int)d->op);
    }
    if (d->aggregate < PN_TREE_AGGREGATE_SUM || d->aggregate > PN_TREE_AGGREGATE_MAX) {
        return PNV_FAIL(reason, TREES ": unknown aggregate %d (SUM, AVERAGE, MIN or MAX)",
                        (int)d->aggregate);
    }
    if (d->op == PN_TREE_ENSEMBLE_CLASSIFIER && d->aggregate != PN_TREE_AGGREGATE_SUM) {
        return PNV_FAIL(reason, TREES ": CLASSIFIER aggregates with SUM, got aggregate %d",
                        (int)d->aggregate);
    }
    if (d->post_transform < PN_TREE_POST_NONE || d->post_transform > PN_TREE_POST_PROBIT) {
        return PNV_FAIL(reason, TREES ": unknown post_transform %d (NONE, LOGISTIC, SOFTMAX, "
                        "SOFTMAX_ZERO or PROBIT)", (int)d->post_transform);
    }
    return PN_OK;
}

/* Input i: rank 1 of `type`, a constant; its length in *length. */
static pn_status array_input(const pn_layer* layer, int i, pn_data_type type, int64_t* length,
                             pn_string_out* reason) {
    const pn_tensor_info* info = &layer->inputs[i];
    if (info->rank != 1) {
        return PNV_FAIL(reason, TREES ": input %d (%s) must have rank 1, got rank %u", i,
                        input_names[i], info->rank);
    }
    if (info->dtype != type) {
        return PNV_FAIL(reason, TREES ": input %d (%s) must be %s, got %s", i, input_names[i],
                        pn_dtype_name(type), pn_dtype_name(info->dtype));
    }
    if (layer->constant_data == NULL || layer->constant_data[i] == NULL) {
        return PNV_FAIL(reason, TREES ": input %d (%s) must be a constant (its data in "
                        "constant_data)", i, input_names[i]);
    }
    *length = info->dims[0];
    return PN_OK;
}

static pn_status check_nodes(const pn_layer* layer, int64_t trees, int64_t nodes, int64_t weights,
                             int64_t features, int64_t targets, pn_string_out* reason) {
    const int64_t* offsets = (const int64_t*)layer->constant_data[OFFSETS];
    const uint8_t* modes = (const uint8_t*)layer->constant_data[MODES];
    const int64_t* feature = (const int64_t*)layer->constant_data[FEATURES];
    const double* threshold = (const double*)layer->constant_data[THRESHOLDS];
    const int64_t* yes = (const int64_t*)layer->constant_data[TRUE_IDS];
    const int64_t* no = (const int64_t*)layer->constant_data[FALSE_IDS];
    const int64_t* target = (const int64_t*)layer->constant_data[TARGETS];
    if (offsets[0] != 0 || offsets[trees] != nodes) {
        return PNV_FAIL(reason, TREES ": tree_offsets must start at 0 and end at the node count "
                        "%lld, got %lld .. %lld", (long long)nodes, (long long)offsets[0],
                        (long long)offsets[trees]);
    }
    for (int64_t t = 0; t < trees; ++t) {
        int64_t begin = offsets[t], end = offsets[t + 1];
        if (end <= begin) {
            return PNV_FAIL(reason, TREES ": tree %lld has no node (tree_offsets %lld, %lld)",
                            (long long)t, (long long)begin, (long long)end);
        }
        for (int64_t i = begin; i < end; ++i) {
            int mode = modes[i] & ~PN_TREE_MISSING_TRUE;
            if (mode < PN_TREE_NODE_LEQ || mode > PN_TREE_NODE_LEAF) {
                return PNV_FAIL(reason, TREES ": node %lld has unknown mode %d", (long long)i,
                                (int)modes[i]);
            }
            if (mode == PN_TREE_NODE_LEAF) {
                if (no[i] < 0 || yes[i] < 0 || yes[i] > weights || no[i] > weights - yes[i]) {
                    return PNV_FAIL(reason, TREES ": leaf %lld names weights %lld (+%lld), "
                                    "outside the %lld weights", (long long)i, (long long)yes[i],
                                    (long long)no[i], (long long)weights);
                }
                continue;
            }
            if (feature[i] < 0 || feature[i] >= features) {
                return PNV_FAIL(reason, TREES ": node %lld reads feature %lld, x has %lld",
                                (long long)i, (long long)feature[i], (long long)features);
            }
            if (isnan(threshold[i])) {
                return PNV_FAIL(reason, TREES ": node %lld has a NaN threshold", (long long)i);
            }
            if (yes[i] <= i || yes[i] >= end || no[i] <= i || no[i] >= end) {
                return PNV_FAIL(reason, TREES ": node %lld of tree %lld (nodes %lld..%lld) has "
                                "children %lld and %lld; children lie after their node, in its "
                                "tree", (long long)i, (long long)t, (long long)begin,
                                (long long)(end - 1), (long long)yes[i], (long long)no[i]);
            }
        }
    }
    for (int64_t w = 0; w < weights; ++w) {
        if (target[w] < 0 || target[w] >= targets) {
            return PNV_FAIL(reason, TREES ": weight %lld has target %lld, the scores have %lld",
                            (long long)w, (long long)target[w], (long long)targets);
        }
    }
    return PN_OK;
}

pn_status pn_validate_tree_ensemble(const pn_layer* layer, pn_string_out* reason) {
    const pn_tree_ensemble_desc* d = (const pn_tree_ensemble_desc*)layer->descriptor;
    PNV_TRY(check_desc(d, reason));
    uint32_t outputs = d->op == PN_TREE_ENSEMBLE_CLASSIFIER ? 2 : 1;
    if (layer->num_inputs != NUM_INPUTS || layer->num_outputs != outputs) {
        return PNV_FAIL(reason, TREES ": %s takes %d inputs and %u output%s, got %u and %u",
                        d->op == PN_TREE_ENSEMBLE_CLASSIFIER ? "CLASSIFIER" : "REGRESSOR",
                        NUM_INPUTS, outputs, outputs == 1 ? "" : "s", layer->num_inputs,
                        layer->num_outputs);
    }
    const pn_tensor_info* x = &layer->inputs[X];
    PNV_TRY(pnv_rank(layer, x, "x", 2, 2, reason));
    if (x->dtype != PN_DTYPE_FLOAT32 && x->dtype != PN_DTYPE_FLOAT64) {
        return PNV_FAIL(reason, TREES ": x must be FLOAT32 or FLOAT64, got %s",
                        pn_dtype_name(x->dtype));
    }
    int64_t lengths[NUM_INPUTS] = {0};
    static const pn_data_type types[NUM_INPUTS] = {
        PN_DTYPE_INVALID, PN_DTYPE_INT64, PN_DTYPE_UINT8, PN_DTYPE_INT64, PN_DTYPE_FLOAT64,
        PN_DTYPE_INT64, PN_DTYPE_INT64, PN_DTYPE_INT64, PN_DTYPE_FLOAT64, PN_DTYPE_FLOAT64};
    for (int i = OFFSETS; i < NUM_INPUTS; ++i) {
        PNV_TRY(array_input(layer, i, types[i], &lengths[i], reason));
    }
    int64_t trees = lengths[OFFSETS] - 1, nodes = lengths[MODES], weights = lengths[TARGETS];
    int64_t targets = lengths[BASE];
    if (trees < 1) {
        return PNV_FAIL(reason, TREES ": tree_offsets needs at least 2 entries (one tree), got "
                        "%lld", (long long)lengths[OFFSETS]);
    }
    for (int i = FEATURES; i <= FALSE_IDS; ++i) {
        if (lengths[i] != nodes) {
            return PNV_FAIL(reason, TREES ": input %d (%s) has %lld entries, node_modes %lld", i,
                            input_names[i], (long long)lengths[i], (long long)nodes);
        }
    }
    if (lengths[WEIGHTS] != weights) {
        return PNV_FAIL(reason, TREES ": leaf_weights has %lld entries, leaf_targets %lld",
                        (long long)lengths[WEIGHTS], (long long)weights);
    }
    if (targets < 1) {
        return PNV_FAIL(reason, TREES ": base_values must have one entry per target (>= 1), got 0");
    }
    const pn_tensor_info* scores = &layer->outputs[0];
    if (scores->dtype != x->dtype || scores->rank != 2 || scores->dims[0] != x->dims[0] ||
        scores->dims[1] != targets) {
        return PNV_FAIL(reason, TREES ": scores must be %s [%lld, %lld] (x's type, rows, one "
                        "column per base value)", pn_dtype_name(x->dtype),
                        (long long)x->dims[0], (long long)targets);
    }
    if (outputs == 2) {
        const pn_tensor_info* label = &layer->outputs[1];
        if (label->dtype != PN_DTYPE_INT64 || label->rank != 1 || label->dims[0] != x->dims[0]) {
            return PNV_FAIL(reason, TREES ": label must be INT64 [%lld]", (long long)x->dims[0]);
        }
    }
    return check_nodes(layer, trees, nodes, weights, x->dims[1], targets, reason);
}
