/*
 * CpuAcc's row kernels of the separable Resize (resize.c), written once in kern_resize_rows.h and
 * compiled per ISA (resize_rows.c: portable, resize_rows_avx2.c, resize_rows_avx512.c), so the
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

/* The kernels of `isa` (portable when it is not compiled in). */
const accel_resize_rows* accel_resize_rows_for(accel_isa isa);

#endif /* ACCEL_RESIZE_ROWS_H */
