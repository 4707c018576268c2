/* libplugnn_runner: the runtime's one C helper on the hot path (plugnn_runner.h). It only calls
 * pn_workload.execute as the runtime would: the same workload, arguments and message buffer, in
 * the same order, stopping at the first failure; it holds no state. Loaded with dlopen (cffi)
 * from the package's lib/ directory; only pnr_run_steps is exported. */
#include "plugnn_runner.h"

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
