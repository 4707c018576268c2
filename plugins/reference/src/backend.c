/* CpuRef entry points, backend object and its description for the plugin skeleton. */
#include "cpuref.h"

#include <stdlib.h>

/* CpuRef computes in float32 only (for now). */
static pn_status float32_only(const pn_plugin* plugin, const pn_layer* layer,
                              pn_string_out* reason) {
    return pn_plugin_check_dtype(plugin, layer, PN_DTYPE_FLOAT32, reason);
}

static const pn_plugin_kind kinds[] = {
    {PN_LAYER_CONVOLUTION_2D, float32_only, cpuref_conv2d_create},
    {PN_LAYER_POOLING_2D, float32_only, cpuref_pooling2d_create},
    {PN_LAYER_ELEMENTWISE_BINARY, float32_only, cpuref_binary_create},
    {PN_LAYER_ELEMENTWISE_VARIADIC, float32_only, cpuref_variadic_create},
    {PN_LAYER_ACTIVATION, float32_only, cpuref_activation_create},
    {PN_LAYER_FULLY_CONNECTED, float32_only, cpuref_fully_connected_create},
    {PN_LAYER_MATMUL, float32_only, cpuref_matmul_create},
    {PN_LAYER_SOFTMAX, float32_only, cpuref_softmax_create},
    {PN_LAYER_BATCH_NORMALIZATION, float32_only, cpuref_batch_norm_create},
    {PN_LAYER_LOCAL_RESPONSE_NORMALIZATION, float32_only, cpuref_lrn_create},
    {PN_LAYER_CONCAT, float32_only, cpuref_concat_create},
    {PN_LAYER_RESHAPE, float32_only, cpuref_reshape_create},
    {PN_LAYER_TRANSPOSE, float32_only, cpuref_transpose_create},
    {PN_LAYER_COPY, float32_only, cpuref_copy_create},
};

static const pn_plugin cpuref = {"CpuRef", kinds, sizeof(kinds) / sizeof(kinds[0]), NULL};

/* ---- Backend ---------------------------------------------------------------- */

static void backend_destroy(pn_backend* backend) { free(backend); }

static pn_status backend_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                            pn_bool* supported_out, pn_string_out* reason_out) {
    (void)backend;
    return pn_plugin_is_layer_supported(&cpuref, layer, supported_out, reason_out);
}

static pn_status backend_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                                 pn_workload_factory** factory_out,
                                                 pn_string_out* message_out) {
    (void)backend;
    (void)mm;
    return pn_plugin_factory_new(&cpuref, NULL, 0, factory_out, message_out);
}

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
    pn_backend* b = (pn_backend*)calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->struct_size = (uint32_t)sizeof(pn_backend);
    b->flags = PN_BACKEND_HOST_MEMORY;
    b->self = b;
    b->destroy = backend_destroy;
    b->is_layer_supported = backend_is_layer_supported;
    b->create_workload_factory = backend_create_workload_factory;
    b->set_option = backend_set_option;
    return b;
}
