/* CpuAcc row kernels, portable build (see kernels/row_kernels_body.h). */
#define KSUF(name) name##_portable
#define KROWTABLE accel_row_kernels_portable
#include "kernels/row_kernels_body.h"
