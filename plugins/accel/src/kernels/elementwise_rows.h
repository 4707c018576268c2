/*
 * CpuAcc kernels, elementwise: activation and binary rows in plain C shaped for the
 * auto-vectorizer, and their non-temporal forms for layers larger than the last-level cache,
 * whose stores use _mm512_stream_ps under #if __AVX512F__, _mm256_stream_ps under #if
 * __AVX2__ (plain stores in the portable build).
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
/* ---- Activation ------------------------------------------------------------- */

/* y[i] = act(x[i]) for every kind of backend_api.h, each a loop of its own that the compiler
 * vectorizes (kernels/math_functions.h). Where a formula multiplies x by a factor that tends to 0 (GELU,
 * SWISH, MISH at -inf) the result is what IEEE arithmetic gives the header's formula there
 * (-inf * 0 = NaN), as CpuRef computes it. Kinds whose formula has no NaN case of its own
 * (THRESHOLDED_RELU, SHRINK: comparisons that are false for NaN) give 0 for NaN, as the formula
 * reads; every other kind gives NaN for NaN. */
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
#if KHAVE_ROW512
        KROW512(KSUF(v_sigmoid)(v));
        break;
#endif
        for (i = 0; i < n; ++i) { y[i] = KSUF(vm_sigmoid)(x[i]); }
        break;
    case PN_ACTIVATION_TANH:
#if KHAVE_ROW512
        KROW512(KSUF(v_tanh)(v));
        break;
#endif
        for (i = 0; i < n; ++i) { y[i] = KSUF(vm_tanh)(x[i]); }
        break;
    case PN_ACTIVATION_ELU:
#if KHAVE_ROW512
        KROW512(_mm512_mask_mov_ps(_mm512_mul_ps(_mm512_set1_ps(alpha), KSUF(v_expm1)(v)),
                                   _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ), v));
        break;
#endif
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v >= 0.0f ? v : alpha * KSUF(vm_expm1)(v); /* NaN: expm1 is NaN */
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
    case PN_ACTIVATION_GELU: /* x Phi(x), Phi the normal CDF with relative accuracy in both tails */
#if KHAVE_ROW512
        KROW512(KSUF(v_gelu)(v));
        break;
#endif
        for (i = 0; i < n; ++i) { y[i] = KSUF(gelu)(x[i]); }
        break;
    case PN_ACTIVATION_GELU_TANH:
#if KHAVE_ROW512
        KROW512(KSUF(v_gelu_tanh)(v));
        break;
#endif
        for (i = 0; i < n; ++i) { y[i] = KSUF(gelu_tanh)(x[i]); }
        break;
    case PN_ACTIVATION_SWISH:
        if (alpha == 1.0f) { /* SiLU */
#if KHAVE_ROW512
            KROW512(KSUF(v_silu)(v));
            break;
#endif
            for (i = 0; i < n; ++i) { y[i] = KSUF(silu)(x[i]); }
            break;
        }
#if KHAVE_ROW512
        KROW512(KSUF(v_swish)(v, _mm512_set1_ps(alpha)));
        break;
#endif
        for (i = 0; i < n; ++i) { y[i] = KSUF(swish)(x[i], alpha); }
        break;
    case PN_ACTIVATION_MISH: /* tanh(log(1 + e)) = n / (n + 2) with n = e (e + 2), e = exp(x) */
#if KHAVE_ROW512
        KROW512(KSUF(v_mish)(v));
        break;
#endif
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float e = KSUF(vm_exp)(v < 20.0f ? v : 20.0f);
            float q = e * (e + 2.0f);
            float m = v * (q / (q + 2.0f));
            y[i] = v < 20.0f ? m : v; /* from 20 on the factor rounds to 1; NaN: v */
        }
        break;
    case PN_ACTIVATION_SOFTPLUS: /* max(x, 0) + log(1 + exp(-|x|)): no overflow */
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float a = v < 0.0f ? -v : v;
            float sp = (v > 0.0f ? v : 0.0f) + KSUF(log1p_pos)(KSUF(exp_neg_lo)(-a, 0.0f));
            y[i] = v != v ? v : sp;
        }
        break;
    case PN_ACTIVATION_SOFTSIGN: /* +-inf: inf / inf = NaN, as the formula reads */
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v / (1.0f + fabsf(v)); }
        break;
    case PN_ACTIVATION_SELU:
#if KHAVE_ROW512
        KROW512(_mm512_mul_ps(_mm512_set1_ps(beta),
                              _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_set1_ps(alpha), KSUF(v_expm1)(v)),
                                                 _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v)));
        break;
#endif
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = beta * (v > 0.0f ? v : alpha * KSUF(vm_expm1)(v));
        }
        break;
    case PN_ACTIVATION_CELU:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            float t = alpha * KSUF(vm_expm1)(v / alpha);
            float c = (v > 0.0f ? v : 0.0f) + (t < 0.0f ? t : 0.0f);
            y[i] = v != v ? v : c;
        }
        break;
    case PN_ACTIVATION_THRESHOLDED_RELU:
        for (i = 0; i < n; ++i) { float v = x[i]; y[i] = v > alpha ? v : 0.0f; }
        break;
    case PN_ACTIVATION_SHRINK:
        for (i = 0; i < n; ++i) {
            float v = x[i];
            y[i] = v < -alpha ? v + beta : (v > alpha ? v - beta : 0.0f);
        }
        break;
    case PN_ACTIVATION_SCALED_TANH:
#if KHAVE_ROW512
        KROW512(_mm512_mul_ps(_mm512_set1_ps(alpha), KSUF(v_tanh)(_mm512_mul_ps(_mm512_set1_ps(beta), v))));
        break;
#endif
        for (i = 0; i < n; ++i) { y[i] = alpha * KSUF(vm_tanh)(beta * x[i]); }
        break;
    case PN_ACTIVATION_INVALID:
        if (x != y) {
            memmove(y, x, (size_t)n * sizeof(float));
        }
        break;
    }
}

/* ---- Elementwise math (accel_math_fn) ------------------------------------------------ */

static void KSUF(math_row)(accel_math_fn fn, const float* x, float* y, int64_t n) {
    int64_t i;
#if KHAVE_ROW512
    switch (fn) {
    case ACCEL_MATH_EXP: KROW512(KSUF(v_exp)(v)); return;
    case ACCEL_MATH_EXPM1: KROW512(KSUF(v_expm1)(v)); return;
    case ACCEL_MATH_LOG: KROW512(KSUF(v_log)(v)); return;
    case ACCEL_MATH_TANH: KROW512(KSUF(v_tanh)(v)); return;
    case ACCEL_MATH_SIGMOID: KROW512(KSUF(v_sigmoid)(v)); return;
    case ACCEL_MATH_ERF: KROW512(KSUF(v_erf)(v)); return;
    case ACCEL_MATH_PHI: KROW512(KSUF(v_phi)(v)); return;
    }
#endif
    switch (fn) {
    case ACCEL_MATH_EXP: for (i = 0; i < n; ++i) y[i] = KSUF(vm_exp)(x[i]); break;
    case ACCEL_MATH_EXPM1: for (i = 0; i < n; ++i) y[i] = KSUF(vm_expm1)(x[i]); break;
    case ACCEL_MATH_LOG: for (i = 0; i < n; ++i) y[i] = KSUF(vm_log)(x[i]); break;
    case ACCEL_MATH_TANH: for (i = 0; i < n; ++i) y[i] = KSUF(vm_tanh)(x[i]); break;
    case ACCEL_MATH_SIGMOID: for (i = 0; i < n; ++i) y[i] = KSUF(vm_sigmoid)(x[i]); break;
    case ACCEL_MATH_ERF: for (i = 0; i < n; ++i) y[i] = KSUF(vm_erf)(x[i]); break;
    case ACCEL_MATH_PHI: for (i = 0; i < n; ++i) y[i] = KSUF(vm_phi)(x[i]); break;
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

/* y[i] += a * x[i]: a row of a matrix-vector product (MatMul with one row, ops/matmul.c). */
static void KSUF(axpy_row)(float* y, float a, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] += a * x[i];
    }
}

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
    case PN_BINARY_POWER: /* x^2 (YOLO's box sizes): the product, vectorized and correctly rounded */
        if (!sb && b[0] == 2.0f && sa) {
            for (i = 0; i < n; ++i) y[i] = a[i] * a[i];
        } else {
            BIN_LOOPS(powf(x, z));
        }
        break;
    case PN_BINARY_PRELU: BIN_LOOPS(x >= 0.0f ? x : x * z); break;
    default: break; /* the 1.1 operations: refused by backend.c (check_binary) */
    }
}

/* ---- Non-temporal output (accel_env.stream_bytes) -----------------------------------
 * For layers whose inputs and outputs together exceed the last-level cache: the output would
 * not stay cached for the next layer anyway, and storing it with non-temporal stores saves
 * the read of each destination line that an ordinary store first makes. The row is computed
 * STREAM_BLOCK floats at a time into a stack buffer (L1), then copied out; blocks of 128-512
 * floats ran 16 M-element add and relu at 25 and 30-32 GB/s on Zen 4 (plain stores: 20-22,
 * 19-25), 1024-4096 float blocks slower than plain stores. */
#define STREAM_BLOCK 256

/* y[0, n) = t[0, n), non-temporally where y + i is vector-aligned (t is 64-byte aligned, y
 * is when the caller started it at stream_head). */
static void KSUF(stream_store)(float* y, const float* t, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) _mm512_stream_ps(y + i, _mm512_load_ps(t + i));
#elif defined(__AVX2__)
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(y + i, _mm256_load_ps(t + i));
#endif
    memcpy(y + i, t + i, (size_t)(n - i) * sizeof(float));
}

/* Orders the non-temporal stores before what follows (the pool's barrier, another thread's
 * reads). */
KINLINE void KSUF(stream_fence)(void) {
#if defined(__AVX512F__) || defined(__AVX2__)
    _mm_sfence();
#endif
}

/* Floats from y to the next 64-byte boundary, at most n. */
KINLINE int64_t KSUF(stream_head)(const float* y, int64_t n) {
    int64_t h = (int64_t)((64u - ((uintptr_t)y & 63u)) & 63u) / (int64_t)sizeof(float);
    return h < n ? h : n;
}

/* Elements [i, i + m) of act(a op b) into dst[0, m) with ordinary stores (op
 * PN_BINARY_INVALID: act(a); act NULL: no activation; a, b as in binary_row). */
KINLINE void KSUF(rows_to)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                           const pn_activation_desc* act, float* dst, int64_t i, int64_t m) {
    const float* src = a + (sa ? i : 0);
    if (op != PN_BINARY_INVALID) {
        KSUF(binary_row)(op, src, sa, b + (sb ? i : 0), sb, dst, m);
        src = dst;
    }
    if (act != NULL) KSUF(activation)(act, src, dst, m);
}

#if defined(__AVX512F__) || defined(__AVX2__)
KINLINE void KSUF(vstream)(float* p, vf v) { /* p vector-aligned */
#if defined(__AVX512F__)
    _mm512_stream_ps(p, v);
#else
    _mm256_stream_ps(p, v);
#endif
}

/* One loop of stream_fused: v = x op z (op ADD, SUB, MUL, DIV; INVALID: x) clamped to
 * [lo, hi] when `clamp` (max/min take the value when it is NaN: NaN stays NaN, -0 stays -0,
 * as the scalar selects of activation do). */
#define STREAM_FUSED_LOOP(EXPR)                                                            \
    for (; i + VW <= n; i += VW) {                                                         \
        const vf x = sa ? KSUF(vload)(a + i) : xs;                                         \
        const vf z = sb ? KSUF(vload)(b + i) : zs;                                         \
        vf v = (EXPR);                                                                     \
        (void)z;                                                                           \
        if (clamp) v = KSUF(vmin)(vhi, KSUF(vmax)(vlo, v));                                \
        KSUF(vstream)(y + i, v);                                                           \
    }

/* act(a op b) for whole vectors from i on (y + i vector-aligned), each result stored
 * non-temporally as soon as it is computed, for the ops and activations that are one
 * vector instruction or two: op ADD, SUB, MUL, DIV or INVALID (a alone); act NULL, RELU or
 * BOUNDED_RELU. Returns where it stopped (i when the case is not one of those). Loads and
 * streamed stores interleaved this way ran a 16 M-element add at 31-32 GB/s on Zen 4, one
 * thread, where the STREAM_BLOCK buffer of binary_row_stream ran it at 26-29. */
KINLINE int64_t KSUF(stream_fused)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                                   const pn_activation_desc* act, float* y, int64_t i, int64_t n) {
    int clamp = 0;
    float lo = -INFINITY, hi = INFINITY;
    if (act != NULL) {
        if (act->kind == PN_ACTIVATION_RELU) {
            lo = 0.0f;
        } else if (act->kind == PN_ACTIVATION_BOUNDED_RELU) {
            lo = act->alpha;
            hi = act->beta;
        } else if (act->kind != PN_ACTIVATION_INVALID) {
            return i;
        }
        clamp = act->kind != PN_ACTIVATION_INVALID;
    }
    if (op == PN_BINARY_INVALID) sb = 0; /* b is not read */
    const vf vlo = KSUF(vset1)(lo), vhi = KSUF(vset1)(hi);
    const vf xs = KSUF(vset1)(sa ? 0.0f : a[0]);
    const vf zs = KSUF(vset1)(sb || op == PN_BINARY_INVALID ? 0.0f : b[0]);
    switch (op) {
    case PN_BINARY_INVALID: STREAM_FUSED_LOOP(x); break;
    case PN_BINARY_ADD: STREAM_FUSED_LOOP(KSUF(vadd)(x, z)); break;
    case PN_BINARY_SUB: STREAM_FUSED_LOOP(KSUF(vsub)(x, z)); break;
    case PN_BINARY_MUL: STREAM_FUSED_LOOP(KSUF(vmul)(x, z)); break;
    case PN_BINARY_DIV: STREAM_FUSED_LOOP(KSUF(vdiv)(x, z)); break;
    default: break;
    }
    return i;
}
#undef STREAM_FUSED_LOOP
#endif

/* act(a op b) (see rows_to) into y[0, n), stored non-temporally from y's first 64-byte
 * boundary on (y may equal a or b when its stride is 1): by stream_fused where it can,
 * else STREAM_BLOCK floats at a time through a buffer. */
static void KSUF(binary_row_stream)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                                    const pn_activation_desc* act, float* y, int64_t n) {
    float buf[STREAM_BLOCK] KALIGN64;
    int64_t i = KSUF(stream_head)(y, n);
    KSUF(rows_to)(op, a, sa, b, sb, act, y, 0, i);
#if defined(__AVX512F__) || defined(__AVX2__)
    i = KSUF(stream_fused)(op, a, sa, b, sb, act, y, i, n);
#endif
    for (; i < n; i += STREAM_BLOCK) {
        const int64_t m = n - i < STREAM_BLOCK ? n - i : STREAM_BLOCK;
        KSUF(rows_to)(op, a, sa, b, sb, act, buf, i, m);
        KSUF(stream_store)(y + i, buf, m);
    }
    KSUF(stream_fence)();
}

/* activation with y stored non-temporally (x == y allowed). */
static void KSUF(activation_stream)(const pn_activation_desc* act, const float* x, float* y, int64_t n) {
    KSUF(binary_row_stream)(PN_BINARY_INVALID, x, 1, NULL, 0, act, y, n);
}
