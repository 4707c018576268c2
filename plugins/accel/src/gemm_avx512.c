/* CpuAcc SGEMM micro-kernel, AVX-512F + FMA: 14 rows x 32 columns (28 zmm accumulators). */
#include "gemm.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#define MR 14

void gemm_ukr_avx512_14x32(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                           int accumulate) {
    __m512 lo[MR], hi[MR];
    for (int i = 0; i < MR; ++i) {
        lo[i] = _mm512_setzero_ps();
        hi[i] = _mm512_setzero_ps();
    }
    for (int i = 0; i < MR; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 31), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc; ++p) {
        __m512 b0 = _mm512_loadu_ps(b);
        __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 14
        for (int i = 0; i < MR; ++i) {
            __m512 av = _mm512_set1_ps(a[i]);
            lo[i] = _mm512_fmadd_ps(av, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(av, b1, hi[i]);
        }
        a += MR;
        b += 32;
    }
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
        float* cr = c + i * ldc;
        if (accumulate) {
            lo[i] = _mm512_add_ps(lo[i], _mm512_loadu_ps(cr));
            hi[i] = _mm512_add_ps(hi[i], _mm512_loadu_ps(cr + 16));
        }
        _mm512_storeu_ps(cr, lo[i]);
        _mm512_storeu_ps(cr + 16, hi[i]);
    }
}

#else
typedef int accel_gemm_avx512_unused; /* built without -mavx512f: no kernel */
#endif
