/* ROI_ALIGN's geometry along one axis (pn_roi_align_plan.h): backend_api.h's pn_roi_align_desc
 * rules, in double. */
#include "plugnn/pn_roi_align_plan.h"

#include <math.h>
#include <string.h>

pn_roi_axis pn_roi_axis_of(const pn_roi_align_desc* d, double begin, double end, uint32_t bins) {
    double offset = d->half_pixel ? 0.5 : 0.0;
    double scale = (double)d->spatial_scale;
    pn_roi_axis a;
    a.start = begin * scale - offset;
    double size = end * scale - offset - a.start;
    if (!d->half_pixel && size < 1.0) {
        size = 1.0;
    }
    a.bin = size / (double)bins;
    if (d->sampling_ratio > 0) {
        a.grid = d->sampling_ratio;
    } else {
        double g = ceil(size / (double)bins);
        a.grid = isfinite(g) && g > 0.0 ? (g > 1e9 ? (int64_t)1e9 : (int64_t)g) : 0;
    }
    return a;
}

/* The sample positions start + p * bin + (i + 0.5) * bin / grid are monotonic in i, so the
 * range inside [-1, size] is solved for. */
void pn_roi_samples_inside(const pn_roi_axis* a, uint32_t p, int64_t size, int64_t* lo, int64_t* hi) {
    *lo = 0;
    *hi = a->grid;
    double base = a->start + (double)p * a->bin, step = a->bin / (double)a->grid;
    if (!isfinite(base) || !isfinite(step) || step == 0.0) {
        return;
    }
    double first = (-1.0 - base) / step - 0.5, last = ((double)size - base) / step - 0.5;
    if (step < 0.0) {
        double t = first;
        first = last;
        last = t;
    }
    first = floor(first) - 2.0;
    last = ceil(last) + 2.0;
    if (first > (double)*lo) {
        *lo = first >= (double)a->grid ? a->grid : (int64_t)first;
    }
    if (last + 1.0 < (double)*hi) {
        *hi = last + 1.0 <= (double)*lo ? *lo : (int64_t)(last + 1.0);
    }
}

double pn_roi_sample_at(const pn_roi_axis* a, uint32_t p, int64_t i) {
    return a->start + p * a->bin + ((double)i + 0.5) * a->bin / (double)a->grid;
}

int pn_roi_corners(double v, int64_t size, int64_t* lo, int64_t* hi, double* frac) {
    if (size == 0 || v < -1.0 || v > (double)size) {
        return 0;
    }
    v = v < 0.0 ? 0.0 : v;
    int64_t l = (int64_t)v;
    if (l >= size - 1) {
        *hi = l = size - 1;
        v = (double)l;
    } else {
        *hi = l + 1;
    }
    *lo = l;
    *frac = v - (double)l;
    return 1;
}

int64_t pn_roi_bin_weights(const pn_roi_axis* a, uint32_t p, int64_t size, int64_t* first, double* weights) {
    *first = 0;
    if (a->grid <= 0 || size <= 0) {
        return 0;
    }
    int64_t lo, hi, low = size, high = -1;
    pn_roi_samples_inside(a, p, size, &lo, &hi);
    for (int64_t i = lo; i < hi; ++i) {
        int64_t c0, c1;
        double f;
        if (!pn_roi_corners(pn_roi_sample_at(a, p, i), size, &c0, &c1, &f)) {
            continue;
        }
        if (low > high) {
            memset(weights, 0, sizeof(double) * (size_t)size);
        }
        low = c0 < low ? c0 : low;
        high = c1 > high ? c1 : high;
        weights[c0] += 1.0 - f;
        weights[c1] += f;
    }
    if (low > high) {
        return 0;
    }
    if (low > 0) {
        memmove(weights, weights + low, sizeof(double) * (size_t)(high - low + 1));
    }
    *first = low;
    return high - low + 1;
}
