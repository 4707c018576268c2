/* CpuAcc transformer-era kernels, avx512 build (see kern_tx.h). */
#define KSUF(name) name##_avx512
#define KTXTABLE accel_tx_kernels_avx512
#include "kern_tx.h"
