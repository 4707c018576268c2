/* CpuAcc grouped convolutions and channel scales in the blocked layout NCHW16c (see
 * ops/conv_nchwc.h, "Grouped convolutions"): the input blocks each output block reads, and the
 * packed weights. */
#include "ops/conv_nchwc.h"
#include "ops/shared_weights.h"

#include <stdlib.h>

#define B NCHWC_BLOCK

static int64_t blocks(int64_t v) { return (v + B - 1) / B; }

/* The input channels [*lo, *hi) output block ob of a grouped convolution reads. */
static void block_inputs(int64_t c, int64_t o, int64_t groups, int64_t ob, int64_t* lo, int64_t* hi) {
    const int64_t ipg = c / groups, opg = o / groups;
    const int64_t oc0 = ob * B, oc1 = (ob + 1) * B < o ? (ob + 1) * B : o;
    *lo = oc0 / opg * ipg;
    *hi = ((oc1 - 1) / opg + 1) * ipg;
}

int64_t accel_nchwc_group_blocks(int64_t c, int64_t o, int64_t groups) {
    if (groups < 2 || c % groups != 0 || o % groups != 0 || c < B) {
        return 0;
    }
    int64_t gcb = 0;
    for (int64_t ob = 0; ob < blocks(o); ++ob) {
        int64_t lo, hi;
        block_inputs(c, o, groups, ob, &lo, &hi);
        int64_t n = (hi + B - 1) / B - lo / B;
        gcb = n > gcb ? n : gcb;
    }
    /* The kernel multiplies every input lane of its gcb blocks: at most 4 of those products
     * per real one (a group of 4 input channels), or the dense kernel's speed is lost. */
    return gcb * B <= 4 * (c / groups) && gcb <= blocks(c) ? gcb : 0;
}

int64_t accel_nchwc_group_first(int64_t c, int64_t o, int64_t groups, int64_t gcb, int64_t ob) {
    int64_t lo, hi;
    block_inputs(c, o, groups, ob, &lo, &hi);
    int64_t first = lo / B;
    return first + gcb <= blocks(c) ? first : blocks(c) - gcb;
}

/* What group_pack packs. */
typedef struct group_pack {
    const float* w;
    float* dst;
    int64_t o, c, groups, gcb;
    const nchwc_window* win;
} group_pack;

/* Output blocks [begin, end): [gcb][kh][kw][16 ci][16 co] each. */
static void group_pack_range(void* vctx, int64_t begin, int64_t end) {
    const group_pack* t = (const group_pack*)vctx;
    const nchwc_window* win = t->win;
    const int64_t kh = win->kh, kw = win->kw, fkh = win->full_kh, fkw = win->full_kw;
    const int64_t ipg = t->c / t->groups, opg = t->o / t->groups;
    for (int64_t ob = begin; ob < end; ++ob) {
        const int64_t first = accel_nchwc_group_first(t->c, t->o, t->groups, t->gcb, ob);
        float* dst = t->dst + ob * t->gcb * kh * kw * B * B;
        for (int64_t j = 0; j < t->gcb; ++j)
            for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx)
                    for (int64_t ci = 0; ci < B; ++ci)
                        for (int64_t co = 0; co < B; ++co) {
                            const int64_t oc = ob * B + co, ic = (first + j) * B + ci;
                            float v = 0.0f;
                            if (oc < t->o && ic < t->c && ic / ipg == oc / opg) {
                                v = t->w[((oc * ipg + ic % ipg) * fkh + win->ky0 + ky) * fkw + win->kx0 + kx];
                            }
                            *dst++ = v;
                        }
    }
}

const float* accel_nchwc_packed_grouped(accel_packs* packs, accel_threads* threads, const float* w,
                                        const float* bias, int64_t o, int64_t c, int64_t groups,
                                        const nchwc_window* win) {
    const int64_t gcb = accel_nchwc_group_blocks(c, o, groups);
    if (gcb == 0) {
        return NULL;
    }
    accel_pack_key key;
    accel_pack_key_init(&key, ACCEL_PACK_NCHWC_GROUPED, ACCEL_ISA_AVX512, w, bias);
    key.params[0] = o;
    key.params[1] = c;
    key.params[2] = win->kh;
    key.params[3] = win->kw;
    key.params[4] = groups;
    key.params[5] = win->ky0 * win->full_kw + win->kx0; /* the window inside the full kernel */
    key.params[6] = win->full_kh;
    key.params[7] = win->full_kw;
    const size_t wfloats = (size_t)(blocks(o) * gcb * win->kh * win->kw * B * B);
    int fresh = 0;
    float* wb = accel_packs_get(packs, &key, wfloats + (size_t)(blocks(o) * B), &fresh);
    if (wb != NULL && fresh) {
        group_pack t = {w, wb, o, c, groups, gcb, win};
        accel_parallel_for(threads, blocks(o), group_pack_range, &t);
        float* bdst = wb + wfloats;
        for (int64_t oc = 0; oc < blocks(o) * B; ++oc) {
            bdst[oc] = bias != NULL && oc < o ? bias[oc] : 0.0f;
        }
    }
    return wb;
}
