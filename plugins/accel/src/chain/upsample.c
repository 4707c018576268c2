/* CpuAcc blocked-chain upsampling steps (chain/upsample.h): the packed weights of the transposed
 * convolution with kernel = stride (the kernels are in kernels/nchwc_upsample_avx512.c). */
#include "chain/upsample.h"

#define B NCHWC_BLOCK

const float* accel_nchwc_packed_deconv(accel_packs* packs, const float* w, const float* bias, int64_t c, int64_t o,
                                       int64_t kh, int64_t kw) {
    const int64_t cb = (c + B - 1) / B, ocb = (o + B - 1) / B;
    accel_pack_key key;
    accel_pack_key_init(&key, ACCEL_PACK_NCHWC_DECONV, ACCEL_ISA_AVX512, w, bias);
    key.params[0] = c;
    key.params[1] = o;
    key.params[2] = kh;
    key.params[3] = kw;
    const size_t wfloats = (size_t)(ocb * kh * cb * B * kw * B);
    int fresh = 0;
    float* wd = accel_packs_get(packs, &key, wfloats + (size_t)(ocb * B), &fresh);
    if (wd == NULL || !fresh) {
        return wd;
    }
    /* [ocb][kh][cb][16 ci][kw][16 co] from [c][o][kh][kw] */
    size_t k = 0;
    for (int64_t ob = 0; ob < ocb; ++ob) {
        for (int64_t a = 0; a < kh; ++a) {
            for (int64_t ci = 0; ci < cb * B; ++ci) {
                for (int64_t t = 0; t < kw; ++t) {
                    for (int64_t lane = 0; lane < B; ++lane) {
                        const int64_t oc = ob * B + lane;
                        wd[k++] = ci < c && oc < o ? w[((ci * o + oc) * kh + a) * kw + t] : 0.0f;
                    }
                }
            }
        }
    }
    for (int64_t oc = 0; oc < ocb * B; ++oc) {
        wd[wfloats + (size_t)oc] = bias != NULL && oc < o ? bias[oc] : 0.0f;
    }
    return wd;
}
