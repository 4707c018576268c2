/* CpuAcc Resize row kernels, portable build (kernels/resize_rows.h). */
#define RSUF(name) resize_##name##_portable
#define RTABLE accel_resize_rows_portable
#include "kernels/resize_rows_body.h"
