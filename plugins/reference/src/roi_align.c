/* ROI_ALIGN (ONNX RoiAlign): per region of interest, each output bin is the average (or the
 * maximum) of bilinearly interpolated samples of x (backend_api.h), computed in double. */
#include "cpuref.h"
#include "plugnn/pn_roi_align_plan.h"

#include <math.h>

/* One sample point: four corner offsets within a plane and their weights (all 0: outside). */
typedef struct sample {
    int64_t pos[4];
    double w[4];
} sample;


/* The bilinear corners and weights of the point (y, x) in an H x W plane: the product of each
 * axis's corners (plugin_common's pn_roi_corners). */
static sample bilinear(double y, double x, int64_t h, int64_t w) {
    sample s = {{0, 0, 0, 0}, {0.0, 0.0, 0.0, 0.0}};
    int64_t y_lo, y_hi, x_lo, x_hi;
    double ly, lx;
    if (!pn_roi_corners(y, h, &y_lo, &y_hi, &ly) || !pn_roi_corners(x, w, &x_lo, &x_hi, &lx)) {
        return s;
    }
    double hy = 1.0 - ly, hx = 1.0 - lx;
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

/* The value of output bin (ph, pw) of one region and channel plane: its samples' bilinear
 * values averaged, or the largest weighted corner (MAX); 0 without samples. The samples are
 * computed as they are used (a bin may hold many: nothing is stored); those certainly outside
 * the image (pn_roi_samples_inside) are not computed: each is 0, added to the average's sum (which it
 * does not change) or taken as a candidate of the maximum (once). */
static double bin_value(const pn_roi_align_desc* d, const pn_roi_axis* ay, const pn_roi_axis* ax,
                        uint32_t ph, uint32_t pw, int64_t h, int64_t w, pn_data_type t,
                        const void* x, int64_t plane) {
    if (ay->grid <= 0 || ax->grid <= 0) {
        return 0.0;
    }
    int average = d->mode == PN_POOLING_AVERAGE;
    double sum = 0.0, best = 0.0;
    int first = 1;
    int64_t y_lo, y_hi, x_lo, x_hi;
    pn_roi_samples_inside(ay, ph, h, &y_lo, &y_hi);
    pn_roi_samples_inside(ax, pw, w, &x_lo, &x_hi);
    if (!average && (y_hi - y_lo < ay->grid || x_hi - x_lo < ax->grid)) {
        first = 0; /* a sample outside the image: 0 is one of the candidates */
    }
    for (int64_t iy = y_lo; iy < y_hi; ++iy) {
        double y = pn_roi_sample_at(ay, ph, iy);
        for (int64_t ix = x_lo; ix < x_hi; ++ix) {
            double xx = pn_roi_sample_at(ax, pw, ix);
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
        pn_roi_axis ay = pn_roi_axis_of(d, y1, y2, d->output_height);
        pn_roi_axis ax = pn_roi_axis_of(d, x1, x2, d->output_width);
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
