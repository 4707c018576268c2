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

/* A tensor's dims at one binding of a symbolic network's symbols (python/plugnn/steady_resize.py):
 * dims[k] >= 0 is that dim, dims[k] < 0 is values[-1 - dims[k]] (one of the values the shape
 * program evaluated); dims[rank..] are unused. The tensor takes itemsize times the product of its
 * dims bytes, at most max_bytes (the bytes planned for it in the arena, less its offset in the
 * block it is a view of) when max_bytes is not 0. Owned by the caller. */
typedef struct pnr_dims_rule {
    uint32_t rank;       /* 0..8 (PN_MAX_DIMS) */
    uint32_t itemsize;   /* bytes per element, > 0 */
    uint64_t max_bytes;  /* 0: no limit (a tensor outside the arena) */
    int64_t dims[8];
} pnr_dims_rule;

/* Re-sizes bound tensors in place: rules[0..num_rules) evaluated at values[0..num_values), then
 * every targets[t] (a pn_tensor_info a bound pn_execute_args holds; t < num_targets) gets the
 * rank and dims of rules[target_rule[t]], its dims past the rank zeroed; nothing else of it is
 * touched (its data pointer stays). Returns -1 when every rule held; otherwise the index of the
 * first rule that did not, and no target is written: a value index outside values, a negative
 * value, a tensor of no elements (zero-size tensors are planned again by the caller), a byte
 * count that overflows 64 bits or exceeds max_bytes, or a rank above 8 or a target_rule outside
 * rules (returned as num_rules). No allocation, no other state. */
int64_t pnr_apply_dims(const int64_t* values, int64_t num_values, const pnr_dims_rule* rules, int64_t num_rules,
                       pn_tensor_info* const* targets, const int64_t* target_rule, int64_t num_targets);
/* PLUGNN_RUNNER_CDEF_END */

/* *status_out of pnr_run_steps_checked when it stopped for an interrupt (step_runner.py's
 * INTERRUPTED): no pn_status is negative. */
#define PNR_INTERRUPTED (-1)

#endif /* PLUGNN_RUNNER_H */
