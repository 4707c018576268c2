/* CpuAcc vector kernels, avx512 build (see kernels/vector_kernels_body.h). */
#define KSUF(name) name##_avx512
#define KTABLE accel_kernels_avx512
#include "kernels/vector_kernels_body.h"
