/* Validation of PN_LAYER_BITCAST (ONNX BitCast) (backend_api.h). */
#include "pn_validate_internal.h"

static int quantized(const pn_tensor_info* info) {
    return PN_HAS_FIELD(info, pn_tensor_info, quant_zero_point) &&
           (info->quant_scale != 0.0f || info->quant_zero_point != 0);
}

pn_status pn_validate_bitcast(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pnv_counts(layer, 1, 1, reason));
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    if (pn_dtype_size(x->dtype) != pn_dtype_size(y->dtype)) {
        return PNV_FAIL(reason, "BitCast: %s (%zu bytes) and %s (%zu bytes) differ in size",
                        pn_dtype_name(x->dtype), pn_dtype_size(x->dtype), pn_dtype_name(y->dtype),
                        pn_dtype_size(y->dtype));
    }
    if (quantized(x) || quantized(y)) {
        return PNV_FAIL(reason, "BitCast: the %s is quantized (quant_scale %g); bits are cast "
                        "between plain tensors only", quantized(x) ? "input" : "output",
                        (double)(quantized(x) ? x->quant_scale : y->quant_scale));
    }
    return pnv_shape_is(layer, y, x, "output", reason);
}
