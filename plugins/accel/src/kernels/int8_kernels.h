/*
 * CpuAcc's int8 kernels: the integer GEMM's micro-kernels (qgemm_arch: AMX-INT8 tdpbusd,
 * AVX512-VNNI vpdpbusd, AVX2 vpmaddwd, portable C) and the row kernels of the quantization kinds (quantize,
 * dequantize, the GEMM's zero-point compensation and requantization), one table per ISA
 * (accel_int8_kernels; cpu.c's accel_kernel_set_for hands out the CPU's). The driver that packs,
 * blocks and threads over the micro-kernels is gemm/qgemm.h.
 *
 * Exactness. Every micro-kernel computes C[i][j] = sum_k a[i][k] * b[k][j] with a unsigned 8-bit
 * (0..255) and b signed 8-bit (-128..127), the sums exact and wrapping modulo 2^32:
 *   AMX (kr 4): tdpbusd adds, per element of a 16 x 16 int32 tile, the products of 64 u8 x s8
 *     pairs, four at a time, to the accumulator in 32 bits without saturation, as vpdpbusd.
 *   VNNI (kr 4): vpdpbusd multiplies four u8 x s8 pairs and adds the four products and the
 *     accumulator in 32 bits without saturation (the "S" form vpdpbusds, which saturates, is
 *     not used); 4 * 255 * 128 < 2^31.
 *   AVX2 and portable (kr 2): a and b widened to int16 at packing time, vpmaddwd (pmaddwd)
 *     multiplies int16 pairs into an exact int32 pair sum (|sum| <= 2 * 255 * 128). There is no
 *     vpmaddubsw path: its u8 x s8 pair sums saturate to int16 (2 * 255 * 127 > 32767).
 * Packed layouts (gemm/qgemm.h): kg = ceil(K / kr) rounded up to a multiple of kg_align; a in
 * panels of mr rows, [kg][mr] 32-bit units (kr consecutive k of one row: 4 bytes, or 2 int16),
 * or [mr][kg] (a_rows); b in panels of nr columns, [kg][nr] units. The k past K are zero.
 */
#ifndef ACCEL_INT8_KERNELS_H
#define ACCEL_INT8_KERNELS_H

#include "accel.h"

#include <stdint.h>

#define QGEMM_MR_MAX 32
#define QGEMM_NR_MAX 32

/* C[0..mr)[0..nr) (row stride ldc, int32) = (accumulate ? C : 0) + a_panel * b_panel over kg
 * units of k (kr k each); lda: units between the rows of a row-major a panel (a_rows), unused
 * otherwise. */
typedef void (*qgemm_ukr_fn)(int64_t kg, const uint32_t* a, int64_t lda, const uint32_t* b, int32_t* c,
                             int64_t ldc, int accumulate);

typedef struct qgemm_arch {
    const char* name; /* "amx", "avx512vnni", "avx2", "portable" (what explain and the tests report) */
    int mr, nr, kr;   /* micro-tile rows and columns, k per 32-bit unit (4: bytes, 2: int16) */
    int kg_align;     /* the packed k, in units, is a multiple of this (AMX's tile steps: 16) */
    int a_rows;       /* 1: a panel holds its mr rows one after another ([mr][kg] units, AMX's
                         tiles read rows); 0: interleaved by unit ([kg][mr]) */
    qgemm_ukr_fn ukr;
} qgemm_arch;

extern const qgemm_arch accel_qgemm_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const qgemm_arch accel_qgemm_avx2;
extern const qgemm_arch accel_qgemm_avx512vnni;
extern const qgemm_arch accel_qgemm_amx;
#endif

/* The row kernels of the quantization kinds (kernels/int8_rows_body.h), each bit for bit what
 * CpuRef computes (plugins/reference/src/quantization.c, quantized_matmul.c). `step` 0: one
 * scale / zero point for the row (s[0], z[0]); 1: element i uses s[i], z[i]. */
typedef struct accel_int8_kernels {
    /* y[i] = saturate(round_half_even(x[i] / s) + z), float32 division; NaN to the lowest value.
     * y int8 (is_signed) or uint8. */
    void (*quantize)(const float* x, void* y, int64_t n, const float* s, const int32_t* z,
                     int step, int is_signed);
    /* y[i] = float(x[i] - z) * s, float32 product; x int8 (is_signed) or uint8. */
    void (*dequantize)(const void* x, float* y, int64_t n, const float* s, const int32_t* z,
                       int step, int is_signed);
    /* The GEMM's zero-point compensation, modulo 2^32: acc[j] += bias[j] - za * d[j] - zb[j] * r
     * (gemm/qgemm.h says why this gives the shifted operands' sums). */
    void (*compensate)(int32_t* acc, int64_t n, const int32_t* bias, const int32_t* d,
                       const int32_t* zb, int32_t za, int32_t r);
    /* y[j] = clamp(round_half_even(double(acc[j]) * m + yz), lo, hi) (m[j] with step 1, m[0]
     * with step 0; a product then a sum, each rounded to double, never fused; NaN to lo), y int8
     * (is_signed) or uint8; lo/hi inside the type's range (a fused ReLU raises lo to yz). */
    void (*requantize)(const int32_t* acc, void* y, int64_t n, const double* m, int step,
                       double yz, double lo, double hi, int is_signed);
    /* *lo = min(*lo, min x), *hi = max(*hi, max x) over x[0..n), NaN left out (DYNAMIC_QUANTIZE_LINEAR). */
    void (*range)(const float* x, int64_t n, float* lo, float* hi);
    /* acc[r * cols + i] += x[r * row_stride + i * col_stride] * w modulo 2^32 for r < rows,
     * i < cols (a depthwise convolution's tap over an output plane: x - x_zero_point in int16,
     * w - w_zero_point). */
    void (*multiply_add)(uint32_t* acc, int64_t rows, int64_t cols, const int16_t* x, int64_t row_stride,
                         int64_t col_stride, int32_t w);
} accel_int8_kernels;

extern const accel_int8_kernels accel_int8_kernels_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_int8_kernels accel_int8_kernels_avx2;
extern const accel_int8_kernels accel_int8_kernels_avx512;
#endif

#endif /* ACCEL_INT8_KERNELS_H */
