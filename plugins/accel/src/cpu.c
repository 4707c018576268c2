/* CpuAcc CPU feature detection: the best kernel set compiled in and supported here. */
#include "accel.h"

accel_isa accel_detect_isa(void) {
#if defined(ACCEL_HAVE_X86_KERNELS) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("fma")) {
        return ACCEL_ISA_AVX512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        return ACCEL_ISA_AVX2;
    }
#endif
    return ACCEL_ISA_PORTABLE;
}

const char* accel_isa_name(accel_isa isa) {
    switch (isa) {
    case ACCEL_ISA_AVX512: return "avx512";
    case ACCEL_ISA_AVX2: return "avx2";
    case ACCEL_ISA_PORTABLE: break;
    }
    return "portable";
}
