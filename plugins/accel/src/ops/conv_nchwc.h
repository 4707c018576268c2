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
 * The workload (ops/conv_nchwc.c) takes NCHW tensors: it copies the input into a zero-padded
 * NCHW16c image (the convolution's padding becomes a halo, so the kernel has no border
 * cases), runs the kernel over (image, output-channel pair, output row) jobs on the pool, and
 * writes the NCHW output with addend and activation applied on the way.
 */
#ifndef ACCEL_CONV_NCHWC_H
#define ACCEL_CONV_NCHWC_H

#include "accel.h"
#include "kernels/nchwc_kernels.h"
#include "ops/shared_weights.h"

#include <stdint.h>

/* Work a thread's part of a parallel kernel must have at least (floating-point operations,
 * about 4 microseconds): smaller layers run on the calling thread. */
#define ACCEL_NCHWC_MIN_PART_FLOPS 400000
/* Likewise (ACCEL_NCHWC_MIN_PART_FLOPS) for the layout conversions, in floats moved. */
#define ACCEL_NCHWC_MIN_PART_FLOATS 32768

/* A blocked tensor of `n` images in its storage: every image is `image_floats` floats of
 * [cb = ceil(c/ib)][rows][cols][ib], the c x h x w image at rows [ht, ht + h) and columns
 * [hl, hl + w); everything else (halo, channels past c) is zero. ib is 16, or c for the
 * input of a dense convolution with few channels. */
typedef struct nchwc_tensor {
    int64_t n, c, h, w;
    int64_t ib, cb, rows, cols, ht, hl;
    size_t image_floats;
    float* data; /* 64-byte aligned */
} nchwc_tensor;

/* Writes NCHW `x` into t (every float of the storage: halo and channel padding zeroed).
 * This and accel_nchwc_unpack exist in builds with the x86 kernels only (their transposes are
 * gemm_store_t_avx512). */
void accel_nchwc_pack(accel_threads* threads, const float* x, const nchwc_tensor* t);

/* Writes t's images to NCHW `y`, then adds NCHW `addend` (NULL: none) and applies `act`
 * (NULL: none) with the kernels of `isa`. */
void accel_nchwc_unpack(accel_threads* threads, accel_isa isa, const nchwc_tensor* t, float* y,
                        const float* addend, const pn_activation_desc* act);

/* Output-stationary weight layouts: [ocb][ceil(c/ib)][kh][kw][ib ci][16 co] for a dense
 * convolution (groups 1), [cb][kh][kw][16] for a depthwise one; zeros past the real channels.
 * `w` is the layer's [o][c][kh][kw] (depthwise [c][1][kh][kw]). */
void accel_nchwc_pack_weights(const float* w, int64_t o, int64_t c, int64_t kh, int64_t kw,
                              int64_t ib, float* dst);

/* Input channels per block of a dense convolution reading a tensor of `c` channels it packs
 * itself: 16 when the blocks pay, else all c in one block (for c <= 64; 0: not blocked). */
int64_t accel_nchwc_input_block(int64_t c);
void accel_nchwc_pack_dw_weights(const float* w, int64_t c, int64_t kh, int64_t kw, float* dst);

/* True when 16-channel blocks of `channels` waste at most a quarter of the work. */
int accel_nchwc_blocks_pay(int64_t channels);

/* The taps of a kernel a blocked convolution runs: rows [ky0, ky0 + kh) and columns
 * [kx0, kx0 + kw) of the full_kh x full_kw kernel (a blocked chain drops the taps that read
 * only padding for every output: chain/chain.c). */
typedef struct nchwc_window {
    int64_t ky0, kx0, kh, kw, full_kh, full_kw;
} nchwc_window;

/* The window of all kh x kw taps. */
void accel_nchwc_full_window(nchwc_window* win, int64_t kh, int64_t kw);

/* The weights `w` ([o][c][full_kh][full_kw]; depthwise [c][1][full_kh][full_kw]), the taps of
 * `win`, in the layout of accel_nchwc_pack_weights (depthwise: accel_nchwc_pack_dw_weights) with
 * kh x kw = the window's, followed by the bias padded to whole 16-channel blocks (zeros where
 * `bias` is NULL and past the channels): a shared block of `packs` (ops/shared_weights.h), packed
 * over `threads`. NULL when out of memory. */
const float* accel_nchwc_packed(accel_packs* packs, accel_threads* threads, const float* w, const float* bias,
                                int64_t o, int64_t c, const nchwc_window* win, int64_t ib, int depthwise);

/* The direct blocked convolution for an NCHW Convolution2d layer when it is the better path
 * on this CPU: PN_OK with *workload_out set (its weights a block of `packs`); PN_OK with
 * *workload_out NULL when the layer is not one it runs (no AVX-512, grouped, weights not
 * constant, too few output channels for 16-wide blocks to pay); or an error (out of memory).
 * Assumes CpuAcc accepted the layer (float32). */
pn_status accel_conv_nchwc_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                 pn_workload** workload_out, pn_string_out* message_out);


/* ---- grouped convolutions and channel scales (ops/conv_nchwc_grouped.c, kernels/nchwc_steps_avx512.c) ----
 *
 * A grouped convolution (1 < groups < channels: RegNet's groups of 8 or 16 channels, ResNeXt's)
 * runs on the dense kernel one output block at a time (nb = 1): output block ob reads only the
 * gcb consecutive input blocks from accel_nchwc_group_first(ob) that hold its groups' input
 * channels, with weights [ocb][gcb][kh][kw][16 ci][16 co] that are zero where an input channel
 * is not in the output channel's group. The kernel is called with geom.cb = gcb, the input
 * view moved to block first(ob), and ob's weights: groups of 8 channels cost 2 products per
 * real one (a 16-channel block holds two groups), of 16 or 32 none extra. */

/* The packed layout of a grouped convolution's weights (ops/shared_weights.h's accel_pack_layout). */
#define ACCEL_PACK_NCHWC_GROUPED ((accel_pack_layout)16)

/* Input blocks each output block reads (gcb), or 0 when the blocked kernel does not run the
 * convolution (groups < 2, channels not divisible, c < 16, or more than 4 products per real
 * one: groups of fewer than 4 input channels). */
int64_t accel_nchwc_group_blocks(int64_t c, int64_t o, int64_t groups);

/* The first of the gcb input blocks output block ob reads. */
int64_t accel_nchwc_group_first(int64_t c, int64_t o, int64_t groups, int64_t gcb, int64_t ob);

/* The weights `w` ([o][c/groups][full_kh][full_kw]), the taps of `win`, in the grouped layout
 * above, followed by the bias padded to whole blocks: a shared block of `packs`. NULL when out
 * of memory or when accel_nchwc_group_blocks is 0. */
const float* accel_nchwc_packed_grouped(accel_packs* packs, accel_threads* threads, const float* w,
                                        const float* bias, int64_t o, int64_t c, int64_t groups,
                                        const nchwc_window* win);

#endif /* ACCEL_CONV_NCHWC_H */
