/*
 * CpuAcc kernels, pooling: NCHW (sub-plane, row-wise and direct paths) and NHWC, on the
 * vector primitives of kernels/vector_primitives.h; under #if __AVX512F__ && __FMA__ also the 3-wide
 * stride-2 NCHW kernel, written with AVX-512 intrinsics (masks, non-temporal stores).
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
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
static void KSUF(pool_nchw_interior)(const accel_pooling_params* pp, const float* x, float* yrow,
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

/* pool_nchw for every kind and geometry: each output column's window walked directly. */
static void KSUF(pool_nchw_direct)(const accel_pooling_params* pp, const float* x, float* y,
                                   int64_t oy0, int64_t oy1) {
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

static void KSUF(pool_nhwc)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
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

/* MAX (NaN wins) or sum of `taps` unit-stride inputs over flat positions: out[p], p < n (whole
 * vectors: out and the inputs are readable/writable up to n rounded up to VW). */
static void KSUF(pool_flat)(int max, const float* const* src, int64_t taps, float* out,
                            int64_t n) {
    for (int64_t p = 0; p < n; p += VW) {
        vf acc;
        if (max) {
            vnan nan = KSUF(vnan_none)();
            acc = KSUF(vset1)(-INFINITY);
            int64_t t = 0;
            for (; t + 1 < taps; t += 2) { /* one NaN check per pair of taps */
                vf v0 = KSUF(vload)(src[t] + p), v1 = KSUF(vload)(src[t + 1] + p);
                acc = KSUF(vmax)(v1, KSUF(vmax)(v0, acc));
                nan = KSUF(vnan_or)(nan, v0, v1);
            }
            if (t < taps) {
                vf v = KSUF(vload)(src[t] + p);
                acc = KSUF(vmax)(v, acc);
                nan = KSUF(vnan_or)(nan, v, v);
            }
            acc = KSUF(vnan_apply)(nan, acc);
        } else {
            acc = KSUF(vset1)(0.0f);
            for (int64_t t = 0; t < taps; ++t) {
                acc = KSUF(vadd)(acc, KSUF(vload)(src[t] + p));
            }
        }
        KSUF(vstore)(out + p, acc);
    }
}

/* y[0..n) = s[0..n) (times r[0..n) when r is not NULL); s and r readable up to n rounded up
 * to VW. */
static void KSUF(row_out)(const float* s, const float* r, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += VW) {
        vf v = KSUF(vload)(s + i);
        if (r != NULL) {
            v = KSUF(vmul)(v, KSUF(vload)(r + i));
        }
        if (n - i >= VW) {
            KSUF(vstore)(y + i, v);
        } else {
            KSUF(vstore_n)(y + i, v, n - i);
        }
    }
}

/* pool_nchw for MAX and AVERAGE through the sub-plane buffer: rows [oy0, oy1) in blocks.
 * AVERAGE divides by the window's count (padding excluded or included) as a multiply by a
 * per-column reciprocal row, rebuilt when the row count changes. */
static void KSUF(pool_nchw_sub)(const accel_pooling_params* pp, const float* x, float* y,
                                int64_t oy0, int64_t oy1, int64_t block, int64_t pitch) {
    const int64_t ow = pp->ow, kw = pp->kw, dw = pp->dw;
    const int max = pp->kind == PN_POOLING_MAX;
    float buf[ACCEL_ROWBUF_FLOATS] KALIGN64;
    float cols[ACCEL_ROWBUF_FLOATS / 2 + VW]; /* AVERAGE: window columns per ox, then 1/count */
    float* rcp = cols + (ow + VW - 1) / VW * VW;
    int64_t rcp_rows = -1;
    if (!max) {
        for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t sx = ox * pp->sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, kw, dw, pp->iw, &tx0, &tx1);
            cols[ox] = (float)(pp->include_padding ? KSUF(padded_taps)(sx, kw, dw, pp->iw, pp->pr)
                                                   : tx1 - tx0);
        }
    }
    KSUF(subp) sp;
    KSUF(subp_init)(&sp, x, pp->ih, pp->iw, pp->kh, kw, pp->sh, pp->sw, pp->dh, dw, pp->pt,
                    pp->pl, pitch, block, max ? -INFINITY : 0.0f, buf);
    const float* src[ACCEL_TAPS_MAX];
    for (int64_t b0 = oy0; b0 < oy1; b0 += block) {
        int64_t rows = oy1 - b0 < block ? oy1 - b0 : block;
        float* out = KSUF(subp_fill)(&sp, b0, rows, src);
        KSUF(pool_flat)(max, src, sp.taps, out, rows * pitch);
        for (int64_t r = 0; r < rows; ++r) {
            int64_t oy = b0 + r;
            if (!max) {
                int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
                KSUF(tap_range)(sy, pp->kh, pp->dh, pp->ih, &ty0, &ty1);
                int64_t n = pp->include_padding ? KSUF(padded_taps)(sy, pp->kh, pp->dh, pp->ih, pp->pb)
                                                : ty1 - ty0;
                if (n != rcp_rows) {
                    for (int64_t ox = 0; ox < ow; ++ox) {
                        rcp[ox] = 1.0f / ((float)n * cols[ox]);
                    }
                    for (int64_t ox = ow; ox < (ow + VW - 1) / VW * VW; ++ox) {
                        rcp[ox] = 0.0f;
                    }
                    rcp_rows = n;
                }
            }
            KSUF(row_out)(out + r * pitch, max ? NULL : rcp, y + oy * ow, ow);
        }
    }
}

/* pool_nchw for MAX and AVERAGE with dilation 1 and stride 1 or 2 along x, by two passes
 * per output row: the kh input rows reduced into one padded row t (vectors along x; padding
 * is -inf / 0), then the kw taps of each output column reduced from t (stride 2: from t's
 * even and odd halves, so every load is unit-stride). Each input row is read from memory once
 * and from cache kh / sh times. Needs the padded row and the output row (twice) to fit in
 * a third of ACCEL_ROWBUF_FLOATS each. */
/* How far ahead the NCHW pooling kernels prefetch input rows: output rows (two-pass kernel),
 * bytes of input (3-wide stride-2 kernel, at least one output row). */
#define POOL_PREFETCH_ROWS 2
#define POOL_PREFETCH_BYTES 8192

/* Input rows [*pf0, *pf1) that output row oy + ahead reads and output row oy + ahead - 1 does
 * not (clipped to the image), for the pooling window of output row oy starting at input row
 * sy: fetched `ahead` rows early, since wide rows start on new pages, where the hardware
 * prefetchers stop. */
static inline void KSUF(prefetch_rows)(const accel_pooling_params* pp, int64_t sy, int64_t ahead, int64_t* pf0,
                                       int64_t* pf1) {
    const int64_t next = sy + ahead * pp->sh; /* first input row of output row oy + ahead */
    const int64_t first = next + pp->kh - pp->sh > sy + pp->kh ? next + pp->kh - pp->sh : sy + pp->kh;
    *pf0 = first > 0 ? first : 0;
    *pf1 = next + pp->kh < pp->ih ? next + pp->kh : pp->ih;
}
static void KSUF(pool_nchw_rows)(const accel_pooling_params* pp, const float* x, float* y,
                                 int64_t oy0, int64_t oy1) {
    const int max = pp->kind == PN_POOLING_MAX;
    const int64_t iw = pp->iw, ow = pp->ow, kw = pp->kw, sw = pp->sw;
    const float fill = max ? -INFINITY : 0.0f;
    float buf[ACCEL_ROWBUF_FLOATS] KALIGN64;
    const int64_t third = ACCEL_ROWBUF_FLOATS / 3 / VW * VW;
    /* padded row: t[j] is input column j - pl; t + pl (column 0) is vector-aligned, so the
     * vertical pass stores whole aligned vectors */
    float* t = buf + (VW - pp->pl % VW) % VW;
    float* te = buf + third;        /* stride 2: t[2k] */
    float* to = buf + 2 * third;    /* stride 2: t[2k + 1] */
    const int64_t tw = (ow - 1) * sw + kw; /* padded columns the windows read */
    for (int64_t j = 0; j < tw + VW; ++j) t[j] = fill;
    if (sw == 2) { /* the lanes past the last output column read here too (their results are dropped) */
        for (int64_t j = 0; j < (tw + 1) / 2 + 2 * VW; ++j) te[j] = to[j] = fill;
    }
    float* rcp_cols = to + third / 2; /* AVERAGE: 1 / (window columns) per output column */
    if (!max) {
        for (int64_t ox = 0; ox < ow + VW; ++ox) {
            int64_t sx = ox * sw - pp->pl, tx0, tx1;
            KSUF(tap_range)(sx, kw, 1, iw, &tx0, &tx1);
            int64_t cols_n = pp->include_padding ? KSUF(padded_taps)(sx, kw, 1, iw, pp->pr) : tx1 - tx0;
            rcp_cols[ox] = ox < ow ? 1.0f / (float)cols_n : 0.0f;
        }
    }
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, 1, pp->ih, &ty0, &ty1);
        float* tr = t + pp->pl; /* input column 0; columns past iw stay at fill */
        int64_t cols = iw < tw - pp->pl ? iw : tw - pp->pl;
        int64_t pf0, pf1;
        KSUF(prefetch_rows)(pp, sy, POOL_PREFETCH_ROWS, &pf0, &pf1);
        int64_t i = 0;
        if (ty1 - ty0 == 3) { /* whole vectors of three rows (3x3 windows inside the image) */
            const float* r0 = x + (sy + ty0) * iw;
            for (; i + VW <= cols; i += VW) {
                for (int64_t r = pf0; r < pf1; ++r) __builtin_prefetch(x + r * iw + i, 0, 3);
                vf a = KSUF(vload)(r0 + i), b = KSUF(vload)(r0 + iw + i), c = KSUF(vload)(r0 + 2 * iw + i);
                vf acc;
                if (max) {
                    vnan nan = KSUF(vnan_or)(KSUF(vnan_none)(), a, b);
                    nan = KSUF(vnan_or)(nan, c, c);
                    acc = KSUF(vnan_apply)(nan, KSUF(vmax)(c, KSUF(vmax)(b, a)));
                } else {
                    acc = KSUF(vadd)(KSUF(vadd)(a, b), c);
                }
                KSUF(vstore)(tr + i, acc);
            }
        }
        for (; i < cols; i += VW) {
            int64_t n = cols - i < VW ? cols - i : VW;
            vf acc = KSUF(vset1)(fill);
            vnan nan = KSUF(vnan_none)();
            for (int64_t r = pf0; r < pf1; ++r) __builtin_prefetch(x + r * iw + i, 0, 3);
            for (int64_t ty = ty0; ty < ty1; ++ty) {
                vf v = KSUF(vload_n_or)(x + (sy + ty) * iw + i, n, KSUF(vset1)(fill));
                if (max) {
                    nan = KSUF(vnan_or)(nan, v, v);
                    acc = KSUF(vmax)(v, acc);
                } else {
                    acc = KSUF(vadd)(acc, v);
                }
            }
            if (max) acc = KSUF(vnan_apply)(nan, acc);
            KSUF(vstore_n)(tr + i, acc, n);
        }
        const float* src = t;
        const float* odd = t;
        if (sw == 2) {
            KSUF(deint)(t, (tw + 1) / 2, te, to);
            src = te;
            odd = to;
        }
        float ry = 1.0f;
        int64_t rows_n = 0;
        if (!max) {
            rows_n = pp->include_padding ? KSUF(padded_taps)(sy, pp->kh, 1, pp->ih, pp->pb) : ty1 - ty0;
            ry = (float)rows_n;
        }
        for (int64_t ox = 0; ox < ow; ox += VW) {
            int64_t n = ow - ox < VW ? ow - ox : VW;
            vf acc = KSUF(vset1)(fill);
            vnan nan = KSUF(vnan_none)();
            for (int64_t kx = 0; kx < kw; ++kx) {
                /* column ox * sw + kx of t */
                const float* p = sw == 2 ? ((kx & 1) ? odd : src) + ox + kx / 2 : src + ox + kx;
                vf v = KSUF(vload)(p);
                if (max) {
                    nan = KSUF(vnan_or)(nan, v, v);
                    acc = KSUF(vmax)(v, acc);
                } else {
                    acc = KSUF(vadd)(acc, v);
                }
            }
            if (max) {
                acc = KSUF(vnan_apply)(nan, acc);
            } else {
                acc = KSUF(vmul)(KSUF(vmul)(acc, KSUF(vload)(rcp_cols + ox)), KSUF(vset1)(1.0f / ry));
            }
            KSUF(vstore_n)(y + oy * ow + ox, acc, n);
        }
    }
}

#if defined(__AVX512F__) && defined(__FMA__)
/* max(a, b) where a NaN in either wins (maxps alone returns b when either is NaN; VRANGEPS
 * returns the number when one operand is a quiet NaN, so it cannot replace this). */
static inline __m512 KSUF(nanmax512)(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}

/* One window row of pool_nchw_w3s2 into the running max or sums of its three column vectors.
 * Max with nanprop: NaN wins; without: plain max, and *nan collects the lanes of a NaN input
 * (the caller redoes the block with nanprop when any is set; NaNs are rare). */
static inline __attribute__((always_inline)) void KSUF(w3_row)(int max, int nanprop, __m512 a, __m512 b, __m512 c,
                                                               __m512* v0, __m512* v1, __m512* v2,
                                                               __mmask16* nan) {
    if (max && nanprop) {
        *v0 = KSUF(nanmax512)(a, *v0);
        *v1 = KSUF(nanmax512)(b, *v1);
        *v2 = KSUF(nanmax512)(c, *v2);
    } else if (max) {
        *v0 = _mm512_max_ps(a, *v0);
        *v1 = _mm512_max_ps(b, *v1);
        *v2 = _mm512_max_ps(c, *v2);
        *nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
    } else {
        *v0 = _mm512_add_ps(*v0, a);
        *v1 = _mm512_add_ps(*v1, b);
        *v2 = _mm512_add_ps(*v2, c);
    }
}

/* The window rows [0, nrows) of one block of pool_nchw_w3s2 (input columns base..base+32 of
 * rows, row pitch iw) reduced into v0, v1, v2 (see w3_row); `inside`: all 33 columns lie in
 * the row, else lanes outside masks m0, m1, m2 are never read and count as fill. Returns the
 * lanes that met a NaN (max without nanprop). */
static inline __attribute__((always_inline)) __mmask16 KSUF(w3_pass)(
    int max, int nanprop, const float* rows, int64_t nrows, int64_t iw, int64_t base, int inside, __mmask16 m0,
    __mmask16 m1, __mmask16 m2, __m512 fill, __m512* v0, __m512* v1, __m512* v2) {
    __mmask16 nan = 0;
    *v0 = *v1 = *v2 = fill;
    for (int64_t r = 0; r < nrows; ++r) {
        if (inside) {
            const float* p = rows + r * iw + base;
            KSUF(w3_row)(max, nanprop, _mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_set1_ps(p[32]), v0, v1,
                         v2, &nan);
        } else {
            const uintptr_t p = (uintptr_t)(rows + r * iw) + (uintptr_t)(base * (int64_t)sizeof(float));
            KSUF(w3_row)(max, nanprop, _mm512_mask_loadu_ps(fill, m0, (const void*)p),
                         _mm512_mask_loadu_ps(fill, m1, (const void*)(p + 16 * sizeof(float))),
                         _mm512_mask_loadu_ps(fill, m2, (const void*)(p + 32 * sizeof(float))), v0, v1, v2, &nan);
        }
    }
    return nan;
}

/* w3_pass over one block; when a max block met a NaN, done again with NaN-propagating max.
 * Returns the lanes that met a NaN. */
static inline __attribute__((always_inline)) __mmask16 KSUF(w3_rows)(
    int max, const float* rows, int64_t nrows, int64_t iw, int64_t base, int inside, __mmask16 m0, __mmask16 m1,
    __mmask16 m2, __m512 fill, __m512* v0, __m512* v1, __m512* v2) {
    const __mmask16 nan = KSUF(w3_pass)(max, 0, rows, nrows, iw, base, inside, m0, m1, m2, fill, v0, v1, v2);
    if (nan) {
        KSUF(w3_pass)(max, 1, rows, nrows, iw, base, inside, m0, m1, m2, fill, v0, v1, v2);
    }
    return nan;
}

/* A non-temporal writer: a contiguous run of floats from y on (any alignment), given in
 * order as vectors of up to 16, gathered into whole 64-byte lines by one permute and a
 * masked move each and streamed line by line; only the run's partial first and last lines
 * take ordinary (masked) stores. (Ordinary stores of the partial lines between streamed
 * ones, as in storing each row of 3x3 stride-2 max pooling of 64x512x512 by itself into an
 * output 16 bytes past a 64-byte boundary, as NumPy places large arrays, ran it 1.3-1.5x
 * slower on Zen 4, one thread, than the same rows written as one run.) */
typedef struct KSUF(ntw) {
    float* line;    /* the 64-byte aligned line being gathered */
    __m512 pending; /* its lanes [first, fill) gathered so far */
    int first;      /* the run's first lane in this line (0 after the first line) */
    int fill;
} KSUF(ntw);

static inline __mmask16 KSUF(lanes_below)(int64_t k) {
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1u);
}

static inline void KSUF(ntw_begin)(KSUF(ntw)* w, float* y) {
    w->line = (float*)((uintptr_t)y & ~(uintptr_t)63);
    w->first = w->fill = (int)(((uintptr_t)y & 63u) / sizeof(float));
    w->pending = _mm512_setzero_ps();
}

/* Lanes [0, count) of v (count <= 16) are the run's next floats. */
static inline void KSUF(ntw_put)(KSUF(ntw)* w, __m512 v, int count) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    /* lane l of s: v[(l - fill) mod 16] (lanes below fill hold what spills into the next line) */
    const __m512 s = _mm512_permutexvar_ps(
        _mm512_and_si512(_mm512_sub_epi32(iota, _mm512_set1_epi32(w->fill)), _mm512_set1_epi32(15)), v);
    const int end = w->fill + count;
    w->pending = _mm512_mask_mov_ps(w->pending, (__mmask16)(KSUF(lanes_below)(end) & ~KSUF(lanes_below)(w->fill)), s);
    if (end < 16) {
        w->fill = end;
        return;
    }
    if (w->first == 0) {
        _mm512_stream_ps(w->line, w->pending);
    } else {
        _mm512_mask_storeu_ps(w->line, (__mmask16)~KSUF(lanes_below)(w->first), w->pending);
        w->first = 0;
    }
    w->line += 16;
    w->pending = s;
    w->fill = end - 16;
}

/* Stores the run's last partial line (the caller fences the streamed ones). */
static inline void KSUF(ntw_end)(KSUF(ntw)* w) {
    if (w->fill > w->first) {
        _mm512_mask_storeu_ps(w->line, (__mmask16)(KSUF(lanes_below)(w->fill) & ~KSUF(lanes_below)(w->first)),
                              w->pending);
    }
}

/* pool_nchw for MAX and AVERAGE with a 3-column window at column stride 2 (3x3 stride-2
 * pooling, the common case) and row dilation 1, in registers: per 16 output columns, the
 * window rows' 33 input columns are reduced down the rows into three vectors (columns
 * base..base+15, base+16..base+31, base+32), split into even and odd columns by two
 * permutes, and each output is max or sum of (even, odd, next even). Columns outside the
 * image load as the fill value (masked loads); input rows a few output rows ahead are
 * prefetched (a plane's wide rows start on new pages, where hardware prefetchers stop);
 * with pp->stream_out, the rows [oy0, oy1) (contiguous) are stored as one non-temporal
 * run (ntw). */
static void KSUF(pool_nchw_w3s2)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                                 int64_t oy1) {
    const int max = pp->kind == PN_POOLING_MAX;
    const int64_t iw = pp->iw, ow = pp->ow, pl = pp->pl;
    const __m512 fill = _mm512_set1_ps(max ? -INFINITY : 0.0f);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    /* AVERAGE: columns counted per window (inside the image, or inside the padded input) */
    const int64_t cnt_lo = pp->include_padding ? -pl : 0, cnt_hi = pp->include_padding ? iw + pp->pr : iw;
    int64_t pf_rows = POOL_PREFETCH_BYTES / (pp->sh * iw * (int64_t)sizeof(float));
    pf_rows = pf_rows < 1 ? 1 : pf_rows;
    const int stream = pp->stream_out;
    KSUF(ntw) nt;
    KSUF(ntw_begin)(&nt, y + oy0 * ow);
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        int64_t sy = oy * pp->sh - pp->pt, ty0, ty1;
        KSUF(tap_range)(sy, pp->kh, 1, pp->ih, &ty0, &ty1);
        const int64_t nrows = ty1 - ty0;
        const float* rows = x + (sy + ty0) * iw;
        float rows_n = 1.0f;
        if (!max) {
            rows_n = (float)(pp->include_padding ? KSUF(padded_taps)(sy, pp->kh, 1, pp->ih, pp->pb) : nrows);
        }
        const __m512 inv_inner = _mm512_set1_ps(1.0f / (3.0f * rows_n)); /* AVERAGE, 3 columns counted */
        float* const yrow = y + oy * ow;
        /* the input rows output row oy + pf_rows adds, prefetched into L1 in address order, an
         * equal share per block of 16 output columns (in address order the DRAM pages and the
         * hardware prefetchers serve them far faster than column by column across rows; into
         * L1 rather than L2: 64x512x512 max pooling from memory 3.2-5.0 against 3.4-5.1 ms,
         * five runs alternated in one process, no change at 64x112x112 in cache) */
        int64_t pf0, pf1;
        KSUF(prefetch_rows)(pp, sy, pf_rows, &pf0, &pf1);
        const float* pf = x + pf0 * iw;
        const double pf_per_col = pf1 > pf0 ? (double)((pf1 - pf0) * iw) / (double)ow : 0.0;
        for (int64_t ox0 = 0; ox0 < ow; ox0 += 16) {
            const int64_t base = 2 * ox0 - pl;
            const int64_t pf_end = (int64_t)(pf_per_col * (double)(ox0 + 16 < ow ? ox0 + 16 : ow));
            for (int64_t c = (int64_t)(pf_per_col * (double)ox0) & ~(int64_t)15; c < pf_end; c += 16) {
                __builtin_prefetch(pf + c, 0, 3);
            }
            __m512 v0, v1, v2;
            __mmask16 nan = 0;
            if (base >= 0 && base + 33 <= iw) {
                nan = KSUF(w3_rows)(max, rows, nrows, iw, base, 1, 0, 0, 0, fill, &v0, &v1, &v2);
            } else {
                const __mmask16 m0 = KSUF(vlanes_in)(base, 0, iw), m1 = KSUF(vlanes_in)(base + 16, 0, iw);
                const __mmask16 m2 = KSUF(vlanes_in)(base + 32, 0, iw) & 1;
                nan = KSUF(w3_rows)(max, rows, nrows, iw, base, 0, m0, m1, m2, fill, &v0, &v1, &v2);
            }
            const __m512 e = _mm512_permutex2var_ps(v0, even, v1);
            const __m512 o = _mm512_permutex2var_ps(v0, odd, v1);
            const __m512 e2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v2), _mm512_castps_si512(e), 1));
            __m512 out;
            if (max) {
                out = nan ? KSUF(nanmax512)(e2, KSUF(nanmax512)(o, e)) : _mm512_max_ps(e2, _mm512_max_ps(o, e));
            } else {
                __m512 cnt = _mm512_set1_ps(3.0f);
                const int interior = base >= cnt_lo && base + 33 <= cnt_hi;
                if (!interior) { /* windows reaching past the counted columns */
                    const __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32((int32_t)base), even); /* 2k */
                    cnt = _mm512_setzero_ps();
                    for (int j = 0; j < 3; ++j) {
                        const __m512i cj = _mm512_add_epi32(c0, _mm512_set1_epi32(j));
                        __mmask16 in = _mm512_cmpge_epi32_mask(cj, _mm512_set1_epi32((int32_t)cnt_lo)) &
                                       _mm512_cmplt_epi32_mask(cj, _mm512_set1_epi32((int32_t)cnt_hi));
                        cnt = _mm512_mask_add_ps(cnt, in, cnt, _mm512_set1_ps(1.0f));
                    }
                }
                const __m512 sum = _mm512_add_ps(_mm512_add_ps(e, o), e2);
                out = interior ? _mm512_mul_ps(sum, inv_inner)
                               : _mm512_div_ps(sum, _mm512_mul_ps(cnt, _mm512_set1_ps(rows_n)));
            }
            if (stream) {
                KSUF(ntw_put)(&nt, out, ow - ox0 < 16 ? (int)(ow - ox0) : 16);
            } else {
                float* const dst = yrow + ox0;
                if (ow - ox0 >= 16) {
                    _mm512_storeu_ps(dst, out);
                } else {
                    _mm512_mask_storeu_ps(dst, (__mmask16)((1u << (ow - ox0)) - 1), out);
                }
            }
        }
    }
    if (stream) {
        KSUF(ntw_end)(&nt);
        _mm_sfence(); /* the non-temporal stores reach memory before the pool's barrier */
    }
}
#endif

/* MAX (NaN wins) or AVERAGE of windows one row high that tile each row: kw == sw, no padding
 * used (1-D pooling lifted to 2-D, MaxPool1d(k)). Each output is its kw consecutive inputs
 * reduced left to right; kw 2, 3 and 4 as loops of constant shape that the compiler
 * vectorizes (unit-stride loads and lane permutes), other widths as the same loop with a
 * variable width. */
static inline float KSUF(max_nan)(float m, float v) { return (v > m || v != v) ? v : m; }

static void KSUF(pool_nchw_tiles)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                                  int64_t oy1) {
    const int64_t iw = pp->iw, ow = pp->ow, kw = pp->kw;
    const float r = 1.0f / (float)kw;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        const float* s = x + oy * pp->sh * iw;
        float* d = y + oy * ow;
        int64_t ox;
        if (pp->kind == PN_POOLING_MAX) {
            switch (kw) {
            case 2: for (ox = 0; ox < ow; ++ox) d[ox] = KSUF(max_nan)(s[2 * ox], s[2 * ox + 1]); break;
            case 3:
                for (ox = 0; ox < ow; ++ox) {
                    d[ox] = KSUF(max_nan)(KSUF(max_nan)(s[3 * ox], s[3 * ox + 1]), s[3 * ox + 2]);
                }
                break;
            case 4:
                for (ox = 0; ox < ow; ++ox) {
                    d[ox] = KSUF(max_nan)(KSUF(max_nan)(KSUF(max_nan)(s[4 * ox], s[4 * ox + 1]), s[4 * ox + 2]),
                                          s[4 * ox + 3]);
                }
                break;
            default:
                for (ox = 0; ox < ow; ++ox) {
                    float m = s[ox * kw];
                    for (int64_t t = 1; t < kw; ++t) {
                        m = KSUF(max_nan)(m, s[ox * kw + t]);
                    }
                    d[ox] = m;
                }
                break;
            }
        } else {
            switch (kw) {
            case 2: for (ox = 0; ox < ow; ++ox) d[ox] = (s[2 * ox] + s[2 * ox + 1]) * r; break;
            case 3: for (ox = 0; ox < ow; ++ox) d[ox] = (s[3 * ox] + s[3 * ox + 1] + s[3 * ox + 2]) * r; break;
            case 4:
                for (ox = 0; ox < ow; ++ox) d[ox] = (s[4 * ox] + s[4 * ox + 1] + s[4 * ox + 2] + s[4 * ox + 3]) * r;
                break;
            default:
                for (ox = 0; ox < ow; ++ox) {
                    float sum = s[ox * kw];
                    for (int64_t t = 1; t < kw; ++t) {
                        sum += s[ox * kw + t];
                    }
                    d[ox] = sum * r;
                }
                break;
            }
        }
    }
}

static void KSUF(pool_nchw)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                            int64_t oy1) {
    if ((pp->kind == PN_POOLING_MAX || pp->kind == PN_POOLING_AVERAGE) && pp->kh == 1 && pp->pt == 0 &&
        pp->pb == 0 && pp->kw == pp->sw && pp->kw > 1 && pp->dw == 1 && pp->pl == 0 && pp->ow * pp->kw <= pp->iw) {
        KSUF(pool_nchw_tiles)(pp, x, y, oy0, oy1);
        return;
    }
#if defined(__AVX512F__) && defined(__FMA__)
    if ((pp->kind == PN_POOLING_MAX || pp->kind == PN_POOLING_AVERAGE) && pp->kw == 3 && pp->sw == 2 &&
        pp->dw == 1 && pp->dh == 1 && pp->iw < ((int64_t)1 << 30)) {
        KSUF(pool_nchw_w3s2)(pp, x, y, oy0, oy1);
        return;
    }
#endif
    if (pp->kind != PN_POOLING_LP && pp->dh == 1 && pp->dw == 1 && (pp->sw == 1 || pp->sw == 2) &&
        pp->iw + pp->pl + pp->pr + pp->kw + 2 * VW <= ACCEL_ROWBUF_FLOATS / 3 / VW * VW &&
        (pp->ow - 1) * pp->sw + pp->kw + 2 * VW <= ACCEL_ROWBUF_FLOATS / 3 / VW * VW &&
        pp->ow + VW <= ACCEL_ROWBUF_FLOATS / 6 / VW * VW - 2 * VW) {
        KSUF(pool_nchw_rows)(pp, x, y, oy0, oy1);
        return;
    }
    int64_t pitch = 0;
    int64_t block = KSUF(subp_rows)(pp->kh, pp->kw, pp->sh, pp->sw, pp->dh, pp->dw, pp->ow, &pitch);
    if (pp->kind != PN_POOLING_LP && block > 0 && 2 * pp->ow + 2 * VW <= ACCEL_ROWBUF_FLOATS / 2) {
        KSUF(pool_nchw_sub)(pp, x, y, oy0, oy1, block, pitch);
    } else {
        KSUF(pool_nchw_direct)(pp, x, y, oy0, oy1);
    }
}
