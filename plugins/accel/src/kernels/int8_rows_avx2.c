/* CpuAcc quantization row kernels, avx2 build (see kernels/int8_rows_body.h). */
#define KSUF(name) int8_##name##_avx2
#define KINT8TABLE accel_int8_kernels_avx2
#include "kernels/int8_rows_body.h"
