/* CpuAcc's CPU: feature detection (the best ISA compiled in and supported here), the last-level
 * cache, and the one place that maps an ISA to its kernel tables (accel_kernel_set_for). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall() (the AMX permission request) under a strict -std=c11 too */
#endif
#include "accel.h"
#include "kernels/gemm_kernels.h"
#include "kernels/int8_kernels.h"
#include "kernels/resize_rows.h"
#include "kernels/row_kernels.h"
#include "kernels/vector_kernels.h"

#include <stdio.h>

#if defined(ACCEL_HAVE_X86_KERNELS) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__x86_64__)
#include <cpuid.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ACCEL_AMX_PROBE 1
#define ARCH_REQ_XCOMP_PERM 0x1023 /* Linux 5.16+ */
#define XFEATURE_XTILEDATA 18
#endif

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

int64_t accel_llc_bytes(void) {
    int64_t best = 0;
    for (int i = 0; i < 8; ++i) {
        char path[80];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE* f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        long long value = 0;
        char unit = 0;
        if (fscanf(f, "%lld%c", &value, &unit) >= 1 && value > 0) {
            int64_t bytes = (int64_t)value;
            bytes *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? 1024 * 1024 * 1024 : 1;
            best = bytes > best ? bytes : best;
        }
        fclose(f);
    }
    return best > 0 ? best : (int64_t)32 << 20;
}

/* Every table of one ISA, by the suffix its builds give their tables (kernels/). */
#define ACCEL_KERNEL_SET(ISA, SUFFIX, QGEMM, NCHWC)                                               \
    {.isa = ISA,                                                                                 \
     .vector = &accel_kernels_##SUFFIX,                                                          \
     .rows = &accel_row_kernels_##SUFFIX,                                                        \
     .resize = &accel_resize_rows_##SUFFIX,                                                      \
     .gemm = &accel_gemm_##SUFFIX,                                                               \
     .qgemm = &accel_qgemm_##QGEMM,                                                              \
     .int8 = &accel_int8_kernels_##SUFFIX,                                                       \
     .nchwc = NCHWC}

static const accel_kernel_set KERNEL_SETS[] = {
    [ACCEL_ISA_PORTABLE] = ACCEL_KERNEL_SET(ACCEL_ISA_PORTABLE, portable, portable, 0),
#if defined(ACCEL_HAVE_X86_KERNELS)
    [ACCEL_ISA_AVX2] = ACCEL_KERNEL_SET(ACCEL_ISA_AVX2, avx2, avx2, 0),
    [ACCEL_ISA_AVX512] = ACCEL_KERNEL_SET(ACCEL_ISA_AVX512, avx512, avx512vnni, 1),
#endif
};

#if defined(ACCEL_HAVE_X86_KERNELS)
/* The AVX-512 set of a CPU without AVX512-VNNI (Skylake-SP): its integer GEMM is AVX2's. */
static const accel_kernel_set AVX512_WITHOUT_VNNI = ACCEL_KERNEL_SET(ACCEL_ISA_AVX512, avx512, avx2, 1);

static int cpu_has_avx512_vnni(void) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}
#endif

const accel_kernel_set* accel_kernel_set_for(accel_isa isa) {
    size_t i = (size_t)isa;
#if defined(ACCEL_HAVE_X86_KERNELS)
    if (isa == ACCEL_ISA_AVX512 && !cpu_has_avx512_vnni()) {
        return &AVX512_WITHOUT_VNNI;
    }
#endif
    if (i < sizeof(KERNEL_SETS) / sizeof(KERNEL_SETS[0]) && KERNEL_SETS[i].vector != NULL) {
        return &KERNEL_SETS[i];
    }
    return &KERNEL_SETS[ACCEL_ISA_PORTABLE];
}

#if defined(ACCEL_AMX_PROBE)
static int amx_usable;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

/* CPUID leaf 7 EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), then Linux's permission for the tile
 * data (without it the first tile instruction faults). */
static void amx_probe(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) {
        return;
    }
    amx_usable = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#endif

int accel_amx_usable(void) {
#if defined(ACCEL_AMX_PROBE)
    pthread_once(&amx_once, amx_probe);
    return amx_usable;
#else
    return 0;
#endif
}

const struct qgemm_arch* accel_qgemm_for(const accel_env* env) {
#if defined(ACCEL_HAVE_X86_KERNELS)
    if (env->amx && env->isa == ACCEL_ISA_AVX512 && accel_amx_usable()) {
        return &accel_qgemm_amx;
    }
#endif
    return accel_kernel_set_for(env->isa)->qgemm;
}
