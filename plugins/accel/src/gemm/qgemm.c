/* CpuAcc's integer GEMM driver (gemm/qgemm.h): packing of a and b for an arch's micro-kernel,
 * the C blocks over the pool. */
#include "gemm/qgemm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Packed 32-bit units of k per row or column: ceil(k / kr), a multiple of kg_align. */
static int64_t packed_kg(const qgemm_arch* arch, int64_t k) {
    return ceil_div(ceil_div(k, arch->kr), arch->kg_align) * arch->kg_align;
}

/* The 32-bit unit of kr k values v[0..kr) (a' bytes, b'' bytes, or either widened to int16). */
static uint32_t unit_of(int kr, const int32_t* v) {
    if (kr == 4) {
        return (uint32_t)(uint8_t)v[0] | (uint32_t)(uint8_t)v[1] << 8 | (uint32_t)(uint8_t)v[2] << 16 |
               (uint32_t)(uint8_t)v[3] << 24;
    }
    return (uint32_t)(uint16_t)(int16_t)v[0] | (uint32_t)(uint16_t)(int16_t)v[1] << 16;
}

int qgemm_pack_b(const qgemm_arch* arch, const void* b, int b_signed, int64_t k, int64_t n,
                 const int64_t* koff, int64_t col_stride, qgemm_packed_b* out) {
    const int nr = arch->nr, kr = arch->kr;
    const int64_t kg = packed_kg(arch, k), panels = ceil_div(n, nr);
    memset(out, 0, sizeof(*out));
    out->k = k;
    out->n = n;
    out->kg = kg;
    out->data = (uint32_t*)calloc((size_t)(panels * kg * nr > 0 ? panels * kg * nr : 1), sizeof(uint32_t));
    out->colsum = (int32_t*)calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t));
    if (out->data == NULL || out->colsum == NULL) {
        qgemm_packed_b_free(out);
        return -1;
    }
    const int8_t* bs = (const int8_t*)b;
    const uint8_t* bu = (const uint8_t*)b;
    for (int64_t j = 0; j < n; ++j) {
        uint32_t sum = 0;
        uint32_t* col = out->data + (j / nr) * kg * nr + (j % nr);
        for (int64_t g = 0; g < kg; ++g) {
            int32_t v[4] = {0, 0, 0, 0};
            for (int t = 0; t < kr && g * kr + t < k; ++t) {
                const int64_t at = koff[g * kr + t] + j * col_stride;
                v[t] = b_signed ? (int32_t)bs[at] : (int32_t)bu[at] - 128;
                sum += (uint32_t)v[t];
            }
            col[g * nr] = unit_of(kr, v);
        }
        out->colsum[j] = (int32_t)sum;
    }
    return 0;
}

void qgemm_packed_b_free(qgemm_packed_b* b) {
    free(b->data);
    free(b->colsum);
    b->data = NULL;
    b->colsum = NULL;
}

int64_t qgemm_a_units(const qgemm_arch* arch, int64_t m, int64_t k) {
    return ceil_div(m, arch->mr) * arch->mr * packed_kg(arch, k);
}

/* The part [k0, k0 + len) of row i (K = k): k0 a multiple of arch->kr, len too unless the part ends
 * the row; returns the part's sum (0 without want_sum). */
static int32_t pack_a_part(const qgemm_arch* arch, const uint8_t* src, uint8_t flip, int64_t k0, int64_t len,
                           int64_t k, uint32_t* a_packed, int64_t i, int want_sum) {
    const int mr = arch->mr, kr = arch->kr;
    const int64_t kg = packed_kg(arch, k);
    const int64_t mr_ = arch->a_rows ? 1 : mr; /* units between consecutive units of the row */
    uint32_t* row = a_packed + (i / mr) * kg * mr + (arch->a_rows ? (i % mr) * kg : i % mr);
    uint32_t* dst = row + (k0 / kr) * mr_;
    uint32_t sum = 0;
    int64_t g = 0;
    if (want_sum) {
        for (int64_t t = 0; t < len; ++t) {
            sum += (uint32_t)(uint8_t)(src[t] ^ flip);
        }
    }
    if (kr == 4) {
        const uint32_t flips = (uint32_t)flip * 0x01010101u;
        for (; 4 * g + 4 <= len; ++g) {
            uint32_t u;
            memcpy(&u, src + 4 * g, 4);
            dst[g * mr_] = u ^ flips;
        }
    } else {
        for (; 2 * g + 2 <= len; ++g) {
            dst[g * mr_] = (uint32_t)(src[2 * g] ^ flip) | (uint32_t)(src[2 * g + 1] ^ flip) << 16;
        }
    }
    if (g * kr < len) { /* the row's last unit, its k past K zero */
        int32_t v[4] = {0, 0, 0, 0};
        for (int t = 0; g * kr + t < len; ++t) {
            v[t] = (int32_t)(uint8_t)(src[g * kr + t] ^ flip);
        }
        dst[g * mr_] = unit_of(kr, v);
    }
    if (k0 + len == k) { /* the units past K up to the packed kg are zero */
        for (int64_t u = ceil_div(k, kr); u < kg; ++u) {
            row[u * mr_] = 0;
        }
    }
    return (int32_t)sum;
}

int32_t qgemm_pack_a_row(const qgemm_arch* arch, const uint8_t* row, uint8_t flip, int64_t k,
                         uint32_t* a_packed, int64_t i, int want_sum) {
    return pack_a_part(arch, row, flip, 0, k, k, a_packed, i, want_sum);
}

uint8_t* qgemm_a_row_bytes(const qgemm_arch* arch, uint32_t* a_packed, int64_t i, int64_t k) {
    if (!arch->a_rows || arch->kr != 4) {
        return NULL;
    }
    const int64_t kg = packed_kg(arch, k);
    return (uint8_t*)(a_packed + (i / arch->mr) * kg * arch->mr + (i % arch->mr) * kg);
}

int32_t qgemm_seal_a_row(const qgemm_arch* arch, uint32_t* a_packed, int64_t i, int64_t k, int want_sum) {
    uint8_t* row = qgemm_a_row_bytes(arch, a_packed, i, k);
    memset(row + k, 0, (size_t)(packed_kg(arch, k) * 4 - k));
    uint32_t sum = 0;
    if (want_sum) {
        for (int64_t t = 0; t < k; ++t) {
            sum += row[t];
        }
    }
    return (int32_t)sum;
}

void qgemm_pad_a(const qgemm_arch* arch, uint32_t* a_packed, int64_t m, int64_t k) {
    const int mr = arch->mr;
    const int64_t kg = packed_kg(arch, k);
    if (m % mr == 0) {
        return;
    }
    uint32_t* panel = a_packed + (m / mr) * kg * mr;
    for (int64_t g = 0; g < kg; ++g) {
        for (int64_t r = m % mr; r < mr; ++r) {
            panel[arch->a_rows ? r * kg + g : g * mr + r] = 0;
        }
    }
}

typedef struct qgemm_job {
    const qgemm_arch* arch;
    int64_t m, n, tn;
    const uint32_t* a;
    const qgemm_packed_b* b;
    qgemm_epilogue_fn epilogue;
    void* ctx;
    atomic_int failed;
} qgemm_job;

static void qgemm_blocks(void* raw, int64_t begin, int64_t end) {
    qgemm_job* j = (qgemm_job*)raw;
    const qgemm_arch* arch = j->arch;
    const int mr = arch->mr, nr = arch->nr;
    const int64_t kg = j->b->kg;
    void* mem = malloc((size_t)QGEMM_MC * QGEMM_NC * sizeof(int32_t) + 64);
    if (mem == NULL) {
        atomic_store(&j->failed, 1);
        return;
    }
    int32_t* c = (int32_t*)(((uintptr_t)mem + 63u) & ~(uintptr_t)63u);
    for (int64_t t = begin; t < end; ++t) {
        const int64_t i0 = (t / j->tn) * QGEMM_MC, j0 = (t % j->tn) * QGEMM_NC;
        const int64_t rows = j->m - i0 < QGEMM_MC ? j->m - i0 : QGEMM_MC;
        const int64_t cols = j->n - j0 < QGEMM_NC ? j->n - j0 : QGEMM_NC;
        const int64_t pi = ceil_div(rows, mr), pj = ceil_div(cols, nr);
        if (kg == 0) {
            memset(c, 0, (size_t)QGEMM_MC * QGEMM_NC * sizeof(int32_t));
        }
        for (int64_t g0 = 0; g0 < kg; g0 += QGEMM_KCG) {
            const int64_t gk = kg - g0 < QGEMM_KCG ? kg - g0 : QGEMM_KCG;
            /* row-major a panels (AMX) each meet every b panel in turn (measured: 1290 against 894
             * GOPS for 256 x 1024 x 1024 on a Xeon with AMX); interleaved ones (VNNI, 8 rows) are
             * cheaper to cycle over one b panel (549 against 510) */
            const int64_t outer = arch->a_rows ? pi : pj, inner = arch->a_rows ? pj : pi;
            for (int64_t o = 0; o < outer; ++o) {
                for (int64_t t = 0; t < inner; ++t) {
                    const int64_t p = arch->a_rows ? o : t, q = arch->a_rows ? t : o;
                    const uint32_t* bp = j->b->data + (j0 / nr + q) * kg * nr + g0 * nr;
                    const uint32_t* ap = j->a + (i0 / mr + p) * kg * mr + g0 * (arch->a_rows ? 1 : mr);
                    arch->ukr(gk, ap, kg, bp, c + p * mr * QGEMM_NC + q * nr, QGEMM_NC, g0 > 0);
                }
            }
        }
        j->epilogue(j->ctx, c, QGEMM_NC, i0, rows, j0, cols);
    }
    free(mem);
}

int qgemm_run(accel_threads* threads, const qgemm_arch* arch, int64_t m, int64_t n,
              const uint32_t* a_packed, const qgemm_packed_b* b, qgemm_epilogue_fn epilogue,
              void* ctx) {
    if (m <= 0 || n <= 0) {
        return 0;
    }
    qgemm_job j = {arch, m, n, ceil_div(n, QGEMM_NC), a_packed, b, epilogue, ctx, 0};
    atomic_init(&j.failed, 0);
    accel_parallel_for_grain(threads, ceil_div(m, QGEMM_MC) * j.tn, 1, qgemm_blocks, &j);
    return atomic_load(&j.failed) ? -1 : 0;
}
