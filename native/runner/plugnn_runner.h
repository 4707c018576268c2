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
/* Ctrl-C between layers. The runtime runs a network's steps with the GIL released, so Python's
 * SIGINT handler could only run once every step of a batch was done. pnr_watch_interrupts()
 * makes the process's SIGINT handler (the C handler Python installed) be called through one of
 * the runner's, which sets a flag and calls it: checked is then the handler in place (0), or
 * SIGINT is ignored or at its default (-1: nothing installed). Called again (each run), it
 * installs itself again after Python replaced it (signal.signal). pnr_run_steps_checked is
 * pnr_run_steps that, when `check` is non-zero, stops before a step once the flag is set: it
 * clears the flag and returns that step's index with *status_out PNR_INTERRUPTED; the caller
 * lets Python run its handler (KeyboardInterrupt), then calls again for the steps left. */
int32_t pnr_watch_interrupts(void);
int64_t pnr_run_steps_checked(const pnr_step* steps, int64_t n, int32_t* status_out, int32_t check);
/* PLUGNN_RUNNER_CDEF_END */

/* *status_out of pnr_run_steps_checked when it stopped for an interrupt (step_runner.py's
 * INTERRUPTED): no pn_status is negative. */
#define PNR_INTERRUPTED (-1)

#endif /* PLUGNN_RUNNER_H */
