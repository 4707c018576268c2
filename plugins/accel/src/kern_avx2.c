/* CpuAcc vector kernels, avx2 build (see kern_table.h). */
#define KSUF(name) name##_avx2
#define KTABLE accel_kernels_avx2
#include "kern_table.h"
