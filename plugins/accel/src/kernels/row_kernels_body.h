/*
 * CpuAcc's row kernels (the accel_row_kernels of kernels/row_kernels.h), written once and
 * compiled per ISA: kernels/row_kernels_portable.c, kernels/row_kernels_avx2.c and kernels/row_kernels_avx512.c each define
 * KSUF(name) (appends the ISA's suffix) and KROWTABLE (the table's name) and include this file
 * once. Plain C loops are shaped for the auto-vectorizer (lane arrays for reductions,
 * branch-free selects), the attention tiles use the vector primitives of kernels/vector_primitives.h, and
 * the math is kernels/math_functions.h's (exp, log, erf with the accuracy plugins/accel/README.md states).
 */
#include "kernels/row_kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define KINLINE static inline __attribute__((always_inline))
#define KALIGN64 __attribute__((aligned(64)))
#else
#define KINLINE static inline
#define KALIGN64
#endif

#include "kernels/math_functions.h"
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* kernels/vector_primitives.h's deint: pooling's, not ours */
#endif
#include "kernels/vector_primitives.h"
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

#define ROW_LANES 16
#define ROW_BLOCK 4096 /* floats summed in float lanes before the partial goes to a double */
#if defined(__GNUC__) && !defined(__clang__)
#define ROW_UNROLL _Pragma("GCC unroll 4")
#else
#define ROW_UNROLL
#endif

/* ---- NORMALIZATION -------------------------------------------------------------------------- */

/* sum (x[i] - c)^2 (sq 1) or sum x[i] (sq 0) of a row of at most ROW_BLOCK floats in two
 * vector accumulators (the tail, under a vector, in scalars). */
KINLINE float KSUF(row_vec_sum)(const float* x, int64_t n, float c, const int sq) {
    const vf nc = KSUF(vset1)(-c);
    vf a0 = KSUF(vset1)(0.0f), a1 = a0;
    int64_t i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        vf u = KSUF(vload)(x + i), w = KSUF(vload)(x + i + VW);
        if (sq) {
            u = KSUF(vadd)(u, nc);
            w = KSUF(vadd)(w, nc);
            a0 = KSUF(vfma)(u, u, a0);
            a1 = KSUF(vfma)(w, w, a1);
        } else {
            a0 = KSUF(vadd)(a0, u);
            a1 = KSUF(vadd)(a1, w);
        }
    }
    float t = 0.0f;
    for (; i < n; ++i) {
        const float d = sq ? x[i] - c : x[i];
        t += sq ? d * d : d;
    }
    return KSUF(vsum)(KSUF(vadd)(a0, a1)) + t;
}

/* The mean and 1 / sqrt(var + eps) of n floats: sums in float vector lanes over blocks of
 * ROW_BLOCK, in double across blocks; the variance about the rounded mean, corrected to the
 * exact one: E(x - mf)^2 - (m - mf)^2. */
static void KSUF(row_moments)(const float* x, int64_t n, float eps, float* mean, float* rstd) {
    double s = 0.0, ss = 0.0;
    for (int64_t i = 0; i < n; i += ROW_BLOCK) {
        s += (double)KSUF(row_vec_sum)(x + i, n - i < ROW_BLOCK ? n - i : ROW_BLOCK, 0.0f, 0);
    }
    const double m = n > 0 ? s / (double)n : 0.0;
    const float mf = (float)m;
    for (int64_t i = 0; i < n; i += ROW_BLOCK) {
        ss += (double)KSUF(row_vec_sum)(x + i, n - i < ROW_BLOCK ? n - i : ROW_BLOCK, mf, 1);
    }
    const double dm = m - (double)mf;
    const double var = n > 0 ? ss / (double)n - dm * dm : 0.0;
    *mean = mf;
    *rstd = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps));
}

/* R rows of n <= ROW_BLOCK floats (row r at x + r * n) normalized together, each phase (the
 * sums, the moments in double, the second sums, the affine pass) over the R rows before the
 * next, so their dependency chains (the double division and square root above all) overlap;
 * every row's arithmetic is row_moments' and the affine loop's below, in the same order (the
 * same bits as one row at a time). */
KINLINE void KSUF(row_norm_group)(const int R, int rms, const float* x, float* y, int64_t n,
                                 const float* scale, const float* bias, float eps) {
    float mean[4] = {0.0f, 0.0f, 0.0f, 0.0f}, rstd[4];
    double m[4] = {0.0, 0.0, 0.0, 0.0};
    if (!rms) {
        ROW_UNROLL
        for (int r = 0; r < R; ++r) {
            const double s = (double)KSUF(row_vec_sum)(x + r * n, n, 0.0f, 0);
            m[r] = n > 0 ? s / (double)n : 0.0;
            mean[r] = (float)m[r];
        }
    }
    ROW_UNROLL
    for (int r = 0; r < R; ++r) {
        const double ss = (double)KSUF(row_vec_sum)(x + r * n, n, mean[r], 1);
        const double dm = m[r] - (double)mean[r];
        const double var = rms ? (n > 0 ? ss / (double)n : 0.0) : (n > 0 ? ss / (double)n - dm * dm : 0.0);
        rstd[r] = (float)(1.0 / sqrt((rms || var > 0.0 ? var : 0.0) + (double)eps));
    }
    ROW_UNROLL
    for (int r = 0; r < R; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        if (bias != NULL) {
            for (int64_t i = 0; i < n; ++i) {
                yr[i] = KFMA((xr[i] - mean[r]) * rstd[r], scale[i], bias[i]);
            }
        } else {
            for (int64_t i = 0; i < n; ++i) {
                yr[i] = (xr[i] - mean[r]) * rstd[r] * scale[i];
            }
        }
    }
}

static void KSUF(row_norm_rows)(int rms, const float* x, float* y, int64_t rows, int64_t n,
                               const float* scale, const float* bias, float eps) {
    if (n <= ROW_BLOCK) { /* the usual rows (a transformer's hidden size): four at a time */
        int64_t r = 0;
        for (; r + 4 <= rows; r += 4) {
            KSUF(row_norm_group)(4, rms, x + r * n, y + r * n, n, scale, bias, eps);
        }
        for (; r < rows; ++r) {
            KSUF(row_norm_group)(1, rms, x + r * n, y + r * n, n, scale, bias, eps);
        }
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float mean = 0.0f, rstd;
        if (rms) {
            double ss = 0.0;
            for (int64_t i = 0; i < n; i += ROW_BLOCK) {
                ss += (double)KSUF(row_vec_sum)(xr + i, n - i < ROW_BLOCK ? n - i : ROW_BLOCK, 0.0f, 1);
            }
            rstd = (float)(1.0 / sqrt((n > 0 ? ss / (double)n : 0.0) + (double)eps));
        } else {
            KSUF(row_moments)(xr, n, eps, &mean, &rstd);
        }
        if (bias != NULL) {
            for (int64_t i = 0; i < n; ++i) {
                yr[i] = KFMA((xr[i] - mean) * rstd, scale[i], bias[i]);
            }
        } else {
            for (int64_t i = 0; i < n; ++i) {
                yr[i] = (xr[i] - mean) * rstd * scale[i];
            }
        }
    }
}

static void KSUF(row_affine_row)(const float* x, float* y, int64_t n, float c, float a, float b) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] = KFMA(x[i] - c, a, b);
    }
}

static void KSUF(row_add_rows)(float* y, int64_t ldy, int64_t rows, int64_t n, const float* bias,
                              const float* add, int64_t ldadd) {
    for (int64_t r = 0; r < rows; ++r) {
        float* yr = y + r * ldy;
        const float* ar = add != NULL ? add + r * ldadd : NULL;
        if (bias != NULL && ar != NULL) {
            for (int64_t i = 0; i < n; ++i) {
                const float t = yr[i] + bias[i]; /* rounded before the residual is added */
                yr[i] = t + ar[i];
            }
        } else if (bias != NULL) {
            for (int64_t i = 0; i < n; ++i) {
                yr[i] += bias[i];
            }
        } else if (ar != NULL) {
            for (int64_t i = 0; i < n; ++i) {
                yr[i] += ar[i];
            }
        }
    }
}

static void KSUF(row_select_row)(const uint8_t* c, int64_t n, float a, float b, float* y) {
    int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
    for (; i + 16 <= n; i += 16) {
        const __mmask16 m = _mm_test_epi8_mask(_mm_loadu_si128((const __m128i*)(c + i)), _mm_set1_epi8(-1));
        _mm512_storeu_ps(y + i, _mm512_mask_blend_ps(m, vb, va));
    }
#endif
    for (; i < n; ++i) {
        y[i] = c[i] != 0 ? a : b;
    }
}

/* ---- ELEMENTWISE_UNARY ------------------------------------------------------------------------ */

/* floor, ceil, round (halves to even) without libm: |x| rounded to the nearest integer by
 * adding and taking away 2^23 (exact for |x| < 2^23; from 2^23 on every float is an integer,
 * and NaN and inf stay as they are), x's sign put back, then one step down or up. The result
 * takes x's sign, so -0.3 rounds to -0. */
KINLINE float KSUF(row_round)(float x, const int mode) { /* mode: 0 round, 1 floor, 2 ceil */
    const float a = fabsf(x);
    const int small = a < 8388608.0f;
    float t = KSUF(copysign)((small ? a : 0.0f) + 8388608.0f - 8388608.0f, x);
    if (mode == 1) {
        t = t > x ? t - 1.0f : t;
    } else if (mode == 2) {
        t = t < x ? t + 1.0f : t;
    }
    return small ? KSUF(copysign)(t, x) : x;
}

/* sin (is_cos 0) or cos (is_cos 1) of |x| <= 8192: the octant j (even) from |x| 4 / pi, the
 * reduction r = |x| - j pi/4 in double with pi/4 in three parts (the first two of 39 bits, so
 * their products with j < 2^14 are exact: r keeps its relative accuracy next to the zeros),
 * then Cephes' sinf/cosf polynomials in float on [-pi/4, pi/4], the octant choosing the
 * polynomial and the sign. Larger |x|, inf and NaN are computed by unary_row's fix-up (libm in
 * double). */
KINLINE float KSUF(row_sincos)(float x, const int is_cos) {
    const double a = fabsf(x) <= 8192.0f ? (double)fabsf(x) : 0.0; /* NaN, inf, large: fixed up */
    int32_t j = (int32_t)(a * 1.2732395447351628);
    j = (j + 1) & ~1;
    const double fj = (double)j;
    const double rd = ((a - fj * 0.7853981633979856) - fj * -5.373173277489155e-13) - fj * 3.184158581755475e-25;
    const float r = (float)rd;
    const int32_t oct = j & 7;
    const float z = r * r;
    float ps = -1.9515295891e-4f;
    ps = KFMA(ps, z, 8.3321608736e-3f);
    ps = KFMA(ps, z, -1.6666654611e-1f);
    const float sn = KFMA(ps * z, r, r);
    float pc = 2.443315711809948e-5f;
    pc = KFMA(pc, z, -1.388731625493765e-3f);
    pc = KFMA(pc, z, 4.166664568298827e-2f);
    const float cs = KFMA(pc * z, z, KFMA(-0.5f, z, 1.0f));
    /* sin: octants 0, 4 sin; 2, 6 cos; 4, 6 negative. cos: 0, 4 cos; 2, 6 sin; 2, 4 negative */
    const int use_cos = is_cos ? (oct & 2) == 0 : (oct & 2) != 0;
    const int neg = is_cos ? (oct == 2 || oct == 4) : (oct >= 4);
    const float v = use_cos ? cs : sn;
    const float s = neg ? -v : v;
    /* sin is odd: x's sign bit flips the result's (so sin(-0) = -0) */
    return is_cos ? s : KSUF(from_bits)(KSUF(to_bits)(s) ^ (KSUF(to_bits)(x) & 0x80000000u));
}

KINLINE float KSUF(row_sign)(float x) {
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x));
}

#define ROW_UNARY_CHUNK 256

static void KSUF(row_unary_row)(pn_unary_op op, const float* x, float* y, int64_t n) {
    int64_t i;
#if KHAVE_ROW512
    switch (op) {
    case PN_UNARY_EXP: KROW512(KSUF(v_exp)(v)); return;
    case PN_UNARY_LOG: KROW512(KSUF(v_log)(v)); return;
    case PN_UNARY_ERF: KROW512(KSUF(v_erf)(v)); return;
    default: break;
    }
#endif
    switch (op) {
    case PN_UNARY_ABS: for (i = 0; i < n; ++i) y[i] = fabsf(x[i]); break;
    case PN_UNARY_NEG: for (i = 0; i < n; ++i) y[i] = -x[i]; break;
    case PN_UNARY_SIGN: for (i = 0; i < n; ++i) y[i] = KSUF(row_sign)(x[i]); break;
    case PN_UNARY_RECIPROCAL: for (i = 0; i < n; ++i) y[i] = 1.0f / x[i]; break;
    case PN_UNARY_SQRT: for (i = 0; i < n; ++i) y[i] = sqrtf(x[i]); break;
    case PN_UNARY_RSQRT: for (i = 0; i < n; ++i) y[i] = 1.0f / sqrtf(x[i]); break;
    case PN_UNARY_EXP: for (i = 0; i < n; ++i) y[i] = KSUF(vm_exp)(x[i]); break;
    case PN_UNARY_LOG: for (i = 0; i < n; ++i) y[i] = KSUF(vm_log)(x[i]); break;
    case PN_UNARY_ERF: for (i = 0; i < n; ++i) y[i] = KSUF(vm_erf)(x[i]); break;
    case PN_UNARY_FLOOR: for (i = 0; i < n; ++i) y[i] = KSUF(row_round)(x[i], 1); break;
    case PN_UNARY_CEIL: for (i = 0; i < n; ++i) y[i] = KSUF(row_round)(x[i], 2); break;
    case PN_UNARY_ROUND: for (i = 0; i < n; ++i) y[i] = KSUF(row_round)(x[i], 0); break;
    case PN_UNARY_SIN:
    case PN_UNARY_COS: {
        const int is_cos = op == PN_UNARY_COS;
        float in[ROW_UNARY_CHUNK];
        for (int64_t c = 0; c < n; c += ROW_UNARY_CHUNK) {
            const int64_t m = n - c < ROW_UNARY_CHUNK ? n - c : ROW_UNARY_CHUNK;
            memcpy(in, x + c, (size_t)m * sizeof(float)); /* y may be x */
            if (is_cos) {
                for (i = 0; i < m; ++i) y[c + i] = KSUF(row_sincos)(in[i], 1);
            } else {
                for (i = 0; i < m; ++i) y[c + i] = KSUF(row_sincos)(in[i], 0);
            }
            for (i = 0; i < m; ++i) {
                if (!(fabsf(in[i]) <= 8192.0f)) { /* large, inf, NaN: libm in double */
                    y[c + i] = (float)(is_cos ? cos((double)in[i]) : sin((double)in[i]));
                }
            }
        }
        break;
    }
    default: /* ops/unary.c accepts no other operation */
        for (i = 0; i < n; ++i) y[i] = NAN;
        break;
    }
}

/* ---- REDUCE ----------------------------------------------------------------------------------- */

/* One block (<= ROW_BLOCK floats) of a run in float lanes; MAX/MIN return NaN when one is seen. */
KINLINE float KSUF(row_red_block)(accel_row_red red, const float* x, int64_t n, float m) {
    float acc[ROW_LANES];
    const float init = red == ACCEL_ROW_MAX ? -INFINITY : red == ACCEL_ROW_MIN ? INFINITY : 0.0f;
    for (int j = 0; j < ROW_LANES; ++j) {
        acc[j] = init;
    }
    int64_t i = 0;
    switch (red) {
    case ACCEL_ROW_SUM:
        for (; i + ROW_LANES <= n; i += ROW_LANES)
            for (int j = 0; j < ROW_LANES; ++j) acc[j] += x[i + j];
        for (; i < n; ++i) acc[0] += x[i];
        break;
    case ACCEL_ROW_SUMSQ:
        for (; i + ROW_LANES <= n; i += ROW_LANES)
            for (int j = 0; j < ROW_LANES; ++j) acc[j] = KFMA(x[i + j], x[i + j], acc[j]);
        for (; i < n; ++i) acc[0] = KFMA(x[i], x[i], acc[0]);
        break;
    case ACCEL_ROW_ABS:
        for (; i + ROW_LANES <= n; i += ROW_LANES)
            for (int j = 0; j < ROW_LANES; ++j) acc[j] += fabsf(x[i + j]);
        for (; i < n; ++i) acc[0] += fabsf(x[i]);
        break;
    case ACCEL_ROW_EXPSUM:
#if KHAVE_ROW512 /* the loop below on one zmm of the ROW_LANES (16) lanes: the same sums */
        {
            const __m512 vm = _mm512_set1_ps(m);
            __m512 va = _mm512_setzero_ps();
            for (; i + ROW_LANES <= n; i += ROW_LANES)
                va = _mm512_add_ps(va, KSUF(v_exp)(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm)));
            _mm512_storeu_ps(acc, va);
        }
#endif
        for (; i + ROW_LANES <= n; i += ROW_LANES)
            for (int j = 0; j < ROW_LANES; ++j) acc[j] += KSUF(vm_exp)(x[i + j] - m);
        for (; i < n; ++i) acc[0] += KSUF(vm_exp)(x[i] - m);
        break;
    case ACCEL_ROW_MAX:
        for (; i + ROW_LANES <= n; i += ROW_LANES)
            for (int j = 0; j < ROW_LANES; ++j) {
                const float v = x[i + j];
                acc[j] = (v > acc[j] || v != v) ? v : acc[j];
            }
        for (; i < n; ++i) acc[0] = (x[i] > acc[0] || x[i] != x[i]) ? x[i] : acc[0];
        break;
    case ACCEL_ROW_MIN:
        for (; i + ROW_LANES <= n; i += ROW_LANES)
            for (int j = 0; j < ROW_LANES; ++j) {
                const float v = x[i + j];
                acc[j] = (v < acc[j] || v != v) ? v : acc[j];
            }
        for (; i < n; ++i) acc[0] = (x[i] < acc[0] || x[i] != x[i]) ? x[i] : acc[0];
        break;
    default: /* PROD runs in double: reduce_run */
        break;
    }
    float r = acc[0];
    for (int j = 1; j < ROW_LANES; ++j) {
        const float v = acc[j];
        if (red == ACCEL_ROW_MAX) {
            r = (v > r || v != v) ? v : r;
        } else if (red == ACCEL_ROW_MIN) {
            r = (v < r || v != v) ? v : r;
        } else {
            r += v;
        }
    }
    return r;
}

static double KSUF(row_reduce_run)(accel_row_red red, const float* x, int64_t n, float m) {
    if (red == ACCEL_ROW_PROD) {
        double p = 1.0;
        for (int64_t i = 0; i < n; ++i) {
            p *= (double)x[i];
        }
        return p;
    }
    const int extreme = red == ACCEL_ROW_MAX || red == ACCEL_ROW_MIN;
    double r = red == ACCEL_ROW_MAX ? -INFINITY : red == ACCEL_ROW_MIN ? INFINITY : 0.0;
    for (int64_t i = 0; i < n; i += ROW_BLOCK) {
        const int64_t len = n - i < ROW_BLOCK ? n - i : ROW_BLOCK;
        const double v = (double)KSUF(row_red_block)(red, x + i, len, m);
        if (!extreme) {
            r += v;
        } else if (v != v || r != r) {
            r = r != r ? r : v; /* NaN wins */
        } else {
            r = red == ACCEL_ROW_MAX ? (v > r ? v : r) : (v < r ? v : r);
        }
    }
    return r;
}

static void KSUF(row_reduce_cols)(accel_row_red red, double* acc, const float* x, int64_t n,
                                 const double* m) {
    int64_t i;
    switch (red) {
    case ACCEL_ROW_SUM: for (i = 0; i < n; ++i) acc[i] += (double)x[i]; break;
    case ACCEL_ROW_SUMSQ: for (i = 0; i < n; ++i) { const double v = x[i]; acc[i] += v * v; } break;
    case ACCEL_ROW_ABS: for (i = 0; i < n; ++i) acc[i] += (double)fabsf(x[i]); break;
    case ACCEL_ROW_PROD: for (i = 0; i < n; ++i) acc[i] *= (double)x[i]; break;
    case ACCEL_ROW_EXPSUM:
        for (i = 0; i < n; ++i) acc[i] += (double)KSUF(vm_exp)(x[i] - (float)m[i]);
        break;
    case ACCEL_ROW_MAX:
        for (i = 0; i < n; ++i) {
            const double v = x[i];
            acc[i] = (v > acc[i] || v != v) ? v : acc[i];
        }
        break;
    case ACCEL_ROW_MIN:
        for (i = 0; i < n; ++i) {
            const double v = x[i];
            acc[i] = (v < acc[i] || v != v) ? v : acc[i];
        }
        break;
    }
}

/* Whether v replaces best (at a later position): see kernels/row_kernels.h. */
KINLINE int KSUF(row_arg_takes)(int is_min, int last, float v, float best) {
    const int better = is_min ? (last ? v <= best : v < best) : (last ? v >= best : v > best);
    return last ? (v != v) || (best == best && better) : (v != v && best == best) || better;
}

static int64_t KSUF(row_arg_run)(int is_min, int last, const float* x, int64_t n, int64_t stride) {
    float best = x[0];
    int64_t idx = 0;
    for (int64_t l = 1; l < n; ++l) {
        const float v = x[l * stride];
        if (KSUF(row_arg_takes)(is_min, last, v, best)) {
            best = v;
            idx = l;
        }
    }
    return idx;
}

static void KSUF(row_arg_cols)(int is_min, int last, float* best, int64_t* idx, const float* x,
                              int64_t n, int64_t l) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        const int take = KSUF(row_arg_takes)(is_min, last, v, best[i]);
        best[i] = take ? v : best[i];
        idx[i] = take ? l : idx[i];
    }
}

/* ---- Fused attention -------------------------------------------------------------------------- */

/* The widest block of score columns attn_scores keeps in registers, in vectors (R rows x
 * ROW_SC_NV vectors of sums: 16 of AVX-512's 32 registers; 8 of AVX2's 16). */
#if VW == 16
#define ROW_SC_NV 4
#else
#define ROW_SC_NV 2
#endif

/* R rows x NV vectors of scores at column j: s = scale * q kt (+ mask); the lanes of whole
 * vectors before n also go into each row's running largest mx[r] (vmax skips NaN: nan[r]
 * records them); the partial vector at n is left to the caller. */
KINLINE void KSUF(row_scores_tile)(const int R, const int NV, int64_t n, int64_t d, const float* q,
                                  int64_t qrs, int64_t qcs, const float* kt, int64_t ldk, int64_t j,
                                  float scale, const float* mask, int64_t mrs, float* s, int64_t lds,
                                  vf* mx, vnan* nan) {
    vf acc[ACCEL_ROW_MR][ROW_SC_NV];
    ROW_UNROLL
    for (int r = 0; r < R; ++r) {
        ROW_UNROLL
        for (int v = 0; v < NV; ++v) {
            acc[r][v] = KSUF(vset1)(0.0f);
        }
    }
    for (int64_t p = 0; p < d; ++p) {
        const float* kp = kt + p * ldk + j;
        vf k[ROW_SC_NV];
        ROW_UNROLL
        for (int v = 0; v < NV; ++v) {
            k[v] = KSUF(vload)(kp + v * VW);
        }
        ROW_UNROLL
        for (int r = 0; r < R; ++r) {
            const vf qb = KSUF(vset1)(q[r * qrs + p * qcs]);
            ROW_UNROLL
            for (int v = 0; v < NV; ++v) {
                acc[r][v] = KSUF(vfma)(qb, k[v], acc[r][v]);
            }
        }
    }
    const vf sc = KSUF(vset1)(scale);
    ROW_UNROLL
    for (int r = 0; r < R; ++r) {
        ROW_UNROLL
        for (int v = 0; v < NV; ++v) {
            const int64_t c = j + v * VW;
            vf val = KSUF(vmul)(acc[r][v], sc);
            if (c + VW <= n) {
                if (mask != NULL) {
                    val = KSUF(vadd)(val, KSUF(vload)(mask + r * mrs + c));
                }
                nan[r] = KSUF(vnan_or)(nan[r], val, val);
                mx[r] = KSUF(vmax)(val, mx[r]);
            } else if (mask != NULL && c < n) {
                val = KSUF(vadd)(val, KSUF(vload_n)(mask + r * mrs + c, n - c));
            }
            KSUF(vstore)(s + r * lds + c, val);
        }
    }
}

KINLINE void KSUF(row_scores_rows)(const int R, int64_t n, int64_t d, const float* q, int64_t qrs,
                                  int64_t qcs, const float* kt, int64_t ldk, float scale,
                                  const float* mask, int64_t mrs, float* s, int64_t lds, float* m) {
    vf mx[ACCEL_ROW_MR];
    vnan nan[ACCEL_ROW_MR];
    for (int r = 0; r < R; ++r) {
        mx[r] = KSUF(vset1)(-INFINITY);
        nan[r] = KSUF(vnan_none)();
    }
    int64_t j = 0;
    for (; j + ROW_SC_NV * VW <= ldk && j < n; j += ROW_SC_NV * VW) {
        KSUF(row_scores_tile)(R, ROW_SC_NV, n, d, q, qrs, qcs, kt, ldk, j, scale, mask, mrs, s, lds, mx, nan);
    }
    for (; j < n; j += 2 * VW) {
        KSUF(row_scores_tile)(R, 2, n, d, q, qrs, qcs, kt, ldk, j, scale, mask, mrs, s, lds, mx, nan);
    }
    const int64_t whole = n / VW * VW;
    for (int r = 0; r < R; ++r) {
        float best = KSUF(vhmax)(mx[r]);
        int bad = KSUF(vnan_any)(nan[r]);
        for (int64_t c = whole; c < n; ++c) {
            const float x = s[r * lds + c];
            best = x > best ? x : best;
            bad |= x != x;
        }
        m[r] = bad || best == -INFINITY ? NAN : best;
    }
}

static void KSUF(row_attn_scores)(int64_t nr, int64_t n, int64_t d, const float* q, int64_t qrs,
                                 int64_t qcs, const float* kt, int64_t ldk, float scale,
                                 const float* mask, int64_t mrs, float* s, int64_t lds, float* m) {
    switch (nr) {
    case 4: KSUF(row_scores_rows)(4, n, d, q, qrs, qcs, kt, ldk, scale, mask, mrs, s, lds, m); break;
    case 3: KSUF(row_scores_rows)(3, n, d, q, qrs, qcs, kt, ldk, scale, mask, mrs, s, lds, m); break;
    case 2: KSUF(row_scores_rows)(2, n, d, q, qrs, qcs, kt, ldk, scale, mask, mrs, s, lds, m); break;
    default: KSUF(row_scores_rows)(1, n, d, q, qrs, qcs, kt, ldk, scale, mask, mrs, s, lds, m); break;
    }
}

/* exp(v) for v <= 0 (softmax's x - max, never NaN: the caller handles rows with a NaN):
 * exp_core's reduction and polynomial (exp_poly) with one scaling by 2^n, no upper clamp;
 * results below 2^-126 (v < -87.34, -inf included) are flushed to 0, which next to the row's
 * largest term, 1, changes no sum. */
KINLINE float KSUF(row_exp_neg)(float v) {
    const float c = v > -87.336f ? v : -87.336f;
    const float fn = KSUF(round_near)(c * 1.44269504088896341f);
    float r = KFMA(fn, -EXP_LN2_HI, c);
    r = KFMA(fn, -EXP_LN2_LO, r);
    /* fn >= -126: one normal factor */
    const float y = KSUF(exp_poly)(r) * KSUF(from_bits)((uint32_t)((int32_t)fn + 127) << 23);
    return v > -87.336f ? y : 0.0f;
}

/* s[j] = exp(s[j] - m) for j < n (m the row's largest, finite); returns their sum. */
static float KSUF(row_attn_exp_row)(float* s, int64_t n, float m) {
    float acc[ROW_LANES] = {0};
    int64_t i = 0;
    for (; i + ROW_LANES <= n; i += ROW_LANES) {
        for (int j = 0; j < ROW_LANES; ++j) {
            const float e = KSUF(row_exp_neg)(s[i + j] - m);
            s[i + j] = e;
            acc[j] += e;
        }
    }
    float sum = 0.0f;
    for (; i < n; ++i) {
        const float e = KSUF(row_exp_neg)(s[i] - m);
        s[i] = e;
        sum += e;
    }
    for (int j = 0; j < ROW_LANES; ++j) {
        sum += acc[j];
    }
    return sum;
}

#if defined(__AVX512F__) && defined(__FMA__)
/* row_exp_neg's exp with AVX-512's rounding (vrndscaleps) and scaling (vscalefps) instead of
 * the integer exponent arithmetic: the same reduction and polynomial (the same results within
 * an ulp), fewer instructions; the rows of a block taken together, so their dependency chains
 * overlap. s[r * lds + j] = exp(s[r * lds + j] - m[r]) for r < nr, j < n (0 where that is
 * below -87.336, as row_exp_neg), sums[r] their sum. */
KINLINE void KSUF(row_exp_rows_512)(const int nr, float* s, int64_t n, int64_t lds, const float* m, float* sums) {
    const __m512 lo = _mm512_set1_ps(-87.336f);
    const __m512 l2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 c1 = _mm512_set1_ps(-EXP_LN2_HI), c2 = _mm512_set1_ps(-EXP_LN2_LO);
    __m512 acc[ACCEL_ROW_MR], vm[ACCEL_ROW_MR];
    ROW_UNROLL
    for (int r = 0; r < nr; ++r) {
        acc[r] = _mm512_setzero_ps();
        vm[r] = _mm512_set1_ps(m[r]);
    }
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 tail = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
        ROW_UNROLL
        for (int r = 0; r < nr; ++r) {
            float* row = s + r * lds + i;
            const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row), vm[r]);
            const __mmask16 keep = _mm512_mask_cmp_ps_mask(tail, v, lo, _CMP_GT_OQ);
            const __m512 c = _mm512_max_ps(v, lo);
            const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(c, l2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m512 q = _mm512_fmadd_ps(fn, c1, c);
            q = _mm512_fmadd_ps(fn, c2, q);
            const __m512 p = KSUF(v_exp_poly)(q);
            const __m512 y = _mm512_maskz_scalef_ps(keep, p, fn);
            _mm512_mask_storeu_ps(row, tail, y);
            acc[r] = _mm512_add_ps(acc[r], y);
        }
    }
    ROW_UNROLL
    for (int r = 0; r < nr; ++r) {
        sums[r] = _mm512_reduce_add_ps(acc[r]);
    }
}
#endif

/* Softmax numerators of nr rows (row r at s + r * lds, its largest m[r] as attn_scores gave
 * it): s[j] = exp(s[j] - m[r]), inv[r] = 1 / their sum. A row with a NaN, or all -inf (m[r]
 * NaN), becomes NaN throughout, as the unfused softmax. */
static void KSUF(row_attn_softmax_rows)(float* s, int64_t nr, int64_t n, int64_t lds, const float* m,
                                       float* inv) {
    float sums[ACCEL_ROW_MR] = {0};
    int64_t good = 0;
    for (int64_t r = 0; r < nr; ++r) {
        good += m[r] == m[r];
    }
    if (good == nr) {
#if defined(__AVX512F__) && defined(__FMA__)
        switch (nr) { /* the rows' sums kept in registers */
        case 4: KSUF(row_exp_rows_512)(4, s, n, lds, m, sums); break;
        case 3: KSUF(row_exp_rows_512)(3, s, n, lds, m, sums); break;
        case 2: KSUF(row_exp_rows_512)(2, s, n, lds, m, sums); break;
        default: KSUF(row_exp_rows_512)(1, s, n, lds, m, sums); break;
        }
#else
        for (int64_t r = 0; r < nr; ++r) {
            sums[r] = KSUF(row_attn_exp_row)(s + r * lds, n, m[r]);
        }
#endif
    } else {
        for (int64_t r = 0; r < nr; ++r) {
            sums[r] = m[r] == m[r] ? KSUF(row_attn_exp_row)(s + r * lds, n, m[r]) : NAN;
            for (int64_t j = 0; j < n && m[r] != m[r]; ++j) {
                s[r * lds + j] = NAN;
            }
        }
    }
    for (int64_t r = 0; r < nr; ++r) {
        inv[r] = 1.0f / sums[r];
    }
}

/* The widest block of output columns attn_pv keeps in registers, in vectors. */
#if VW == 16
#define ROW_PV_NV 4
#else
#define ROW_PV_NV 2
#endif

/* R rows x NV vectors of o at column c. */
KINLINE void KSUF(row_pv_tile)(const int R, const int NV, int64_t n, const float* p, int64_t ldp,
                              const float* v, int64_t ldv, int64_t c, int64_t dv, const float* inv,
                              float* o, int64_t ors, int64_t ocs) {
    /* one vector of columns: two sets of accumulators (even and odd keys), as one set is too
     * few to hide the latency of the multiply-adds (by NV alone, so a row sums in the same
     * order whatever the rows beside it) */
    vf acc[ACCEL_ROW_MR][ROW_PV_NV], acc2[ACCEL_ROW_MR][ROW_PV_NV];
    for (int r = 0; r < R; ++r) {
        for (int k = 0; k < NV; ++k) {
            acc[r][k] = KSUF(vset1)(0.0f);
            acc2[r][k] = acc[r][k];
        }
    }
    int64_t j = 0;
    if (NV == 1) {
        for (; j + 2 <= n; j += 2) {
            vf vk[ROW_PV_NV], vk2[ROW_PV_NV];
            for (int k = 0; k < NV; ++k) {
                vk[k] = KSUF(vload)(v + j * ldv + c + k * VW);
                vk2[k] = KSUF(vload)(v + (j + 1) * ldv + c + k * VW);
            }
            for (int r = 0; r < R; ++r) {
                const vf pb = KSUF(vset1)(p[r * ldp + j]);
                const vf pb2 = KSUF(vset1)(p[r * ldp + j + 1]);
                for (int k = 0; k < NV; ++k) {
                    acc[r][k] = KSUF(vfma)(pb, vk[k], acc[r][k]);
                    acc2[r][k] = KSUF(vfma)(pb2, vk2[k], acc2[r][k]);
                }
            }
        }
    }
    for (; j < n; ++j) {
        vf vk[ROW_PV_NV];
        for (int k = 0; k < NV; ++k) {
            vk[k] = KSUF(vload)(v + j * ldv + c + k * VW);
        }
        for (int r = 0; r < R; ++r) {
            const vf pb = KSUF(vset1)(p[r * ldp + j]);
            for (int k = 0; k < NV; ++k) {
                acc[r][k] = KSUF(vfma)(pb, vk[k], acc[r][k]);
            }
        }
    }
    if (NV == 1) {
        for (int r = 0; r < R; ++r) {
            for (int k = 0; k < NV; ++k) {
                acc[r][k] = KSUF(vadd)(acc[r][k], acc2[r][k]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const vf sc = KSUF(vset1)(inv[r]);
        float* orow = o + r * ors;
        for (int k = 0; k < NV; ++k) {
            const int64_t c0 = c + k * VW;
            const int64_t w = dv - c0 < VW ? dv - c0 : VW;
            if (w <= 0) {
                break;
            }
            const vf val = KSUF(vmul)(acc[r][k], sc);
            if (ocs == 1) {
                if (w == VW) {
                    KSUF(vstore)(orow + c0, val);
                } else {
                    KSUF(vstore_n)(orow + c0, val, w);
                }
            } else {
                float t[VW];
                KSUF(vstore)(t, val);
                for (int64_t l = 0; l < w; ++l) {
                    orow[(c0 + l) * ocs] = t[l];
                }
            }
        }
    }
}

KINLINE void KSUF(row_pv_rows)(const int R, int64_t n, int64_t dv, const float* p, int64_t ldp,
                              const float* v, int64_t ldv, const float* inv, float* o, int64_t ors,
                              int64_t ocs) {
    for (int64_t c = 0; c < dv; c += ROW_PV_NV * VW) {
        const int64_t left = (dv - c + VW - 1) / VW;
        switch (left >= ROW_PV_NV ? ROW_PV_NV : left) {
#if ROW_PV_NV == 4
        case 4: KSUF(row_pv_tile)(R, 4, n, p, ldp, v, ldv, c, dv, inv, o, ors, ocs); break;
        case 3: KSUF(row_pv_tile)(R, 3, n, p, ldp, v, ldv, c, dv, inv, o, ors, ocs); break;
#endif
        case 2: KSUF(row_pv_tile)(R, 2, n, p, ldp, v, ldv, c, dv, inv, o, ors, ocs); break;
        default: KSUF(row_pv_tile)(R, 1, n, p, ldp, v, ldv, c, dv, inv, o, ors, ocs); break;
        }
    }
}

static void KSUF(row_attn_pv)(int64_t nr, int64_t n, int64_t dv, const float* p, int64_t ldp,
                             const float* v, int64_t ldv, const float* inv, float* o, int64_t ors,
                             int64_t ocs) {
    switch (nr) {
    case 4: KSUF(row_pv_rows)(4, n, dv, p, ldp, v, ldv, inv, o, ors, ocs); break;
    case 3: KSUF(row_pv_rows)(3, n, dv, p, ldp, v, ldv, inv, o, ors, ocs); break;
    case 2: KSUF(row_pv_rows)(2, n, dv, p, ldp, v, ldv, inv, o, ors, ocs); break;
    default: KSUF(row_pv_rows)(1, n, dv, p, ldp, v, ldv, inv, o, ors, ocs); break;
    }
}

const accel_row_kernels KROWTABLE = {
    .vw = VW,
    .norm_rows = KSUF(row_norm_rows),
    .moments = KSUF(row_moments),
    .affine_row = KSUF(row_affine_row),
    .add_rows = KSUF(row_add_rows),
    .select_row = KSUF(row_select_row),
    .unary_row = KSUF(row_unary_row),
    .reduce_run = KSUF(row_reduce_run),
    .reduce_cols = KSUF(row_reduce_cols),
    .arg_run = KSUF(row_arg_run),
    .arg_cols = KSUF(row_arg_cols),
    .attn_scores = KSUF(row_attn_scores),
    .attn_softmax_rows = KSUF(row_attn_softmax_rows),
    .attn_pv = KSUF(row_attn_pv),
};
