/*
 * CpuAcc's vector kernels for one ISA: every kernel family, then the ISA's accel_kernels table
 * (accel.h). kern_portable.c, kern_avx2.c and kern_avx512.c each include this file once, after
 * defining KSUF(name) (appends the ISA's suffix to every name) and KTABLE (the table's name),
 * and CMakeLists.txt compiles them with no ISA flags, with -mavx2 -mfma, and with
 * -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma. So the same source is compiled three times:
 * plain C loops are shaped for the auto-vectorizer of each build (-O3: no calls inside hot loops
 * except libm's powf, lane arrays for reductions, branch-free selects that keep NaN
 * semantics), and the parts written with intrinsics choose them with #if on the compiler's ISA
 * macros (__AVX512F__, __AVX2__, __FMA__), each file saying which.
 *
 * The families, in the order they build on each other:
 *   kern_math.h         scalar exp/expm1/log/tanh/sigmoid/erf/normal CDF (plain C, branch-free)
 *   kern_vector.h       the VW-float vector primitives (AVX-512, AVX2 or plain C under #if)
 *   kern_elementwise.h  activation, math and binary rows, and their non-temporal forms
 *   kern_reduce.h       softmax row/column helpers, sum_row
 *   kern_subplane.h     the strided-window buffer of pooling and depthwise
 *   kern_pooling.h      pooling NCHW/NHWC
 *   kern_depthwise.h    depthwise convolution NCHW/NHWC
 */
#include "accel.h"

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

#include "kern_math.h"
#include "kern_vector.h"
#include "kern_elementwise.h"
#include "kern_reduce.h"
#include "kern_subplane.h"
#include "kern_pooling.h"
#include "kern_depthwise.h"

const accel_kernels KTABLE = {
    KSUF(activation), KSUF(binary_row),   KSUF(max_row),  KSUF(exp_sub_sum), KSUF(scale),
    KSUF(max_cols),   KSUF(exp_sub_cols), KSUF(mul_cols), KSUF(pool_nchw),   KSUF(pool_nhwc),
    KSUF(sum_row),    KSUF(dw_nchw),      KSUF(dw_nhwc),  KSUF(activation_stream), KSUF(binary_row_stream),
    KSUF(math_row),
};
