/*
 * CpuAcc layer fusion, the first pass of optimize_subgraph (opt/optimize.h): a layer fused with
 * the elementwise layers that alone consume its output.
 *
 * Inside one subgraph, in layer order, each unclaimed head layer takes the longest links
 *   Convolution2d | FullyConnected  [-> ElementwiseBinary ADD of an addend]  [-> Activation]
 *   Convolution (1.1, N-D: 1-D, 3-D, transposed)                               -> Activation
 *   ElementwiseBinary                                                          -> Activation
 * and is replaced by one layer of the head's kind: the addend becomes its
 * PN_LAYER_FLAG_HAS_ADDEND input (its last input), the activation its fused_activation.
 * A link is taken only when
 *   - the tensor between the two layers has exactly one use in the subgraph and is not one of
 *     the subgraph's output_ids (nothing else sees it);
 *   - every layer linked passes the backend's check, pn_plugin_check_layer (so all
 *     tensors are float32);
 *   - for the ADD: the head has no addend and no fused activation, the ADD has no fused
 *     activation, and its other operand, the addend, has exactly the head output's shape (no
 *     broadcast); it is produced outside the fused layers, as pn_substitution requires (it cannot be
 *     the head's output, whose one use is this ADD, nor a later link's output, which would
 *     make the network cyclic);
 *   - for the activation: the layer before it has no fused activation yet;
 *   - the fused layer, built as it will be returned, passes the backend's check.
 * The replacement keeps the head's inputs (plus the addend) and the last link's output
 * tensor; its name joins the original names with '+', each after the first without the
 * dotted or slashed prefix it shares with the first ("layer1.0.conv2" + "layer1.0.add" +
 * "layer1.0.relu2" -> "layer1.0.conv2+add+relu2").
 */
#ifndef ACCEL_FUSION_H
#define ACCEL_FUSION_H

#include "opt/pass.h"

/* The fusions above, over the layers `state` marks LAYER_CANDIDATE: each one is appended to
 * o's substitutions and items and its layers marked LAYER_CLAIMED. PN_OK, or
 * PN_ERR_OUT_OF_MEMORY (what was appended stays for accel_release_optimization). */
pn_status accel_fuse_layers(const pn_subgraph* sg, const pn_plugin* plugin, accel_optimization* o,
                            unsigned char* state);

#endif /* ACCEL_FUSION_H */
