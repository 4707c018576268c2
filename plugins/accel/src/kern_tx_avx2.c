/* CpuAcc transformer-era kernels, avx2 build (see kern_tx.h). */
#define KSUF(name) name##_avx2
#define KTXTABLE accel_tx_kernels_avx2
#include "kern_tx.h"
