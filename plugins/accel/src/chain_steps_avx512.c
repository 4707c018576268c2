/* CpuAcc blocked-chain steps beyond convolution and pooling, AVX-512F (see conv_nchwc.h):
 * the channel scale of squeeze-and-excitation, the zeroing of padding lanes. */
#include "conv_nchwc.h"

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

void accel_nchwc_zero_tail_avx512(float* v, int64_t count, int64_t n) {
    const __mmask16 keep = (__mmask16)((1u << n) - 1u);
    for (int64_t i = 0; i < count; ++i) {
        _mm512_store_ps(v + i * B, _mm512_maskz_load_ps(keep, v + i * B));
    }
}

#endif
