/*
 * CpuAcc's vector kernels for one ISA: every kernel family, then the ISA's accel_kernels table
 * (accel.h). kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c each include this file once, after
 * defining KSUF(name) (appends the ISA's suffix to every name) and KTABLE (the table's name),
 * and CMakeLists.txt compiles them with no ISA flags, with -mavx2 -mfma, and with
 * -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma. So the same source is compiled three times:
 * plain C loops are shaped for the auto-vectorizer of each build (-O3: no calls inside hot loops
 * except libm's powf, lane arrays for reductions, branch-free selects that keep NaN
 * semantics), and the parts written with intrinsics choose them with #if on the compiler's ISA
 * macros (__AVX512F__, __AVX2__, __FMA__), each file saying which.
 *
 * The families, in the order they build on each other:
 *   kernels/math_functions.h         scalar exp/expm1/log/tanh/sigmoid/erf/normal CDF (plain C, branch-free)
 *   kernels/vector_primitives.h       the VW-float vector primitives (AVX-512, AVX2 or plain C under #if)
 *   kernels/elementwise_rows.h  activation, math and binary rows, and their non-temporal forms
 *   kernels/softmax_rows.h       softmax row/column helpers, sum_row
 *   kernels/subplane.h     the strided-window buffer of pooling and depthwise
 *   kernels/pooling_rows.h      pooling NCHW/NHWC
 *   kernels/depthwise_rows.h    depthwise convolution NCHW/NHWC
 *   kernels/box_rows.h          non-maximum suppression's box test (double)
 */
#include "kernels/vector_kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define KINLINE static inline __attribute__((always_inline))
#define KALIGN64 __attribute__((aligned(64)))
#else
#define KINLINE static inline
#define KALIGN64
#endif

#include "kernels/math_functions.h"
#include "kernels/vector_primitives.h"
#include "kernels/elementwise_rows.h"
#include "kernels/softmax_rows.h"
#include "kernels/subplane.h"
#include "kernels/pooling_rows.h"
#include "kernels/depthwise_rows.h"
#include "kernels/box_rows.h"
#include "kernels/half_rows.h"

const accel_kernels KTABLE = {
    .activation = KSUF(activation),
    .binary_row = KSUF(binary_row),
    .max_row = KSUF(max_row),
    .exp_sub_sum = KSUF(exp_sub_sum),
    .scale = KSUF(scale),
    .axpy_row = KSUF(axpy_row),
    .max_cols = KSUF(max_cols),
    .exp_sub_cols = KSUF(exp_sub_cols),
    .mul_cols = KSUF(mul_cols),
    .pool_nchw = KSUF(pool_nchw),
    .pool_nhwc = KSUF(pool_nhwc),
    .sum_row = KSUF(sum_row),
    .dw_nchw = KSUF(dw_nchw),
    .dw_nhwc = KSUF(dw_nhwc),
    .activation_stream = KSUF(activation_stream),
    .binary_row_stream = KSUF(binary_row_stream),
    .math_row = KSUF(math_row),
    .box_suppressed = KSUF(box_suppressed),
    .half_to_float_row = KSUF(half_to_float_row),
    .float_to_half_row = KSUF(float_to_half_row),
    .bfloat16_to_float_row = KSUF(bfloat16_to_float_row),
    .float_to_bfloat16_row = KSUF(float_to_bfloat16_row),
};
