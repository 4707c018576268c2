/* The plugin skeleton (pn_plugin.h): layer judgement, is_layer_supported, create_workload, the
 * element-type rule (the factory and a stateless backend: pn_plugin_factory.c). */
#include "plugnn/pn_plugin.h"

#include "plugnn/plugin_common.h"
#include "plugnn/pn_validate.h"

#include <stdlib.h>
#include <string.h>

static const pn_plugin_kind* find_kind(const pn_plugin* plugin, pn_layer_kind kind) {
    for (size_t i = 0; i < plugin->num_kinds; ++i) {
        if (plugin->kinds[i].kind == kind) {
            return &plugin->kinds[i];
        }
    }
    return NULL;
}

pn_status pn_plugin_check_layer(const pn_plugin* plugin, const pn_layer* layer,
                                pn_string_out* reason) {
    pn_status s = pn_validate_layer(layer, reason);
    if (s == PN_ERR_UNSUPPORTED) { /* pn_validate_layer's one UNSUPPORTED: an unknown kind */
        return pn_fail(reason, s, "%s does not know layer kind %d", plugin->id, (int)layer->kind);
    }
    if (s != PN_OK) {
        return s;
    }
    const pn_plugin_kind* entry = find_kind(plugin, layer->kind);
    if (entry == NULL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s has no %s kernel", plugin->id,
                       pn_layer_kind_name(layer->kind));
    }
    return entry->check != NULL ? entry->check(plugin, layer, reason) : PN_OK;
}

pn_status pn_plugin_is_layer_supported(const pn_plugin* plugin, const pn_layer* layer,
                                       pn_bool* supported_out, pn_string_out* reason_out) {
    if (layer == NULL || supported_out == NULL) {
        return pn_fail(reason_out, PN_ERR_INVALID_ARGUMENT, "%s is_layer_supported: %s is NULL",
                       plugin->id, layer == NULL ? "layer" : "supported_out");
    }
    *supported_out = pn_plugin_check_layer(plugin, layer, reason_out) == PN_OK ? 1 : 0;
    return PN_OK;
}

pn_status pn_plugin_create_workload(const pn_plugin* plugin, void* context,
                                    const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out) {
    if (layer == NULL || workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "%s create_workload: %s is NULL",
                       plugin->id, layer == NULL ? "layer" : "workload_out");
    }
    *workload_out = NULL;
    if (plugin->create_precompiled != NULL && PN_HAS_FIELD(layer, pn_layer, kind) &&
        layer->kind == PN_LAYER_PRECOMPILED) {
        pn_status s = pn_validate_layer(layer, message_out);
        return s != PN_OK ? s : plugin->create_precompiled(context, layer, workload_out, message_out);
    }
    pn_status s = pn_plugin_check_layer(plugin, layer, message_out); /* never trust the caller */
    if (s != PN_OK) {
        return s;
    }
    return find_kind(plugin, layer->kind)->create(context, layer, workload_out, message_out);
}

/* ---- Element types ------------------------------------------------------------ */

pn_status pn_plugin_check_dtype(const pn_plugin* plugin, const pn_layer* layer,
                                pn_data_type dtype, pn_string_out* reason) {
    const char* role = NULL;
    uint32_t index = 0;
    pn_data_type found = dtype;
    for (uint32_t i = 0; role == NULL && i < layer->num_inputs; ++i) {
        if (layer->inputs[i].dtype != dtype) {
            role = "input";
            index = i;
            found = layer->inputs[i].dtype;
        }
    }
    for (uint32_t i = 0; role == NULL && i < layer->num_outputs; ++i) {
        if (layer->outputs[i].dtype != dtype) {
            role = "output";
            index = i;
            found = layer->outputs[i].dtype;
        }
    }
    if (role == NULL) {
        return PN_OK;
    }
    return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs %s on %s only; %s %u is %s", plugin->id,
                   pn_layer_kind_name(layer->kind), pn_dtype_name(dtype), role, index,
                   pn_dtype_name(found));
}

pn_status pn_plugin_float32_only(const pn_plugin* plugin, const pn_layer* layer,
                                 pn_string_out* reason) {
    return pn_plugin_check_dtype(plugin, layer, PN_DTYPE_FLOAT32, reason);
}
