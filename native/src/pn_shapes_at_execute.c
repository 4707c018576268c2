/* Workloads that run at the shapes each execute() passes (PN_WORKLOAD_SHAPES_AT_EXECUTE,
 * backend_api.h 1.3), for every kind of a plugin built on the skeleton (pn_plugin.h).
 *
 * The workload wraps one the plugin made for the layer at its dims (the inner one) and keeps
 * its own copy of the layer. An execute() whose non-constant inputs or outputs have other dims
 * first makes the inner workload again at them: the inner one's reshape() where it has one
 * (prepacked weights shared), else the plugin's create (judged again by
 * pn_plugin_create_workload: the caller is never trusted); the old inner one is destroyed only
 * once the new one exists, so a refusal leaves the workload at its last dims. Scratch beyond
 * the workspace_bytes it was made with is its own. */
#include "plugnn/pn_plugin.h"

#include "plugnn/plugin_common.h"

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WORKSPACE_ALIGNMENT 64

typedef struct shaped_workload {
    pn_workload base;
    const pn_plugin* plugin;
    void* context;               /* own copy of the factory's context, or NULL */
    size_t context_size;
    pn_workload* inner;          /* the plugin's workload at the dims of `layer` */
    /* the layer at the inner workload's dims, every pointer owned here but the constants' data */
    pn_layer layer;
    char* name;
    void* descriptor;
    pn_activation_desc activation;
    char* label;                 /* a PRECOMPILED layer's label */
    uint32_t fixed;              /* inputs that keep their dims (pn_workload.fixed_inputs) */
    pn_tensor_info* inputs;
    pn_tensor_info* outputs;
    const void** constant_data;
    pn_tensor_info* trial;       /* scratch for the dims of the next layer (num_inputs + num_outputs) */
    void* scratch;               /* own workspace (aligned in scratch_raw) when the inner one needs more */
    void* scratch_raw;
    size_t scratch_bytes;
    /* held while `inner` is replaced (execute) or read by reshape(), which the ABI lets run on
     * another thread while this workload executes */
    unsigned char busy;
} shaped_workload;

static void lock(shaped_workload* w) {
    while (__atomic_test_and_set(&w->busy, __ATOMIC_ACQUIRE)) {
        sched_yield();
    }
}

static void unlock(shaped_workload* w) { __atomic_clear(&w->busy, __ATOMIC_RELEASE); }

/* Where a kind's descriptor points at a pn_activation_desc (backend_api.h 1.3: the only
 * pointers in descriptors but a PRECOMPILED one's payload, kept alive by the runtime, and label,
 * copied); -1: none. */
static ptrdiff_t activation_offset(pn_layer_kind kind) {
    switch (kind) {
    case PN_LAYER_CONVOLUTION_2D:
        return (ptrdiff_t)offsetof(pn_convolution_2d_desc, fused_activation);
    case PN_LAYER_ELEMENTWISE_BINARY:
        return (ptrdiff_t)offsetof(pn_elementwise_binary_desc, fused_activation);
    case PN_LAYER_FULLY_CONNECTED:
        return (ptrdiff_t)offsetof(pn_fully_connected_desc, fused_activation);
    case PN_LAYER_CONVOLUTION:
        return (ptrdiff_t)offsetof(pn_convolution_desc, fused_activation);
    default:
        return -1;
    }
}

static void copy_info(pn_tensor_info* dst, const pn_tensor_info* src) {
    memset(dst, 0, sizeof(*dst));
    size_t n = src->struct_size < sizeof(*dst) ? src->struct_size : sizeof(*dst);
    memcpy(dst, src, n);
    dst->struct_size = (uint32_t)sizeof(*dst);
    dst->extension = NULL;
}

static void release(shaped_workload* w) {
    if (w->inner != NULL) {
        w->inner->destroy(w->inner);
    }
    free(w->context);
    free(w->name);
    free(w->descriptor);
    free(w->label);
    free(w->inputs);
    free(w->outputs);
    free((void*)w->constant_data);
    free(w->trial);
    free(w->scratch_raw);
    free(w);
}

static void shaped_destroy(pn_workload* workload) { release((shaped_workload*)workload->self); }

/* The owned copy of `layer` in `w` (the constants' data borrowed, as the ABI lets it be). */
static int copy_layer(shaped_workload* w, const pn_layer* layer) {
    const uint32_t ni = layer->num_inputs, no = layer->num_outputs;
    w->name = (char*)malloc(strlen(layer->name) + 1);
    w->inputs = (pn_tensor_info*)calloc(ni > 0 ? ni : 1, sizeof(pn_tensor_info));
    w->outputs = (pn_tensor_info*)calloc(no > 0 ? no : 1, sizeof(pn_tensor_info));
    w->constant_data = (const void**)calloc(ni > 0 ? ni : 1, sizeof(void*));
    w->trial = (pn_tensor_info*)calloc(ni + no > 0 ? ni + no : 1, sizeof(pn_tensor_info));
    if (w->name == NULL || w->inputs == NULL || w->outputs == NULL || w->constant_data == NULL ||
        w->trial == NULL) {
        return 0;
    }
    strcpy(w->name, layer->name);
    for (uint32_t i = 0; i < ni; ++i) {
        copy_info(&w->inputs[i], &layer->inputs[i]);
        w->constant_data[i] = layer->constant_data != NULL ? layer->constant_data[i] : NULL;
    }
    for (uint32_t i = 0; i < no; ++i) {
        copy_info(&w->outputs[i], &layer->outputs[i]);
    }
    if (layer->descriptor != NULL) {
        uint32_t size = *(const uint32_t*)layer->descriptor;
        w->descriptor = malloc(size >= sizeof(uint32_t) ? size : sizeof(uint32_t));
        if (w->descriptor == NULL) {
            return 0;
        }
        memcpy(w->descriptor, layer->descriptor, size >= sizeof(uint32_t) ? size : sizeof(uint32_t));
        if (layer->kind == PN_LAYER_PRECOMPILED && size >= sizeof(pn_precompiled_desc)) {
            pn_precompiled_desc* d = (pn_precompiled_desc*)w->descriptor;
            if (d->label != NULL) { /* the caller's, for the call: copied */
                w->label = (char*)malloc(strlen(d->label) + 1);
                if (w->label == NULL) {
                    return 0;
                }
                strcpy(w->label, d->label);
                d->label = w->label;
            }
            d->release_payload = NULL; /* the runtime's to call, never the workload's */
        }
        ptrdiff_t at = activation_offset(layer->kind);
        if (at >= 0 && (size_t)at + sizeof(void*) <= size) {
            const pn_activation_desc* act;
            memcpy(&act, (const char*)layer->descriptor + at, sizeof(act));
            if (act != NULL) {
                memset(&w->activation, 0, sizeof(w->activation));
                memcpy(&w->activation, act, act->struct_size < sizeof(w->activation) ? act->struct_size
                                                                                       : sizeof(w->activation));
                w->activation.struct_size = (uint32_t)sizeof(w->activation);
                act = &w->activation;
                memcpy((char*)w->descriptor + at, &act, sizeof(act));
            }
        }
    }
    memset(&w->layer, 0, sizeof(w->layer));
    w->layer.struct_size = (uint32_t)sizeof(w->layer);
    w->layer.kind = layer->kind;
    w->layer.name = w->name;
    w->layer.descriptor = w->descriptor;
    w->layer.num_inputs = ni;
    w->layer.inputs = w->inputs;
    w->layer.constant_data = layer->constant_data != NULL ? w->constant_data : NULL;
    w->layer.num_outputs = no;
    w->layer.outputs = w->outputs;
    return 1;
}

static int same_dims(const pn_tensor_info* a, const pn_tensor_info* b) {
    return a->rank == b->rank && (a->rank == 0 || memcmp(a->dims, b->dims, a->rank * sizeof(int64_t)) == 0);
}

/* Whether `args` holds the layer's tensors at other dims; the arguments' own faults are left to
 * the inner workload's checks. */
static int dims_differ(const shaped_workload* w, const pn_execute_args* args) {
    if (args == NULL || args->num_inputs != w->layer.num_inputs || args->num_outputs != w->layer.num_outputs ||
        (args->num_inputs > 0 && args->inputs == NULL) || (args->num_outputs > 0 && args->outputs == NULL)) {
        return 0;
    }
    for (uint32_t i = 0; i < args->num_inputs; ++i) {
        if (args->inputs[i].info != NULL && !same_dims(args->inputs[i].info, &w->inputs[i])) {
            return 1;
        }
    }
    for (uint32_t i = 0; i < args->num_outputs; ++i) {
        if (args->outputs[i].info != NULL && !same_dims(args->outputs[i].info, &w->outputs[i])) {
            return 1;
        }
    }
    return 0;
}

/* The tensor `info` of `role` `index` may take the place of `had` at other dims: same element
 * type and rank (and, for a constant, the same dims). */
static pn_status judge(const shaped_workload* w, const char* role, uint32_t index, const pn_tensor_info* info,
                       const pn_tensor_info* had, int constant, pn_string_out* message_out) {
    if (info == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "%s layer '%s': execute() %s %u has no info",
                       w->plugin->id, w->name, role, index);
    }
    if (info->dtype != had->dtype || info->rank != had->rank) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s layer '%s': execute() %s %u is %s of rank %u, the layer's %s of rank %u (only dims "
                       "may change at execute)", w->plugin->id, w->name, role, index, pn_dtype_name(info->dtype),
                       info->rank, pn_dtype_name(had->dtype), had->rank);
    }
    if (constant && !same_dims(info, had)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s layer '%s': execute() gives input %u, whose dims are fixed (a constant, or "
                       "in pn_workload.fixed_inputs), other dims than the layer's",
                       w->plugin->id, w->name, index);
    }
    return PN_OK;
}

/* Make the inner workload again at the dims of `args`; on failure nothing changes. */
static pn_status replan(shaped_workload* w, const pn_execute_args* args, pn_string_out* message_out) {
    const uint32_t ni = w->layer.num_inputs, no = w->layer.num_outputs;
    pn_tensor_info* in = w->trial;
    pn_tensor_info* out = w->trial + ni;
    for (uint32_t i = 0; i < ni; ++i) {
        const pn_tensor_info* info = args->inputs[i].info;
        const int fixed = w->constant_data[i] != NULL || (w->fixed >> (i < 31 ? i : 31)) & 1u;
        pn_status s = judge(w, "input", i, info, &w->inputs[i], fixed, message_out);
        if (s != PN_OK) {
            return s;
        }
        in[i] = w->inputs[i];
        memcpy(in[i].dims, info->dims, sizeof(in[i].dims));
    }
    for (uint32_t i = 0; i < no; ++i) {
        const pn_tensor_info* info = args->outputs[i].info;
        pn_status s = judge(w, "output", i, info, &w->outputs[i], 0, message_out);
        if (s != PN_OK) {
            return s;
        }
        out[i] = w->outputs[i];
        memcpy(out[i].dims, info->dims, sizeof(out[i].dims));
    }
    pn_layer layer = w->layer;
    layer.inputs = in;
    layer.outputs = out;
    pn_workload* made = NULL;
    pn_status s = PN_ERR_UNSUPPORTED;
    if (PN_HAS_FIELD(w->inner, pn_workload, reshape) && w->inner->reshape != NULL) {
        s = w->inner->reshape(w->inner, &layer, &made, message_out);
    }
    if (s == PN_ERR_UNSUPPORTED) {
        made = NULL;
        s = pn_plugin_create_workload(w->plugin, w->context, &layer, &made, message_out);
    }
    if (s != PN_OK) {
        return s;
    }
    if (made == NULL) {
        return pn_fail(message_out, PN_ERR_INTERNAL, "%s layer '%s': no workload at the new dims", w->plugin->id,
                       w->name);
    }
    size_t need = made->workspace_bytes;
    if (need > w->base.workspace_bytes && need > w->scratch_bytes) {
        size_t bytes = (need + WORKSPACE_ALIGNMENT - 1) / WORKSPACE_ALIGNMENT * WORKSPACE_ALIGNMENT;
        void* raw = malloc(bytes + WORKSPACE_ALIGNMENT);
        if (raw == NULL) {
            made->destroy(made);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "%s layer '%s': out of memory for %zu bytes of "
                           "workspace", w->plugin->id, w->name, need);
        }
        free(w->scratch_raw);
        w->scratch_raw = raw;
        w->scratch = (void*)(((uintptr_t)raw + WORKSPACE_ALIGNMENT - 1) / WORKSPACE_ALIGNMENT * WORKSPACE_ALIGNMENT);
        w->scratch_bytes = bytes;
    }
    lock(w);
    pn_workload* old = w->inner;
    w->inner = made;
    unlock(w);
    old->destroy(old);
    memcpy(w->inputs, in, ni * sizeof(*in));
    memcpy(w->outputs, out, no * sizeof(*out));
    return PN_OK;
}

static pn_status shaped_execute(pn_workload* workload, const pn_execute_args* args, pn_string_out* message_out) {
    shaped_workload* w = (shaped_workload*)workload->self;
    if (dims_differ(w, args)) {
        pn_status s = replan(w, args, message_out);
        if (s != PN_OK) {
            return s;
        }
    }
    if (w->inner->workspace_bytes > w->base.workspace_bytes) {
        pn_execute_args own = *args;
        own.workspace = w->scratch;
        return w->inner->execute(w->inner, &own, message_out);
    }
    return w->inner->execute(w->inner, args, message_out);
}

static pn_status shaped_read_profile(pn_workload* workload, pn_profile_entry* entries, uint32_t capacity,
                                     uint32_t* count_out, pn_string_out* message_out) {
    shaped_workload* w = (shaped_workload*)workload->self;
    if (!PN_HAS_FIELD(w->inner, pn_workload, read_profile) || w->inner->read_profile == NULL) {
        if (count_out != NULL) {
            *count_out = 0;
        }
        return pn_fail(message_out, PN_ERR_INVALID_STATE, "%s layer '%s': its workload at these dims reports "
                       "no parts", w->plugin->id, w->name);
    }
    return w->inner->read_profile(w->inner, entries, capacity, count_out, message_out);
}

static pn_status wrap(const pn_plugin* plugin, const void* context, size_t context_size, const pn_layer* layer,
                      uint32_t fixed, pn_workload* inner, pn_workload** workload_out, pn_string_out* message_out);

static pn_status shaped_reshape(pn_workload* workload, const pn_layer* layer, pn_workload** workload_out,
                                pn_string_out* message_out) {
    shaped_workload* w = (shaped_workload*)workload->self;
    if (layer == NULL || workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "%s reshape: %s is NULL", w->plugin->id,
                       layer == NULL ? "layer" : "workload_out");
    }
    *workload_out = NULL;
    pn_workload* made = NULL;
    pn_status s = PN_ERR_UNSUPPORTED;
    lock(w);
    if (PN_HAS_FIELD(w->inner, pn_workload, reshape) && w->inner->reshape != NULL) {
        s = w->inner->reshape(w->inner, layer, &made, message_out);
    }
    unlock(w);
    if (s == PN_ERR_UNSUPPORTED) {
        made = NULL;
        s = pn_plugin_create_workload(w->plugin, w->context, layer, &made, message_out);
    }
    if (s != PN_OK) {
        return s;
    }
    return wrap(w->plugin, w->context, w->context_size, layer, w->fixed, made, workload_out,
                message_out);
}

static pn_status wrap(const pn_plugin* plugin, const void* context, size_t context_size, const pn_layer* layer,
                      uint32_t fixed, pn_workload* inner, pn_workload** workload_out, pn_string_out* message_out) {
    shaped_workload* w = (shaped_workload*)calloc(1, sizeof(*w));
    if (w != NULL) {
        w->plugin = plugin;
        w->fixed = fixed;
        w->inner = inner;
        w->context_size = context_size;
        w->context = context_size > 0 ? malloc(context_size) : NULL;
    }
    if (w == NULL || (context_size > 0 && w->context == NULL) || !copy_layer(w, layer)) {
        if (w != NULL) {
            release(w);
        } else {
            inner->destroy(inner);
        }
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "%s: out of memory creating the workload of layer '%s'",
                       plugin->id, layer->name != NULL ? layer->name : "?");
    }
    if (context_size > 0) {
        memcpy(w->context, context, context_size);
    }
    w->base.struct_size = (uint32_t)sizeof(w->base);
    w->base.self = w;
    w->base.destroy = shaped_destroy;
    w->base.execute = shaped_execute;
    w->base.workspace_bytes = inner->workspace_bytes;
    w->base.reshape = shaped_reshape;
    w->base.read_profile = PN_HAS_FIELD(inner, pn_workload, read_profile) && inner->read_profile != NULL
                               ? shaped_read_profile : NULL;
    w->base.flags = PN_WORKLOAD_SHAPES_AT_EXECUTE;
    w->base.fixed_inputs = fixed;
    *workload_out = &w->base;
    return PN_OK;
}

pn_status pn_plugin_create_shaped_workload(const pn_plugin* plugin, const void* context, size_t context_size,
                                           const pn_layer* layer, pn_workload** workload_out,
                                           pn_string_out* message_out) {
    pn_workload* inner = NULL;
    pn_status s = pn_plugin_create_workload(plugin, (void*)context, layer, &inner, message_out);
    if (s != PN_OK) {
        return s;
    }
    /* Data-dependent layers report their outputs' dims; fused layers' payloads are made for
     * their dims unless the plugin says otherwise: those keep the dims they were made for. */
    uint32_t fixed = 0;
    const int keep = layer->kind == PN_LAYER_DATA_DEPENDENT || layer->name == NULL ||
                     (layer->kind == PN_LAYER_PRECOMPILED &&
                      (plugin->precompiled_at_execute == NULL || !plugin->precompiled_at_execute(layer, &fixed)));
    if (keep) {
        *workload_out = inner;
        return PN_OK;
    }
    return wrap(plugin, context, context_size, layer, fixed, inner, workload_out, message_out);
}
