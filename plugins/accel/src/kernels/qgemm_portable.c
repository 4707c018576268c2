/* CpuAcc's integer GEMM micro-kernel, portable C (kernels/int8_kernels.h): 4 x 16 tiles of int16
 * pairs (kr 2), each pair product summed exactly in 32 bits (unsigned arithmetic: the sums wrap
 * modulo 2^32 as CpuRef's, without C's signed overflow). */
#include "kernels/int8_kernels.h"

#define MR 4
#define NR 16

static void qgemm_ukr_portable_4x16(int64_t kg, const uint32_t* a, int64_t lda, const uint32_t* b, int32_t* c,
                                    int64_t ldc, int accumulate) {
    (void)lda; /* panels interleaved by unit */
    uint32_t t[MR][NR];
    for (int r = 0; r < MR; ++r) {
        for (int j = 0; j < NR; ++j) {
            t[r][j] = accumulate ? (uint32_t)c[r * ldc + j] : 0u;
        }
    }
    for (int64_t g = 0; g < kg; ++g) {
        const uint32_t* bg = b + g * NR;
        int32_t b0[NR], b1[NR];
        for (int j = 0; j < NR; ++j) {
            b0[j] = (int16_t)(bg[j] & 0xffffu);
            b1[j] = (int16_t)(bg[j] >> 16);
        }
        for (int r = 0; r < MR; ++r) {
            const uint32_t u = a[g * MR + r];
            const int32_t a0 = (int16_t)(u & 0xffffu), a1 = (int16_t)(u >> 16);
            for (int j = 0; j < NR; ++j) {
                t[r][j] += (uint32_t)(a0 * b0[j] + a1 * b1[j]); /* |pair sum| <= 65280 */
            }
        }
    }
    for (int r = 0; r < MR; ++r) {
        for (int j = 0; j < NR; ++j) {
            c[r * ldc + j] = (int32_t)t[r][j];
        }
    }
}

const qgemm_arch accel_qgemm_portable = {"portable", MR, NR, 2, 1, 0, qgemm_ukr_portable_4x16};
