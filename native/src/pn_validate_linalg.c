/* Validation of PN_LAYER_LINEAR_ALGEBRA (ONNX Det) (backend_api.h). */
#include "pn_validate_internal.h"

pn_status pn_validate_linear_algebra(const pn_layer* layer, pn_string_out* reason) {
    const pn_linear_algebra_desc* d = (const pn_linear_algebra_desc*)layer->descriptor;
    if (d->op != PN_LINEAR_ALGEBRA_DETERMINANT) {
        return PNV_FAIL(reason, "LinearAlgebra: unknown op %d (DETERMINANT)", (int)d->op);
    }
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    PNV_TRY(pnv_same_type(layer, 0, 0, 1, PNV_FLOAT, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "input x", 2, PN_MAX_DIMS, reason));
    if (x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
        return PNV_FAIL(reason, "LinearAlgebra: a determinant needs square matrices, x's last two "
                        "dims are %lld and %lld", (long long)x->dims[x->rank - 2],
                        (long long)x->dims[x->rank - 1]);
    }
    pn_tensor_info y = *x;
    y.rank = x->rank - 2;
    y.dims[x->rank - 2] = 0;
    y.dims[x->rank - 1] = 0;
    return pnv_shape_is(layer, &layer->outputs[0], &y, "output", reason);
}
