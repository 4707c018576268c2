/*
 * CpuAcc's integer GEMM (u8 x s8 -> s32), over the micro-kernels of kernels/int8_kernels.h.
 * Private to the quantized product kinds (ops/quantized_products.c).
 *
 * What it computes. The layers ask for acc[i][j] = sum_k (a[i][k] - za_i) * (b[k][j] - zb_j)
 * modulo 2^32, a and b each int8 or uint8 (backend_api.h, QUANTIZED_MATMUL /
 * QUANTIZED_CONVOLUTION). The micro-kernels multiply unsigned a' by signed b'' only, so:
 *   a' = a for uint8 a, a + 128 for int8 a (a ^ 0x80), with za' = za (+ 128);
 *   b'' = b for int8 b, b - 128 for uint8 b (b ^ 0x80), with zb'' = zb (- 128);
 * a' - za' = a - za and b'' - zb'' = b - zb, and, expanding the product,
 *   acc = sum a'b'' - za' * S_j - zb''_j * R_i + K * za' * zb''_j
 *       = sum a'b'' - za' * (S_j - K * zb''_j) - zb''_j * R_i,
 * with S_j = sum_k b''[k][j] (the weights' column sums, at packing time) and R_i =
 * sum_k a'[i][k] (the activations' row sums, while a is packed). Every step is a ring operation
 * modulo 2^32, so acc is exactly the sum CpuRef computes, for any K (no term saturates: see the
 * micro-kernels). compensate (kernels/int8_kernels.h) applies the two correction terms and the
 * bias.
 *
 * Blocking and threads: C in blocks of QGEMM_MC x QGEMM_NC, one block a job of one
 * parallel_for over the pool; a job keeps its block in an int32 buffer over the K loop (blocks
 * of QGEMM_KCG units of k) and hands it, finished, to the caller's epilogue (compensation,
 * requantization, the store). The sums are exact, so no result depends on the blocking or the
 * thread count.
 */
#ifndef ACCEL_QGEMM_H
#define ACCEL_QGEMM_H

#include "accel.h"
#include "kernels/int8_kernels.h"

#include <stddef.h>
#include <stdint.h>

#define QGEMM_MC 96   /* rows of a C block (a multiple of every arch's mr) */
#define QGEMM_NC 256  /* columns of a C block (a multiple of every arch's nr) */
#define QGEMM_KCG 256 /* 32-bit units of k per K block */

/* b'' packed for an arch: ceil(n / nr) panels of [kg][nr] units, kg = ceil(k / kr) rounded up to
 * a multiple of the arch's kg_align; S_j. */
typedef struct qgemm_packed_b {
    int64_t k, n, kg;
    uint32_t* data;
    int32_t* colsum; /* [n] S_j (modulo 2^32) */
} qgemm_packed_b;

/* Packs b[k][j] = b[koff[k] + j * col_stride] (int8 when b_signed, else uint8, shifted to b'')
 * into *out. Returns 0, or -1 when out of memory (*out then holds nothing to free). */
int qgemm_pack_b(const qgemm_arch* arch, const void* b, int b_signed, int64_t k, int64_t n,
                 const int64_t* koff, int64_t col_stride, qgemm_packed_b* out);
void qgemm_packed_b_free(qgemm_packed_b* b);

/* 32-bit units of a packed a of m rows (whole panels of mr rows). */
int64_t qgemm_a_units(const qgemm_arch* arch, int64_t m, int64_t k);

/* Writes row i of a packed a from the k bytes `row` ^ flip (a' values: flip 0x80 turns int8 into
 * a'), the k past K zero; returns R_i (modulo 2^32), or 0 without want_sum (R_i is needed only
 * when some zb'' is not 0). */
int32_t qgemm_pack_a_row(const qgemm_arch* arch, const uint8_t* row, uint8_t flip, int64_t k,
                         uint32_t* a_packed, int64_t i, int want_sum);

/* Row i of a packed a (K = k) as bytes in k order, when the arch's layout keeps a row's 4-byte units one
 * after another (row-major panels, kr 4: AMX), for the caller to write its k a' bytes into
 * directly and then call qgemm_seal_a_row; NULL for other layouts (use qgemm_pack_a_row). */
uint8_t* qgemm_a_row_bytes(const qgemm_arch* arch, uint32_t* a_packed, int64_t i, int64_t k);

/* After the k a' bytes of row i were written at qgemm_a_row_bytes: zeroes the row's bytes past K
 * up to the packed kg; returns R_i (modulo 2^32), or 0 without want_sum. */
int32_t qgemm_seal_a_row(const qgemm_arch* arch, uint32_t* a_packed, int64_t i, int64_t k, int want_sum);

/* Zeroes the rows [m, whole panels) of a packed a (the padding rows of its last panel). */
void qgemm_pad_a(const qgemm_arch* arch, uint32_t* a_packed, int64_t m, int64_t k);

/* A finished block: c[r * ldc + t] holds sum a'b'' of row i0 + r, column j0 + t. The epilogue
 * may overwrite it. Runs on a pool thread; blocks are disjoint. */
typedef void (*qgemm_epilogue_fn)(void* ctx, int32_t* c, int64_t ldc, int64_t i0, int64_t rows,
                                  int64_t j0, int64_t cols);

/* Runs the blocks of C[m][n] = a' b'' over `threads` (NULL: inline). Returns 0, or -1 when a
 * job's block buffer cannot be allocated (the blocks then may be partly done). */
int qgemm_run(accel_threads* threads, const qgemm_arch* arch, int64_t m, int64_t n,
              const uint32_t* a_packed, const qgemm_packed_b* b, qgemm_epilogue_fn epilogue,
              void* ctx);

#endif /* ACCEL_QGEMM_H */
