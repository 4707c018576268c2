/*
 * CpuAcc's row kernels: the vector rows behind NORMALIZATION (ops/normalization.c),
 * REDUCE (ops/reduce.c), ELEMENTWISE_UNARY (ops/unary.c) and the fused attention (ops/attention.c), in
 * one table per ISA (accel_row_kernels). kernels/row_kernels_body.h holds the bodies, written once on the
 * vector primitives of kernels/vector_primitives.h and the math of kernels/math_functions.h, and compiled three times:
 * kernels/row_kernels_portable.c (no ISA flags), kernels/row_kernels_avx2.c (-mavx2 -mfma), kernels/row_kernels_avx512.c
 * (-mavx512f ... -mfma), each with -fno-trapping-math -fno-math-errno as CpuAcc's other
 * kernel files.
 *
 * Floats only; every row function reads and writes exactly the elements it is given (no
 * read past the end of a tensor), except where a comment says a buffer is padded.
 */
#ifndef ACCEL_ROW_H
#define ACCEL_ROW_H

#include "accel.h"

#include <stdint.h>

/* The reductions of one contiguous run or of column rows (ops/reduce.c). */
typedef enum accel_row_red {
    ACCEL_ROW_SUM = 0,     /* sum x */
    ACCEL_ROW_SUMSQ = 1,   /* sum x^2 */
    ACCEL_ROW_ABS = 2,     /* sum |x| */
    ACCEL_ROW_MAX = 3,     /* max x, NaN wins */
    ACCEL_ROW_MIN = 4,     /* min x, NaN wins */
    ACCEL_ROW_PROD = 5,    /* product of x */
    ACCEL_ROW_EXPSUM = 6   /* sum exp(x - m) (m per run, or per column) */
} accel_row_red;

/* Rows of the fused attention (ops/attention.c) are taken ACCEL_ROW_MR at a time. */
#define ACCEL_ROW_MR 4

typedef struct accel_row_kernels {
    int vw; /* floats per vector: attention pads its packed rows to multiples of 2 * vw */

    /* ---- NORMALIZATION ---- */
    /* LAYER (rms 0) or RMS (rms 1) over `rows` rows of n contiguous floats: y = (x - mean)
     * / sqrt(var + eps) * scale[k] + bias[k] (RMS: x / sqrt(mean(x^2) + eps) * ...), scale
     * and bias n floats each (bias may be NULL). Means and variances in double from float
     * vector partial sums; two passes over each row (x == y allowed). */
    void (*norm_rows)(int rms, const float* x, float* y, int64_t rows, int64_t n,
                      const float* scale, const float* bias, float eps);
    /* The mean and 1 / sqrt(var + eps) of n contiguous floats (GROUP normalization). */
    void (*moments)(const float* x, int64_t n, float eps, float* mean, float* rstd);
    /* y[i] = (x[i] - c) * a + b (x == y allowed). */
    void (*affine_row)(const float* x, float* y, int64_t n, float c, float a, float b);
    /* The fused linear layer's epilogue (ops/fused_linear.c) on `rows` rows of n floats, row r at y + r *
     * ldy: y[j] = y[j] + bias[j], then y[j] = y[j] + add[r * ldadd + j] (each rounded, the
     * unfused Adds' order); bias or add may be NULL. */
    void (*add_rows)(float* y, int64_t ldy, int64_t rows, int64_t n, const float* bias, const float* add,
                     int64_t ldadd);
    /* SELECT (ops/mask_ops.c) of two scalars by a BOOL condition: y[i] = c[i] != 0 ? a : b. */
    void (*select_row)(const uint8_t* c, int64_t n, float a, float b, float* y);

    /* ---- ELEMENTWISE_UNARY ---- */
    /* y[i] = op(x[i]) for the float operations ops/unary.c accepts (x == y allowed). */
    void (*unary_row)(pn_unary_op op, const float* x, float* y, int64_t n);

    /* ---- REDUCE ---- */
    /* The reduction `red` of one contiguous run x[0..n) (EXPSUM: of exp(x - m)), accumulated
     * in float vector lanes over blocks and in double across blocks. MAX/MIN: -inf/+inf for
     * n == 0. */
    double (*reduce_run)(accel_row_red red, const float* x, int64_t n, float m);
    /* Column form: acc[i] = acc[i] (+, *, max, min) f(x[i]) for i < n (EXPSUM: exp(x[i] -
     * m[i])). MAX/MIN keep a NaN once one reached acc[i]. */
    void (*reduce_cols)(accel_row_red red, double* acc, const float* x, int64_t n, const double* m);
    /* ARG_MAX (is_min 0) / ARG_MIN over the n values x[i * stride]: the first (last) extreme
     * index, a NaN counting as more extreme than every number (the first NaN's, or the last
     * one's with last). */
    int64_t (*arg_run)(int is_min, int last, const float* x, int64_t n, int64_t stride);
    /* Column form of arg_run: best[i], idx[i] updated with x[i] at position l. */
    void (*arg_cols)(int is_min, int last, float* best, int64_t* idx, const float* x, int64_t n,
                     int64_t l);

    /* ---- Fused attention ---- */
    /* s[r][j] = scale * sum_p q(r, p) kt[p][j] (+ mask(r, j)) for r < nr (<= ACCEL_ROW_MR), j
     * < n, with q(r, p) = q[r * qrs + p * qcs] and mask(r, j) = mask[r * mrs + j] (mask
     * contiguous in j; NULL: none). kt: d rows of ldk floats, ldk a multiple of 2 * vw
     * (zeros past n); s: rows of lds >= ldk floats (written up to ldk). m[r]: the largest
     * s[r][j], j < n, found while the tile is in registers; NaN when one is NaN or all are
     * -inf. */
    void (*attn_scores)(int64_t nr, int64_t n, int64_t d, const float* q, int64_t qrs, int64_t qcs,
                        const float* kt, int64_t ldk, float scale, const float* mask, int64_t mrs,
                        float* s, int64_t lds, float* m);
    /* Softmax numerators of nr (<= ACCEL_ROW_MR) rows of n scores, row r at s + r * lds with
     * its largest m[r] (attn_scores'): s[j] = exp(s[j] - m[r]), inv[r] = 1 / their sum (a row
     * with a NaN, or all -inf, NaN throughout, as the unfused softmax gives). */
    void (*attn_softmax_rows)(float* s, int64_t nr, int64_t n, int64_t lds, const float* m, float* inv);
    /* o(r, c) = inv[r] * sum_j p[r][j] v[j][c] for r < nr (<= ACCEL_ROW_MR), c < dv; p rows of
     * ldp floats, v: n rows of ldv floats (a multiple of vw, zeros past dv); o(r, c) at o[r *
     * ors + c * ocs]. */
    void (*attn_pv)(int64_t nr, int64_t n, int64_t dv, const float* p, int64_t ldp, const float* v,
                    int64_t ldv, const float* inv, float* o, int64_t ors, int64_t ocs);
} accel_row_kernels;

/* The table of each ISA (row_kernels_portable.c, _avx2.c, _avx512.c); the CPU's is
 * accel_kernel_set_for(isa)->rows (accel.h). */
extern const accel_row_kernels accel_row_kernels_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_row_kernels accel_row_kernels_avx2;
extern const accel_row_kernels accel_row_kernels_avx512;
#endif

#endif /* ACCEL_ROW_H */
