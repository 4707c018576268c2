/*
 * CpuAcc's direct blocked 3-D convolution (ops/conv_nchwc_3d.c): a FORWARD 3-D Convolution of
 * groups 1 on the NCHW16c kernels of kernels/nchwc_conv_avx512.c, plane by plane, one kernel
 * call per depth tap accumulating into the output tile (the layout, the order of the sums and
 * the jobs: the .c file's opening comment).
 */
#ifndef ACCEL_CONV_NCHWC_3D_H
#define ACCEL_CONV_NCHWC_3D_H

#include "accel.h"
#include "ops/shared_weights.h"

/* The packed layout of its weights (ops/shared_weights.h's accel_pack_layout): per depth tap
 * accel_nchwc_pack_weights' [ocb][cb][kh][kw][ib][16], then the bias and as many zeros. */
#define ACCEL_PACK_NCHWC_3D ((accel_pack_layout)40)

/* The workload for a FORWARD 3-D Convolution layer (pn_convolution_desc, float32, accepted by
 * CpuAcc) when the blocked kernels run it: PN_OK with *workload_out set (its weights a block of
 * `packs`); PN_OK with *workload_out NULL when they do not (no AVX-512 kernels, groups > 1,
 * weights or bias not constant, an input of more than 64 channels that 16-channel blocks do not
 * pay for, too few output channels for them, an empty tensor): the GEMM path of
 * ops/convolution_nd.c runs it then; or an error (out of memory). */
pn_status accel_conv3d_nchwc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                   pn_workload** workload_out, pn_string_out* message_out);

#endif /* ACCEL_CONV_NCHWC_3D_H */
