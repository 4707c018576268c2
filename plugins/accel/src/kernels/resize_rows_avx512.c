/* CpuAcc Resize row kernels, avx512 build (see kernels/resize_rows.h). */
#define RSUF(name) resize_##name##_avx512
#define RTABLE accel_resize_rows_avx512
#include "kernels/resize_rows_body.h"
