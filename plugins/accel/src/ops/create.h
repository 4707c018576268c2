/*
 * CpuAcc kernel families: the create function of each, the entries of
 * backend.c's table for the plugin skeleton (pn_plugin.h). Each is a
 * pn_plugin_create_fn whose context is the factory's accel_env, and runs only
 * after the skeleton accepted the layer: the kind's pn_validate_*, then
 * CpuAcc's float32 rule. It copies what it keeps from the layer.
 *
 * Memory-bound families (accel_op workloads, ops/layer_workload.c): ELEMENTWISE_BINARY,
 * ELEMENTWISE_VARIADIC, ACTIVATION, POOLING_2D, SOFTMAX, CONCAT, RESHAPE and
 * COPY (one memcpy, any element type), TRANSPOSE.
 *
 * What the compute-bound families accept (beyond float32 tensors):
 *   CONVOLUTION_2D: layout NCHW or NHWC; any stride, dilation, 4-sided padding,
 *     groups (grouped and depthwise, any depth multiplier); optional bias [O];
 *     optional addend (output shape); any fused activation that
 *     pn_validate_fused_activation accepts. Constant weights are prepacked at create
 *     time; weights supplied only at run time are packed on the fly.
 *     NCHW, AVX-512, groups 1, kernel larger than 1x1, constant weights, 16+ output
 *     channels: the direct blocked kernel (ops/conv_nchwc.h), packing the input into
 *     NCHW16c and unpacking the output. Otherwise a GEMM per group in one of two
 *     orientations chosen at create time (ops/convolution_2d.c): W[OC, K] x im2col[K, P], or
 *     im2col^T[P, K] x W^T[K, OC] written transposed into the output, with im2col read in
 *     place from a zero-padded copy of the image (AVX2/AVX-512) or packed into panels;
 *     a 1x1/stride-1/unpadded convolution reads x directly. Depthwise (groups == C,
 *     multiplier <= 4) = direct kernel (ops/depthwise.c).
 *     NHWC: GEMM with output positions as rows (1x1 direct, else implicit im2col);
 *     depthwise = direct kernel over channels.
 *     Inside blocked chains (chain/chain.h) convolutions never reach these paths.
 *   FULLY_CONNECTED (ONNX Gemm): a, b rank 2; transpose_a/transpose_b;
 *     any alpha/beta; optional c broadcast to [M, N]; optional addend [M, N];
 *     fused activation. A constant b is prepacked once at create time; an a
 *     not transposed is read in place (AVX2/AVX-512).
 *   MATMUL (NumPy matmul): any ranks >= 1 (rank-1 promotion, batch
 *     broadcasting); batches folded into rows when b is shared, a constant b
 *     prepacked, batches split over the threads as whole GEMMs (ops/matmul.c).
 *
 * Workloads may request workspace (pn_workload.workspace_bytes) for im2col and
 * packing buffers; they use env->threads for threading and env->isa for kernels.
 */
#ifndef ACCEL_FAMILIES_H
#define ACCEL_FAMILIES_H

#include "accel.h"
#include "kernels/vector_kernels.h"
#include "plugnn/pn_plugin.h"

#include "ops/shared_weights.h"

pn_status accel_binary_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* Whether an ELEMENTWISE_BINARY layer is one of the integer or comparison ones (ops/elementwise.c:
 * int32 / int64 ADD, SUB, MUL, MAXIMUM, MINIMUM, bitwise AND / OR / XOR; comparisons of those
 * and of float32), which its check lets through and its create runs in plain C loops. */
int accel_binary_typed(const pn_layer*);
int accel_variadic_typed(const pn_layer*); /* int32 / int64 SUM, MAXIMUM, MINIMUM */
pn_status accel_variadic_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_activation_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_pooling2d_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* POOLING_2D's limits: float32, or MAX on int8 / uint8 (input and output of one type). */
pn_status accel_pooling2d_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason);
pn_status accel_softmax_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_concat_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_copy_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_transpose_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_conv2d_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_fully_connected_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_matmul_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* The 1.1 spatial kinds (float32): CONVOLUTION (ops/convolution_nd.c: forward 1-D and 2-D on
 * CONVOLUTION_2D's paths, 3-D through a GEMM, transposed through a GEMM and col2im), POOLING
 * (ops/pooling_nd.c: 1-D and 2-D on POOLING_2D's kernels; accel_pooling_nd_check refuses 3-D),
 * RESIZE (ops/resize.c: NEAREST any axes; LINEAR and CUBIC along the last two axes, which
 * accel_resize_check requires), PAD (ops/pad.c: every mode). */
pn_status accel_convolution_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_pooling_nd_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_pooling_nd_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_resize_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_resize_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_pad_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* PRECOMPILED (backend.c): the layers CpuAcc's optimize_subgraph made, by their payload's
 * magic: fused attention, fused linear layer, reshape-transpose copy, batch normalization with
 * its activation, or else a blocked chain. */
/* CONVOLUTION_2D's build function (ops/shared_weights.h), also run by CONVOLUTION (ops/convolution_nd.c)
 * on the 2-D view of a 1-D or 2-D forward convolution. */
pn_status accel_conv2d_build(const accel_env*, const pn_layer*, accel_packs*, pn_workload**, pn_string_out*);

/* Transformer-era kinds (float32), each with its own check (pn_plugin_check_fn) of what it
 * runs beyond the shared validation:
 *   ELEMENTWISE_UNARY (ops/unary.c): ABS, NEG, SIGN, RECIPROCAL, SQRT, RSQRT, EXP, LOG, ERF, SIN,
 *     COS, FLOOR, CEIL, ROUND (the other operations are refused);
 *   REDUCE (ops/reduce.c): every operation over any axes (ARG_MAX/ARG_MIN: float32 x, INT64 out);
 *   NORMALIZATION (ops/normalization.c): LAYER, RMS (scale, bias broadcast), GROUP; LP refused;
 *   GATHER (ops/gather.c): TAKE on float32 data, INT32/INT64 indices; ELEMENTS and ND refused. */
pn_status accel_unary_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_unary_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_reduce_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_reduce_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_normalization_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_normalization_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_gather_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_gather_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* Attention-mask building (ops/mask_ops.c): SELECT with a BOOL condition and float32 values,
 * EXPAND of any element type, and ELEMENTWISE_BINARY LOGICAL_AND/OR/XOR on BOOL (the binary
 * family's check and create hand those layers over: accel_logic_binary tells which). */
pn_status accel_select_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_select_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_expand_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
int accel_logic_binary(const pn_layer*);
pn_status accel_logic_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* Data movement (ops/data_movement.c): SLICE (any steps, negative included) and SPLIT as strided
 * copies of any element type of 1, 2, 4 or 8 bytes (accel_move_check: every type of the ABI;
 * RESHAPE, COPY, CONCAT and GATHER's data too); CONCAT (declared above) runs on the same region
 * copies. */
pn_status accel_move_check(const pn_plugin*, const pn_layer*, pn_string_out*);
/* QUANTIZATION (ops/quantization.c): QUANTIZE_LINEAR float32 -> int8/uint8 and
 * DEQUANTIZE_LINEAR int8/uint8 -> float32, per tensor or per axis; DYNAMIC_QUANTIZE_LINEAR;
 * blocked scales and other types refused. */
pn_status accel_quantization_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_quantization_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* QUANTIZED_MATMUL, QUANTIZED_CONVOLUTION (ops/quantized_products.c): over the integer GEMM
 * (gemm/qgemm.h); constant b / w, b shared by every batch, convolutions of groups 1. */
pn_status accel_quantized_matmul_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_quantized_matmul_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_quantized_convolution_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_quantized_convolution_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* CAST (ops/cast.c): every pair of element types (pn_convert's rules), plain tensors; saturate
 * only to integer and BOOL targets. */
pn_status accel_cast_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_cast_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_slice_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status accel_split_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
/* TRANSPOSE as one strided region copy (rows of the output walked with an index odometer);
 * ops/shape_ops.c uses it when the innermost output dim is contiguous in the input. */
pn_status accel_permute_create(const accel_env*, const pn_layer*, pn_workload**, pn_string_out*);
/* BATCH_NORMALIZATION (ops/batch_norm.c), float32: channels-second x (rank 2 to 4), rank-4 NHWC. */
pn_status accel_batch_norm_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* RECURRENT (ops/recurrent.c), float32 (accel_recurrent_check refuses other element types): RNN,
 * GRU (either linear_before_reset), LSTM (peepholes, input_forget), every direction and layout,
 * every optional input, clip and every activation the validator accepts. */
pn_status accel_recurrent_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_recurrent_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* TREE_ENSEMBLE (ops/tree_ensemble.c): x float32 or float64 (the shared validation's rules),
 * every op, node mode, aggregate and post transform; the forest packed once and shared with
 * reshaped workloads. accel_tree_ensemble_check refuses a forest whose shared subtrees unfold
 * to more than 2^28 nodes, or more than 2^31 - 1 nodes or weights. */
pn_status accel_tree_ensemble_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_tree_ensemble_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* DATA_DEPENDENT (ops/data_dependent.c): NON_MAX_SUPPRESSION on float32 boxes and scores,
 * NON_ZERO on plain BOOL, 8-, 32- and 64-bit integer and FLOAT32 tensors; UNIQUE and COMPRESS
 * refused. Results bit for bit CpuRef's. */
pn_status accel_data_dependent_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_data_dependent_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* ROI_ALIGN (ops/roi_align.c): AVERAGE mode on float32, each bin's samples summed per axis
 * into weights over plane indices (plugin_common's pn_roi_align_plan.h); MAX refused. */
pn_status accel_roi_align_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_roi_align_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* SCATTER (ops/scatter.c): ELEMENTS and ND; NONE on elements of 1, 2, 4 or 8 bytes, the
 * reductions on float32, int32 and int64 (CpuRef's bits). */
pn_status accel_scatter_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_scatter_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* TOP_K (ops/top_k.c): float32, axes of at most 2^32 - 1 elements; always sorted (CpuRef's bits). */
pn_status accel_top_k_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_top_k_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* CUMULATIVE (ops/cumulative.c): SUM and PROD on int32, int64 (wrapping) and float32 (in double),
 * every axis, exclusive, reverse (CpuRef's bits). */
pn_status accel_cumulative_check(const pn_plugin*, const pn_layer*, pn_string_out*);
pn_status accel_cumulative_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

#endif /* ACCEL_FAMILIES_H */
