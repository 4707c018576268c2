/*
 * plugnn RESIZE planning (part of plugnn::plugin_common, not of the ABI): how each output index
 * of one axis maps to its input taps and weights under backend_api.h's pn_resize_desc rules,
 * computed in double as ONNX's reference computes them. CpuRef (the oracle) and CpuAcc plan
 * with it; each applies the plan its own way.
 */
#ifndef PLUGNN_PN_RESIZE_PLAN_H
#define PLUGNN_PN_RESIZE_PLAN_H

#include "plugnn/backend_api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an output index takes instead of its taps. */
typedef enum pn_resize_special {
    PN_RESIZE_NORMAL = 0,       /* the weighted taps */
    PN_RESIZE_EXTRAPOLATE = 1,  /* TF_CROP_AND_RESIZE outside the input: extrapolation_value */
    PN_RESIZE_ZERO = 2          /* NEAREST with exclude_outside whose chosen tap is outside: 0 */
} pn_resize_special;

/* 1 when axis `axis` (of `in` input and `out` output elements) is left as it is: out == in,
 * the scale 1 (within 1e-9) and, for TF_CROP_AND_RESIZE, the region of interest [0, 1]. */
int pn_resize_axis_skipped(const pn_resize_desc* d, uint32_t axis, int64_t in, int64_t out);

/* Taps per output index of the axis: 2 (NEAREST, LINEAR), 4 (CUBIC), or more for antialias
 * with a scale below 1; -1 when that would exceed 10^9. */
int64_t pn_resize_taps(const pn_resize_desc* d, uint32_t axis);

/* Output index `o` of the axis: *first = the unclamped input index of tap 0 (tap t reads
 * index first + t, clamped to [0, in)), weights[0 .. taps) (NEAREST: 0 or 1), and what it
 * takes instead (pn_resize_special). `taps` is pn_resize_taps(d, axis). */
void pn_resize_plan_index(const pn_resize_desc* d, uint32_t axis, int64_t in, int64_t out, int64_t taps,
                          int64_t o, int64_t* first, double* weights, unsigned char* special);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PN_RESIZE_PLAN_H */
