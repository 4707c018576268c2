/* CpuAcc's integer GEMM micro-kernel, AVX512-VNNI (kernels/int8_kernels.h): 8 x 32 tiles, each
 * step one vpdpbusd per 16 columns and row: four u8 (a, broadcast) x s8 (b) products added to the
 * 32-bit accumulator without saturation (vpdpbusd, not vpdpbusds), wrapping modulo 2^32. Built
 * with -mavx512vnni beside the AVX-512 flags; chosen only when the CPU has AVX512-VNNI (cpu.c). */
#include "kernels/int8_kernels.h"

#include <immintrin.h>

#define MR 8
#define NR 32

static void qgemm_ukr_avx512vnni_8x32(int64_t kg, const uint32_t* a, int64_t lda, const uint32_t* b, int32_t* c,
                                      int64_t ldc, int accumulate) {
    (void)lda; /* panels interleaved by unit */
    __m512i c0[MR], c1[MR];
    for (int r = 0; r < MR; ++r) {
        c0[r] = accumulate ? _mm512_loadu_si512((const void*)(c + r * ldc)) : _mm512_setzero_si512();
        c1[r] = accumulate ? _mm512_loadu_si512((const void*)(c + r * ldc + 16)) : _mm512_setzero_si512();
    }
    for (int64_t g = 0; g < kg; ++g) {
        const __m512i b0 = _mm512_loadu_si512((const void*)(b + g * NR));
        const __m512i b1 = _mm512_loadu_si512((const void*)(b + g * NR + 16));
        for (int r = 0; r < MR; ++r) {
            const __m512i av = _mm512_set1_epi32((int32_t)a[g * MR + r]);
            c0[r] = _mm512_dpbusd_epi32(c0[r], av, b0);
            c1[r] = _mm512_dpbusd_epi32(c1[r], av, b1);
        }
    }
    for (int r = 0; r < MR; ++r) {
        _mm512_storeu_si512((void*)(c + r * ldc), c0[r]);
        _mm512_storeu_si512((void*)(c + r * ldc + 16), c1[r]);
    }
}

const qgemm_arch accel_qgemm_avx512vnni = {"avx512vnni", MR, NR, 4, 1, 0, qgemm_ukr_avx512vnni_8x32};
