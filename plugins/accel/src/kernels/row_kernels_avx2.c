/* CpuAcc row kernels, avx2 build (see kernels/row_kernels_body.h). */
#define KSUF(name) name##_avx2
#define KROWTABLE accel_row_kernels_avx2
#include "kernels/row_kernels_body.h"
