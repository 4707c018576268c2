/* CpuAcc blocked-chain steps beyond convolution and pooling, AVX-512F (see ops/conv_nchwc.h):
 * the channel scale of squeeze-and-excitation, batch normalization, the sum of two tensors, the
 * zeroing of padding lanes, SiLU on the rows a kernel just wrote. */
#include "kernels/nchwc_kernels.h"

#if defined(__AVX512F__)
#include <immintrin.h>

#define B NCHWC_BLOCK

void accel_nchwc_scale_row_avx512(const nchwc_view* x, const float* s, const nchwc_view* y, int64_t b,
                                  int64_t oy, int64_t ow) {
    const __m512 sv = _mm512_loadu_ps(s);
    const float* xr = x->data + ((b * x->rows + oy) * x->cols) * B;
    float* yr = y->data + ((b * y->rows + oy) * y->cols) * B;
    int64_t ox = 0;
    for (; ox + 4 <= ow; ox += 4) {
        __m512 v0 = _mm512_mul_ps(_mm512_load_ps(xr + (ox + 0) * B), sv);
        __m512 v1 = _mm512_mul_ps(_mm512_load_ps(xr + (ox + 1) * B), sv);
        __m512 v2 = _mm512_mul_ps(_mm512_load_ps(xr + (ox + 2) * B), sv);
        __m512 v3 = _mm512_mul_ps(_mm512_load_ps(xr + (ox + 3) * B), sv);
        _mm512_store_ps(yr + (ox + 0) * B, v0);
        _mm512_store_ps(yr + (ox + 1) * B, v1);
        _mm512_store_ps(yr + (ox + 2) * B, v2);
        _mm512_store_ps(yr + (ox + 3) * B, v3);
    }
    for (; ox < ow; ++ox) {
        _mm512_store_ps(yr + ox * B, _mm512_mul_ps(_mm512_load_ps(xr + ox * B), sv));
    }
}

void accel_nchwc_affine_row_avx512(const float* x, const float* coef, float* y, int64_t ow, float lo, float hi) {
    const __m512 a = _mm512_loadu_ps(coef), m = _mm512_loadu_ps(coef + B), c = _mm512_loadu_ps(coef + 2 * B);
    const __m512 lv = _mm512_set1_ps(lo), hv = _mm512_set1_ps(hi);
    for (int64_t ox = 0; ox < ow; ++ox) { /* max and min return their second operand, v, when it is NaN */
        const __m512 v = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_load_ps(x + ox * B), m), a, c);
        _mm512_store_ps(y + ox * B, _mm512_min_ps(hv, _mm512_max_ps(lv, v)));
    }
}

void accel_nchwc_add_row_avx512(const float* a, const float* b, float* y, int64_t ow, float lo, float hi) {
    const __m512 lv = _mm512_set1_ps(lo), hv = _mm512_set1_ps(hi);
    for (int64_t ox = 0; ox < ow; ++ox) { /* max and min return their second operand, v, when it is NaN */
        const __m512 v = _mm512_add_ps(_mm512_load_ps(a + ox * B), _mm512_load_ps(b + ox * B));
        _mm512_store_ps(y + ox * B, _mm512_min_ps(hv, _mm512_max_ps(lv, v)));
    }
}

void accel_nchwc_zero_tail_avx512(float* v, int64_t count, int64_t n) {
    const __mmask16 keep = (__mmask16)((1u << n) - 1u);
    for (int64_t i = 0; i < count; ++i) {
        _mm512_store_ps(v + i * B, _mm512_maskz_load_ps(keep, v + i * B));
    }
}

/* x sigmoid(x) as x e / (1 + e) (x < 0) or x / (1 + e), e = exp(-|x|): kernels/math_functions.h's reduction
 * and polynomial (exp_core, exp_poly: the same constants), the scaling by 2^n with vscalefps
 * (one rounding, into the subnormals) instead of the integer exponent arithmetic, and one
 * division for the quotient and the product with x (kernels/math_functions.h's SWISH divides, then
 * multiplies by x, and carries alpha x's rounding error, which is 0 for alpha = 1). On a Zen 5
 * core 0.16 ns per element in L1 against 0.27 for the generic SWISH row; accuracy in
 * plugins/accel/README.md. */
static inline __attribute__((always_inline)) __m512 silu16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 a = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x));       /* -|x| */
    const __m512 c = _mm512_max_ps(a, _mm512_set1_ps(-104.0f));                   /* NaN -> -104 */
    const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-0.693145751953125f), c); /* EXP_LN2_HI, _LO */
    r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-1.42860677e-6f), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.3821362518e-03f), r, _mm512_set1_ps(8.3686709404e-03f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1668258607e-02f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666521132e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999994040e-01f));
    p = _mm512_fmadd_ps(_mm512_fmadd_ps(p, r, one), r, one); /* exp_poly: 1 + r (1 + r P) */
    const __m512 e = _mm512_scalef_ps(p, fn);                                     /* exp(-|x|) */
    const __m512 num = _mm512_mask_mul_ps(x, neg, x, e);                          /* x e or x; NaN stays */
    return _mm512_div_ps(num, _mm512_add_ps(one, e));
}

void accel_nchwc_silu_avx512(float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, silu16(_mm512_loadu_ps(y + i)));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, silu16(_mm512_maskz_loadu_ps(m, y + i)));
    }
}

#endif
