/*
 * Half-precision rows (included by vector_kernels_body.h, once per ISA): float16 to float32 and
 * back, bit for bit what plugin_common's pn_convert gives (the Cast CpuRef runs): a NaN keeps its
 * sign and payload and becomes quiet going to float32; every NaN becomes the quiet NaN of its
 * sign (0x7e00 | sign) going to float16; rounding to nearest even, overflow to infinity. The
 * AVX-512 build converts 16 lanes with vcvtph2ps (which quiets a NaN as pn_convert does) and
 * vcvtps2ph (round to nearest even; its NaN lanes, which keep the top payload bits, are set to
 * pn_convert's quiet NaN); other builds call the scalar conversions. bfloat16 rows are
 * branch-free integer loops the compiler vectorizes in every build: to float32 the bits shifted
 * up (a NaN's quiet bit set, as pn_convert's), from float32 round to nearest even
 * (pn_float_to_bfloat16: a NaN keeps its top bits and becomes quiet).
 */
#include "plugnn/pn_elements.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

/* A NaN with its quiet bit set (what a conversion through double, pn_convert's, makes of it). */
KINLINE float half_quiet_nan(float v) {
    if (v != v) {
        uint32_t bits;
        memcpy(&bits, &v, sizeof(bits));
        bits |= 0x00400000u;
        memcpy(&v, &bits, sizeof(bits));
    }
    return v;
}

static void KSUF(half_to_float_row)(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(x + i)));
        _mm512_storeu_ps(y + i, v);
    }
#endif
    for (; i < n; ++i) {
        y[i] = half_quiet_nan(pn_half_to_float(x[i]));
    }
}

static void KSUF(float_to_half_row)(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        if (nan) { /* sign | 0x7e00 */
            __m512i sign = _mm512_srli_epi32(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)), 16);
            __m256i fixed = _mm512_cvtepi32_epi16(_mm512_or_si512(sign, _mm512_set1_epi32(0x7e00)));
            h = _mm256_mask_mov_epi16(h, nan, fixed);
        }
        _mm256_storeu_si256((__m256i*)(y + i), h);
    }
#endif
    for (; i < n; ++i) {
        y[i] = pn_float_to_half(x[i]);
    }
}

static void KSUF(bfloat16_to_float_row)(const uint16_t* x, float* y, int64_t n) {
    uint32_t* out = (uint32_t*)y;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t b = x[i];
        uint32_t nan = (b & 0x7fffu) > 0x7f80u;
        out[i] = (b << 16) | (nan << 22);
    }
}

static void KSUF(float_to_bfloat16_row)(const float* x, uint16_t* y, int64_t n) {
    const uint32_t* in = (const uint32_t*)x;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t bits = in[i];
        uint32_t nan = (bits & 0x7fffffffu) > 0x7f800000u;
        uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
        uint32_t quiet = (bits >> 16) | 0x40u;
        y[i] = (uint16_t)(nan ? quiet : rounded);
    }
}
