/* CpuAcc row kernels, avx512 build (see kernels/row_kernels_body.h). */
#define KSUF(name) name##_avx512
#define KROWTABLE accel_row_kernels_avx512
#include "kernels/row_kernels_body.h"
