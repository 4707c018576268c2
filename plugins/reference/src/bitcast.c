/* BITCAST (ONNX BitCast): every element's bytes copied unchanged into an element of another
 * type of the same size; a BOOL output accepts the bytes 0 and 1 only (backend_api.h). */
#include "cpuref.h"

#include <string.h>

static pn_status bitcast_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                pn_string_out* message_out) {
    int64_t count = pn_num_elements(&op->inputs[0]);
    size_t bytes = (size_t)count * pn_dtype_size(op->inputs[0].dtype);
    if (op->outputs[0].dtype == PN_DTYPE_BOOL && op->inputs[0].dtype != PN_DTYPE_BOOL) {
        const unsigned char* src = (const unsigned char*)in[0];
        for (int64_t i = 0; i < count; ++i) {
            if (src[i] > 1) {
                return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "Bitcast: element %lld is "
                               "the byte %u, which is no bool (0 or 1)", (long long)i,
                               (unsigned)src[i]);
            }
        }
    }
    memcpy(out[0], in[0], bytes);
    return PN_OK;
}

pn_status cpuref_bitcast_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, 0, NULL, bitcast_kernel, NULL, workload_out,
                                     message_out);
}
