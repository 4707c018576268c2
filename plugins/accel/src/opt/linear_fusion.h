/*
 * CpuAcc linear fusion, a pass of optimize_subgraph (opt/optimize.h) that runs after pattern
 * fusion (opt/patterns.h, whose matches it sees as single layers) and before layer fusion
 * (opt/layer_fusion.h): a product with constant weights and the layers that alone consume its output,
 * replaced by one PRECOMPILED fused linear layer (ops/fused_linear.h) that runs them in the GEMM's
 * epilogue.
 *
 * Inside one subgraph, in layer order, each unclaimed head takes the longest links
 *   [Reshape ->]  MatMul | FullyConnected  [-> Reshape]* [-> ADD bias] [-> Reshape]*
 *                 [-> ADD residual] [-> Reshape]* [-> Activation] [-> Reshape]*
 * where
 *   - the head is a MatMul whose b is a constant [..., K, N] with every leading dim 1, or a
 *     FullyConnected layer (ONNX Gemm) with a constant b, a not transposed, no addend, no fused
 *     activation, and its c (if any) a constant [N] or [1, N] (the bias);
 *   - the Reshape before it has the head's a as its only use, and its input's last dim is K
 *     (the rows of a are the rows of its input); a Reshape after it keeps the last dim N;
 *   - the bias ADD (only when the head has no c) adds a constant of dims [1, ..., 1, N] (rank
 *     at most the output's), the residual ADD a tensor of exactly the output's dims (produced
 *     outside the fused layers), neither with a fused activation, each keeping the shape;
 *   - the activation is any Activation layer (GELU, SiLU, hard swish decompositions included);
 *   - every tensor between two fused layers has exactly one use in the subgraph and is not one
 *     of its outputs, and every layer fused passes the backend's check.
 * A MatMul head is fused with any of these links; a FullyConnected head only when a Reshape is
 * among them (without one, layer fusion, opt/layer_fusion.h, fuses its residual and activation). The
 * replacement reads a (or the input of the Reshape before the head), b, the bias, the residual,
 * and writes the last link's output; its name joins the fused layers' names with '+' (each
 * after the first without the prefix it shares with the first, as opt/layer_fusion.h names them), and its
 * label says what it computes ("matmul [*, 64] x [64, 256] + bias + gelu").
 *
 * A Split along the last axis that alone reads the last link's result (and no normalization
 * among the links) joins too: its pieces become the replacement's outputs (GPT-2's c_attn into
 * query, key and value), written by the GEMM (ops/fused_linear.h).
 *
 * Before those, sibling projections: 2 .. ACCEL_LINEAR_GROUP_MAX MatMuls with constant b of one
 * tensor a (no Reshape before them), each followed by nothing but an optional bias ADD and
 * Reshapes (BERT's query, key and value), in layer order, become one PRECOMPILED layer with an
 * output per product (ops/fused_linear.h's accel_linear_group), named after all their layers.
 *
 * Each fusion is a fusion item (opt/optimize.h) whose links name only its head (so the chain pass
 * leaves it alone), its replaced ids and payload kept in o->linear.
 */
#ifndef ACCEL_FUSION_LINEAR_H
#define ACCEL_FUSION_LINEAR_H

#include "opt/pass.h"

typedef struct accel_linear_fusions accel_linear_fusions;

/* The fusions above over the layers `state` marks LAYER_CANDIDATE: each one appended to o's
 * substitutions and items (o->linear made on the first) and its layers marked LAYER_CLAIMED.
 * PN_OK, or PN_ERR_OUT_OF_MEMORY (what was appended stays for accel_release_optimization). */
pn_status accel_fuse_linear(const pn_subgraph* sg, const pn_plugin* plugin, accel_optimization* o,
                            unsigned char* state);

/* Frees o->linear's storage (NULL: nothing), the payloads too when owns_payloads (the result
 * never reached the runtime, which otherwise releases them). */
void accel_linear_fusions_release(accel_linear_fusions* f, int owns_payloads);

#endif /* ACCEL_FUSION_LINEAR_H */
