/*
 * plugnn plugin skeleton: the part of a backend that is the same in every
 * backend (judging a layer, is_layer_supported, the workload factory), so that
 * a backend writes only what is its own. A backend describes itself with one
 * static pn_plugin: its id and, for each kind it runs, its own limits (check)
 * and its workload constructor (create).
 *
 * pn_plugin_check_layer judges a layer in one order for every backend, so one
 * layer gets the same reason from each; the first failing step answers:
 *   1. the layer is well formed (pn_validate_common)     else PN_ERR_INVALID_ARGUMENT
 *   2. plugin_common knows its kind (pn_kinds.h)        else PN_ERR_UNSUPPORTED,
 *                                                       "<id> does not know layer kind N"
 *   3. the kind's shared validator passes               else PN_ERR_INVALID_ARGUMENT
 *   4. the plugin has an entry for the kind             else PN_ERR_UNSUPPORTED,
 *                                                       "<id> has no <Kind> kernel"
 *   5. the entry's check passes (the backend's limits)  else its status and reason
 * (steps 1-3 are pn_validate_layer, pn_validate.h). Reasons go to the caller's
 * pn_string_out (truncated; none when it or its data is NULL).
 *
 * Part of plugnn::plugin_common (not of the ABI). A plugin using the skeleton
 * still exports only its three entry points.
 */
#ifndef PLUGNN_PN_PLUGIN_H
#define PLUGNN_PN_PLUGIN_H

#include "plugnn/backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pn_plugin pn_plugin;

/* A backend's own limits for one kind (element types included), run only after
 * the shared checks accepted the layer: PN_OK to run it, else
 * PN_ERR_UNSUPPORTED with a reason that names plugin->id and what it does not
 * do ("CpuAcc runs Convolution2d on float32 only; ..."). */
typedef pn_status (*pn_plugin_check_fn)(const pn_plugin* plugin, const pn_layer* layer,
                                        pn_string_out* reason);

/* The workload of a layer pn_plugin_check_layer accepted. `context` is the
 * factory's copy of the context given to pn_plugin_factory_new (NULL when it
 * was given none). On success *workload_out is the caller's, released with its
 * destroy(); on failure the reason is written and *workload_out stays NULL.
 * The layer is borrowed for the call: the workload copies what it keeps. */
typedef pn_status (*pn_plugin_create_fn)(void* context, const pn_layer* layer,
                                         pn_workload** workload_out, pn_string_out* message_out);

/* One kind a backend runs. */
typedef struct pn_plugin_kind {
    pn_layer_kind kind;
    pn_plugin_check_fn check;   /* NULL: no limit beyond the shared checks */
    pn_plugin_create_fn create; /* never NULL */
} pn_plugin_kind;

/* A backend, as the skeleton sees it: static, alive as long as the plugin. */
struct pn_plugin {
    const char* id;              /* the backend id (what GetBackendId returns), in messages */
    const pn_plugin_kind* kinds; /* the kinds it runs, each at most once */
    size_t num_kinds;
    /* The workload of a PN_LAYER_PRECOMPILED layer, which only this backend's own
     * optimize_subgraph makes: pn_plugin_create_workload calls it for such a layer
     * once pn_validate_layer passed (the payload is for it to judge). NULL: none;
     * pn_plugin_check_layer refuses PRECOMPILED layers either way, unless `kinds`
     * has an entry for them. */
    pn_plugin_create_fn create_precompiled;
    /* PN_PLUGIN_* bits (0 in a table that names none). */
    uint32_t flags;
    /* With PN_PLUGIN_SHAPES_AT_EXECUTE, optional (NULL: none does): whether the
     * workload of a PRECOMPILED layer takes other dims at execute (its
     * create_precompiled then makes it at them from the same payload): 1 with
     * the inputs that must keep their dims in *fixed_inputs
     * (pn_workload.fixed_inputs), else 0. */
    int (*precompiled_at_execute)(const pn_layer* layer, uint32_t* fixed_inputs);
};

/* pn_plugin.flags: the workloads pn_plugin_factory_new's factory makes run at the
 * shapes each execute() passes (backend_api.h 1.3, PN_WORKLOAD_SHAPES_AT_EXECUTE):
 * every kind but DATA_DEPENDENT and PRECOMPILED (whose payloads are made for
 * their dims, unless precompiled_at_execute says otherwise) gets
 * pn_plugin_create_shaped_workload's workload. A plugin sets it
 * when every create of its table copies what it keeps from the layer (the
 * skeleton's rule) and its shared state is a pn_shared (reference counted
 * atomically). */
#define PN_PLUGIN_SHAPES_AT_EXECUTE 0x1u

/* The whole judgement of `layer` (the order above): PN_OK when the plugin runs
 * it, else PN_ERR_INVALID_ARGUMENT (malformed) or PN_ERR_UNSUPPORTED (well
 * formed, not for this backend), the reason in `reason` (may be NULL).
 * `layer` may be NULL (PN_ERR_INVALID_ARGUMENT). */
pn_status pn_plugin_check_layer(const pn_plugin* plugin, const pn_layer* layer,
                                pn_string_out* reason);

/* pn_backend.is_layer_supported: *supported_out = 1, or 0 with the reason of
 * pn_plugin_check_layer in reason_out; PN_OK either way. The query itself
 * fails (PN_ERR_INVALID_ARGUMENT, *supported_out untouched) only when `layer`
 * or `supported_out` is NULL. */
pn_status pn_plugin_is_layer_supported(const pn_plugin* plugin, const pn_layer* layer,
                                       pn_bool* supported_out, pn_string_out* reason_out);

/* pn_workload_factory.create_workload: NULL arguments are
 * PN_ERR_INVALID_ARGUMENT; a PRECOMPILED layer goes to create_precompiled
 * (when the plugin has one and the layer passes pn_validate_layer); any other
 * layer is judged again by pn_plugin_check_layer (the caller is never trusted)
 * and, when accepted, built by its entry's create with `context`. On failure
 * *workload_out is NULL (when workload_out is not) and the reason is in
 * message_out. */
pn_status pn_plugin_create_workload(const pn_plugin* plugin, void* context,
                                    const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out);

/* pn_plugin_create_workload's workload of `layer`, made to run at other shapes
 * (PN_WORKLOAD_SHAPES_AT_EXECUTE) unless the layer is DATA_DEPENDENT, or
 * PRECOMPILED without the plugin's precompiled_at_execute saying so (then the
 * plain workload; with it, the inputs it names keep their dims). It keeps copies of the layer (its
 * constants' data borrowed, as the ABI lets it) and of the `context_size` bytes
 * at `context`. An execute() whose non-constant inputs or outputs have other
 * dims makes the plugin's workload again at them (its reshape() when it has
 * one, sharing prepacked weights, else the kind's create after
 * pn_plugin_check_layer judged the layer at those dims) and destroys the old
 * one only then: a refusal (PN_ERR_INVALID_ARGUMENT for another rank, element
 * type or constant dims, else the plugin's own status) leaves it at its last
 * dims. Workspace beyond the first one's workspace_bytes is its own. reshape()
 * gives such a workload too; read_profile() is the plugin's. Errors: those of
 * pn_plugin_create_workload, PN_ERR_OUT_OF_MEMORY. */
pn_status pn_plugin_create_shaped_workload(const pn_plugin* plugin, const void* context, size_t context_size,
                                           const pn_layer* layer, pn_workload** workload_out,
                                           pn_string_out* message_out);

/* pn_backend.create_workload_factory: a new factory whose create_workload is
 * pn_plugin_create_workload with the factory's own copy of the
 * `context_size` bytes at `context` (NULL context for 0 bytes), so the factory
 * keeps what the backend had when it was made; pn_plugin_create_shaped_workload
 * instead when the plugin sets PN_PLUGIN_SHAPES_AT_EXECUTE. *factory_out is the caller's,
 * released with its destroy(); workloads it made stay valid after that.
 * PN_ERR_INVALID_ARGUMENT when factory_out is NULL, PN_ERR_OUT_OF_MEMORY. */
pn_status pn_plugin_factory_new(const pn_plugin* plugin, const void* context,
                                size_t context_size, pn_workload_factory** factory_out,
                                pn_string_out* message_out);

/* A pn_backend for a plugin that needs no state of its own: host memory
 * (PN_BACKEND_HOST_MEMORY), is_layer_supported = pn_plugin_is_layer_supported,
 * create_workload_factory = pn_plugin_factory_new without a context, destroy
 * frees it; `self` is the plugin (never written through). Every other pointer
 * is NULL for the caller to fill (set_option, ...) before BackendFactory
 * returns it. NULL when out of memory. */
pn_backend* pn_plugin_backend_new(const pn_plugin* plugin);

/* The element-type rule, one wording for every backend: PN_OK when every input
 * and output of `layer` is of `dtype`, else PN_ERR_UNSUPPORTED with
 * "<id> runs <Kind> on <dtype> only; input 0 is float16" (the first tensor
 * that is not). For a plugin's checks (pn_plugin_check_fn). */
pn_status pn_plugin_check_dtype(const pn_plugin* plugin, const pn_layer* layer,
                                pn_data_type dtype, pn_string_out* reason);

/* A pn_plugin_check_fn for kinds a backend runs on float32 tensors only:
 * pn_plugin_check_dtype with PN_DTYPE_FLOAT32. */
pn_status pn_plugin_float32_only(const pn_plugin* plugin, const pn_layer* layer,
                                 pn_string_out* reason);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PN_PLUGIN_H */
