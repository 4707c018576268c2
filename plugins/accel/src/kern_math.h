/*
 * CpuAcc kernels, scalar math: exp, expm1 and tanh approximations and clamp01, in plain C
 * (the loops that call them are vectorized by the compiler).
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kern_table.h includes it inside
 * kern_portable.c, kern_avx2.c and kern_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
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
