/* CpuRef entry points, backend object and its description for the plugin skeleton. */
#include "cpuref.h"

/* Every kind CpuRef runs, with the element types it takes. */
static const pn_plugin_kind kinds[] = {
    {PN_LAYER_CONVOLUTION_2D, cpuref_floats, cpuref_conv2d_create},
    {PN_LAYER_POOLING_2D, cpuref_floats, cpuref_pooling2d_create},
    {PN_LAYER_ELEMENTWISE_BINARY, cpuref_unquantized, cpuref_binary_create},
    {PN_LAYER_ELEMENTWISE_VARIADIC, cpuref_unquantized, cpuref_variadic_create},
    {PN_LAYER_ACTIVATION, cpuref_floats, cpuref_activation_create},
    {PN_LAYER_FULLY_CONNECTED, cpuref_floats, cpuref_fully_connected_create},
    {PN_LAYER_MATMUL, cpuref_unquantized, cpuref_matmul_create},
    {PN_LAYER_SOFTMAX, cpuref_floats, cpuref_softmax_create},
    {PN_LAYER_BATCH_NORMALIZATION, cpuref_floats, cpuref_batch_norm_create},
    {PN_LAYER_LOCAL_RESPONSE_NORMALIZATION, cpuref_floats, cpuref_lrn_create},
    {PN_LAYER_CONCAT, cpuref_any_type, cpuref_concat_create},
    {PN_LAYER_RESHAPE, cpuref_any_type, cpuref_reshape_create},
    {PN_LAYER_TRANSPOSE, cpuref_any_type, cpuref_transpose_create},
    {PN_LAYER_COPY, cpuref_any_type, cpuref_copy_create},
    {PN_LAYER_RECURRENT, cpuref_any_type, cpuref_recurrent_create},
    {PN_LAYER_GATHER, cpuref_any_type, cpuref_gather_create},
    {PN_LAYER_SCATTER, cpuref_unquantized, cpuref_scatter_create},
    {PN_LAYER_SLICE, cpuref_any_type, cpuref_slice_create},
    {PN_LAYER_SPLIT, cpuref_any_type, cpuref_split_create},
    {PN_LAYER_PAD, cpuref_any_type, cpuref_pad_create},
    {PN_LAYER_EXPAND, cpuref_any_type, cpuref_expand_create},
    {PN_LAYER_ONE_HOT, cpuref_any_type, cpuref_one_hot_create},
    {PN_LAYER_TRIANGULAR, cpuref_any_type, cpuref_triangular_create},
    {PN_LAYER_DATA_DEPENDENT, cpuref_unquantized, cpuref_data_dependent_create},
    {PN_LAYER_CONVOLUTION, cpuref_floats, cpuref_convolution_create},
    {PN_LAYER_POOLING, cpuref_unquantized, cpuref_pooling_create},
    {PN_LAYER_RESIZE, cpuref_unquantized, cpuref_resize_create},
    {PN_LAYER_REDUCE, cpuref_unquantized, cpuref_reduce_create},
    {PN_LAYER_NORMALIZATION, cpuref_any_type, cpuref_normalization_create},
    {PN_LAYER_TOP_K, cpuref_unquantized, cpuref_top_k_create},
    {PN_LAYER_CUMULATIVE, cpuref_unquantized, cpuref_cumulative_create},
    {PN_LAYER_ELEMENTWISE_UNARY, cpuref_unquantized, cpuref_unary_create},
    {PN_LAYER_SELECT, cpuref_unquantized, cpuref_select_create},
    {PN_LAYER_CAST, cpuref_unquantized, cpuref_cast_create},
    {PN_LAYER_QUANTIZATION, cpuref_any_type, cpuref_quantization_create},
    {PN_LAYER_QUANTIZED_CONVOLUTION, cpuref_any_type, cpuref_quantized_convolution_create},
    {PN_LAYER_QUANTIZED_MATMUL, cpuref_any_type, cpuref_quantized_matmul_create},
    {PN_LAYER_GRID_SAMPLE, cpuref_unquantized, cpuref_grid_sample_create},
    {PN_LAYER_ROI_ALIGN, cpuref_any_type, cpuref_roi_align_create},
    {PN_LAYER_DEFORMABLE_CONVOLUTION, cpuref_any_type, cpuref_deformable_convolution_create},
    {PN_LAYER_SPECTRAL, cpuref_any_type, cpuref_spectral_create},
    {PN_LAYER_LINEAR_ALGEBRA, cpuref_any_type, cpuref_linear_algebra_create},
    {PN_LAYER_BITCAST, cpuref_any_type, cpuref_bitcast_create},
    {PN_LAYER_RANDOM, cpuref_any_type, cpuref_random_create},
    {PN_LAYER_TREE_ENSEMBLE, cpuref_any_type, cpuref_tree_ensemble_create},
};

static const pn_plugin cpuref = {"CpuRef", kinds, sizeof(kinds) / sizeof(kinds[0]), NULL,
                                 PN_PLUGIN_SHAPES_AT_EXECUTE, NULL};

pn_status cpuref_create_workload(const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out) {
    return pn_plugin_create_workload(&cpuref, NULL, layer, workload_out, message_out);
}

/* ---- Element-type limits --------------------------------------------------------- */

pn_status cpuref_floats(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    pn_data_type dtype = layer->num_inputs > 0 ? layer->inputs[0].dtype : layer->outputs[0].dtype;
    if (!pn_dtype_is_float(dtype)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs %s on float types only; input 0 is %s",
                       plugin->id, pn_layer_kind_name(layer->kind), pn_dtype_name(dtype));
    }
    return pn_plugin_check_dtype(plugin, layer, dtype, reason);
}

/* A quantized tensor's value is quant_scale * (q - zero point): the one that holds it is named. */
static pn_status refuse_quantized(const pn_plugin* plugin, const pn_layer* layer,
                                  const pn_tensor_info* info, const char* role, uint32_t index,
                                  pn_string_out* reason) {
    if (!PN_HAS_FIELD(info, pn_tensor_info, quant_zero_point) || info->quant_scale == 0.0f) {
        return PN_OK;
    }
    return pn_fail(reason, PN_ERR_UNSUPPORTED,
                   "%s runs %s on plain tensors only; %s %u is quantized %s (quant_scale %g, "
                   "zero point %d), which it does not compute with", plugin->id,
                   pn_layer_kind_name(layer->kind), role, index, pn_dtype_name(info->dtype),
                   (double)info->quant_scale, (int)info->quant_zero_point);
}

pn_status cpuref_unquantized(const pn_plugin* plugin, const pn_layer* layer,
                             pn_string_out* reason) {
    pn_status s = PN_OK;
    for (uint32_t i = 0; s == PN_OK && i < layer->num_inputs; ++i) {
        s = refuse_quantized(plugin, layer, &layer->inputs[i], "input", i, reason);
    }
    for (uint32_t i = 0; s == PN_OK && i < layer->num_outputs; ++i) {
        s = refuse_quantized(plugin, layer, &layer->outputs[i], "output", i, reason);
    }
    return s;
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

/* CpuRef takes no options: list_options says so (no description). */
static pn_status backend_list_options(pn_backend* backend, const pn_option_info* const** options_out,
                                      uint32_t* count_out, pn_string_out* message_out) {
    (void)backend;
    if (options_out == NULL || count_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuRef list_options: an output pointer is NULL");
    }
    *options_out = NULL;
    *count_out = 0;
    return PN_OK;
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
        b->list_options = backend_list_options;
    }
    return b;
}
