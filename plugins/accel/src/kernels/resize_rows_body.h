/* The row kernels of kernels/resize_rows.h, included once per ISA after defining RSUF(name) (the ISA's
 * suffix) and RTABLE (the table's name). Plain C for the auto-vectorizer. */
#include "kernels/resize_rows.h"

static void RSUF(gather)(const float* restrict x, const int32_t* restrict idx, const float* restrict w,
                         int64_t taps, int64_t n, float* restrict y) {
    if (taps == 2) {
        const int32_t* restrict i1 = idx + n;
        const float* restrict w1 = w + n;
        for (int64_t o = 0; o < n; ++o) y[o] = w[o] * x[idx[o]] + w1[o] * x[i1[o]];
        return;
    }
    for (int64_t o = 0; o < n; ++o) y[o] = w[o] * x[idx[o]];
    for (int64_t t = 1; t < taps; ++t) {
        const int32_t* restrict it = idx + t * n;
        const float* restrict wt = w + t * n;
        for (int64_t o = 0; o < n; ++o) y[o] += wt[o] * x[it[o]];
    }
}

static void RSUF(combine)(const float* const* rows, const float* wt, int64_t taps, float* restrict y, int64_t n) {
    const float* restrict r0 = rows[0];
    const float w0 = wt[0];
    if (taps == 2) {
        const float* restrict r1 = rows[1];
        const float w1 = wt[1];
        for (int64_t o = 0; o < n; ++o) y[o] = w0 * r0[o] + w1 * r1[o];
        return;
    }
    for (int64_t o = 0; o < n; ++o) y[o] = w0 * r0[o];
    for (int64_t t = 1; t < taps; ++t) {
        const float* restrict rt = rows[t];
        const float w1 = wt[t];
        for (int64_t o = 0; o < n; ++o) y[o] += w1 * rt[o];
    }
}

const accel_resize_rows RTABLE = {
    .gather = RSUF(gather),
    .combine = RSUF(combine),
};
