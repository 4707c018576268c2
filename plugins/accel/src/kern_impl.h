/*
 * CpuAcc vector kernels, written once in plain C and compiled once per ISA:
 * kern_portable.c (no flags), kern_avx2.c (-mavx2 -mfma), kern_avx512.c
 * (-mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma). The loops are shaped for
 * the auto-vectorizer (-O3): no calls inside hot loops except libm's powf,
 * lane arrays for reductions, branch-free selects that keep NaN semantics.
 *
 * The including file defines KSUF(name) (appends its ISA suffix) and
 * KTABLE (the accel_kernels object it exports).
 */
#include "accel.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 16

#if defined(__GNUC__) || defined(__clang__)
#define KINLINE static inline __attribute__((always_inline))
#define KALIGN64 __attribute__((aligned(64)))
#else
#define KINLINE static inline
#define KALIGN64
#endif

/* exp(x) for x <= 88 (Cephes polynomial; relative error ~2 ulp). NaN stays NaN;
 * x below -87.3 gives ~1e-38 instead of a subnormal or 0, x above 88 gives
 * exp(88): no caller needs more (sigmoid, tanh of -2|x|, elu, softmax of x - max). */
KINLINE float KSUF(exp_fast)(float x) {
    float c = x > 88.0f ? 88.0f : x;
    c = c < -87.3f ? -87.3f : c;
    float fx = c * 1.44269504088896341f + 0.5f;
    float fl = floorf(fx); /* in [-126, 127] for the clamped c */
    float r = c - fl * 0.693359375f + fl * 2.12194440e-4f;
    float z = r * r;
    float y = 1.9875691500E-4f;
    y = y * r + 1.3981999507E-3f;
    y = y * r + 8.3334519073E-3f;
    y = y * r + 4.1665795894E-2f;
    y = y * r + 1.6666665459E-1f;
    y = y * r + 5.0000001201E-1f;
    y = y * z + r + 1.0f;
    float fe = fl + 127.0f;
    fe = fe < 1.0f ? 1.0f : (fe > 254.0f ? 254.0f : fe);
    int32_t e = (int32_t)fe;
    uint32_t bits = (uint32_t)e << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    y = y * scale;
    return x != x ? x : y;
}

/* expm1(x) for x <= 0: a Taylor polynomial near 0 (keeps relative accuracy for tiny x),
 * exp(x) - 1 further out. */
KINLINE float KSUF(expm1_neg)(float x) {
    float p = 1.0f / 720.0f;
    p = p * x + 1.0f / 120.0f;
    p = p * x + 1.0f / 24.0f;
    p = p * x + 1.0f / 6.0f;
    p = p * x + 0.5f;
    p = p * x * x + x;
    float e = KSUF(exp_fast)(x) - 1.0f;
    return x > -0.25f ? p : e; /* NaN: e is NaN */
}

/* tanh(x): an odd Taylor polynomial for |x| < 0.25, (1 - e) / (1 + e) with e = exp(-2|x|)
 * beyond (no cancellation there); relative error a few ulp everywhere. */
KINLINE float KSUF(tanh_fast)(float v) {
    float a = v < 0.0f ? -v : v;
    float z = v * v;
    float p = 62.0f / 2835.0f;
    p = p * z - 17.0f / 315.0f;
    p = p * z + 2.0f / 15.0f;
    p = p * z - 1.0f / 3.0f;
    p = p * z * v + v;
    float e = KSUF(exp_fast)(-2.0f * a);
    float t = (1.0f - e) / (1.0f + e);
    t = v < 0.0f ? -t : t;
    return a < 0.25f ? p : t; /* NaN: t is NaN */
}

KINLINE float KSUF(clamp01)(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

/* ---- Activation ------------------------------------------------------------- */

static void KSUF(activation)(const pn_activation_desc* act, const float* x, float* y, int64_t n) {
    const float alpha = act->alpha, beta = act->beta;
    int64_t i;
    switch (act->kind) {
    case PN_ACTIVATION_RELU:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
        break;
    case PN_ACTIVATION_BOUNDED_RELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float lo = v < alpha ? alpha : v;
            y[i] = lo > beta ? beta : lo;
        }
        break;
    case PN_ACTIVATION_LEAKY_RELU:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v >= 0.0f ? v : alpha * v; }
        break;
    case PN_ACTIVATION_SIGMOID:
        for (i = 0; i < n; ++i) { y[i] = 1.0f / (1.0f + KSUF(exp_fast)(-x[i])); }
        break;
    case PN_ACTIVATION_TANH:
        for (i = 0; i < n; ++i) {
            y[i] = KSUF(tanh_fast)(x[i]);
        }
        break;
    case PN_ACTIVATION_ELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float e = KSUF(expm1_neg)(v > 0.0f ? 0.0f : v); /* NaN stays NaN */
            y[i] = v >= 0.0f ? v : alpha * e;
        }
        break;
    case PN_ACTIVATION_HARD_SWISH:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v * KSUF(clamp01)(v / 6.0f + 0.5f);
        }
        break;
    case PN_ACTIVATION_HARD_SIGMOID:
        for (i = 0; i < n; ++i) { y[i] = KSUF(clamp01)(alpha * x[i] + beta); }
        break;
    case PN_ACTIVATION_ABS:
        for (i = 0; i < n; ++i) { y[i] = fabsf(x[i]); }
        break;
    case PN_ACTIVATION_SQRT:
        for (i = 0; i < n; ++i) { y[i] = sqrtf(x[i]); }
        break;
    case PN_ACTIVATION_SQUARE:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v * v; }
        break;
    case PN_ACTIVATION_LINEAR:
        for (i = 0; i < n; ++i) { y[i] = alpha * x[i] + beta; }
        break;
    case PN_ACTIVATION_INVALID:
        if (x != y) {
            memmove(y, x, (size_t)n * sizeof(float));
        }
        break;
    }
}

/* ---- Binary ------------------------------------------------------------------ */

/* x op z for each (sa, sb) stride pattern: both rows, a row and a scalar, ... */
#define BIN_LOOPS(EXPR)                                                      \
    do {                                                                     \
        if (sa && sb) {                                                      \
            for (i = 0; i < n; ++i) { float x = a[i], z = b[i]; y[i] = (EXPR); } \
        } else if (sa) {                                                     \
            const float z = b[0];                                            \
            for (i = 0; i < n; ++i) { float x = a[i]; y[i] = (EXPR); }       \
        } else if (sb) {                                                     \
            const float x = a[0];                                            \
            for (i = 0; i < n; ++i) { float z = b[i]; y[i] = (EXPR); }       \
        } else {                                                             \
            const float x = a[0], z = b[0];                                  \
            const float v = (EXPR);                                          \
            for (i = 0; i < n; ++i) { y[i] = v; }                            \
        }                                                                    \
    } while (0)

static void KSUF(binary_row)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                             float* y, int64_t n) {
    int64_t i;
    switch (op) {
    case PN_BINARY_ADD: BIN_LOOPS(x + z); break;
    case PN_BINARY_SUB: BIN_LOOPS(x - z); break;
    case PN_BINARY_MUL: BIN_LOOPS(x * z); break;
    case PN_BINARY_DIV: BIN_LOOPS(x / z); break;
    case PN_BINARY_MAXIMUM: BIN_LOOPS((x >= z || x != x) ? x : z); break;
    case PN_BINARY_MINIMUM: BIN_LOOPS((x <= z || x != x) ? x : z); break;
    case PN_BINARY_POWER: BIN_LOOPS(powf(x, z)); break;
    case PN_BINARY_PRELU: BIN_LOOPS(x >= 0.0f ? x : x * z); break;
    case PN_BINARY_INVALID: break;
    }
}

/* ---- Softmax helpers -------------------------------------------------------- */

static float KSUF(max_row)(const float* x, int64_t n) {
    float acc[LANES];
    int64_t i = 0;
    int nan = 0;
    for (int j = 0; j < LANES; ++j) {
        acc[j] = -INFINITY;
    }
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; ++j) {
            float v = x[i + j];
            acc[j] = v > acc[j] ? v : acc[j];
            nan |= v != v;
        }
    }
    float m = -INFINITY;
    for (int j = 0; j < LANES; ++j) {
        m = acc[j] > m ? acc[j] : m;
    }
    for (; i < n; ++i) {
        float v = x[i];
        m = v > m ? v : m;
        nan |= v != v;
    }
    return nan ? NAN : m;
}

static float KSUF(exp_sub_sum)(const float* x, float m, float* y, int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; ++j) {
            float e = KSUF(exp_fast)(x[i + j] - m);
            y[i + j] = e;
            acc[j] += e;
        }
    }
    float s = 0.0f;
    for (; i < n; ++i) {
        float e = KSUF(exp_fast)(x[i] - m);
        y[i] = e;
        s += e;
    }
    for (int j = 0; j < LANES; ++j) {
        s += acc[j];
    }
    return s;
}

static void KSUF(scale)(float* y, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] *= s;
    }
}

static void KSUF(max_cols)(float* m, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i], o = m[i];
        m[i] = (v > o || v != v) ? v : o;
    }
}

static void KSUF(exp_sub_cols)(const float* x, const float* m, float* y, float* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float e = KSUF(exp_fast)(x[i] - m[i]);
        y[i] = e;
        s[i] += e;
    }
}

static void KSUF(mul_cols)(float* y, const float* r, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] *= r[i];
    }
}

/* ---- Vector primitives of the row kernels (sum_row, pooling, depthwise) -------------
 * VW floats per vector: a zmm (AVX-512 build), a ymm (AVX2 build), or an array of 8 floats
 * the portable build's compiler maps onto what it has. The _n forms touch only lanes [0, n)
 * (0 < n < VW), so they never read or write past the end of a tensor; vload_lanes(p, m) reads
 * the lanes of m = vlanes_range(lo, hi), [lo, hi) (0 <= lo <= hi <= VW), and zeros the others. vmax/vmin follow the
 * x86 rule (b when either is NaN); the vnan_* helpers track NaNs (vnan_or: in a or b) for a
 * NaN-propagating max. */
#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#define VW 16
typedef __m512 vf;
typedef __mmask16 vnan;
KINLINE __mmask16 KSUF(vmask)(int64_t n) { return (__mmask16)((1u << n) - 1u); }
KINLINE vf KSUF(vload)(const float* p) { return _mm512_loadu_ps(p); }
KINLINE vf KSUF(vload_n)(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(KSUF(vmask)(n), p); }
KINLINE vf KSUF(vload_n_or)(const float* p, int64_t n, vf fill) {
    return _mm512_mask_loadu_ps(fill, KSUF(vmask)(n), p);
}
typedef __mmask16 vlanes;
KINLINE vlanes KSUF(vlanes_range)(int64_t lo, int64_t hi) { return (__mmask16)(KSUF(vmask)(hi) & ~KSUF(vmask)(lo)); }
KINLINE vf KSUF(vload_lanes)(const float* p, vlanes m) { return _mm512_maskz_loadu_ps(m, p); }
KINLINE void KSUF(vstore)(float* p, vf v) { _mm512_storeu_ps(p, v); }
KINLINE void KSUF(vstore_n)(float* p, vf v, int64_t n) { _mm512_mask_storeu_ps(p, KSUF(vmask)(n), v); }
KINLINE vf KSUF(vset1)(float s) { return _mm512_set1_ps(s); }
KINLINE vf KSUF(vadd)(vf a, vf b) { return _mm512_add_ps(a, b); }
KINLINE vf KSUF(vmul)(vf a, vf b) { return _mm512_mul_ps(a, b); }
KINLINE vf KSUF(vsub)(vf a, vf b) { return _mm512_sub_ps(a, b); }
KINLINE vf KSUF(vdiv)(vf a, vf b) { return _mm512_div_ps(a, b); }
KINLINE vf KSUF(vfma)(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
KINLINE vf KSUF(vmax)(vf a, vf b) { return _mm512_max_ps(a, b); }
KINLINE vf KSUF(vmin)(vf a, vf b) { return _mm512_min_ps(a, b); }
KINLINE float KSUF(vsum)(vf a) { return _mm512_reduce_add_ps(a); }
KINLINE vnan KSUF(vnan_none)(void) { return 0; }
KINLINE vnan KSUF(vnan_or)(vnan m, vf a, vf b) { return m | _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
KINLINE vf KSUF(vnan_apply)(vnan m, vf v) { return _mm512_mask_mov_ps(v, m, _mm512_set1_ps(NAN)); }
/* de[k] = s[2k], dd[k] = s[2k + 1] for k < n (reads s[0, 2n); whole-vector stores: may write
 * up to 15 floats past de + n and dd + n). */
static void KSUF(deint)(const float* s, int64_t n, float* de, float* dd) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int64_t k = 0; k < n; k += 16) {
        __m512 a, b;
        if (k + 16 <= n) {
            a = _mm512_loadu_ps(s + 2 * k);
            b = _mm512_loadu_ps(s + 2 * k + 16);
        } else { /* 2 (n - k) < 32 elements left */
            int64_t m = 2 * (n - k);
            a = _mm512_maskz_loadu_ps(KSUF(vmask)(m < 16 ? m : 16), s + 2 * k);
            b = _mm512_maskz_loadu_ps(KSUF(vmask)(m > 16 ? m - 16 : 0), s + 2 * k + 16);
        }
        _mm512_storeu_ps(de + k, _mm512_permutex2var_ps(a, even, b));
        _mm512_storeu_ps(dd + k, _mm512_permutex2var_ps(a, odd, b));
    }
}
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VW 8
typedef __m256 vf;
typedef __m256 vnan;
static const int32_t KSUF(tail_bits)[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
KINLINE __m256i KSUF(vmask)(int64_t n) {
    return _mm256_loadu_si256((const __m256i*)(KSUF(tail_bits) + 8 - n));
}
KINLINE vf KSUF(vload)(const float* p) { return _mm256_loadu_ps(p); }
KINLINE vf KSUF(vload_n)(const float* p, int64_t n) { return _mm256_maskload_ps(p, KSUF(vmask)(n)); }
KINLINE vf KSUF(vload_n_or)(const float* p, int64_t n, vf fill) {
    __m256i m = KSUF(vmask)(n);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
typedef __m256i vlanes;
KINLINE vlanes KSUF(vlanes_range)(int64_t lo, int64_t hi) { return _mm256_andnot_si256(KSUF(vmask)(lo), KSUF(vmask)(hi)); }
KINLINE vf KSUF(vload_lanes)(const float* p, vlanes m) { return _mm256_maskload_ps(p, m); }
KINLINE void KSUF(vstore)(float* p, vf v) { _mm256_storeu_ps(p, v); }
KINLINE void KSUF(vstore_n)(float* p, vf v, int64_t n) { _mm256_maskstore_ps(p, KSUF(vmask)(n), v); }
KINLINE vf KSUF(vset1)(float s) { return _mm256_set1_ps(s); }
KINLINE vf KSUF(vadd)(vf a, vf b) { return _mm256_add_ps(a, b); }
KINLINE vf KSUF(vmul)(vf a, vf b) { return _mm256_mul_ps(a, b); }
KINLINE vf KSUF(vsub)(vf a, vf b) { return _mm256_sub_ps(a, b); }
KINLINE vf KSUF(vdiv)(vf a, vf b) { return _mm256_div_ps(a, b); }
KINLINE vf KSUF(vfma)(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
KINLINE vf KSUF(vmax)(vf a, vf b) { return _mm256_max_ps(a, b); }
KINLINE vf KSUF(vmin)(vf a, vf b) { return _mm256_min_ps(a, b); }
KINLINE float KSUF(vsum)(vf a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
KINLINE vnan KSUF(vnan_none)(void) { return _mm256_setzero_ps(); }
KINLINE vnan KSUF(vnan_or)(vnan m, vf a, vf b) { return _mm256_or_ps(m, _mm256_cmp_ps(a, b, _CMP_UNORD_Q)); }
KINLINE vf KSUF(vnan_apply)(vnan m, vf v) { return _mm256_blendv_ps(v, _mm256_set1_ps(NAN), m); }
/* de[k] = s[2k], dd[k] = s[2k + 1] for k < n (reads s[0, 2n); whole-vector stores: may write
 * up to 7 floats past de + n and dd + n). */
static void KSUF(deint)(const float* s, int64_t n, float* de, float* dd) {
    for (int64_t k = 0; k < n; k += 8) {
        __m256 a, b;
        if (k + 8 <= n) {
            a = _mm256_loadu_ps(s + 2 * k);
            b = _mm256_loadu_ps(s + 2 * k + 8);
        } else { /* 2 (n - k) < 16 elements left */
            int64_t m = 2 * (n - k);
            a = _mm256_maskload_ps(s + 2 * k, KSUF(vmask)(m < 8 ? m : 8));
            b = _mm256_maskload_ps(s + 2 * k + 8, KSUF(vmask)(m > 8 ? m - 8 : 0));
        }
        __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 a4 a6 b4 b6 */
        __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
        o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
        _mm256_storeu_ps(de + k, e);
        _mm256_storeu_ps(dd + k, o);
    }
}
#else
#define VW 8
typedef struct { float v[VW]; } vf;
typedef struct { int32_t v[VW]; } vnan;
KINLINE vf KSUF(vload)(const float* p) { vf r; for (int j = 0; j < VW; ++j) r.v[j] = p[j]; return r; }
KINLINE vf KSUF(vload_n)(const float* p, int64_t n) {
    vf r;
    for (int j = 0; j < VW; ++j) r.v[j] = j < n ? p[j] : 0.0f;
    return r;
}
KINLINE vf KSUF(vload_n_or)(const float* p, int64_t n, vf fill) {
    for (int j = 0; j < n; ++j) fill.v[j] = p[j];
    return fill;
}
typedef struct { int32_t lo, hi; } vlanes;
KINLINE vlanes KSUF(vlanes_range)(int64_t lo, int64_t hi) { vlanes m = {(int32_t)lo, (int32_t)hi}; return m; }
KINLINE vf KSUF(vload_lanes)(const float* p, vlanes m) {
    vf r;
    for (int j = 0; j < VW; ++j) r.v[j] = j >= m.lo && j < m.hi ? p[j] : 0.0f;
    return r;
}
KINLINE void KSUF(vstore)(float* p, vf v) { for (int j = 0; j < VW; ++j) p[j] = v.v[j]; }
KINLINE void KSUF(vstore_n)(float* p, vf v, int64_t n) { for (int j = 0; j < n; ++j) p[j] = v.v[j]; }
KINLINE vf KSUF(vset1)(float s) { vf r; for (int j = 0; j < VW; ++j) r.v[j] = s; return r; }
KINLINE vf KSUF(vadd)(vf a, vf b) { for (int j = 0; j < VW; ++j) a.v[j] += b.v[j]; return a; }
KINLINE vf KSUF(vmul)(vf a, vf b) { for (int j = 0; j < VW; ++j) a.v[j] *= b.v[j]; return a; }
KINLINE vf KSUF(vfma)(vf a, vf b, vf c) {
    for (int j = 0; j < VW; ++j) c.v[j] += a.v[j] * b.v[j];
    return c;
}
KINLINE vf KSUF(vmax)(vf a, vf b) {
    for (int j = 0; j < VW; ++j) a.v[j] = a.v[j] > b.v[j] ? a.v[j] : b.v[j];
    return a;
}
KINLINE vf KSUF(vmin)(vf a, vf b) {
    for (int j = 0; j < VW; ++j) a.v[j] = a.v[j] < b.v[j] ? a.v[j] : b.v[j];
    return a;
}
KINLINE float KSUF(vsum)(vf a) {
    float s = 0.0f;
    for (int j = 0; j < VW; ++j) s += a.v[j];
    return s;
}
KINLINE vnan KSUF(vnan_none)(void) { vnan r; for (int j = 0; j < VW; ++j) r.v[j] = 0; return r; }
KINLINE vnan KSUF(vnan_or)(vnan m, vf a, vf b) {
    for (int j = 0; j < VW; ++j) m.v[j] |= a.v[j] != a.v[j] || b.v[j] != b.v[j];
    return m;
}
KINLINE vf KSUF(vnan_apply)(vnan m, vf v) {
    for (int j = 0; j < VW; ++j) v.v[j] = m.v[j] ? NAN : v.v[j];
    return v;
}
/* de[k] = s[2k], dd[k] = s[2k + 1] for k < n. */
static void KSUF(deint)(const float* s, int64_t n, float* de, float* dd) {
    for (int64_t k = 0; k < n; ++k) {
        de[k] = s[2 * k];
        dd[k] = s[2 * k + 1];
    }
}
#endif

/* The lanes of a vector loaded at column `col` (lane l: column col + l) whose columns lie in
 * [lo, hi): a mask for vload_lanes. */
KINLINE vlanes KSUF(vlanes_in)(int64_t col, int64_t lo, int64_t hi) {
    int64_t a = lo - col, b = hi - col;
    a = a < 0 ? 0 : a > VW ? VW : a;
    b = b > VW ? VW : b < a ? a : b;
    return KSUF(vlanes_range)(a, b);
}

/* ---- Non-temporal output (accel_env.stream_bytes) -----------------------------------
 * For layers whose inputs and outputs together exceed the last-level cache: the output would
 * not stay cached for the next layer anyway, and storing it with non-temporal stores saves
 * the read of each destination line that an ordinary store first makes. The row is computed
 * STREAM_BLOCK floats at a time into a stack buffer (L1), then copied out; blocks of 128-512
 * floats ran 16 M-element add and relu at 25 and 30-32 GB/s on Zen 4 (plain stores: 20-22,
 * 19-25), 1024-4096 float blocks slower than plain stores. */
#define STREAM_BLOCK 256

/* y[0, n) = t[0, n), non-temporally where y + i is vector-aligned (t is 64-byte aligned, y
 * is when the caller started it at stream_head). */
static void KSUF(stream_store)(float* y, const float* t, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) _mm512_stream_ps(y + i, _mm512_load_ps(t + i));
#elif defined(__AVX2__)
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(y + i, _mm256_load_ps(t + i));
#endif
    memcpy(y + i, t + i, (size_t)(n - i) * sizeof(float));
}

/* Orders the non-temporal stores before what follows (the pool's barrier, another thread's
 * reads). */
KINLINE void KSUF(stream_fence)(void) {
#if defined(__AVX512F__) || defined(__AVX2__)
    _mm_sfence();
#endif
}

/* Floats from y to the next 64-byte boundary, at most n. */
KINLINE int64_t KSUF(stream_head)(const float* y, int64_t n) {
    int64_t h = (int64_t)((64u - ((uintptr_t)y & 63u)) & 63u) / (int64_t)sizeof(float);
    return h < n ? h : n;
}

/* Elements [i, i + m) of act(a op b) into dst[0, m) with ordinary stores (op
 * PN_BINARY_INVALID: act(a); act NULL: no activation; a, b as in binary_row). */
KINLINE void KSUF(rows_to)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                           const pn_activation_desc* act, float* dst, int64_t i, int64_t m) {
    const float* src = a + (sa ? i : 0);
    if (op != PN_BINARY_INVALID) {
        KSUF(binary_row)(op, src, sa, b + (sb ? i : 0), sb, dst, m);
        src = dst;
    }
    if (act != NULL) KSUF(activation)(act, src, dst, m);
}

#if defined(__AVX512F__) || defined(__AVX2__)
KINLINE void KSUF(vstream)(float* p, vf v) { /* p vector-aligned */
#if defined(__AVX512F__)
    _mm512_stream_ps(p, v);
#else
    _mm256_stream_ps(p, v);
#endif
}

/* One loop of stream_fused: v = x op z (op ADD, SUB, MUL, DIV; INVALID: x) clamped to
 * [lo, hi] when `clamp` (max/min take the value when it is NaN: NaN stays NaN, -0 stays -0,
 * as the scalar selects of activation do). */
#define STREAM_FUSED_LOOP(EXPR)                                                            \
    for (; i + VW <= n; i += VW) {                                                         \
        const vf x = sa ? KSUF(vload)(a + i) : xs;                                         \
        const vf z = sb ? KSUF(vload)(b + i) : zs;                                         \
        vf v = (EXPR);                                                                     \
        (void)z;                                                                           \
        if (clamp) v = KSUF(vmin)(vhi, KSUF(vmax)(vlo, v));                                \
        KSUF(vstream)(y + i, v);                                                           \
    }

/* act(a op b) for whole vectors from i on (y + i vector-aligned), each result stored
 * non-temporally as soon as it is computed, for the ops and activations that are one
 * vector instruction or two: op ADD, SUB, MUL, DIV or INVALID (a alone); act NULL, RELU or
 * BOUNDED_RELU. Returns where it stopped (i when the case is not one of those). Loads and
 * streamed stores interleaved this way ran a 16 M-element add at 31-32 GB/s on Zen 4, one
 * thread, where the STREAM_BLOCK buffer of binary_row_stream ran it at 26-29. */
KINLINE int64_t KSUF(stream_fused)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                                   const pn_activation_desc* act, float* y, int64_t i, int64_t n) {
    int clamp = 0;
    float lo = -INFINITY, hi = INFINITY;
    if (act != NULL) {
        if (act->kind == PN_ACTIVATION_RELU) {
            lo = 0.0f;
        } else if (act->kind == PN_ACTIVATION_BOUNDED_RELU) {
            lo = act->alpha;
            hi = act->beta;
        } else if (act->kind != PN_ACTIVATION_INVALID) {
            return i;
        }
        clamp = act->kind != PN_ACTIVATION_INVALID;
    }
    if (op == PN_BINARY_INVALID) sb = 0; /* b is not read */
    const vf vlo = KSUF(vset1)(lo), vhi = KSUF(vset1)(hi);
    const vf xs = KSUF(vset1)(sa ? 0.0f : a[0]);
    const vf zs = KSUF(vset1)(sb || op == PN_BINARY_INVALID ? 0.0f : b[0]);
    switch (op) {
    case PN_BINARY_INVALID: STREAM_FUSED_LOOP(x); break;
    case PN_BINARY_ADD: STREAM_FUSED_LOOP(KSUF(vadd)(x, z)); break;
    case PN_BINARY_SUB: STREAM_FUSED_LOOP(KSUF(vsub)(x, z)); break;
    case PN_BINARY_MUL: STREAM_FUSED_LOOP(KSUF(vmul)(x, z)); break;
    case PN_BINARY_DIV: STREAM_FUSED_LOOP(KSUF(vdiv)(x, z)); break;
    default: break;
    }
    return i;
}
#undef STREAM_FUSED_LOOP
#endif

/* act(a op b) (see rows_to) into y[0, n), stored non-temporally from y's first 64-byte
 * boundary on (y may equal a or b when its stride is 1): by stream_fused where it can,
 * else STREAM_BLOCK floats at a time through a buffer. */
static void KSUF(binary_row_stream)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                                    const pn_activation_desc* act, float* y, int64_t n) {
    float buf[STREAM_BLOCK] KALIGN64;
    int64_t i = KSUF(stream_head)(y, n);
    KSUF(rows_to)(op, a, sa, b, sb, act, y, 0, i);
#if defined(__AVX512F__) || defined(__AVX2__)
    i = KSUF(stream_fused)(op, a, sa, b, sb, act, y, i, n);
#endif
    for (; i < n; i += STREAM_BLOCK) {
        const int64_t m = n - i < STREAM_BLOCK ? n - i : STREAM_BLOCK;
        KSUF(rows_to)(op, a, sa, b, sb, act, buf, i, m);
        KSUF(stream_store)(y + i, buf, m);
    }
    KSUF(stream_fence)();
}

/* activation with y stored non-temporally (x == y allowed). */
static void KSUF(activation_stream)(const pn_activation_desc* act, const float* x, float* y, int64_t n) {
    KSUF(binary_row_stream)(PN_BINARY_INVALID, x, 1, NULL, 0, act, y, n);
}

/* Sum of x[0..n): four vector accumulators, combined in a fixed order, then the tail. */
static float KSUF(sum_row)(const float* x, int64_t n) {
    vf a0 = KSUF(vset1)(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 4 * VW <= n; i += 4 * VW) {
        a0 = KSUF(vadd)(a0, KSUF(vload)(x + i));
        a1 = KSUF(vadd)(a1, KSUF(vload)(x + i + VW));
        a2 = KSUF(vadd)(a2, KSUF(vload)(x + i + 2 * VW));
        a3 = KSUF(vadd)(a3, KSUF(vload)(x + i + 3 * VW));
    }
    for (; i + VW <= n; i += VW) {
        a0 = KSUF(vadd)(a0, KSUF(vload)(x + i));
    }
    if (i < n) {
        a1 = KSUF(vadd)(a1, KSUF(vload_n)(x + i, n - i));
    }
    return KSUF(vsum)(KSUF(vadd)(KSUF(vadd)(a0, a1), KSUF(vadd)(a2, a3)));
}

/* ---- Sub-plane buffer: the padded input split by stride remainders ----------------------
 * A window op with strides (sh, sw) reads padded input (oy * sh + ky * dh, ox * sw + kx * dw).
 * The padded rows and columns are split by their remainders modulo sh and sw into sh * sw
 * sub-planes of pitch P: sub-plane (a, b) element (i, j) = padded (i * sh + a, j * sw + b)
 * (the padding value outside the input). Tap (ky, kx) then reads sub-plane
 * (ky * dh % sh, kx * dw % sw) at flat offset (ky * dh / sh) * P + kx * dw / sw from flat
 * position oy * P + ox, so a block of output rows is one unit-stride 1-D window op over flat
 * positions, computed in whole vectors without any per-row work (the P - ow extra columns of
 * each row are computed and dropped). The block's results go to `out` (pitch P), and from
 * there to the output rows with the epilogue. P >= ow + (kw - 1) * dw / sw. */
typedef struct KSUF(subp) {
    const float* x;                  /* the input plane */
    int64_t ih, iw, pt, pl, sh, sw;
    int64_t pitch;                   /* P */
    int64_t extra_rows;              /* (kh - 1) * dh / sh: sub-plane rows past the block's */
    int64_t block;                   /* output rows per block */
    int64_t taps;
    int64_t tap_plane[ACCEL_TAPS_MAX]; /* per tap (ky, kx): sub-plane index */
    int64_t tap_off[ACCEL_TAPS_MAX];   /* per tap: flat offset inside its sub-plane */
    float pad;
    float* buf;                      /* ACCEL_ROWBUF_FLOATS floats, 64-byte aligned */
} KSUF(subp);

/* d[0..n) = v in whole vectors (may write up to VW - 1 floats past n). */
KINLINE void KSUF(vfill_over)(float* d, float v, int64_t n) {
    const vf pv = KSUF(vset1)(v);
    for (int64_t j = 0; j < n; j += VW) {
        KSUF(vstore)(d + j, pv);
    }
}

/* d[0..n) = s[0..n) in whole vectors, reading s[0..n) only (the last vector's lanes past n,
 * written past d + n, hold v). */
KINLINE void KSUF(vcopy_over)(float* d, const float* s, int64_t n, float v) {
    int64_t j = 0;
    for (; j + VW <= n; j += VW) {
        KSUF(vstore)(d + j, KSUF(vload)(s + j));
    }
    if (j < n) {
        KSUF(vstore)(d + j, KSUF(vload_n_or)(s + j, n - j, KSUF(vset1)(v)));
    }
}

/* Sub-plane rows of input row xr for every column remainder b: d + b * plane gets
 * padded[j * sw + b], j < P (whole-vector stores: may write up to VW - 1 floats past P). */
static void KSUF(subp_row)(const KSUF(subp)* sp, const float* xr, float* d, int64_t plane) {
    const int64_t sw = sp->sw, pitch = sp->pitch, iw = sp->iw, pl = sp->pl;
    if (sw == 2) { /* x[2k] -> remainder pl & 1 at k + pl / 2; x[2k + 1] -> the other at k + (pl + 1) / 2 */
        float* de = d + (pl & 1) * plane;
        float* dd = d + ((pl + 1) & 1) * plane;
        int64_t je = pl >> 1, jd = (pl + 1) >> 1;
        je = je > pitch ? pitch : je;
        jd = jd > pitch ? pitch : jd;
        int64_t ce = (iw + 1) / 2, cd = iw / 2;
        ce = ce > pitch - je ? pitch - je : ce;
        cd = cd > pitch - jd ? pitch - jd : cd;
        int64_t pairs = ce < cd ? ce : cd;
        KSUF(vfill_over)(de, sp->pad, je);
        KSUF(vfill_over)(dd, sp->pad, jd);
        KSUF(deint)(xr, pairs, de + je, dd + jd);
        for (int64_t k = pairs; k < ce; ++k) {
            de[je + k] = xr[2 * k];
        }
        for (int64_t k = pairs; k < cd; ++k) {
            dd[jd + k] = xr[2 * k + 1];
        }
        KSUF(vfill_over)(de + je + ce, sp->pad, pitch - je - ce);
        KSUF(vfill_over)(dd + jd + cd, sp->pad, pitch - jd - cd);
        return;
    }
    for (int64_t b = 0; b < sw; ++b) {
        float* db = d + b * plane;
        int64_t i0 = 0, j0 = pl, cnt = iw; /* first input column with this remainder, its place */
        if (sw > 1) {
            i0 = ((b - pl) % sw + sw) % sw;
            j0 = (i0 + pl) / sw;
            cnt = i0 < iw ? (iw - 1 - i0) / sw + 1 : 0;
        }
        j0 = j0 > pitch ? pitch : j0;
        cnt = cnt > pitch - j0 ? pitch - j0 : cnt;
        KSUF(vfill_over)(db, sp->pad, j0);
        if (sw == 1) {
            KSUF(vcopy_over)(db + j0, xr + i0, cnt, sp->pad);
        } else {
            for (int64_t k = 0; k < cnt; ++k) {
                db[j0 + k] = xr[i0 + k * sw];
            }
        }
        KSUF(vfill_over)(db + j0 + cnt, sp->pad, pitch - j0 - cnt);
    }
}

/* Output rows per block for a layer (0: the buffer cannot hold one row; use the direct
 * kernel), and its pitch. Layout of a block of R rows: sh * sw sub-planes of
 * (R + extra_rows + 1) * P + VW floats (a row and a vector of slack, read only for dropped
 * columns), then the results: R * P rounded up to VW, then VW of slack. */
static int64_t KSUF(subp_rows)(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                               int64_t dw, int64_t ow, int64_t* pitch) {
    const int64_t lim = ACCEL_ROWBUF_FLOATS;
    if (kh * kw > ACCEL_TAPS_MAX || sh > lim || sw > lim || ow > lim || (kw - 1) * dw > lim ||
        (kh - 1) * dh > lim || sh * sw > lim) {
        return 0;
    }
    const int64_t p = ow + (kw - 1) * dw / sw, planes = sh * sw;
    const int64_t fixed = planes * (((kh - 1) * dh / sh + 1) * p + VW) + 3 * VW;
    const int64_t per_row = planes * p + p;
    *pitch = p;
    return fixed + per_row <= lim ? (lim - fixed) / per_row : 0;
}

/* q = v / d, r = v % d for v >= 0, without a division for the common d of 1 and 2. */
KINLINE void KSUF(divmod)(int64_t v, int64_t d, int64_t* q, int64_t* r) {
    if (d == 1) {
        *q = v;
        *r = 0;
    } else if (d == 2) {
        *q = v >> 1;
        *r = v & 1;
    } else {
        *q = v / d;
        *r = v % d;
    }
}

/* Sets up the sub-plane buffer of a layer over input plane x (subp_rows gave block > 0). */
static void KSUF(subp_init)(KSUF(subp)* sp, const float* x, int64_t ih, int64_t iw, int64_t kh,
                            int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                            int64_t pt, int64_t pl, int64_t pitch, int64_t block, float pad,
                            float* buf) {
    sp->x = x;
    sp->ih = ih;
    sp->iw = iw;
    sp->pt = pt;
    sp->pl = pl;
    sp->sh = sh;
    sp->sw = sw;
    sp->pitch = pitch;
    sp->extra_rows = (kh - 1) * dh / sh;
    sp->block = block;
    sp->taps = kh * kw;
    sp->pad = pad;
    sp->buf = buf;
    for (int64_t ky = 0; ky < kh; ++ky) {
        for (int64_t kx = 0; kx < kw; ++kx) {
            int64_t t = ky * kw + kx, qy, ry, qx, rx;
            KSUF(divmod)(ky * dh, sh, &qy, &ry);
            KSUF(divmod)(kx * dw, sw, &qx, &rx);
            sp->tap_plane[t] = ry * sw + rx;
            sp->tap_off[t] = qy * pitch + qx;
        }
    }
}

/* Fills the sub-planes for output rows [oy0, oy0 + rows) and points src[t] at tap t's input
 * for flat position 0; returns the results area (rows * P, rounded up to VW). */
static float* KSUF(subp_fill)(const KSUF(subp)* sp, int64_t oy0, int64_t rows,
                              const float** src) {
    const int64_t pitch = sp->pitch, sub_rows = rows + sp->extra_rows;
    const int64_t plane = (sub_rows + 1) * pitch + VW;
    /* The slack row and vector first (their last store may reach into the next sub-plane's
     * first row, written below; the rows' stores may reach into the slack, still initialized). */
    for (int64_t q = 0; q < sp->sh * sp->sw; ++q) {
        KSUF(vfill_over)(sp->buf + q * plane + sub_rows * pitch, sp->pad, pitch + VW);
    }
    for (int64_t r = 0; r < sub_rows; ++r) { /* input rows in order */
        for (int64_t a = 0; a < sp->sh; ++a) {
            float* d = sp->buf + a * sp->sw * plane + r * pitch;
            int64_t iy = (oy0 + r) * sp->sh + a - sp->pt;
            if (iy >= 0 && iy < sp->ih) {
                KSUF(subp_row)(sp, sp->x + iy * sp->iw, d, plane);
            } else {
                for (int64_t b = 0; b < sp->sw; ++b) {
                    KSUF(vfill_over)(d + b * plane, sp->pad, pitch);
                }
            }
        }
    }
    for (int64_t t = 0; t < sp->taps; ++t) {
        src[t] = sp->buf + sp->tap_plane[t] * plane + sp->tap_off[t];
    }
    return sp->buf + sp->sh * sp->sw * plane + VW;
}

/* ---- Pooling ----------------------------------------------------------------- */

/* Taps [lo, hi) of a window starting at `start` that land inside [0, in). */
static inline void KSUF(tap_range)(int64_t start, int64_t k, int64_t d, int64_t in, int64_t* lo,
                                   int64_t* hi) {
    if (start >= 0 && start + (k - 1) * d < in) {
        *lo = 0;
        *hi = k;
        return;
    }
    int64_t t0 = start < 0 ? (-start + d - 1) / d : 0;
    int64_t t1 = in - start <= 0 ? 0 : (in - start + d - 1) / d;
    t1 = t1 > k ? k : t1;
    *lo = t0 > t1 ? t1 : t0;
    *hi = t1;
}

/* Taps inside the padded input (AVERAGE/INCLUDE divisor along one axis). */
static inline int64_t KSUF(padded_taps)(int64_t start, int64_t k, int64_t d, int64_t in,
                                        int64_t pad_end) {
    int64_t lim = in + pad_end - start;
    if (lim <= 0) {
        return 0;
    }
    int64_t t = (lim + d - 1) / d;
    return t > k ? k : t;
}

static inline float KSUF(lp_term)(float v, float p) {
    float a = fabsf(v);
    return p == 2.0f ? a * a : (p == 1.0f ? a : powf(a, p));
}

static inline float KSUF(lp_root)(float s, float p) {
    return p == 2.0f ? sqrtf(s) : (p == 1.0f ? s : powf(s, 1.0f / p));
}

/* MAX or AVERAGE over output columns [lo, hi) of one row whose windows lie inside the input
 * along x: the taps are the outer loops, the columns the vectorized inner one. */
static void KSUF(pool_nchw_interior)(const accel_pooling_params* pp, const float* x, float* yrow,
                                     int64_t ty0, int64_t ty1, int64_t sy, int64_t ph,
                                     int64_t lo, int64_t hi) {
    const int64_t iw = pp->iw, sw = pp->sw, kw = pp->kw, dw = pp->dw;
    const int max = pp->kind == PN_POOLING_MAX;
    const float init = max ? -INFINITY : 0.0f;
    for (int64_t ox = lo; ox < hi; ++ox) {
        yrow[ox] = init;
    }
    for (int64_t ty = ty0; ty < ty1; ++ty) {
        const float* row = x + (sy + ty * pp->dh) * iw - pp->pl;
        for (int64_t tx = 0; tx < kw; ++tx) {
            const float* src = row + tx * dw;
            if (max && sw == 1) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    float v = src[ox], o = yrow[ox];
                    yrow[ox] = (v > o || v != v) ? v : o;
                }
            } else if (max && sw == 2) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    float v = src[2 * ox], o = yrow[ox];
                    yrow[ox] = (v > o || v != v) ? v : o;
                }
            } else if (max) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    float v = src[ox * sw], o = yrow[ox];
                    yrow[ox] = (v > o || v != v) ? v : o;
                }
            } else if (sw == 1) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    yrow[ox] += src[ox];
                }
            } else {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    yrow[ox] += src[ox * sw];
                }
            }
        }
    }
    if (!max) {
        int64_t count = pp->include_padding ? ph * kw : (ty1 - ty0) * kw;
        const float r = 1.0f / (float)count;
        for (int64_t ox = lo; ox < hi; ++ox) {
            yrow[ox] *= r;
        }
    }
}

/* pool_nchw for every kind and geometry: each output column's window walked directly. */
static void KSUF(pool_nchw_direct)(const accel_pooling_params* pp, const float* x, float* y,
                                   int64_t oy0, int64_t oy1) {
    const int64_t iw = pp->iw, ow = pp->ow, dw = pp->dw, dh = pp->dh;
    /* Columns whose windows lie inside the input along x (all kw taps real). */
    int64_t lo = (pp->pl + pp->sw - 1) / pp->sw, hi = 0;
    int64_t last = iw - 1 - (pp->kw - 1) * dw + pp->pl; /* largest ox * sw allowed */
    if (last >= 0) {
        hi = last / pp->sw + 1;
    }
    hi = hi > ow ? ow : hi;
    if (pp->kind == PN_POOLING_LP || lo >= hi) {
        lo = hi = 0; /* no fast columns */
    }
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, dh, pp->ih, &ty0, &ty1);
        int64_t ph = KSUF(padded_taps)(sy, pp->kh, dh, pp->ih, pp->pb);
        float* yrow = y + oy * ow;
        if (lo < hi) {
            KSUF(pool_nchw_interior)(pp, x, yrow, ty0, ty1, sy, ph, lo, hi);
        }
        for (int64_t ox = 0; ox < ow; ++ox) {
            if (ox == lo && lo < hi) {
                ox = hi - 1; /* done above */
                continue;
            }
            int64_t sx = ox * pp->sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, pp->kw, dw, iw, &tx0, &tx1);
            if (pp->kind == PN_POOLING_MAX) {
                float m = -INFINITY;
                for (int64_t ty = ty0; ty < ty1; ++ty) {
                    const float* row = x + (sy + ty * dh) * iw + sx;
                    for (int64_t tx = tx0; tx < tx1; ++tx) {
                        float v = row[tx * dw];
                        m = (v > m || v != v) ? v : m;
                    }
                }
                yrow[ox] = m;
            } else if (pp->kind == PN_POOLING_AVERAGE) {
                float s = 0.0f;
                for (int64_t ty = ty0; ty < ty1; ++ty) {
                    const float* row = x + (sy + ty * dh) * iw + sx;
                    for (int64_t tx = tx0; tx < tx1; ++tx) {
                        s += row[tx * dw];
                    }
                }
                int64_t count = pp->include_padding
                                    ? ph * KSUF(padded_taps)(sx, pp->kw, dw, iw, pp->pr)
                                    : (ty1 - ty0) * (tx1 - tx0);
                yrow[ox] = s / (float)count;
            } else {
                float s = 0.0f;
                for (int64_t ty = ty0; ty < ty1; ++ty) {
                    const float* row = x + (sy + ty * dh) * iw + sx;
                    for (int64_t tx = tx0; tx < tx1; ++tx) {
                        s += KSUF(lp_term)(row[tx * dw], pp->p);
                    }
                }
                yrow[ox] = KSUF(lp_root)(s, pp->p);
            }
        }
    }
}

static void KSUF(pool_nhwc)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                            int64_t oy1) {
    const int64_t iw = pp->iw, ow = pp->ow, c = pp->c, dw = pp->dw, dh = pp->dh;
    const float p = pp->p;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, dh, pp->ih, &ty0, &ty1);
        int64_t ph = KSUF(padded_taps)(sy, pp->kh, dh, pp->ih, pp->pb);
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t sx = ox * pp->sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, pp->kw, dw, iw, &tx0, &tx1);
            float* out = y + (oy * ow + ox) * c;
            const float init = pp->kind == PN_POOLING_MAX ? -INFINITY : 0.0f;
            for (int64_t k = 0; k < c; ++k) {
                out[k] = init;
            }
            for (int64_t ty = ty0; ty < ty1; ++ty) {
                for (int64_t tx = tx0; tx < tx1; ++tx) {
                    const float* px = x + ((sy + ty * dh) * iw + sx + tx * dw) * c;
                    if (pp->kind == PN_POOLING_MAX) {
                        for (int64_t k = 0; k < c; ++k) {
                            float v = px[k], o = out[k];
                            out[k] = (v > o || v != v) ? v : o;
                        }
                    } else if (pp->kind == PN_POOLING_AVERAGE) {
                        for (int64_t k = 0; k < c; ++k) {
                            out[k] += px[k];
                        }
                    } else if (p == 2.0f) {
                        for (int64_t k = 0; k < c; ++k) {
                            out[k] += px[k] * px[k];
                        }
                    } else {
                        for (int64_t k = 0; k < c; ++k) {
                            out[k] += KSUF(lp_term)(px[k], p);
                        }
                    }
                }
            }
            if (pp->kind == PN_POOLING_AVERAGE) {
                int64_t count = pp->include_padding
                                    ? ph * KSUF(padded_taps)(sx, pp->kw, dw, iw, pp->pr)
                                    : (ty1 - ty0) * (tx1 - tx0);
                const float r = 1.0f / (float)count;
                for (int64_t k = 0; k < c; ++k) {
                    out[k] *= r;
                }
            } else if (pp->kind == PN_POOLING_LP) {
                for (int64_t k = 0; k < c; ++k) {
                    out[k] = KSUF(lp_root)(out[k], p);
                }
            }
        }
    }
}

/* MAX (NaN wins) or sum of `taps` unit-stride inputs over flat positions: out[p], p < n (whole
 * vectors: out and the inputs are readable/writable up to n rounded up to VW). */
static void KSUF(pool_flat)(int max, const float* const* src, int64_t taps, float* out,
                            int64_t n) {
    for (int64_t p = 0; p < n; p += VW) {
        vf acc;
        if (max) {
            vnan nan = KSUF(vnan_none)();
            acc = KSUF(vset1)(-INFINITY);
            int64_t t = 0;
            for (; t + 1 < taps; t += 2) { /* one NaN check per pair of taps */
                vf v0 = KSUF(vload)(src[t] + p), v1 = KSUF(vload)(src[t + 1] + p);
                acc = KSUF(vmax)(v1, KSUF(vmax)(v0, acc));
                nan = KSUF(vnan_or)(nan, v0, v1);
            }
            if (t < taps) {
                vf v = KSUF(vload)(src[t] + p);
                acc = KSUF(vmax)(v, acc);
                nan = KSUF(vnan_or)(nan, v, v);
            }
            acc = KSUF(vnan_apply)(nan, acc);
        } else {
            acc = KSUF(vset1)(0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                acc = KSUF(vadd)(acc, KSUF(vload)(src[t] + p));
            }
        }
        KSUF(vstore)(out + p, acc);
    }
}

/* y[0..n) = s[0..n) (times r[0..n) when r is not NULL); s and r readable up to n rounded up
 * to VW. */
static void KSUF(row_out)(const float* s, const float* r, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += VW) {
        vf v = KSUF(vload)(s + i);
        if (r != NULL) {
            v = KSUF(vmul)(v, KSUF(vload)(r + i));
        }
        if (n - i >= VW) {
            KSUF(vstore)(y + i, v);
        } else {
            KSUF(vstore_n)(y + i, v, n - i);
        }
    }
}

/* pool_nchw for MAX and AVERAGE through the sub-plane buffer: rows [oy0, oy1) in blocks.
 * AVERAGE divides by the window's count (padding excluded or included) as a multiply by a
 * per-column reciprocal row, rebuilt when the row count changes. */
static void KSUF(pool_nchw_sub)(const accel_pooling_params* pp, const float* x, float* y,
                                int64_t oy0, int64_t oy1, int64_t block, int64_t pitch) {
    const int64_t ow = pp->ow, kw = pp->kw, dw = pp->dw;
    const int max = pp->kind == PN_POOLING_MAX;
    float buf[ACCEL_ROWBUF_FLOATS] KALIGN64;
    float cols[ACCEL_ROWBUF_FLOATS / 2 + VW]; /* AVERAGE: window columns per ox, then 1/count */
    float* rcp = cols + (ow + VW - 1) / VW * VW;
    int64_t rcp_rows = -1;
    if (!max) {
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t sx = ox * pp->sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, kw, dw, pp->iw, &tx0, &tx1);
            cols[ox] = (float)(pp->include_padding ? KSUF(padded_taps)(sx, kw, dw, pp->iw, pp->pr)
                                                   : tx1 - tx0);
        }
    }
    KSUF(subp) sp;
    KSUF(subp_init)(&sp, x, pp->ih, pp->iw, pp->kh, kw, pp->sh, pp->sw, pp->dh, dw, pp->pt,
                    pp->pl, pitch, block, max ? -INFINITY : 0.0f, buf);
    const float* src[ACCEL_TAPS_MAX];
    for (int64_t b0 = oy0; b0 < oy1; b0 += block) {
        int64_t rows = oy1 - b0 < block ? oy1 - b0 : block;
        float* out = KSUF(subp_fill)(&sp, b0, rows, src);
        KSUF(pool_flat)(max, src, sp.taps, out, rows * pitch);
        for (int64_t r = 0; r < rows; ++r) {
            int64_t oy = b0 + r;
            if (!max) {
                int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
                KSUF(tap_range)(sy, pp->kh, pp->dh, pp->ih, &ty0, &ty1);
                int64_t n = pp->include_padding ? KSUF(padded_taps)(sy, pp->kh, pp->dh, pp->ih, pp->pb)
                                                : ty1 - ty0;
                if (n != rcp_rows) {
                    for (int64_t ox = 0; ox < ow; ++ox) {
                        rcp[ox] = 1.0f / ((float)n * cols[ox]);
                    }
                    for (int64_t ox = ow; ox < (ow + VW - 1) / VW * VW; ++ox) {
                        rcp[ox] = 0.0f;
                    }
                    rcp_rows = n;
                }
            }
            KSUF(row_out)(out + r * pitch, max ? NULL : rcp, y + oy * ow, ow);
        }
    }
}

/* pool_nchw for MAX and AVERAGE with dilation 1 and stride 1 or 2 along x, by two passes
 * per output row: the kh input rows reduced into one padded row t (vectors along x; padding
 * is -inf / 0), then the kw taps of each output column reduced from t (stride 2: from t's
 * even and odd halves, so every load is unit-stride). Each input row is read from memory once
 * and from cache kh / sh times. Needs the padded row and the output row (twice) to fit in
 * a third of ACCEL_ROWBUF_FLOATS each. */
/* How far ahead the NCHW pooling kernels prefetch input rows: output rows (two-pass kernel),
 * bytes of input (3-wide stride-2 kernel, at least one output row). */
#define POOL_PREFETCH_ROWS 2
#define POOL_PREFETCH_BYTES 8192

/* Input rows [*pf0, *pf1) that output row oy + ahead reads and output row oy + ahead - 1 does
 * not (clipped to the image), for the pooling window of output row oy starting at input row
 * sy: fetched `ahead` rows early, since wide rows start on new pages, where the hardware
 * prefetchers stop. */
static inline void KSUF(prefetch_rows)(const accel_pooling_params* pp, int64_t sy, int64_t ahead, int64_t* pf0,
                                       int64_t* pf1) {
    const int64_t next = sy + ahead * pp->sh; /* first input row of output row oy + ahead */
    const int64_t first = next + pp->kh - pp->sh > sy + pp->kh ? next + pp->kh - pp->sh : sy + pp->kh;
    *pf0 = first > 0 ? first : 0;
    *pf1 = next + pp->kh < pp->ih ? next + pp->kh : pp->ih;
}
static void KSUF(pool_nchw_rows)(const accel_pooling_params* pp, const float* x, float* y,
                                 int64_t oy0, int64_t oy1) {
    const int max = pp->kind == PN_POOLING_MAX;
    const int64_t iw = pp->iw, ow = pp->ow, kw = pp->kw, sw = pp->sw;
    const float fill = max ? -INFINITY : 0.0f;
    float buf[ACCEL_ROWBUF_FLOATS] KALIGN64;
    const int64_t third = ACCEL_ROWBUF_FLOATS / 3 / VW * VW;
    /* padded row: t[j] is input column j - pl; t + pl (column 0) is vector-aligned, so the
     * vertical pass stores whole aligned vectors */
    float* t = buf + (VW - pp->pl % VW) % VW;
    float* te = buf + third;        /* stride 2: t[2k] */
    float* to = buf + 2 * third;    /* stride 2: t[2k + 1] */
    const int64_t tw = (ow - 1) * sw + kw; /* padded columns the windows read */
    for (int64_t j = 0; j < tw + VW; ++j) t[j] = fill;
    if (sw == 2) { /* the lanes past the last output column read here too (their results are dropped) */
        for (int64_t j = 0; j < (tw + 1) / 2 + 2 * VW; ++j) te[j] = to[j] = fill;
    }
    float* rcp_cols = to + third / 2; /* AVERAGE: 1 / (window columns) per output column */
    if (!max) {
        for (int64_t ox = 0; ox < ow + VW; ++ox) {
            int64_t sx = ox * sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, kw, 1, iw, &tx0, &tx1);
            int64_t cols_n = pp->include_padding ? KSUF(padded_taps)(sx, kw, 1, iw, pp->pr) : tx1 - tx0;
            rcp_cols[ox] = ox < ow ? 1.0f / (float)cols_n : 0.0f;
        }
    }
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, 1, pp->ih, &ty0, &ty1);
        float* tr = t + pp->pl; /* input column 0; columns past iw stay at fill */
        int64_t cols = iw < tw - pp->pl ? iw : tw - pp->pl;
        int64_t pf0, pf1;
        KSUF(prefetch_rows)(pp, sy, POOL_PREFETCH_ROWS, &pf0, &pf1);
        int64_t i = 0;
        if (ty1 - ty0 == 3) { /* whole vectors of three rows (3x3 windows inside the image) */
            const float* r0 = x + (sy + ty0) * iw;
            for (; i + VW <= cols; i += VW) {
                for (int64_t r = pf0; r < pf1; ++r) __builtin_prefetch(x + r * iw + i, 0, 3);
                vf a = KSUF(vload)(r0 + i), b = KSUF(vload)(r0 + iw + i), c = KSUF(vload)(r0 + 2 * iw + i);
                vf acc;
                if (max) {
                    vnan nan = KSUF(vnan_or)(KSUF(vnan_none)(), a, b);
                    nan = KSUF(vnan_or)(nan, c, c);
                    acc = KSUF(vnan_apply)(nan, KSUF(vmax)(c, KSUF(vmax)(b, a)));
                } else {
                    acc = KSUF(vadd)(KSUF(vadd)(a, b), c);
                }
                KSUF(vstore)(tr + i, acc);
            }
        }
        for (; i < cols; i += VW) {
            int64_t n = cols - i < VW ? cols - i : VW;
            vf acc = KSUF(vset1)(fill);
            vnan nan = KSUF(vnan_none)();
            for (int64_t r = pf0; r < pf1; ++r) __builtin_prefetch(x + r * iw + i, 0, 3);
            for (int64_t ty = ty0; ty < ty1; ++ty) {
                vf v = KSUF(vload_n_or)(x + (sy + ty) * iw + i, n, KSUF(vset1)(fill));
                if (max) {
                    nan = KSUF(vnan_or)(nan, v, v);
                    acc = KSUF(vmax)(v, acc);
                } else {
                    acc = KSUF(vadd)(acc, v);
                }
            }
            if (max) acc = KSUF(vnan_apply)(nan, acc);
            KSUF(vstore_n)(tr + i, acc, n);
        }
        const float* src = t;
        const float* odd = t;
        if (sw == 2) {
            KSUF(deint)(t, (tw + 1) / 2, te, to);
            src = te;
            odd = to;
        }
        float ry = 1.0f;
        int64_t rows_n = 0;
        if (!max) {
            rows_n = pp->include_padding ? KSUF(padded_taps)(sy, pp->kh, 1, pp->ih, pp->pb) : ty1 - ty0;
            ry = (float)rows_n;
        }
        for (int64_t ox = 0; ox < ow; ox += VW) {
            int64_t n = ow - ox < VW ? ow - ox : VW;
            vf acc = KSUF(vset1)(fill);
            vnan nan = KSUF(vnan_none)();
            for (int64_t kx = 0; kx < kw; ++kx) {
                /* column ox * sw + kx of t */
                const float* p = sw == 2 ? ((kx & 1) ? odd : src) + ox + kx / 2 : src + ox + kx;
                vf v = KSUF(vload)(p);
                if (max) {
                    nan = KSUF(vnan_or)(nan, v, v);
                    acc = KSUF(vmax)(v, acc);
                } else {
                    acc = KSUF(vadd)(acc, v);
                }
            }
            if (max) {
                acc = KSUF(vnan_apply)(nan, acc);
            } else {
                acc = KSUF(vmul)(KSUF(vmul)(acc, KSUF(vload)(rcp_cols + ox)), KSUF(vset1)(1.0f / ry));
            }
            KSUF(vstore_n)(y + oy * ow + ox, acc, n);
        }
    }
}

#if defined(__AVX512F__) && defined(__FMA__)
/* max(a, b) where a NaN in either wins (maxps alone returns b when either is NaN; VRANGEPS
 * returns the number when one operand is a quiet NaN, so it cannot replace this). */
static inline __m512 KSUF(nanmax512)(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}

/* One window row of pool_nchw_w3s2 into the running max or sums of its three column vectors.
 * Max with nanprop: NaN wins; without: plain max, and *nan collects the lanes of a NaN input
 * (the caller redoes the block with nanprop when any is set; NaNs are rare). */
static inline __attribute__((always_inline)) void KSUF(w3_row)(int max, int nanprop, __m512 a, __m512 b, __m512 c,
                                                               __m512* v0, __m512* v1, __m512* v2,
                                                               __mmask16* nan) {
    if (max && nanprop) {
        *v0 = KSUF(nanmax512)(a, *v0);
        *v1 = KSUF(nanmax512)(b, *v1);
        *v2 = KSUF(nanmax512)(c, *v2);
    } else if (max) {
        *v0 = _mm512_max_ps(a, *v0);
        *v1 = _mm512_max_ps(b, *v1);
        *v2 = _mm512_max_ps(c, *v2);
        *nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
    } else {
        *v0 = _mm512_add_ps(*v0, a);
        *v1 = _mm512_add_ps(*v1, b);
        *v2 = _mm512_add_ps(*v2, c);
    }
}

/* The window rows [0, nrows) of one block of pool_nchw_w3s2 (input columns base..base+32 of
 * rows, row pitch iw) reduced into v0, v1, v2 (see w3_row); `inside`: all 33 columns lie in
 * the row, else lanes outside masks m0, m1, m2 are never read and count as fill. Returns the
 * lanes that met a NaN (max without nanprop). */
static inline __attribute__((always_inline)) __mmask16 KSUF(w3_pass)(
    int max, int nanprop, const float* rows, int64_t nrows, int64_t iw, int64_t base, int inside, __mmask16 m0,
    __mmask16 m1, __mmask16 m2, __m512 fill, __m512* v0, __m512* v1, __m512* v2) {
    __mmask16 nan = 0;
    *v0 = *v1 = *v2 = fill;
    for (int64_t r = 0; r < nrows; ++r) {
        if (inside) {
            const float* p = rows + r * iw + base;
            KSUF(w3_row)(max, nanprop, _mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_set1_ps(p[32]), v0, v1,
                         v2, &nan);
        } else {
            const uintptr_t p = (uintptr_t)(rows + r * iw) + (uintptr_t)(base * (int64_t)sizeof(float));
            KSUF(w3_row)(max, nanprop, _mm512_mask_loadu_ps(fill, m0, (const void*)p),
                         _mm512_mask_loadu_ps(fill, m1, (const void*)(p + 16 * sizeof(float))),
                         _mm512_mask_loadu_ps(fill, m2, (const void*)(p + 32 * sizeof(float))), v0, v1, v2, &nan);
        }
    }
    return nan;
}

/* w3_pass over one block; when a max block met a NaN, done again with NaN-propagating max.
 * Returns the lanes that met a NaN. */
static inline __attribute__((always_inline)) __mmask16 KSUF(w3_rows)(
    int max, const float* rows, int64_t nrows, int64_t iw, int64_t base, int inside, __mmask16 m0, __mmask16 m1,
    __mmask16 m2, __m512 fill, __m512* v0, __m512* v1, __m512* v2) {
    const __mmask16 nan = KSUF(w3_pass)(max, 0, rows, nrows, iw, base, inside, m0, m1, m2, fill, v0, v1, v2);
    if (nan) {
        KSUF(w3_pass)(max, 1, rows, nrows, iw, base, inside, m0, m1, m2, fill, v0, v1, v2);
    }
    return nan;
}

/* A non-temporal writer: a contiguous run of floats from y on (any alignment), given in
 * order as vectors of up to 16, gathered into whole 64-byte lines by one permute and a
 * masked move each and streamed line by line; only the run's partial first and last lines
 * take ordinary (masked) stores. (Ordinary stores of the partial lines between streamed
 * ones, as in storing each row of 3x3 stride-2 max pooling of 64x512x512 by itself into an
 * output 16 bytes past a 64-byte boundary, as NumPy places large arrays, ran it 1.3-1.5x
 * slower on Zen 4, one thread, than the same rows written as one run.) */
typedef struct KSUF(ntw) {
    float* line;    /* the 64-byte aligned line being gathered */
    __m512 pending; /* its lanes [first, fill) gathered so far */
    int first;      /* the run's first lane in this line (0 after the first line) */
    int fill;
} KSUF(ntw);

static inline __mmask16 KSUF(lanes_below)(int64_t k) {
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1u);
}

static inline void KSUF(ntw_begin)(KSUF(ntw)* w, float* y) {
    w->line = (float*)((uintptr_t)y & ~(uintptr_t)63);
    w->first = w->fill = (int)(((uintptr_t)y & 63u) / sizeof(float));
    w->pending = _mm512_setzero_ps();
}

/* Lanes [0, count) of v (count <= 16) are the run's next floats. */
static inline void KSUF(ntw_put)(KSUF(ntw)* w, __m512 v, int count) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    /* lane l of s: v[(l - fill) mod 16] (lanes below fill hold what spills into the next line) */
    const __m512 s = _mm512_permutexvar_ps(
        _mm512_and_si512(_mm512_sub_epi32(iota, _mm512_set1_epi32(w->fill)), _mm512_set1_epi32(15)), v);
    const int end = w->fill + count;
    w->pending = _mm512_mask_mov_ps(w->pending, (__mmask16)(KSUF(lanes_below)(end) & ~KSUF(lanes_below)(w->fill)), s);
    if (end < 16) {
        w->fill = end;
        return;
    }
    if (w->first == 0) {
        _mm512_stream_ps(w->line, w->pending);
    } else {
        _mm512_mask_storeu_ps(w->line, (__mmask16)~KSUF(lanes_below)(w->first), w->pending);
        w->first = 0;
    }
    w->line += 16;
    w->pending = s;
    w->fill = end - 16;
}

/* Stores the run's last partial line (the caller fences the streamed ones). */
static inline void KSUF(ntw_end)(KSUF(ntw)* w) {
    if (w->fill > w->first) {
        _mm512_mask_storeu_ps(w->line, (__mmask16)(KSUF(lanes_below)(w->fill) & ~KSUF(lanes_below)(w->first)),
                              w->pending);
    }
}

/* pool_nchw for MAX and AVERAGE with a 3-column window at column stride 2 (3x3 stride-2
 * pooling, the common case) and row dilation 1, in registers: per 16 output columns, the
 * window rows' 33 input columns are reduced down the rows into three vectors (columns
 * base..base+15, base+16..base+31, base+32), split into even and odd columns by two
 * permutes, and each output is max or sum of (even, odd, next even). Columns outside the
 * image load as the fill value (masked loads); input rows a few output rows ahead are
 * prefetched (a plane's wide rows start on new pages, where hardware prefetchers stop);
 * with pp->stream_out, the rows [oy0, oy1) (contiguous) are stored as one non-temporal
 * run (ntw). */
static void KSUF(pool_nchw_w3s2)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                                 int64_t oy1) {
    const int max = pp->kind == PN_POOLING_MAX;
    const int64_t iw = pp->iw, ow = pp->ow, pl = pp->pl;
    const __m512 fill = _mm512_set1_ps(max ? -INFINITY : 0.0f);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    /* AVERAGE: columns counted per window (inside the image, or inside the padded input) */
    const int64_t cnt_lo = pp->include_padding ? -pl : 0, cnt_hi = pp->include_padding ? iw + pp->pr : iw;
    int64_t pf_rows = POOL_PREFETCH_BYTES / (pp->sh * iw * (int64_t)sizeof(float));
    pf_rows = pf_rows < 1 ? 1 : pf_rows;
    const int stream = pp->stream_out;
    KSUF(ntw) nt;
    KSUF(ntw_begin)(&nt, y + oy0 * ow);
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, 1, pp->ih, &ty0, &ty1);
        const int64_t nrows = ty1 - ty0;
        const float* rows = x + (sy + ty0) * iw;
        float rows_n = 1.0f;
        if (!max) {
            rows_n = (float)(pp->include_padding ? KSUF(padded_taps)(sy, pp->kh, 1, pp->ih, pp->pb) : nrows);
        }
        const __m512 inv_inner = _mm512_set1_ps(1.0f / (3.0f * rows_n)); /* AVERAGE, 3 columns counted */
        float* const yrow = y + oy * ow;
        /* the input rows output row oy + pf_rows adds, prefetched into L1 in address order, an
         * equal share per block of 16 output columns (in address order the DRAM pages and the
         * hardware prefetchers serve them far faster than column by column across rows; into
         * L1 rather than L2: 64x512x512 max pooling from memory 3.2-5.0 against 3.4-5.1 ms,
         * five runs alternated in one process, no change at 64x112x112 in cache) */
        int64_t pf0, pf1;
        KSUF(prefetch_rows)(pp, sy, pf_rows, &pf0, &pf1);
        const float* pf = x + pf0 * iw;
        const double pf_per_col = pf1 > pf0 ? (double)((pf1 - pf0) * iw) / (double)ow : 0.0;
        for (int64_t ox0 = 0; ox0 < ow; ox0 += 16) {
            const int64_t base = 2 * ox0 - pl;
            const int64_t pf_end = (int64_t)(pf_per_col * (double)(ox0 + 16 < ow ? ox0 + 16 : ow));
            for (int64_t c = (int64_t)(pf_per_col * (double)ox0) & ~(int64_t)15; c < pf_end; c += 16) {
                __builtin_prefetch(pf + c, 0, 3);
            }
            __m512 v0, v1, v2;
            __mmask16 nan = 0;
            if (base >= 0 && base + 33 <= iw) {
                nan = KSUF(w3_rows)(max, rows, nrows, iw, base, 1, 0, 0, 0, fill, &v0, &v1, &v2);
            } else {
                const __mmask16 m0 = KSUF(vlanes_in)(base, 0, iw), m1 = KSUF(vlanes_in)(base + 16, 0, iw);
                const __mmask16 m2 = KSUF(vlanes_in)(base + 32, 0, iw) & 1;
                nan = KSUF(w3_rows)(max, rows, nrows, iw, base, 0, m0, m1, m2, fill, &v0, &v1, &v2);
            }
            const __m512 e = _mm512_permutex2var_ps(v0, even, v1);
            const __m512 o = _mm512_permutex2var_ps(v0, odd, v1);
            const __m512 e2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v2), _mm512_castps_si512(e), 1));
            __m512 out;
            if (max) {
                out = nan ? KSUF(nanmax512)(e2, KSUF(nanmax512)(o, e)) : _mm512_max_ps(e2, _mm512_max_ps(o, e));
            } else {
                __m512 cnt = _mm512_set1_ps(3.0f);
                const int interior = base >= cnt_lo && base + 33 <= cnt_hi;
                if (!interior) { /* windows reaching past the counted columns */
                    const __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32((int32_t)base), even); /* 2k */
                    cnt = _mm512_setzero_ps();
                    for (int j = 0; j < 3; ++j) {
                        const __m512i cj = _mm512_add_epi32(c0, _mm512_set1_epi32(j));
                        __mmask16 in = _mm512_cmpge_epi32_mask(cj, _mm512_set1_epi32((int32_t)cnt_lo)) &
                                       _mm512_cmplt_epi32_mask(cj, _mm512_set1_epi32((int32_t)cnt_hi));
                        cnt = _mm512_mask_add_ps(cnt, in, cnt, _mm512_set1_ps(1.0f));
                    }
                }
                const __m512 sum = _mm512_add_ps(_mm512_add_ps(e, o), e2);
                out = interior ? _mm512_mul_ps(sum, inv_inner)
                               : _mm512_div_ps(sum, _mm512_mul_ps(cnt, _mm512_set1_ps(rows_n)));
            }
            if (stream) {
                KSUF(ntw_put)(&nt, out, ow - ox0 < 16 ? (int)(ow - ox0) : 16);
            } else {
                float* const dst = yrow + ox0;
                if (ow - ox0 >= 16) {
                    _mm512_storeu_ps(dst, out);
                } else {
                    _mm512_mask_storeu_ps(dst, (__mmask16)((1u << (ow - ox0)) - 1), out);
                }
            }
        }
    }
    if (stream) {
        KSUF(ntw_end)(&nt);
        _mm_sfence(); /* the non-temporal stores reach memory before the pool's barrier */
    }
}
#endif

static void KSUF(pool_nchw)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                            int64_t oy1) {
#if defined(__AVX512F__) && defined(__FMA__)
    if ((pp->kind == PN_POOLING_MAX || pp->kind == PN_POOLING_AVERAGE) && pp->kw == 3 && pp->sw == 2 &&
        pp->dw == 1 && pp->dh == 1 && pp->iw < ((int64_t)1 << 30)) {
        KSUF(pool_nchw_w3s2)(pp, x, y, oy0, oy1);
        return;
    }
#endif
    if (pp->kind != PN_POOLING_LP && pp->dh == 1 && pp->dw == 1 && (pp->sw == 1 || pp->sw == 2) &&
        pp->iw + pp->pl + pp->pr + pp->kw + 2 * VW <= ACCEL_ROWBUF_FLOATS / 3 / VW * VW &&
        (pp->ow - 1) * pp->sw + pp->kw + 2 * VW <= ACCEL_ROWBUF_FLOATS / 3 / VW * VW &&
        pp->ow + VW <= ACCEL_ROWBUF_FLOATS / 6 / VW * VW - 2 * VW) {
        KSUF(pool_nchw_rows)(pp, x, y, oy0, oy1);
        return;
    }
    int64_t pitch = 0;
    int64_t block = KSUF(subp_rows)(pp->kh, pp->kw, pp->sh, pp->sw, pp->dh, pp->dw, pp->ow, &pitch);
    if (pp->kind != PN_POOLING_LP && block > 0 && 2 * pp->ow + 2 * VW <= ACCEL_ROWBUF_FLOATS / 2) {
        KSUF(pool_nchw_sub)(pp, x, y, oy0, oy1, block, pitch);
    } else {
        KSUF(pool_nchw_direct)(pp, x, y, oy0, oy1);
    }
}

/* ---- Depthwise convolution ------------------------------------------------------------ */

/* The fused activation done in registers: kinds RELU and BOUNDED_RELU become a clamp to
 * [lo, hi] (NaN stays NaN); others are applied to the finished row afterwards. */
typedef struct KSUF(clamp) {
    int on;
    float lo, hi;
} KSUF(clamp);

static KSUF(clamp) KSUF(clamp_of)(const pn_activation_desc* act) {
    KSUF(clamp) c = {0, -INFINITY, INFINITY};
    if (act != NULL && act->kind == PN_ACTIVATION_RELU) {
        c.on = 1;
        c.lo = 0.0f;
    } else if (act != NULL && act->kind == PN_ACTIVATION_BOUNDED_RELU) {
        c.on = 1;
        c.lo = act->alpha;
        c.hi = act->beta;
    }
    return c;
}

/* The activation left for after the row (NULL when none or done by the clamp). */
static const pn_activation_desc* KSUF(act_after)(const pn_activation_desc* act) {
    return act == NULL || act->kind == PN_ACTIVATION_INVALID || act->kind == PN_ACTIVATION_RELU ||
                   act->kind == PN_ACTIVATION_BOUNDED_RELU
               ? NULL
               : act;
}

/* max(lo, min(hi, v)) keeping NaN (x86 max/min return their second operand on NaN). */
KINLINE vf KSUF(vclamp)(KSUF(clamp) c, vf v) {
    v = KSUF(vmax)(KSUF(vset1)(c.lo), v);
    return KSUF(vmin)(KSUF(vset1)(c.hi), v);
}

/* Finishes `acc` for columns [ox, ox + VW) of a depthwise row: + add, clamp, store (the
 * first n - ox lanes only when fewer than VW are left). */
KINLINE void KSUF(dw_finish)(vf acc, const float* add, KSUF(clamp) c, float* y, int64_t ox,
                             int64_t n) {
    int64_t rem = n - ox;
    if (add != NULL) {
        acc = KSUF(vadd)(acc, rem >= VW ? KSUF(vload)(add + ox) : KSUF(vload_n)(add + ox, rem));
    }
    if (c.on) {
        acc = KSUF(vclamp)(c, acc);
    }
    if (rem >= VW) {
        KSUF(vstore)(y + ox, acc);
    } else {
        KSUF(vstore_n)(y + ox, acc, rem);
    }
}

/* out[p] = bias + sum_t w[t] * src[t][p] for flat positions p < n, in whole vectors (two per
 * step: two independent FMA chains); w holds the weights already broadcast (in registers
 * when inlined with the constant taps of the 3x3 case). */
KINLINE void KSUF(dw_flat_body)(const float* const* src, const vf* w, int64_t taps, float bias,
                                float* out, int64_t n) {
    const vf b = KSUF(vset1)(bias);
    int64_t p = 0;
    for (; p + VW < n; p += 2 * VW) {
        vf a0 = b, a1 = b;
        for (int64_t t = 0; t < taps; ++t) {
            a0 = KSUF(vfma)(w[t], KSUF(vload)(src[t] + p), a0);
            a1 = KSUF(vfma)(w[t], KSUF(vload)(src[t] + p + VW), a1);
        }
        KSUF(vstore)(out + p, a0);
        KSUF(vstore)(out + p + VW, a1);
    }
    if (p < n) {
        vf a0 = b;
        for (int64_t t = 0; t < taps; ++t) {
            a0 = KSUF(vfma)(w[t], KSUF(vload)(src[t] + p), a0);
        }
        KSUF(vstore)(out + p, a0);
    }
}

static void KSUF(dw_flat)(const float* const* src, const float* wt, int64_t taps, float bias,
                          float* out, int64_t n) {
    vf w[ACCEL_TAPS_MAX];
    for (int64_t t = 0; t < taps; ++t) {
        w[t] = KSUF(vset1)(wt[t]);
    }
    if (taps == 9) {
        KSUF(dw_flat_body)(src, w, 9, bias, out, n);
    } else {
        KSUF(dw_flat_body)(src, w, taps, bias, out, n);
    }
}

/* Depthwise NCHW without the sub-plane buffer (layers too large for it): per tap, a strided
 * multiply-add over the output columns whose input column is inside the row. */
static void KSUF(dw_nchw_direct)(const accel_dw_params* dp, const float* x, const float* w,
                                 float bias, const float* addend, float* y, int64_t oy0,
                                 int64_t oy1) {
    const int64_t ow = dp->ow, sw = dp->sw;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        float* yr = y + oy * ow;
        for (int64_t ox = 0; ox < ow; ++ox) {
            yr[ox] = bias;
        }
        for (int64_t ky = 0; ky < dp->kh; ++ky) {
            int64_t iy = oy * dp->sh - dp->pt + ky * dp->dh;
            if (iy < 0 || iy >= dp->ih) {
                continue;
            }
            for (int64_t kx = 0; kx < dp->kw; ++kx) {
                int64_t off = kx * dp->dw - dp->pl; /* ix = ox * sw + off */
                int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                int64_t hi = dp->iw - 1 - off >= 0 ? (dp->iw - 1 - off) / sw + 1 : 0;
                hi = hi > ow ? ow : hi;
                const float* xr = x + iy * dp->iw;
                const float wv = w[ky * dp->kw + kx];
                for (int64_t ox = lo; ox < hi; ++ox) {
                    yr[ox] += wv * xr[ox * sw + off];
                }
            }
        }
        if (addend != NULL) {
            const float* ar = addend + oy * ow;
            for (int64_t ox = 0; ox < ow; ++ox) {
                yr[ox] += ar[ox];
            }
        }
        if (dp->act != NULL) {
            KSUF(activation)(dp->act, yr, yr, ow);
        }
    }
}

#if defined(__AVX512F__)
/* Lanes kx.. of lo followed by lanes of hi (valignd): tap kx of a vector from its tap-0 vector
 * and the next one. */
KINLINE vf KSUF(dw3_shift)(vf lo, vf hi, const int kx) {
    const __m512i l = _mm512_castps_si512(lo), h = _mm512_castps_si512(hi);
    return _mm512_castsi512_ps(kx == 1 ? _mm512_alignr_epi32(h, l, 1) : _mm512_alignr_epi32(h, l, 2));
}
#define DW3_MASKS 1 /* masks per vector: tap 0's (the others are shifted out of it) */
#else
#define DW3_MASKS 3 /* masks per vector: one per tap kx */
#endif

/* Q vectors of a 3x3 depthwise output row from input rows r0, r1, r2 (a zero row for padding
 * rows), vector q at column ox + q * VW: bias, then the nine taps in (ky, kx) order (columns
 * outside the input row read as zeros), Q independent FMA chains (a chain of nine FMAs is
 * latency-bound alone). m: DW3_MASKS lane masks per vector from vector 0 of the call, for the
 * AVX-512 build one more. AVX-512 loads each row's tap-0 vectors a[q] (plus a[Q]) once and
 * shifts tap kx of vector q out of a[q] and a[q + 1]: 3 (Q + 1) loads and 6 Q shuffles per Q
 * vectors instead of 9 Q unaligned masked loads (the row was load-bound: 144 x 56 x 56, one Zen
 * 5 core, 172-176 -> 108-111 us; onnxruntime 133-153). The other builds load each tap, lanes
 * m[3 * q + kx]. Either way the same products in the same order: the same bits. */
KINLINE void KSUF(dw3_vectors)(const float* r0, const float* r1, const float* r2, const vf* wv, vf b,
                               const vlanes* m, int64_t ox, const float* ar, KSUF(clamp) c, float* yr,
                               int64_t ow, const int Q) {
    vf acc[4];
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) acc[q] = b;
    const float* rows[3] = {r0, r1, r2};
#pragma GCC unroll 3
    for (int ky = 0; ky < 3; ++ky) {
#if defined(__AVX512F__)
        vf a[5];
#pragma GCC unroll 5
        for (int q = 0; q <= Q; ++q) a[q] = KSUF(vload_lanes)(rows[ky] + ox + q * VW, m[q]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = KSUF(vfma)(wv[ky * 3], a[q], acc[q]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = KSUF(vfma)(wv[ky * 3 + 1], KSUF(dw3_shift)(a[q], a[q + 1], 1), acc[q]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = KSUF(vfma)(wv[ky * 3 + 2], KSUF(dw3_shift)(a[q], a[q + 1], 2), acc[q]);
#else
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; ++kx) {
            const vf wt = wv[ky * 3 + kx];
#pragma GCC unroll 4
            for (int q = 0; q < Q; ++q) {
                acc[q] = KSUF(vfma)(wt, KSUF(vload_lanes)(rows[ky] + ox + q * VW + kx, m[3 * q + kx]), acc[q]);
            }
        }
#endif
    }
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) KSUF(dw_finish)(acc[q], ar, c, yr, ox + q * VW, ow);
}

#define DW3_MAX_VECTORS 32 /* output rows up to 32 vectors; wider ones take the sub-plane kernel */

/* Depthwise NCHW 3x3 at column stride 1 and dilation 1 (rows: any stride and dilation): per
 * output row, straight from the input rows, nothing copied, four vectors at a time. The sum
 * runs in the sub-plane kernel's order (bias, then the taps in (ky, kx) order, padding taps
 * adding 0 * w): both give the same bits. */
static void KSUF(dw3_nchw)(const accel_dw_params* dp, const float* x, const float* w, float bias,
                           const float* addend, float* y, int64_t oy0, int64_t oy1) {
    const int64_t ow = dp->ow, iw = dp->iw, pl = dp->pl;
    const int64_t nv = (ow + VW - 1) / VW;
    const KSUF(clamp) c = KSUF(clamp_of)(dp->act);
    const pn_activation_desc* after = KSUF(act_after)(dp->act);
    const vf b = KSUF(vset1)(bias);
    vf wv[9];
    for (int t = 0; t < 9; ++t) wv[t] = KSUF(vset1)(w[t]);
    vlanes m[DW3_MASKS * (DW3_MAX_VECTORS + 1)];
    for (int64_t v = 0; v <= nv; ++v) { /* lane j of tap kx reads column v * VW + j + kx - pl */
        for (int64_t kx = 0; kx < DW3_MASKS; ++kx) m[DW3_MASKS * v + kx] = KSUF(vlanes_in)(v * VW + kx - pl, 0, iw);
    }
    float zero_row[DW3_MAX_VECTORS * VW + 2 * VW] KALIGN64;
    for (int64_t j = 0; j < nv * VW + 2 * VW; ++j) zero_row[j] = 0.0f;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        float* yr = y + oy * ow;
        const float* ar = addend != NULL ? addend + oy * ow : NULL;
        const float* r[3];
        for (int64_t ky = 0; ky < 3; ++ky) { /* r[ky] + column + pl: that column of the row */
            int64_t iy = oy * dp->sh - dp->pt + ky * dp->dh;
            r[ky] = iy >= 0 && iy < dp->ih ? x + iy * iw - pl : zero_row;
        }
        int64_t v = 0;
        const vlanes* mv = m;
        for (; v + 4 <= nv; v += 4, mv += 4 * DW3_MASKS) KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 4);
        switch (nv - v) {
            case 3: KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 3); break;
            case 2: KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 2); break;
            case 1: KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 1); break;
            default: break;
        }
        if (after != NULL) {
            KSUF(activation)(after, yr, yr, ow);
        }
    }
}

/* Depthwise NCHW through the sub-plane buffer: per block of output rows, the flat weighted
 * sum (bias first, then the taps in (ky, kx) order; padding taps add 0 * w), then per row
 * + addend and the activation. */
static void KSUF(dw_nchw)(const accel_dw_params* dp, const float* x, const float* w, float bias,
                          const float* addend, float* y, int64_t oy0, int64_t oy1) {
    const int64_t ow = dp->ow;
    if (dp->kh == 3 && dp->kw == 3 && dp->sw == 1 && dp->dw == 1 && ow <= DW3_MAX_VECTORS * VW &&
        dp->pl <= VW) {
        KSUF(dw3_nchw)(dp, x, w, bias, addend, y, oy0, oy1);
        return;
    }
    int64_t pitch = 0;
    int64_t block = KSUF(subp_rows)(dp->kh, dp->kw, dp->sh, dp->sw, dp->dh, dp->dw, ow, &pitch);
    if (block == 0) {
        KSUF(dw_nchw_direct)(dp, x, w, bias, addend, y, oy0, oy1);
        return;
    }
    float buf[ACCEL_ROWBUF_FLOATS] KALIGN64;
    KSUF(subp) sp;
    KSUF(subp_init)(&sp, x, dp->ih, dp->iw, dp->kh, dp->kw, dp->sh, dp->sw, dp->dh, dp->dw,
                    dp->pt, dp->pl, pitch, block, 0.0f, buf);
    const KSUF(clamp) c = KSUF(clamp_of)(dp->act);
    const pn_activation_desc* after = KSUF(act_after)(dp->act);
    const float* src[ACCEL_TAPS_MAX];
    for (int64_t b0 = oy0; b0 < oy1; b0 += block) {
        int64_t rows = oy1 - b0 < block ? oy1 - b0 : block;
        float* out = KSUF(subp_fill)(&sp, b0, rows, src);
        KSUF(dw_flat)(src, w, sp.taps, bias, out, rows * pitch);
        for (int64_t r = 0; r < rows; ++r) {
            int64_t oy = b0 + r;
            float* yr = y + oy * ow;
            const float* ar = addend != NULL ? addend + oy * ow : NULL;
            const float* o = out + r * pitch;
            for (int64_t ox = 0; ox < ow; ox += VW) {
                KSUF(dw_finish)(KSUF(vload)(o + ox), ar, c, yr, ox, ow);
            }
            if (after != NULL) {
                KSUF(activation)(after, yr, yr, ow);
            }
        }
    }
}

/* y[k] = clamp(bias[k] + sum_t wt[t][k] * src[t][k] (+ add[k])) for k < n channels. */
static void KSUF(dw_pixel)(const float* const* src, const float* const* wt, int64_t taps,
                           const float* bias, const float* add, KSUF(clamp) c, float* y,
                           int64_t n) {
    for (int64_t k = 0; k < n; k += VW) {
        int64_t rem = n - k;
        vf acc;
        if (rem >= VW) {
            acc = bias != NULL ? KSUF(vload)(bias + k) : KSUF(vset1)(0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                acc = KSUF(vfma)(KSUF(vload)(wt[t] + k), KSUF(vload)(src[t] + k), acc);
            }
            if (add != NULL) {
                acc = KSUF(vadd)(acc, KSUF(vload)(add + k));
            }
        } else {
            acc = bias != NULL ? KSUF(vload_n)(bias + k, rem) : KSUF(vset1)(0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                acc = KSUF(vfma)(KSUF(vload_n)(wt[t] + k, rem), KSUF(vload_n)(src[t] + k, rem), acc);
            }
            if (add != NULL) {
                acc = KSUF(vadd)(acc, KSUF(vload_n)(add + k, rem));
            }
        }
        if (c.on) {
            acc = KSUF(vclamp)(c, acc);
        }
        if (rem >= VW) {
            KSUF(vstore)(y + k, acc);
        } else {
            KSUF(vstore_n)(y + k, acc, rem);
        }
    }
}

static void KSUF(dw_nhwc)(const accel_dw_params* dp, const float* x, const float* wt,
                          const float* bias, const float* addend, float* y, int64_t oy0,
                          int64_t oy1) {
    const int64_t ow = dp->ow, c = dp->c, kh = dp->kh, kw = dp->kw;
    const KSUF(clamp) cl = KSUF(clamp_of)(dp->act);
    const pn_activation_desc* after = KSUF(act_after)(dp->act);
    const float* src[ACCEL_TAPS_MAX];
    const float* wp[ACCEL_TAPS_MAX];
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t at = (oy * ow + ox) * c;
            float* yo = y + at;
            const float* ad = addend != NULL ? addend + at : NULL;
            int64_t t = 0;
            for (int64_t ky = 0; ky < kh; ++ky) {
                int64_t iy = oy * dp->sh - dp->pt + ky * dp->dh;
                if (iy < 0 || iy >= dp->ih) {
                    continue;
                }
                for (int64_t kx = 0; kx < kw; ++kx) {
                    int64_t ix = ox * dp->sw - dp->pl + kx * dp->dw;
                    if (ix < 0 || ix >= dp->iw) {
                        continue;
                    }
                    src[t] = x + (iy * dp->iw + ix) * c;
                    wp[t] = wt + (ky * kw + kx) * c;
                    ++t;
                }
            }
            KSUF(dw_pixel)(src, wp, t, bias, ad, cl, yo, c);
            if (after != NULL) {
                KSUF(activation)(after, yo, yo, c);
            }
        }
    }
}

const accel_kernels KTABLE = {
    KSUF(activation), KSUF(binary_row),   KSUF(max_row),  KSUF(exp_sub_sum), KSUF(scale),
    KSUF(max_cols),   KSUF(exp_sub_cols), KSUF(mul_cols), KSUF(pool_nchw),   KSUF(pool_nhwc),
    KSUF(sum_row),    KSUF(dw_nchw),      KSUF(dw_nhwc),  KSUF(activation_stream), KSUF(binary_row_stream),
};
