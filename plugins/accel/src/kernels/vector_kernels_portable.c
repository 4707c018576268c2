/* CpuAcc vector kernels, portable build (see kernels/vector_kernels_body.h). */
#define KSUF(name) name##_portable
#define KTABLE accel_kernels_portable
#include "kernels/vector_kernels_body.h"
