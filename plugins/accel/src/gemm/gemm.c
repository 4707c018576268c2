/* CpuAcc SGEMM driver: packing, blocking, threading (the micro-kernels: kernels/gemm_kernels.h). */
#include "gemm/gemm.h"

#include <math.h>
#include <string.h>

/* ---- threading switch point ------------------------------------------------ */

void accel_cc_parallel(const accel_env* env, int64_t n, accel_range_fn fn, void* ctx) {
    if (n <= 0) {
        return;
    }
    if (env == NULL || env->threads == NULL || n == 1) {
        fn(ctx, 0, n);
        return;
    }
    accel_parallel_for(env->threads, n, fn, ctx);
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
    if (rs == 1 && rows == mr) {
        for (int64_t p = 0; p < kc; ++p) {
            gemm_copy_row(dst + p * mr, src + i0 + (p0 + p) * cs, mr);
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
            gemm_copy_row(dst + p * nr, src + (p0 + p) * rs + j0, nr);
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

/* Per-job scratch, in floats (each buffer followed by 16 floats of alignment slack). */
typedef struct job_sizes {
    size_t a, b, c; /* packed A block, packed B block, transposed-C accumulator */
} job_sizes;

static job_sizes job_scratch(const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
                             int a_prepacked, int b_prepacked, int c_trans) {
    int64_t kc = k < GEMM_KC ? k : GEMM_KC;
    int64_t mpad = round_up(m, arch->mr), npad = round_up(n, arch->nr);
    /* gemm_job's M blocks: up to 2 mc rows with B prepacked and C as is (their N chunks then
     * narrower, so mc x ncj still bounds the C block) */
    int64_t mc_max = b_prepacked && !c_trans ? 2 * (int64_t)arch->mc : arch->mc;
    int64_t mc = mpad < mc_max ? mpad : mc_max;
    int64_t nc = npad < arch->ncj ? npad : arch->ncj;
    job_sizes js = {0, 0, 0};
    if (!a_prepacked) js.a = (size_t)(mc * kc) + 16;
    if (!b_prepacked) js.b = (size_t)(kc * nc) + 16;
    if (c_trans) js.c = (size_t)(mc * nc) + 16;
    return js;
}

size_t gemm_workspace_floats(const gemm_arch* arch, int threads, int64_t m, int64_t n, int64_t k,
                             int a_prepacked, int b_prepacked, int c_trans) {
    if (m <= 0 || n <= 0 || k <= 0) {
        return 16;
    }
    job_sizes js = job_scratch(arch, m, n, k, a_prepacked, b_prepacked, c_trans);
    return 16 + (size_t)(threads > 1 ? threads : 1) * (js.a + js.b + js.c);
}

/* ---- driver ------------------------------------------------------------------------ */

/* Below this many multiply-adds per thread the GEMM runs on fewer threads. */
#define GEMM_MIN_JOB_WORK ((int64_t)1 << 17)

typedef struct gemm_ctx {
    const gemm_arch* arch;
    int64_t m, n, k, ldc, mpad, npad, step;
    int c_trans;
    const gemm_operand* a;
    const gemm_operand* b;
    float* c;
    float* ws;           /* job j's scratch at ws + j * job_floats */
    job_sizes js;
    size_t job_floats;
    int tm, tn;          /* jobs = tm x tn: M panels split tm ways, N panels tn ways */
    gemm_epilogue_fn epilogue;
    void* epilogue_ctx;
    const gemm_cparts* parts; /* C split by columns (gemm_run_parts), or NULL */
} gemm_ctx;

/* Where C element (row, col) of a not transposed C lies, and its row stride. */
static float* c_at(const gemm_ctx* g, int64_t row, int64_t col, int64_t* ldc) {
    const gemm_cparts* p = g->parts;
    if (p == NULL) {
        *ldc = g->ldc;
        return g->c + row * g->ldc + col;
    }
    int q = 0;
    while (q + 1 < p->count && col >= p->col0[q + 1]) {
        ++q;
    }
    *ldc = p->ld[q];
    return p->base[q] + row * p->ld[q] + (col - p->col0[q]);
}

/* Part `part` of `parts` over [0, n): contiguous and balanced. */
static void split(int64_t n, int64_t parts, int64_t part, int64_t* begin, int64_t* end) {
    int64_t base = n / parts, extra = n % parts;
    *begin = part * base + (part < extra ? part : extra);
    *end = *begin + base + (part < extra ? 1 : 0);
}

/* Packs rows [m0, m0+mb) x K block [p0, p0+kc) of A into dst (panel r at r * mr * kc). */
static void pack_a_block(const gemm_ctx* g, int64_t m0, int64_t mb, int64_t p0, int64_t kc,
                         float* dst) {
    int mr = g->arch->mr;
    if (g->a->pack_a != NULL) {
        g->a->pack_a(g->a->pack_ctx, mr, m0, mb, p0, kc, dst);
        return;
    }
    for (int64_t i = 0; i < mb; i += mr) {
        pack_a_panel(mr, g->m, m0 + i, p0, kc, g->a->data, g->a->rs, g->a->cs, dst + i * kc);
    }
}

/* Packs K block [p0, p0+kc) x cols [n0, n0+nb) of B into dst (panel r at r * nr * kc). */
static void pack_b_block(const gemm_ctx* g, int64_t n0, int64_t nb, int64_t p0, int64_t kc,
                         float* dst) {
    int nr = g->arch->nr;
    if (g->b->pack_b != NULL) {
        g->b->pack_b(g->b->pack_ctx, nr, n0, nb, p0, kc, dst);
        return;
    }
    for (int64_t j = 0; j < nb; j += nr) {
        pack_b_panel(nr, g->n, n0 + j, p0, kc, g->b->data, g->b->rs, g->b->cs, dst + j * kc);
    }
}

/* For an indirect A: rp[r] = &A[m0 + r][0] in place, r < mb (rows past m: any valid row). */
static void ind_rows(const gemm_ctx* g, int64_t m0, int64_t mb, const float** rp) {
    const gemm_indirect* ind = g->a->ind;
    for (int64_t r = 0; r < mb; ++r) {
        int64_t i = m0 + r < g->m ? m0 + r : g->m - 1;
        rp[r] = ind->x + (i / ind->ow) * ind->row_step + (i % ind->ow) * ind->col_step;
    }
}

/* One micro-tile over K block [p0, p0+kc): A panel `ai` packed, or (ai NULL) read in place
 * through its mr row pointers `rp`; B panel bj; C tile c (row stride ldc). */
static void tile(const gemm_ctx* g, const float* ai, const float* const* rp, int64_t p0,
                 int64_t kc, const float* bj, float* c, int64_t ldc, int accumulate) {
    if (ai != NULL) {
        g->arch->ukr(kc, ai, bj, c, ldc, accumulate);
    } else {
        g->arch->ukr_ind(kc, rp, g->a->ind->offs + p0, bj, c, ldc, accumulate);
    }
}

/* The micro-tiles of C block [m0, m0+mb) x [n0, n0+nb) for K block [p0, p0+kc): ap/bp are
 * that block's packed A rows (NULL for an indirect A, whose row pointers are rp) and B
 * columns. C is either the output (row-major, ldc; partial tiles go through a local tile) or,
 * for a transposed C, the job's accumulator (row stride ldt, padded to whole panels). */
static void block_tiles(const gemm_ctx* g, const float* ap, const float* const* rp,
                        const float* bp, int64_t m0, int64_t mb, int64_t n0, int64_t nb,
                        int64_t p0, int64_t kc, int accumulate, float* ctmp, int64_t ldt) {
    const gemm_arch* arch = g->arch;
    int mr = arch->mr, nr = arch->nr;
    float tmp[GEMM_MR_MAX * GEMM_NR_MAX] __attribute__((aligned(64)));
    for (int64_t j = 0; j < nb; j += nr) {
        const float* bj = bp + j * kc;
        int64_t cols = g->n - (n0 + j) < nr ? g->n - (n0 + j) : nr;
        for (int64_t i = 0; i < mb; i += mr) {
            const float* ai = ap != NULL ? ap + i * kc : NULL;
            const float* const* ri = rp != NULL ? rp + i : NULL;
            if (ctmp != NULL) {
                tile(g, ai, ri, p0, kc, bj, ctmp + i * ldt + j, ldt, accumulate);
                continue;
            }
            int64_t rows = g->m - (m0 + i) < mr ? g->m - (m0 + i) : mr;
            int64_t ldc;
            float* c = c_at(g, m0 + i, n0 + j, &ldc);
            if (rows == mr && cols == nr) {
                tile(g, ai, ri, p0, kc, bj, c, ldc, accumulate);
                continue;
            }
            if (ri != NULL && cols == nr && arch->ukr_ind_short != NULL) { /* a short last panel (M = 128) */
                arch->ukr_ind_short((int)rows, kc, ri, g->a->ind->offs + p0, bj, c, ldc, accumulate);
                continue;
            }
            tile(g, ai, ri, p0, kc, bj, tmp, nr, 0);
            for (int64_t r = 0; r < rows; ++r) {
                float* cr = c + r * ldc;
                const float* tr = tmp + r * nr;
                if (accumulate) {
                    for (int64_t q = 0; q < cols; ++q) cr[q] += tr[q];
                } else {
                    for (int64_t q = 0; q < cols; ++q) cr[q] = tr[q];
                }
            }
        }
    }
}

/* A finished C block [m0, m0+mb) x [n0, n0+nb): for a transposed C, stores the job's
 * accumulator into c[j * ldc + i] (the arch's store_t); then runs the epilogue on the block
 * as stored. */
static void finish_block(const gemm_ctx* g, const float* ctmp, int64_t ldt, int64_t m0,
                         int64_t mb, int64_t n0, int64_t nb) {
    int64_t rows = g->m - m0 < mb ? g->m - m0 : mb;
    int64_t cols = g->n - n0 < nb ? g->n - n0 : nb;
    if (!g->c_trans) {
        if (g->epilogue != NULL) {
            g->epilogue(g->epilogue_ctx, g->parts != NULL ? NULL : g->c + m0 * g->ldc + n0,
                        g->parts != NULL ? 0 : g->ldc, m0, n0, rows, cols);
        }
        return;
    }
    float* out = g->c + n0 * g->ldc + m0;
    g->arch->store_t(ctmp, ldt, out, g->ldc, rows, cols);
    if (g->epilogue != NULL) {
        g->epilogue(g->epilogue_ctx, out, g->ldc, n0, m0, cols, rows);
    }
}

/* Job (part) of the GEMM: a rectangle of whole panels, the whole K loop, its own scratch.
 * Loop order: when B has to be packed and C is not transposed, B-outer (each B block is
 * packed once, A blocks stream past it); otherwise A-outer (each A block is packed once,
 * and a transposed C is accumulated per A block in the job's scratch). */
static void gemm_job(void* vctx, int64_t begin, int64_t end) {
    const gemm_ctx* g = (const gemm_ctx*)vctx;
    const gemm_arch* arch = g->arch;
    int mr = arch->mr, nr = arch->nr;
    for (int64_t job = begin; job < end; ++job) {
        int64_t pm0, pm1, pn0, pn1;
        split(g->mpad / mr, g->tm, job / g->tn, &pm0, &pm1);
        split(g->npad / nr, g->tn, job % g->tn, &pn0, &pn1);
        if (pm0 == pm1 || pn0 == pn1) {
            continue;
        }
        int64_t r0 = pm0 * mr, r1 = pm1 * mr, c0 = pn0 * nr, c1 = pn1 * nr;
        float* ws = g->ws + (size_t)job * g->job_floats;
        float* abuf = g->js.a > 0 ? accel_align64(ws) : NULL;
        float* bbuf = g->js.b > 0 ? accel_align64(ws + g->js.a) : NULL;
        float* ctmp = g->js.c > 0 ? accel_align64(ws + g->js.a + g->js.b) : NULL;
        /* balanced blocks of whole panels: M blocks of <= mc rows, N chunks of <= ncj cols. With B
         * prepacked (weights, often streaming from memory: Faster R-CNN's fc6 is 51 MB), a job of up
         * to 2 mc rows is one M block, so each B panel is fetched once per K block, not twice (fc6,
         * M = 150: 94 -> 106 GFLOP/s on one Sapphire Rapids core); its N chunks then shrink so the C
         * block stays within mc x ncj floats, the L2 footprint the arch's sizes were chosen for. */
        int64_t mblocks = (r1 - r0 + arch->mc - 1) / arch->mc;
        int64_t ncj = arch->ncj;
        if (mblocks == 2 && g->b->packed != NULL && !g->c_trans) {
            mblocks = 1;
            ncj = (int64_t)arch->mc * arch->ncj / round_up(r1 - r0, mr) / nr * nr;
            ncj = ncj < nr ? nr : ncj;
        }
        int64_t mc = round_up((r1 - r0 + mblocks - 1) / mblocks, mr);
        int64_t nblocks = (c1 - c0 + ncj - 1) / ncj;
        int64_t nc = round_up((c1 - c0 + nblocks - 1) / nblocks, nr);
        int b_outer = g->b->packed == NULL && !g->c_trans;
        const float* rp_buf[GEMM_MC_MAX];
        const float** rp = g->a->ind != NULL ? rp_buf : NULL; /* the M block's A rows in place */
        for (int64_t n0 = c0; n0 < c1; n0 += nc) {
            int64_t nb = c1 - n0 < nc ? c1 - n0 : nc;
            if (b_outer) {
                for (int64_t p0 = 0; p0 < g->k; p0 += g->step) {
                    int64_t kc = g->k - p0 < g->step ? g->k - p0 : g->step;
                    int last = p0 + kc >= g->k;
                    pack_b_block(g, n0, nb, p0, kc, bbuf);
                    for (int64_t m0 = r0; m0 < r1; m0 += mc) {
                        int64_t mb = r1 - m0 < mc ? r1 - m0 : mc;
                        const float* ap = g->a->packed != NULL ? g->a->packed + p0 * g->mpad + m0 * kc
                                                               : abuf;
                        if (abuf != NULL) pack_a_block(g, m0, mb, p0, kc, abuf);
                        if (rp != NULL) ind_rows(g, m0, mb, rp);
                        block_tiles(g, ap, rp, bbuf, m0, mb, n0, nb, p0, kc, p0 > 0, NULL, 0);
                        if (last) finish_block(g, NULL, 0, m0, mb, n0, nb);
                    }
                }
                continue;
            }
            for (int64_t m0 = r0; m0 < r1; m0 += mc) {
                int64_t mb = r1 - m0 < mc ? r1 - m0 : mc;
                if (rp != NULL) ind_rows(g, m0, mb, rp);
                for (int64_t p0 = 0; p0 < g->k; p0 += g->step) {
                    int64_t kc = g->k - p0 < g->step ? g->k - p0 : g->step;
                    const float* ap = g->a->packed != NULL ? g->a->packed + p0 * g->mpad + m0 * kc
                                                           : abuf;
                    const float* bp = g->b->packed != NULL ? g->b->packed + p0 * g->npad + n0 * kc
                                                           : bbuf;
                    if (abuf != NULL) pack_a_block(g, m0, mb, p0, kc, abuf);
                    if (g->b->packed == NULL) pack_b_block(g, n0, nb, p0, kc, bbuf);
                    block_tiles(g, ap, rp, bp, m0, mb, n0, nb, p0, kc, p0 > 0, ctmp, nc);
                }
                finish_block(g, ctmp, nc, m0, mb, n0, nb);
            }
        }
    }
}

/* Chooses the job grid tm x tn (<= threads jobs) minimizing the largest job's cost:
 * multiply-adds over whole panels, plus the packing that job does (an operand split
 * across jobs on the other dimension is packed by each of them), plus one per operand
 * float it reads (so of two grids with equal work, the one reading less wins). */
static void choose_grid(gemm_ctx* g, int threads) {
    int64_t mp = g->mpad / g->arch->mr, np = g->npad / g->arch->nr;
    int64_t total = g->mpad * g->npad * g->k;
    int64_t max_jobs = total / GEMM_MIN_JOB_WORK;
    if (max_jobs < threads) threads = max_jobs < 1 ? 1 : (int)max_jobs;
    int64_t best = -1;
    g->tm = 1;
    g->tn = 1;
    for (int tm = 1; tm <= threads && tm <= mp; ++tm) {
        int tn = threads / tm < np ? threads / tm : (int)np;
        int64_t rows = (mp + tm - 1) / tm * g->arch->mr, cols = (np + tn - 1) / tn * g->arch->nr;
        int64_t cost = rows * cols * g->k + (rows + cols) * g->k;
        if (g->a->packed == NULL && g->a->ind == NULL) cost += GEMM_PACK_COST * rows * g->k;
        if (g->b->packed == NULL) cost += GEMM_PACK_COST * cols * g->k;
        if (best < 0 || cost < best) {
            best = cost;
            g->tm = tm;
            g->tn = tn;
        }
    }
}

/* K == 0: C = 0, then the epilogue, one stored row per item. */
static void zero_range(void* vctx, int64_t begin, int64_t end) {
    gemm_ctx* g = (gemm_ctx*)vctx;
    int64_t cols = g->c_trans ? g->m : g->n;
    for (int64_t r = begin; r < end; ++r) {
        memset(g->c + r * g->ldc, 0, (size_t)cols * sizeof(float));
        if (g->epilogue != NULL) {
            g->epilogue(g->epilogue_ctx, g->c + r * g->ldc, g->ldc, r, 0, 1, cols);
        }
    }
}

/* ---- M == 1 with a prepacked B (a fully connected layer at batch 1) ----------------- */

/* One GEMM row needs no A packing and no M padding: arch->gemv streams the packed B once,
 * where the micro-kernel would pad the row to mr rows of multiply-adds and pack A on every
 * run (1280 -> 1000 at batch 1, one thread: 175 us, onnxruntime 71 us). Jobs are ranges of
 * B panels, each running every K block, then the epilogue on its columns. */
typedef struct gemv_ctx {
    const gemm_ctx* g;
    int64_t panels, parts;
} gemv_ctx;

static void gemv_job(void* vctx, int64_t begin, int64_t end) {
    const gemv_ctx* v = (const gemv_ctx*)vctx;
    const gemm_ctx* g = v->g;
    const int nr = g->arch->nr;
    for (int64_t part = begin; part < end; ++part) {
        int64_t r0, r1;
        split(v->panels, v->parts, part, &r0, &r1);
        const int64_t j0 = r0 * nr, j1 = r1 * nr < g->n ? r1 * nr : g->n;
        if (j1 <= j0) continue;
        for (int64_t p0 = 0; p0 < g->k; p0 += g->step) {
            const int64_t kc = g->k - p0 < g->step ? g->k - p0 : g->step;
            g->arch->gemv(kc, g->a->data + p0 * g->a->cs, g->a->cs, g->b->packed + p0 * g->npad + j0 * kc,
                          r1 - r0, g->c + j0, j1 - j0, p0 > 0);
        }
        if (g->epilogue != NULL) {
            g->epilogue(g->epilogue_ctx, g->c + j0, g->ldc, 0, j0, 1, j1 - j0);
        }
    }
}

static int gemv_applies(const gemm_ctx* g) {
    return g->arch->gemv != NULL && g->m == 1 && !g->c_trans && g->parts == NULL && g->b->packed != NULL &&
           g->a->packed == NULL && g->a->ind == NULL && g->a->pack_a == NULL;
}

static void gemv_run(const accel_env* env, const gemm_ctx* g) {
    gemv_ctx v = {g, g->npad / g->arch->nr, 1};
    int64_t threads = env != NULL ? accel_threads_count(env->threads) : 1;
    int64_t by_work = g->npad * g->k / GEMM_MIN_JOB_WORK;
    v.parts = threads < by_work ? threads : by_work;
    v.parts = v.parts < v.panels ? v.parts : v.panels;
    v.parts = v.parts < 1 ? 1 : v.parts;
    accel_cc_parallel(env, v.parts, gemv_job, &v);
}

static void run(const accel_env* env, const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
                const gemm_operand* a, const gemm_operand* b, float* c, int64_t ldc, int c_trans,
                const gemm_cparts* parts, float* workspace, gemm_epilogue_fn epilogue, void* epilogue_ctx) {
    gemm_ctx g;
    memset(&g, 0, sizeof(g));
    g.parts = parts;
    g.arch = arch;
    g.m = m;
    g.n = n;
    g.k = k;
    g.ldc = ldc;
    g.c_trans = c_trans;
    g.a = a;
    g.b = b;
    g.c = c;
    g.epilogue = epilogue;
    g.epilogue_ctx = epilogue_ctx;
    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0) {
        accel_cc_parallel(env, c_trans ? n : m, zero_range, &g);
        return;
    }
    g.mpad = round_up(m, arch->mr);
    g.npad = round_up(n, arch->nr);
    g.step = kc_step(k);
    if (gemv_applies(&g)) {
        gemv_run(env, &g);
        return;
    }
    g.js = job_scratch(arch, m, n, k, a->packed != NULL || a->ind != NULL, b->packed != NULL, c_trans);
    g.job_floats = g.js.a + g.js.b + g.js.c;
    g.ws = workspace;
    choose_grid(&g, env != NULL ? accel_threads_count(env->threads) : 1);
    accel_cc_parallel(env, (int64_t)g.tm * g.tn, gemm_job, &g);
}

void gemm_run(const accel_env* env, const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
              const gemm_operand* a, const gemm_operand* b, float* c, int64_t ldc, int c_trans,
              float* workspace, gemm_epilogue_fn epilogue, void* epilogue_ctx) {
    run(env, arch, m, n, k, a, b, c, ldc, c_trans, NULL, workspace, epilogue, epilogue_ctx);
}

void gemm_run_parts(const accel_env* env, const gemm_arch* arch, int64_t m, int64_t n, int64_t k,
                    const gemm_operand* a, const gemm_operand* b, const gemm_cparts* parts, float* workspace,
                    gemm_epilogue_fn epilogue, void* epilogue_ctx) {
    run(env, arch, m, n, k, a, b, NULL, 0, 0, parts, workspace, epilogue, epilogue_ctx);
}
