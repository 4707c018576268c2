/* CpuAcc vector kernels, portable build (see kern_table.h). */
#define KSUF(name) name##_portable
#define KTABLE accel_kernels_portable
#include "kern_table.h"
