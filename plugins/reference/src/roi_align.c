/* ROI_ALIGN (ONNX RoiAlign): per region of interest, each output bin is the average (or the
 * maximum) of bilinearly interpolated samples of x (backend_api.h), computed in double. */
#include "cpuref.h"

#include <math.h>

/* One sample point: four corner offsets within a plane and their weights (all 0: outside). */
typedef struct sample {
    int64_t pos[4];
    double w[4];
} sample;


/* The bilinear corners and weights of the point (y, x) in an H x W plane. */
static sample bilinear(double y, double x, int64_t h, int64_t w) {
    sample s = {{0, 0, 0, 0}, {0.0, 0.0, 0.0, 0.0}};
    if (h == 0 || w == 0 || y < -1.0 || y > (double)h || x < -1.0 || x > (double)w) {
        return s;
    }
    y = y < 0.0 ? 0.0 : y;
    x = x < 0.0 ? 0.0 : x;
    int64_t y_lo = (int64_t)y, x_lo = (int64_t)x, y_hi, x_hi;
    if (y_lo >= h - 1) {
        y_hi = y_lo = h - 1;
        y = (double)y_lo;
    } else {
        y_hi = y_lo + 1;
    }
    if (x_lo >= w - 1) {
        x_hi = x_lo = w - 1;
        x = (double)x_lo;
    } else {
        x_hi = x_lo + 1;
    }
    double ly = y - (double)y_lo, lx = x - (double)x_lo, hy = 1.0 - ly, hx = 1.0 - lx;
    s.pos[0] = y_lo * w + x_lo;
    s.pos[1] = y_lo * w + x_hi;
    s.pos[2] = y_hi * w + x_lo;
    s.pos[3] = y_hi * w + x_hi;
    s.w[0] = hy * hx;
    s.w[1] = hy * lx;
    s.w[2] = ly * hx;
    s.w[3] = ly * lx;
    return s;
}

/* A region's geometry on one axis: its start, bin size and samples per bin. */
typedef struct roi_axis {
    double start, bin;
    int64_t grid;
} roi_axis;

static roi_axis axis_of(const pn_roi_align_desc* d, double begin, double end, uint32_t bins) {
    double offset = d->half_pixel ? 0.5 : 0.0;
    double scale = (double)d->spatial_scale;
    roi_axis a;
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

/* The samples [*lo, *hi) of bin p on axis `a` that may fall inside [-1, size] (bilinear reads
 * nothing outside: a sample there is 0). The sample positions start + p * bin + (i + 0.5) *
 * bin / grid are monotonic in i, so the range is solved for, with a margin of 2 samples each
 * side for rounding (the samples in the margin are computed and are 0 as before). So a huge
 * region (coordinates of 1e9 or 1e30, whose adaptive grid is huge) costs the samples inside the
 * image, not its grid: at most about size + 6 per bin and axis. */
static void samples_inside(const roi_axis* a, uint32_t p, int64_t size, int64_t* lo, int64_t* hi) {
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

/* The value of output bin (ph, pw) of one region and channel plane: its samples' bilinear
 * values averaged, or the largest weighted corner (MAX); 0 without samples. The samples are
 * computed as they are used (a bin may hold many: nothing is stored); those certainly outside
 * the image (samples_inside) are not computed: each is 0, added to the average's sum (which it
 * does not change) or taken as a candidate of the maximum (once). */
static double bin_value(const pn_roi_align_desc* d, const roi_axis* ay, const roi_axis* ax,
                        uint32_t ph, uint32_t pw, int64_t h, int64_t w, pn_data_type t,
                        const void* x, int64_t plane) {
    if (ay->grid <= 0 || ax->grid <= 0) {
        return 0.0;
    }
    int average = d->mode == PN_POOLING_AVERAGE;
    double sum = 0.0, best = 0.0;
    int first = 1;
    int64_t y_lo, y_hi, x_lo, x_hi;
    samples_inside(ay, ph, h, &y_lo, &y_hi);
    samples_inside(ax, pw, w, &x_lo, &x_hi);
    if (!average && (y_hi - y_lo < ay->grid || x_hi - x_lo < ax->grid)) {
        first = 0; /* a sample outside the image: 0 is one of the candidates */
    }
    for (int64_t iy = y_lo; iy < y_hi; ++iy) {
        double y = ay->start + ph * ay->bin + ((double)iy + 0.5) * ay->bin / (double)ay->grid;
        for (int64_t ix = x_lo; ix < x_hi; ++ix) {
            double xx = ax->start + pw * ax->bin + ((double)ix + 0.5) * ax->bin / (double)ax->grid;
            sample s = bilinear(y, xx, h, w);
            double v = average ? 0.0 : -INFINITY;
            for (int c = 0; c < 4; ++c) {
                double term = s.w[c] == 0.0 ? 0.0 : s.w[c] * pn_load_double(t, x, plane + s.pos[c]);
                if (average) {
                    v += term;
                } else {
                    v = term > v || isnan(term) ? term : v;
                }
            }
            if (average) {
                sum += v;
            } else {
                best = first || v > best || isnan(v) ? v : best;
                first = 0;
            }
        }
    }
    return average ? sum / ((double)ay->grid * (double)ax->grid) : best;
}

static pn_status roi_align_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                  pn_string_out* message_out) {
    const pn_roi_align_desc* d = &op->desc.roi_align;
    const pn_tensor_info* xi = &op->inputs[0];
    pn_data_type t = xi->dtype;
    int64_t n = xi->dims[0], channels = xi->dims[1], h = xi->dims[2], w = xi->dims[3];
    int64_t regions = op->inputs[1].dims[0];
    int64_t bins = (int64_t)d->output_height * d->output_width;
    for (int64_t r = 0; r < regions; ++r) {
        int64_t image = pn_load_int64(op->inputs[2].dtype, in[2], r);
        if (image < 0 || image >= n) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "RoiAlign: batch_indices[%lld] = "
                           "%lld is not an image of x (0 to %lld)", (long long)r, (long long)image,
                           (long long)(n - 1));
        }
        double x1 = pn_load_double(t, in[1], r * 4 + 0), y1 = pn_load_double(t, in[1], r * 4 + 1);
        double x2 = pn_load_double(t, in[1], r * 4 + 2), y2 = pn_load_double(t, in[1], r * 4 + 3);
        roi_axis ay = axis_of(d, y1, y2, d->output_height);
        roi_axis ax = axis_of(d, x1, x2, d->output_width);
        for (int64_t c = 0; c < channels; ++c) {
            int64_t plane = (image * channels + c) * h * w;
            for (int64_t b = 0; b < bins; ++b) {
                uint32_t ph = (uint32_t)(b / d->output_width), pw = (uint32_t)(b % d->output_width);
                double v = bin_value(d, &ay, &ax, ph, pw, h, w, t, in[0], plane);
                pn_store_double(t, out[0], (r * channels + c) * bins + b, v);
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_roi_align_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                  pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_roi_align_desc), NULL, roi_align_kernel, NULL,
                                     workload_out, message_out);
}
