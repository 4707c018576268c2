/*
 * CpuAcc kernels, elementwise math: exp, expm1, log, log1p, tanh, sigmoid, erf and the
 * normal CDF of GELU, as branch-free scalar functions in plain C that the loops calling them
 * (kernels/elementwise_rows.h: activation, math_row; kernels/softmax_rows.h: softmax) get vectorized by the
 * compiler for each ISA: every case is computed and the result chosen with selects; integer
 * work is on int32 (exponent bits), rounding uses the 1.5 * 2^23 trick (no floorf, which SSE2
 * cannot vectorize); no libm call. The AVX-512 build's rows use the intrinsic forms at the end
 * of this file instead (v_exp, v_gelu, ...: the same operations, so the same bits as the AVX2
 * build, with vscalefps, vrndscaleps and lane masks; about twice the speed per vector of the
 * compiler's vectorization) and KROW512, the row loop over them.
 *
 * Accuracy, measured by tests/cpuacc/test_vector_math.py against float64 math/NumPy (every
 * float32 in a sweep of 2^20+ values over the whole range, each ISA): see the table in
 * plugins/accel/README.md ("Accuracy"). Edges: NaN in gives NaN out (the input NaN itself);
 * exp overflows to +inf above 88.72 and goes through the subnormals to +0 below -103.97;
 * log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, subnormal inputs are exact powers
 * of two apart as for normal ones; tanh, sigmoid and erf saturate exactly (tanh(+-inf) = +-1,
 * sigmoid(-inf) = 0, erf(+-inf) = +-1); odd functions keep the sign of -0.
 *
 * The polynomial coefficients of erf, erfc and tanh were fitted for this file (weighted
 * least squares driven to the minimax relative error, each coefficient rounded to float32
 * before the next ones were refitted), and so were exp's and the normal CDF's; log's are Cephes'
 * (S. Moshier).
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */

/* a * b + c: one fused multiply-add (one rounding) in the builds that have FMA (AVX2, AVX-512),
 * a product and a sum in the portable build. The two give results within the stated bounds;
 * the AVX2 and AVX-512 builds give the same bits. */
#if defined(__FMA__)
#define KFMA(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define KFMA(a, b, c) ((a) * (b) + (c))
#endif

/* t rounded to the nearest integer (ties to even), for |t| < 2^22: adding 1.5 * 2^23 leaves
 * no fraction bits; exact, and vectorizable on every ISA. */
KINLINE float KSUF(round_near)(float t) { return (t + 12582912.0f) - 12582912.0f; }

KINLINE float KSUF(from_bits)(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof(f));
    return f;
}

KINLINE uint32_t KSUF(to_bits)(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof(b));
    return b;
}

KINLINE float KSUF(copysign)(float mag, float sgn) {
    return KSUF(from_bits)((KSUF(to_bits)(mag) & 0x7fffffffu) | (KSUF(to_bits)(sgn) & 0x80000000u));
}

/* exp(c + lo) for c in [-104, 89] (finite) and a small correction lo (|lo| <= 2^-12 |c|, e.g.
 * the rounding error of a product, see prod_lo; 0 for plain exp): n = round(c / ln 2), r = c -
 * n ln 2 in two steps (Cody-Waite: ln 2 = EXP_LN2_HI + EXP_LN2_LO, the first with 14 significant
 * bits, so n EXP_LN2_HI is exact for |n| < 1024), exp(r) = 1 + r (1 + r P(r)) on |r| <= ln 2 / 2
 * (exp_tail: Horner's scheme to the end, P of degree 4, relative error 3e-9 in exact
 * arithmetic), then times 2^n as two factors 2^(n >> 1) and 2^(n - (n >> 1)), each a normal
 * number: the first product is exact, the second rounds once, also into the subnormals (exp
 * underflows to 0 below -103.97 and overflows to inf above 88.73, so the range is all there
 * is). The callers clamp, and choose NaN, only as far as their arguments need. The polynomial
 * was fitted for this file (as erf's, below); the earlier one was Cephes' 1 + r + r^2 P(r) of
 * degree 7 (two operations more, with n 0.693359375 for the first step). */
#define EXP_LN2_HI 0.693145751953125f
#define EXP_LN2_LO 1.42860677e-6f
/* exp(r) for |r| <= ln 2 / 2 (also kernels/row_kernels_body.h's softmax exponentials) */
KINLINE float KSUF(exp_poly)(float r) {
    float p = 1.3821362518e-03f;
    p = KFMA(p, r, 8.3686709404e-03f);
    p = KFMA(p, r, 4.1668258607e-02f);
    p = KFMA(p, r, 1.6666521132e-01f);
    p = KFMA(p, r, 4.9999994040e-01f);
#if defined(__FMA__)
    return __builtin_fmaf(__builtin_fmaf(p, r, 1.0f), r, 1.0f); /* 1 + r (1 + r P) */
#else
    return (p * (r * r) + r) + 1.0f; /* without the fused steps, 1 + r rounded last keeps 1 ulp */
#endif
}

KINLINE float KSUF(exp_tail)(float r, float fn) {
    const float p = KSUF(exp_poly)(r);
    const int32_t n = (int32_t)fn; /* [-150, 129] */
    const int32_t n1 = n >> 1, n2 = n - n1; /* an arithmetic shift (GCC, Clang): floor(n / 2) */
    return p * KSUF(from_bits)((uint32_t)(n1 + 127) << 23) * KSUF(from_bits)((uint32_t)(n2 + 127) << 23);
}

KINLINE float KSUF(exp_core)(float c, float lo) {
    const float fn = KSUF(round_near)(c * 1.44269504088896341f);
    float r = KFMA(fn, -EXP_LN2_HI, c);
    r = KFMA(fn, -EXP_LN2_LO, r);
    return KSUF(exp_tail)(r + lo, fn);
}

/* exp(x + lo) for any x: clamped to [-104, 89] (no correction then), NaN in, NaN out. */
KINLINE float KSUF(exp_lo)(float x, float lo) {
    float c = x > -104.0f ? x : -104.0f; /* NaN -> -104: the result is chosen below */
    c = c < 89.0f ? c : 89.0f;
    const float y = KSUF(exp_core)(c, c == x ? lo : 0.0f);
    return x != x ? x : y;
}

/* exp(v + lo) for v <= 0 (or -inf): clamped at -104 only. A NaN v gives a finite value: the
 * caller chooses NaN. */
KINLINE float KSUF(exp_neg_lo)(float v, float lo) {
    const float c = v > -104.0f ? v : -104.0f;
    return KSUF(exp_core)(c, c == v ? lo : 0.0f);
}

KINLINE float KSUF(vm_exp)(float x) { return KSUF(exp_lo)(x, 0.0f); }

/* exp(x) - 1: a Taylor polynomial of degree 9 for |x| < 0.5 (keeps the relative accuracy of
 * small results), exp(x) - 1 beyond. */
KINLINE float KSUF(vm_expm1)(float x) {
    float p = 1.0f / 362880.0f;
    p = KFMA(p, x, 1.0f / 40320.0f);
    p = KFMA(p, x, 1.0f / 5040.0f);
    p = KFMA(p, x, 1.0f / 720.0f);
    p = KFMA(p, x, 1.0f / 120.0f);
    p = KFMA(p, x, 1.0f / 24.0f);
    p = KFMA(p, x, 1.0f / 6.0f);
    p = KFMA(p, x, 0.5f);
    p = KFMA(p * x, x, x);
    const float e = KSUF(vm_exp)(x) - 1.0f;
    const float a = x < 0.0f ? -x : x;
    return a < 0.5f ? (x == 0.0f ? x : p) : e; /* -0 stays -0; NaN: e is NaN */
}

/* log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), log(m)
 * = f - f^2 / 2 + f^3 P(f) for f = m - 1, plus e ln 2 in two steps. */
KINLINE float KSUF(vm_log)(float x) {
    const int sub = x < 1.17549435e-38f;
    const float xs = sub ? x * 8388608.0f : x;
    const uint32_t b = KSUF(to_bits)(xs);
    int32_t e = (int32_t)((b >> 23) & 0xffu) - 126; /* xs = m' 2^e, m' in [0.5, 1) */
    float m = KSUF(from_bits)((b & 0x007fffffu) | 0x3f000000u);
    const int small = m < 0.707106781186547524f;
    e = small ? e - 1 : e;
    m = small ? m + m : m;
    e = sub ? e - 23 : e;
    const float f = m - 1.0f;
    const float z = f * f;
    float p = 7.0376836292E-2f;
    p = KFMA(p, f, -1.1514610310E-1f);
    p = KFMA(p, f, 1.1676998740E-1f);
    p = KFMA(p, f, -1.2420140846E-1f);
    p = KFMA(p, f, 1.4249322787E-1f);
    p = KFMA(p, f, -1.6668057665E-1f);
    p = KFMA(p, f, 2.0000714765E-1f);
    p = KFMA(p, f, -2.4999993993E-1f);
    p = KFMA(p, f, 3.3333331174E-1f);
    const float fe = (float)e;
    float y = p * f * z;
    y = KFMA(fe, -2.12194440e-4f, y);
    y = KFMA(-0.5f, z, y);
    y = f + y;
    y = KFMA(fe, 0.693359375f, y);
    y = x == INFINITY ? x : y;
    y = x == 0.0f ? -INFINITY : y; /* and -0 */
    y = x < 0.0f ? NAN : y;
    return x != x ? x : y;
}

/* log(1 + v) for v >= 0 (or NaN): log(u) * v / (u - 1) with u = 1 + v rounded, which cancels
 * the rounding of u (v when u is 1). */
KINLINE float KSUF(log1p_pos)(float v) {
    const float u = 1.0f + v;
    const float d = u - 1.0f;
    const float r = KSUF(vm_log)(u) * (v / (d == 0.0f ? 1.0f : d));
    const float y = d == 0.0f ? v : r;
    return v == INFINITY ? v : y;
}

/* tanh(x): x + x^3 P(x^2) for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1) with x's sign
 * (exp overflows to inf for |x| > 44: exactly 1). */
KINLINE float KSUF(vm_tanh)(float x) {
    const float a = x < 0.0f ? -x : x;
    const float z = x * x;
    float p = -5.692296196e-03f;
    p = KFMA(p, z, 2.062816732e-02f);
    p = KFMA(p, z, -5.373651534e-02f);
    p = KFMA(p, z, 1.333140582e-01f);
    p = KFMA(p, z, -3.333328068e-01f);
    p = KFMA(p * z, x, x);
    const float a2 = a + a < 89.0f ? a + a : 89.0f; /* NaN -> 89: chosen below */
    const float t = 1.0f - 2.0f / (KSUF(exp_core)(a2, 0.0f) + 1.0f);
    const float y = a < 0.625f ? (x == 0.0f ? x : p) : KSUF(copysign)(t, x); /* -0 stays -0 */
    return x != x ? x : y;
}

/* a * b - p exactly, for p = a * b rounded (a finite product): by a fused multiply-add where
 * the build has one, else Dekker's product of Veltkamp's halves (the portable build has no FMA
 * to contract them, and -std=c11 contracts nothing). */
KINLINE float KSUF(prod_lo)(float a, float b, float p) {
#if defined(__FMA__)
    return __builtin_fmaf(a, b, -p);
#else
    const float ca = 4097.0f * a, ah = ca - (ca - a), al = a - ah;
    const float cb = 4097.0f * b, bh = cb - (cb - b), bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
#endif
}

KINLINE float KSUF(square_lo)(float x, float hi) { return KSUF(prod_lo)(x, x, hi); }

/* 1 / (1 + exp(-(w + lo))) for a small correction lo (the rounding error of w when it is a
 * product: see gelu_tanh), as e / (1 + e) (w < 0) or 1 / (1 + e) with e = exp(-|w + lo|) <= 1:
 * no overflow, and a result in the subnormals for w below -87 (exp's own range). */
KINLINE float KSUF(sigmoid_lo)(float w, float lo) {
    const float e = KSUF(exp_neg_lo)(-fabsf(w), w < 0.0f ? lo : -lo);
    const float s = (w < 0.0f ? e : 1.0f) / (1.0f + e);
    return w != w ? w : s;
}

KINLINE float KSUF(vm_sigmoid)(float x) { return KSUF(sigmoid_lo)(x, 0.0f); }

/* x sigmoid(alpha x) (SWISH), alpha x's rounding error passed on to the exponent (none when
 * Veltkamp's split of an operand beyond 2^115 overflows: NaN). */
KINLINE float KSUF(swish)(float x, float alpha) {
    const float w = alpha * x;
    const float lo = KSUF(prod_lo)(alpha, x, w);
    return x * KSUF(sigmoid_lo)(w, lo == lo ? lo : 0.0f);
}

/* SiLU (SWISH with alpha 1: x exact, no rounding error to carry): x e / (1 + e) for x < 0, x /
 * (1 + e) else, e = exp(-|x|): one division for the quotient and the product with x (2.4 ulp at
 * most where SWISH's generic form, a quotient times x, has 2.9). NaN: x / (1 + e) is NaN. */
KINLINE float KSUF(silu)(float x) {
    const float e = KSUF(exp_neg_lo)(-fabsf(x), 0.0f);
    return (x < 0.0f ? x * e : x) / (1.0f + e);
}

/* GELU_TANH: x (1 + tanh(w)) / 2 = x sigmoid(2 w), 2 w = x (C1 + C2 x^2) with C1 = 2 sqrt(2 /
 * pi), C2 = 0.044715 C1. 2 w is computed in double-float (each constant as two floats, the
 * square, the products and the sum with their exact errors), so the exponent carries no
 * rounding of float32 size: in the negative tail, where sigmoid(2 w) ~ exp(2 w), a relative
 * error d in 2 w would give a relative error |2 w| d in the result. x is clamped to
 * [-20, 20] for the factor (it rounds to 0 or 1 well before). */
KINLINE float KSUF(gelu_tanh)(float v) {
    const float x = v > -20.0f ? (v < 20.0f ? v : 20.0f) : -20.0f; /* NaN: v * anything is NaN */
    const float c1h = 1.595769167e+00f, c1l = -4.534068054e-08f;
    const float c2h = 7.135481387e-02f, c2l = 2.398832466e-09f;
    const float q = x * x, ql = KSUF(square_lo)(x, q);
    const float s = c2h * q;
    const float sl = KSUF(prod_lo)(c2h, q, s) + (c2h * ql + c2l * q);
    const float t = c1h + s; /* TwoSum: t + tl = c1h + s exactly */
    const float bb = t - c1h;
    const float tl = (c1h - (t - bb)) + (s - bb);
    const float w = x * t;
    const float wl = KSUF(prod_lo)(x, t, w) + x * (tl + sl + c1l);
    return v * KSUF(sigmoid_lo)(w, wl);
}

/* exp(hx a) of the exact product, for hx a in [-112.5, 0] (where exp_tail's two factors are
 * normal numbers; Phi's -a / 2 * a, erf's -a * a): with a fused multiply-add the reduction's first step
 * takes the product whole (hx a - n 0.693359375 rounded once; n 0.693359375 is exact), else
 * exp_core of the rounded product and its exact error (Dekker's product). */
KINLINE float KSUF(exp_prod)(float hx, float a) {
    const float v = hx * a;
#if defined(__FMA__)
    const float fn = KSUF(round_near)(v * 1.44269504088896341f);
    float r = __builtin_fmaf(hx, a, -(fn * EXP_LN2_HI));
    r = KFMA(fn, -EXP_LN2_LO, r);
    return KSUF(exp_tail)(r, fn);
#else
    return KSUF(exp_core)(v, KSUF(prod_lo)(hx, a, v));
#endif
}

/* erf(u) / u - 1 = Q(u^2) for 0 <= u <= 1 (relative error of u + u Q <= 1.5e-9 in exact
 * arithmetic; the 1 kept apart, as 2 / sqrt(pi) = 1.128... has no exact float). */
KINLINE float KSUF(erf_small_q)(float z) {
    float q = 7.806903159e-05f;
    q = KFMA(q, z, -7.997853099e-04f);
    q = KFMA(q, z, 5.187162198e-03f);
    q = KFMA(q, z, -2.685334720e-02f);
    q = KFMA(q, z, 1.128357872e-01f);
    q = KFMA(q, z, -3.761262596e-01f);
    q = KFMA(q, z, 1.283791661e-01f);
    return q;
}

/* erfc(u) exp(u^2) / t = G(t) for 1 <= u <= 4 with t = 1 / (1 + u / 2) (t in [1/3, 2/3]): a
 * polynomial of degree 6 (relative error 7e-9 in exact arithmetic), so erfc(u) = t G(t)
 * exp(-u^2) needs no 1 / u (the form of Numerical Recipes' erfc, the polynomial outside the
 * exponential, as the normal CDF's below). */
KINLINE float KSUF(erf_g)(float t) {
    float p = 9.283057600e-02f;
    p = KFMA(p, t, -3.795813024e-01f);
    p = KFMA(p, t, 4.288947880e-01f);
    p = KFMA(p, t, 4.820783157e-03f);
    p = KFMA(p, t, 2.958177030e-01f);
    p = KFMA(p, t, 2.744935453e-01f);
    p = KFMA(p, t, 2.825930715e-01f);
    return p;
}

/* erf(x): |x| + |x| Q(x^2) below 1, 1 - erfc(|x|) from 1 on (erfc = t G(t) exp(-x^2), the
 * exponent of the exact square: exp_prod), with x's sign. |x| is clamped to 4 (erf rounds to 1
 * from 3.92 on), so infinities need no case of their own. */
KINLINE float KSUF(vm_erf)(float x) {
    float a = x < 0.0f ? -x : x;
    a = a < 4.0f ? a : 4.0f; /* NaN -> 4: chosen below */
    const float z = a * a;
    const float small = KFMA(a, KSUF(erf_small_q)(z), a);
    const float t = 1.0f / KFMA(0.5f, a, 1.0f);
    const float big = 1.0f - t * KSUF(erf_g)(t) * KSUF(exp_prod)(-a, a); /* -a^2 >= -16 */
    const float y = KSUF(copysign)(a < 1.0f ? small : big, x);
    return x != x ? x : y;
}

/* Phi(-a) exp(a^2 / 2) / t = H(t) for t = 1 / (1 + a / (2 sqrt(2))) (the constant as the float
 * PHI_K), 0 <= a <= 14.5 (t in [0.163, 1]): a polynomial of degree 10 (relative error 1.8e-8 in
 * exact arithmetic), H(1) = 1/2 exactly in float arithmetic (Phi(0) = 1/2). H is smooth over the
 * whole range (0.141 at t = 0.163, 1/2 at t = 1): erfc(u) = 2 t H(t) exp(-u^2) holds from u = 0
 * on, so Phi needs neither erf's small-argument polynomial nor a 1 / u (the form of Numerical
 * Recipes' erfc, with the polynomial outside the exponential). */
#define PHI_K 0.353553385f
KINLINE float KSUF(phi_h)(float t) {
    float p = 1.756510325e-02f;
    p = KFMA(p, t, -9.378533065e-02f);
    p = KFMA(p, t, 1.866095364e-01f);
    p = KFMA(p, t, -1.392417550e-01f);
    p = KFMA(p, t, -1.573136635e-02f);
    p = KFMA(p, t, 2.037628926e-02f);
    p = KFMA(p, t, 2.644022927e-02f);
    p = KFMA(p, t, 9.304133803e-02f);
    p = KFMA(p, t, 1.225524396e-01f);
    p = KFMA(p, t, 1.411293745e-01f);
    p = KFMA(p, t, 1.410441399e-01f);
    return p;
}

/* Phi(-a) = t H(t) exp(-a^2 / 2) for 0 <= a <= 15 (phi_h), the exponent of the exact square
 * (exp_prod: in the tail a relative error d in a^2 / 2 would be one of d a^2 / 2 in the
 * result). */
KINLINE float KSUF(phi_q)(float a) {
    const float t = 1.0f / KFMA(a, PHI_K, 1.0f);
    return t * KSUF(phi_h)(t) * KSUF(exp_prod)(-0.5f * a, a);
}

/* The standard normal CDF Phi(x) = (1 + erf(x / sqrt(2))) / 2 with relative accuracy in both
 * tails: q = Phi(-|x|) (phi_q), Phi(x) = q for x < 0, 1 - q for x >= 0 (q <= 1/2, no
 * cancellation). |x| is clamped to 15 (Phi rounds to 0 or 1 long before). */
KINLINE float KSUF(vm_phi)(float x) {
    float a = x < 0.0f ? -x : x;
    a = a < 15.0f ? a : 15.0f; /* NaN -> 15: chosen below */
    const float q = KSUF(phi_q)(a);
    const float y = x < 0.0f ? q : 1.0f - q;
    return x != x ? x : y;
}

/* GELU: x Phi(x) (NaN: the product is NaN) */
KINLINE float KSUF(gelu)(float x) {
    float a = x < 0.0f ? -x : x;
    a = a < 15.0f ? a : 15.0f; /* NaN -> 15 */
    const float q = KSUF(phi_q)(a);
    return x * (x < 0.0f ? q : 1.0f - q);
}

KINLINE float KSUF(clamp01)(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
/* ---- AVX-512 forms ------------------------------------------------------------------------
 * The functions above on 16 lanes with intrinsics, for the rows of the AVX-512 build
 * (kernels/elementwise_rows.h: math_row, activation; kernels/softmax_rows.h: softmax). Each evaluates the same
 * operations in the same order as its scalar form, so the AVX-512 build gives the bits of the
 * AVX2 build, whose compiler vectorizes the scalar forms; what changes is only how: 2^n by
 * vscalefps (p 2^n rounded once, into the subnormals, as the scalar product of two normal
 * factors rounds once), round-to-nearest by vrndscaleps (the 1.5 * 2^23 trick's result),
 * selects by lane masks, and NaN carried through by operand order (vmaxps and vminps return
 * their second operand when one is NaN) instead of a select at the end. */

KINLINE __m512 KSUF(v_sign)(void) { return _mm512_castsi512_ps(_mm512_set1_epi32((int32_t)0x80000000u)); }
KINLINE __m512 KSUF(v_abs)(__m512 x) {
    return _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_castps_si512(KSUF(v_sign)()), _mm512_castps_si512(x)));
}
KINLINE __m512 KSUF(v_negabs)(__m512 x) {
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(KSUF(v_sign)()), _mm512_castps_si512(x)));
}
KINLINE __m512 KSUF(v_xor)(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
/* mag's magnitude with sgn's sign (one vpternlogd: bits of sgn where the mask has them) */
KINLINE __m512 KSUF(v_copysign)(__m512 mag, __m512 sgn) {
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(KSUF(v_sign)()),
                                                         _mm512_castps_si512(sgn), _mm512_castps_si512(mag), 0xca));
}

KINLINE __m512 KSUF(v_round_log2e)(__m512 c) {
    return _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* exp_poly */
KINLINE __m512 KSUF(v_exp_poly)(__m512 r) {
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.3821362518e-03f), r, _mm512_set1_ps(8.3686709404e-03f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1668258607e-02f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666521132e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999994040e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
}

/* exp_tail: exp(r) 2^fn */
KINLINE __m512 KSUF(v_exp_tail)(__m512 r, __m512 fn) {
    const __m512 p = KSUF(v_exp_poly)(r);
    return _mm512_scalef_ps(p, fn);
}

/* exp_core: c finite in [-104, 89] or NaN (NaN out), lo added to the reduced argument. */
KINLINE __m512 KSUF(v_exp_core_lo)(__m512 c, __m512 lo, int has_lo) {
    const __m512 fn = KSUF(v_round_log2e)(c);
    __m512 r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-EXP_LN2_HI), c);
    r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-EXP_LN2_LO), r);
    if (has_lo) {
        r = _mm512_add_ps(r, lo);
    }
    return KSUF(v_exp_tail)(r, fn);
}

KINLINE __m512 KSUF(v_exp_core)(__m512 c) { return KSUF(v_exp_core_lo)(c, c, 0); }

KINLINE __m512 KSUF(v_exp)(__m512 x) {
    const __m512 c = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x)); /* NaN kept */
    return KSUF(v_exp_core)(c);
}

/* exp_neg_lo(v, lo) for v <= 0 or NaN (NaN out) */
KINLINE __m512 KSUF(v_exp_neg_lo)(__m512 v, __m512 lo) {
    const __m512 c = _mm512_max_ps(_mm512_set1_ps(-104.0f), v);
    const __m512 l = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, v, _CMP_EQ_OQ), lo);
    return KSUF(v_exp_core_lo)(c, l, 1);
}

KINLINE __m512 KSUF(v_expm1)(__m512 x) {
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 362880.0f), x, _mm512_set1_ps(1.0f / 40320.0f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.0f / 5040.0f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, x), x, x);
    const __m512 e = _mm512_sub_ps(KSUF(v_exp)(x), _mm512_set1_ps(1.0f));
    const __m512 y = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(KSUF(v_abs)(x), _mm512_set1_ps(0.5f), _CMP_LT_OQ), p);
    /* both have x's sign but p at -0 (+0 then): x's sign, as the scalar form's select */
    return KSUF(v_copysign)(y, x);
}

KINLINE __m512 KSUF(v_tanh)(__m512 x) {
    const __m512 a = KSUF(v_abs)(x);
    const __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(-5.692296196e-03f), z, _mm512_set1_ps(2.062816732e-02f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.373651534e-02f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.333140582e-01f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.333328068e-01f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    const __m512 a2 = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_add_ps(a, a)); /* NaN kept */
    const __m512 e1 = _mm512_add_ps(KSUF(v_exp_core)(a2), _mm512_set1_ps(1.0f));
    const __m512 t = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), e1));
    /* p has x's sign but at -0 (then +0): the sign is x's in both cases */
    const __m512 y = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_LT_OQ), p);
    return KSUF(v_copysign)(y, x);
}

/* sigmoid_lo(w, lo) (has_lo 0: lo is 0) */
KINLINE __m512 KSUF(v_sigmoid_lo)(__m512 w, __m512 lo, int has_lo) {
    const __mmask16 neg = _mm512_cmp_ps_mask(w, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 v = KSUF(v_negabs)(w);
    __m512 e;
    if (has_lo) {
        e = KSUF(v_exp_neg_lo)(v, _mm512_mask_mov_ps(KSUF(v_xor)(lo, KSUF(v_sign)()), neg, lo));
    } else {
        e = KSUF(v_exp_core)(_mm512_max_ps(_mm512_set1_ps(-104.0f), v));
    }
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_div_ps(_mm512_mask_mov_ps(one, neg, e), _mm512_add_ps(one, e));
}

KINLINE __m512 KSUF(v_sigmoid)(__m512 x) { return KSUF(v_sigmoid_lo)(x, x, 0); }

KINLINE __m512 KSUF(v_swish)(__m512 x, __m512 alpha) {
    const __m512 w = _mm512_mul_ps(alpha, x);
    __m512 lo = _mm512_fmsub_ps(alpha, x, w);
    lo = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(lo, lo, _CMP_ORD_Q), lo);
    return _mm512_mul_ps(x, KSUF(v_sigmoid_lo)(w, lo, 1));
}

KINLINE __m512 KSUF(v_silu)(__m512 x) {
    const __m512 e = KSUF(v_exp_core)(_mm512_max_ps(_mm512_set1_ps(-104.0f), KSUF(v_negabs)(x))); /* NaN kept */
    const __m512 num = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, e);
    return _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

/* gelu_tanh: the same double-float steps */
KINLINE __m512 KSUF(v_gelu_tanh)(__m512 v) {
    const __m512 x = _mm512_min_ps(_mm512_set1_ps(20.0f), _mm512_max_ps(_mm512_set1_ps(-20.0f), v)); /* NaN kept */
    const __m512 c1h = _mm512_set1_ps(1.595769167e+00f), c1l = _mm512_set1_ps(-4.534068054e-08f);
    const __m512 c2h = _mm512_set1_ps(7.135481387e-02f), c2l = _mm512_set1_ps(2.398832466e-09f);
    const __m512 q = _mm512_mul_ps(x, x), ql = _mm512_fmsub_ps(x, x, q);
    const __m512 s = _mm512_mul_ps(c2h, q);
    const __m512 sl = _mm512_add_ps(_mm512_fmsub_ps(c2h, q, s), _mm512_add_ps(_mm512_mul_ps(c2h, ql), _mm512_mul_ps(c2l, q)));
    const __m512 t = _mm512_add_ps(c1h, s);
    const __m512 bb = _mm512_sub_ps(t, c1h);
    const __m512 tl = _mm512_add_ps(_mm512_sub_ps(c1h, _mm512_sub_ps(t, bb)), _mm512_sub_ps(s, bb));
    const __m512 w = _mm512_mul_ps(x, t);
    const __m512 wl = _mm512_add_ps(_mm512_fmsub_ps(x, t, w), _mm512_mul_ps(x, _mm512_add_ps(_mm512_add_ps(tl, sl), c1l)));
    return _mm512_mul_ps(v, KSUF(v_sigmoid_lo)(w, wl, 1));
}

/* MISH (kernels/elementwise_rows.h): x n / (n + 2), n = e (e + 2), e = exp(min(x, 20)); x from 20 on */
KINLINE __m512 KSUF(v_mish)(__m512 x) {
    const __m512 lim = _mm512_set1_ps(20.0f), two = _mm512_set1_ps(2.0f);
    const __m512 e = KSUF(v_exp)(_mm512_min_ps(lim, x)); /* NaN kept */
    const __m512 q = _mm512_mul_ps(e, _mm512_add_ps(e, two));
    const __m512 m = _mm512_mul_ps(x, _mm512_div_ps(q, _mm512_add_ps(q, two)));
    return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, lim, _CMP_LT_OQ), m);
}

KINLINE __m512 KSUF(v_erf_small_q)(__m512 z) {
    __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(7.806903159e-05f), z, _mm512_set1_ps(-7.997853099e-04f));
    q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(5.187162198e-03f));
    q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(-2.685334720e-02f));
    q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(1.128357872e-01f));
    q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(-3.761262596e-01f));
    q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(1.283791661e-01f));
    return q;
}

/* exp_prod */
KINLINE __m512 KSUF(v_exp_prod)(__m512 hx, __m512 a) {
    const __m512 fn = KSUF(v_round_log2e)(_mm512_mul_ps(hx, a));
    __m512 r = _mm512_fmadd_ps(hx, a, _mm512_mul_ps(fn, _mm512_set1_ps(-EXP_LN2_HI)));
    r = _mm512_fmadd_ps(fn, _mm512_set1_ps(-EXP_LN2_LO), r);
    return KSUF(v_exp_tail)(r, fn);
}

KINLINE __m512 KSUF(v_erf_g)(__m512 t) {
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(9.283057600e-02f), t, _mm512_set1_ps(-3.795813024e-01f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(4.288947880e-01f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(4.820783157e-03f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(2.958177030e-01f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(2.744935453e-01f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(2.825930715e-01f));
    return p;
}

KINLINE __m512 KSUF(v_erf)(__m512 x) {
    const __m512 a = _mm512_min_ps(_mm512_set1_ps(4.0f), KSUF(v_abs)(x)); /* NaN kept */
    const __m512 z = _mm512_mul_ps(a, a);
    const __m512 small = _mm512_fmadd_ps(a, KSUF(v_erf_small_q)(z), a);
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), a, one));
    const __m512 ex = KSUF(v_exp_prod)(KSUF(v_xor)(a, KSUF(v_sign)()), a);
    const __m512 big = _mm512_sub_ps(one, _mm512_mul_ps(_mm512_mul_ps(t, KSUF(v_erf_g)(t)), ex));
    const __m512 y = _mm512_mask_mov_ps(big, _mm512_cmp_ps_mask(a, one, _CMP_LT_OQ), small);
    return KSUF(v_copysign)(y, x);
}

/* phi_q: a in [0, 15] */
KINLINE __m512 KSUF(v_phi_q)(__m512 a) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(a, _mm512_set1_ps(PHI_K), one));
    __m512 h = _mm512_fmadd_ps(_mm512_set1_ps(1.756510325e-02f), t, _mm512_set1_ps(-9.378533065e-02f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.866095364e-01f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(-1.392417550e-01f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(-1.573136635e-02f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(2.037628926e-02f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(2.644022927e-02f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(9.304133803e-02f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.225524396e-01f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.411293745e-01f));
    h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.410441399e-01f));
    const __m512 hx = _mm512_mul_ps(_mm512_set1_ps(-0.5f), a);
    return _mm512_mul_ps(_mm512_mul_ps(t, h), KSUF(v_exp_prod)(hx, a));
}

KINLINE __m512 KSUF(v_phi)(__m512 x) {
    const __m512 q = KSUF(v_phi_q)(_mm512_min_ps(_mm512_set1_ps(15.0f), KSUF(v_abs)(x))); /* NaN kept */
    /* 1 - q where x >= 0 (or NaN: NaN), q where x < 0 */
    return _mm512_mask_sub_ps(q, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NLT_UQ), _mm512_set1_ps(1.0f), q);
}

/* gelu: |x| clamped to 15 by one vrangeps (NaN -> 15, as gelu's select: x makes the product NaN) */
KINLINE __m512 KSUF(v_gelu)(__m512 x) {
#if defined(__AVX512DQ__) /* CMakeLists.txt's AVX-512 flags include it */
    const __m512 q = KSUF(v_phi_q)(_mm512_range_ps(x, _mm512_set1_ps(15.0f), 0x0a));
#else
    const __m512 q = KSUF(v_phi_q)(_mm512_min_ps(_mm512_set1_ps(15.0f), KSUF(v_abs)(x)));
#endif
    const __m512 f = _mm512_mask_sub_ps(q, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NLT_UQ), _mm512_set1_ps(1.0f), q);
    return _mm512_mul_ps(x, f);
}

/* log: x = m 2^e as in vm_log, from vgetexpps / vgetmantps (m1 in [1, 2), subnormals exact:
 * vm_log's m and e exactly), the same polynomial and sums; the special inputs by one
 * vfixupimmps (NaN: x quieted, +-0: -inf, x < 0 and -inf: NaN, +inf: +inf). */
KINLINE __m512 KSUF(v_log)(__m512 x) {
    const __m512 m1 = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    const __m512 e1 = _mm512_getexp_ps(x);
    const __mmask16 big = _mm512_cmp_ps_mask(m1, _mm512_set1_ps(2.0f * 0.707106781186547524f), _CMP_GE_OQ);
    const __m512 m = _mm512_mask_mul_ps(m1, big, m1, _mm512_set1_ps(0.5f));
    const __m512 fe = _mm512_mask_add_ps(e1, big, e1, _mm512_set1_ps(1.0f));
    const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f));
    const __m512 z = _mm512_mul_ps(f, f);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(7.0376836292E-2f), f, _mm512_set1_ps(-1.1514610310E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.1676998740E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.2420140846E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.4249322787E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.6668057665E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.0000714765E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-2.4999993993E-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(3.3333331174E-1f));
    __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, f), z);
    y = _mm512_fmadd_ps(fe, _mm512_set1_ps(-2.12194440e-4f), y);
    y = _mm512_fmadd_ps(_mm512_set1_ps(-0.5f), z, y);
    y = _mm512_add_ps(f, y);
    y = _mm512_fmadd_ps(fe, _mm512_set1_ps(0.693359375f), y);
    /* tokens by class (vfixupimmps): QNaN 2, SNaN 2, 0 4, +1 0 (keep), -inf 3, +inf 5, x < 0 3, x > 0 0 */
    return _mm512_fixupimm_ps(y, x, _mm512_set1_epi32(0x03530422), 0);
}

/* y[i] = VEXPR for i < n, VEXPR an expression of the __m512 v = x[i .. i + 16) built from
 * the AVX-512 forms above: 16 lanes at a time, the last under a lane mask (each lane's
 * bits are those of a whole vector). x may be y. */
#define KROW512(VEXPR)                                                              \
    do {                                                                            \
        int64_t i_ = 0;                                                             \
        for (; i_ + 32 <= n; i_ += 32) {                                            \
            const __m512 v0_ = _mm512_loadu_ps(x + i_), v1_ = _mm512_loadu_ps(x + i_ + 16); \
            __m512 r0_, r1_;                                                        \
            { const __m512 v = v0_; r0_ = (VEXPR); }                                \
            { const __m512 v = v1_; r1_ = (VEXPR); }                                \
            _mm512_storeu_ps(y + i_, r0_);                                          \
            _mm512_storeu_ps(y + i_ + 16, r1_);                                     \
        }                                                                           \
        for (; i_ + 16 <= n; i_ += 16) {                                            \
            const __m512 v = _mm512_loadu_ps(x + i_);                               \
            _mm512_storeu_ps(y + i_, (VEXPR));                                      \
        }                                                                           \
        if (i_ < n) {                                                               \
            const __mmask16 m_ = (__mmask16)((1u << (n - i_)) - 1u);                \
            const __m512 v = _mm512_maskz_loadu_ps(m_, x + i_);                     \
            _mm512_mask_storeu_ps(y + i_, m_, (VEXPR));                             \
        }                                                                           \
    } while (0)
#define KHAVE_ROW512 1
#else
#define KHAVE_ROW512 0
#endif
