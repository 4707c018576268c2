/* libplugnn_runner's interface (native/runner/plugnn_runner.c): the runtime's step runner, which
 * LoadedNetwork.run calls with each run of consecutive native workloads (python/plugnn/
 * step_runner.py). Not part of the backend ABI: plugins never see it. The declarations between
 * the markers are read by native/tools/gen_abi_module.py into the runtime's cffi module, next to
 * backend_api.h's. */
#ifndef PLUGNN_RUNNER_H
#define PLUGNN_RUNNER_H

#include <stdint.h>

#include "plugnn/backend_api.h"

/* PLUGNN_RUNNER_CDEF_BEGIN */
/* One prepared execution: the workload, its bound arguments and the buffer its message goes to,
 * all owned by the caller and alive for the call. */
typedef struct pnr_step {
    pn_workload* workload;
    const pn_execute_args* args;
    pn_string_out* message;
} pnr_step;

/* Calls steps[0..n) in order, each as workload->execute(workload, args, message). Returns n when
 * every call returned PN_OK; otherwise the index of the first that failed (no later step is
 * called) with its status in *status_out and its message in its own buffer. n <= 0 calls
 * nothing and returns n. */
int64_t pnr_run_steps(const pnr_step* steps, int64_t n, int32_t* status_out);

/* The arena plan of plugnn.memory_plan: blocks[0..n) in the order they are placed (the caller
 * sorts them: largest first), block i of `sizes[i]` bytes (already aligned, > 0) alive from step
 * first[i] to step last[i] (inclusive); each takes the lowest offset at which it overlaps, in
 * address, no placed block whose lifetime overlaps its own. Writes offsets_out[i] and returns the
 * peak (the end of the highest block), or UINT64_MAX when it cannot allocate its scratch (n
 * entries). Offsets are sums of the sizes, so they keep the sizes' alignment. */
uint64_t pnr_plan_memory(int64_t n, const uint64_t* sizes, const int64_t* first, const int64_t* last,
                         uint64_t* offsets_out);
/* PLUGNN_RUNNER_CDEF_END */

#endif /* PLUGNN_RUNNER_H */
