/* CONVOLUTION_2D: direct loops, NCHW or NHWC, groups, dilation, 4-sided padding. */
#include "cpuref.h"

/* Sizes and element strides of one convolution, fixed at execute time. */
typedef struct conv_geometry {
    int64_t x_nchw[4], y_nchw[4]; /* [N, C, H, W] of input and output */
    int64_t xs[4], ys[4];         /* element strides of x and y, indexed [n, c, h, w] */
    int64_t kh, kw;               /* kernel size */
    int64_t in_per_group, out_per_group;
} conv_geometry;

static conv_geometry conv_geometry_of(const cpuref_op* op) {
    const pn_convolution_2d_desc* d = &op->desc.conv;
    const pn_tensor_info* w = &op->inputs[1];
    conv_geometry g;
    pn_layout_nchw(&op->inputs[0], d->layout, g.x_nchw);
    pn_layout_nchw(&op->outputs[0], d->layout, g.y_nchw);
    cpuref_layout_strides(d->layout, g.x_nchw, g.xs);
    cpuref_layout_strides(d->layout, g.y_nchw, g.ys);
    g.kh = w->dims[2];
    g.kw = w->dims[3];
    g.in_per_group = w->dims[1];
    g.out_per_group = g.y_nchw[1] / (int64_t)d->groups;
    return g;
}

/* The first and one past the last output column whose input column ox * stride - pad + offset
 * lies in [0, width): the columns a kernel tap touches without padding. */
static void valid_columns(int64_t width, int64_t out_width, int64_t stride, int64_t offset,
                          int64_t* first, int64_t* end) {
    int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t hi = width - 1 - offset < 0 ? -1 : (width - 1 - offset) / stride;
    *first = lo;
    *end = hi + 1 < out_width ? hi + 1 : out_width;
}

/* One output plane (image n, channel o) in double: every tap's weight times the input rows it
 * reads, row by row, so the innermost loop walks contiguous memory (padding is never read). */
static void conv_plane(const cpuref_op* op, const conv_geometry* g, const float* x, const float* w,
                       int64_t n, int64_t o, double* acc) {
    const pn_convolution_2d_desc* d = &op->desc.conv;
    int64_t oh = g->y_nchw[2], ow = g->y_nchw[3];
    int64_t sh = d->stride_h, sw = d->stride_w;
    int64_t first_c = (o / g->out_per_group) * g->in_per_group;
    for (int64_t i = 0; i < oh * ow; ++i) {
        acc[i] = 0.0;
    }
    for (int64_t ci = 0; ci < g->in_per_group; ++ci) {
        const float* xc = x + n * g->xs[0] + (first_c + ci) * g->xs[1];
        const float* wc = w + (o * g->in_per_group + ci) * g->kh * g->kw;
        for (int64_t ky = 0; ky < g->kh; ++ky) {
            for (int64_t kx = 0; kx < g->kw; ++kx) {
                double weight = wc[ky * g->kw + kx];
                int64_t col_offset = kx * (int64_t)d->dilation_w - (int64_t)d->pad_left;
                int64_t first, end;
                valid_columns(g->x_nchw[3], ow, sw, col_offset, &first, &end);
                for (int64_t oy = 0; oy < oh; ++oy) {
                    int64_t iy = oy * sh - (int64_t)d->pad_top + ky * (int64_t)d->dilation_h;
                    if (iy < 0 || iy >= g->x_nchw[2]) {
                        continue; /* zero padding */
                    }
                    const float* row = xc + iy * g->xs[2] + col_offset * g->xs[3];
                    double* out_row = acc + oy * ow;
                    for (int64_t ox = first; ox < end; ++ox) {
                        out_row[ox] += weight * (double)row[ox * sw * g->xs[3]];
                    }
                }
            }
        }
    }
}

static void conv2d_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_convolution_2d_desc* d = &op->desc.conv;
    conv_geometry g = conv_geometry_of(op);
    uint32_t next = 2;
    const float* bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) ? in[next++] : NULL;
    const float* addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) ? in[next] : NULL;
    int64_t oh = g.y_nchw[2], ow = g.y_nchw[3];
    double* acc = (double*)op->workspace; /* one output plane, asked for at create */
    for (int64_t n = 0; n < g.y_nchw[0]; ++n) {
        for (int64_t o = 0; o < g.y_nchw[1]; ++o) {
            conv_plane(op, &g, in[0], in[1], n, o, acc);
            for (int64_t oy = 0; oy < oh; ++oy) {
                for (int64_t ox = 0; ox < ow; ++ox) {
                    int64_t at = n * g.ys[0] + o * g.ys[1] + oy * g.ys[2] + ox * g.ys[3];
                    double v = acc[oy * ow + ox];
                    if (bias != NULL) {
                        v += bias[o];
                    }
                    if (addend != NULL) {
                        v += addend[at];
                    }
                    out[0][at] = (float)cpuref_fused(op, v);
                }
            }
        }
    }
}

pn_status cpuref_conv2d_create(void* context, const pn_layer* layer,
                               pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    int64_t y[4];
    pn_layout_nchw(&layer->outputs[0], d->layout, y);
    size_t plane = (size_t)(y[2] * y[3] > 0 ? y[2] * y[3] : 1) * sizeof(double);
    return cpuref_workload_new_scratch(layer, sizeof(*d), d->fused_activation, conv2d_kernel, plane,
                                       workload_out, message_out);
}
