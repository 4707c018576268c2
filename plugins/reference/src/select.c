/* SELECT (ONNX Where): condition ? a : b under NumPy broadcasting, any element type (elements
 * are copied, never converted). */
#include "cpuref.h"

#include <string.h>

static pn_status select_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    (void)message_out;
    size_t size = pn_dtype_size(op->outputs[0].dtype);
    const uint8_t* condition = (const uint8_t*)in[0];
    const char* a = (const char*)in[1];
    const char* b = (const char*)in[2];
    char* y = (char*)out[0];
    int64_t offsets[3], index[PN_MAX_DIMS];
    cpuref_broadcast_begin(op, op->strides, offsets, index);
    int64_t n = pn_num_elements(&op->outputs[0]);
    for (int64_t i = 0; i < n; ++i) {
        const char* source = condition[offsets[0]] ? a + (size_t)offsets[1] * size
                                                   : b + (size_t)offsets[2] * size;
        memcpy(y + (size_t)i * size, source, size);
        cpuref_broadcast_next(op, op->strides, offsets, index);
    }
    return PN_OK;
}

pn_status cpuref_select_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, 0, NULL, select_kernel, NULL, workload_out,
                                     message_out);
}
