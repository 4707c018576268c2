/* CpuAcc SGEMM driver: packing, blocking, threading, portable micro-kernel. */
#include "gemm.h"

#include <math.h>
#include <string.h>

/* ---- threading switch point ------------------------------------------------ */

void accel_cc_parallel(const accel_env* env, int64_t n, accel_range_fn fn, void* ctx) {
    if (n <= 0) {
        return;
    }
    if (env == NULL || env->pool == NULL || n == 1) {
        fn(ctx, 0, n);
        return;
    }
    accel_parallel_for(env->pool, n, fn, ctx);
}

/* ---- activation -------------------------------------------------------------- */

static float clamp01f(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

void accel_cc_activate(const pn_activation_desc* act, float* y, int64_t n) {
    if (act == NULL) {
        return;
    }
    float alpha = act->alpha, beta = act->beta;
    int64_t i;
    switch (act->kind) {
    case PN_ACTIVATION_RELU:
        for (i = 0; i < n; ++i) y[i] = y[i] < 0.0f ? 0.0f : y[i];
        break;
    case PN_ACTIVATION_BOUNDED_RELU:
        for (i = 0; i < n; ++i) {
            float lo = y[i] < alpha ? alpha : y[i];
            y[i] = lo > beta ? beta : lo;
        }
        break;
    case PN_ACTIVATION_LEAKY_RELU:
        for (i = 0; i < n; ++i) y[i] = y[i] >= 0.0f ? y[i] : alpha * y[i];
        break;
    case PN_ACTIVATION_SIGMOID:
        for (i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-y[i]));
        break;
    case PN_ACTIVATION_TANH:
        for (i = 0; i < n; ++i) y[i] = tanhf(y[i]);
        break;
    case PN_ACTIVATION_ELU:
        for (i = 0; i < n; ++i) y[i] = y[i] >= 0.0f ? y[i] : alpha * expm1f(y[i]);
        break;
    case PN_ACTIVATION_HARD_SWISH:
        for (i = 0; i < n; ++i) y[i] = y[i] * clamp01f(y[i] / 6.0f + 0.5f);
        break;
    case PN_ACTIVATION_HARD_SIGMOID:
        for (i = 0; i < n; ++i) y[i] = clamp01f(alpha * y[i] + beta);
        break;
    case PN_ACTIVATION_ABS:
        for (i = 0; i < n; ++i) y[i] = fabsf(y[i]);
        break;
    case PN_ACTIVATION_SQRT:
        for (i = 0; i < n; ++i) y[i] = sqrtf(y[i]);
        break;
    case PN_ACTIVATION_SQUARE:
        for (i = 0; i < n; ++i) y[i] = y[i] * y[i];
        break;
    case PN_ACTIVATION_LINEAR:
        for (i = 0; i < n; ++i) y[i] = alpha * y[i] + beta;
        break;
    case PN_ACTIVATION_INVALID:
        break;
    }
}

/* ---- portable micro-kernel (4x16) --------------------------------------------- */

#ifndef PORT_MR
#define PORT_MR 4
#endif
#ifndef PORT_NR
#define PORT_NR 16
#endif
#ifndef PORT_MC
#define PORT_MC 128
#endif
#ifndef PORT_NCJ
#define PORT_NCJ 256
#endif

static void gemm_ukr_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                              int accumulate) {
    float acc[PORT_MR][PORT_NR];
    memset(acc, 0, sizeof(acc));
    for (int64_t p = 0; p < kc; ++p) {
        for (int i = 0; i < PORT_MR; ++i) {
            float av = a[i];
            for (int j = 0; j < PORT_NR; ++j) {
                acc[i][j] += av * b[j];
            }
        }
        a += PORT_MR;
        b += PORT_NR;
    }
    for (int i = 0; i < PORT_MR; ++i) {
        float* ci = c + i * ldc;
        if (accumulate) {
            for (int j = 0; j < PORT_NR; ++j) ci[j] += acc[i][j];
        } else {
            for (int j = 0; j < PORT_NR; ++j) ci[j] = acc[i][j];
        }
    }
}

static const gemm_arch ARCH_PORTABLE = {PORT_MR, PORT_NR, PORT_MC, PORT_NCJ, gemm_ukr_portable};
#if defined(ACCEL_HAVE_X86_KERNELS)
static const gemm_arch ARCH_AVX2 = {6, 16, 120, 256, gemm_ukr_avx2_6x16};
#endif
#if defined(ACCEL_HAVE_X86_KERNELS)
static const gemm_arch ARCH_AVX512 = {14, 32, 112, 512, gemm_ukr_avx512_14x32};
#endif

const gemm_arch* gemm_arch_for(accel_isa isa) {
#if defined(ACCEL_HAVE_X86_KERNELS)
    __builtin_cpu_init();
    if (isa == ACCEL_ISA_AVX512 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma")) {
        return &ARCH_AVX512;
    }
    if ((isa == ACCEL_ISA_AVX2 || isa == ACCEL_ISA_AVX512) && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        return &ARCH_AVX2;
    }
#endif
    (void)isa;
    return &ARCH_PORTABLE;
}

/* ---- packing -------------------------------------------------------------------- */

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* K block size: equal blocks of at most GEMM_KC (K = 576 -> 3 x 192, not 256 + 256 + 64).
 * Packed layouts and gemm_run both step by it. */
static int64_t kc_step(int64_t k) {
    int64_t blocks = (k + GEMM_KC - 1) / GEMM_KC;
    return blocks > 0 ? (k + blocks - 1) / blocks : GEMM_KC;
}

/* One A panel: rows [i0, i0+mr) (zero past m), cols [p0, p0+kc) -> dst[kc][mr]. */
static void pack_a_panel(int mr, int64_t m, int64_t i0, int64_t p0, int64_t kc, const float* src,
                         int64_t rs, int64_t cs, float* dst) {
    int64_t rows = m - i0 < mr ? m - i0 : mr;
    if (cs == 1 && rows == mr) {
        for (int64_t p = 0; p < kc; ++p) {
            const float* s = src + i0 * rs + (p0 + p);
            for (int i = 0; i < mr; ++i) dst[p * mr + i] = s[i * rs];
        }
        return;
    }
    for (int64_t p = 0; p < kc; ++p) {
        const float* s = src + i0 * rs + (p0 + p) * cs;
        int64_t i = 0;
        for (; i < rows; ++i) dst[p * mr + i] = s[i * rs];
        for (; i < mr; ++i) dst[p * mr + i] = 0.0f;
    }
}

/* One B panel: rows [p0, p0+kc), cols [j0, j0+nr) (zero past n) -> dst[kc][nr]. */
static void pack_b_panel(int nr, int64_t n, int64_t j0, int64_t p0, int64_t kc, const float* src,
                         int64_t rs, int64_t cs, float* dst) {
    int64_t cols = n - j0 < nr ? n - j0 : nr;
    if (cs == 1 && cols == nr) {
        for (int64_t p = 0; p < kc; ++p) {
            memcpy(dst + p * nr, src + (p0 + p) * rs + j0, (size_t)nr * sizeof(float));
        }
        return;
    }
    for (int64_t p = 0; p < kc; ++p) {
        const float* s = src + (p0 + p) * rs + j0 * cs;
        int64_t j = 0;
        for (; j < cols; ++j) dst[p * nr + j] = s[j * cs];
        for (; j < nr; ++j) dst[p * nr + j] = 0.0f;
    }
}

size_t gemm_packed_a_floats(const gemm_arch* arch, int64_t m, int64_t k) {
    return (size_t)(round_up(m, arch->mr) * k);
}

size_t gemm_packed_b_floats(const gemm_arch* arch, int64_t k, int64_t n) {
    return (size_t)(round_up(n, arch->nr) * k);
}

/* Layout of a whole packed A: K blocks of GEMM_KC at dst + p0 * Mpad; inside, panel r at
 * r * mr * kc. B likewise with Npad and nr. */
void gemm_pack_a_full(const gemm_arch* arch, int64_t m, int64_t k, const float* src, int64_t rs,
                      int64_t cs, float* dst) {
    int64_t mpad = round_up(m, arch->mr), step = kc_step(k);
    for (int64_t p0 = 0; p0 < k; p0 += step) {
        int64_t kc = k - p0 < step ? k - p0 : step;
        for (int64_t i0 = 0; i0 < m; i0 += arch->mr) {
            pack_a_panel(arch->mr, m, i0, p0, kc, src, rs, cs, dst + p0 * mpad + i0 * kc);
        }
    }
}

void gemm_pack_b_full(const gemm_arch* arch, int64_t k, int64_t n, const float* src, int64_t rs,
                      int64_t cs, float* dst) {
    int64_t npad = round_up(n, arch->nr), step = kc_step(k);
    for (int64_t p0 = 0; p0 < k; p0 += step) {
        int64_t kc = k - p0 < step ? k - p0 : step;
        for (int64_t j0 = 0; j0 < n; j0 += arch->nr) {
            pack_b_panel(arch->nr, n, j0, p0, kc, src, rs, cs, dst + p0 * npad + j0 * kc);
        }
    }
}

size_t gemm_workspace_floats(const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
                             int a_prepacked, int b_prepacked) {
    int64_t kc = k < GEMM_KC ? k : GEMM_KC;
    size_t total = 16; /* alignment slack */
    if (!a_prepacked) total += (size_t)(round_up(m, arch->mr) * kc) + 16;
    if (!b_prepacked) total += (size_t)(round_up(n, arch->nr) * kc) + 16;
    return total;
}

/* ---- driver ------------------------------------------------------------------------ */

typedef struct gemm_ctx {
    const gemm_arch* arch;
    int64_t m, n, k, p0, kc, ldc, mpad, npad, mc;
    int accumulate, last;
    const gemm_operand* a;
    const gemm_operand* b;
    const float* apack; /* this K block's packed A / B */
    const float* bpack;
    float* a_buf;
    float* b_buf;
    float* c;
    int64_t mblocks, nblocks;
    gemm_epilogue_fn epilogue;
    void* epilogue_ctx;
} gemm_ctx;

static void pack_a_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    int mr = g->arch->mr;
    for (int64_t r = begin; r < end; ++r) {
        if (g->a->pack_a != NULL) {
            g->a->pack_a(g->a->pack_ctx, mr, r * mr, g->p0, g->kc, g->a_buf + r * mr * g->kc);
        } else {
            pack_a_panel(mr, g->m, r * mr, g->p0, g->kc, g->a->data, g->a->rs, g->a->cs,
                         g->a_buf + r * mr * g->kc);
        }
    }
}

static void pack_b_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    int nr = g->arch->nr;
    for (int64_t r = begin; r < end; ++r) {
        if (g->b->pack_b != NULL) {
            g->b->pack_b(g->b->pack_ctx, nr, r * nr, g->p0, g->kc, g->b_buf + r * nr * g->kc);
        } else {
            pack_b_panel(nr, g->n, r * nr, g->p0, g->kc, g->b->data, g->b->rs, g->b->cs,
                         g->b_buf + r * nr * g->kc);
        }
    }
}

/* One MC x NC tile of C from this K block's packed A and B. */
static void compute_tile(const gemm_ctx* g, int64_t m0, int64_t mb, int64_t n0, int64_t nb) {
    const gemm_arch* arch = g->arch;
    int mr = arch->mr, nr = arch->nr;
    float tmp[GEMM_MR_MAX * GEMM_NR_MAX] __attribute__((aligned(64)));
    for (int64_t j = n0; j < n0 + nb; j += nr) {
        const float* bp = g->bpack + j * g->kc;
        int64_t cols = g->n - j < nr ? g->n - j : nr;
        for (int64_t i = m0; i < m0 + mb; i += mr) {
            const float* ap = g->apack + i * g->kc;
            int64_t rows = g->m - i < mr ? g->m - i : mr;
            float* c = g->c + i * g->ldc + j;
            if (rows == mr && cols == nr) {
                arch->ukr(g->kc, ap, bp, c, g->ldc, g->accumulate);
            } else {
                arch->ukr(g->kc, ap, bp, tmp, nr, 0);
                for (int64_t r = 0; r < rows; ++r) {
                    float* cr = c + r * g->ldc;
                    const float* tr = tmp + r * nr;
                    if (g->accumulate) {
                        for (int64_t q = 0; q < cols; ++q) cr[q] += tr[q];
                    } else {
                        for (int64_t q = 0; q < cols; ++q) cr[q] = tr[q];
                    }
                }
            }
        }
    }
    if (g->last && g->epilogue != NULL) {
        g->epilogue(g->epilogue_ctx, g->c + m0 * g->ldc + n0, g->ldc, m0, n0, mb, nb);
    }
}

/* Jobs are (M block, N block) pairs over fully packed A and B. */
static void compute_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    for (int64_t job = begin; job < end; ++job) {
        int64_t ib = job / g->nblocks, jb = job % g->nblocks;
        int64_t m0 = ib * g->mc, n0 = jb * g->arch->ncj;
        int64_t mb = g->m - m0 < g->mc ? g->m - m0 : g->mc;
        int64_t nb = g->n - n0 < g->arch->ncj ? g->n - n0 : g->arch->ncj;
        compute_tile(g, m0, mb, n0, nb);
    }
}

/* Jobs are N blocks: pack that slice of B (it stays in cache), then sweep all of M. */
static void compute_fused_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    int nr = g->arch->nr;
    for (int64_t jb = begin; jb < end; ++jb) {
        int64_t n0 = jb * g->arch->ncj;
        int64_t nb = g->n - n0 < g->arch->ncj ? g->n - n0 : g->arch->ncj;
        pack_b_range(g, n0 / nr, (n0 + nb + nr - 1) / nr);
        for (int64_t m0 = 0; m0 < g->m; m0 += g->mc) {
            compute_tile(g, m0, g->m - m0 < g->mc ? g->m - m0 : g->mc, n0, nb);
        }
    }
}

/* Jobs are M blocks (B already packed): pack that block of A, then sweep all of N. */
static void compute_fused_a_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    int mr = g->arch->mr;
    for (int64_t ib = begin; ib < end; ++ib) {
        int64_t m0 = ib * g->mc;
        int64_t mb = g->m - m0 < g->mc ? g->m - m0 : g->mc;
        pack_a_range(g, m0 / mr, (m0 + mb + mr - 1) / mr);
        for (int64_t n0 = 0; n0 < g->n; n0 += g->arch->ncj) {
            compute_tile(g, m0, mb, n0, g->n - n0 < g->arch->ncj ? g->n - n0 : g->arch->ncj);
        }
    }
}

static void zero_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    for (int64_t r = begin; r < end; ++r) {
        memset(g->c + r * g->ldc, 0, (size_t)g->n * sizeof(float));
        if (g->epilogue != NULL) {
            g->epilogue(g->epilogue_ctx, g->c + r * g->ldc, g->ldc, r, 0, 1, g->n);
        }
    }
}

static float* align64(float* p) {
    uintptr_t v = (uintptr_t)p;
    return (float*)((v + 63u) & ~(uintptr_t)63u);
}

void gemm_run(const accel_env* env, const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
              const gemm_operand* a, const gemm_operand* b, float* c, int64_t ldc, float* workspace,
              gemm_epilogue_fn epilogue, void* epilogue_ctx) {
    gemm_ctx g;
    memset(&g, 0, sizeof(g));
    g.arch = arch;
    g.m = m;
    g.n = n;
    g.k = k;
    g.ldc = ldc;
    g.a = a;
    g.b = b;
    g.c = c;
    g.epilogue = epilogue;
    g.epilogue_ctx = epilogue_ctx;
    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0) {
        accel_cc_parallel(env, m, zero_range, &g);
        return;
    }
    g.mpad = round_up(m, arch->mr);
    g.npad = round_up(n, arch->nr);
    g.mblocks = (m + arch->mc - 1) / arch->mc;
    /* balanced M blocks (e.g. M = 128 -> 2 x 66, not 120 + 8), multiples of mr */
    g.mc = round_up((m + g.mblocks - 1) / g.mblocks, arch->mr);
    g.nblocks = (n + arch->ncj - 1) / arch->ncj;
    int64_t kc_max = k < GEMM_KC ? k : GEMM_KC;
    float* ws = align64(workspace);
    if (a->packed == NULL) {
        g.a_buf = ws;
        ws = align64(ws + g.mpad * kc_max);
    }
    if (b->packed == NULL) {
        g.b_buf = ws;
    }
    /* Pack B per N block inside the compute jobs when there are enough of them. */
    int threads = env != NULL ? accel_pool_size(env->pool) : 1;
    int fused = b->packed == NULL && g.nblocks >= threads;
    /* Or pack A per M block inside the jobs when B is prepacked. */
    int fused_a = a->packed == NULL && b->packed != NULL && g.mblocks >= threads;
    int64_t step = kc_step(k);
    for (int64_t p0 = 0; p0 < k; p0 += step) {
        g.p0 = p0;
        g.kc = k - p0 < step ? k - p0 : step;
        g.accumulate = p0 > 0;
        g.last = p0 + g.kc >= k;
        if (a->packed != NULL) {
            g.apack = a->packed + p0 * g.mpad;
        } else if (fused_a) {
            g.apack = g.a_buf;
            g.bpack = b->packed + p0 * g.npad;
            accel_cc_parallel(env, g.mblocks, compute_fused_a_range, &g);
            continue;
        } else {
            accel_cc_parallel(env, g.mpad / arch->mr, pack_a_range, &g);
            g.apack = g.a_buf;
        }
        if (b->packed != NULL) {
            g.bpack = b->packed + p0 * g.npad;
        } else if (fused) {
            g.bpack = g.b_buf;
            accel_cc_parallel(env, g.nblocks, compute_fused_range, &g);
            continue;
        } else {
            accel_cc_parallel(env, g.npad / arch->nr, pack_b_range, &g);
            g.bpack = g.b_buf;
        }
        accel_cc_parallel(env, g.mblocks * g.nblocks, compute_range, &g);
    }
}
