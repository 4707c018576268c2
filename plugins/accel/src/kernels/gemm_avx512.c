/* CpuAcc SGEMM micro-kernels, AVX-512F + FMA: 7 rows x 32 columns (14 zmm accumulators), A
 * packed or read in place (gemm_indirect); the transposed store of a C block. */
#include "kernels/gemm_kernels.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#define MR_MAX 14

/* The body of an mr x 32 micro-kernel (mr <= MR_MAX a constant after inlining, so the
 * accumulators live in 2 * mr zmm registers). A is a packed panel (rows NULL) or read in
 * place: element i of panel row p at rows[i][offs[p]] (gemm_indirect). The next B panel is
 * prefetched into L2 as this one is read (weights streaming from memory). 7 x 32 runs as fast as 14 x 32 on Zen 4 (about
 * 116 GFLOP/s on one core from L1/L2) and pads M only to a multiple of 7 (7x7, 14x14, 28x28
 * and 56x56 outputs are whole panels). */
static inline __attribute__((always_inline)) void ukr_body(const int mr, int64_t kc, const float* a,
                                                           const float* const* rows,
                                                           const int64_t* offs, const float* b,
                                                           float* c, int64_t ldc, int accumulate) {
    __m512 lo[MR_MAX], hi[MR_MAX];
#pragma GCC unroll 14
    for (int i = 0; i < mr; ++i) {
        lo[i] = _mm512_setzero_ps();
        hi[i] = _mm512_setzero_ps();
    }
#pragma GCC unroll 14
    for (int i = 0; i < mr; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 31), _MM_HINT_T0);
    }
    const int64_t ahead = 32 * kc; /* the next B panel (packed B panels are consecutive) */
    for (int64_t p = 0; p < kc; ++p) {
        _mm_prefetch((const char*)(b + ahead), _MM_HINT_T1);
        _mm_prefetch((const char*)(b + ahead + 16), _MM_HINT_T1);
        __m512 b0 = _mm512_loadu_ps(b);
        __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 14
        for (int i = 0; i < mr; ++i) {
            __m512 av = _mm512_set1_ps(rows != NULL ? rows[i][offs[p]] : a[p * mr + i]);
            lo[i] = _mm512_fmadd_ps(av, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(av, b1, hi[i]);
        }
        b += 32;
    }
#pragma GCC unroll 14
    for (int i = 0; i < mr; ++i) {
        float* cr = c + i * ldc;
        if (accumulate) {
            lo[i] = _mm512_add_ps(lo[i], _mm512_loadu_ps(cr));
            hi[i] = _mm512_add_ps(hi[i], _mm512_loadu_ps(cr + 16));
        }
        _mm512_storeu_ps(cr, lo[i]);
        _mm512_storeu_ps(cr + 16, hi[i]);
    }
}

void gemm_ukr_avx512_7x32(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                          int accumulate) {
    ukr_body(7, kc, a, NULL, NULL, b, c, ldc, accumulate);
}

void gemm_ukr_ind_avx512_7x32(int64_t kc, const float* const* rows, const int64_t* offs,
                              const float* b, float* c, int64_t ldc, int accumulate) {
    const float* r[7] = {rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6]};
    ukr_body(7, kc, NULL, r, offs, b, c, ldc, accumulate);
}

void gemm_ukr_ind_short_avx512_32(int rows, int64_t kc, const float* const* row_ptrs, const int64_t* offs,
                                  const float* b, float* c, int64_t ldc, int accumulate) {
    switch (rows) { /* the accumulators of `rows` rows only, in registers */
    case 1: ukr_body(1, kc, NULL, row_ptrs, offs, b, c, ldc, accumulate); break;
    case 2: ukr_body(2, kc, NULL, row_ptrs, offs, b, c, ldc, accumulate); break;
    case 3: ukr_body(3, kc, NULL, row_ptrs, offs, b, c, ldc, accumulate); break;
    case 4: ukr_body(4, kc, NULL, row_ptrs, offs, b, c, ldc, accumulate); break;
    case 5: ukr_body(5, kc, NULL, row_ptrs, offs, b, c, ldc, accumulate); break;
    default: ukr_body(6, kc, NULL, row_ptrs, offs, b, c, ldc, accumulate); break;
    }
}

/* acc[2q], acc[2q + 1] += the kc rows of panel q (q < np, panels `stride` floats apart)
 * times a[p * as]; np a constant after inlining where it is 4. */
static inline __attribute__((always_inline)) void gemv_panels(int64_t kc, const float* a, int64_t as,
                                                              const float* bp, int64_t stride, const int np,
                                                              __m512 acc[8]) {
    for (int64_t p = 0; p < kc; ++p) {
        const __m512 av = _mm512_set1_ps(a[p * as]);
        const float* bq = bp + p * 32;
#pragma GCC unroll 4
        for (int q = 0; q < np; ++q) {
            acc[2 * q] = _mm512_fmadd_ps(av, _mm512_loadu_ps(bq + q * stride), acc[2 * q]);
            acc[2 * q + 1] = _mm512_fmadd_ps(av, _mm512_loadu_ps(bq + q * stride + 16), acc[2 * q + 1]);
        }
    }
}

/* gemm_gemv_fn for 32-column panels: four panels at a time (eight independent chains keep
 * the FMA units ahead of the B stream), the last partial panel's columns masked. */
void gemm_gemv_avx512_32(int64_t kc, const float* a, int64_t as, const float* b, int64_t panels,
                         float* y, int64_t cols, int accumulate) {
    const int64_t stride = 32 * kc;
    for (int64_t r0 = 0; r0 < panels; r0 += 4) {
        const int np = panels - r0 < 4 ? (int)(panels - r0) : 4;
        __m512 acc[8];
        for (int q = 0; q < 8; ++q) acc[q] = _mm512_setzero_ps();
        if (np == 4) {
            gemv_panels(kc, a, as, b + r0 * stride, stride, 4, acc);
        } else {
            gemv_panels(kc, a, as, b + r0 * stride, stride, np, acc);
        }
        for (int v = 0; v < 2 * np; ++v) {
            const int64_t j = r0 * 32 + v * 16;
            if (j >= cols) break;
            const __mmask16 m = cols - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - j)) - 1u);
            __m512 out = acc[v];
            if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(m, y + j));
            _mm512_mask_storeu_ps(y + j, m, out);
        }
    }
}

/* r[0..16) = the 16x16 transpose of r[0..16) (row k of the result = column k of the input). */
static void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8) {
        for (int q = 0; q < 4; ++q) {
            t[i + q] = _mm512_shuffle_f32x4(r[i + q], r[i + q + 4], 0x88);
            t[i + q + 4] = _mm512_shuffle_f32x4(r[i + q], r[i + q + 4], 0xDD);
        }
    }
    for (int q = 0; q < 8; ++q) {
        r[q] = _mm512_shuffle_f32x4(t[q], t[q + 8], 0x88);
        r[q + 8] = _mm512_shuffle_f32x4(t[q], t[q + 8], 0xDD);
    }
}

void gemm_store_t_avx512(const float* t, int64_t ldt, float* out, int64_t ldc, int64_t rows,
                         int64_t cols) {
    __m512 r[16];
    for (int64_t i0 = 0; i0 < rows; i0 += 16) {
        int64_t ni = rows - i0 < 16 ? rows - i0 : 16;
        __mmask16 im = (__mmask16)((1u << ni) - 1u);
        for (int64_t j0 = 0; j0 < cols; j0 += 16) {
            int64_t nj = cols - j0 < 16 ? cols - j0 : 16;
            __mmask16 jm = (__mmask16)((1u << nj) - 1u);
            for (int64_t i = 0; i < 16; ++i) {
                r[i] = i < ni ? _mm512_maskz_loadu_ps(jm, t + (i0 + i) * ldt + j0) : _mm512_setzero_ps();
            }
            transpose16(r);
            for (int64_t j = 0; j < nj; ++j) {
                _mm512_mask_storeu_ps(out + (j0 + j) * ldc + i0, im, r[j]);
            }
        }
    }
}

const gemm_arch accel_gemm_avx512 = {
    .mr = 7, .nr = 32, .mc = 112, .ncj = 512,
    .ukr = gemm_ukr_avx512_7x32, .store_t = gemm_store_t_avx512,
    .ukr_ind = gemm_ukr_ind_avx512_7x32, .gemv = gemm_gemv_avx512_32,
    .ukr_ind_short = gemm_ukr_ind_short_avx512_32,
};

#else
typedef int accel_gemm_avx512_unused; /* built without -mavx512f: no kernel */
#endif

