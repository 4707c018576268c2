/* CpuAcc transformer-era kernels, portable build (see kern_tx.h), and the table choice. */
#define KSUF(name) name##_portable
#define KTXTABLE accel_tx_kernels_portable
#include "kern_tx.h"

#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_tx_kernels accel_tx_kernels_avx2;
extern const accel_tx_kernels accel_tx_kernels_avx512;
#endif

const accel_tx_kernels* accel_tx_kernels_for(accel_isa isa) {
#if defined(ACCEL_HAVE_X86_KERNELS)
    if (isa == ACCEL_ISA_AVX512) {
        return &accel_tx_kernels_avx512;
    }
    if (isa == ACCEL_ISA_AVX2) {
        return &accel_tx_kernels_avx2;
    }
#else
    (void)isa;
#endif
    return &accel_tx_kernels_portable;
}
