/* CpuAcc NCHW16c direct convolution kernel, AVX-512F (see conv_nchwc.h). */
#include "conv_nchwc.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#define PW_MAX 14 /* pixels per tile: 14 x 2 blocks = 28 accumulators of 32 zmm */

/* PW pixels from ox0 of output row oy, NB output blocks from ob. PW and NB are constants at
 * every call site, so the loops unroll into straight-line code. */
static inline __attribute__((always_inline)) void tile(const nchwc_geom* g, const float* xb,
                                                       const float* wb, const float* bias,
                                                       float* yb, int64_t ob, int64_t oy,
                                                       int64_t ox0, const int PW, const int NB) {
    __m512 acc[2][PW_MAX];
    for (int b = 0; b < NB; ++b) {
        __m512 bv = _mm512_load_ps(bias + (ob + b) * NCHWC_BLOCK);
        for (int p = 0; p < PW; ++p) acc[b][p] = bv;
    }
    const int64_t wblock = g->cb * g->kh * g->kw * 256; /* floats per output block */
    const int64_t xstep = g->sw * NCHWC_BLOCK;            /* between neighbouring pixels */
    const float* wob = wb + ob * wblock;
    for (int64_t cb = 0; cb < g->cb; ++cb) {
        for (int64_t ky = 0; ky < g->kh; ++ky) {
            const float* xrow = xb + ((cb * g->ihp + oy * g->sh + ky * g->dh) * g->iwp +
                                      ox0 * g->sw) * NCHWC_BLOCK;
            const float* wrow = wob + (cb * g->kh + ky) * g->kw * 256;
            for (int64_t kx = 0; kx < g->kw; ++kx) {
                const float* xp = xrow + kx * g->dw * NCHWC_BLOCK;
                const float* wp = wrow + kx * 256;
                for (int ci = 0; ci < NCHWC_BLOCK; ++ci) {
                    __m512 w0 = _mm512_load_ps(wp + ci * NCHWC_BLOCK);
                    __m512 w1 = NB > 1 ? _mm512_load_ps(wp + wblock + ci * NCHWC_BLOCK) : w0;
#pragma GCC unroll 14
                    for (int p = 0; p < PW; ++p) {
                        __m512 xv = _mm512_set1_ps(xp[p * xstep + ci]);
                        acc[0][p] = _mm512_fmadd_ps(xv, w0, acc[0][p]);
                        if (NB > 1) acc[1][p] = _mm512_fmadd_ps(xv, w1, acc[1][p]);
                    }
                }
            }
        }
    }
    for (int b = 0; b < NB; ++b) {
        float* yp = yb + (((ob + b) * g->oh + oy) * g->ow + ox0) * NCHWC_BLOCK;
        for (int p = 0; p < PW; ++p) _mm512_store_ps(yp + p * NCHWC_BLOCK, acc[b][p]);
    }
}

/* A tail tile of `pw` (1..PW_MAX) pixels, dispatched to its unrolled instance. */
#define TAIL_CASE(n)                                                       \
    case n:                                                                \
        if (nb > 1) tile(g, xb, wb, bias, yb, ob, oy, ox0, n, 2);          \
        else tile(g, xb, wb, bias, yb, ob, oy, ox0, n, 1);                 \
        break;

static void tile_any(const nchwc_geom* g, const float* xb, const float* wb, const float* bias,
                     float* yb, int64_t ob, int nb, int64_t oy, int64_t ox0, int pw) {
    switch (pw) {
        TAIL_CASE(1) TAIL_CASE(2) TAIL_CASE(3) TAIL_CASE(4) TAIL_CASE(5) TAIL_CASE(6)
        TAIL_CASE(7) TAIL_CASE(8) TAIL_CASE(9) TAIL_CASE(10) TAIL_CASE(11) TAIL_CASE(12)
        TAIL_CASE(13) TAIL_CASE(14)
        default:
            break;
    }
}

void accel_nchwc_conv_row_avx512(const nchwc_geom* g, const float* xb, const float* wb,
                                 const float* bias, float* yb, int64_t ob, int nb, int64_t oy) {
    /* Equal tiles of at most PW_MAX pixels (56 = 4 x 14, 28 = 2 x 14, 7 = 7, 20 = 10 + 10). */
    int64_t tiles = (g->ow + PW_MAX - 1) / PW_MAX;
    int64_t base = g->ow / tiles, extra = g->ow % tiles, ox0 = 0;
    for (int64_t t = 0; t < tiles; ++t) {
        int pw = (int)(base + (t < extra ? 1 : 0));
        if (pw == PW_MAX) {
            if (nb > 1) tile(g, xb, wb, bias, yb, ob, oy, ox0, PW_MAX, 2);
            else tile(g, xb, wb, bias, yb, ob, oy, ox0, PW_MAX, 1);
        } else {
            tile_any(g, xb, wb, bias, yb, ob, nb, oy, ox0, pw);
        }
        ox0 += pw;
    }
}

#else
typedef int accel_conv_nchwc_avx512_unused; /* built without -mavx512f: no kernel */
#endif
