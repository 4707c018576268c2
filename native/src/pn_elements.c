/* Element type classes, 16-bit float conversions and element access by pn_data_type. */
#include "plugnn/pn_elements.h"

#include "plugnn/plugin_common.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int pn_dtype_is_float(pn_data_type dtype) {
    return dtype == PN_DTYPE_FLOAT32 || dtype == PN_DTYPE_FLOAT16 || dtype == PN_DTYPE_BFLOAT16 ||
           dtype == PN_DTYPE_FLOAT64;
}

int pn_dtype_is_unsigned(pn_data_type dtype) {
    return dtype == PN_DTYPE_UINT8 || dtype == PN_DTYPE_UINT16 || dtype == PN_DTYPE_UINT32 ||
           dtype == PN_DTYPE_UINT64;
}

int pn_dtype_is_integer(pn_data_type dtype) {
    return pn_dtype_is_unsigned(dtype) || dtype == PN_DTYPE_INT8 || dtype == PN_DTYPE_INT16 ||
           dtype == PN_DTYPE_INT32 || dtype == PN_DTYPE_INT64;
}

int pn_dtype_is_signed(pn_data_type dtype) {
    return pn_dtype_is_float(dtype) || (pn_dtype_is_integer(dtype) && !pn_dtype_is_unsigned(dtype));
}

/* ---- 16-bit floats --------------------------------------------------------- */

static uint32_t float_bits(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof(bits));
    return bits;
}

static float bits_float(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof(value));
    return value;
}

float pn_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) { /* infinity or NaN */
        return bits_float(sign | 0x7f800000u | (mantissa << 13));
    }
    if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24 */
        float magnitude = (float)mantissa * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }
    return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t pn_float_to_half(float value) {
    uint32_t bits = float_bits(value);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) { /* infinity or NaN (keeps a quiet NaN) */
        return (uint16_t)(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
    }
    if (magnitude >= 0x477ff000u) { /* rounds to 65520 or more: infinity */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (magnitude < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        float scaled = bits_float(magnitude) * 16777216.0f; /* in units of 2^-24 */
        float rounded = nearbyintf(scaled);                   /* ties to even */
        return (uint16_t)(sign | (uint16_t)rounded);
    }
    /* Normal: rebias the exponent, round the 13 dropped bits to nearest even. */
    uint32_t half = ((magnitude >> 13) - (112u << 10));
    uint32_t dropped = magnitude & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) {
        ++half;
    }
    return (uint16_t)(sign | half);
}

float pn_bfloat16_to_float(uint16_t bits) { return bits_float((uint32_t)bits << 16); }

uint16_t pn_float_to_bfloat16(float value) {
    uint32_t bits = float_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { /* NaN: keep it a (quiet) NaN */
        return (uint16_t)((bits >> 16) | 0x40u);
    }
    uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)((bits + rounding) >> 16);
}

/* ---- Rounding once ------------------------------------------------------------
 * A value rounded "to odd" (toward zero, the last kept bit set when anything was
 * dropped) to p bits and then to nearest even at q <= p - 2 bits is the value rounded
 * to nearest even at q bits directly. Wider sources reach the 16-bit floats that way,
 * so every conversion rounds once (backend_api.h: "rounding once when they store"). */

/* v as a float32 rounded to odd (NaN and exact values as they are). */
static float double_to_float_odd(double v) {
    float f = (float)v;
    if (v != v || (double)f == v) {
        return f;
    }
    if (fabs((double)f) > fabs(v)) { /* rounded away from zero (possibly to infinity) */
        f = nextafterf(f, 0.0f);
    }
    return bits_float(float_bits(f) | 1u);
}

/* An integer's magnitude as a double rounded to odd (exact below 2^53). */
static double magnitude_to_double_odd(uint64_t m) {
    const uint64_t limit = (uint64_t)1 << 53;
    if (m < limit) {
        return (double)m;
    }
    int shift = 0;
    uint64_t kept = m;
    while (kept >= limit) {
        kept >>= 1;
        ++shift;
    }
    uint64_t dropped = m & ((((uint64_t)1) << shift) - 1u);
    return ldexp((double)(kept | (dropped != 0 ? 1u : 0u)), shift);
}

/* Stores an integer (negative: its magnitude and sign) into a float type, rounding once. */
static void store_integer_float(pn_data_type dtype, void* data, int64_t i, int negative,
                                uint64_t magnitude) {
    switch (dtype) {
    case PN_DTYPE_FLOAT64: {
        double d = (double)magnitude; /* correctly rounded by C's conversion */
        ((double*)data)[i] = negative ? -d : d;
        return;
    }
    case PN_DTYPE_FLOAT32: {
        float f = (float)magnitude;
        ((float*)data)[i] = negative ? -f : f;
        return;
    }
    default: {
        double d = magnitude_to_double_odd(magnitude);
        pn_store_double(dtype, data, i, negative ? -d : d);
        return;
    }
    }
}

/* ---- Element access ---------------------------------------------------------- */

double pn_load_double(pn_data_type dtype, const void* data, int64_t i) {
    switch (dtype) {
    case PN_DTYPE_FLOAT32: return ((const float*)data)[i];
    case PN_DTYPE_FLOAT64: return ((const double*)data)[i];
    case PN_DTYPE_FLOAT16: return pn_half_to_float(((const uint16_t*)data)[i]);
    case PN_DTYPE_BFLOAT16: return pn_bfloat16_to_float(((const uint16_t*)data)[i]);
    case PN_DTYPE_INT8: return ((const int8_t*)data)[i];
    case PN_DTYPE_UINT8: return ((const uint8_t*)data)[i];
    case PN_DTYPE_INT16: return ((const int16_t*)data)[i];
    case PN_DTYPE_UINT16: return ((const uint16_t*)data)[i];
    case PN_DTYPE_INT32: return ((const int32_t*)data)[i];
    case PN_DTYPE_UINT32: return ((const uint32_t*)data)[i];
    case PN_DTYPE_INT64: return (double)((const int64_t*)data)[i];
    case PN_DTYPE_UINT64: return (double)((const uint64_t*)data)[i];
    case PN_DTYPE_BOOL: return ((const uint8_t*)data)[i] != 0;
    case PN_DTYPE_INVALID: break;
    }
    return 0.0;
}

/* Truncation toward zero into [low, high], NaN to 0: a float to integer conversion
 * that is never undefined behaviour. */
static int64_t saturate_int64(double v, double low, double high) {
    if (v != v) {
        return 0;
    }
    if (v <= low) {
        return (int64_t)low;
    }
    if (v >= high) {
        return v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)high;
    }
    return (int64_t)v;
}

static uint64_t saturate_uint64(double v, double high) {
    if (v != v || v <= 0.0) {
        return 0;
    }
    if (v >= high) {
        return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)high;
    }
    return (uint64_t)v;
}

void pn_store_double(pn_data_type dtype, void* data, int64_t i, double v) {
    switch (dtype) {
    case PN_DTYPE_FLOAT32: ((float*)data)[i] = (float)v; return;
    case PN_DTYPE_FLOAT64: ((double*)data)[i] = v; return;
    case PN_DTYPE_FLOAT16: ((uint16_t*)data)[i] = pn_float_to_half(double_to_float_odd(v)); return;
    case PN_DTYPE_BFLOAT16:
        ((uint16_t*)data)[i] = pn_float_to_bfloat16(double_to_float_odd(v));
        return;
    case PN_DTYPE_INT8: ((int8_t*)data)[i] = (int8_t)saturate_int64(v, -128.0, 127.0); return;
    case PN_DTYPE_UINT8: ((uint8_t*)data)[i] = (uint8_t)saturate_uint64(v, 255.0); return;
    case PN_DTYPE_INT16: ((int16_t*)data)[i] = (int16_t)saturate_int64(v, -32768.0, 32767.0); return;
    case PN_DTYPE_UINT16: ((uint16_t*)data)[i] = (uint16_t)saturate_uint64(v, 65535.0); return;
    case PN_DTYPE_INT32:
        ((int32_t*)data)[i] = (int32_t)saturate_int64(v, -2147483648.0, 2147483647.0);
        return;
    case PN_DTYPE_UINT32: ((uint32_t*)data)[i] = (uint32_t)saturate_uint64(v, 4294967295.0); return;
    case PN_DTYPE_INT64:
        ((int64_t*)data)[i] = saturate_int64(v, -9223372036854775808.0, 9223372036854775807.0);
        return;
    case PN_DTYPE_UINT64: ((uint64_t*)data)[i] = saturate_uint64(v, 18446744073709551615.0); return;
    case PN_DTYPE_BOOL: ((uint8_t*)data)[i] = v != 0.0; return;
    case PN_DTYPE_INVALID: return;
    }
}

int64_t pn_load_int64(pn_data_type dtype, const void* data, int64_t i) {
    switch (dtype) {
    case PN_DTYPE_INT8: return ((const int8_t*)data)[i];
    case PN_DTYPE_UINT8: return ((const uint8_t*)data)[i];
    case PN_DTYPE_INT16: return ((const int16_t*)data)[i];
    case PN_DTYPE_UINT16: return ((const uint16_t*)data)[i];
    case PN_DTYPE_INT32: return ((const int32_t*)data)[i];
    case PN_DTYPE_UINT32: return ((const uint32_t*)data)[i];
    case PN_DTYPE_INT64: return ((const int64_t*)data)[i];
    case PN_DTYPE_UINT64: return (int64_t)((const uint64_t*)data)[i];
    case PN_DTYPE_BOOL: return ((const uint8_t*)data)[i] != 0;
    default:
        return saturate_int64(pn_load_double(dtype, data, i), -9223372036854775808.0,
                              9223372036854775807.0);
    }
}

uint64_t pn_load_uint64(pn_data_type dtype, const void* data, int64_t i) {
    if (dtype == PN_DTYPE_UINT64) {
        return ((const uint64_t*)data)[i];
    }
    if (pn_dtype_is_float(dtype)) {
        return saturate_uint64(pn_load_double(dtype, data, i), 18446744073709551615.0);
    }
    return (uint64_t)pn_load_int64(dtype, data, i);
}

void pn_store_int64(pn_data_type dtype, void* data, int64_t i, int64_t v) {
    if (pn_dtype_is_float(dtype)) { /* from the signed value, not its unsigned pattern */
        store_integer_float(dtype, data, i, v < 0, v < 0 ? 0u - (uint64_t)v : (uint64_t)v);
        return;
    }
    pn_store_uint64(dtype, data, i, (uint64_t)v);
}

void pn_store_uint64(pn_data_type dtype, void* data, int64_t i, uint64_t v) {
    switch (dtype) {
    case PN_DTYPE_INT8: ((int8_t*)data)[i] = (int8_t)(uint8_t)v; return;
    case PN_DTYPE_UINT8: ((uint8_t*)data)[i] = (uint8_t)v; return;
    case PN_DTYPE_INT16: ((int16_t*)data)[i] = (int16_t)(uint16_t)v; return;
    case PN_DTYPE_UINT16: ((uint16_t*)data)[i] = (uint16_t)v; return;
    case PN_DTYPE_INT32: ((int32_t*)data)[i] = (int32_t)(uint32_t)v; return;
    case PN_DTYPE_UINT32: ((uint32_t*)data)[i] = (uint32_t)v; return;
    case PN_DTYPE_INT64: ((int64_t*)data)[i] = (int64_t)v; return;
    case PN_DTYPE_UINT64: ((uint64_t*)data)[i] = v; return;
    case PN_DTYPE_BOOL: ((uint8_t*)data)[i] = v != 0; return;
    default: store_integer_float(dtype, data, i, 0, v); return;
    }
}

void pn_convert(pn_data_type dst_dtype, void* dst, pn_data_type src_dtype, const void* src,
                int64_t n) {
    if (dst_dtype == src_dtype) {
        if (n > 0) {
            memcpy(dst, src, (size_t)n * pn_dtype_size(src_dtype));
        }
        return;
    }
    int float_source = pn_dtype_is_float(src_dtype); /* else integers (and BOOL) exactly */
    for (int64_t i = 0; i < n; ++i) {
        if (float_source) {
            pn_store_double(dst_dtype, dst, i, pn_load_double(src_dtype, src, i));
        } else if (pn_dtype_is_unsigned(src_dtype)) {
            pn_store_uint64(dst_dtype, dst, i, pn_load_uint64(src_dtype, src, i));
        } else {
            pn_store_int64(dst_dtype, dst, i, pn_load_int64(src_dtype, src, i));
        }
    }
}
