/* pn_workload_new: a pn_workload around a plugin's state and execute function. */
#include "plugnn/plugin_common.h"

#include <stdlib.h>

typedef struct generic_workload {
    pn_workload base;
    void* state;
    pn_execute_fn execute;
    void (*release_state)(void*);
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
