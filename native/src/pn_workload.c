/* pn_workload_new: a pn_workload around a plugin's state and execute function. */
#include "plugnn/plugin_common.h"

#include <stdlib.h>

typedef struct generic_workload {
    pn_workload base;
    void* state;
    pn_execute_fn execute;
    void (*release_state)(void*);
    pn_reshape_fn reshape;
    pn_read_profile_fn read_profile;
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

static pn_status generic_read_profile(pn_workload* workload, pn_profile_entry* entries, uint32_t capacity,
                                     uint32_t* count_out, pn_string_out* message_out) {
    generic_workload* w = (generic_workload*)workload;
    if (count_out == NULL || (entries == NULL && capacity > 0)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "read_profile: %s is NULL",
                       count_out == NULL ? "count_out" : "entries");
    }
    *count_out = 0;
    return w->read_profile(w->state, entries, capacity, count_out, message_out);
}

void pn_workload_set_read_profile(pn_workload* workload, pn_read_profile_fn read_profile) {
    if (workload != NULL) {
        ((generic_workload*)workload)->read_profile = read_profile;
        workload->read_profile = read_profile != NULL ? generic_read_profile : NULL;
    }
}

int pn_execute_profiling(const pn_execute_args* args) {
    return PN_HAS_FIELD(args, pn_execute_args, profile) && args->profile != 0;
}

pn_status pn_profile_copy(const char* const* names, const uint64_t* nanoseconds, uint32_t n,
                          pn_profile_entry* entries, uint32_t capacity, uint32_t* count_out,
                          pn_string_out* message_out) {
    *count_out = 0;
    for (uint32_t i = 0; i < n && i < capacity; ++i) {
        pn_profile_entry* e = &entries[i];
        if (!PN_HAS_FIELD(e, pn_profile_entry, layer)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "read_profile: entry %u has struct_size %u, too small for its layer", i, e->struct_size);
        }
        e->layer = names[i];
        if (PN_HAS_FIELD(e, pn_profile_entry, nanoseconds)) {
            e->nanoseconds = nanoseconds[i];
        }
    }
    *count_out = n;
    return PN_OK;
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
