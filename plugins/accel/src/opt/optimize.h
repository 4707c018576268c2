/*
 * CpuAcc subgraph optimization (optimize_subgraph / release_optimization of the C ABI), the
 * driver of four passes over one result (opt/pass.h), in this order: pattern fusion
 * (opt/patterns.h: decompositions replaced by one layer, which the later passes see as such),
 * linear fusion (opt/linear_fusion.h: products with constant weights and what alone follows
 * them), layer fusion (opt/layer_fusion.h: a head with its addend and activation), then
 * blocked chains (opt/chain_plan.h). Every layer is first judged by the backend's check
 * (pn_plugin_check_layer): a refused one is returned as failed with its reason, every layer
 * that no pass took as untouched.
 */
#ifndef ACCEL_OPTIMIZE_H
#define ACCEL_OPTIMIZE_H

#include "accel.h"
#include "plugnn/pn_plugin.h"

/* optimize_subgraph: the four passes above (the three fusions only when `fuse` is 1, the blocked
 * chains only when `chains` is 1, for `isa`); the layers pn_plugin_check_layer(plugin, ...)
 * refuses as failed, the rest untouched. *optimization_out is the caller's until it passes it
 * to accel_release_optimization. PN_ERR_INVALID_ARGUMENT for a malformed subgraph,
 * PN_ERR_OUT_OF_MEMORY; *optimization_out is NULL on failure. */
pn_status accel_optimize_subgraph(const pn_subgraph* subgraph, int fuse, int chains, accel_isa isa,
                                  const pn_plugin* plugin, pn_optimization** optimization_out,
                                  pn_string_out* message_out);

/* release_optimization: frees a result of accel_optimize_subgraph and everything it points
 * to (NULL is a no-op). */
void accel_release_optimization(pn_optimization* optimization);

#endif /* ACCEL_OPTIMIZE_H */
