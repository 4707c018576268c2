/* pn_shared: reference-counted immutable state shared by a workload and those reshaped from it. */
#include "plugnn/plugin_common.h"

#include <stdlib.h>

struct pn_shared {
    unsigned refs;
    void* data;
    void (*release)(void* data);
};

pn_shared* pn_shared_new(void* data, void (*release)(void* data)) {
    pn_shared* shared = (pn_shared*)malloc(sizeof(*shared));
    if (shared == NULL) {
        if (release != NULL) {
            release(data);
        }
        return NULL;
    }
    shared->refs = 1;
    shared->data = data;
    shared->release = release;
    return shared;
}

pn_shared* pn_shared_ref(pn_shared* shared) {
    if (shared != NULL) {
        __atomic_add_fetch(&shared->refs, 1u, __ATOMIC_RELAXED);
    }
    return shared;
}

void pn_shared_unref(pn_shared* shared) {
    if (shared == NULL || __atomic_sub_fetch(&shared->refs, 1u, __ATOMIC_ACQ_REL) > 0) {
        return;
    }
    if (shared->release != NULL) {
        shared->release(shared->data);
    }
    free(shared);
}

void* pn_shared_data(const pn_shared* shared) { return shared != NULL ? shared->data : NULL; }

unsigned pn_shared_refs(const pn_shared* shared) { return shared != NULL ? __atomic_load_n(&shared->refs, __ATOMIC_RELAXED) : 0u; }
