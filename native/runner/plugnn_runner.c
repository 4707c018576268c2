/* libplugnn_runner: the runtime's C helpers on the hot path (plugnn_runner.h). pnr_run_steps
 * only calls pn_workload.execute as the runtime would: the same workload, arguments and message
 * buffer, in the same order, stopping at the first failure; pnr_plan_memory plans an arena (a
 * symbolic network plans one per binding); pnr_apply_dims re-sizes bound tensors in place (a
 * symbolic network's steady re-size, each decode step). Loaded with dlopen (cffi) from the package's lib/
 * directory; only the pnr_ functions are exported. Its one piece of state is the interrupt flag
 * (pnr_watch_interrupts) and the handler it chains to. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* sigaction */
#endif
#include "plugnn_runner.h"

#include <signal.h>
#include <stddef.h>
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

static volatile sig_atomic_t interrupted;
static struct sigaction chained; /* the handler in place when the runner's was installed */

static void on_interrupt(int sig, siginfo_t* info, void* context) {
    interrupted = 1;
    if (chained.sa_flags & SA_SIGINFO) {
        chained.sa_sigaction(sig, info, context);
    } else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN) {
        chained.sa_handler(sig);
    }
}

__attribute__((visibility("default"))) int32_t pnr_watch_interrupts(void) {
    struct sigaction current;
    if (sigaction(SIGINT, NULL, &current) != 0) {
        return -1;
    }
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_interrupt) {
        return 0;
    }
    if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
        return -1;
    }
    struct sigaction mine = current;
    mine.sa_flags |= SA_SIGINFO;
    mine.sa_sigaction = on_interrupt;
    chained = current; /* set before ours can run */
    return sigaction(SIGINT, &mine, NULL) == 0 ? 0 : -1;
}

__attribute__((visibility("default"))) int64_t pnr_run_steps_checked(const pnr_step* steps, int64_t n,
                                                                     int32_t* status_out, int32_t check) {
    for (int64_t i = 0; i < n; ++i) {
        if (check && interrupted) {
            interrupted = 0;
            *status_out = PNR_INTERRUPTED;
            return i;
        }
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

/* The dim k of rule r at `values`, or -1 when it reads outside them or is negative. */
static int64_t rule_dim(const pnr_dims_rule* r, uint32_t k, const int64_t* values, int64_t num_values) {
    const int64_t d = r->dims[k];
    if (d >= 0) {
        return d;
    }
    if (d < -num_values) {
        return -1;
    }
    const int64_t v = values[-1 - d];
    return v >= 0 ? v : -1;
}

static int rule_holds(const pnr_dims_rule* r, const int64_t* values, int64_t num_values) {
    if (r->rank > PN_MAX_DIMS || r->itemsize == 0) {
        return 0;
    }
    uint64_t bytes = r->itemsize;
    for (uint32_t k = 0; k < r->rank; ++k) {
        const int64_t d = rule_dim(r, k, values, num_values);
        if (d <= 0 || __builtin_mul_overflow(bytes, (uint64_t)d, &bytes)) {
            return 0;
        }
    }
    return r->max_bytes == 0 || bytes <= r->max_bytes;
}

/* Two passes over the rules (check, then write) so that a failing rule leaves every target as it
 * was: the caller then re-sizes the slow way, from the state it knows. */
__attribute__((visibility("default"))) int64_t pnr_apply_dims(const int64_t* values, int64_t num_values,
                                                              const pnr_dims_rule* rules, int64_t num_rules,
                                                              pn_tensor_info* const* targets,
                                                              const int64_t* target_rule, int64_t num_targets) {
    for (int64_t i = 0; i < num_rules; ++i) {
        if (!rule_holds(&rules[i], values, num_values)) {
            return i;
        }
    }
    for (int64_t t = 0; t < num_targets; ++t) {
        if (target_rule[t] < 0 || target_rule[t] >= num_rules) {
            return num_rules;
        }
    }
    for (int64_t t = 0; t < num_targets; ++t) {
        const pnr_dims_rule* r = &rules[target_rule[t]];
        pn_tensor_info* info = targets[t];
        info->rank = r->rank;
        for (uint32_t k = 0; k < PN_MAX_DIMS; ++k) {
            info->dims[k] = k < r->rank ? rule_dim(r, k, values, num_values) : 0;
        }
    }
    return -1;
}
