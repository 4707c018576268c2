/*
 * CpuAcc kernels, the sub-plane buffer that the NCHW pooling and depthwise kernels read
 * strided windows from, on the vector primitives of kernels/vector_primitives.h.
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
/* ---- Sub-plane buffer: the padded input split by stride remainders ----------------------
 * A window op with strides (sh, sw) reads padded input (oy * sh + ky * dh, ox * sw + kx * dw).
 * The padded rows and columns are split by their remainders modulo sh and sw into sh * sw
 * sub-planes of pitch P: sub-plane (a, b) element (i, j) = padded (i * sh + a, j * sw + b)
 * (the padding value outside the input). Tap (ky, kx) then reads sub-plane
 * (ky * dh % sh, kx * dw % sw) at flat offset (ky * dh / sh) * P + kx * dw / sw from flat
 * position oy * P + ox, so a block of output rows is one unit-stride 1-D window op over flat
 * positions, computed in whole vectors without any per-row work (the P - ow extra columns of
 * each row are computed and dropped). The block's results go to `out` (pitch P), and from
 * there to the output rows with the epilogue. P >= ow + (kw - 1) * dw / sw. */
typedef struct KSUF(subp) {
    const float* x;                  /* the input plane */
    int64_t ih, iw, pt, pl, sh, sw;
    int64_t pitch;                   /* P */
    int64_t extra_rows;              /* (kh - 1) * dh / sh: sub-plane rows past the block's */
    int64_t block;                   /* output rows per block */
    int64_t taps;
    int64_t tap_plane[ACCEL_TAPS_MAX]; /* per tap (ky, kx): sub-plane index */
    int64_t tap_off[ACCEL_TAPS_MAX];   /* per tap: flat offset inside its sub-plane */
    float pad;
    float* buf;                      /* ACCEL_ROWBUF_FLOATS floats, 64-byte aligned */
} KSUF(subp);

/* d[0..n) = v in whole vectors (may write up to VW - 1 floats past n). */
KINLINE void KSUF(vfill_over)(float* d, float v, int64_t n) {
    const vf pv = KSUF(vset1)(v);
    for (int64_t j = 0; j < n; j += VW) {
        KSUF(vstore)(d + j, pv);
    }
}

/* d[0..n) = s[0..n) in whole vectors, reading s[0..n) only (the last vector's lanes past n,
 * written past d + n, hold v). */
KINLINE void KSUF(vcopy_over)(float* d, const float* s, int64_t n, float v) {
    int64_t j = 0;
    for (; j + VW <= n; j += VW) {
        KSUF(vstore)(d + j, KSUF(vload)(s + j));
    }
    if (j < n) {
        KSUF(vstore)(d + j, KSUF(vload_n_or)(s + j, n - j, KSUF(vset1)(v)));
    }
}

/* Sub-plane rows of input row xr for every column remainder b: d + b * plane gets
 * padded[j * sw + b], j < P (whole-vector stores: may write up to VW - 1 floats past P). */
static void KSUF(subp_row)(const KSUF(subp)* sp, const float* xr, float* d, int64_t plane) {
    const int64_t sw = sp->sw, pitch = sp->pitch, iw = sp->iw, pl = sp->pl;
    if (sw == 2) { /* x[2k] -> remainder pl & 1 at k + pl / 2; x[2k + 1] -> the other at k + (pl + 1) / 2 */
        float* de = d + (pl & 1) * plane;
        float* dd = d + ((pl + 1) & 1) * plane;
        int64_t je = pl >> 1, jd = (pl + 1) >> 1;
        je = je > pitch ? pitch : je;
        jd = jd > pitch ? pitch : jd;
        int64_t ce = (iw + 1) / 2, cd = iw / 2;
        ce = ce > pitch - je ? pitch - je : ce;
        cd = cd > pitch - jd ? pitch - jd : cd;
        int64_t pairs = ce < cd ? ce : cd;
        KSUF(vfill_over)(de, sp->pad, je);
        KSUF(vfill_over)(dd, sp->pad, jd);
        KSUF(deint)(xr, pairs, de + je, dd + jd);
        for (int64_t k = pairs; k < ce; ++k) {
            de[je + k] = xr[2 * k];
        }
        for (int64_t k = pairs; k < cd; ++k) {
            dd[jd + k] = xr[2 * k + 1];
        }
        KSUF(vfill_over)(de + je + ce, sp->pad, pitch - je - ce);
        KSUF(vfill_over)(dd + jd + cd, sp->pad, pitch - jd - cd);
        return;
    }
    for (int64_t b = 0; b < sw; ++b) {
        float* db = d + b * plane;
        int64_t i0 = 0, j0 = pl, cnt = iw; /* first input column with this remainder, its place */
        if (sw > 1) {
            i0 = ((b - pl) % sw + sw) % sw;
            j0 = (i0 + pl) / sw;
            cnt = i0 < iw ? (iw - 1 - i0) / sw + 1 : 0;
        }
        j0 = j0 > pitch ? pitch : j0;
        cnt = cnt > pitch - j0 ? pitch - j0 : cnt;
        KSUF(vfill_over)(db, sp->pad, j0);
        if (sw == 1) {
            KSUF(vcopy_over)(db + j0, xr + i0, cnt, sp->pad);
        } else {
            for (int64_t k = 0; k < cnt; ++k) {
                db[j0 + k] = xr[i0 + k * sw];
            }
        }
        KSUF(vfill_over)(db + j0 + cnt, sp->pad, pitch - j0 - cnt);
    }
}

/* Output rows per block for a layer (0: the buffer cannot hold one row; use the direct
 * kernel), and its pitch. Layout of a block of R rows: sh * sw sub-planes of
 * (R + extra_rows + 1) * P + VW floats (a row and a vector of slack, read only for dropped
 * columns), then the results: R * P rounded up to VW, then VW of slack. */
static int64_t KSUF(subp_rows)(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                               int64_t dw, int64_t ow, int64_t* pitch) {
    const int64_t lim = ACCEL_ROWBUF_FLOATS;
    if (kh * kw > ACCEL_TAPS_MAX || sh > lim || sw > lim || ow > lim || (kw - 1) * dw > lim ||
        (kh - 1) * dh > lim || sh * sw > lim) {
        return 0;
    }
    const int64_t p = ow + (kw - 1) * dw / sw, planes = sh * sw;
    const int64_t fixed = planes * (((kh - 1) * dh / sh + 1) * p + VW) + 3 * VW;
    const int64_t per_row = planes * p + p;
    *pitch = p;
    return fixed + per_row <= lim ? (lim - fixed) / per_row : 0;
}

/* q = v / d, r = v % d for v >= 0, without a division for the common d of 1 and 2. */
KINLINE void KSUF(divmod)(int64_t v, int64_t d, int64_t* q, int64_t* r) {
    if (d == 1) {
        *q = v;
        *r = 0;
    } else if (d == 2) {
        *q = v >> 1;
        *r = v & 1;
    } else {
        *q = v / d;
        *r = v % d;
    }
}

/* Sets up the sub-plane buffer of a layer over input plane x (subp_rows gave block > 0). */
static void KSUF(subp_init)(KSUF(subp)* sp, const float* x, int64_t ih, int64_t iw, int64_t kh,
                            int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                            int64_t pt, int64_t pl, int64_t pitch, int64_t block, float pad,
                            float* buf) {
    sp->x = x;
    sp->ih = ih;
    sp->iw = iw;
    sp->pt = pt;
    sp->pl = pl;
    sp->sh = sh;
    sp->sw = sw;
    sp->pitch = pitch;
    sp->extra_rows = (kh - 1) * dh / sh;
    sp->block = block;
    sp->taps = kh * kw;
    sp->pad = pad;
    sp->buf = buf;
    for (int64_t ky = 0; ky < kh; ++ky) {
        for (int64_t kx = 0; kx < kw; ++kx) {
            int64_t t = ky * kw + kx, qy, ry, qx, rx;
            KSUF(divmod)(ky * dh, sh, &qy, &ry);
            KSUF(divmod)(kx * dw, sw, &qx, &rx);
            sp->tap_plane[t] = ry * sw + rx;
            sp->tap_off[t] = qy * pitch + qx;
        }
    }
}

/* Fills the sub-planes for output rows [oy0, oy0 + rows) and points src[t] at tap t's input
 * for flat position 0; returns the results area (rows * P, rounded up to VW). */
static float* KSUF(subp_fill)(const KSUF(subp)* sp, int64_t oy0, int64_t rows,
                              const float** src) {
    const int64_t pitch = sp->pitch, sub_rows = rows + sp->extra_rows;
    const int64_t plane = (sub_rows + 1) * pitch + VW;
    /* The slack row and vector first (their last store may reach into the next sub-plane's
     * first row, written below; the rows' stores may reach into the slack, still initialized). */
    for (int64_t q = 0; q < sp->sh * sp->sw; ++q) {
        KSUF(vfill_over)(sp->buf + q * plane + sub_rows * pitch, sp->pad, pitch + VW);
    }
    for (int64_t r = 0; r < sub_rows; ++r) { /* input rows in order */
        for (int64_t a = 0; a < sp->sh; ++a) {
            float* d = sp->buf + a * sp->sw * plane + r * pitch;
            int64_t iy = (oy0 + r) * sp->sh + a - sp->pt;
            if (iy >= 0 && iy < sp->ih) {
                KSUF(subp_row)(sp, sp->x + iy * sp->iw, d, plane);
            } else {
                for (int64_t b = 0; b < sp->sw; ++b) {
                    KSUF(vfill_over)(d + b * plane, sp->pad, pitch);
                }
            }
        }
    }
    for (int64_t t = 0; t < sp->taps; ++t) {
        src[t] = sp->buf + sp->tap_plane[t] * plane + sp->tap_off[t];
    }
    return sp->buf + sp->sh * sp->sw * plane + VW;
}
