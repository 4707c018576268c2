/* Validation of PN_LAYER_RANDOM (ONNX RandomUniform, RandomNormal, their -Like forms and
 * Multinomial) (backend_api.h). */
#include "pn_validate_internal.h"

#include <math.h>

#define RANDOM "Random"

static pn_status check_desc(const pn_random_desc* d, pn_string_out* reason) {
    if (d->op < PN_RANDOM_UNIFORM || d->op > PN_RANDOM_MULTINOMIAL) {
        return PNV_FAIL(reason, RANDOM ": unknown op %d (UNIFORM, NORMAL or MULTINOMIAL)",
                        (int)d->op);
    }
    if ((d->flags & ~PN_RANDOM_ADVANCE) != 0) {
        return PNV_FAIL(reason, RANDOM ": unknown flags 0x%x (PN_RANDOM_ADVANCE)",
                        d->flags & ~PN_RANDOM_ADVANCE);
    }
    if (!isfinite(d->a) || !isfinite(d->b)) {
        return PNV_FAIL(reason, RANDOM ": a and b must be finite, got %g and %g", d->a, d->b);
    }
    if (d->op == PN_RANDOM_UNIFORM && !(d->a <= d->b)) {
        return PNV_FAIL(reason, RANDOM ": UNIFORM needs low <= high, got %g and %g", d->a, d->b);
    }
    if (d->op == PN_RANDOM_MULTINOMIAL && (d->a != 0.0 || d->b != 0.0)) {
        return PNV_FAIL(reason, RANDOM ": MULTINOMIAL takes a = b = 0, got %g and %g", d->a, d->b);
    }
    return PN_OK;
}

pn_status pn_validate_random(const pn_layer* layer, pn_string_out* reason) {
    const pn_random_desc* d = (const pn_random_desc*)layer->descriptor;
    PNV_TRY(check_desc(d, reason));
    const pn_tensor_info* y = &layer->outputs[0];
    if (d->op != PN_RANDOM_MULTINOMIAL) {
        PNV_TRY(pnv_counts(layer, 0, 0, reason));
        return pnv_type_class(layer, y, "output", PNV_FLOAT, reason);
    }
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "logits", 2, 2, reason));
    PNV_TRY(pnv_type_class(layer, x, "logits", PNV_FLOAT, reason));
    PNV_TRY(pnv_type_class(layer, y, "output", PNV_INDEX, reason));
    if (x->dims[1] < 1) {
        return PNV_FAIL(reason, RANDOM ": MULTINOMIAL needs at least one class, logits are "
                        "[%lld, 0]", (long long)x->dims[0]);
    }
    PNV_TRY(pnv_rank(layer, y, "output", 2, 2, reason));
    if (y->dims[0] != x->dims[0]) {
        return PNV_FAIL(reason, RANDOM ": the output has %lld rows, the logits %lld",
                        (long long)y->dims[0], (long long)x->dims[0]);
    }
    return PN_OK;
}
