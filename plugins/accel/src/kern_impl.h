/*
 * CpuAcc vector kernels, written once in plain C and compiled once per ISA:
 * kern_portable.c (no flags), kern_avx2.c (-mavx2 -mfma), kern_avx512.c
 * (-mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma). The loops are shaped for
 * the auto-vectorizer (-O3): no calls inside hot loops except libm's powf,
 * lane arrays for reductions, branch-free selects that keep NaN semantics.
 *
 * The including file defines KSUF(name) (appends its ISA suffix) and
 * KTABLE (the accel_kernels object it exports).
 */
#include "accel.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 16

#if defined(__GNUC__) || defined(__clang__)
#define KINLINE static inline __attribute__((always_inline))
#else
#define KINLINE static inline
#endif

/* exp(x) for x <= 88 (Cephes polynomial; relative error ~2 ulp). NaN stays NaN;
 * x below -87.3 gives ~1e-38 instead of a subnormal or 0, x above 88 gives
 * exp(88): no caller needs more (sigmoid, tanh of -2|x|, elu, softmax of x - max). */
KINLINE float KSUF(exp_fast)(float x) {
    float c = x > 88.0f ? 88.0f : x;
    c = c < -87.3f ? -87.3f : c;
    float fx = c * 1.44269504088896341f + 0.5f;
    float fl = floorf(fx); /* in [-126, 127] for the clamped c */
    float r = c - fl * 0.693359375f + fl * 2.12194440e-4f;
    float z = r * r;
    float y = 1.9875691500E-4f;
    y = y * r + 1.3981999507E-3f;
    y = y * r + 8.3334519073E-3f;
    y = y * r + 4.1665795894E-2f;
    y = y * r + 1.6666665459E-1f;
    y = y * r + 5.0000001201E-1f;
    y = y * z + r + 1.0f;
    float fe = fl + 127.0f;
    fe = fe < 1.0f ? 1.0f : (fe > 254.0f ? 254.0f : fe);
    int32_t e = (int32_t)fe;
    uint32_t bits = (uint32_t)e << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    y = y * scale;
    return x != x ? x : y;
}

/* expm1(x) for x <= 0: a Taylor polynomial near 0 (keeps relative accuracy for tiny x),
 * exp(x) - 1 further out. */
KINLINE float KSUF(expm1_neg)(float x) {
    float p = 1.0f / 720.0f;
    p = p * x + 1.0f / 120.0f;
    p = p * x + 1.0f / 24.0f;
    p = p * x + 1.0f / 6.0f;
    p = p * x + 0.5f;
    p = p * x * x + x;
    float e = KSUF(exp_fast)(x) - 1.0f;
    return x > -0.25f ? p : e; /* NaN: e is NaN */
}

/* tanh(x): an odd Taylor polynomial for |x| < 0.25, (1 - e) / (1 + e) with e = exp(-2|x|)
 * beyond (no cancellation there); relative error a few ulp everywhere. */
KINLINE float KSUF(tanh_fast)(float v) {
    float a = v < 0.0f ? -v : v;
    float z = v * v;
    float p = 62.0f / 2835.0f;
    p = p * z - 17.0f / 315.0f;
    p = p * z + 2.0f / 15.0f;
    p = p * z - 1.0f / 3.0f;
    p = p * z * v + v;
    float e = KSUF(exp_fast)(-2.0f * a);
    float t = (1.0f - e) / (1.0f + e);
    t = v < 0.0f ? -t : t;
    return a < 0.25f ? p : t; /* NaN: t is NaN */
}

KINLINE float KSUF(clamp01)(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

/* ---- Activation ------------------------------------------------------------- */

static void KSUF(activation)(const pn_activation_desc* act, const float* x, float* y, int64_t n) {
    const float alpha = act->alpha, beta = act->beta;
    int64_t i;
    switch (act->kind) {
    case PN_ACTIVATION_RELU:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
        break;
    case PN_ACTIVATION_BOUNDED_RELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float lo = v < alpha ? alpha : v;
            y[i] = lo > beta ? beta : lo;
        }
        break;
    case PN_ACTIVATION_LEAKY_RELU:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v >= 0.0f ? v : alpha * v; }
        break;
    case PN_ACTIVATION_SIGMOID:
        for (i = 0; i < n; ++i) { y[i] = 1.0f / (1.0f + KSUF(exp_fast)(-x[i])); }
        break;
    case PN_ACTIVATION_TANH:
        for (i = 0; i < n; ++i) {
            y[i] = KSUF(tanh_fast)(x[i]);
        }
        break;
    case PN_ACTIVATION_ELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float e = KSUF(expm1_neg)(v > 0.0f ? 0.0f : v); /* NaN stays NaN */
            y[i] = v >= 0.0f ? v : alpha * e;
        }
        break;
    case PN_ACTIVATION_HARD_SWISH:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v * KSUF(clamp01)(v / 6.0f + 0.5f);
        }
        break;
    case PN_ACTIVATION_HARD_SIGMOID:
        for (i = 0; i < n; ++i) { y[i] = KSUF(clamp01)(alpha * x[i] + beta); }
        break;
    case PN_ACTIVATION_ABS:
        for (i = 0; i < n; ++i) { y[i] = fabsf(x[i]); }
        break;
    case PN_ACTIVATION_SQRT:
        for (i = 0; i < n; ++i) { y[i] = sqrtf(x[i]); }
        break;
    case PN_ACTIVATION_SQUARE:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v * v; }
        break;
    case PN_ACTIVATION_LINEAR:
        for (i = 0; i < n; ++i) { y[i] = alpha * x[i] + beta; }
        break;
    case PN_ACTIVATION_INVALID:
        if (x != y) {
            memmove(y, x, (size_t)n * sizeof(float));
        }
        break;
    }
}

/* ---- Binary ------------------------------------------------------------------ */

/* x op z for each (sa, sb) stride pattern: both rows, a row and a scalar, ... */
#define BIN_LOOPS(EXPR)                                                      \
    do {                                                                     \
        if (sa && sb) {                                                      \
            for (i = 0; i < n; ++i) { float x = a[i], z = b[i]; y[i] = (EXPR); } \
        } else if (sa) {                                                     \
            const float z = b[0];                                            \
            for (i = 0; i < n; ++i) { float x = a[i]; y[i] = (EXPR); }       \
        } else if (sb) {                                                     \
            const float x = a[0];                                            \
            for (i = 0; i < n; ++i) { float z = b[i]; y[i] = (EXPR); }       \
        } else {                                                             \
            const float x = a[0], z = b[0];                                  \
            const float v = (EXPR);                                          \
            for (i = 0; i < n; ++i) { y[i] = v; }                            \
        }                                                                    \
    } while (0)

static void KSUF(binary_row)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                             float* y, int64_t n) {
    int64_t i;
    switch (op) {
    case PN_BINARY_ADD: BIN_LOOPS(x + z); break;
    case PN_BINARY_SUB: BIN_LOOPS(x - z); break;
    case PN_BINARY_MUL: BIN_LOOPS(x * z); break;
    case PN_BINARY_DIV: BIN_LOOPS(x / z); break;
    case PN_BINARY_MAXIMUM: BIN_LOOPS((x >= z || x != x) ? x : z); break;
    case PN_BINARY_MINIMUM: BIN_LOOPS((x <= z || x != x) ? x : z); break;
    case PN_BINARY_POWER: BIN_LOOPS(powf(x, z)); break;
    case PN_BINARY_PRELU: BIN_LOOPS(x >= 0.0f ? x : x * z); break;
    case PN_BINARY_INVALID: break;
    }
}

/* ---- Softmax helpers -------------------------------------------------------- */

static float KSUF(max_row)(const float* x, int64_t n) {
    float acc[LANES];
    int64_t i = 0;
    int nan = 0;
    for (int j = 0; j < LANES; ++j) {
        acc[j] = -INFINITY;
    }
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; ++j) {
            float v = x[i + j];
            acc[j] = v > acc[j] ? v : acc[j];
            nan |= v != v;
        }
    }
    float m = -INFINITY;
    for (int j = 0; j < LANES; ++j) {
        m = acc[j] > m ? acc[j] : m;
    }
    for (; i < n; ++i) {
        float v = x[i];
        m = v > m ? v : m;
        nan |= v != v;
    }
    return nan ? NAN : m;
}

static float KSUF(exp_sub_sum)(const float* x, float m, float* y, int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; ++j) {
            float e = KSUF(exp_fast)(x[i + j] - m);
            y[i + j] = e;
            acc[j] += e;
        }
    }
    float s = 0.0f;
    for (; i < n; ++i) {
        float e = KSUF(exp_fast)(x[i] - m);
        y[i] = e;
        s += e;
    }
    for (int j = 0; j < LANES; ++j) {
        s += acc[j];
    }
    return s;
}

static void KSUF(scale)(float* y, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] *= s;
    }
}

static void KSUF(max_cols)(float* m, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i], o = m[i];
        m[i] = (v > o || v != v) ? v : o;
    }
}

static void KSUF(exp_sub_cols)(const float* x, const float* m, float* y, float* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float e = KSUF(exp_fast)(x[i] - m[i]);
        y[i] = e;
        s[i] += e;
    }
}

static void KSUF(mul_cols)(float* y, const float* r, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] *= r[i];
    }
}

/* ---- Pooling ----------------------------------------------------------------- */

/* Taps [lo, hi) of a window starting at `start` that land inside [0, in). */
static inline void KSUF(tap_range)(int64_t start, int64_t k, int64_t d, int64_t in, int64_t* lo,
                                   int64_t* hi) {
    if (start >= 0 && start + (k - 1) * d < in) {
        *lo = 0;
        *hi = k;
        return;
    }
    int64_t t0 = start < 0 ? (-start + d - 1) / d : 0;
    int64_t t1 = in - start <= 0 ? 0 : (in - start + d - 1) / d;
    t1 = t1 > k ? k : t1;
    *lo = t0 > t1 ? t1 : t0;
    *hi = t1;
}

/* Taps inside the padded input (AVERAGE/INCLUDE divisor along one axis). */
static inline int64_t KSUF(padded_taps)(int64_t start, int64_t k, int64_t d, int64_t in,
                                        int64_t pad_end) {
    int64_t lim = in + pad_end - start;
    if (lim <= 0) {
        return 0;
    }
    int64_t t = (lim + d - 1) / d;
    return t > k ? k : t;
}

static inline float KSUF(lp_term)(float v, float p) {
    float a = fabsf(v);
    return p == 2.0f ? a * a : (p == 1.0f ? a : powf(a, p));
}

static inline float KSUF(lp_root)(float s, float p) {
    return p == 2.0f ? sqrtf(s) : (p == 1.0f ? s : powf(s, 1.0f / p));
}

/* MAX or AVERAGE over output columns [lo, hi) of one row whose windows lie inside the input
 * along x: the taps are the outer loops, the columns the vectorized inner one. */
static void KSUF(pool_nchw_interior)(const accel_pool_params* pp, const float* x, float* yrow,
                                     int64_t ty0, int64_t ty1, int64_t sy, int64_t ph,
                                     int64_t lo, int64_t hi) {
    const int64_t iw = pp->iw, sw = pp->sw, kw = pp->kw, dw = pp->dw;
    const int max = pp->kind == PN_POOLING_MAX;
    const float init = max ? -INFINITY : 0.0f;
    for (int64_t ox = lo; ox < hi; ++ox) {
        yrow[ox] = init;
    }
    for (int64_t ty = ty0; ty < ty1; ++ty) {
        const float* row = x + (sy + ty * pp->dh) * iw - pp->pl;
        for (int64_t tx = 0; tx < kw; ++tx) {
            const float* src = row + tx * dw;
            if (max && sw == 1) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    float v = src[ox], o = yrow[ox];
                    yrow[ox] = (v > o || v != v) ? v : o;
                }
            } else if (max && sw == 2) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    float v = src[2 * ox], o = yrow[ox];
                    yrow[ox] = (v > o || v != v) ? v : o;
                }
            } else if (max) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    float v = src[ox * sw], o = yrow[ox];
                    yrow[ox] = (v > o || v != v) ? v : o;
                }
            } else if (sw == 1) {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    yrow[ox] += src[ox];
                }
            } else {
                for (int64_t ox = lo; ox < hi; ++ox) {
                    yrow[ox] += src[ox * sw];
                }
            }
        }
    }
    if (!max) {
        int64_t count = pp->include_padding ? ph * kw : (ty1 - ty0) * kw;
        const float r = 1.0f / (float)count;
        for (int64_t ox = lo; ox < hi; ++ox) {
            yrow[ox] *= r;
        }
    }
}

static void KSUF(pool_nchw)(const accel_pool_params* pp, const float* x, float* y, int64_t oy0,
                            int64_t oy1) {
    const int64_t iw = pp->iw, ow = pp->ow, dw = pp->dw, dh = pp->dh;
    /* Columns whose windows lie inside the input along x (all kw taps real). */
    int64_t lo = (pp->pl + pp->sw - 1) / pp->sw, hi = 0;
    int64_t last = iw - 1 - (pp->kw - 1) * dw + pp->pl; /* largest ox * sw allowed */
    if (last >= 0) {
        hi = last / pp->sw + 1;
    }
    hi = hi > ow ? ow : hi;
    if (pp->kind == PN_POOLING_LP || lo >= hi) {
        lo = hi = 0; /* no fast columns */
    }
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, dh, pp->ih, &ty0, &ty1);
        int64_t ph = KSUF(padded_taps)(sy, pp->kh, dh, pp->ih, pp->pb);
        float* yrow = y + oy * ow;
        if (lo < hi) {
            KSUF(pool_nchw_interior)(pp, x, yrow, ty0, ty1, sy, ph, lo, hi);
        }
        for (int64_t ox = 0; ox < ow; ++ox) {
            if (ox == lo && lo < hi) {
                ox = hi - 1; /* done above */
                continue;
            }
            int64_t sx = ox * pp->sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, pp->kw, dw, iw, &tx0, &tx1);
            if (pp->kind == PN_POOLING_MAX) {
                float m = -INFINITY;
                for (int64_t ty = ty0; ty < ty1; ++ty) {
                    const float* row = x + (sy + ty * dh) * iw + sx;
                    for (int64_t tx = tx0; tx < tx1; ++tx) {
                        float v = row[tx * dw];
                        m = (v > m || v != v) ? v : m;
                    }
                }
                yrow[ox] = m;
            } else if (pp->kind == PN_POOLING_AVERAGE) {
                float s = 0.0f;
                for (int64_t ty = ty0; ty < ty1; ++ty) {
                    const float* row = x + (sy + ty * dh) * iw + sx;
                    for (int64_t tx = tx0; tx < tx1; ++tx) {
                        s += row[tx * dw];
                    }
                }
                int64_t count = pp->include_padding
                                    ? ph * KSUF(padded_taps)(sx, pp->kw, dw, iw, pp->pr)
                                    : (ty1 - ty0) * (tx1 - tx0);
                yrow[ox] = s / (float)count;
            } else {
                float s = 0.0f;
                for (int64_t ty = ty0; ty < ty1; ++ty) {
                    const float* row = x + (sy + ty * dh) * iw + sx;
                    for (int64_t tx = tx0; tx < tx1; ++tx) {
                        s += KSUF(lp_term)(row[tx * dw], pp->p);
                    }
                }
                yrow[ox] = KSUF(lp_root)(s, pp->p);
            }
        }
    }
}

static void KSUF(pool_nhwc)(const accel_pool_params* pp, const float* x, float* y, int64_t oy0,
                            int64_t oy1) {
    const int64_t iw = pp->iw, ow = pp->ow, c = pp->c, dw = pp->dw, dh = pp->dh;
    const float p = pp->p;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, dh, pp->ih, &ty0, &ty1);
        int64_t ph = KSUF(padded_taps)(sy, pp->kh, dh, pp->ih, pp->pb);
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t sx = ox * pp->sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, pp->kw, dw, iw, &tx0, &tx1);
            float* out = y + (oy * ow + ox) * c;
            const float init = pp->kind == PN_POOLING_MAX ? -INFINITY : 0.0f;
            for (int64_t k = 0; k < c; ++k) {
                out[k] = init;
            }
            for (int64_t ty = ty0; ty < ty1; ++ty) {
                for (int64_t tx = tx0; tx < tx1; ++tx) {
                    const float* px = x + ((sy + ty * dh) * iw + sx + tx * dw) * c;
                    if (pp->kind == PN_POOLING_MAX) {
                        for (int64_t k = 0; k < c; ++k) {
                            float v = px[k], o = out[k];
                            out[k] = (v > o || v != v) ? v : o;
                        }
                    } else if (pp->kind == PN_POOLING_AVERAGE) {
                        for (int64_t k = 0; k < c; ++k) {
                            out[k] += px[k];
                        }
                    } else if (p == 2.0f) {
                        for (int64_t k = 0; k < c; ++k) {
                            out[k] += px[k] * px[k];
                        }
                    } else {
                        for (int64_t k = 0; k < c; ++k) {
                            out[k] += KSUF(lp_term)(px[k], p);
                        }
                    }
                }
            }
            if (pp->kind == PN_POOLING_AVERAGE) {
                int64_t count = pp->include_padding
                                    ? ph * KSUF(padded_taps)(sx, pp->kw, dw, iw, pp->pr)
                                    : (ty1 - ty0) * (tx1 - tx0);
                const float r = 1.0f / (float)count;
                for (int64_t k = 0; k < c; ++k) {
                    out[k] *= r;
                }
            } else if (pp->kind == PN_POOLING_LP) {
                for (int64_t k = 0; k < c; ++k) {
                    out[k] = KSUF(lp_root)(out[k], p);
                }
            }
        }
    }
}

const accel_kernels KTABLE = {
    KSUF(activation), KSUF(binary_row), KSUF(max_row),  KSUF(exp_sub_sum), KSUF(scale),
    KSUF(max_cols),   KSUF(exp_sub_cols), KSUF(mul_cols), KSUF(pool_nchw), KSUF(pool_nhwc),
};
