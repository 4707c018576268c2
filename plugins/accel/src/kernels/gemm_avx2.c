/* CpuAcc SGEMM micro-kernels, AVX2 + FMA: 6 rows x 16 columns (12 ymm accumulators), A packed
 * or read in place (gemm_indirect); the transposed store of a C block. */
#include "kernels/gemm_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define MR 6

/* The body of the 6 x 16 micro-kernels (inlined with rows either NULL or not, so the
 * accumulators live in 12 ymm registers). A is a packed panel (rows NULL) or read in place:
 * element i of panel row p at rows[i][offs[p]]. The next B panel is prefetched into L2 as
 * this one is read. */
static inline __attribute__((always_inline)) void ukr_body(int64_t kc, const float* a,
                                                           const float* const* rows,
                                                           const int64_t* offs, const float* b,
                                                           float* c, int64_t ldc, int accumulate) {
    __m256 lo[MR], hi[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        lo[i] = _mm256_setzero_ps();
        hi[i] = _mm256_setzero_ps();
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 15), _MM_HINT_T0);
    }
    const int64_t ahead = 16 * kc; /* the next B panel (packed B panels are consecutive) */
    for (int64_t p = 0; p < kc; ++p) {
        _mm_prefetch((const char*)(b + ahead), _MM_HINT_T1);
        __m256 b0 = _mm256_loadu_ps(b);
        __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            __m256 av = _mm256_broadcast_ss(rows != NULL ? rows[i] + offs[p] : a + p * MR + i);
            lo[i] = _mm256_fmadd_ps(av, b0, lo[i]);
            hi[i] = _mm256_fmadd_ps(av, b1, hi[i]);
        }
        b += 16;
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        float* cr = c + i * ldc;
        if (accumulate) {
            lo[i] = _mm256_add_ps(lo[i], _mm256_loadu_ps(cr));
            hi[i] = _mm256_add_ps(hi[i], _mm256_loadu_ps(cr + 8));
        }
        _mm256_storeu_ps(cr, lo[i]);
        _mm256_storeu_ps(cr + 8, hi[i]);
    }
}

void gemm_ukr_avx2_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                        int accumulate) {
    ukr_body(kc, a, NULL, NULL, b, c, ldc, accumulate);
}

void gemm_ukr_ind_avx2_6x16(int64_t kc, const float* const* rows, const int64_t* offs,
                            const float* b, float* c, int64_t ldc, int accumulate) {
    const float* r[MR] = {rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]};
    ukr_body(kc, NULL, r, offs, b, c, ldc, accumulate);
}

/* gemm_gemv_fn for 16-column panels: four panels at a time (eight independent chains), the
 * last partial panel's columns masked. */
void gemm_gemv_avx2_16(int64_t kc, const float* a, int64_t as, const float* b, int64_t panels,
                       float* y, int64_t cols, int accumulate) {
    const int64_t stride = 16 * kc;
    for (int64_t r0 = 0; r0 < panels; r0 += 4) {
        const int np = panels - r0 < 4 ? (int)(panels - r0) : 4;
        const float* bp = b + r0 * stride;
        __m256 acc[8];
        for (int q = 0; q < 8; ++q) acc[q] = _mm256_setzero_ps();
        for (int64_t p = 0; p < kc; ++p) {
            const __m256 av = _mm256_set1_ps(a[p * as]);
            const float* bq = bp + p * 16;
            for (int q = 0; q < np; ++q) {
                acc[2 * q] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bq + q * stride), acc[2 * q]);
                acc[2 * q + 1] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bq + q * stride + 8), acc[2 * q + 1]);
            }
        }
        for (int v = 0; v < 2 * np; ++v) {
            const int64_t j = r0 * 16 + v * 8;
            if (j >= cols) break;
            const int64_t left = cols - j;
            const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left > 8 ? 8 : (int)left),
                                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            __m256 out = acc[v];
            if (accumulate) out = _mm256_add_ps(out, _mm256_maskload_ps(y + j, m));
            _mm256_maskstore_ps(y + j, m, out);
        }
    }
}

/* r[0..8) = the 8x8 transpose of r[0..8) (row k of the result = column k of the input). */
static void transpose8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int q = 0; q < 4; ++q) {
        t[q] = _mm256_permute2f128_ps(r[q], r[q + 4], 0x20);
        t[q + 4] = _mm256_permute2f128_ps(r[q], r[q + 4], 0x31);
    }
    for (int q = 0; q < 8; ++q) r[q] = t[q];
}

void gemm_store_t_avx2(const float* t, int64_t ldt, float* out, int64_t ldc, int64_t rows,
                       int64_t cols) {
    __m256 r[8];
    int64_t i0 = 0;
    for (; i0 + 8 <= rows; i0 += 8) {
        int64_t j0 = 0;
        for (; j0 + 8 <= cols; j0 += 8) {
            for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(t + (i0 + i) * ldt + j0);
            transpose8(r);
            for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + (j0 + j) * ldc + i0, r[j]);
        }
        for (; j0 < cols; ++j0) {
            for (int64_t i = i0; i < i0 + 8; ++i) out[j0 * ldc + i] = t[i * ldt + j0];
        }
    }
    for (; i0 < rows; ++i0) {
        for (int64_t j = 0; j < cols; ++j) out[j * ldc + i0] = t[i0 * ldt + j];
    }
}

const gemm_arch accel_gemm_avx2 = {
    .mr = 6, .nr = 16, .mc = 120, .ncj = 256,
    .ukr = gemm_ukr_avx2_6x16, .store_t = gemm_store_t_avx2,
    .ukr_ind = gemm_ukr_ind_avx2_6x16, .gemv = gemm_gemv_avx2_16,
};

#else
typedef int accel_gemm_avx2_unused; /* built without -mavx2 -mfma: no kernel */
#endif

