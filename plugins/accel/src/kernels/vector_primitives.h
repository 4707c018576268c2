/*
 * CpuAcc kernels, vector primitives: the VW-float vector type and its operations, written
 * three times under #if: with AVX-512F intrinsics (zmm, lane masks) when the file is compiled
 * with __AVX512F__ and __FMA__, with AVX2 intrinsics (ymm, maskload/maskstore) when compiled
 * with __AVX2__ and __FMA__, else as arrays of 8 floats in plain C.
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
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
KINLINE int KSUF(vnan_any)(vnan m) { return m != 0; }
KINLINE float KSUF(vhmax)(vf a) { return _mm512_reduce_max_ps(a); } /* a without NaN */
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
KINLINE int KSUF(vnan_any)(vnan m) { return _mm256_movemask_ps(m) != 0; }
KINLINE float KSUF(vhmax)(vf a) { /* a without NaN */
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
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
KINLINE int KSUF(vnan_any)(vnan m) {
    int any = 0;
    for (int j = 0; j < VW; ++j) any |= m.v[j] != 0;
    return any;
}
KINLINE float KSUF(vhmax)(vf a) { /* a without NaN */
    float s = a.v[0];
    for (int j = 1; j < VW; ++j) s = a.v[j] > s ? a.v[j] : s;
    return s;
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
