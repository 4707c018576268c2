/* pn_workload_new: a pn_workload around a plugin's state and execute function. */
#include "plugnn/plugin_common.h"

#include <stdlib.h>

typedef struct generic_workload {
    pn_workload base;
    void* state;
    pn_execute_fn execute;
    void (*release_state)(void*);
    pn_reshape_fn reshape;
} generic_workload;

static pn_status generic_execute(pn_workload* workload, const pn_execute_args* args,
                                 pn_string_out* message_out) {
    generic_workload* w = (generic_workload*)workload;
    return w->execute(w->state, args, message_out);
}

static void generic_destroy(pn_workload* workload) {
    generic_workload* w = (generic_workload*)workload;
    if (w->release_state != NULL) {
        w->release_state(w->state);
    }
    free(w);
}

static pn_status generic_reshape(pn_workload* workload, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    generic_workload* w = (generic_workload*)workload;
    if (layer == NULL || workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "reshape: %s is NULL",
                       layer == NULL ? "layer" : "workload_out");
    }
    *workload_out = NULL;
    return w->reshape(w->state, layer, workload_out, message_out);
}

void* pn_workload_state(const pn_workload* workload) {
    return workload != NULL ? ((const generic_workload*)workload)->state : NULL;
}

pn_workload* pn_workload_new_reshapable(void* state, pn_execute_fn execute,
                                        void (*release_state)(void*), size_t workspace_bytes,
                                        pn_reshape_fn reshape) {
    pn_workload* workload = pn_workload_new(state, execute, release_state, workspace_bytes);
    if (workload != NULL && reshape != NULL) {
        ((generic_workload*)workload)->reshape = reshape;
        workload->reshape = generic_reshape;
    }
    return workload;
}

pn_workload* pn_workload_new(void* state, pn_execute_fn execute, void (*release_state)(void*),
                             size_t workspace_bytes) {
    generic_workload* w = (generic_workload*)calloc(1, sizeof(*w));
    if (w == NULL) {
        if (release_state != NULL) {
            release_state(state);
        }
        return NULL;
    }
    w->base.struct_size = (uint32_t)sizeof(pn_workload);
    w->base.self = w;
    w->base.destroy = generic_destroy;
    w->base.execute = generic_execute;
    w->base.workspace_bytes = workspace_bytes;
    w->state = state;
    w->execute = execute;
    w->release_state = release_state;
    return &w->base;
}
