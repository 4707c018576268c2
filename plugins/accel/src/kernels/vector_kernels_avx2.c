/* CpuAcc vector kernels, avx2 build (see kernels/vector_kernels_body.h). */
#define KSUF(name) name##_avx2
#define KTABLE accel_kernels_avx2
#include "kernels/vector_kernels_body.h"
