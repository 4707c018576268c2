/*
 * A plugin built against the 1.0 header, kept as it was: it includes
 * plugins/mocks/abi_1_0/plugnn/backend_api.h (a frozen copy of the 1.0 header)
 * and no other plugnn code, as a third-party plugin compiled against plugnn 1.0
 * would be. It runs ACTIVATION RELU and ELEMENTWISE_BINARY ADD on float32
 * tensors of one shape and refuses everything else with a reason, which is how a
 * 1.0 plugin meets what a newer runtime sends (new kinds, operations and element
 * types are values it does not know).
 */
#include "plugnn/backend_api.h"

#if PLUGNN_BACKEND_API_VERSION_MAJOR != 1 || PLUGNN_BACKEND_API_VERSION_MINOR != 0
#error "abi_1_0_backend.c must be built against the frozen 1.0 header"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define ID "MockAbi10"

static pn_status say(pn_string_out* out, pn_status status, const char* fmt, ...) {
    if (out != NULL && out->data != NULL && out->capacity > 0) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(out->data, out->capacity, fmt, args);
        va_end(args);
    }
    return status;
}

static int64_t elements(const pn_tensor_info* info) {
    int64_t n = 1;
    for (uint32_t i = 0; i < info->rank && i < PN_MAX_DIMS; ++i) {
        n *= info->dims[i];
    }
    return n;
}

static int same_dims(const pn_tensor_info* a, const pn_tensor_info* b) {
    if (a->rank != b->rank || a->rank > PN_MAX_DIMS) {
        return 0;
    }
    for (uint32_t i = 0; i < a->rank; ++i) {
        if (a->dims[i] != b->dims[i]) {
            return 0;
        }
    }
    return 1;
}

/* PN_OK when this plugin runs `layer`, else PN_ERR_UNSUPPORTED with the reason. */
static pn_status judge(const pn_layer* layer, pn_string_out* reason) {
    if (layer->kind != PN_LAYER_ACTIVATION && layer->kind != PN_LAYER_ELEMENTWISE_BINARY) {
        return say(reason, PN_ERR_UNSUPPORTED, ID " (ABI 1.0) runs Activation and ElementwiseBinary only, "
                   "not layer kind %d", (int)layer->kind);
    }
    uint32_t inputs = layer->kind == PN_LAYER_ACTIVATION ? 1 : 2;
    if (layer->num_inputs != inputs || layer->num_outputs != 1 || layer->descriptor == NULL) {
        return say(reason, PN_ERR_UNSUPPORTED, ID ": expected %u input(s), 1 output and a descriptor",
                   inputs);
    }
    for (uint32_t i = 0; i < inputs; ++i) {
        if (layer->inputs[i].dtype != PN_DTYPE_FLOAT32 || !same_dims(&layer->inputs[i], layer->outputs)) {
            return say(reason, PN_ERR_UNSUPPORTED, ID " runs float32 tensors of one shape only (input %u)", i);
        }
    }
    if (layer->outputs[0].dtype != PN_DTYPE_FLOAT32) {
        return say(reason, PN_ERR_UNSUPPORTED, ID " runs float32 tensors only (the output)");
    }
    if (layer->kind == PN_LAYER_ACTIVATION) {
        const pn_activation_desc* d = (const pn_activation_desc*)layer->descriptor;
        if (d->kind != PN_ACTIVATION_RELU) {
            return say(reason, PN_ERR_UNSUPPORTED, ID " runs the RELU activation only, not kind %d",
                       (int)d->kind);
        }
    } else {
        const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
        if (d->op != PN_BINARY_ADD || d->fused_activation != NULL) {
            return say(reason, PN_ERR_UNSUPPORTED, ID " runs ADD without a fused activation only, not "
                       "operation %d", (int)d->op);
        }
    }
    return PN_OK;
}

/* ---- Workloads -------------------------------------------------------------------- */

typedef struct abi10_workload {
    pn_workload base;
    int add;        /* ADD, else RELU */
    int64_t count;
} abi10_workload;

static void workload_destroy(pn_workload* workload) { free(workload->self); }

static pn_status workload_execute(pn_workload* workload, const pn_execute_args* args,
                                  pn_string_out* message_out) {
    abi10_workload* w = (abi10_workload*)workload->self;
    uint32_t inputs = w->add ? 2u : 1u;
    if (args == NULL || args->num_inputs != inputs || args->num_outputs != 1) {
        return say(message_out, PN_ERR_INVALID_ARGUMENT, ID ": execute expects %u input(s), 1 output", inputs);
    }
    const float* a = (const float*)args->inputs[0].data;
    const float* b = w->add ? (const float*)args->inputs[1].data : NULL;
    float* y = (float*)args->outputs[0].data;
    for (int64_t i = 0; i < w->count; ++i) {
        y[i] = w->add ? a[i] + b[i] : (a[i] > 0.0f ? a[i] : 0.0f);
    }
    return PN_OK;
}

typedef struct abi10_factory {
    pn_workload_factory base;
} abi10_factory;

static void factory_destroy(pn_workload_factory* factory) { free(factory->self); }

static pn_status factory_create_workload(pn_workload_factory* factory, const pn_layer* layer,
                                         pn_workload** workload_out, pn_string_out* message_out) {
    (void)factory;
    if (layer == NULL || workload_out == NULL) {
        return say(message_out, PN_ERR_INVALID_ARGUMENT, ID ": create_workload got NULL");
    }
    *workload_out = NULL;
    pn_status s = judge(layer, message_out);
    if (s != PN_OK) {
        return s;
    }
    abi10_workload* w = (abi10_workload*)calloc(1, sizeof(*w));
    if (w == NULL) {
        return say(message_out, PN_ERR_OUT_OF_MEMORY, ID ": out of memory");
    }
    w->base.struct_size = (uint32_t)sizeof(pn_workload);
    w->base.self = w;
    w->base.destroy = workload_destroy;
    w->base.execute = workload_execute;
    w->add = layer->kind == PN_LAYER_ELEMENTWISE_BINARY;
    w->count = elements(layer->outputs);
    *workload_out = &w->base;
    return PN_OK;
}

/* ---- The backend ------------------------------------------------------------------ */

static void backend_destroy(pn_backend* backend) { free(backend); }

static pn_status backend_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                            pn_bool* supported_out, pn_string_out* reason_out) {
    (void)backend;
    if (layer == NULL || supported_out == NULL) {
        return say(reason_out, PN_ERR_INVALID_ARGUMENT, ID ": is_layer_supported got NULL");
    }
    *supported_out = judge(layer, reason_out) == PN_OK;
    return PN_OK;
}

static pn_status backend_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                                 pn_workload_factory** factory_out,
                                                 pn_string_out* message_out) {
    (void)backend;
    (void)mm;
    abi10_factory* f = (abi10_factory*)calloc(1, sizeof(*f));
    if (f == NULL || factory_out == NULL) {
        free(f);
        return say(message_out, PN_ERR_OUT_OF_MEMORY, ID ": cannot create a factory");
    }
    f->base.struct_size = (uint32_t)sizeof(pn_workload_factory);
    f->base.self = f;
    f->base.destroy = factory_destroy;
    f->base.create_workload = factory_create_workload;
    *factory_out = &f->base;
    return PN_OK;
}

PLUGNN_BACKEND_EXPORT const char* GetBackendId(void) { return ID; }

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
    return b;
}
