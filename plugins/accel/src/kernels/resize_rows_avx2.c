/* CpuAcc Resize row kernels, avx2 build (see kernels/resize_rows.h). */
#define RSUF(name) resize_##name##_avx2
#define RTABLE accel_resize_rows_avx2
#include "kernels/resize_rows_body.h"
