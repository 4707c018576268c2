/* CpuAcc vector kernels, avx512 build (see kern_table.h). */
#define KSUF(name) name##_avx512
#define KTABLE accel_kernels_avx512
#include "kern_table.h"
