/*
 * CpuAcc's vector kernels of the memory-bound layers (accel_kernels): activation, elementwise
 * binary, softmax rows and columns, pooling, depthwise convolution, the elementwise math
 * functions and non-maximum suppression's box test, one table per ISA. vector_kernels_body.h holds the bodies and the table, compiled
 * once per ISA by vector_kernels_portable.c, _avx2.c and _avx512.c; the CPU's table is
 * accel_kernel_set_for(isa)->vector (accel.h).
 */
#ifndef ACCEL_VECTOR_KERNELS_H
#define ACCEL_VECTOR_KERNELS_H

#include "accel.h"

#include <stdint.h>

/* Pooling parameters of one layer, resolved for the kernels. */
typedef struct accel_pooling_params {
    int kind;                      /* pn_pooling_kind */
    int include_padding;           /* AVERAGE with PN_PADDING_INCLUDE */
    float p;                       /* LP order */
    int64_t ih, iw, oh, ow, c;     /* input/output spatial sizes; channels (NHWC rows) */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl, pb, pr;        /* padding */
    int stream_out;                /* store the output non-temporally (accel_streams) */
} accel_pooling_params;

/* Depthwise convolution parameters of one layer, resolved for the kernels (weights, bias and
 * addend are passed per call). */
typedef struct accel_dw_params {
    int64_t ih, iw, oh, ow, c;     /* input/output spatial sizes; channels (NHWC, multiplier 1) */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl;                /* padding before (after: implied by oh/ow) */
    const pn_activation_desc* act; /* the fused activation, or NULL */
} accel_dw_params;

/* Floats of the buffer the NCHW pooling and depthwise kernels keep on the stack: the padded
 * input of a block of output rows split into stride sub-planes (layers that cannot fit one
 * output row take a direct fallback). */
#define ACCEL_ROWBUF_FLOATS 12288
/* Window taps (kh * kw) the sub-plane pooling and the depthwise kernels take at most
 * (dw_nhwc requires it; the NCHW kernels fall back to a direct loop above it). */
#define ACCEL_TAPS_MAX 64

/* The elementwise functions of kernels/math_functions.h (accel_kernels.math_row); accuracy in README.md. */
typedef enum accel_math_fn {
    ACCEL_MATH_EXP = 0,
    ACCEL_MATH_EXPM1 = 1,
    ACCEL_MATH_LOG = 2,
    ACCEL_MATH_TANH = 3,
    ACCEL_MATH_SIGMOID = 4,
    ACCEL_MATH_ERF = 5,
    ACCEL_MATH_PHI = 6 /* the standard normal CDF (1 + erf(x / sqrt 2)) / 2, GELU's factor */
} accel_math_fn;

typedef struct accel_kernels {
    /* y[i] = act(x[i]) (x == y allowed). */
    void (*activation)(const pn_activation_desc* act, const float* x, float* y, int64_t n);
    /* y[i] = a[i*sa] op b[i*sb], sa/sb in {0, 1} (y may equal a or b when its stride is 1). */
    void (*binary_row)(pn_binary_op op, const float* a, int sa, const float* b, int sb, float* y,
                       int64_t n);
    /* Max of x[0..n) (NaN wins), -inf for n == 0. */
    float (*max_row)(const float* x, int64_t n);
    /* y[i] = exp(x[i] - m); returns the sum of y. */
    float (*exp_sub_sum)(const float* x, float m, float* y, int64_t n);
    /* y[i] *= s. */
    void (*scale)(float* y, float s, int64_t n);
    /* y[i] += a * x[i] (fused into one rounding where the kernel set has FMA). */
    void (*axpy_row)(float* y, float a, const float* x, int64_t n);
    /* Column forms for softmax over a non-last axis: m[i] = max(m[i], x[i]) (NaN wins),
     * y[i] = exp(x[i] - m[i]), s[i] += y[i], y[i] *= r[i]. */
    void (*max_cols)(float* m, const float* x, int64_t n);
    void (*exp_sub_cols)(const float* x, const float* m, float* y, float* s, int64_t n);
    void (*mul_cols)(float* y, const float* r, int64_t n);
    /* Pooling: NCHW output rows [oy0, oy1) of one plane; NHWC output rows [oy0, oy1) of one
     * image (x/y point at the image). */
    void (*pool_nchw)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                      int64_t oy1);
    void (*pool_nhwc)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                      int64_t oy1);
    /* Sum of x[0..n) (lane-parallel partial sums: a fixed order for a given n). */
    float (*sum_row)(const float* x, int64_t n);
    /* Depthwise NCHW: output rows [oy0, oy1) of one output plane y = bias + conv(x, w) (x is
     * the input plane, w the kh*kw weights), + addend plane (or NULL), then dp->act. */
    void (*dw_nchw)(const accel_dw_params* dp, const float* x, const float* w, float bias,
                    const float* addend, float* y, int64_t oy0, int64_t oy1);
    /* Depthwise NHWC with multiplier 1 and kh * kw <= ACCEL_TAPS_MAX: output rows [oy0, oy1) of one image (x, y, addend at
     * the image); wt is the weights transposed to [kh*kw][c]; bias [c] or NULL. */
    void (*dw_nhwc)(const accel_dw_params* dp, const float* x, const float* wt, const float* bias,
                    const float* addend, float* y, int64_t oy0, int64_t oy1);
    /* activation and binary_row (then act, when not NULL) storing y non-temporally, for
     * layers larger than the last-level cache (accel_op.stream_out). */
    void (*activation_stream)(const pn_activation_desc* act, const float* x, float* y, int64_t n);
    void (*binary_row_stream)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                              const pn_activation_desc* act, float* y, int64_t n);
    /* y[i] = fn(x[i]) (x == y allowed): the functions the activations are built from, one
     * row at a time (tests/cpuacc/test_vector_math.py measures their accuracy through it). */
    void (*math_row)(accel_math_fn fn, const float* x, float* y, int64_t n);
    /* 1 when one of the n boxes (x0, y0, x1, y1, area: double corners and areas) suppresses the
     * box q_* in non-maximum suppression at IoU `threshold`, exactly as CpuRef decides
     * (kernels/box_rows.h), else 0. */
    int (*box_suppressed)(const double* x0, const double* y0, const double* x1, const double* y1,
                          const double* area, int64_t n, double q_x0, double q_y0, double q_x1,
                          double q_y1, double q_area, double threshold);
    /* float16 <-> float32 rows, bit for bit pn_half_to_float / pn_float_to_half (half_rows.h). */
    void (*half_to_float_row)(const uint16_t* x, float* y, int64_t n);
    void (*float_to_half_row)(const float* x, uint16_t* y, int64_t n);
    /* bfloat16 <-> float32 rows, bit for bit pn_convert's (half_rows.h). */
    void (*bfloat16_to_float_row)(const uint16_t* x, float* y, int64_t n);
    void (*float_to_bfloat16_row)(const float* x, uint16_t* y, int64_t n);
} accel_kernels;


extern const accel_kernels accel_kernels_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_kernels accel_kernels_avx2;
extern const accel_kernels accel_kernels_avx512;
#endif

#endif /* ACCEL_VECTOR_KERNELS_H */
