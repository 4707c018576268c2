/*
 * CpuAcc's row kernels of the separable Resize (ops/resize.c), written once in kernels/resize_rows_body.h and
 * compiled per ISA (kernels/resize_rows_portable.c: portable, kernels/resize_rows_avx2.c, kernels/resize_rows_avx512.c), so the
 * auto-vectorizer uses the ISA's gathers and widest vectors.
 */
#ifndef ACCEL_RESIZE_ROWS_H
#define ACCEL_RESIZE_ROWS_H

#include "accel.h"

#include <stdint.h>

typedef struct accel_resize_rows {
    /* y[o] = sum over t < taps of w[t * n + o] * x[idx[t * n + o]], o < n (the tables tap-major;
     * summed tap by tap in order). */
    void (*gather)(const float* x, const int32_t* idx, const float* w, int64_t taps, int64_t n, float* y);
    /* y[o] = sum over t < taps of wt[t] * rows[t][o], o < n (tap by tap in order). */
    void (*combine)(const float* const* rows, const float* wt, int64_t taps, float* y, int64_t n);
} accel_resize_rows;

/* The table of each ISA (resize_rows_portable.c, _avx2.c, _avx512.c); the CPU's is
 * accel_kernel_set_for(isa)->resize (accel.h). */
extern const accel_resize_rows accel_resize_rows_portable;
#if defined(ACCEL_HAVE_X86_KERNELS)
extern const accel_resize_rows accel_resize_rows_avx2;
extern const accel_resize_rows accel_resize_rows_avx512;
#endif

#endif /* ACCEL_RESIZE_ROWS_H */
