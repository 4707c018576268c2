/*
 * plugnn ROI_ALIGN geometry (part of plugnn::plugin_common, not of the ABI): where the samples of
 * one region's bins fall along one axis and the bilinear corners each takes, under backend_api.h's
 * pn_roi_align_desc rules, in double. Bilinear interpolation is separable (a sample's four corner
 * weights are products of one weight per axis, and a sample outside the plane on either axis is
 * 0), so an axis is planned alone: CpuRef (the oracle) evaluates each sample from two axis
 * corners; CpuAcc sums, per bin and axis, the weights its samples give each index of the plane.
 */
#ifndef PLUGNN_PN_ROI_ALIGN_PLAN_H
#define PLUGNN_PN_ROI_ALIGN_PLAN_H

#include "plugnn/backend_api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One region's geometry along one axis: its start, bin size and samples per bin (<= 0: none). */
typedef struct pn_roi_axis {
    double start, bin;
    int64_t grid;
} pn_roi_axis;

/* The axis of a region from `begin` to `end` (rois coordinates) split into `bins` output bins. */
pn_roi_axis pn_roi_axis_of(const pn_roi_align_desc* d, double begin, double end, uint32_t bins);

/* The samples [*lo, *hi) of bin p that may fall inside [-1, size] (the others are 0): solved
 * for, with a margin of 2 samples each side for rounding, so a huge region costs the samples
 * inside the plane, not its grid (at most about size + 6 per bin). */
void pn_roi_samples_inside(const pn_roi_axis* a, uint32_t p, int64_t size, int64_t* lo, int64_t* hi);

/* The position of sample i of bin p: start + p * bin + (i + 0.5) * bin / grid. */
double pn_roi_sample_at(const pn_roi_axis* a, uint32_t p, int64_t i);

/* The bilinear corners of position v on an axis of `size` elements: 0 when v < -1, v > size or
 * size is 0 (the sample is 0); else 1, with v raised to at least 0, *lo = floor(v) and *hi =
 * *lo + 1, or both size - 1 (and v = size - 1) when floor(v) >= size - 1, and *frac = v - *lo:
 * weight 1 - *frac at *lo and *frac at *hi. */
int pn_roi_corners(double v, int64_t size, int64_t* lo, int64_t* hi, double* frac);

/* Bin p's weights along the axis: weights[k] (k in [0, return value)) is the sum, over the
 * bin's samples inside the plane, of the corner weights they give index *first + k (indices no
 * sample reaches in between hold 0). `weights` holds `size` entries; returns 0 (and *first 0)
 * when no sample is inside. */
int64_t pn_roi_bin_weights(const pn_roi_axis* a, uint32_t p, int64_t size, int64_t* first, double* weights);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PN_ROI_ALIGN_PLAN_H */
