/* libplugnn_runner: the runtime's C helpers on the hot path (plugnn_runner.h). pnr_run_steps
 * only calls pn_workload.execute as the runtime would: the same workload, arguments and message
 * buffer, in the same order, stopping at the first failure; pnr_plan_memory plans an arena (a
 * symbolic network plans one per binding). They hold no state. Loaded with dlopen (cffi) from the
 * package's lib/ directory; only the pnr_ functions are exported. */
#include "plugnn_runner.h"

#include <stdlib.h>

__attribute__((visibility("default"))) int64_t pnr_run_steps(const pnr_step* steps, int64_t n,
                                                             int32_t* status_out) {
    for (int64_t i = 0; i < n; ++i) {
        pn_workload* w = steps[i].workload;
        pn_status status = w->execute(w, steps[i].args, steps[i].message);
        if (status != PN_OK) {
            *status_out = (int32_t)status;
            return i;
        }
    }
    return n;
}

/* Placed blocks are kept sorted by offset (an insertion per block), so each new block scans them
 * once, in address order, for the first gap among those alive with it: O(n^2) in all, a few tens
 * of microseconds for the few hundred tensors of a network. */
__attribute__((visibility("default"))) uint64_t pnr_plan_memory(int64_t n, const uint64_t* sizes,
                                                                const int64_t* first, const int64_t* last,
                                                                uint64_t* offsets_out) {
    if (n <= 0) {
        return 0;
    }
    int64_t* order = (int64_t*)malloc((size_t)n * sizeof(int64_t)); /* placed blocks by offset */
    if (order == NULL) {
        return UINT64_MAX;
    }
    int64_t placed = 0;
    uint64_t peak = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint64_t offset = 0;
        for (int64_t k = 0; k < placed; ++k) {
            const int64_t j = order[k];
            if (first[j] > last[i] || first[i] > last[j]) {
                continue; /* not alive at the same time: its bytes may be shared */
            }
            if (offset + sizes[i] <= offsets_out[j]) {
                break; /* the gap before it is large enough */
            }
            const uint64_t end = offsets_out[j] + sizes[j];
            offset = end > offset ? end : offset;
        }
        offsets_out[i] = offset;
        int64_t at = placed; /* insert by offset (stable: after equal offsets) */
        while (at > 0 && offsets_out[order[at - 1]] > offset) {
            order[at] = order[at - 1];
            --at;
        }
        order[at] = i;
        ++placed;
        peak = offset + sizes[i] > peak ? offset + sizes[i] : peak;
    }
    free(order);
    return peak;
}
