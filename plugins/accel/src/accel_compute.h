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
 *     NCHW: 1x1/stride 1/no padding = direct GEMM on x; otherwise implicit im2col
 *     (packed straight into GEMM panels, no im2col buffer) + GEMM, per group;
 *     depthwise (groups == C, multiplier <= 4) = direct kernel.
 *     NHWC: GEMM with output positions as rows (1x1 direct, else implicit im2col);
 *     depthwise = direct kernel over channels.
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
