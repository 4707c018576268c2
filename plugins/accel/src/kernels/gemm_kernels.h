/*
 * CpuAcc's SGEMM micro-kernels: the register-blocked tiles (portable 4x16, AVX2 6x16, AVX-512
 * 7x32) and transposed stores of one ISA, gathered in a gemm_arch table with the blocking that
 * suits them. The driver that packs, blocks and threads over them is gemm/gemm.h.
 */
#ifndef ACCEL_GEMM_KERNELS_H
#define ACCEL_GEMM_KERNELS_H

#include "accel.h"

#include <stddef.h>
#include <stdint.h>

#define GEMM_MR_MAX 16
#define GEMM_NR_MAX 32
#define GEMM_MC_MAX 256 /* >= twice every arch's mc (gemm_job's M blocks with B prepacked) */

/* C[0..mr)[0..nr) (row stride ldc) = (accumulate ? C : 0) + A_panel * B_panel. */
typedef void (*gemm_ukr_fn)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                            int accumulate);

/* out[j * ldc + i] = t[i * ldt + j] for i < rows, j < cols (a transposed C block's store). */
typedef void (*gemm_store_t_fn)(const float* t, int64_t ldt, float* out, int64_t ldc, int64_t rows,
                                int64_t cols);

/* Like gemm_ukr_fn, with A read in place: A_panel[p][i] = rows[i][offs[p]] for the mr row
 * pointers `rows` (see gemm_indirect). */
typedef void (*gemm_ukr_ind_fn)(int64_t kc, const float* const* rows, const int64_t* offs,
                                const float* b, float* c, int64_t ldc, int accumulate);

/* One row of C from a prepacked B (M == 1): y[0..cols) = (accumulate ? y : 0) + the kc
 * elements a[p * as] times B rows [0, kc) of `panels` consecutive packed panels (panel r at
 * b + r * nr * kc, [kc][nr]); cols <= panels * nr, columns past cols are not stored. Each
 * element is summed in the micro-kernel's order (one fused multiply-add chain over p from
 * zero, then + y), so a row comes out with the same bits as through the micro-kernel. */
typedef void (*gemm_gemv_fn)(int64_t kc, const float* a, int64_t as, const float* b, int64_t panels,
                             float* y, int64_t cols, int accumulate);

/* ukr_ind for a last panel of `rows` < mr rows (rows[0..rows) only): the same sums for those
 * rows, without the multiply-adds of the padding rows. */
typedef void (*gemm_ukr_ind_short_fn)(int rows, int64_t kc, const float* const* row_ptrs, const int64_t* offs,
                                      const float* b, float* c, int64_t ldc, int accumulate);

typedef struct gemm_arch {
    int mr, nr, mc, ncj; /* micro-tile, M block (multiple of mr), N block (multiple of nr) */
    gemm_ukr_fn ukr;
    gemm_store_t_fn store_t;
    gemm_ukr_ind_fn ukr_ind; /* NULL: the arch has no indirect-A kernel */
    gemm_gemv_fn gemv;       /* NULL: M == 1 runs through ukr like any M */
    gemm_ukr_ind_short_fn ukr_ind_short; /* NULL: a short last panel runs the whole micro-tile */
} gemm_arch;

/* Each ISA's micro-kernels as one table (gemm_portable.c, kernels/gemm_avx2.c, kernels/gemm_avx512.c); the CPU's
 * is accel_kernel_set.gemm (accel.h). */
extern const gemm_arch accel_gemm_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const gemm_arch accel_gemm_avx2;
extern const gemm_arch accel_gemm_avx512;

/* The micro-kernels and transposed stores of the x86 tables, which other kernels call too. */
void gemm_ukr_avx2_6x16(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                        int accumulate);
void gemm_ukr_avx512_7x32(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                          int accumulate);
void gemm_ukr_ind_avx512_7x32(int64_t kc, const float* const* rows, const int64_t* offs,
                              const float* b, float* c, int64_t ldc, int accumulate);
void gemm_ukr_ind_short_avx512_32(int rows, int64_t kc, const float* const* row_ptrs, const int64_t* offs,
                                  const float* b, float* c, int64_t ldc, int accumulate);
void gemm_ukr_ind_avx2_6x16(int64_t kc, const float* const* rows, const int64_t* offs,
                            const float* b, float* c, int64_t ldc, int accumulate);
void gemm_gemv_avx2_16(int64_t kc, const float* a, int64_t as, const float* b, int64_t panels,
                       float* y, int64_t cols, int accumulate);
void gemm_gemv_avx512_32(int64_t kc, const float* a, int64_t as, const float* b, int64_t panels,
                         float* y, int64_t cols, int accumulate);
void gemm_store_t_avx2(const float* t, int64_t ldt, float* out, int64_t ldc, int64_t rows,
                       int64_t cols);
void gemm_store_t_avx512(const float* t, int64_t ldt, float* out, int64_t ldc, int64_t rows,
                         int64_t cols);
#endif

#endif /* ACCEL_GEMM_KERNELS_H */
