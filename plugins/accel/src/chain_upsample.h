/*
 * CpuAcc blocked-chain upsampling steps (chain_run.h): a transposed convolution whose kernel
 * equals its stride (no overlap: U-Net's ConvTranspose 2x2 stride 2, each input pixel becomes
 * one kh x kw patch of the output), and a Resize along H and W (NEAREST, or LINEAR with two
 * taps per axis: U-Net's bilinear 2x upsampling, align_corners or half_pixel), both in NCHW16c
 * (conv_nchwc.h), so a decoder's upsampled tensor and its Concat with the skip connection stay
 * inside the chain.
 */
#ifndef ACCEL_CHAIN_UPSAMPLE_H
#define ACCEL_CHAIN_UPSAMPLE_H

#include "conv_nchwc.h"

#include <stdint.h>

/* The packed layout of a non-overlapping transposed convolution's weights (accel_pack_layout). */
#define ACCEL_PACK_NCHWC_DECONV ((accel_pack_layout)24)

/* The widest kernel (= stride) along W the transposed-convolution kernel runs. */
#define ACCEL_DECONV_MAX_KW 4

/* The weights `w` ([c][o][kh][kw], groups 1) as [ocb][kh][ceil(c/16)][16 ci][kw][16 co] (zeros
 * past the channels), followed by the bias padded to whole 16-channel blocks (zeros where `bias`
 * is NULL): a shared block of `packs`. NULL when out of memory. */
const float* accel_nchwc_packed_deconv(accel_packs* packs, const float* w, const float* bias, int64_t c, int64_t o,
                                       int64_t kh, int64_t kw);

/* Output row `oy` of output block `ob` of a transposed convolution with kernel = stride (kh x
 * kw, kw <= ACCEL_DECONV_MAX_KW) of one image: input row i = oy / kh, tap row a = oy % kh,
 *   y[ob][oy][j * kw + t] = clamp(bias + sum over (cb, ci) of x[cb][i][j][ci] * wd[ob][a][cb][ci][t])
 * for j < iw, t < kw. x and y view the images' origins; cb input blocks of 16 channels, the
 * last with ic_last real ones; lo, hi: the clamp (+-inf: none). */
void accel_nchwc_deconv_row_avx512(const nchwc_view* x, const float* wd, const float* bias, const nchwc_view* y,
                                   int64_t cb, int64_t ic_last, int64_t kh, int64_t kw, int64_t iw, int64_t ob,
                                   int64_t oy, float lo, float hi);

/* Output row `oy` of block `b` of a resize along H and W, x and y at the images' origins:
 * linear: y[ox] = hw[0] * (ww[2 ox] x[hi[0]][wi[2 ox]] + ww[2 ox + 1] x[hi[0]][wi[2 ox + 1]]) +
 * hw[1] * (the same of row hi[1]), each product summed with a fused multiply-add in that order;
 * nearest: y[ox] = x[hi[0]][wi[2 ox]]. hi, hw: the row's two taps; wi, ww: every column's. */
void accel_nchwc_resize_row_avx512(const nchwc_view* x, const nchwc_view* y, int64_t b, int64_t oy, int64_t ow,
                                   const int32_t* hi, const float* hw, const int32_t* wi, const float* ww,
                                   int nearest);

#endif /* ACCEL_CHAIN_UPSAMPLE_H */
