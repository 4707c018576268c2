/* Validation of the non-window layers. */
#include "pn_validate_internal.h"

#include <math.h>

/* ---- ELEMENTWISE_BINARY / ELEMENTWISE_VARIADIC / ACTIVATION ------------- */

pn_status pnv_broadcast_output(const pn_layer* layer, pn_string_out* reason) {
    pn_tensor_info shape = layer->inputs[0];
    for (uint32_t i = 1; i < layer->num_inputs; ++i) {
        if (pn_broadcast_shape(&shape, &layer->inputs[i], &shape) != 0) {
            char a[160], b[160];
            return PNV_FAIL(reason, "%s: input %u of shape %s does not broadcast with %s",
                            pn_layer_kind_name(layer->kind), i,
                            pn_format_shape(&layer->inputs[i], a, sizeof(a)),
                            pn_format_shape(&shape, b, sizeof(b)));
        }
    }
    return pnv_shape_is(layer, &layer->outputs[0], &shape, "output (the inputs' broadcast)",
                        reason);
}

/* The element types a binary operation takes (backend_api.h, pn_binary_op). */
static pnv_class binary_class(pn_binary_op op) {
    switch (op) {
    case PN_BINARY_PRELU: return PNV_FLOAT;
    case PN_BINARY_EQUAL: return PNV_ANY;
    case PN_BINARY_LOGICAL_AND:
    case PN_BINARY_LOGICAL_OR:
    case PN_BINARY_LOGICAL_XOR: return PNV_BOOL;
    case PN_BINARY_BITWISE_AND:
    case PN_BINARY_BITWISE_OR:
    case PN_BINARY_BITWISE_XOR:
    case PN_BINARY_SHIFT_LEFT:
    case PN_BINARY_SHIFT_RIGHT: return PNV_INTEGER;
    default: return PNV_NUMERIC;
    }
}

int pn_binary_op_is_comparison(pn_binary_op op) {
    return op >= PN_BINARY_EQUAL && op <= PN_BINARY_GREATER_EQUAL;
}

pn_status pn_validate_elementwise_binary(const pn_layer* layer, pn_string_out* reason) {
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    if (d->op < PN_BINARY_ADD || d->op > PN_BINARY_SHIFT_RIGHT) {
        return PNV_FAIL(reason, "ElementwiseBinary: unknown operation %d", (int)d->op);
    }
    PNV_TRY(pn_validate_fused_activation(d->fused_activation, "ElementwiseBinary fused activation",
                                         reason));
    PNV_TRY(pnv_counts(layer, 2, 2, reason));
    int comparison = pn_binary_op_is_comparison(d->op);
    PNV_TRY(pnv_same_type(layer, 0, 1, !comparison, binary_class(d->op), reason));
    if (comparison) {
        PNV_TRY(pnv_type_class(layer, &layer->outputs[0], "the output of a comparison", PNV_BOOL,
                               reason));
    }
    if (d->fused_activation != NULL && d->fused_activation->kind != PN_ACTIVATION_INVALID) {
        PNV_TRY(pnv_type_class(layer, &layer->outputs[0], "the output of a fused activation",
                               PNV_FLOAT, reason));
    }
    return pnv_broadcast_output(layer, reason);
}

pn_status pn_validate_elementwise_variadic(const pn_layer* layer, pn_string_out* reason) {
    const pn_elementwise_variadic_desc* d = (const pn_elementwise_variadic_desc*)layer->descriptor;
    if (d->op < PN_VARIADIC_SUM || d->op > PN_VARIADIC_MEAN) {
        return PNV_FAIL(reason, "ElementwiseVariadic: unknown operation %d", (int)d->op);
    }
    PNV_TRY(pnv_counts(layer, 1, UINT32_MAX, reason));
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1,
                          d->op == PN_VARIADIC_MEAN ? PNV_FLOAT : PNV_NUMERIC, reason));
    return pnv_broadcast_output(layer, reason);
}

pn_status pn_validate_activation(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pn_validate_fused_activation((const pn_activation_desc*)layer->descriptor,
                                         "Activation", reason));
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_FLOAT, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}

/* ---- FULLY_CONNECTED / MATMUL ------------------------------------------- */

static pn_status check_fc_counts(const pn_layer* layer, const pn_fully_connected_desc* d,
                                 pn_string_out* reason) {
    if ((d->flags & ~(PN_LAYER_FLAG_HAS_BIAS | PN_LAYER_FLAG_HAS_ADDEND)) != 0) {
        return PNV_FAIL(reason, "FullyConnected: unknown flags 0x%x", d->flags);
    }
    uint32_t has_c = (d->flags & PN_LAYER_FLAG_HAS_BIAS) ? 1u : 0u;
    uint32_t has_addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) ? 1u : 0u;
    uint32_t expected = 2 + has_c + has_addend;
    if (layer->num_inputs != expected) {
        return PNV_FAIL(reason, "FullyConnected: expected %u inputs (a, b%s%s), got %u", expected,
                        has_c ? ", c" : "", has_addend ? ", addend" : "", layer->num_inputs);
    }
    return pnv_counts(layer, expected, expected, reason);
}

pn_status pn_validate_fully_connected(const pn_layer* layer, pn_string_out* reason) {
    const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)layer->descriptor;
    PNV_TRY(check_fc_counts(layer, d, reason));
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_FLOAT, reason));
    PNV_TRY(pn_validate_fused_activation(d->fused_activation, "FullyConnected fused activation",
                                         reason));
    const pn_tensor_info* a = &layer->inputs[0];
    const pn_tensor_info* b = &layer->inputs[1];
    PNV_TRY(pnv_rank(layer, a, "input a", 2, 2, reason));
    PNV_TRY(pnv_rank(layer, b, "input b", 2, 2, reason));
    int64_t m = d->transpose_a ? a->dims[1] : a->dims[0];
    int64_t ka = d->transpose_a ? a->dims[0] : a->dims[1];
    int64_t kb = d->transpose_b ? b->dims[1] : b->dims[0];
    int64_t n = d->transpose_b ? b->dims[0] : b->dims[1];
    if (ka != kb) {
        return PNV_FAIL(reason, "FullyConnected: inner dimensions differ: op(a) is %lldx%lld, "
                        "op(b) is %lldx%lld", (long long)m, (long long)ka, (long long)kb,
                        (long long)n);
    }
    pn_tensor_info expected = {0};
    expected.rank = 2;
    expected.dims[0] = m;
    expected.dims[1] = n;
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason));
    uint32_t next = 2;
    if (d->flags & PN_LAYER_FLAG_HAS_BIAS) {
        const pn_tensor_info* c = &layer->inputs[next++];
        int64_t strides[PN_MAX_DIMS];
        if (pn_broadcast_strides(c, &expected, strides) != 0) {
            char cs[160], es[160];
            return PNV_FAIL(reason, "FullyConnected: c of shape %s does not broadcast to %s",
                            pn_format_shape(c, cs, sizeof(cs)),
                            pn_format_shape(&expected, es, sizeof(es)));
        }
    }
    if (d->flags & PN_LAYER_FLAG_HAS_ADDEND) {
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[next], &expected, "addend", reason));
    }
    return PN_OK;
}

/* The batch dims (all but the last two) of a rank >= 2 view. */
static pn_tensor_info batch_dims(const pn_tensor_info* t) {
    pn_tensor_info r = {0};
    r.rank = t->rank >= 2 ? t->rank - 2 : 0;
    for (uint32_t i = 0; i < r.rank; ++i) {
        r.dims[i] = t->dims[i];
    }
    return r;
}

pn_status pn_validate_matmul(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 2, 2, reason));
    PNV_TRY(pnv_same_type(layer, 0, 1, 1, PNV_NUMERIC, reason));
    const pn_tensor_info* a = &layer->inputs[0];
    const pn_tensor_info* b = &layer->inputs[1];
    PNV_TRY(pnv_rank(layer, a, "input a", 1, PN_MAX_DIMS, reason));
    PNV_TRY(pnv_rank(layer, b, "input b", 1, PN_MAX_DIMS, reason));
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (ka != kb) {
        return PNV_FAIL(reason, "MatMul: inner dimensions differ: a's last dim is %lld, b's %s "
                        "is %lld", (long long)ka, b->rank == 1 ? "only dim" : "second-to-last dim",
                        (long long)kb);
    }
    pn_tensor_info ba = batch_dims(a), bb = batch_dims(b), expected;
    if (pn_broadcast_shape(&ba, &bb, &expected) != 0) {
        char as[160], bs[160];
        return PNV_FAIL(reason, "MatMul: batch dims %s and %s do not broadcast",
                        pn_format_shape(&ba, as, sizeof(as)), pn_format_shape(&bb, bs, sizeof(bs)));
    }
    if (a->rank >= 2) {
        expected.dims[expected.rank++] = a->dims[a->rank - 2];
    }
    if (b->rank >= 2) {
        expected.dims[expected.rank++] = b->dims[b->rank - 1];
    }
    return pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason);
}

/* ---- SOFTMAX / BATCH_NORMALIZATION / LRN -------------------------------- */

static pn_status check_axis(const pn_layer* layer, int32_t axis, uint32_t rank,
                            pn_string_out* reason) {
    if (pn_normalize_axis(axis, rank) < 0) {
        return PNV_FAIL(reason, "%s: axis %d is out of range for rank %u",
                        pn_layer_kind_name(layer->kind), axis, rank);
    }
    return PN_OK;
}

pn_status pn_validate_softmax(const pn_layer* layer, pn_string_out* reason) {
    const pn_softmax_desc* d = (const pn_softmax_desc*)layer->descriptor;
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_FLOAT, reason));
    PNV_TRY(check_axis(layer, d->axis, layer->inputs[0].rank, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}

/* The channel count of a BN/LRN input: rank-4 per layout, else dim 1. */
static int64_t channels_of(const pn_tensor_info* x, pn_data_layout layout) {
    return x->rank == 4 && layout == PN_LAYOUT_NHWC ? x->dims[3] : x->dims[1];
}

pn_status pn_validate_batch_normalization(const pn_layer* layer, pn_string_out* reason) {
    const pn_batch_normalization_desc* d = (const pn_batch_normalization_desc*)layer->descriptor;
    PNV_TRY(pnv_layout(layer, d->layout, reason));
    if (!(d->epsilon >= 0.0f) || !isfinite(d->epsilon)) {
        return PNV_FAIL(reason, "BatchNormalization: epsilon must be finite and >= 0, got %g",
                        (double)d->epsilon);
    }
    PNV_TRY(pnv_counts(layer, 5, 5, reason));
    PNV_TRY(pnv_same_type(layer, 0, 4, 1, PNV_FLOAT, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "input x", 2, 4, reason));
    pn_tensor_info param = {0};
    param.rank = 1;
    param.dims[0] = channels_of(x, d->layout);
    static const char* const names[] = {"x", "scale", "bias", "mean", "var"};
    for (uint32_t i = 1; i < 5; ++i) {
        PNV_TRY(pnv_shape_is(layer, &layer->inputs[i], &param, names[i], reason));
    }
    return pnv_shape_is(layer, &layer->outputs[0], x, "output", reason);
}

pn_status pn_validate_lrn(const pn_layer* layer, pn_string_out* reason) {
    const pn_lrn_desc* d = (const pn_lrn_desc*)layer->descriptor;
    PNV_TRY(pnv_layout(layer, d->layout, reason));
    if (d->size == 0) {
        return PNV_FAIL(reason, "LocalResponseNormalization: size must be >= 1, got 0");
    }
    if (!isfinite(d->alpha) || !isfinite(d->beta) || !isfinite(d->bias)) {
        return PNV_FAIL(reason, "LocalResponseNormalization: alpha, beta and bias must be "
                        "finite, got %g, %g, %g", (double)d->alpha, (double)d->beta,
                        (double)d->bias);
    }
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_FLOAT, reason));
    PNV_TRY(pnv_rank(layer, &layer->inputs[0], "input", 4, 4, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}

/* ---- CONCAT / RESHAPE / TRANSPOSE / COPY / PRECOMPILED ------------------ */

pn_status pn_validate_concat(const pn_layer* layer, pn_string_out* reason) {
    const pn_concat_desc* d = (const pn_concat_desc*)layer->descriptor;
    PNV_TRY(pnv_counts(layer, 1, UINT32_MAX, reason));
    PNV_TRY(pnv_same_type(layer, 0, UINT32_MAX, 1, PNV_ANY, reason));
    const pn_tensor_info* first = &layer->inputs[0];
    PNV_TRY(check_axis(layer, d->axis, first->rank, reason));
    uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, first->rank);
    pn_tensor_info expected = *first;
    expected.dims[axis] = 0;
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        const pn_tensor_info* t = &layer->inputs[i];
        int same = t->rank == first->rank;
        for (uint32_t j = 0; same && j < t->rank; ++j) {
            same = j == axis || t->dims[j] == first->dims[j];
        }
        if (!same) {
            char ts[160], fs[160];
            return PNV_FAIL(reason, "Concat: input %u of shape %s does not match input 0 of "
                            "shape %s outside axis %u", i, pn_format_shape(t, ts, sizeof(ts)),
                            pn_format_shape(first, fs, sizeof(fs)), axis);
        }
        expected.dims[axis] += t->dims[axis];
    }
    return pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason);
}

pn_status pn_validate_reshape(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    int64_t in = pn_num_elements(&layer->inputs[0]);
    int64_t out = pn_num_elements(&layer->outputs[0]);
    if (in != out) {
        return PNV_FAIL(reason, "Reshape: the output holds %lld elements, the input %lld",
                        (long long)out, (long long)in);
    }
    return PN_OK;
}

pn_status pn_validate_transpose(const pn_layer* layer, pn_string_out* reason) {
    const pn_transpose_desc* d = (const pn_transpose_desc*)layer->descriptor;
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    if (d->rank != x->rank) {
        return PNV_FAIL(reason, "Transpose: the permutation has %u entries, the input rank is %u",
                        d->rank, x->rank);
    }
    uint32_t seen = 0;
    for (uint32_t i = 0; i < d->rank; ++i) {
        if (d->perm[i] >= d->rank || (seen & (1u << d->perm[i])) != 0) {
            return PNV_FAIL(reason, "Transpose: perm is not a permutation of 0..%u (entry %u is "
                            "%u)", d->rank - 1, i, d->perm[i]);
        }
        seen |= 1u << d->perm[i];
    }
    pn_tensor_info expected = *x;
    for (uint32_t i = 0; i < d->rank; ++i) {
        expected.dims[i] = x->dims[d->perm[i]];
    }
    return pnv_shape_is(layer, &layer->outputs[0], &expected, "output", reason);
}

pn_status pn_validate_copy(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_ANY, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}

pn_status pn_validate_precompiled(const pn_layer* layer, pn_string_out* reason) {
    (void)layer;
    (void)reason;
    return PN_OK; /* only the backend that made the payload can judge it */
}
