/* CpuAcc NCHW16c direct convolution kernels, AVX-512F (see ops/conv_nchwc.h). */
#include "kernels/nchwc_kernels.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

#define B NCHWC_BLOCK
/* The loops over a tile's pixels and blocks carry "#pragma GCC unroll" everywhere, the
 * epilogue's included: a loop GCC leaves rolled indexes acc[] with a variable and so keeps the
 * accumulators in memory (a 16 -> 96 1x1 convolution on 112 x 112 ran at 65 instead of 83
 * GFLOP/s on one Zen 4 core, depthwise 3x3 rows at 61 instead of 73). */
#define PW_MAX 14  /* pixels per tile of two output blocks: 14 x 2 = 28 accumulators of 32 zmm */
#define PW1_MAX 28 /* pixels per tile of one output block */

/* Floats ahead of the weight vectors a tile multiplies with that it asks the caches for (8 KiB:
 * about 1800 cycles of a full tile's work). A tile of a small map is one of few per output
 * block pair (4 on 7 x 7), so the first streams the pair's weights from memory (ResNet's last
 * stage: 9.4 MB per 3x3 layer) with little work per line; the hardware prefetchers run too few
 * lines ahead for that. Four 512-channel 3x3 layers on 7 x 7 in a chain (weights from memory),
 * one Zen 5 core: 3.98 -> 3.15 ms with the edge tiles; in the caches, no difference. */
#define W_AHEAD 2048
/* Only where a pair's weights fit in L2 with room to spare, the budget passes are cut to
 * (ACCEL_NCHWC_PASS_BYTES): larger ones (FCN's 3x3 2048 -> 512 on 28 x 28: 2.4 MB a pair, before
 * it ran in passes) stream from L3 for every tile, which the hardware prefetchers keep up with,
 * and asking for them too made that layer 10 % slower. */
#define W_AHEAD_MAX_BYTES ACCEL_NCHWC_PASS_BYTES

/* Adds the addend vector (if any), clamps (clamp: 0 none, 1 max with lo, 2 max and min) and
 * stores one output vector. The vector is the second operand of max/min, which return it
 * when it is NaN: NaN propagates. */
static inline __attribute__((always_inline)) void finish(__m512 v, float* dst, const float* add,
                                                         int clamp, __m512 lo, __m512 hi) {
    if (add != NULL) v = _mm512_add_ps(v, _mm512_load_ps(add));
    if (clamp > 0) v = _mm512_max_ps(lo, v);
    if (clamp > 1) v = _mm512_min_ps(hi, v);
    _mm512_store_ps(dst, v);
}

/* Floats between the weights of two neighbouring output blocks (nchwc_geom.wcb). */
static inline int64_t w_stride(const nchwc_geom* g) {
    return (g->wcb > 0 ? g->wcb : g->cb) * g->kh * g->kw * g->ib * B;
}

/* How far ahead (floats) a tile of `nb` output blocks asks for its weights: W_AHEAD where their
 * weights over g's input blocks (one pass's, nchwc_geom.wcb) fit in W_AHEAD_MAX_BYTES, else 0. */
static inline int64_t w_ahead(const nchwc_geom* g, int nb) {
    return g->cb * g->kh * g->kw * g->ib * B * nb * (int64_t)sizeof(float) <= W_AHEAD_MAX_BYTES ? W_AHEAD : 0;
}

/* The tap rows [*ky0, *ky1) a one-row tile of output row oy runs (nchwc_geom.img_h). */
static inline __attribute__((always_inline)) void tap_rows(const nchwc_geom* g, int64_t oy, int64_t* ky0,
                                                           int64_t* ky1) {
    *ky0 = 0;
    *ky1 = g->kh;
    if (g->img_h > 0) {
        const int64_t top = oy * g->sh;
        while (*ky0 < *ky1 && top + *ky0 * g->dh < g->img_top) ++*ky0;
        while (*ky1 > *ky0 && top + (*ky1 - 1) * g->dh >= g->img_top + g->img_h) --*ky1;
    }
}

/* The clamp finish() applies for an epilogue. */
static int clamp_kind(const nchwc_epilogue* epi) {
    return epi->hi < INFINITY ? 2 : epi->lo > -INFINITY ? 1 : 0;
}

/* The accumulators of a tile of PW pixels of NB output blocks from ob, each its block's bias. */
static inline __attribute__((always_inline)) void init_tile(__m512 acc[2][PW1_MAX], const float* bias, int64_t ob,
                                                            const int PW, const int NB) {
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) {
        const __m512 bv = _mm512_load_ps(bias + (ob + b) * B);
#pragma GCC unroll 28
        for (int p = 0; p < PW; ++p) acc[b][p] = bv;
    }
}

/* The epilogue of a tile of PW pixels of NB output blocks in rows of W pixels (tile_xs's
 * layout): each accumulator finished (addend, clamp) into its pixel of y. */
static inline __attribute__((always_inline)) void store_tile(__m512 acc[2][PW1_MAX], const nchwc_view* y,
                                                             const nchwc_epilogue* epi, int64_t ob, int64_t oy,
                                                             int64_t ox0, const int PW, const int NB, const int W) {
    const __m512 lo = _mm512_set1_ps(epi->lo), hi = _mm512_set1_ps(epi->hi);
    const int clamp = clamp_kind(epi);
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) {
        float* yb = y->data + (((ob + b) * y->rows + oy) * y->cols + ox0) * B;
        const float* ab = epi->addend.data != NULL
                              ? epi->addend.data + (((ob + b) * epi->addend.rows + oy) * epi->addend.cols + ox0) * B
                              : NULL;
#pragma GCC unroll 28
        for (int p = 0; p < PW; ++p) {
            finish(acc[b][p], yb + ((p / W) * y->cols + p % W) * B,
                   ab != NULL ? ab + ((p / W) * epi->addend.cols + p % W) * B : NULL, clamp, lo, hi);
        }
    }
}

/* PW pixels of NB output blocks from ob, in rows of W pixels: pixel p is column ox0 + p % W of
 * output row oy + p / W (W = PW: one row; W = 7 with PW = 14 or 28: the rows of a 7-wide
 * image). PW, NB and W are constants at every call site, so the loops unroll into straight-line
 * code; so is XS, the floats between neighbouring input pixels, when it is not 0 (16 or 32:
 * 16-channel blocks at stride 1 or 2), which turns every broadcast's address into a row base
 * (one register per row) + constant. */
static inline __attribute__((always_inline)) void tile_xs(const nchwc_geom* g, const nchwc_view* x,
                                                          const float* wb, const float* bias,
                                                          const nchwc_view* y,
                                                          const nchwc_epilogue* epi, int64_t ob,
                                                          int64_t oy, int64_t ox0, const int PW,
                                                          const int NB, const int W, const int XS) {
    __m512 acc[2][PW1_MAX]; /* NB * PW <= 28 */
    init_tile(acc, bias, ob, PW, NB);
    const int64_t ib = g->ib;                              /* input channels per block */
    const int64_t wblock = w_stride(g); /* floats between two output blocks' weights */
    const int64_t xstep = XS > 0 ? XS : g->sw * ib;        /* between neighbouring pixels */
    const int64_t rstride = g->sh * x->cols * ib;          /* between the rows of two outputs */
    const float* wob = wb + ob * wblock;
    int64_t ky0 = 0, ky1 = g->kh;
    if (W == PW) { /* one output row: only the tap rows that read the image */
        tap_rows(g, oy, &ky0, &ky1);
    }
    const int64_t kxa = g->tx1 > 0 ? g->tx0 : 0, kxb = g->tx1 > 0 ? g->tx1 : g->kw;
    for (int64_t cb = 0; cb < g->cb; ++cb) {
        const int64_t ci_n = cb == g->cb - 1 ? g->ic_last : ib;
        if (XS == B && cb + 1 < g->cb) {
            if (g->kh * g->kw == 1) {
                /* a 1x1 tile reads each pixel's line of a block once per block: the next block's
                 * lines are asked for now, behind this block's products */
                const float* nx = x->data + (((cb + 1) * x->rows + oy * g->sh) * x->cols + ox0 * g->sw) * ib;
#pragma GCC unroll 28
                for (int p = 0; p < PW; ++p) {
                    _mm_prefetch((const char*)(nx + (p / W) * rstride + (p % W) * xstep), _MM_HINT_T0);
                }
            }
        }
        for (int64_t ky = ky0; ky < ky1; ++ky) {
            const float* xrow = x->data + ((cb * x->rows + oy * g->sh + ky * g->dh) * x->cols +
                                           ox0 * g->sw) * ib;
            const float* wrow = wob + (cb * g->kh + ky) * g->kw * ib * B;
            for (int64_t kx = kxa; kx < kxb; ++kx) {
                const float* xp = xrow + kx * g->dw * ib;
                const float* wp = wrow + kx * ib * B;
                for (int64_t ci = 0; ci < ci_n; ++ci) {
                    __m512 w0 = _mm512_load_ps(wp + ci * B);
                    __m512 w1 = NB > 1 ? _mm512_load_ps(wp + wblock + ci * B) : w0;
#pragma GCC unroll 28
                    for (int p = 0; p < PW; ++p) {
                        __m512 xv = _mm512_set1_ps(xp[(p / W) * rstride + (p % W) * xstep + ci]);
                        acc[0][p] = _mm512_fmadd_ps(xv, w0, acc[0][p]);
                        if (NB > 1) acc[1][p] = _mm512_fmadd_ps(xv, w1, acc[1][p]);
                    }
                }
            }
        }
    }
    store_tile(acc, y, epi, ob, oy, ox0, PW, NB, W);
}

/* tile_xs for two output blocks of which the second (the layer's last) holds 8 or fewer real
 * channels: that block is computed in 256-bit registers, which on cores that split a 512-bit
 * FMA in two halves costs half (24 channels: 1.5 units of FMA per pixel instead of 2). Its
 * upper 8 lanes are stored as zeros, as the padded channels of a blocked tensor must be. */
static inline __attribute__((always_inline)) void tile_half(const nchwc_geom* g, const nchwc_view* x,
                                                            const float* wb, const float* bias,
                                                            const nchwc_view* y,
                                                            const nchwc_epilogue* epi, int64_t ob,
                                                            int64_t oy, int64_t ox0, const int XS) {
    __m512 acc0[PW_MAX];
    __m256 acc1[PW_MAX];
    const __m512 b0 = _mm512_load_ps(bias + ob * B);
    const __m256 b1 = _mm256_load_ps(bias + (ob + 1) * B);
#pragma GCC unroll 28
    for (int p = 0; p < PW_MAX; ++p) {
        acc0[p] = b0;
        acc1[p] = b1;
    }
    const int64_t ib = g->ib;
    const int64_t wblock = w_stride(g);
    const int64_t xstep = XS > 0 ? XS : g->sw * ib;
    const float* wob = wb + ob * wblock;
    int64_t ky0 = 0, ky1 = g->kh;
    tap_rows(g, oy, &ky0, &ky1); /* one output row: only the tap rows that read the image */
    const int64_t kxa = g->tx1 > 0 ? g->tx0 : 0, kxb = g->tx1 > 0 ? g->tx1 : g->kw;
    for (int64_t cb = 0; cb < g->cb; ++cb) {
        const int64_t ci_n = cb == g->cb - 1 ? g->ic_last : ib;
        for (int64_t ky = ky0; ky < ky1; ++ky) {
            const float* xrow = x->data + ((cb * x->rows + oy * g->sh + ky * g->dh) * x->cols +
                                           ox0 * g->sw) * ib;
            const float* wrow = wob + (cb * g->kh + ky) * g->kw * ib * B;
            for (int64_t kx = kxa; kx < kxb; ++kx) {
                const float* xp = xrow + kx * g->dw * ib;
                const float* wp = wrow + kx * ib * B;
                for (int64_t ci = 0; ci < ci_n; ++ci) {
                    const __m512 w0 = _mm512_load_ps(wp + ci * B);
                    const __m256 w1 = _mm256_load_ps(wp + wblock + ci * B);
#pragma GCC unroll 14
                    for (int p = 0; p < PW_MAX; ++p) {
                        const __m512 xv = _mm512_set1_ps(xp[p * xstep + ci]);
                        acc0[p] = _mm512_fmadd_ps(xv, w0, acc0[p]);
                        acc1[p] = _mm256_fmadd_ps(_mm512_castps512_ps256(xv), w1, acc1[p]);
                    }
                }
            }
        }
    }
    const __m512 lo = _mm512_set1_ps(epi->lo), hi = _mm512_set1_ps(epi->hi);
    const int clamp = clamp_kind(epi);
#pragma GCC unroll 2
    for (int b = 0; b < 2; ++b) {
        int64_t off = (((ob + b) * y->rows + oy) * y->cols + ox0) * B;
        const float* add = NULL;
        if (epi->addend.data != NULL) {
            add = epi->addend.data + (((ob + b) * epi->addend.rows + oy) * epi->addend.cols + ox0) * B;
        }
#pragma GCC unroll 28
        for (int p = 0; p < PW_MAX; ++p) {
            __m512 v = b == 0 ? acc0[p] : _mm512_zextps256_ps512(acc1[p]);
            finish(v, y->data + off + p * B, add != NULL ? add + p * B : NULL, clamp, lo, hi);
        }
    }
}

/* tile_xs with the pixel step a constant where it is one of the common two. */
static inline __attribute__((always_inline)) void tile(const nchwc_geom* g, const nchwc_view* x,
                                                       const float* wb, const float* bias,
                                                       const nchwc_view* y, const nchwc_epilogue* epi,
                                                       int64_t ob, int64_t oy, int64_t ox0,
                                                       const int PW, const int NB) {
    if (NB > 1 && PW == PW_MAX && ob + 2 == g->ocb && g->oc_last <= 8) {
        if (g->ib == B && g->sw == 1) tile_half(g, x, wb, bias, y, epi, ob, oy, ox0, B);
        else tile_half(g, x, wb, bias, y, epi, ob, oy, ox0, 0);
        return;
    }
    if (g->ib == B && g->sw == 1) {
        tile_xs(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, PW, B);
    } else if (g->ib == B && g->sw == 2) {
        tile_xs(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, PW, 2 * B);
    } else if (g->ib == 3 && g->sw == 2) { /* an RGB input at stride 2 (the ResNet stem) */
        tile_xs(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, PW, 6);
    } else {
        tile_xs(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, PW, 0);
    }
}

/* Like tile(), for PW pixels spread over several output rows (small images: 7 x 7 outputs
 * give 14-pixel tiles of two rows): pixel p reads the input at x + xoff[p] and writes the
 * output at y + yoff[p] (addend likewise, at aoff[p]). */
static inline __attribute__((always_inline)) void tile_rows(const nchwc_geom* g, const nchwc_view* x,
                                                            const float* wb, const float* bias,
                                                            const nchwc_view* y,
                                                            const nchwc_epilogue* epi, int64_t ob,
                                                            const int64_t* xoff, const int64_t* yoff,
                                                            const int64_t* aoff, const int PW,
                                                            const int NB) {
    __m512 acc[2][PW1_MAX]; /* NB * PW <= 28 */
    init_tile(acc, bias, ob, PW, NB);
    const int64_t ib = g->ib;
    const int64_t wblock = w_stride(g);
    const float* wob = wb + ob * wblock;
    const int64_t kxa = g->tx1 > 0 ? g->tx0 : 0, kxb = g->tx1 > 0 ? g->tx1 : g->kw;
    for (int64_t cb = 0; cb < g->cb; ++cb) {
        const int64_t ci_n = cb == g->cb - 1 ? g->ic_last : ib;
        for (int64_t ky = 0; ky < g->kh; ++ky) {
            const float* xrow = x->data + (cb * x->rows + ky * g->dh) * x->cols * ib;
            const float* wrow = wob + (cb * g->kh + ky) * g->kw * ib * B;
            for (int64_t kx = kxa; kx < kxb; ++kx) {
                const float* xp = xrow + kx * g->dw * ib;
                const float* wp = wrow + kx * ib * B;
                for (int64_t ci = 0; ci < ci_n; ++ci) {
                    __m512 w0 = _mm512_load_ps(wp + ci * B);
                    __m512 w1 = NB > 1 ? _mm512_load_ps(wp + wblock + ci * B) : w0;
#pragma GCC unroll 28
                    for (int p = 0; p < PW; ++p) {
                        __m512 xv = _mm512_set1_ps(xp[xoff[p] + ci]);
                        acc[0][p] = _mm512_fmadd_ps(xv, w0, acc[0][p]);
                        if (NB > 1) acc[1][p] = _mm512_fmadd_ps(xv, w1, acc[1][p]);
                    }
                }
            }
        }
    }
    const __m512 lo = _mm512_set1_ps(epi->lo), hi = _mm512_set1_ps(epi->hi);
    const int clamp = clamp_kind(epi);
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) {
        float* yb = y->data + (ob + b) * y->rows * y->cols * B;
        const float* ab = epi->addend.data != NULL
                              ? epi->addend.data + (ob + b) * epi->addend.rows * epi->addend.cols * B
                              : NULL;
#pragma GCC unroll 28
        for (int p = 0; p < PW; ++p) {
            finish(acc[b][p], yb + yoff[p], ab != NULL ? ab + aoff[p] : NULL, clamp, lo, hi);
        }
    }
}

/* Tiles of `pw` pixels (1..PW_MAX for nb = 2, 1..PW1_MAX for nb = 1), dispatched to their
 * unrolled instances: along one row from (oy, ox0), or at the offsets of tile_rows. */
#define ROW_CASE(n)                                                    \
    case n:                                                            \
        if (nb > 1) tile(g, x, wb, bias, y, epi, ob, oy, ox0, n, 2);   \
        else tile(g, x, wb, bias, y, epi, ob, oy, ox0, n, 1);          \
        break;
#define ROW_CASE1(n)                                                   \
    case n:                                                            \
        tile(g, x, wb, bias, y, epi, ob, oy, ox0, n, 1);               \
        break;
#define ROWS_CASE(n)                                                                \
    case n:                                                                         \
        if (nb > 1) tile_rows(g, x, wb, bias, y, epi, ob, xoff, yoff, aoff, n, 2);  \
        else tile_rows(g, x, wb, bias, y, epi, ob, xoff, yoff, aoff, n, 1);         \
        break;
#define ROWS_CASE1(n)                                                               \
    case n:                                                                         \
        tile_rows(g, x, wb, bias, y, epi, ob, xoff, yoff, aoff, n, 1);              \
        break;

static void tile_row_any(const nchwc_geom* g, const nchwc_view* x, const float* wb, const float* bias,
                         const nchwc_view* y, const nchwc_epilogue* epi, int64_t ob, int nb,
                         int64_t oy, int64_t ox0, int pw) {
    switch (pw) {
        ROW_CASE(1) ROW_CASE(2) ROW_CASE(3) ROW_CASE(4) ROW_CASE(5) ROW_CASE(6) ROW_CASE(7)
        ROW_CASE(8) ROW_CASE(9) ROW_CASE(10) ROW_CASE(11) ROW_CASE(12) ROW_CASE(13) ROW_CASE(14)
        ROW_CASE1(15) ROW_CASE1(16) ROW_CASE1(17) ROW_CASE1(18) ROW_CASE1(19) ROW_CASE1(20)
        ROW_CASE1(21) ROW_CASE1(22) ROW_CASE1(23) ROW_CASE1(24) ROW_CASE1(25) ROW_CASE1(26)
        ROW_CASE1(27) ROW_CASE1(28)
        default:
            break;
    }
}

static void tile_rows_any(const nchwc_geom* g, const nchwc_view* x, const float* wb,
                          const float* bias, const nchwc_view* y, const nchwc_epilogue* epi,
                          int64_t ob, int nb, const int64_t* xoff, const int64_t* yoff,
                          const int64_t* aoff, int pw) {
    switch (pw) {
        ROWS_CASE(1) ROWS_CASE(2) ROWS_CASE(3) ROWS_CASE(4) ROWS_CASE(5) ROWS_CASE(6) ROWS_CASE(7)
        ROWS_CASE(8) ROWS_CASE(9) ROWS_CASE(10) ROWS_CASE(11) ROWS_CASE(12) ROWS_CASE(13)
        ROWS_CASE(14) ROWS_CASE1(15) ROWS_CASE1(16) ROWS_CASE1(17) ROWS_CASE1(18) ROWS_CASE1(19)
        ROWS_CASE1(20) ROWS_CASE1(21) ROWS_CASE1(22) ROWS_CASE1(23) ROWS_CASE1(24) ROWS_CASE1(25)
        ROWS_CASE1(26) ROWS_CASE1(27) ROWS_CASE1(28)
        default:
            break;
    }
}

/* tile_xs over PW pixels of whole W-pixel rows from row r0 (constants), input stride 1 or 2. */
#define ROWS_XS(PW, NB, W)                                                          \
    (g->sw == 1 ? tile_xs(g, x, wb, bias, y, epi, ob, r0, 0, PW, NB, W, B)           \
                : tile_xs(g, x, wb, bias, y, epi, ob, r0, 0, PW, NB, W, 2 * B))

/* The tap columns [*a, *b) that read the image for output column ox (nchwc_geom.img_w). */
static void tap_cols(const nchwc_geom* g, int64_t ox, int64_t* a, int64_t* b) {
    *a = 0;
    *b = g->kw;
    const int64_t left = ox * g->sw;
    while (*a < *b && left + *a * g->dw < g->img_left) ++*a;
    while (*b > *a && left + (*b - 1) * g->dw >= g->img_left + g->img_w) --*b;
}

/* One-row tiles over the parts of each row that run the same tap columns (nchwc_geom.img_w),
 * each part in tiles of equal size; 0 (nothing done) when that saves less than a quarter of
 * the row's pixel-taps. */
static int split_columns(const nchwc_geom* g, const nchwc_view* x, const float* wb, const float* bias,
                         const nchwc_view* y, const nchwc_epilogue* epi, int64_t ob, int nb, int64_t oy0,
                         int64_t rows) {
    int64_t used = 0;
    for (int64_t ox = 0; ox < g->ow; ++ox) {
        int64_t a, b;
        tap_cols(g, ox, &a, &b);
        used += b - a;
    }
    if (used * 4 > g->ow * g->kw * 3) {
        return 0;
    }
    const int64_t maxw = nb > 1 ? PW_MAX : PW1_MAX;
    nchwc_geom part = *g;
    for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
        for (int64_t ox0 = 0; ox0 < g->ow;) {
            int64_t a, b, end = ox0 + 1;
            tap_cols(g, ox0, &a, &b);
            for (;;) { /* the part: the columns with the same taps */
                int64_t a2, b2;
                if (end == g->ow) break;
                tap_cols(g, end, &a2, &b2);
                if (a2 != a || b2 != b) break;
                ++end;
            }
            part.tx0 = a < b ? a : g->kw; /* no tap reaches the image: [kw, kw), the bias alone */
            part.tx1 = a < b ? b : g->kw;
            const int64_t n = end - ox0, tiles = (n + maxw - 1) / maxw, base = n / tiles, extra = n % tiles;
            for (int64_t t = 0; t < tiles; ++t) {
                int pw = (int)(base + (t < extra ? 1 : 0));
                tile_row_any(&part, x, wb, bias, y, epi, ob, nb, oy, ox0, pw);
                ox0 += pw;
            }
        }
    }
    return 1;
}

/* The edge tiles of 3-tap-wide kernels on small maps (defined after this function, see
 * "3-wide kernels on small maps" below). */
static int edge3_fits(const nchwc_geom* g);
static int tile_edge3_any(const nchwc_geom* g, const nchwc_view* x, const float* wb, const float* bias,
                          const nchwc_view* y, const nchwc_epilogue* epi, int64_t ob, int nb, int64_t oy,
                          int64_t ox0, int pw, int64_t w);

void accel_nchwc_conv_rows_avx512(const nchwc_geom* g, const nchwc_view* x, const float* wb,
                                  const float* bias, const nchwc_view* y,
                                  const nchwc_epilogue* epi, int64_t ob, int nb, int64_t oy0,
                                  int64_t rows) {
    const int64_t maxw = nb > 1 ? PW_MAX : PW1_MAX;
    if (g->ow * 2 > maxw && g->img_w > 0 && g->kw > 1 && split_columns(g, x, wb, bias, y, epi, ob, nb, oy0, rows)) {
        return;
    }
    const int edge = edge3_fits(g);
    if (g->ow * 2 > maxw) {
        /* Rows of equal tiles of at most maxw pixels (56 = 4 x 14, 28 = 2 x 14, 20 = 10 + 10). */
        int64_t tiles = (g->ow + maxw - 1) / maxw;
        int64_t base = g->ow / tiles, extra = g->ow % tiles;
        for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
            int64_t ox0 = 0;
            for (int64_t t = 0; t < tiles; ++t) {
                int pw = (int)(base + (t < extra ? 1 : 0));
                if (!edge || !tile_edge3_any(g, x, wb, bias, y, epi, ob, nb, oy, ox0, pw, pw)) {
                    tile_row_any(g, x, wb, bias, y, epi, ob, nb, oy, ox0, pw);
                }
                ox0 += pw;
            }
        }
        return;
    }
    /* Narrow images: tiles of whole rows, as many as fit in maxw pixels. */
    int64_t per_tile = maxw / g->ow;
    for (int64_t r0 = oy0; r0 < oy0 + rows; r0 += per_tile) {
        int64_t nrows = oy0 + rows - r0 < per_tile ? oy0 + rows - r0 : per_tile;
        const int pw = (int)(nrows * g->ow);
        if (edge && tile_edge3_any(g, x, wb, bias, y, epi, ob, nb, r0, 0, pw, g->ow)) continue;
        if (g->ib == B && (g->sw == 1 || g->sw == 2)) {
            /* 7- and 14-pixel rows (the last stages of ResNet and MobileNetV2, one block of 14):
             * whole rows at constant offsets, the last row of an odd count alone */
            int done = 1;
            if (g->ow == 14 && nb == 1 && pw == 28) ROWS_XS(28, 1, 14);
            else if (g->ow == 14 && nb == 1 && pw == 14) ROWS_XS(14, 1, 14);
            else if (g->ow == 7 && nb > 1 && pw == 14) ROWS_XS(14, 2, 7);
            else if (g->ow == 7 && nb > 1 && pw == 7) ROWS_XS(7, 2, 7);
            else if (g->ow == 7 && nb == 1 && pw == 28) ROWS_XS(28, 1, 7);
            else if (g->ow == 7 && nb == 1 && pw == 7) ROWS_XS(7, 1, 7);
            else done = 0;
            if (done) continue;
        }
        int64_t xoff[PW1_MAX], yoff[PW1_MAX], aoff[PW1_MAX];
        int p = 0;
        for (int64_t r = r0; r < r0 + nrows; ++r) {
            for (int64_t ox = 0; ox < g->ow; ++ox, ++p) {
                xoff[p] = (r * g->sh * x->cols + ox * g->sw) * g->ib;
                yoff[p] = (r * y->cols + ox) * B;
                aoff[p] = epi->addend.data != NULL ? (r * epi->addend.cols + ox) * B : 0;
            }
        }
        tile_rows_any(g, x, wb, bias, y, epi, ob, nb, xoff, yoff, aoff, pw);
    }
}
#undef ROWS_XS

/* Bias of the passes after the first (accel_nchwc_conv_rows_passes_avx512): zeros for up to
 * PASS_MAX_BLOCKS output blocks. */
#define PASS_MAX_BLOCKS 256
static const float pass_zeros[PASS_MAX_BLOCKS * B] __attribute__((aligned(64)));

void accel_nchwc_conv_rows_passes_avx512(const nchwc_geom* g, const nchwc_view* x, const float* wb,
                                         const float* bias, const nchwc_view* y, const nchwc_epilogue* epi,
                                         int64_t ob, int nb, int64_t oy, int64_t rows, int64_t kb) {
    if (kb <= 0 || kb >= g->cb || g->ocb > PASS_MAX_BLOCKS) {
        accel_nchwc_conv_rows_avx512(g, x, wb, bias, y, epi, ob, nb, oy, rows);
        return;
    }
    nchwc_geom part = *g;
    part.wcb = g->wcb > 0 ? g->wcb : g->cb;
    for (int64_t c0 = 0; c0 < g->cb; c0 += kb) {
        part.cb = g->cb - c0 < kb ? g->cb - c0 : kb;
        part.ic_last = c0 + part.cb == g->cb ? g->ic_last : g->ib;
        const nchwc_view xp = {x->data + c0 * x->rows * x->cols * g->ib, x->rows, x->cols};
        nchwc_epilogue pe = *epi;
        if (c0 > 0) {
            pe.addend = *y; /* the sums of the passes before, added in place */
        }
        if (c0 + part.cb < g->cb) {
            pe.lo = -INFINITY;
            pe.hi = INFINITY;
        }
        accel_nchwc_conv_rows_avx512(&part, &xp, wb + c0 * g->kh * g->kw * g->ib * B, c0 == 0 ? bias : pass_zeros, y,
                                     &pe, ob, nb, oy, rows);
    }
}

int64_t accel_nchwc_pass_blocks(const nchwc_geom* g) {
    const int64_t per_block = 2 * g->kh * g->kw * g->ib * B * (int64_t)sizeof(float); /* a pair's, per input block */
    if (g->ib != B || g->ocb > PASS_MAX_BLOCKS || g->cb * per_block <= ACCEL_NCHWC_PASS_BYTES) {
        return 0;
    }
    const int64_t kb = ACCEL_NCHWC_PASS_TARGET / per_block;
    return kb > 0 ? kb : 1;
}

/* ---- 3-wide kernels on small maps: no products with the padding ------------------------
 *
 * A tile of whole rows of a 7- or 14-wide map, or a one-row tile of a map up to 28 wide, of a
 * kernel 3 taps wide (ResNet's and VGG's 3x3 on 7 x 7 to 28 x 28, FCN's dilated ones) spends a
 * large part of its multiply-adds on the zero halo: a 3x3 on 7 x 7 computes 441 pixel-taps per
 * row block where 361 read the image. These tiles skip them: tap column kx leaves out the
 * SKIPL pixels of each tile row whose column is left of the image, or the SKIPR ones right of
 * it, and tap row ky the tile rows that read outside the image (ROWS: bit r for tile row r).
 * SKIPL, SKIPR and ROWS are constants of each instance, chosen per tap column and row at run
 * time; a combination without an instance runs every pixel (the halo is zero, so the sums only
 * lose the skipped products: +0 each, as CpuRef, which never multiplies the padding). */


/* The multiply-adds of one tap of an edge tile (see above) over ci_n input channels. */
static inline __attribute__((always_inline)) void edge_tap(__m512 acc[2][PW1_MAX], const float* xp,
                                                           const float* wp, int64_t wblock, int64_t ci_n,
                                                           int64_t rstride, int64_t ahead, const int PW, const int NB,
                                                           const int W, const int XS, const int SKIPL,
                                                           const int SKIPR, const int ROWS) {
    for (int64_t ci = 0; ci < ci_n; ++ci) {
        if (ahead > 0) {
            _mm_prefetch((const char*)(wp + ci * B + ahead), _MM_HINT_T0);
            if (NB > 1) _mm_prefetch((const char*)(wp + wblock + ci * B + ahead), _MM_HINT_T0);
        }
        const __m512 w0 = _mm512_load_ps(wp + ci * B);
        const __m512 w1 = NB > 1 ? _mm512_load_ps(wp + wblock + ci * B) : w0;
#pragma GCC unroll 28
        for (int p = 0; p < PW; ++p) {
            if (p % W < SKIPL || p % W >= W - SKIPR || ((ROWS >> (p / W)) & 1) == 0) continue;
            const __m512 xv = _mm512_set1_ps(xp[(p / W) * rstride + (p % W) * XS + ci]);
            acc[0][p] = _mm512_fmadd_ps(xv, w0, acc[0][p]);
            if (NB > 1) acc[1][p] = _mm512_fmadd_ps(xv, w1, acc[1][p]);
        }
    }
}

/* The pixels of a tile row of W output columns from ox0 whose tap column kx reads left of the
 * image (*l) or right of it (*r), each 0 unless they are a prefix (l) or suffix (r) of the row
 * and the others all read the image. */
static inline void edge_cols(const nchwc_geom* g, int64_t ox0, int W, int64_t kx, int* l, int* r) {
    const int64_t c0 = ox0 * g->sw + kx * g->dw; /* the tile row's first column in x */
    int nl = 0, nr = 0;
    for (int p = 0; p < W; ++p) {
        const int64_t c = c0 + p * g->sw;
        nl += c < g->img_left;
        nr += c >= g->img_left + g->img_w;
    }
    *l = nr == 0 ? nl : 0;
    *r = nl == 0 ? nr : 0;
}

/* A tile of PW pixels (rows of W from (oy, ox0): W = PW for one row), NB output blocks, input
 * pixels XS floats apart, of a kernel 3 taps wide (g->kw == 3), with 16-channel input blocks. */
static inline __attribute__((always_inline)) void tile_edge3(const nchwc_geom* g, const nchwc_view* x,
                                                             const float* wb, const float* bias,
                                                             const nchwc_view* y, const nchwc_epilogue* epi,
                                                             int64_t ob, int64_t oy, int64_t ox0, const int PW,
                                                             const int NB, const int W, const int XS) {
    __m512 acc[2][PW1_MAX];
    init_tile(acc, bias, ob, PW, NB);
    const int64_t wblock = w_stride(g);
    const int64_t rstride = g->sh * x->cols * B;
    const float* wob = wb + ob * wblock;
    /* The instance each tap (ky, kx) runs: 1 + column case (0: every pixel; 1, 2, 3: SKIPL 1, 2,
     * 4; 4, 5, 6: SKIPR 1, 2, 4) + 7 * row case (0: every row; 1: all but the first; 2: all but
     * the last), or 0: no pixel reads the image. Taps past the 8th row run every pixel. */
    const unsigned all = (1u << (PW / W)) - 1u;
    int col[3];
    for (int64_t kx = 0; kx < 3; ++kx) {
        int l, r;
        edge_cols(g, ox0, W, kx, &l, &r);
        col[kx] = l == 1 ? 1 : r == 1 ? 4 : W != PW ? 0 : l == 2 ? 2 : l == 4 ? 3 : r == 2 ? 5 : r == 4 ? 6 : 0;
    }
    unsigned char code[8][3];
    const int64_t kh8 = g->kh < 8 ? g->kh : 8;
    for (int64_t ky = 0; ky < kh8; ++ky) {
        unsigned rm = 0;
        for (int r = 0; r < PW / W; ++r) {
            const int64_t iy = (oy + r) * g->sh + ky * g->dh;
            rm |= (unsigned)(g->img_h <= 0 || (iy >= g->img_top && iy < g->img_top + g->img_h)) << r;
        }
        const int rc = PW / W > 1 && rm == (all & ~1u) ? 1 : PW / W > 1 && rm == (all >> 1) ? 2 : 0;
        for (int kx = 0; kx < 3; ++kx) code[ky][kx] = (unsigned char)(rm == 0 ? 0 : 1 + col[kx] + 7 * rc);
    }
    const int R0 = (int)all, R1 = (int)(all & ~1u), R2 = (int)(all >> 1);
    const int64_t ahead = w_ahead(g, NB);
    for (int64_t cb = 0; cb < g->cb; ++cb) {
        const int64_t ci_n = cb == g->cb - 1 ? g->ic_last : B;
        for (int64_t ky = 0; ky < g->kh; ++ky) {
            const float* xrow = x->data + ((cb * x->rows + oy * g->sh + ky * g->dh) * x->cols + ox0 * g->sw) * B;
            const float* wrow = wob + (cb * g->kh + ky) * 3 * B * B;
            for (int kx = 0; kx < 3; ++kx) {
                const float* xp = xrow + kx * g->dw * B;
                const float* wp = wrow + kx * B * B;
#define EDGE_TAP(L, R, ROWS) edge_tap(acc, xp, wp, wblock, ci_n, rstride, ahead, PW, NB, W, XS, L, R, ROWS)
                switch (ky < 8 ? code[ky][kx] : 1) {
                    case 0: break;
                    case 1: EDGE_TAP(0, 0, R0); break;
                    case 2: EDGE_TAP(1, 0, R0); break;
                    case 3: EDGE_TAP(2, 0, R0); break;
                    case 4: EDGE_TAP(4, 0, R0); break;
                    case 5: EDGE_TAP(0, 1, R0); break;
                    case 6: EDGE_TAP(0, 2, R0); break;
                    case 7: EDGE_TAP(0, 4, R0); break;
                    case 8: EDGE_TAP(0, 0, R1); break;
                    case 9: EDGE_TAP(1, 0, R1); break;
                    case 12: EDGE_TAP(0, 1, R1); break;
                    case 15: EDGE_TAP(0, 0, R2); break;
                    case 16: EDGE_TAP(1, 0, R2); break;
                    case 19: EDGE_TAP(0, 1, R2); break;
                    default: EDGE_TAP(0, 0, R0); break;
                }
#undef EDGE_TAP
            }
        }
    }
    store_tile(acc, y, epi, ob, oy, ox0, PW, NB, W);
}

/* A 1x1 tile of small maps (ResNet-50's 1x1 layers of 256 to 2048 channels on 28 x 28 to 7 x 7,
 * down-samples at stride 2 included): tile_xs's, with the weights asked for ahead as the edge
 * tiles do (W_AHEAD), and, as tile_xs at stride 1, each pixel's line of the next input block. */
static inline __attribute__((always_inline)) void tile_pw1(const nchwc_geom* g, const nchwc_view* x,
                                                           const float* wb, const float* bias,
                                                           const nchwc_view* y, const nchwc_epilogue* epi,
                                                           int64_t ob, int64_t oy, int64_t ox0, const int PW,
                                                           const int NB, const int W, const int XS) {
    __m512 acc[2][PW1_MAX];
    init_tile(acc, bias, ob, PW, NB);
    const int64_t wblock = w_stride(g);
    const int64_t rstride = g->sh * x->cols * B;
    const int64_t ahead = w_ahead(g, NB);
    const int64_t plane = x->rows * x->cols * B; /* floats between input blocks */
    const float* wob = wb + ob * wblock;
    const float* xp = x->data + ((oy * g->sh) * x->cols + ox0 * g->sw) * B;
    for (int64_t cb = 0; cb < g->cb; ++cb, xp += plane) {
        const int64_t ci_n = cb == g->cb - 1 ? g->ic_last : B;
        if (cb + 1 < g->cb) {
#pragma GCC unroll 28
            for (int p = 0; p < PW; ++p) {
                _mm_prefetch((const char*)(xp + plane + (p / W) * rstride + (p % W) * XS), _MM_HINT_T0);
            }
        }
        edge_tap(acc, xp, wob + cb * B * B, wblock, ci_n, rstride, ahead, PW, NB, W, XS, 0, 0, (1 << (PW / W)) - 1);
    }
    store_tile(acc, y, epi, ob, oy, ox0, PW, NB, W);
}

/* Whether the small-map tiles run a convolution: 3 taps wide (edge tiles) or 1x1 (tile_pw1),
 * 16-channel input blocks, stride 1 or 2, a map of at most 28 columns, and for the edge tiles
 * the image's columns known (nchwc_geom.img_w). */
static int edge3_fits(const nchwc_geom* g) {
    if (g->kh == 1 && g->kw == 1) {
        return g->ib == B && (g->sw == 1 || g->sw == 2) && g->ow <= 28;
    }
    return g->kw == 3 && g->tx1 == 0 && g->ib == B && (g->sw == 1 || g->sw == 2) && g->ow <= 28 && g->img_w > 0;
}

/* One edge tile of `pw` pixels of `nb` blocks in rows of `w` from (oy, ox0), when there is an
 * instance for that shape: 1, else 0 (nothing done). */
static int tile_edge3_any(const nchwc_geom* g, const nchwc_view* x, const float* wb, const float* bias,
                          const nchwc_view* y, const nchwc_epilogue* epi, int64_t ob, int nb, int64_t oy,
                          int64_t ox0, int pw, int64_t w) {
#define EDGE3(PW, NB, W)                                                                        \
    do {                                                                                        \
        if (g->kw == 1 && g->sw == 1) tile_pw1(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, W, B); \
        else if (g->kw == 1) tile_pw1(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, W, 2 * B);   \
        else if (g->sw == 1) tile_edge3(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, W, B);    \
        else tile_edge3(g, x, wb, bias, y, epi, ob, oy, ox0, PW, NB, W, 2 * B);                \
        return 1;                                                                               \
    } while (0)
    if (nb > 1 && pw == 14 && w == 14) EDGE3(14, 2, 14);
    if (nb > 1 && pw == 14 && w == 7) EDGE3(14, 2, 7);
    if (nb > 1 && pw == 7 && w == 7) EDGE3(7, 2, 7);
    if (nb == 1 && pw == 28 && w == 28) EDGE3(28, 1, 28);
    if (nb == 1 && pw == 28 && w == 14) EDGE3(28, 1, 14);
    if (nb == 1 && pw == 14 && w == 14) EDGE3(14, 1, 14);
    if (nb == 1 && pw == 28 && w == 7) EDGE3(28, 1, 7);
    if (nb == 1 && pw == 7 && w == 7) EDGE3(7, 1, 7);
    if (nb > 1 && pw == 13 && w == 13) EDGE3(13, 2, 13);
    if (nb == 1 && pw == 26 && w == 13) EDGE3(26, 1, 13);
    if (nb == 1 && pw == 13 && w == 13) EDGE3(13, 1, 13);
    if (nb == 1 && pw == 27 && w == 27) EDGE3(27, 1, 27);
#undef EDGE3
    return 0;
}

/* ---- depthwise ------------------------------------------------------------------------ */

#define DW_PW 8 /* pixels per depthwise tile (independent accumulators) */

/* A depthwise 3-tap-wide (kw = 3, dw = 1) tile of PW pixels at stride SW: each input vector of
 * a row is loaded once and used by every tap that reads it ((PW - 1) * SW + 3 loads per row
 * instead of 3 * PW). PW and SW are constants at every call site. */
static inline __attribute__((always_inline)) void dw3_tile(const nchwc_geom* g, const nchwc_view* x,
                                                           const float* wblk, __m512 bv, float* yrow,
                                                           const float* arow, int clamp, __m512 lo,
                                                           __m512 hi, int64_t b, int64_t oy,
                                                           int64_t ox, const int PW, const int SW) {
    __m512 acc[14];
    for (int p = 0; p < PW; ++p) acc[p] = bv;
    for (int64_t ky = 0; ky < g->kh; ++ky) {
        const float* xrow = x->data + ((b * x->rows + oy * g->sh + ky * g->dh) * x->cols + ox * SW) * B;
        const __m512 w0 = _mm512_load_ps(wblk + (ky * 3 + 0) * B);
        const __m512 w1 = _mm512_load_ps(wblk + (ky * 3 + 1) * B);
        const __m512 w2 = _mm512_load_ps(wblk + (ky * 3 + 2) * B);
#pragma GCC unroll 32
        for (int j = 0; j < (PW - 1) * SW + 3; ++j) {
            const __m512 v = _mm512_load_ps(xrow + j * B);
            if (j % SW == 0 && j / SW < PW) acc[j / SW] = _mm512_fmadd_ps(v, w0, acc[j / SW]);
            if (j >= 1 && (j - 1) % SW == 0 && (j - 1) / SW < PW) {
                acc[(j - 1) / SW] = _mm512_fmadd_ps(v, w1, acc[(j - 1) / SW]);
            }
            if (j >= 2 && (j - 2) % SW == 0 && (j - 2) / SW < PW) {
                acc[(j - 2) / SW] = _mm512_fmadd_ps(v, w2, acc[(j - 2) / SW]);
            }
        }
    }
#pragma GCC unroll 28
    for (int p = 0; p < PW; ++p) {
        finish(acc[p], yrow + (ox + p) * B, arow != NULL ? arow + (ox + p) * B : NULL, clamp, lo, hi);
    }
}

/* dw3_tile for KW = 5 or 7 taps per row (EfficientNet's and MobileNetV3's 5x5, ConvNeXt's 7x7),
 * the KW weight vectors of a tap row in registers: (PW - 1) * SW + KW loads per row instead of
 * KW * PW. PW <= 8, so a tile uses PW + KW + 1 of the 32 zmm registers. */
static inline __attribute__((always_inline)) void dwk_tile(const nchwc_geom* g, const nchwc_view* x,
                                                           const float* wblk, __m512 bv, float* yrow,
                                                           const float* arow, int clamp, __m512 lo,
                                                           __m512 hi, int64_t b, int64_t oy,
                                                           int64_t ox, const int PW, const int SW, const int KW) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int p = 0; p < PW; ++p) acc[p] = bv;
    for (int64_t ky = 0; ky < g->kh; ++ky) {
        const float* xrow = x->data + ((b * x->rows + oy * g->sh + ky * g->dh) * x->cols + ox * SW) * B;
        __m512 w[7];
#pragma GCC unroll 7
        for (int t = 0; t < KW; ++t) w[t] = _mm512_load_ps(wblk + (ky * KW + t) * B);
#pragma GCC unroll 32
        for (int j = 0; j < (PW - 1) * SW + KW; ++j) {
            const __m512 v = _mm512_load_ps(xrow + j * B);
#pragma GCC unroll 7
            for (int t = 0; t < KW; ++t) {
                if (j >= t && (j - t) % SW == 0 && (j - t) / SW < PW) {
                    acc[(j - t) / SW] = _mm512_fmadd_ps(v, w[t], acc[(j - t) / SW]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int p = 0; p < PW; ++p) {
        finish(acc[p], yrow + (ox + p) * B, arow != NULL ? arow + (ox + p) * B : NULL, clamp, lo, hi);
    }
}

/* Any depthwise geometry, a tile of PW (<= DW_PW) pixels with independent accumulators. */
static inline __attribute__((always_inline)) void dwg_tile(const nchwc_geom* g, const nchwc_view* x,
                                                           const float* wblk, __m512 bv, float* yrow,
                                                           const float* arow, int clamp, __m512 lo,
                                                           __m512 hi, int64_t b, int64_t oy,
                                                           int64_t ox, const int PW) {
    const int64_t xstep = g->sw * B;
    __m512 acc[8];
#pragma GCC unroll 8
    for (int p = 0; p < PW; ++p) acc[p] = bv;
    for (int64_t ky = 0; ky < g->kh; ++ky) {
        const float* xrow = x->data + ((b * x->rows + oy * g->sh + ky * g->dh) * x->cols + ox * g->sw) * B;
        for (int64_t kx = 0; kx < g->kw; ++kx) {
            const __m512 wv = _mm512_load_ps(wblk + (ky * g->kw + kx) * B);
            const float* xp = xrow + kx * g->dw * B;
#pragma GCC unroll 8
            for (int p = 0; p < PW; ++p) acc[p] = _mm512_fmadd_ps(_mm512_load_ps(xp + p * xstep), wv, acc[p]);
        }
    }
#pragma GCC unroll 8
    for (int p = 0; p < PW; ++p) {
        finish(acc[p], yrow + (ox + p) * B, arow != NULL ? arow + (ox + p) * B : NULL, clamp, lo, hi);
    }
}

#define DWK_CASE(pw, sw, kw)                                                          \
    case pw:                                                                          \
        dwk_tile(g, x, wblk, bv, yrow, arow, clamp, lo, hi, b, oy, ox, pw, sw, kw);   \
        break;
#define DWK_SWITCH(sw, kw)                                                                                   \
    switch (pw) {                                                                                            \
        DWK_CASE(1, sw, kw) DWK_CASE(2, sw, kw) DWK_CASE(3, sw, kw) DWK_CASE(4, sw, kw) DWK_CASE(5, sw, kw)  \
        DWK_CASE(6, sw, kw) DWK_CASE(7, sw, kw) DWK_CASE(8, sw, kw)                                          \
        default:                                                                                             \
            break;                                                                                           \
    }
#define DWG_CASE(pw)                                                                  \
    case pw:                                                                          \
        dwg_tile(g, x, wblk, bv, yrow, arow, clamp, lo, hi, b, oy, ox, pw);           \
        break;

/* A dw3_tile of a width and stride known at compile time. */
#define DW3_CASE(pw, sw)                                                              \
    case pw:                                                                          \
        dw3_tile(g, x, wblk, bv, yrow, arow, clamp, lo, hi, b, oy, ox, pw, sw);       \
        break;

void accel_nchwc_dwconv_row_avx512(const nchwc_geom* g, const nchwc_view* x, const float* wd,
                                   const float* bias, const nchwc_view* y,
                                   const nchwc_epilogue* epi, int64_t b, int64_t oy) {
    const __m512 bv = _mm512_load_ps(bias + b * B);
    const __m512 lo = _mm512_set1_ps(epi->lo), hi = _mm512_set1_ps(epi->hi);
    const int clamp = clamp_kind(epi);
    const float* wblk = wd + b * g->kh * g->kw * B;
    float* yrow = y->data + ((b * y->rows + oy) * y->cols) * B;
    const float* arow = epi->addend.data != NULL
                            ? epi->addend.data + ((b * epi->addend.rows + oy) * epi->addend.cols) * B
                            : NULL;
    int64_t ox = 0;
    if (g->kw == 3 && g->dw == 1 && (g->sw == 1 || g->sw == 2)) {
        const int step = g->sw == 1 ? 12 : 8;
        for (; ox < g->ow; ox += step) {
            int pw = g->ow - ox < step ? (int)(g->ow - ox) : step;
            if (g->sw == 1) {
                switch (pw) {
                    DW3_CASE(1, 1) DW3_CASE(2, 1) DW3_CASE(3, 1) DW3_CASE(4, 1) DW3_CASE(5, 1)
                    DW3_CASE(6, 1) DW3_CASE(7, 1) DW3_CASE(8, 1) DW3_CASE(9, 1) DW3_CASE(10, 1)
                    DW3_CASE(11, 1) DW3_CASE(12, 1)
                    default:
                        break;
                }
            } else {
                switch (pw) {
                    DW3_CASE(1, 2) DW3_CASE(2, 2) DW3_CASE(3, 2) DW3_CASE(4, 2) DW3_CASE(5, 2)
                    DW3_CASE(6, 2) DW3_CASE(7, 2) DW3_CASE(8, 2)
                    default:
                        break;
                }
            }
        }
        return;
    }
    /* Tiles of up to DW_PW pixels, the last one narrower (a 7-pixel row is one tile of 7, not 7
     * tiles of one: each pixel's sum is a chain of kh * kw dependent products, so a tile needs
     * several pixels to keep the multiply-adds busy). */
    const int kwc = g->dw == 1 && (g->sw == 1 || g->sw == 2) && (g->kw == 5 || g->kw == 7) ? (int)g->kw : 0;
    for (; ox < g->ow; ox += DW_PW) {
        const int pw = g->ow - ox < DW_PW ? (int)(g->ow - ox) : DW_PW;
        if (kwc == 5 && g->sw == 1) {
            DWK_SWITCH(1, 5)
        } else if (kwc == 5) {
            DWK_SWITCH(2, 5)
        } else if (kwc == 7 && g->sw == 1) {
            DWK_SWITCH(1, 7)
        } else if (kwc == 7) {
            DWK_SWITCH(2, 7)
        } else {
            switch (pw) {
                DWG_CASE(1) DWG_CASE(2) DWG_CASE(3) DWG_CASE(4) DWG_CASE(5) DWG_CASE(6) DWG_CASE(7) DWG_CASE(8)
                default:
                    break;
            }
        }
    }
}

/* ---- packing a 3-channel row ------------------------------------------------------------- */

void accel_nchwc_pack_row3_avx512(const float* src, int64_t plane, float* dst, int64_t w) {
    /* 16 pixels x 3 channels = 48 floats = 3 vectors; lane l of vector k is element 16k + l,
     * pixel (16k + l) / 3, channel (16k + l) % 3: channels 0 and 1 come from one two-source
     * permute, channel 2 is then permuted into its lanes. */
    __m512i ab[3], cc[3];
    __mmask16 cm[3];
    for (int k = 0; k < 3; ++k) {
        int32_t iab[16], ic[16];
        unsigned m = 0;
        for (int l = 0; l < 16; ++l) {
            int e = 16 * k + l, px = e / 3, ch = e % 3;
            iab[l] = ch == 1 ? 16 + px : px;
            ic[l] = px;
            m |= (unsigned)(ch == 2) << l;
        }
        ab[k] = _mm512_loadu_si512(iab);
        cc[k] = _mm512_loadu_si512(ic);
        cm[k] = (__mmask16)m;
    }
    for (int64_t x0 = 0; x0 < w; x0 += 16) {
        const int64_t n = w - x0 < 16 ? w - x0 : 16;
        const __mmask16 in = (__mmask16)((1u << n) - 1u);
        const __m512 a = _mm512_maskz_loadu_ps(in, src + x0);
        const __m512 b = _mm512_maskz_loadu_ps(in, src + plane + x0);
        const __m512 c = _mm512_maskz_loadu_ps(in, src + 2 * plane + x0);
        float* d = dst + 3 * x0;
        for (int k = 0; k < 3; ++k) {
            __m512 v = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(a, ab[k], b), cm[k], cc[k], c);
            const int64_t left = 3 * n - 16 * k; /* floats of this row chunk still to store */
            if (left >= 16) {
                _mm512_storeu_ps(d + 16 * k, v);
            } else if (left > 0) {
                _mm512_mask_storeu_ps(d + 16 * k, (__mmask16)((1u << left) - 1u), v);
            }
        }
    }
}

/* ---- pooling ------------------------------------------------------------------------- */

/* Taps of one axis inside the padded input (the AVERAGE/INCLUDE divisor's factor). */
static int64_t padded_taps(int64_t start, int64_t step, int64_t taps, int64_t padded_end) {
    int64_t count = 0;
    for (int64_t t = 0; t < taps; ++t) count += start + t * step < padded_end;
    return count;
}

/* Output columns [ox0, ox1) of a row whose windows lie wholly inside the image, for a
 * KH x KW window (constants at the call sites) with dilation 1: the taps are loaded at fixed
 * offsets and combined in the generic loop's order (so the results are the same bits), with
 * no per-pixel bounds. xr: row y0 of the block at column 0. */
static inline __attribute__((always_inline)) void pool_inside(const nchwc_pool* pp, const float* xr,
                                                              int64_t cols, float* yrow,
                                                              int64_t ox0, int64_t ox1, int is_max,
                                                              const int KH, const int KW) {
    const __m512 start = is_max ? _mm512_set1_ps(-INFINITY) : _mm512_setzero_ps();
    const __m512 taps = _mm512_set1_ps((float)(KH * KW));
    for (int64_t ox = ox0; ox < ox1; ++ox) {
        const float* base = xr + (ox * pp->sw - pp->pl) * B;
        __m512 acc = start;
        __mmask16 nan = 0;
#pragma GCC unroll 3
        for (int ky = 0; ky < KH; ++ky) {
#pragma GCC unroll 3
            for (int kx = 0; kx < KW; ++kx) {
                const __m512 v = _mm512_load_ps(base + (ky * pp->dh * cols + kx) * B);
                if (is_max) {
                    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                    acc = _mm512_max_ps(acc, v);
                } else {
                    acc = _mm512_add_ps(acc, v);
                }
            }
        }
        acc = is_max ? _mm512_mask_blend_ps(nan, acc, _mm512_set1_ps(NAN)) : _mm512_div_ps(acc, taps);
        _mm512_store_ps(yrow + ox * B, acc);
    }
}

void accel_nchwc_pool_row_avx512(const nchwc_pool* pp, const nchwc_view* x, const nchwc_view* y,
                                 int64_t b, int64_t oy) {
    const int is_max = pp->kind == PN_POOLING_MAX;
    const int64_t y0 = oy * pp->sh - pp->pt;
    int64_t ky0 = 0, ky1 = pp->kh; /* taps with 0 <= y0 + ky*dh < h */
    while (ky0 < ky1 && y0 + ky0 * pp->dh < 0) ++ky0;
    while (ky1 > ky0 && y0 + (ky1 - 1) * pp->dh >= pp->h) --ky1;
    int64_t rows_padded = padded_taps(y0, pp->dh, pp->kh, pp->h + pp->pb);
    float* yrow = y->data + ((b * y->rows + oy) * y->cols) * B;
    /* columns whose windows are inside the row: ox * sw >= pl and ox * sw - pl + kw - 1 < w */
    int64_t in0 = 0, in1 = 0;
    const int fixed = ky0 == 0 && ky1 == pp->kh && pp->dw == 1 &&
                      ((pp->kh == 2 && pp->kw == 2) || (pp->kh == 3 && pp->kw == 3));
    if (fixed && pp->w - pp->kw + pp->pl >= 0) {
        in0 = (pp->pl + pp->sw - 1) / pp->sw;
        in1 = (pp->w - pp->kw + pp->pl) / pp->sw + 1;
        in1 = in1 < pp->ow ? in1 : pp->ow;
        in0 = in0 < in1 ? in0 : in1;
        const float* xr = x->data + ((b * x->rows + y0) * x->cols) * B;
        if (pp->kh == 2) pool_inside(pp, xr, x->cols, yrow, in0, in1, is_max, 2, 2);
        else pool_inside(pp, xr, x->cols, yrow, in0, in1, is_max, 3, 3);
    }
    for (int64_t ox = 0; ox < pp->ow; ++ox) {
        if (ox == in0 && in1 > in0) {
            ox = in1 - 1; /* done above */
            continue;
        }
        const int64_t x0 = ox * pp->sw - pp->pl;
        int64_t kx0 = 0, kx1 = pp->kw;
        while (kx0 < kx1 && x0 + kx0 * pp->dw < 0) ++kx0;
        while (kx1 > kx0 && x0 + (kx1 - 1) * pp->dw >= pp->w) --kx1;
        __m512 acc = is_max ? _mm512_set1_ps(-INFINITY) : _mm512_setzero_ps();
        __mmask16 nan = 0;
        for (int64_t ky = ky0; ky < ky1; ++ky) {
            const float* xr = x->data + ((b * x->rows + y0 + ky * pp->dh) * x->cols + x0) * B;
            for (int64_t kx = kx0; kx < kx1; ++kx) {
                __m512 v = _mm512_load_ps(xr + kx * pp->dw * B);
                if (is_max) {
                    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                    acc = _mm512_max_ps(acc, v);
                } else {
                    acc = _mm512_add_ps(acc, v);
                }
            }
        }
        if (is_max) {
            acc = _mm512_mask_blend_ps(nan, acc, _mm512_set1_ps(NAN));
        } else {
            int64_t taps = pp->include_padding
                               ? rows_padded * padded_taps(x0, pp->dw, pp->kw, pp->w + pp->pr)
                               : (ky1 - ky0) * (kx1 - kx0);
            acc = _mm512_div_ps(acc, _mm512_set1_ps((float)taps));
        }
        _mm512_store_ps(yrow + ox * B, acc);
    }
}

#else
typedef int accel_conv_nchwc_avx512_unused; /* built without -mavx512f: no kernel */
#endif
