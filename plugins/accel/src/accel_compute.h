/*
 * CpuAcc compute-bound kernel families: CONVOLUTION_2D, FULLY_CONNECTED, MATMUL.
 * (Owner: the gemm/conv engineer. Files: gemm*.c|h, conv*.c|h, fc.c, matmul.c.)
 *
 * Dispatch-table contract (same as accel.h's accel_create_fn / accel_validate_fn):
 *
 *   kind                       validate (after pn_validate_*)   create
 *   PN_LAYER_CONVOLUTION_2D    accel_validate_conv2d            accel_create_conv2d
 *   PN_LAYER_FULLY_CONNECTED   accel_validate_fully_connected   accel_create_fully_connected
 *   PN_LAYER_MATMUL            accel_validate_matmul            accel_create_matmul
 *
 * Every validate function assumes pn_validate_common + the kind's pn_validate_*
 * passed, returns PN_OK to accept or PN_ERR_UNSUPPORTED with a reason. Every
 * create function re-runs its validate (so it is safe to call directly) and
 * returns PN_ERR_UNSUPPORTED with the same reason for a refused layer.
 *
 * Accepted descriptors (everything else is refused with a reason):
 *   CONVOLUTION_2D: all tensors float32; layout NCHW or NHWC; any stride, dilation,
 *     4-sided padding, groups (grouped and depthwise, any depth multiplier);
 *     optional bias [O]; optional addend (output shape); any fused activation that
 *     pn_validate_fused_activation accepts. Constant weights are prepacked at create
 *     time; weights supplied only at run time are packed on the fly.
 *     NCHW, AVX-512, groups 1, kernel larger than 1x1, constant weights, 16+ output
 *     channels: the direct blocked kernel (conv_nchwc.h), packing the input into
 *     NCHW16c and unpacking the output. Otherwise a GEMM per group in one of two
 *     orientations chosen at create time (conv.c): W[OC, K] x im2col[K, P], or
 *     im2col^T[P, K] x W^T[K, OC] written transposed into the output, with im2col read in
 *     place from a zero-padded copy of the image (AVX2/AVX-512) or packed into panels;
 *     a 1x1/stride-1/unpadded convolution reads x directly. Depthwise (groups == C,
 *     multiplier <= 4) = direct kernel (depthwise.c).
 *     NHWC: GEMM with output positions as rows (1x1 direct, else implicit im2col);
 *     depthwise = direct kernel over channels.
 *     Inside blocked chains (conv_chain.h) convolutions never reach these paths.
 *   FULLY_CONNECTED (ONNX Gemm): float32; a, b rank 2; transpose_a/transpose_b;
 *     any alpha/beta; optional c broadcast to [M, N]; optional addend [M, N];
 *     fused activation. A constant b is prepacked once at create time.
 *   MATMUL (NumPy matmul): float32; any ranks >= 1 (rank-1 promotion, batch
 *     broadcasting); packed on the fly.
 *   Non-float32 tensors are refused ("CpuAcc runs <kind> on float32 only ...").
 *
 * Workloads may request workspace (pn_workload.workspace_bytes) for im2col and
 * packing buffers; they use env->pool for threading and env->isa for kernels.
 */
#ifndef ACCEL_COMPUTE_H
#define ACCEL_COMPUTE_H

#include "accel.h"

pn_status accel_validate_conv2d(const pn_layer* layer, pn_string_out* reason);
pn_status accel_validate_fully_connected(const pn_layer* layer, pn_string_out* reason);
pn_status accel_validate_matmul(const pn_layer* layer, pn_string_out* reason);

pn_status accel_create_conv2d(const accel_env* env, const pn_layer* layer,
                              pn_workload** workload_out, pn_string_out* message_out);
pn_status accel_create_fully_connected(const accel_env* env, const pn_layer* layer,
                                       pn_workload** workload_out, pn_string_out* message_out);
pn_status accel_create_matmul(const accel_env* env, const pn_layer* layer,
                              pn_workload** workload_out, pn_string_out* message_out);

#endif /* ACCEL_COMPUTE_H */
