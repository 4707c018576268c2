/*
 * CpuAcc direct convolution in the blocked layout NCHW16c (AVX-512).
 *
 * A tensor [N, C, H, W] in NCHW16c is [N][ceil(C/16)][H][W][16]: channel c of pixel (y, x) is
 * element (c % 16) of the 16-float vector at block c / 16, so one zmm register holds 16
 * channels of one pixel. The kernel computes an output row segment of up to 14 pixels x 32
 * output channels in 28 zmm accumulators: for every input channel of every tap it broadcasts
 * one input value per pixel and multiplies it with two 16-channel weight vectors; nothing is
 * packed per call (the input is read in place), so the arithmetic runs near the FMA peak.
 *
 * The workload (conv_nchwc.c) takes NCHW tensors: it copies the input into a zero-padded
 * NCHW16c image (the convolution's padding becomes a halo, so the kernel has no border
 * cases), runs the kernel over (image, output-channel pair, output row) jobs on the pool, and
 * writes the NCHW output with addend and activation applied on the way.
 */
#ifndef ACCEL_CONV_NCHWC_H
#define ACCEL_CONV_NCHWC_H

#include "accel.h"

#include <stdint.h>

#define NCHWC_BLOCK 16

/* Geometry of one image, in blocked units. */
typedef struct nchwc_geom {
    int64_t cb;         /* input channel blocks */
    int64_t ihp, iwp;   /* rows and columns of the zero-padded input */
    int64_t ocb;        /* output channel blocks */
    int64_t oh, ow;     /* output rows and columns */
    int64_t kh, kw, sh, sw, dh, dw;
} nchwc_geom;

/* Output row `oy` of output blocks [ob, ob + nb), nb in {1, 2}, of one image:
 *   yb[b][oy][ox][0..16) = bias[b*16 ..] + sum over (cb, ky, kx, ci) of
 *       xb[cb][oy*sh + ky*dh][ox*sw + kx*dw][ci] * wb[b][cb][ky][kx][ci][0..16)
 * xb: the image's padded blocked input [cb][ihp][iwp][16]; wb: all weights
 * [ocb][cb][kh][kw][16][16]; bias: ocb*16 floats; yb: the image's blocked output
 * [ocb][oh][ow][16]. All 64-byte aligned. */
void accel_nchwc_conv_row_avx512(const nchwc_geom* g, const float* xb, const float* wb,
                                 const float* bias, float* yb, int64_t ob, int nb, int64_t oy);

/* The direct blocked convolution for an NCHW Convolution2d layer when it is the better path
 * on this CPU: PN_OK with *workload_out set; PN_OK with *workload_out NULL when the layer is
 * not one it runs (no AVX-512, grouped, weights not constant, too few channels for 16-wide
 * blocks to pay); or an error (out of memory). Assumes accel_validate_conv2d passed. */
pn_status accel_conv_nchwc_create(const accel_env* env, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out);

#endif /* ACCEL_CONV_NCHWC_H */
