/*
 * CpuAcc subgraph optimization (optimize_subgraph / release_optimization of the C ABI):
 * a layer fused with the elementwise layers that alone consume its output.
 *
 * Inside one subgraph, in layer order, each unclaimed head layer takes the longest chain
 *   Convolution2d | FullyConnected  [-> ElementwiseBinary ADD of an addend]  [-> Activation]
 *   ElementwiseBinary                                                          -> Activation
 * and is replaced by one layer of the head's kind: the addend becomes its
 * PN_LAYER_FLAG_HAS_ADDEND input (its last input), the activation its fused_activation.
 * A link is taken only when
 *   - the tensor between the two layers has exactly one use in the subgraph and is not one of
 *     the subgraph's output_ids (nothing else sees it);
 *   - every layer of the chain passes the backend's check, pn_plugin_check_layer (so all
 *     tensors are float32);
 *   - for the ADD: the head has no addend and no fused activation, the ADD has no fused
 *     activation, and its other operand, the addend, has exactly the head output's shape (no
 *     broadcast); it is produced outside the chain, as pn_substitution requires (it cannot be
 *     the head's output, whose one use is this ADD, nor a later link's output, which would
 *     make the network cyclic);
 *   - for the activation: the layer before it has no fused activation yet;
 *   - the fused layer, built as it will be returned, passes the backend's check.
 * The replacement keeps the head's inputs (plus the addend) and the last link's output
 * tensor; its name joins the original names with '+', each after the first without the
 * dotted or slashed prefix it shares with the first ("layer1.0.conv2" + "layer1.0.add" +
 * "layer1.0.relu2" -> "layer1.0.conv2+add+relu2"). Layers the check refuses are returned as
 * failed with its reason; every other layer is untouched.
 */
#ifndef ACCEL_FUSION_H
#define ACCEL_FUSION_H

#include "accel.h"
#include "plugnn/pn_plugin.h"

/* optimize_subgraph: the substitutions above (none when `fuse` is 0), then, when `chains` is
 * 1, every run of two or more consecutive convolutions (each with what it fused) that the
 * blocked kernels run on `isa` replaced by one PRECOMPILED blocked chain (conv_chain.h); the
 * layers pn_plugin_check_layer(plugin, ...) refuses as failed, the rest untouched.
 * *optimization_out is the caller's until it passes it to accel_release_optimization. PN_ERR_INVALID_ARGUMENT for a malformed subgraph,
 * PN_ERR_OUT_OF_MEMORY; *optimization_out is NULL on failure. */
pn_status accel_optimize_subgraph(const pn_subgraph* subgraph, int fuse, int chains, accel_isa isa,
                                  const pn_plugin* plugin, pn_optimization** optimization_out,
                                  pn_string_out* message_out);

/* release_optimization: frees a result of accel_optimize_subgraph and everything it points
 * to (NULL is a no-op). */
void accel_release_optimization(pn_optimization* optimization);

#endif /* ACCEL_FUSION_H */
