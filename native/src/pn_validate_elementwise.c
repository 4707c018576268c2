/* Validation of the 1.1 elementwise kinds: ELEMENTWISE_UNARY, SELECT and CAST
 * (backend_api.h: pn_unary_op, pn_elementwise_unary_desc, PN_LAYER_SELECT, pn_cast_desc). */
#include "pn_validate_internal.h"

/* ---- ELEMENTWISE_UNARY --------------------------------------------------- */

/* The element types an operation takes (backend_api.h, pn_unary_op). */
static pnv_class unary_class(pn_unary_op op) {
    switch (op) {
    case PN_UNARY_ABS:
    case PN_UNARY_SIGN: return PNV_NUMERIC;
    case PN_UNARY_NEG: return PNV_SIGNED;
    case PN_UNARY_LOGICAL_NOT: return PNV_BOOL;
    case PN_UNARY_BITWISE_NOT: return PNV_INTEGER;
    default: return PNV_FLOAT; /* RECIPROCAL .. ROUND and the IS_* tests */
    }
}

int pn_unary_op_gives_bool(pn_unary_op op) {
    return op >= PN_UNARY_IS_NAN && op <= PN_UNARY_IS_NEG_INF;
}

pn_status pn_validate_elementwise_unary(const pn_layer* layer, pn_string_out* reason) {
    const pn_elementwise_unary_desc* d = (const pn_elementwise_unary_desc*)layer->descriptor;
    if (d->op < PN_UNARY_ABS || d->op > PN_UNARY_BITWISE_NOT) {
        return PNV_FAIL(reason, "ElementwiseUnary: unknown operation %d", (int)d->op);
    }
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    if (pn_unary_op_gives_bool(d->op)) {
        PNV_TRY(pnv_same_type(layer, 0, 0, 0, unary_class(d->op), reason));
        PNV_TRY(pnv_type_class(layer, &layer->outputs[0], "the output of an IS_* test", PNV_BOOL,
                               reason));
    } else {
        PNV_TRY(pnv_same_type(layer, 0, 0, 1, unary_class(d->op), reason));
    }
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}

/* ---- SELECT ------------------------------------------------------------------- */

pn_status pn_validate_select(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 3, 3, reason));
    PNV_TRY(pnv_type_class(layer, &layer->inputs[0], "input 0 (the condition)", PNV_BOOL, reason));
    PNV_TRY(pnv_same_type(layer, 1, 2, 1, PNV_ANY, reason));
    return pnv_broadcast_output(layer, reason);
}

/* ---- CAST ----------------------------------------------------------------------- */

pn_status pn_validate_cast(const pn_layer* layer, pn_string_out* reason) {
    const pn_cast_desc* d = (const pn_cast_desc*)layer->descriptor;
    if (d->saturate > 1) {
        return PNV_FAIL(reason, "Cast: saturate must be 0 or 1, got %u", d->saturate);
    }
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    return pnv_shape_is(layer, &layer->outputs[0], &layer->inputs[0], "output", reason);
}
