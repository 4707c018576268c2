/* CpuAcc Resize row kernels, avx512 build (see resize_rows.h). */
#define RSUF(name) resize_##name##_avx512
#define RTABLE accel_resize_rows_avx512
#include "kern_resize_rows.h"
