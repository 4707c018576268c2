/* CONVOLUTION: 1-, 2- and 3-D convolution, forward (ONNX Conv) and transposed (ONNX
 * ConvTranspose), channels first, on every float type, computed in double straight from the
 * header's equations. A 1-D or 2-D layer runs as a 3-D one whose leading spatial axes have
 * size 1 (kernel 1, stride 1, no padding). */
#include "cpuref.h"

#include <stdlib.h>

typedef struct conv_state {
    int64_t batch, channels, outputs;     /* N, C, O */
    int64_t groups, c_per_group, o_per_group;
    int64_t in[3], k[3], out[3];          /* spatial sizes, 3-D */
    int64_t stride[3], dilation[3], pad[3];
    int transposed, has_bias;
    double* x;    /* the input in double: [N, C, in...] */
    double* w;    /* the weights in double */
    double* b;    /* the bias in double: [O] */
    double* y;    /* the output accumulators: [N, O, out...] */
    double data[];
} conv_state;

static int64_t volume(const int64_t v[3]) { return v[0] * v[1] * v[2]; }

/* ---- Forward ------------------------------------------------------------------ */

/* y[n, o] += sum over the taps of one input channel c (weights row `w`, k-volume values). */
static void forward_channel(const conv_state* s, const double* xc, const double* w, double* yo) {
    for (int64_t kz = 0; kz < s->k[0]; ++kz) {
        for (int64_t ky = 0; ky < s->k[1]; ++ky) {
            for (int64_t kx = 0; kx < s->k[2]; ++kx) {
                double weight = w[(kz * s->k[1] + ky) * s->k[2] + kx];
                for (int64_t oz = 0; oz < s->out[0]; ++oz) {
                    int64_t iz = oz * s->stride[0] - s->pad[0] + kz * s->dilation[0];
                    if (iz < 0 || iz >= s->in[0]) {
                        continue;
                    }
                    for (int64_t oy = 0; oy < s->out[1]; ++oy) {
                        int64_t iy = oy * s->stride[1] - s->pad[1] + ky * s->dilation[1];
                        if (iy < 0 || iy >= s->in[1]) {
                            continue;
                        }
                        const double* row = xc + (iz * s->in[1] + iy) * s->in[2];
                        double* out_row = yo + (oz * s->out[1] + oy) * s->out[2];
                        for (int64_t ox = 0; ox < s->out[2]; ++ox) {
                            int64_t ix = ox * s->stride[2] - s->pad[2] + kx * s->dilation[2];
                            if (ix >= 0 && ix < s->in[2]) {
                                out_row[ox] += weight * row[ix];
                            }
                        }
                    }
                }
            }
        }
    }
}

static void forward(const conv_state* s) {
    int64_t in_plane = volume(s->in), out_plane = volume(s->out), taps = volume(s->k);
    for (int64_t n = 0; n < s->batch; ++n) {
        for (int64_t o = 0; o < s->outputs; ++o) {
            int64_t g = o / s->o_per_group;
            double* yo = s->y + (n * s->outputs + o) * out_plane;
            for (int64_t ci = 0; ci < s->c_per_group; ++ci) {
                int64_t c = g * s->c_per_group + ci;
                forward_channel(s, s->x + (n * s->channels + c) * in_plane,
                                s->w + (o * s->c_per_group + ci) * taps, yo);
            }
        }
    }
}

/* ---- Transposed ------------------------------------------------------------------ */

/* Every element of input channel plane `xc` times weight `weight` (tap kz, ky, kx) added to
 * the output plane at j * stride + t * dilation - pad_begin. */
static void transposed_tap(const conv_state* s, const double* xc, double weight, int64_t kz,
                           int64_t ky, int64_t kx, double* yo) {
    for (int64_t jz = 0; jz < s->in[0]; ++jz) {
        int64_t oz = jz * s->stride[0] + kz * s->dilation[0] - s->pad[0];
        if (oz < 0 || oz >= s->out[0]) {
            continue;
        }
        for (int64_t jy = 0; jy < s->in[1]; ++jy) {
            int64_t oy = jy * s->stride[1] + ky * s->dilation[1] - s->pad[1];
            if (oy < 0 || oy >= s->out[1]) {
                continue;
            }
            const double* row = xc + (jz * s->in[1] + jy) * s->in[2];
            double* out_row = s->out[2] > 0 ? yo + (oz * s->out[1] + oy) * s->out[2] : yo;
            for (int64_t jx = 0; jx < s->in[2]; ++jx) {
                int64_t ox = jx * s->stride[2] + kx * s->dilation[2] - s->pad[2];
                if (ox >= 0 && ox < s->out[2]) {
                    out_row[ox] += weight * row[jx];
                }
            }
        }
    }
}

static void transposed(const conv_state* s) {
    int64_t in_plane = volume(s->in), out_plane = volume(s->out), taps = volume(s->k);
    for (int64_t n = 0; n < s->batch; ++n) {
        for (int64_t c = 0; c < s->channels; ++c) {
            int64_t g = c / s->c_per_group;
            const double* xc = s->x + (n * s->channels + c) * in_plane;
            for (int64_t oo = 0; oo < s->o_per_group; ++oo) {
                int64_t o = g * s->o_per_group + oo;
                const double* w = s->w + (c * s->o_per_group + oo) * taps;
                double* yo = s->y + (n * s->outputs + o) * out_plane;
                for (int64_t kz = 0; kz < s->k[0]; ++kz) {
                    for (int64_t ky = 0; ky < s->k[1]; ++ky) {
                        for (int64_t kx = 0; kx < s->k[2]; ++kx) {
                            transposed_tap(s, xc, w[(kz * s->k[1] + ky) * s->k[2] + kx], kz, ky,
                                           kx, yo);
                        }
                    }
                }
            }
        }
    }
}

/* ---- Kernel ----------------------------------------------------------------------- */

static pn_status convolution_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                    pn_string_out* message_out) {
    (void)message_out;
    conv_state* s = (conv_state*)op->priv;
    pn_data_type dtype = op->inputs[0].dtype;
    int64_t y_count = pn_num_elements(&op->outputs[0]);
    pn_convert(PN_DTYPE_FLOAT64, s->x, dtype, in[0], pn_num_elements(&op->inputs[0]));
    pn_convert(PN_DTYPE_FLOAT64, s->w, dtype, in[1], pn_num_elements(&op->inputs[1]));
    if (s->has_bias) {
        pn_convert(PN_DTYPE_FLOAT64, s->b, dtype, in[2], s->outputs);
    }
    for (int64_t i = 0; i < y_count; ++i) {
        s->y[i] = 0.0;
    }
    if (s->transposed) {
        transposed(s);
    } else {
        forward(s);
    }
    int64_t out_plane = volume(s->out);
    for (int64_t i = 0; i < y_count; ++i) {
        double v = s->y[i];
        if (s->has_bias) {
            v += s->b[(i / out_plane) % s->outputs];
        }
        pn_store_double(op->outputs[0].dtype, out[0], i, cpuref_fused(op, v));
    }
    return PN_OK;
}

/* ---- Create ------------------------------------------------------------------------- */

/* The geometry of the layer, spatial axes right-aligned in 3-D. */
static void conv_geometry(conv_state* s, const pn_layer* layer, const pn_convolution_desc* d) {
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[1];
    const pn_tensor_info* y = &layer->outputs[0];
    uint32_t rank = d->spatial_rank;
    s->batch = x->dims[0];
    s->channels = x->dims[1];
    s->outputs = y->dims[1];
    s->groups = d->groups;
    s->c_per_group = s->channels / s->groups;
    s->o_per_group = s->outputs / s->groups;
    s->transposed = d->op == PN_CONVOLUTION_TRANSPOSED;
    s->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    cpuref_spatial3_dims(rank, x->dims + 2, 1, s->in);
    cpuref_spatial3_dims(rank, w->dims + 2, 1, s->k);
    cpuref_spatial3_dims(rank, y->dims + 2, 1, s->out);
    cpuref_spatial3_u32(rank, d->strides, 1, s->stride);
    cpuref_spatial3_u32(rank, d->dilations, 1, s->dilation);
    cpuref_spatial3_u32(rank, d->pads_begin, 0, s->pad);
}

pn_status cpuref_convolution_create(void* context, const pn_layer* layer,
                                    pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_convolution_desc* d = (const pn_convolution_desc*)layer->descriptor;
    int64_t counts[4] = {pn_num_elements(&layer->inputs[0]), pn_num_elements(&layer->inputs[1]),
                         layer->outputs[0].dims[1], pn_num_elements(&layer->outputs[0])};
    uint64_t total = 0;
    for (int i = 0; i < 4; ++i) {
        total += (uint64_t)counts[i];
    }
    conv_state* s = NULL;
    if (total <= (uint64_t)((SIZE_MAX - sizeof(conv_state)) / sizeof(double))) {
        s = (conv_state*)malloc(sizeof(conv_state) + (size_t)total * sizeof(double));
    }
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating a Convolution workload");
    }
    conv_geometry(s, layer, d);
    s->x = s->data;
    s->w = s->x + counts[0];
    s->b = s->w + counts[1];
    s->y = s->b + counts[2];
    return cpuref_typed_workload_new(layer, sizeof(*d), d->fused_activation, convolution_kernel,
                                     s, workload_out, message_out);
}
