/* CpuAcc SGEMM micro-kernel and transposed store, portable build (kernels/gemm_kernels.h). */
#include "kernels/gemm_kernels.h"

#include <string.h>

#ifndef PORT_MR
#define PORT_MR 4
#endif
#ifndef PORT_NR
#define PORT_NR 16
#endif
#ifndef PORT_MC
#define PORT_MC 128
#endif
#ifndef PORT_NCJ
#define PORT_NCJ 256
#endif
#if 2 * PORT_MC > GEMM_MC_MAX
#error "2 * PORT_MC must not exceed GEMM_MC_MAX"
#endif

static void gemm_ukr_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                              int accumulate) {
    float acc[PORT_MR][PORT_NR];
    memset(acc, 0, sizeof(acc));
    for (int64_t p = 0; p < kc; ++p) {
        for (int i = 0; i < PORT_MR; ++i) {
            float av = a[i];
            for (int j = 0; j < PORT_NR; ++j) {
                acc[i][j] += av * b[j];
            }
        }
        a += PORT_MR;
        b += PORT_NR;
    }
    for (int i = 0; i < PORT_MR; ++i) {
        float* ci = c + i * ldc;
        if (accumulate) {
            for (int j = 0; j < PORT_NR; ++j) ci[j] += acc[i][j];
        } else {
            for (int j = 0; j < PORT_NR; ++j) ci[j] = acc[i][j];
        }
    }
}

/* The portable transposed store, in 16-column strips so reads stay contiguous. */
static void store_t_portable(const float* t, int64_t ldt, float* out, int64_t ldc, int64_t rows,
                             int64_t cols) {
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
        int64_t j1 = cols - j0 < 16 ? cols : j0 + 16;
        for (int64_t i = 0; i < rows; ++i) {
            const float* ti = t + i * ldt;
            for (int64_t j = j0; j < j1; ++j) out[j * ldc + i] = ti[j];
        }
    }
}

const gemm_arch accel_gemm_portable = {
    .mr = PORT_MR, .nr = PORT_NR, .mc = PORT_MC, .ncj = PORT_NCJ,
    .ukr = gemm_ukr_portable, .store_t = store_t_portable,
};
