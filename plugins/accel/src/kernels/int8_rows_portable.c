/* CpuAcc quantization row kernels, portable build (see kernels/int8_rows_body.h). */
#define KSUF(name) int8_##name##_portable
#define KINT8TABLE accel_int8_kernels_portable
#include "kernels/int8_rows_body.h"
