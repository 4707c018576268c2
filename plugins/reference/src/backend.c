/* CpuRef entry points, backend object and its description for the plugin skeleton. */
#include "cpuref.h"

/* Every kind CpuRef runs, in float32 only (for now). */
static const pn_plugin_kind kinds[] = {
    {PN_LAYER_CONVOLUTION_2D, pn_plugin_float32_only, cpuref_conv2d_create},
    {PN_LAYER_POOLING_2D, pn_plugin_float32_only, cpuref_pooling2d_create},
    {PN_LAYER_ELEMENTWISE_BINARY, pn_plugin_float32_only, cpuref_binary_create},
    {PN_LAYER_ELEMENTWISE_VARIADIC, pn_plugin_float32_only, cpuref_variadic_create},
    {PN_LAYER_ACTIVATION, pn_plugin_float32_only, cpuref_activation_create},
    {PN_LAYER_FULLY_CONNECTED, pn_plugin_float32_only, cpuref_fully_connected_create},
    {PN_LAYER_MATMUL, pn_plugin_float32_only, cpuref_matmul_create},
    {PN_LAYER_SOFTMAX, pn_plugin_float32_only, cpuref_softmax_create},
    {PN_LAYER_BATCH_NORMALIZATION, pn_plugin_float32_only, cpuref_batch_norm_create},
    {PN_LAYER_LOCAL_RESPONSE_NORMALIZATION, pn_plugin_float32_only, cpuref_lrn_create},
    {PN_LAYER_CONCAT, pn_plugin_float32_only, cpuref_concat_create},
    {PN_LAYER_RESHAPE, pn_plugin_float32_only, cpuref_reshape_create},
    {PN_LAYER_TRANSPOSE, pn_plugin_float32_only, cpuref_transpose_create},
    {PN_LAYER_COPY, pn_plugin_float32_only, cpuref_copy_create},
};

static const pn_plugin cpuref = {"CpuRef", kinds, sizeof(kinds) / sizeof(kinds[0]), NULL};

/* ---- Backend ---------------------------------------------------------------- */

static pn_status backend_set_option(pn_backend* backend, const char* key, const char* value,
                                    pn_string_out* message_out) {
    (void)backend;
    (void)value;
    return pn_fail(message_out, PN_ERR_NOT_FOUND, "CpuRef has no option '%s' (it takes none)", key);
}

PLUGNN_BACKEND_EXPORT const char* GetBackendId(void) { return cpuref.id; }

PLUGNN_BACKEND_EXPORT void GetVersion(uint32_t* major_out, uint32_t* minor_out) {
    *major_out = PLUGNN_BACKEND_API_VERSION_MAJOR;
    *minor_out = PLUGNN_BACKEND_API_VERSION_MINOR;
}

PLUGNN_BACKEND_EXPORT void* BackendFactory(void) {
    pn_backend* b = pn_plugin_backend_new(&cpuref);
    if (b != NULL) {
        b->set_option = backend_set_option;
    }
    return b;
}
