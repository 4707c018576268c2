/* CpuRef entry points, backend object and its description for the plugin skeleton. */
#include "cpuref.h"

/* Every kind CpuRef runs, with the element types it takes. */
static const pn_plugin_kind kinds[] = {
    {PN_LAYER_CONVOLUTION_2D, cpuref_floats, cpuref_conv2d_create},
    {PN_LAYER_POOLING_2D, cpuref_floats, cpuref_pooling2d_create},
    {PN_LAYER_ELEMENTWISE_BINARY, cpuref_any_type, cpuref_binary_create},
    {PN_LAYER_ELEMENTWISE_VARIADIC, cpuref_any_type, cpuref_variadic_create},
    {PN_LAYER_ACTIVATION, cpuref_floats, cpuref_activation_create},
    {PN_LAYER_FULLY_CONNECTED, cpuref_floats, cpuref_fully_connected_create},
    {PN_LAYER_MATMUL, cpuref_any_type, cpuref_matmul_create},
    {PN_LAYER_SOFTMAX, cpuref_floats, cpuref_softmax_create},
    {PN_LAYER_BATCH_NORMALIZATION, cpuref_floats, cpuref_batch_norm_create},
    {PN_LAYER_LOCAL_RESPONSE_NORMALIZATION, cpuref_floats, cpuref_lrn_create},
    {PN_LAYER_CONCAT, cpuref_any_type, cpuref_concat_create},
    {PN_LAYER_RESHAPE, cpuref_any_type, cpuref_reshape_create},
    {PN_LAYER_TRANSPOSE, cpuref_any_type, cpuref_transpose_create},
    {PN_LAYER_COPY, cpuref_any_type, cpuref_copy_create},
    {PN_LAYER_RECURRENT, cpuref_any_type, cpuref_recurrent_create},
    {PN_LAYER_ELEMENTWISE_UNARY, cpuref_any_type, cpuref_unary_create},
    {PN_LAYER_SELECT, cpuref_any_type, cpuref_select_create},
    {PN_LAYER_CAST, cpuref_any_type, cpuref_cast_create},
};

static const pn_plugin cpuref = {"CpuRef", kinds, sizeof(kinds) / sizeof(kinds[0]), NULL};

/* ---- Element-type limits --------------------------------------------------------- */

pn_status cpuref_floats(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    pn_data_type dtype = layer->num_inputs > 0 ? layer->inputs[0].dtype : layer->outputs[0].dtype;
    if (!pn_dtype_is_float(dtype)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs %s on float types only; input 0 is %s",
                       plugin->id, pn_layer_kind_name(layer->kind), pn_dtype_name(dtype));
    }
    return pn_plugin_check_dtype(plugin, layer, dtype, reason);
}

pn_status cpuref_any_type(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    (void)plugin;
    (void)layer;
    (void)reason;
    return PN_OK;
}

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
