/* RESIZE planning: coordinates, taps and weights per output index (see pn_resize_plan.h). */
#include "plugnn/pn_resize_plan.h"

#include <math.h>

static int isclose(double a, double b) {
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return a == b || fabs(a - b) <= 1e-9 * scale;
}

int pn_resize_axis_skipped(const pn_resize_desc* d, uint32_t axis, int64_t in, int64_t out) {
    int roi_identity = d->coordinates != PN_COORDINATES_TF_CROP_AND_RESIZE ||
                       (d->roi_start[axis] == 0.0 && isclose(d->roi_end[axis], 1.0));
    return in == out && isclose(d->scales[axis], 1.0) && roi_identity;
}

static double source_coordinate(const pn_resize_desc* d, uint32_t axis, int64_t in, int64_t out,
                                 double y) {
    double scale = d->scales[axis];
    double length = scale * (double)in;
    double r0 = d->roi_start[axis], r1 = d->roi_end[axis];
    switch (d->coordinates) {
    case PN_COORDINATES_ALIGN_CORNERS:
        return length == 1.0 ? 0.0 : y * (double)(in - 1) / (length - 1.0);
    case PN_COORDINATES_ASYMMETRIC: return y / scale;
    case PN_COORDINATES_TF_CROP_AND_RESIZE: {
        double x = length == 1.0 ? (r1 - r0) * (double)(in - 1) / 2.0
                                 : y * (r1 - r0) * (double)(in - 1) / (length - 1.0);
        return x + r0 * (double)(in - 1);
    }
    case PN_COORDINATES_PYTORCH_HALF_PIXEL:
        return length == 1.0 ? -0.5 : (y + 0.5) / scale - 0.5;
    case PN_COORDINATES_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / length;
        double offset = (double)in / 2.0 * (1.0 - adjustment);
        return offset + (y + 0.5) / scale - 0.5;
    }
    case PN_COORDINATES_HALF_PIXEL:
    default: return (y + 0.5) / scale - 0.5;
    }
}

static double cubic(double a, double x) {
    x = fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1.0) {
        return (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0;
    }
    if (x < 2.0) {
        return a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a;
    }
    return 0.0;
}

/* The first tap's offset (t0) of a stretched kernel of `support` (antialias). */
static int64_t stretched_start(double support, double scale) {
    double s = scale < 1.0 ? scale : 1.0;
    return (int64_t)floor(-support / s) + 1;
}

int64_t pn_resize_taps(const pn_resize_desc* d, uint32_t axis) {
    if (d->mode == PN_RESIZE_NEAREST) {
        return 2;
    }
    if (!d->antialias) {
        return d->mode == PN_RESIZE_LINEAR ? 2 : 4;
    }
    double s = d->scales[axis] < 1.0 ? d->scales[axis] : 1.0;
    double support = d->mode == PN_RESIZE_LINEAR ? 1.0 : 2.0;
    double n = 2.0 - 2.0 * (floor(-support / s) + 1.0);
    return n < 1e9 ? (int64_t)n : -1;
}

/* The weights of one output position from r in (0, 1]. */
static void weights_of(const pn_resize_desc* d, uint32_t axis, double r, int64_t taps, double* w) {
    double a = (double)d->cubic_coeff_a, scale = d->scales[axis];
    if (d->mode == PN_RESIZE_NEAREST) {
        int up = r == 1.0;
        if (!up) {
            switch (d->nearest_mode) {
            case PN_NEAREST_ROUND_PREFER_CEIL: up = r >= 0.5; break;
            case PN_NEAREST_FLOOR: up = 0; break;
            case PN_NEAREST_CEIL: up = 1; break;
            default: up = r > 0.5; break;
            }
        }
        w[0] = up ? 0.0 : 1.0;
        w[1] = up ? 1.0 : 0.0;
        return;
    }
    if (!d->antialias) {
        if (d->mode == PN_RESIZE_LINEAR) {
            w[0] = 1.0 - r;
            w[1] = r;
            return;
        }
        double q = 1.0 - r;
        w[0] = ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a;
        w[1] = ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0;
        w[2] = ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0;
        w[3] = ((a * (q + 1.0) - 5.0 * a) * (q + 1.0) + 8.0 * a) * (q + 1.0) - 4.0 * a;
        return;
    }
    double s = scale < 1.0 ? scale : 1.0;
    int linear = d->mode == PN_RESIZE_LINEAR;
    int64_t start = stretched_start(linear ? 1.0 : 2.0, scale);
    double sum = 0.0;
    for (int64_t t = 0; t < taps; ++t) {
        double arg = linear ? ((double)(start + t) - r) * s : s * ((double)(start + t) - r);
        double v = linear ? 1.0 - fabs(arg) : cubic(a, arg);
        if (linear) {
            v = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        }
        w[t] = v;
        sum += v;
    }
    for (int64_t t = 0; t < taps; ++t) {
        w[t] /= sum;
    }
}

void pn_resize_plan_index(const pn_resize_desc* d, uint32_t axis, int64_t in, int64_t out, int64_t taps,
                          int64_t o, int64_t* first_out, double* w, unsigned char* special) {
    double x = source_coordinate(d, axis, in, out, (double)o);
    double xi = floor(x);
    double r = x == xi ? 1.0 : x - xi;
    int64_t n = taps, half = n / 2;
    double xp = x + (double)half;
    double p = floor(xp);
    int64_t first = (int64_t)p + (xp - p == 0.0 ? -half : -half + 1) - half;
    weights_of(d, axis, r, n, w);
    *first_out = first;
    *special = PN_RESIZE_NORMAL;
    if (d->exclude_outside) {
        double sum = 0.0;
        for (int64_t t = 0; t < n; ++t) {
            if (first + t < 0 || first + t >= in) {
                w[t] = 0.0;
            }
            sum += w[t];
        }
        for (int64_t t = 0; t < n; ++t) {
            w[t] /= sum == 0.0 ? 1.0 : sum;
        }
        if (d->mode == PN_RESIZE_NEAREST && w[0] == 0.0 && w[1] == 0.0) {
            *special = PN_RESIZE_ZERO;
        }
    }
    if (d->coordinates == PN_COORDINATES_TF_CROP_AND_RESIZE && (x < 0.0 || x > (double)(in - 1))) {
        *special = PN_RESIZE_EXTRAPOLATE;
    }
}
