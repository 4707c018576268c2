/*
 * CpuAcc kernels, reductions: the row and column helpers of softmax (lane arrays in plain C
 * for the auto-vectorizer) and sum_row (on the vector primitives of kernels/vector_primitives.h).
 *
 * Part of CpuAcc's vector kernels, compiled once per ISA: kernels/vector_kernels_body.h includes it inside
 * kernels/vector_kernels_portable.c, kernels/vector_kernels_avx2.c and kernels/vector_kernels_avx512.c, and KSUF(name) appends the ISA's suffix.
 * Included nowhere else (no include guard: each ISA's file includes it once).
 */
#define LANES 16

/* ---- Softmax helpers -------------------------------------------------------- */

/* The largest of x[0..n) (-inf for n = 0), NaN when one is NaN: on kernels/vector_primitives.h's vectors (vmax
 * skips NaN: tracked apart), two accumulators; the maximum is exact, so any order gives it. (The
 * lane-array loop it replaces, with a NaN flag, was not vectorized: 0.56 ns per element.) */
static float KSUF(max_row)(const float* x, int64_t n) {
    vf m0 = KSUF(vset1)(-INFINITY), m1 = m0;
    vnan bad = KSUF(vnan_none)();
    int64_t i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        const vf a = KSUF(vload)(x + i), b = KSUF(vload)(x + i + VW);
        m0 = KSUF(vmax)(a, m0);
        m1 = KSUF(vmax)(b, m1);
        bad = KSUF(vnan_or)(bad, a, b);
    }
    float mx[VW];
    KSUF(vstore)(mx, KSUF(vnan_apply)(bad, KSUF(vmax)(m0, m1)));
    float m = -INFINITY;
    int nan = 0;
    for (int j = 0; j < VW; ++j) {
        m = mx[j] > m ? mx[j] : m;
        nan |= mx[j] != mx[j];
    }
    for (; i < n; ++i) {
        const float v = x[i];
        m = v > m ? v : m;
        nan |= v != v;
    }
    return nan ? NAN : m;
}

static float KSUF(exp_sub_sum)(const float* x, float m, float* y, int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
#if KHAVE_ROW512 /* the loop below on one zmm of the LANES (16) lanes: the same sums */
    {
        const __m512 vm = _mm512_set1_ps(m);
        __m512 va = _mm512_setzero_ps();
        for (; i + LANES <= n; i += LANES) {
            const __m512 e = KSUF(v_exp)(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
            _mm512_storeu_ps(y + i, e);
            va = _mm512_add_ps(va, e);
        }
        _mm512_storeu_ps(acc, va);
    }
#endif
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; ++j) {
            float e = KSUF(vm_exp)(x[i + j] - m);
            y[i + j] = e;
            acc[j] += e;
        }
    }
    float s = 0.0f;
    for (; i < n; ++i) {
        float e = KSUF(vm_exp)(x[i] - m);
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
    int64_t i = 0;
#if KHAVE_ROW512
    for (; i + 16 <= n; i += 16) {
        const __m512 e = KSUF(v_exp)(_mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(m + i)));
        _mm512_storeu_ps(y + i, e);
        _mm512_storeu_ps(s + i, _mm512_add_ps(_mm512_loadu_ps(s + i), e));
    }
#endif
    for (; i < n; ++i) {
        float e = KSUF(vm_exp)(x[i] - m[i]);
        y[i] = e;
        s[i] += e;
    }
}

static void KSUF(mul_cols)(float* y, const float* r, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] *= r[i];
    }
}

/* Sum of x[0..n): four vector accumulators, combined in a fixed order, then the tail. */
static float KSUF(sum_row)(const float* x, int64_t n) {
    vf a0 = KSUF(vset1)(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 4 * VW <= n; i += 4 * VW) {
        a0 = KSUF(vadd)(a0, KSUF(vload)(x + i));
        a1 = KSUF(vadd)(a1, KSUF(vload)(x + i + VW));
        a2 = KSUF(vadd)(a2, KSUF(vload)(x + i + 2 * VW));
        a3 = KSUF(vadd)(a3, KSUF(vload)(x + i + 3 * VW));
    }
    for (; i + VW <= n; i += VW) {
        a0 = KSUF(vadd)(a0, KSUF(vload)(x + i));
    }
    if (i < n) {
        a1 = KSUF(vadd)(a1, KSUF(vload_n)(x + i, n - i));
    }
    return KSUF(vsum)(KSUF(vadd)(KSUF(vadd)(a0, a1), KSUF(vadd)(a2, a3)));
}
