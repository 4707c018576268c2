/* CpuAcc quantization row kernels, avx512 build (see kernels/int8_rows_body.h). */
#define KSUF(name) int8_##name##_avx512
#define KINT8TABLE accel_int8_kernels_avx512
#include "kernels/int8_rows_body.h"
