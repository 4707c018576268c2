/* CpuAcc Resize row kernels, portable build, and the choice of a build per ISA (resize_rows.h). */
#define RSUF(name) resize_##name##_portable
#define RTABLE accel_resize_rows_portable
#include "kern_resize_rows.h"

#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_resize_rows accel_resize_rows_avx2;
extern const accel_resize_rows accel_resize_rows_avx512;
#endif

const accel_resize_rows* accel_resize_rows_for(accel_isa isa) {
#if defined(ACCEL_HAVE_X86_KERNELS)
    if (isa == ACCEL_ISA_AVX512) {
        return &accel_resize_rows_avx512;
    }
    if (isa == ACCEL_ISA_AVX2) {
        return &accel_resize_rows_avx2;
    }
#else
    (void)isa;
#endif
    return &accel_resize_rows_portable;
}
