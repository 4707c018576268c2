/* CpuAcc's integer GEMM micro-kernel, AVX2 (kernels/int8_kernels.h): 6 x 16 tiles of int16 pairs
 * (kr 2, widened at packing time), vpmaddwd multiplying each pair into an exact 32-bit pair sum
 * and vpaddd accumulating it (wrapping modulo 2^32). Not vpmaddubsw: its u8 x s8 pair sums
 * saturate at int16. */
#include "kernels/int8_kernels.h"

#include <immintrin.h>

#define MR 6
#define NR 16

static void qgemm_ukr_avx2_6x16(int64_t kg, const uint32_t* a, int64_t lda, const uint32_t* b, int32_t* c,
                                int64_t ldc, int accumulate) {
    (void)lda; /* panels interleaved by unit */
    __m256i c0[MR], c1[MR];
    for (int r = 0; r < MR; ++r) {
        c0[r] = accumulate ? _mm256_loadu_si256((const __m256i*)(c + r * ldc)) : _mm256_setzero_si256();
        c1[r] = accumulate ? _mm256_loadu_si256((const __m256i*)(c + r * ldc + 8)) : _mm256_setzero_si256();
    }
    for (int64_t g = 0; g < kg; ++g) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i*)(b + g * NR));
        const __m256i b1 = _mm256_loadu_si256((const __m256i*)(b + g * NR + 8));
        for (int r = 0; r < MR; ++r) {
            const __m256i av = _mm256_set1_epi32((int32_t)a[g * MR + r]);
            c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(av, b0));
            c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(av, b1));
        }
    }
    for (int r = 0; r < MR; ++r) {
        _mm256_storeu_si256((__m256i*)(c + r * ldc), c0[r]);
        _mm256_storeu_si256((__m256i*)(c + r * ldc + 8), c1[r]);
    }
}

const qgemm_arch accel_qgemm_avx2 = {"avx2", MR, NR, 2, 1, 0, qgemm_ukr_avx2_6x16};
