/* Driver for tests/cpuacc/test_vector_math.py: CpuAcc's elementwise math and activation rows
 * (kern_math.h, kern_elementwise.h) called straight from the kernel tables of each ISA, which the
 * test compiles from plugins/accel/src/kern_{portable,avx2,avx512}.c with the flags
 * plugins/accel/CMakeLists.txt gives them and links with this file into a shared library (so
 * the functions measured are the very code the plugin runs, over millions of values per call).
 * isa: 0 portable, 1 avx2, 2 avx512 (the caller checks that the CPU has it); returns 0, or -1
 * for an ISA this build does not have. */
#include "kernels/vector_kernels.h"

extern const accel_kernels accel_kernels_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_kernels accel_kernels_avx2;
extern const accel_kernels accel_kernels_avx512;
#endif

static const accel_kernels* table(int isa) {
    switch (isa) {
    case 0: return &accel_kernels_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
    case 1: return &accel_kernels_avx2;
    case 2: return &accel_kernels_avx512;
#endif
    default: return NULL;
    }
}

int vm_math(int isa, int fn, const float* x, float* y, int64_t n) {
    const accel_kernels* k = table(isa);
    if (k == NULL) {
        return -1;
    }
    k->math_row((accel_math_fn)fn, x, y, n);
    return 0;
}

int vm_activation(int isa, int kind, float alpha, float beta, const float* x, float* y, int64_t n) {
    const accel_kernels* k = table(isa);
    if (k == NULL) {
        return -1;
    }
    pn_activation_desc act = {sizeof(pn_activation_desc), (pn_activation_kind)kind, alpha, beta};
    k->activation(&act, x, y, n);
    return 0;
}
