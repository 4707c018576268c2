/* CpuRef entry points and backend object. */
#include "cpuref.h"

#include <stdlib.h>

typedef struct cpuref_backend {
    pn_backend base;
} cpuref_backend;

/* ---- Dispatch table ------------------------------------------------------ */

typedef pn_status (*cpuref_validate_fn)(const pn_layer* layer, pn_string_out* reason);

typedef struct cpuref_kind_entry {
    cpuref_validate_fn validate; /* the shared shape/descriptor rules of the kind */
    cpuref_create_fn create;     /* the family's workload constructor */
} cpuref_kind_entry;

/* Indexed by pn_layer_kind; an entry without create is a kind CpuRef refuses. */
static const cpuref_kind_entry kinds[] = {
    [PN_LAYER_CONVOLUTION_2D] = {pn_validate_convolution_2d, cpuref_conv2d_create},
    [PN_LAYER_POOLING_2D] = {pn_validate_pooling_2d, cpuref_pooling2d_create},
    [PN_LAYER_ELEMENTWISE_BINARY] = {pn_validate_elementwise_binary, cpuref_binary_create},
    [PN_LAYER_ELEMENTWISE_VARIADIC] = {pn_validate_elementwise_variadic, cpuref_variadic_create},
    [PN_LAYER_ACTIVATION] = {pn_validate_activation, cpuref_activation_create},
    [PN_LAYER_FULLY_CONNECTED] = {pn_validate_fully_connected, cpuref_fully_connected_create},
    [PN_LAYER_MATMUL] = {pn_validate_matmul, cpuref_matmul_create},
    [PN_LAYER_SOFTMAX] = {pn_validate_softmax, cpuref_softmax_create},
    [PN_LAYER_BATCH_NORMALIZATION] = {pn_validate_batch_normalization, cpuref_batch_norm_create},
    [PN_LAYER_LOCAL_RESPONSE_NORMALIZATION] = {pn_validate_lrn, cpuref_lrn_create},
    [PN_LAYER_CONCAT] = {pn_validate_concat, cpuref_concat_create},
    [PN_LAYER_RESHAPE] = {pn_validate_reshape, cpuref_reshape_create},
    [PN_LAYER_TRANSPOSE] = {pn_validate_transpose, cpuref_transpose_create},
    [PN_LAYER_COPY] = {pn_validate_copy, cpuref_copy_create},
    [PN_LAYER_PRECOMPILED] = {NULL, NULL},
};

#define NUM_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* CpuRef computes in float32 only (for now). */
static pn_status check_dtypes(const pn_layer* layer, pn_string_out* reason) {
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        if (layer->inputs[i].dtype != PN_DTYPE_FLOAT32) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED,
                           "CpuRef supports float32 only; input %u is %s", i,
                           pn_dtype_name(layer->inputs[i].dtype));
        }
    }
    for (uint32_t i = 0; i < layer->num_outputs; ++i) {
        if (layer->outputs[i].dtype != PN_DTYPE_FLOAT32) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED,
                           "CpuRef supports float32 only; output %u is %s", i,
                           pn_dtype_name(layer->outputs[i].dtype));
        }
    }
    return PN_OK;
}

/* Everything CpuRef needs of a layer before it builds a workload:
 * PN_ERR_INVALID_ARGUMENT for a malformed layer, PN_ERR_UNSUPPORTED for a
 * well-formed one CpuRef cannot run, each with a reason. */
static pn_status check_layer(const pn_layer* layer, pn_string_out* reason) {
    pn_status s = pn_validate_common(layer, reason);
    if (s != PN_OK) {
        return s;
    }
    if ((size_t)layer->kind >= NUM_KINDS || kinds[layer->kind].create == NULL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "CpuRef has no %s kernel",
                       pn_layer_kind_name(layer->kind));
    }
    s = check_dtypes(layer, reason);
    if (s != PN_OK) {
        return s;
    }
    return kinds[layer->kind].validate(layer, reason);
}

/* ---- Backend and factory ------------------------------------------------- */

static void backend_destroy(pn_backend* backend) { free(backend); }

static pn_status backend_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                            pn_bool* supported_out, pn_string_out* reason_out) {
    (void)backend;
    if (supported_out == NULL || layer == NULL) {
        return pn_fail(reason_out, PN_ERR_INVALID_ARGUMENT, "is_layer_supported: %s is NULL",
                       layer == NULL ? "layer" : "supported_out");
    }
    if (check_layer(layer, reason_out) != PN_OK) {
        *supported_out = 0;
        return PN_OK;
    }
    *supported_out = 1;
    return PN_OK;
}

typedef struct cpuref_factory {
    pn_workload_factory base;
} cpuref_factory;

static void factory_destroy(pn_workload_factory* factory) { free(factory); }

static pn_status factory_create_workload(pn_workload_factory* factory, const pn_layer* layer,
                                         pn_workload** workload_out, pn_string_out* message_out) {
    (void)factory;
    if (workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "workload_out is NULL");
    }
    *workload_out = NULL;
    pn_status s = check_layer(layer, message_out); /* never trust the caller */
    if (s != PN_OK) {
        return s;
    }
    return kinds[layer->kind].create(layer, workload_out, message_out);
}

static pn_status backend_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                                 pn_workload_factory** factory_out,
                                                 pn_string_out* message_out) {
    (void)backend;
    (void)mm;
    if (factory_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "factory_out is NULL");
    }
    cpuref_factory* f = (cpuref_factory*)calloc(1, sizeof(*f));
    if (f == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "out of memory creating a workload factory");
    }
    f->base.struct_size = (uint32_t)sizeof(pn_workload_factory);
    f->base.self = f;
    f->base.destroy = factory_destroy;
    f->base.create_workload = factory_create_workload;
    *factory_out = &f->base;
    return PN_OK;
}

static pn_status backend_set_option(pn_backend* backend, const char* key, const char* value,
                                    pn_string_out* message_out) {
    (void)backend;
    (void)value;
    return pn_fail(message_out, PN_ERR_NOT_FOUND, "CpuRef has no option '%s' (it takes none)", key);
}

PLUGNN_BACKEND_EXPORT const char* GetBackendId(void) { return "CpuRef"; }

PLUGNN_BACKEND_EXPORT void GetVersion(uint32_t* major_out, uint32_t* minor_out) {
    *major_out = PLUGNN_BACKEND_API_VERSION_MAJOR;
    *minor_out = PLUGNN_BACKEND_API_VERSION_MINOR;
}

PLUGNN_BACKEND_EXPORT void* BackendFactory(void) {
    cpuref_backend* b = (cpuref_backend*)calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->base.struct_size = (uint32_t)sizeof(pn_backend);
    b->base.flags = PN_BACKEND_HOST_MEMORY;
    b->base.self = b;
    b->base.destroy = backend_destroy;
    b->base.is_layer_supported = backend_is_layer_supported;
    b->base.create_workload_factory = backend_create_workload_factory;
    b->base.set_option = backend_set_option;
    return &b->base;
}
