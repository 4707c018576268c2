/*
 * CpuAcc SGEMM: packed operands, register-blocked micro-kernels (portable,
 * AVX2 6x16, AVX-512 7x32), KC/MC/NC blocking. Private to the compute families
 * (ops/convolution_2d.c, ops/fully_connected.c, ops/matmul.c).
 *
 * C[M, N] (row stride ldc, or stored transposed) = A[M, K] * B[K, N], then an
 * optional epilogue per finished block. A and B are read through element strides
 * (rs, cs), so transposes cost nothing, or from a prepacked copy
 * (gemm_pack_a/b_full), or through a packing callback (e.g. an implicit im2col);
 * A may also be read in place, never packed, through row pointers (gemm_indirect).
 *
 * Threading: one parallel_for per GEMM. C's micro-tile panels are split into a
 * grid of tm x tn rectangles (<= the pool's threads), chosen to minimize the
 * largest rectangle's multiply-adds plus the packing it does; each job runs the
 * whole K loop for its rectangle with its own packing buffers in the workspace.
 * The micro-tiles and K blocks do not depend on the grid, so every thread count
 * gives the same bits.
 */
#ifndef ACCEL_GEMM_H
#define ACCEL_GEMM_H

#include "accel.h"
#include "kernels/gemm_kernels.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GEMM_KC 256
/* Relative cost of packing one float, in multiply-adds (a strided gather or an implicit
 * im2col moves about one float per cycle; the micro-kernel does 16 multiply-adds a cycle). */
#define GEMM_PACK_COST 16

/* An A operand read in place, never packed (arch->ukr_ind only): A[i][p] = x[base(i) + offs[p]]
 * with base(i) = (i / ow) * row_step + (i % ow) * col_step. E.g. a convolution over a padded
 * image: i an output position (oy, ox), p a (channel, tap). */
typedef struct gemm_indirect {
    const float* x;
    const int64_t* offs;
    int64_t ow, row_step, col_step;
} gemm_indirect;

/* dst[0..w) = src[0..w) for one row of a packed panel, with the copy size a constant for
 * the micro-tile widths (so the copy is inlined, not a library call). */
static inline void gemm_copy_row(float* dst, const float* src, int w) {
    switch (w) {
    case 32: memcpy(dst, src, 32 * sizeof(float)); break;
    case 16: memcpy(dst, src, 16 * sizeof(float)); break;
    case 7: memcpy(dst, src, 7 * sizeof(float)); break;
    case 6: memcpy(dst, src, 6 * sizeof(float)); break;
    case 4: memcpy(dst, src, 4 * sizeof(float)); break;
    default: memcpy(dst, src, (size_t)w * sizeof(float)); break;
    }
}

/* A strided matrix: element (i, j) = data[i * rs + j * cs]; or prepacked. */
typedef struct gemm_operand {
    const float* data;
    int64_t rs, cs;
    const float* packed; /* from gemm_pack_*_full with the same arch, or NULL */
    /* B only, optional (used when packed is NULL): packs rows [p0, p0+kc) x cols
     * [j0, j0+nb) of B (nb a multiple of nr; zeros past n) as nb / nr panels, panel r at
     * dst + r * nr * kc in [kc][nr] layout; e.g. an implicit im2col. */
    void (*pack_b)(const void* ctx, int nr, int64_t j0, int64_t nb, int64_t p0, int64_t kc,
                   float* dst);
    const void* pack_ctx;
    /* A only, optional (used when packed is NULL): packs rows [i0, i0+mb) (mb a multiple of
     * mr; zeros past m) x cols [p0, p0+kc) of A as mb / mr panels, panel r at
     * dst + r * mr * kc in [kc][mr] layout, with pack_ctx. */
    void (*pack_a)(const void* ctx, int mr, int64_t i0, int64_t mb, int64_t p0, int64_t kc,
                   float* dst);
    /* A only, optional (used when packed is NULL): read A in place with arch->ukr_ind, which
     * must not be NULL. */
    const gemm_indirect* ind;
} gemm_operand;

/* Floats of a whole prepacked A [m, k] / B [k, n]. */
size_t gemm_packed_a_floats(const gemm_arch* arch, int64_t m, int64_t k);
size_t gemm_packed_b_floats(const gemm_arch* arch, int64_t k, int64_t n);
void gemm_pack_a_full(const gemm_arch* arch, int64_t m, int64_t k, const float* src, int64_t rs,
                      int64_t cs, float* dst);
void gemm_pack_b_full(const gemm_arch* arch, int64_t k, int64_t n, const float* src, int64_t rs,
                      int64_t cs, float* dst);

/* Scratch floats gemm_run needs with a pool of `threads` threads (per-job packing
 * buffers for operands not prepacked, and the accumulator of a transposed C);
 * a_prepacked also for an A read in place (gemm_indirect). */
size_t gemm_workspace_floats(const gemm_arch* arch, int threads, int64_t m, int64_t n, int64_t k,
                             int a_prepacked, int b_prepacked, int c_trans);

/* Called once per finished block of C as stored: rows [m0, m0+mb), cols [n0, n0+nb)
 * of the stored matrix (for a transposed C, stored row r is GEMM column r); c points at
 * stored element (m0, n0). */
typedef void (*gemm_epilogue_fn)(void* ctx, float* c, int64_t ldc, int64_t m0, int64_t n0,
                                 int64_t mb, int64_t nb);

/* Runs the GEMM (K == 0 gives zeros). C element (i, j) is c[i * ldc + j], or with
 * c_trans c[j * ldc + i]. workspace: gemm_workspace_floats floats for
 * accel_threads_count(env->threads) threads. Threads over env->threads. */
void gemm_run(const accel_env* env, const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
              const gemm_operand* a, const gemm_operand* b, float* c, int64_t ldc, int c_trans,
              float* workspace, gemm_epilogue_fn epilogue, void* epilogue_ctx);

/* C split by columns into parts, each a matrix of its own (ops/fused_linear.c's sibling projections):
 * part q holds columns [col0[q], col0[q + 1]) (col0[0] 0, col0[count] N), element (i, j) at
 * base[q][i * ld[q] + j - col0[q]]; every col0[q] for q < count a multiple of the arch's nr, so
 * no micro-tile straddles two parts. */
#define GEMM_CPARTS_MAX 4
typedef struct gemm_cparts {
    int count;
    int64_t col0[GEMM_CPARTS_MAX + 1];
    float* base[GEMM_CPARTS_MAX];
    int64_t ld[GEMM_CPARTS_MAX];
} gemm_cparts;

/* gemm_run into `parts` (not transposed; K > 0). The epilogue receives c NULL and ldc 0: it
 * finds its columns in the parts itself. */
void gemm_run_parts(const accel_env* env, const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
                    const gemm_operand* a, const gemm_operand* b, const gemm_cparts* parts, float* workspace,
                    gemm_epilogue_fn epilogue, void* epilogue_ctx);

/* Internal thread wrapper (switch point to the pool). */
void accel_cc_parallel(const accel_env* env, int64_t n, accel_range_fn fn, void* ctx);

#endif /* ACCEL_GEMM_H */
