/*
 * CpuAcc depthwise CONVOLUTION_2D (groups == C, O = m * C for a depth multiplier m), used by
 * ops/convolution_2d.c. NCHW: per output plane and block of output rows, the per-ISA dw_nchw kernel
 * (kernels/depthwise_rows.h). NHWC: per output row, the per-ISA dw_nhwc kernel over channels (m == 1),
 * or a direct loop (m > 1). Bias, addend and the fused activation are applied in the kernels.
 */
#ifndef ACCEL_DEPTHWISE_H
#define ACCEL_DEPTHWISE_H

#include "accel.h"
#include "kernels/vector_kernels.h"

typedef struct accel_dw accel_dw;

/* The depthwise state of a validated depthwise Convolution2d layer (NCHW or NHWC, float32).
 * Constant NHWC weights are transposed here. */
pn_status accel_dw_create(const accel_env* env, const pn_layer* layer, accel_dw** dw_out,
                          pn_string_out* message_out);

/* Frees the state (NULL is a no-op). */
void accel_dw_destroy(accel_dw* dw);

/* Workspace bytes accel_dw_run needs (NHWC weights supplied only at run time: their transpose). */
size_t accel_dw_workspace_bytes(const accel_dw* dw);

/* y = depthwise conv(x, w) + bias (or NULL) + addend (or NULL), then the fused activation;
 * threads over the backend's pool. workspace: accel_dw_workspace_bytes bytes (may be NULL
 * when that is 0). */
void accel_dw_run(const accel_dw* dw, const float* x, const float* w, const float* bias,
                  const float* addend, float* y, void* workspace);

#endif /* ACCEL_DEPTHWISE_H */
