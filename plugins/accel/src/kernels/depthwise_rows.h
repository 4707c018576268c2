/*
 * CpuAcc kernels, depthwise convolution: NCHW (3x3 direct, sub-plane and direct paths) and
 * NHWC, on the vector primitives of kernels/vector_primitives.h; the 3x3 kernel shifts taps out of
 * whole vectors with _mm512_alignr_epi32 under #if __AVX512F__, and loads each tap elsewhere.
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
/* The fused activation done in registers: kinds RELU and BOUNDED_RELU become a clamp to
 * [lo, hi] (NaN stays NaN); others are applied to the finished row afterwards. */
typedef struct KSUF(clamp) {
    int on;
    float lo, hi;
} KSUF(clamp);

static KSUF(clamp) KSUF(clamp_of)(const pn_activation_desc* act) {
    KSUF(clamp) c = {0, -INFINITY, INFINITY};
    if (act != NULL && act->kind == PN_ACTIVATION_RELU) {
        c.on = 1;
        c.lo = 0.0f;
    } else if (act != NULL && act->kind == PN_ACTIVATION_BOUNDED_RELU) {
        c.on = 1;
        c.lo = act->alpha;
        c.hi = act->beta;
    }
    return c;
}

/* The activation left for after the row (NULL when none or done by the clamp). */
static const pn_activation_desc* KSUF(act_after)(const pn_activation_desc* act) {
    return act == NULL || act->kind == PN_ACTIVATION_INVALID || act->kind == PN_ACTIVATION_RELU ||
                   act->kind == PN_ACTIVATION_BOUNDED_RELU
               ? NULL
               : act;
}

/* max(lo, min(hi, v)) keeping NaN (x86 max/min return their second operand on NaN). */
KINLINE vf KSUF(vclamp)(KSUF(clamp) c, vf v) {
    v = KSUF(vmax)(KSUF(vset1)(c.lo), v);
    return KSUF(vmin)(KSUF(vset1)(c.hi), v);
}

/* Finishes `acc` for columns [ox, ox + VW) of a depthwise row: + add, clamp, store (the
 * first n - ox lanes only when fewer than VW are left). */
KINLINE void KSUF(dw_finish)(vf acc, const float* add, KSUF(clamp) c, float* y, int64_t ox,
                             int64_t n) {
    int64_t rem = n - ox;
    if (add != NULL) {
        acc = KSUF(vadd)(acc, rem >= VW ? KSUF(vload)(add + ox) : KSUF(vload_n)(add + ox, rem));
    }
    if (c.on) {
        acc = KSUF(vclamp)(c, acc);
    }
    if (rem >= VW) {
        KSUF(vstore)(y + ox, acc);
    } else {
        KSUF(vstore_n)(y + ox, acc, rem);
    }
}

/* out[p] = bias + sum_t w[t] * src[t][p] for flat positions p < n, in whole vectors (two per
 * step: two independent FMA chains); w holds the weights already broadcast (in registers
 * when inlined with the constant taps of the 3x3 case). */
KINLINE void KSUF(dw_flat_body)(const float* const* src, const vf* w, int64_t taps, float bias,
                                float* out, int64_t n) {
    const vf b = KSUF(vset1)(bias);
    int64_t p = 0;
    for (; p + VW < n; p += 2 * VW) {
        vf a0 = b, a1 = b;
        for (int64_t t = 0; t < taps; ++t) {
            a0 = KSUF(vfma)(w[t], KSUF(vload)(src[t] + p), a0);
            a1 = KSUF(vfma)(w[t], KSUF(vload)(src[t] + p + VW), a1);
        }
        KSUF(vstore)(out + p, a0);
        KSUF(vstore)(out + p + VW, a1);
    }
    if (p < n) {
        vf a0 = b;
        for (int64_t t = 0; t < taps; ++t) {
            a0 = KSUF(vfma)(w[t], KSUF(vload)(src[t] + p), a0);
        }
        KSUF(vstore)(out + p, a0);
    }
}

static void KSUF(dw_flat)(const float* const* src, const float* wt, int64_t taps, float bias,
                          float* out, int64_t n) {
    vf w[ACCEL_TAPS_MAX];
    for (int64_t t = 0; t < taps; ++t) {
        w[t] = KSUF(vset1)(wt[t]);
    }
    if (taps == 9) {
        KSUF(dw_flat_body)(src, w, 9, bias, out, n);
    } else {
        KSUF(dw_flat_body)(src, w, taps, bias, out, n);
    }
}

/* Depthwise NCHW without the sub-plane buffer (layers too large for it): per tap, a strided
 * multiply-add over the output columns whose input column is inside the row. */
static void KSUF(dw_nchw_direct)(const accel_dw_params* dp, const float* x, const float* w,
                                 float bias, const float* addend, float* y, int64_t oy0,
                                 int64_t oy1) {
    const int64_t ow = dp->ow, sw = dp->sw;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        float* yr = y + oy * ow;
        for (int64_t ox = 0; ox < ow; ++ox) {
            yr[ox] = bias;
        }
        for (int64_t ky = 0; ky < dp->kh; ++ky) {
            int64_t iy = oy * dp->sh - dp->pt + ky * dp->dh;
            if (iy < 0 || iy >= dp->ih) {
                continue;
            }
            for (int64_t kx = 0; kx < dp->kw; ++kx) {
                int64_t off = kx * dp->dw - dp->pl; /* ix = ox * sw + off */
                int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                int64_t hi = dp->iw - 1 - off >= 0 ? (dp->iw - 1 - off) / sw + 1 : 0;
                hi = hi > ow ? ow : hi;
                const float* xr = x + iy * dp->iw;
                const float wv = w[ky * dp->kw + kx];
                for (int64_t ox = lo; ox < hi; ++ox) {
                    yr[ox] += wv * xr[ox * sw + off];
                }
            }
        }
        if (addend != NULL) {
            const float* ar = addend + oy * ow;
            for (int64_t ox = 0; ox < ow; ++ox) {
                yr[ox] += ar[ox];
            }
        }
        if (dp->act != NULL) {
            KSUF(activation)(dp->act, yr, yr, ow);
        }
    }
}

#if defined(__AVX512F__)
/* Lanes kx.. of lo followed by lanes of hi (valignd): tap kx of a vector from its tap-0 vector
 * and the next one. */
KINLINE vf KSUF(dw3_shift)(vf lo, vf hi, const int kx) {
    const __m512i l = _mm512_castps_si512(lo), h = _mm512_castps_si512(hi);
    return _mm512_castsi512_ps(kx == 1 ? _mm512_alignr_epi32(h, l, 1) : _mm512_alignr_epi32(h, l, 2));
}
#define DW3_MASKS 1 /* masks per vector: tap 0's (the others are shifted out of it) */
#else
#define DW3_MASKS 3 /* masks per vector: one per tap kx */
#endif

/* Q vectors of a 3x3 depthwise output row from input rows r0, r1, r2 (a zero row for padding
 * rows), vector q at column ox + q * VW: bias, then the nine taps in (ky, kx) order (columns
 * outside the input row read as zeros), Q independent FMA chains (a chain of nine FMAs is
 * latency-bound alone). m: DW3_MASKS lane masks per vector from vector 0 of the call, for the
 * AVX-512 build one more. AVX-512 loads each row's tap-0 vectors a[q] (plus a[Q]) once and
 * shifts tap kx of vector q out of a[q] and a[q + 1]: 3 (Q + 1) loads and 6 Q shuffles per Q
 * vectors instead of 9 Q unaligned masked loads (the row was load-bound: 144 x 56 x 56, one Zen
 * 5 core, 172-176 -> 108-111 us; onnxruntime 133-153). The other builds load each tap, lanes
 * m[3 * q + kx]. Either way the same products in the same order: the same bits. */
KINLINE void KSUF(dw3_vectors)(const float* r0, const float* r1, const float* r2, const vf* wv, vf b,
                               const vlanes* m, int64_t ox, const float* ar, KSUF(clamp) c, float* yr,
                               int64_t ow, const int Q) {
    vf acc[4];
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) acc[q] = b;
    const float* rows[3] = {r0, r1, r2};
#pragma GCC unroll 3
    for (int ky = 0; ky < 3; ++ky) {
#if defined(__AVX512F__)
        vf a[5];
#pragma GCC unroll 5
        for (int q = 0; q <= Q; ++q) a[q] = KSUF(vload_lanes)(rows[ky] + ox + q * VW, m[q]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = KSUF(vfma)(wv[ky * 3], a[q], acc[q]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = KSUF(vfma)(wv[ky * 3 + 1], KSUF(dw3_shift)(a[q], a[q + 1], 1), acc[q]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) acc[q] = KSUF(vfma)(wv[ky * 3 + 2], KSUF(dw3_shift)(a[q], a[q + 1], 2), acc[q]);
#else
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; ++kx) {
            const vf wt = wv[ky * 3 + kx];
#pragma GCC unroll 4
            for (int q = 0; q < Q; ++q) {
                acc[q] = KSUF(vfma)(wt, KSUF(vload_lanes)(rows[ky] + ox + q * VW + kx, m[3 * q + kx]), acc[q]);
            }
        }
#endif
    }
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) KSUF(dw_finish)(acc[q], ar, c, yr, ox + q * VW, ow);
}

#define DW3_MAX_VECTORS 32 /* output rows up to 32 vectors; wider ones take the sub-plane kernel */

/* Depthwise NCHW 3x3 at column stride 1 and dilation 1 (rows: any stride and dilation): per
 * output row, straight from the input rows, nothing copied, four vectors at a time. The sum
 * runs in the sub-plane kernel's order (bias, then the taps in (ky, kx) order, padding taps
 * adding 0 * w): both give the same bits. */
static void KSUF(dw3_nchw)(const accel_dw_params* dp, const float* x, const float* w, float bias,
                           const float* addend, float* y, int64_t oy0, int64_t oy1) {
    const int64_t ow = dp->ow, iw = dp->iw, pl = dp->pl;
    const int64_t nv = (ow + VW - 1) / VW;
    const KSUF(clamp) c = KSUF(clamp_of)(dp->act);
    const pn_activation_desc* after = KSUF(act_after)(dp->act);
    const vf b = KSUF(vset1)(bias);
    vf wv[9];
    for (int t = 0; t < 9; ++t) wv[t] = KSUF(vset1)(w[t]);
    vlanes m[DW3_MASKS * (DW3_MAX_VECTORS + 1)];
    for (int64_t v = 0; v <= nv; ++v) { /* lane j of tap kx reads column v * VW + j + kx - pl */
        for (int64_t kx = 0; kx < DW3_MASKS; ++kx) m[DW3_MASKS * v + kx] = KSUF(vlanes_in)(v * VW + kx - pl, 0, iw);
    }
    float zero_row[DW3_MAX_VECTORS * VW + 2 * VW] KALIGN64;
    for (int64_t j = 0; j < nv * VW + 2 * VW; ++j) zero_row[j] = 0.0f;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        float* yr = y + oy * ow;
        const float* ar = addend != NULL ? addend + oy * ow : NULL;
        const float* r[3];
        for (int64_t ky = 0; ky < 3; ++ky) { /* r[ky] + column + pl: that column of the row */
            int64_t iy = oy * dp->sh - dp->pt + ky * dp->dh;
            r[ky] = iy >= 0 && iy < dp->ih ? x + iy * iw - pl : zero_row;
        }
        int64_t v = 0;
        const vlanes* mv = m;
        for (; v + 4 <= nv; v += 4, mv += 4 * DW3_MASKS) KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 4);
        switch (nv - v) {
            case 3: KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 3); break;
            case 2: KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 2); break;
            case 1: KSUF(dw3_vectors)(r[0], r[1], r[2], wv, b, mv, v * VW, ar, c, yr, ow, 1); break;
            default: break;
        }
        if (after != NULL) {
            KSUF(activation)(after, yr, yr, ow);
        }
    }
}

/* Depthwise NCHW through the sub-plane buffer: per block of output rows, the flat weighted
 * sum (bias first, then the taps in (ky, kx) order; padding taps add 0 * w), then per row
 * + addend and the activation. */
static void KSUF(dw_nchw)(const accel_dw_params* dp, const float* x, const float* w, float bias,
                          const float* addend, float* y, int64_t oy0, int64_t oy1) {
    const int64_t ow = dp->ow;
    if (dp->kh == 3 && dp->kw == 3 && dp->sw == 1 && dp->dw == 1 && ow <= DW3_MAX_VECTORS * VW &&
        dp->pl <= VW) {
        KSUF(dw3_nchw)(dp, x, w, bias, addend, y, oy0, oy1);
        return;
    }
    int64_t pitch = 0;
    int64_t block = KSUF(subp_rows)(dp->kh, dp->kw, dp->sh, dp->sw, dp->dh, dp->dw, ow, &pitch);
    if (block == 0) {
        KSUF(dw_nchw_direct)(dp, x, w, bias, addend, y, oy0, oy1);
        return;
    }
    float buf[ACCEL_ROWBUF_FLOATS] KALIGN64;
    KSUF(subp) sp;
    KSUF(subp_init)(&sp, x, dp->ih, dp->iw, dp->kh, dp->kw, dp->sh, dp->sw, dp->dh, dp->dw,
                    dp->pt, dp->pl, pitch, block, 0.0f, buf);
    const KSUF(clamp) c = KSUF(clamp_of)(dp->act);
    const pn_activation_desc* after = KSUF(act_after)(dp->act);
    const float* src[ACCEL_TAPS_MAX];
    for (int64_t b0 = oy0; b0 < oy1; b0 += block) {
        int64_t rows = oy1 - b0 < block ? oy1 - b0 : block;
        float* out = KSUF(subp_fill)(&sp, b0, rows, src);
        KSUF(dw_flat)(src, w, sp.taps, bias, out, rows * pitch);
        for (int64_t r = 0; r < rows; ++r) {
            int64_t oy = b0 + r;
            float* yr = y + oy * ow;
            const float* ar = addend != NULL ? addend + oy * ow : NULL;
            const float* o = out + r * pitch;
            for (int64_t ox = 0; ox < ow; ox += VW) {
                KSUF(dw_finish)(KSUF(vload)(o + ox), ar, c, yr, ox, ow);
            }
            if (after != NULL) {
                KSUF(activation)(after, yr, yr, ow);
            }
        }
    }
}

/* y[k] = clamp(bias[k] + sum_t wt[t][k] * src[t][k] (+ add[k])) for k < n channels. */
static void KSUF(dw_pixel)(const float* const* src, const float* const* wt, int64_t taps,
                           const float* bias, const float* add, KSUF(clamp) c, float* y,
                           int64_t n) {
    for (int64_t k = 0; k < n; k += VW) {
        int64_t rem = n - k;
        vf acc;
        if (rem >= VW) {
            acc = bias != NULL ? KSUF(vload)(bias + k) : KSUF(vset1)(0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                acc = KSUF(vfma)(KSUF(vload)(wt[t] + k), KSUF(vload)(src[t] + k), acc);
            }
            if (add != NULL) {
                acc = KSUF(vadd)(acc, KSUF(vload)(add + k));
            }
        } else {
            acc = bias != NULL ? KSUF(vload_n)(bias + k, rem) : KSUF(vset1)(0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                acc = KSUF(vfma)(KSUF(vload_n)(wt[t] + k, rem), KSUF(vload_n)(src[t] + k, rem), acc);
            }
            if (add != NULL) {
                acc = KSUF(vadd)(acc, KSUF(vload_n)(add + k, rem));
            }
        }
        if (c.on) {
            acc = KSUF(vclamp)(c, acc);
        }
        if (rem >= VW) {
            KSUF(vstore)(y + k, acc);
        } else {
            KSUF(vstore_n)(y + k, acc, rem);
        }
    }
}

static void KSUF(dw_nhwc)(const accel_dw_params* dp, const float* x, const float* wt,
                          const float* bias, const float* addend, float* y, int64_t oy0,
                          int64_t oy1) {
    const int64_t ow = dp->ow, c = dp->c, kh = dp->kh, kw = dp->kw;
    const KSUF(clamp) cl = KSUF(clamp_of)(dp->act);
    const pn_activation_desc* after = KSUF(act_after)(dp->act);
    const float* src[ACCEL_TAPS_MAX];
    const float* wp[ACCEL_TAPS_MAX];
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t at = (oy * ow + ox) * c;
            float* yo = y + at;
            const float* ad = addend != NULL ? addend + at : NULL;
            int64_t t = 0;
            for (int64_t ky = 0; ky < kh; ++ky) {
                int64_t iy = oy * dp->sh - dp->pt + ky * dp->dh;
                if (iy < 0 || iy >= dp->ih) {
                    continue;
                }
                for (int64_t kx = 0; kx < kw; ++kx) {
                    int64_t ix = ox * dp->sw - dp->pl + kx * dp->dw;
                    if (ix < 0 || ix >= dp->iw) {
                        continue;
                    }
                    src[t] = x + (iy * dp->iw + ix) * c;
                    wp[t] = wt + (ky * kw + kx) * c;
                    ++t;
                }
            }
            KSUF(dw_pixel)(src, wp, t, bias, ad, cl, yo, c);
            if (after != NULL) {
                KSUF(activation)(after, yo, yo, c);
            }
        }
    }
}
