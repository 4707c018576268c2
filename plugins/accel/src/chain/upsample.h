/*
 * CpuAcc blocked-chain upsampling steps (chain/chain.h): a transposed convolution whose kernel
 * equals its stride (no overlap: U-Net's ConvTranspose 2x2 stride 2, each input pixel becomes
 * one kh x kw patch of the output), and a Resize along H and W (NEAREST, or LINEAR with two
 * taps per axis: U-Net's bilinear 2x upsampling, align_corners or half_pixel), both in NCHW16c
 * (ops/conv_nchwc.h), so a decoder's upsampled tensor and its Concat with the skip connection stay
 * inside the chain.
 */
#ifndef ACCEL_CHAIN_UPSAMPLE_H
#define ACCEL_CHAIN_UPSAMPLE_H

#include "ops/conv_nchwc.h"

#include <stdint.h>

/* The packed layout of a non-overlapping transposed convolution's weights (accel_pack_layout). */
#define ACCEL_PACK_NCHWC_DECONV ((accel_pack_layout)24)

/* The weights `w` ([c][o][kh][kw], groups 1) as [ocb][kh][ceil(c/16)][16 ci][kw][16 co] (zeros
 * past the channels), followed by the bias padded to whole 16-channel blocks (zeros where `bias`
 * is NULL): a shared block of `packs`. NULL when out of memory. */
const float* accel_nchwc_packed_deconv(accel_packs* packs, const float* w, const float* bias, int64_t c, int64_t o,
                                       int64_t kh, int64_t kw);

#endif /* ACCEL_CHAIN_UPSAMPLE_H */
