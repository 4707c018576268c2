/*
 * CpuAcc pattern fusion, the pass of optimize_subgraph (opt/optimize.h) that runs before layer
 * fusion (opt/layer_fusion.h): decompositions that exporters write as several elementwise layers, each
 * recognized by its structure and its constants (never by layer names) and replaced by one
 * standard layer CpuAcc runs, or, for attention, by one PRECOMPILED layer (ops/attention.h):
 *
 *   GELU (erf)   x * 0.5 * (1 + erf(x / sqrt 2)), the Div by sqrt 2 or a Mul by 1 / sqrt 2,
 *                the three factors multiplied in any order and association
 *                -> Activation GELU
 *   GELU (tanh)  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), x^3 as Pow(x, 3),
 *                x * (x * x) or (x * x) * x (GPT-2's NewGELU) -> Activation GELU_TANH
 *   SiLU         x * sigmoid(x) -> Activation SWISH (alpha 1);
 *                x * hard_sigmoid(x) with alpha 1/6, beta 1/2 -> Activation HARD_SWISH
 *   LayerNorm    ReduceMean over the trailing axes (keep_dims), Sub, Pow 2 (or Mul by itself),
 *                ReduceMean, Add eps, Sqrt, Div, Mul by a scale, [Add a bias]
 *                -> Normalization LAYER (the scale and bias operands as its inputs)
 *   RMSNorm      Pow 2 (or Mul by itself), ReduceMean over the trailing axes (keep_dims), Add
 *                eps, then Div(1, Sqrt), Reciprocal(Sqrt) or Rsqrt, Mul by the same x, Mul by
 *                a scale (T5's and Llama's RMSNorm as torch exports them)
 *                -> Normalization RMS (the scale as its input)
 *   attention    MatMul(Q, K^T) [Mul or Div by a constant] [Add a mask, broadcast] Softmax
 *                (last axis) MatMul(., V), with Transposes and Reshapes of Q, K, V and of the
 *                output absorbed as strides, and constant scales of Q or K folded into the
 *                scale -> one PRECOMPILED layer
 *   reshape-transpose  a Transpose whose innermost output run is contiguous in its input,
 *                with the Reshape (or Copy) that only feeds it and / or the one only it feeds
 *                -> one PRECOMPILED strided copy (ops/index_copy.h)
 *   BN + activation  a BatchNormalization with constant operands and the Activation that
 *                alone reads it -> one PRECOMPILED layer (ops/batch_norm.h)
 *
 * Constants are a layer's constant inputs (pn_layer.constant_data) whose elements are all
 * equal, compared within a relative 1e-6 (2e-6 for the float32 roundings of sqrt 2, sqrt(2 /
 * pi)). A match is taken only when every intermediate tensor has exactly the uses the
 * pattern makes of it and is not one of the subgraph's outputs, every layer in it passes
 * the backend's check and is not in another match, every elementwise layer keeps the shape
 * of its tensor operand (constants and masks do not broadcast the result larger), and the
 * replacement passes the backend's check.
 *
 * The passes after this one see the subgraph as a view in which each match is one layer
 * (with an id past the subgraph's), so layer fusion can fuse a recognized activation into
 * the layer before it (an Add of a bias, a convolution, a fully connected layer) and chains
 * can take convolutions with it; accel_patterns_finish then writes every substitution in
 * the subgraph's own layer ids.
 */
#ifndef ACCEL_FUSION_PATTERNS_H
#define ACCEL_FUSION_PATTERNS_H

#include "opt/pass.h"

typedef struct accel_patterns accel_patterns;

/* The matches of `sg` (layers the backend's check passes); *out is NULL when there are
 * none (the later passes then see `sg` itself), else the caller's until
 * accel_patterns_release. PN_OK or PN_ERR_OUT_OF_MEMORY. */
pn_status accel_find_patterns(const pn_subgraph* sg, const pn_plugin* plugin, accel_patterns** out);

/* The subgraph the later passes see: each match one layer, placed where its last layer was. */
const pn_subgraph* accel_patterns_view(const accel_patterns* p);

/* 0 for a layer id of the subgraph, 1 for a match replaced by a standard layer, 2 for a match
 * replaced by a PRECOMPILED layer (these are not judged by the backend's check: they are
 * CpuAcc's own). p may be NULL (0). */
int accel_patterns_kind_of(const accel_patterns* p, uint32_t layer_id);

/* The names of the subgraph's layers a match (by its layer id in the view) replaced, in layer
 * order, at most `max` (what a blocked chain reports its profile under); 0 for a layer id that
 * is no match. Valid during optimize_subgraph's call. */
uint32_t accel_patterns_member_names(const accel_patterns* p, uint32_t layer_id, const char** names, uint32_t max);

/* After the later passes: every substitution's replaced ids written in the subgraph's ids
 * (a match stands for its layers), and every match no substitution took (PRECOMPILED, or
 * untouched) made a substitution of its own (and removed from the untouched ids).
 * PN_OK or PN_ERR_OUT_OF_MEMORY. */
pn_status accel_patterns_finish(accel_patterns* p, accel_optimization* o);

/* Frees everything (NULL: nothing); the attention payloads too when owns_payloads (the result
 * never reached the runtime, which otherwise releases them). */
void accel_patterns_release(accel_patterns* p, int owns_payloads);

#endif /* ACCEL_FUSION_PATTERNS_H */
