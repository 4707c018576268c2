/*
 * CpuAcc's quantization row kernels (accel_int8_kernels of kernels/int8_kernels.h), written once
 * and compiled per ISA: kernels/int8_rows_portable.c, _avx2.c and _avx512.c define KSUF(name)
 * and KINT8TABLE and include this file. Plain loops shaped for the auto-vectorizer (branch-free
 * selects; rint is the ISA's round-to-nearest-even instruction). The files are built with
 * -ffp-contract=off (CMakeLists.txt): requantize's product and sum are two roundings, as in
 * CpuRef, never one fused multiply-add, so every kernel gives CpuRef's bits.
 */
#include "kernels/int8_kernels.h"

#include <math.h>
#include <stdint.h>

static void KSUF(quantize)(const float* x, void* y, int64_t n, const float* s, const int32_t* z,
                           int step, int is_signed) {
    const float low = is_signed ? -128.0f : 0.0f, high = is_signed ? 127.0f : 255.0f;
    if (step == 0) { /* one scale: the clamp bounds shifted by the zero point, exact integers */
        const float s0 = s[0];
        const int32_t z0 = z[0];
        const float lo = low - (float)z0, hi = high - (float)z0;
        if (is_signed) {
            int8_t* o = (int8_t*)y;
            for (int64_t i = 0; i < n; ++i) {
                float q = rintf(x[i] / s0);
                q = q > lo ? q : lo; /* NaN: lo */
                q = q < hi ? q : hi;
                o[i] = (int8_t)((int32_t)q + z0);
            }
        } else {
            uint8_t* o = (uint8_t*)y;
            for (int64_t i = 0; i < n; ++i) {
                float q = rintf(x[i] / s0);
                q = q > lo ? q : lo;
                q = q < hi ? q : hi;
                o[i] = (uint8_t)((int32_t)q + z0);
            }
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) { /* a scale per element (per axis, the axis innermost) */
        float q = rintf(x[i] / s[i]);
        const float lo = low - (float)z[i], hi = high - (float)z[i];
        q = q > lo ? q : lo;
        q = q < hi ? q : hi;
        const int32_t v = (int32_t)q + z[i];
        if (is_signed) {
            ((int8_t*)y)[i] = (int8_t)v;
        } else {
            ((uint8_t*)y)[i] = (uint8_t)v;
        }
    }
}

static void KSUF(dequantize)(const void* x, float* y, int64_t n, const float* s, const int32_t* z,
                             int step, int is_signed) {
    if (step == 0) {
        const float s0 = s[0];
        const int32_t z0 = z[0];
        if (is_signed) {
            const int8_t* v = (const int8_t*)x;
            for (int64_t i = 0; i < n; ++i) {
                y[i] = (float)((int32_t)v[i] - z0) * s0;
            }
        } else {
            const uint8_t* v = (const uint8_t*)x;
            for (int64_t i = 0; i < n; ++i) {
                y[i] = (float)((int32_t)v[i] - z0) * s0;
            }
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        const int32_t v = is_signed ? (int32_t)((const int8_t*)x)[i] : (int32_t)((const uint8_t*)x)[i];
        y[i] = (float)(v - z[i]) * s[i];
    }
}

static void KSUF(compensate)(int32_t* acc, int64_t n, const int32_t* bias, const int32_t* d,
                             const int32_t* zb, int32_t za, int32_t r) {
    const uint32_t uza = (uint32_t)za, ur = (uint32_t)r;
    for (int64_t j = 0; j < n; ++j) { /* unsigned: wraps modulo 2^32, as CpuRef's sums */
        uint32_t v = (uint32_t)acc[j] + (uint32_t)bias[j] - uza * (uint32_t)d[j] - (uint32_t)zb[j] * ur;
        acc[j] = (int32_t)v;
    }
}

static void KSUF(requantize)(const int32_t* acc, void* y, int64_t n, const double* m, int step,
                             double yz, double lo, double hi, int is_signed) {
    if (step == 0) {
        const double m0 = m[0];
        for (int64_t j = 0; j < n; ++j) {
            double v = (double)acc[j] * m0;
            v = v + yz;
            v = rint(v);
            v = v > lo ? v : lo; /* NaN: lo */
            v = v < hi ? v : hi;
            if (is_signed) {
                ((int8_t*)y)[j] = (int8_t)(int32_t)v;
            } else {
                ((uint8_t*)y)[j] = (uint8_t)(int32_t)v;
            }
        }
        return;
    }
    if (is_signed) {
        int8_t* o = (int8_t*)y;
        for (int64_t j = 0; j < n; ++j) {
            double v = (double)acc[j] * m[j];
            v = v + yz;
            v = rint(v);
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            o[j] = (int8_t)(int32_t)v;
        }
    } else {
        uint8_t* o = (uint8_t*)y;
        for (int64_t j = 0; j < n; ++j) {
            double v = (double)acc[j] * m[j];
            v = v + yz;
            v = rint(v);
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            o[j] = (uint8_t)(int32_t)v;
        }
    }
}

static void KSUF(range)(const float* x, int64_t n, float* lo, float* hi) {
    float l[16], h[16]; /* lanes, so the loop vectorizes */
    for (int t = 0; t < 16; ++t) {
        l[t] = *lo;
        h[t] = *hi;
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int t = 0; t < 16; ++t) {
            const float v = x[i + t];
            l[t] = v < l[t] ? v : l[t]; /* NaN compares false: left out */
            h[t] = v > h[t] ? v : h[t];
        }
    }
    for (; i < n; ++i) {
        l[0] = x[i] < l[0] ? x[i] : l[0];
        h[0] = x[i] > h[0] ? x[i] : h[0];
    }
    for (int t = 0; t < 16; ++t) {
        *lo = l[t] < *lo ? l[t] : *lo;
        *hi = h[t] > *hi ? h[t] : *hi;
    }
}

static void KSUF(multiply_add)(uint32_t* acc, int64_t rows, int64_t cols, const int16_t* x, int64_t row_stride,
                               int64_t col_stride, int32_t w) {
    /* unsigned sums: they wrap modulo 2^32, as CpuRef's */
    for (int64_t r = 0; r < rows; ++r, acc += cols, x += row_stride) {
        if (col_stride == 1) {
            for (int64_t i = 0; i < cols; ++i) {
                acc[i] += (uint32_t)((int32_t)x[i] * w);
            }
        } else if (col_stride == 2) {
            for (int64_t i = 0; i < cols; ++i) {
                acc[i] += (uint32_t)((int32_t)x[2 * i] * w);
            }
        } else {
            for (int64_t i = 0; i < cols; ++i) {
                acc[i] += (uint32_t)((int32_t)x[i * col_stride] * w);
            }
        }
    }
}

const accel_int8_kernels KINT8TABLE = {
    KSUF(quantize),
    KSUF(dequantize),
    KSUF(compensate),
    KSUF(requantize),
    KSUF(range),
    KSUF(multiply_add),
};
