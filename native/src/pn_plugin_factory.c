/* The plugin skeleton's workload factory (pn_plugin_factory_new: plain workloads, or ones that take
 * their shapes at execute, pn_shapes_at_execute.c) and a backend without state of its own. */
#include "plugnn/pn_plugin.h"

#include "plugnn/plugin_common.h"

#include <stdlib.h>
#include <string.h>

/* ---- The workload factory -------------------------------------------------- */

typedef struct plugin_factory {
    pn_workload_factory base;
    const pn_plugin* plugin;
    void* context; /* the factory's own copy, or NULL */
    size_t context_size;
} plugin_factory;

static void factory_destroy(pn_workload_factory* factory) {
    plugin_factory* f = (plugin_factory*)factory->self;
    free(f->context);
    free(f);
}

static pn_status factory_create_workload(pn_workload_factory* factory, const pn_layer* layer,
                                         pn_workload** workload_out, pn_string_out* message_out) {
    plugin_factory* f = (plugin_factory*)factory->self;
    if (f->plugin->flags & PN_PLUGIN_SHAPES_AT_EXECUTE) {
        if (layer == NULL || workload_out == NULL) { /* named as pn_plugin_create_workload names them */
            return pn_plugin_create_workload(f->plugin, f->context, layer, workload_out, message_out);
        }
        return pn_plugin_create_shaped_workload(f->plugin, f->context, f->context_size, layer, workload_out,
                                                message_out);
    }
    return pn_plugin_create_workload(f->plugin, f->context, layer, workload_out, message_out);
}

pn_status pn_plugin_factory_new(const pn_plugin* plugin, const void* context,
                                size_t context_size, pn_workload_factory** factory_out,
                                pn_string_out* message_out) {
    if (factory_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s create_workload_factory: factory_out is NULL", plugin->id);
    }
    plugin_factory* f = (plugin_factory*)calloc(1, sizeof(*f));
    void* copy = context_size > 0 ? malloc(context_size) : NULL;
    if (f == NULL || (context_size > 0 && copy == NULL)) {
        free(f);
        free(copy);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "%s: out of memory creating a workload factory", plugin->id);
    }
    if (copy != NULL) {
        memcpy(copy, context, context_size);
    }
    f->base.struct_size = (uint32_t)sizeof(pn_workload_factory);
    f->base.self = f;
    f->base.destroy = factory_destroy;
    f->base.create_workload = factory_create_workload;
    f->plugin = plugin;
    f->context = copy;
    f->context_size = context_size;
    *factory_out = &f->base;
    return PN_OK;
}

/* ---- A backend without state of its own ------------------------------------------ */

static void backend_destroy(pn_backend* backend) { free(backend); }

static pn_status backend_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                            pn_bool* supported_out, pn_string_out* reason_out) {
    return pn_plugin_is_layer_supported((const pn_plugin*)backend->self, layer, supported_out,
                                        reason_out);
}

static pn_status backend_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                                 pn_workload_factory** factory_out,
                                                 pn_string_out* message_out) {
    (void)mm;
    return pn_plugin_factory_new((const pn_plugin*)backend->self, NULL, 0, factory_out,
                                 message_out);
}

pn_backend* pn_plugin_backend_new(const pn_plugin* plugin) {
    pn_backend* b = (pn_backend*)calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->struct_size = (uint32_t)sizeof(pn_backend);
    b->flags = PN_BACKEND_HOST_MEMORY;
    b->self = (void*)plugin; /* only read back as const pn_plugin* */
    b->destroy = backend_destroy;
    b->is_layer_supported = backend_is_layer_supported;
    b->create_workload_factory = backend_create_workload_factory;
    return b;
}

