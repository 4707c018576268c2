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

/* The sum over one output position's receptive field for output channel o. */
static double conv_window(const cpuref_op* op, const conv_geometry* g, const float* x,
                          const float* w, int64_t n, int64_t o, int64_t oy, int64_t ox) {
    const pn_convolution_2d_desc* d = &op->desc.conv;
    int64_t first_c = (o / g->out_per_group) * g->in_per_group;
    int64_t y0 = oy * (int64_t)d->stride_h - (int64_t)d->pad_top;
    int64_t x0 = ox * (int64_t)d->stride_w - (int64_t)d->pad_left;
    double acc = 0.0;
    for (int64_t ci = 0; ci < g->in_per_group; ++ci) {
        const float* xc = x + n * g->xs[0] + (first_c + ci) * g->xs[1];
        const float* wc = w + (o * g->in_per_group + ci) * g->kh * g->kw;
        for (int64_t ky = 0; ky < g->kh; ++ky) {
            int64_t iy = y0 + ky * (int64_t)d->dilation_h;
            if (iy < 0 || iy >= g->x_nchw[2]) {
                continue; /* zero padding */
            }
            for (int64_t kx = 0; kx < g->kw; ++kx) {
                int64_t ix = x0 + kx * (int64_t)d->dilation_w;
                if (ix >= 0 && ix < g->x_nchw[3]) {
                    acc += (double)xc[iy * g->xs[2] + ix * g->xs[3]] * (double)wc[ky * g->kw + kx];
                }
            }
        }
    }
    return acc;
}

static void conv2d_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_convolution_2d_desc* d = &op->desc.conv;
    conv_geometry g = conv_geometry_of(op);
    uint32_t next = 2;
    const float* bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) ? in[next++] : NULL;
    const float* addend = (d->flags & PN_LAYER_FLAG_HAS_ADDEND) ? in[next] : NULL;
    for (int64_t n = 0; n < g.y_nchw[0]; ++n) {
        for (int64_t o = 0; o < g.y_nchw[1]; ++o) {
            for (int64_t oy = 0; oy < g.y_nchw[2]; ++oy) {
                for (int64_t ox = 0; ox < g.y_nchw[3]; ++ox) {
                    int64_t at = n * g.ys[0] + o * g.ys[1] + oy * g.ys[2] + ox * g.ys[3];
                    double v = conv_window(op, &g, in[0], in[1], n, o, oy, ox);
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
    return cpuref_workload_new(layer, sizeof(*d), d->fused_activation, conv2d_kernel,
                               workload_out, message_out);
}
