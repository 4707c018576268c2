/*
 * CpuAcc's vector kernels on the blocked layout NCHW16c (AVX-512: nchwc_conv_avx512.c,
 * nchwc_steps_avx512.c, nchwc_upsample_avx512.c): the dense, depthwise and grouped
 * convolution tiles, pooling, and the row steps of blocked chains (channel scale, batch
 * normalization, sums, SiLU, transposed convolution with kernel = stride, resize).
 *
 * A tensor [N, C, H, W] in NCHW16c is [N][ceil(C/16)][H][W][16]: channel c of pixel (y, x) is
 * element (c % 16) of the 16-float vector at block c / 16, so one zmm register holds 16
 * channels of one pixel. The convolution kernel computes an output row segment of up to 14
 * pixels x 32 output channels in 28 zmm accumulators: for every input channel of every tap it
 * broadcasts one input value per pixel and multiplies it with two 16-channel weight vectors;
 * nothing is packed per call (the input is read in place), so the arithmetic runs near the FMA
 * peak. The workloads that call these are ops/conv_nchwc.h (one layer) and chain/chain.h
 * (blocked chains). They exist in builds with the x86 kernels only (ACCEL_HAVE_X86_KERNELS);
 * the CPU's kernel set (accel_kernel_set.nchwc, accel.h) says whether they may run.
 */
#ifndef ACCEL_NCHWC_KERNELS_H
#define ACCEL_NCHWC_KERNELS_H

#include "accel.h"

#include <stdint.h>

#define NCHWC_BLOCK 16

/* The most bytes of weights a pair of output blocks multiplies with in one pass over a tile's
 * input blocks (accel_nchwc_pass_blocks): the smallest per-core L2 of the CPUs this runs on
 * (1 MiB on Zen 4 and 5; 1.25 to 2 MiB on Xeons since Ice Lake) less room for the input rows. */
#define ACCEL_NCHWC_PASS_BYTES (768 * 1024)
/* The bytes of a pair's weights per pass when it runs in passes: 288 KiB, 16 input blocks of
 * a 3x3 (FCN's 3x3 2048 -> 512 on 28 x 28, one Zen 5 core: 60.1 ms in one pass, 54.5-55.2 in
 * passes of 144 to 576 KiB, and 62.6-64.0 -> 59.1-61.6 alternated an hour later; two cores:
 * 31.1-31.5 -> 29.6-30.3 ms). */
#define ACCEL_NCHWC_PASS_TARGET (288 * 1024)
/* Geometry of one image's convolution, in blocked units. */
typedef struct nchwc_geom {
    int64_t cb;         /* input channel blocks */
    int64_t ib;         /* input channels per block: 16, or all of them (one block) for a
                           dense convolution whose input has too few channels for 16-blocks */
    int64_t ic_last;    /* real channels in the last input block (the rest are zeros the
                           dense kernel skips) */
    int64_t ocb;        /* output channel blocks */
    int64_t oc_last;    /* real channels in the last output block (1..16) */
    int64_t oh, ow;     /* output rows and columns */
    int64_t kh, kw, sh, sw, dh, dw;
    /* Optional (0: every tap row runs): the image's rows in the coordinates the kernel reads x
     * in, [img_top, img_top + img_h). A one-row tile of output row oy then runs only the tap
     * rows ky with img_top <= oy * sh + ky * dh < img_top + img_h (the others read only the
     * zero halo: a dilated convolution on a small map, the border rows of any padded one). */
    int64_t img_top, img_h;
    /* Optional (0: every tap column runs): the image's columns [img_left, img_left + img_w) in
     * the kernel's x coordinates. One-row tiles then split a row where the set of tap columns
     * that reach the image changes, when that saves at least a quarter of the row's products
     * (a dilated convolution on a small map: DeepLabV3's rate-12 3x3 on 14 x 14 runs 18 of
     * every 42 pixel-taps of a row), each part running only its taps. */
    int64_t img_left, img_w;
    /* Set by the kernel for the parts of such a row: the tap columns [tx0, tx1) a tile runs
     * (tx1 = 0: all). */
    int64_t tx0, tx1;
    /* Input blocks of the weights' layout (0: cb). A pass over some of the input blocks
     * (accel_nchwc_conv_rows_passes_avx512) runs with cb < wcb, x and the weights moved to its
     * first block. */
    int64_t wcb;
} nchwc_geom;

/* One image of a blocked tensor inside its storage [blocks][rows][cols][16] (an input with
 * geom.ib channels per block: [blocks][rows][cols][ib]): `data` is the
 * element (block 0, row 0, column 0) of the window a kernel sees (for an input, the top-left
 * corner of the padded window; the zeros around an image are the storage's halo), `rows` and
 * `cols` the storage's rows per block and pixels per row. */
typedef struct nchwc_view {
    float* data;
    int64_t rows, cols;
} nchwc_view;

/* What a kernel does to each output vector before storing it: + addend (a view shaped like
 * the output, or data NULL), then clamp to [lo, hi] (+-inf: none; relu is [0, inf)). */
typedef struct nchwc_epilogue {
    nchwc_view addend;
    float lo, hi;
} nchwc_epilogue;

/* Output rows [oy, oy + rows) of output blocks [ob, ob + nb), nb in {1, 2}, of one image:
 *   y[b][r][ox] = clamp(bias[b] + addend[b][r][ox] + sum over (cb, ky, kx, ci) of
 *       x[cb][r*sh + ky*dh][ox*sw + kx*dw][ci] * wb[b][cb][ky][kx][ci][0..16))
 * wb: all weights [ocb][cb][kh][kw][ib][16]; bias: ocb*16 floats. Every pointer 64-byte
 * aligned (views: data and storage rows of whole vectors). Tiles are up to 14 pixels (28 with
 * nb = 1) of a row, or of several rows when a row has half that or fewer
 * (accel_nchwc_rows_per_job keeps them whole). */
void accel_nchwc_conv_rows_avx512(const nchwc_geom* g, const nchwc_view* x, const float* wb,
                                  const float* bias, const nchwc_view* y,
                                  const nchwc_epilogue* epi, int64_t ob, int nb, int64_t oy,
                                  int64_t rows);

/* accel_nchwc_conv_rows_avx512 in passes over `kb` input blocks at a time (kb 0, or at least
 * g->cb: one pass), so that the weights of a pair of output blocks a pass multiplies with stay
 * in the core's cache across the tiles of the call: the first pass starts from the bias and
 * the addend, each later one adds its products to the sums stored so far, and only the last
 * clamps. The sums' order differs from one pass (float32 rounding); the bits do not depend
 * on the thread count. */
void accel_nchwc_conv_rows_passes_avx512(const nchwc_geom* g, const nchwc_view* x, const float* wb,
                                         const float* bias, const nchwc_view* y, const nchwc_epilogue* epi,
                                         int64_t ob, int nb, int64_t oy, int64_t rows, int64_t kb);

/* The input blocks per pass for a dense convolution of geometry g (ib 16, groups 1): 0 (one
 * pass) unless the weights of a pair of output blocks exceed ACCEL_NCHWC_PASS_BYTES. */
int64_t accel_nchwc_pass_blocks(const nchwc_geom* g);

/* Output rows per job of the dense kernel for output width `ow` and `ocb` output blocks: 1,
 * or the rows of one multi-row tile for narrow images (tiles hold 14 pixels of two output
 * blocks, or 28 pixels when there is one block). */
static inline int64_t accel_nchwc_rows_per_job(int64_t ow, int64_t ocb) {
    int64_t maxw = ocb >= 2 ? 14 : 28;
    return ow * 2 > maxw ? 1 : maxw / ow;
}

/* Depthwise (groups = channels, one output channel per input channel) output row `oy` of
 * block `b`: y[b][oy][ox] = clamp(bias[b] + addend + sum over (ky, kx) of
 * x[b][oy*sh + ky*dh][ox*sw + kx*dw] * wd[b][ky][kx][0..16)). wd: [ocb][kh][kw][16]. */
void accel_nchwc_dwconv_row_avx512(const nchwc_geom* g, const nchwc_view* x, const float* wd,
                                   const float* bias, const nchwc_view* y,
                                   const nchwc_epilogue* epi, int64_t b, int64_t oy);

/* A MAX or AVERAGE pooling on blocked tensors (CpuRef's semantics: taps outside the image
 * are skipped; MAX of no tap is -inf and a NaN tap wins; AVERAGE divides by the real taps, or
 * with include_padding by the taps inside the padded input). */
typedef struct nchwc_pool {
    int kind;                  /* PN_POOLING_MAX or PN_POOLING_AVERAGE */
    int include_padding;
    int64_t h, w;              /* input image rows and columns */
    int64_t oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
} nchwc_pool;

/* Output row `oy` of channel block `b` of one image; x views the input image's origin (row 0,
 * column 0 of the image, not of its halo), y the output's. */
void accel_nchwc_pool_row_avx512(const nchwc_pool* pp, const nchwc_view* x, const nchwc_view* y,
                                 int64_t b, int64_t oy);

/* dst[3 * x + c] = src[c * plane + x] for x < w, c < 3: one row of a 3-channel NCHW image
 * interleaved as a single block of 3 (an RGB input read by a chain's first convolution). */
void accel_nchwc_pack_row3_avx512(const float* src, int64_t plane, float* dst, int64_t w);

/* Channel scale (squeeze-and-excitation's product x * s, s of shape [N, C, 1, 1]): output row
 * `oy` of block `b` of one image, y[b][oy][ox] = x[b][oy][ox] * s[b], both views at the
 * image's origin, s the 16 floats of block b. */
void accel_nchwc_scale_row_avx512(const nchwc_view* x, const float* s, const nchwc_view* y, int64_t b,
                                  int64_t oy, int64_t ow);

/* Batch normalization in a chain: y[ox] = min(hi, max(lo, fma(x[ox] - m, a, c))) for ox < ow, the
 * 16-channel vectors of one block row, coef = a[16], m[16], c[16] of the block (the same
 * operations, in the same order, as ops/batch_norm.c's rows; lo, hi: +-inf for none). */
void accel_nchwc_affine_row_avx512(const float* x, const float* coef, float* y, int64_t ow, float lo, float hi);

/* y[ox] = min(hi, max(lo, a[ox] + b[ox])) for ox < ow, 16 channels each (a chain's sum step:
 * kernels/nchwc_steps_avx512.c). */
void accel_nchwc_add_row_avx512(const float* a, const float* b, float* y, int64_t ow, float lo, float hi);

/* y[i] = y[i] sigmoid(y[i]) (SWISH with alpha 1, SiLU) for i < n, in place (kernels/nchwc_steps_avx512.c). */
void accel_nchwc_silu_avx512(float* y, int64_t n);

/* Zeros lanes [n, 16) of `count` consecutive vectors (the channels past the last of a blocked
 * tensor, after an activation that does not map 0 to 0). */
void accel_nchwc_zero_tail_avx512(float* v, int64_t count, int64_t n);

/* The widest kernel (= stride) along W the transposed-convolution kernel runs. */
#define ACCEL_DECONV_MAX_KW 4

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

#endif /* ACCEL_NCHWC_KERNELS_H */
