/* CpuAcc vector kernels, portable build (see kern_impl.h). */
#define KSUF(name) name##_portable
#define KTABLE accel_kernels_portable
#include "kern_impl.h"
