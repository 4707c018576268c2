/* CpuAcc SGEMM micro-kernel, AVX2 + FMA: 6 rows x 16 columns (12 ymm accumulators). */
#include "gemm.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

void gemm_ukr_avx2_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                        int accumulate) {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    for (int i = 0; i < 6; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 15), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc; ++p) {
        __m256 b0 = _mm256_loadu_ps(b);
        __m256 b1 = _mm256_loadu_ps(b + 8);
        __m256 av;
        av = _mm256_broadcast_ss(a + 0);
        c00 = _mm256_fmadd_ps(av, b0, c00);
        c01 = _mm256_fmadd_ps(av, b1, c01);
        av = _mm256_broadcast_ss(a + 1);
        c10 = _mm256_fmadd_ps(av, b0, c10);
        c11 = _mm256_fmadd_ps(av, b1, c11);
        av = _mm256_broadcast_ss(a + 2);
        c20 = _mm256_fmadd_ps(av, b0, c20);
        c21 = _mm256_fmadd_ps(av, b1, c21);
        av = _mm256_broadcast_ss(a + 3);
        c30 = _mm256_fmadd_ps(av, b0, c30);
        c31 = _mm256_fmadd_ps(av, b1, c31);
        av = _mm256_broadcast_ss(a + 4);
        c40 = _mm256_fmadd_ps(av, b0, c40);
        c41 = _mm256_fmadd_ps(av, b1, c41);
        av = _mm256_broadcast_ss(a + 5);
        c50 = _mm256_fmadd_ps(av, b0, c50);
        c51 = _mm256_fmadd_ps(av, b1, c51);
        a += 6;
        b += 16;
    }
#define ACCEL_STORE_ROW(r, lo, hi)                                              \
    do {                                                                        \
        float* cr = c + (r) * ldc;                                              \
        if (accumulate) {                                                       \
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(cr));                        \
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(cr + 8));                    \
        }                                                                       \
        _mm256_storeu_ps(cr, lo);                                               \
        _mm256_storeu_ps(cr + 8, hi);                                           \
    } while (0)
    ACCEL_STORE_ROW(0, c00, c01);
    ACCEL_STORE_ROW(1, c10, c11);
    ACCEL_STORE_ROW(2, c20, c21);
    ACCEL_STORE_ROW(3, c30, c31);
    ACCEL_STORE_ROW(4, c40, c41);
    ACCEL_STORE_ROW(5, c50, c51);
#undef ACCEL_STORE_ROW
}

#else
typedef int accel_gemm_avx2_unused; /* built without -mavx2 -mfma: no kernel */
#endif
