/* CpuAcc blocked-chain upsampling kernels, AVX-512F (see chain/upsample.h): the transposed
 * convolution with kernel = stride, and the NEAREST / LINEAR resize rows. */
#include "kernels/nchwc_kernels.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

#define B NCHWC_BLOCK
#define ACC_MAX 28 /* accumulators of a tile: PW pixels x KW taps */

/* PW input pixels from the one xr0 points at (block 0 of the input row), each giving KW
 * output vectors (pixels (j0 + p) * KW + t of the output row yr points at, from j0 * KW): the
 * accumulators start at the bias, and every input channel adds its broadcast value times the
 * KW weight vectors of its tap row. KW and PW are constants at every call site (the loops
 * unroll, the accumulators stay in registers). */
static inline __attribute__((always_inline)) void deconv_tile(const float* xr0, int64_t xblock, const float* wa,
                                                              const float* bias, float* yr, int64_t cb,
                                                              int64_t ic_last, int clamp, __m512 lo, __m512 hi,
                                                              const int KW, const int PW) {
    __m512 acc[ACC_MAX];
    const __m512 bv = _mm512_load_ps(bias);
#pragma GCC unroll 28
    for (int i = 0; i < KW * PW; ++i) acc[i] = bv;
    for (int64_t c = 0; c < cb; ++c) {
        const float* xr = xr0 + c * xblock;
        const float* wc = wa + c * B * KW * B;
        const int64_t n = c + 1 < cb ? B : ic_last;
        for (int64_t ci = 0; ci < n; ++ci) {
            __m512 w[ACCEL_DECONV_MAX_KW];
#pragma GCC unroll 4
            for (int t = 0; t < KW; ++t) w[t] = _mm512_load_ps(wc + (ci * KW + t) * B);
#pragma GCC unroll 28
            for (int p = 0; p < PW; ++p) {
                const __m512 xv = _mm512_set1_ps(xr[p * B + ci]);
#pragma GCC unroll 4
                for (int t = 0; t < KW; ++t) acc[p * KW + t] = _mm512_fmadd_ps(xv, w[t], acc[p * KW + t]);
            }
        }
    }
#pragma GCC unroll 28
    for (int i = 0; i < KW * PW; ++i) { /* max and min return their second operand, v, when it is NaN */
        __m512 v = acc[i];
        if (clamp > 0) v = _mm512_max_ps(lo, v);
        if (clamp > 1) v = _mm512_min_ps(hi, v);
        _mm512_store_ps(yr + i * B, v);
    }
}

#define DC_ARGS                                                                                             \
    const float *xr0, int64_t xblock, const float *wa, const float *bias, float *yr, int64_t cb, int64_t ic_last, \
        int clamp, __m512 lo, __m512 hi
#define DC(KW, PW)                                                                    \
    case PW:                                                                          \
        deconv_tile(xr0, xblock, wa, bias, yr, cb, ic_last, clamp, lo, hi, KW, PW);   \
        break;

static void deconv_tiles1(DC_ARGS, int pw) {
    switch (pw) {
    DC(1, 1)
    DC(1, 2)
    DC(1, 3)
    DC(1, 4)
    DC(1, 5)
    DC(1, 6)
    DC(1, 7)
    DC(1, 8)
    DC(1, 9)
    DC(1, 10)
    DC(1, 11)
    DC(1, 12)
    DC(1, 13)
    DC(1, 14)
    DC(1, 15)
    DC(1, 16)
    DC(1, 17)
    DC(1, 18)
    DC(1, 19)
    DC(1, 20)
    DC(1, 21)
    DC(1, 22)
    DC(1, 23)
    DC(1, 24)
    DC(1, 25)
    DC(1, 26)
    DC(1, 27)
    DC(1, 28)
    default: break;
    }
}

static void deconv_tiles2(DC_ARGS, int pw) {
    switch (pw) {
    DC(2, 1)
    DC(2, 2)
    DC(2, 3)
    DC(2, 4)
    DC(2, 5)
    DC(2, 6)
    DC(2, 7)
    DC(2, 8)
    DC(2, 9)
    DC(2, 10)
    DC(2, 11)
    DC(2, 12)
    DC(2, 13)
    DC(2, 14)
    default: break;
    }
}

static void deconv_tiles3(DC_ARGS, int pw) {
    switch (pw) {
    DC(3, 1)
    DC(3, 2)
    DC(3, 3)
    DC(3, 4)
    DC(3, 5)
    DC(3, 6)
    DC(3, 7)
    DC(3, 8)
    DC(3, 9)
    default: break;
    }
}

static void deconv_tiles4(DC_ARGS, int pw) {
    switch (pw) {
    DC(4, 1)
    DC(4, 2)
    DC(4, 3)
    DC(4, 4)
    DC(4, 5)
    DC(4, 6)
    DC(4, 7)
    default: break;
    }
}

void accel_nchwc_deconv_row_avx512(const nchwc_view* x, const float* wd, const float* bias, const nchwc_view* y,
                                   int64_t cb, int64_t ic_last, int64_t kh, int64_t kw, int64_t iw, int64_t ob,
                                   int64_t oy, float lo, float hi) {
    const int64_t i = oy / kh, a = oy % kh, pw_max = ACC_MAX / kw;
    const int clamp = hi < INFINITY ? 2 : lo > -INFINITY ? 1 : 0;
    const __m512 lv = _mm512_set1_ps(lo), hv = _mm512_set1_ps(hi);
    const int64_t xblock = x->rows * x->cols * B;
    const float* xrow = x->data + i * x->cols * B;
    const float* wa = wd + (ob * kh + a) * cb * B * kw * B;
    const float* bv = bias + ob * B;
    float* yrow = y->data + ((ob * y->rows + oy) * y->cols) * B;
    for (int64_t j0 = 0; j0 < iw; j0 += pw_max) {
        const int pw = (int)(iw - j0 < pw_max ? iw - j0 : pw_max);
        const float* xr0 = xrow + j0 * B;
        float* yr = yrow + j0 * kw * B;
        switch (kw) {
        case 1: deconv_tiles1(xr0, xblock, wa, bv, yr, cb, ic_last, clamp, lv, hv, pw); break;
        case 2: deconv_tiles2(xr0, xblock, wa, bv, yr, cb, ic_last, clamp, lv, hv, pw); break;
        case 3: deconv_tiles3(xr0, xblock, wa, bv, yr, cb, ic_last, clamp, lv, hv, pw); break;
        default: deconv_tiles4(xr0, xblock, wa, bv, yr, cb, ic_last, clamp, lv, hv, pw); break;
        }
    }
}

void accel_nchwc_resize_row_avx512(const nchwc_view* x, const nchwc_view* y, int64_t b, int64_t oy, int64_t ow,
                                   const int32_t* hi, const float* hw, const int32_t* wi, const float* ww,
                                   int nearest) {
    const float* plane = x->data + b * x->rows * x->cols * B;
    const float* r0 = plane + (int64_t)hi[0] * x->cols * B;
    const float* r1 = plane + (int64_t)hi[1] * x->cols * B;
    float* yr = y->data + ((b * y->rows + oy) * y->cols) * B;
    if (nearest) {
        for (int64_t ox = 0; ox < ow; ++ox) _mm512_store_ps(yr + ox * B, _mm512_load_ps(r0 + (int64_t)wi[2 * ox] * B));
        return;
    }
    const __m512 h0 = _mm512_set1_ps(hw[0]), h1 = _mm512_set1_ps(hw[1]);
    for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t c0 = (int64_t)wi[2 * ox] * B, c1 = (int64_t)wi[2 * ox + 1] * B;
        const __m512 w0 = _mm512_set1_ps(ww[2 * ox]), w1 = _mm512_set1_ps(ww[2 * ox + 1]);
        const __m512 t0 = _mm512_fmadd_ps(_mm512_load_ps(r0 + c1), w1, _mm512_mul_ps(_mm512_load_ps(r0 + c0), w0));
        const __m512 t1 = _mm512_fmadd_ps(_mm512_load_ps(r1 + c1), w1, _mm512_mul_ps(_mm512_load_ps(r1 + c0), w0));
        _mm512_store_ps(yr + ox * B, _mm512_fmadd_ps(t1, h1, _mm512_mul_ps(t0, h0)));
    }
}

#endif
