/* CpuAcc's integer GEMM micro-kernel, AMX-INT8 (kernels/int8_kernels.h): 32 x 32 tiles of C in
 * four 16 x 16 int32 tile registers, each step over 64 k: two tiles of a' (16 rows x 64 bytes,
 * read from the row-major panels this arch packs), two of b'' (16 units of k x 16 columns, read
 * straight from the VNNI panels every arch packs: 128 bytes between units) and four tdpbusd,
 * each adding 16 x 16 sums of 64 u8 (a) x s8 (b) products to 32-bit accumulators without
 * saturation, wrapping modulo 2^32 like vpdpbusd: the same sums, bit for bit. Built with
 * -mamx-tile -mamx-int8; chosen only where the CPU has AMX-INT8 and Linux let this process use
 * the tile data (cpu.c, accel_amx_usable). The tile configuration is loaded at each call and the
 * tiles released after, so nothing else in the thread (another library's AMX code) is assumed. */
#include "kernels/int8_kernels.h"

#include <immintrin.h>
#include <string.h>

#define MR 32
#define NR 32
#define KG_STEP 16 /* 32-bit units of k per tile step: 64 bytes */

typedef struct tile_config {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* a: row 0 of a panel of MR rows, lda units between rows, kg a multiple of KG_STEP (this arch's
 * kg_align); b: a panel [kg][NR]; c: [MR][ldc]. */
static void qgemm_ukr_amx_32x32(int64_t kg, const uint32_t* a, int64_t lda, const uint32_t* b, int32_t* c,
                                int64_t ldc, int accumulate) {
    tile_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.palette = 1;
    for (int t = 0; t < 8; ++t) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
    const int64_t cs = ldc * (int64_t)sizeof(int32_t), as = lda * (int64_t)sizeof(uint32_t);
    if (accumulate) {
        _tile_loadd(0, c, cs);
        _tile_loadd(1, c + 16, cs);
        _tile_loadd(2, c + 16 * ldc, cs);
        _tile_loadd(3, c + 16 * ldc + 16, cs);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t g = 0; g < kg; g += KG_STEP) {
        _tile_loadd(4, a + g, as);
        _tile_loadd(5, a + 16 * lda + g, as);
        _tile_loadd(6, b + g * NR, NR * (int64_t)sizeof(uint32_t));
        _tile_loadd(7, b + g * NR + 16, NR * (int64_t)sizeof(uint32_t));
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    _tile_stored(0, c, cs);
    _tile_stored(1, c + 16, cs);
    _tile_stored(2, c + 16 * ldc, cs);
    _tile_stored(3, c + 16 * ldc + 16, cs);
    _tile_release();
}

const qgemm_arch accel_qgemm_amx = {"amx", MR, NR, 4, KG_STEP, 1, qgemm_ukr_amx_32x32};
