/* DEFORMABLE_CONVOLUTION (ONNX DeformConv): a 1-, 2- or 3-D grouped convolution whose taps
 * sample x at learned offsets by multilinear interpolation, optionally modulated by a mask
 * (backend_api.h). Everything in double. */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

typedef struct deform_state {
    uint32_t r;                   /* spatial axes */
    int64_t batch, in_channels, out_channels;
    int64_t in_dims[3], out_dims[3], k_dims[3];
    int64_t in_plane, out_plane, taps;
    int64_t in_per_group, out_per_group, in_per_offset_group;
    uint32_t bias_input, mask_input; /* input index, or 0: absent */
} deform_state;

/* The multilinear interpolation of plane `plane` of x at position p (zero outside). */
static double sample_at(const deform_state* s, pn_data_type t, const void* x, int64_t plane,
                        const double p[3]) {
    int64_t base[3];
    double frac[3];
    for (uint32_t a = 0; a < s->r; ++a) {
        if (!(p[a] > -1.0 && p[a] < (double)s->in_dims[a])) {
            return 0.0; /* every corner outside (NaN positions too) */
        }
        double fl = floor(p[a]);
        base[a] = (int64_t)fl;
        frac[a] = p[a] - fl;
    }
    double sum = 0.0;
    for (uint32_t corner = 0; corner < (1u << s->r); ++corner) {
        double w = 1.0;
        int64_t at = 0;
        int inside = 1;
        for (uint32_t a = 0; a < s->r; ++a) {
            int up = (corner >> (s->r - 1 - a)) & 1;
            int64_t j = base[a] + up;
            inside &= j >= 0 && j < s->in_dims[a];
            w *= up ? frac[a] : 1.0 - frac[a];
            at = at * s->in_dims[a] + j;
        }
        if (inside && w != 0.0) {
            sum += w * pn_load_double(t, x, plane * s->in_plane + at);
        }
    }
    return sum;
}

/* Unravels a row-major index over `dims` (r entries). */
static void unravel(int64_t i, const int64_t* dims, uint32_t r, int64_t* index) {
    for (int32_t a = (int32_t)r - 1; a >= 0; --a) {
        index[a] = dims[a] > 0 ? i % dims[a] : 0;
        i = dims[a] > 0 ? i / dims[a] : 0;
    }
}

/* The sampled value of input channel c at output position o (multi-index oi) and tap t. */
static double tap_value(const deform_state* s, const pn_deformable_convolution_desc* d,
                        const cpuref_op* op, const void* const* in, int64_t n, int64_t c,
                        int64_t o, const int64_t* oi, int64_t t) {
    pn_data_type type = op->inputs[0].dtype;
    int64_t g = c / s->in_per_offset_group;
    int64_t ti[3];
    unravel(t, s->k_dims, s->r, ti);
    double p[3];
    for (uint32_t a = 0; a < s->r; ++a) {
        int64_t channel = (g * s->taps + t) * s->r + a;
        double shift = pn_load_double(type, in[2], (n * s->taps * s->r * (int64_t)d->offset_groups +
                                                    channel) * s->out_plane + o);
        p[a] = (double)(oi[a] * (int64_t)d->strides[a] - (int64_t)d->pads_begin[a] +
                        ti[a] * (int64_t)d->dilations[a]) + shift;
    }
    double v = sample_at(s, type, in[0], n * s->in_channels + c, p);
    if (s->mask_input != 0) {
        int64_t channel = g * s->taps + t;
        v *= pn_load_double(type, in[s->mask_input],
                            (n * s->taps * (int64_t)d->offset_groups + channel) * s->out_plane + o);
    }
    return v;
}

static pn_status deform_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    (void)message_out;
    const deform_state* s = (const deform_state*)op->priv;
    const pn_deformable_convolution_desc* d = &op->desc.deform;
    pn_data_type type = op->inputs[0].dtype;
    for (int64_t n = 0; n < s->batch; ++n) {
        for (int64_t oc = 0; oc < s->out_channels; ++oc) {
            int64_t group = oc / s->out_per_group;
            double bias = s->bias_input != 0 ? pn_load_double(type, in[s->bias_input], oc) : 0.0;
            for (int64_t o = 0; o < s->out_plane; ++o) {
                int64_t oi[3];
                unravel(o, s->out_dims, s->r, oi);
                double sum = bias;
                for (int64_t ci = 0; ci < s->in_per_group; ++ci) {
                    int64_t c = group * s->in_per_group + ci;
                    for (int64_t t = 0; t < s->taps; ++t) {
                        int64_t wi = (oc * s->in_per_group + ci) * s->taps + t;
                        double w = pn_load_double(type, in[1], wi);
                        sum += w * tap_value(s, d, op, in, n, c, o, oi, t);
                    }
                }
                pn_store_double(type, out[0], (n * s->out_channels + oc) * s->out_plane + o, sum);
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_deformable_convolution_create(void* context, const pn_layer* layer,
                                               pn_workload** workload_out,
                                               pn_string_out* message_out) {
    (void)context;
    const pn_deformable_convolution_desc* d =
        (const pn_deformable_convolution_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* w = &layer->inputs[1];
    const pn_tensor_info* y = &layer->outputs[0];
    deform_state* s = (deform_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "DeformableConvolution workload");
    }
    s->r = d->spatial_rank;
    s->batch = x->dims[0];
    s->in_channels = x->dims[1];
    s->out_channels = y->dims[1];
    s->taps = 1;
    for (uint32_t a = 0; a < s->r; ++a) {
        s->in_dims[a] = x->dims[2 + a];
        s->out_dims[a] = y->dims[2 + a];
        s->k_dims[a] = w->dims[2 + a];
        s->taps *= w->dims[2 + a];
    }
    s->in_plane = cpuref_span(x, 2, x->rank);
    s->out_plane = cpuref_span(y, 2, y->rank);
    s->in_per_group = s->in_channels / d->groups;
    s->out_per_group = s->out_channels / d->groups;
    s->in_per_offset_group = s->in_channels / d->offset_groups;
    uint32_t next = 3;
    if (d->flags & PN_LAYER_FLAG_HAS_BIAS) {
        s->bias_input = next++;
    }
    if (d->flags & PN_DEFORMABLE_HAS_MASK) {
        s->mask_input = next;
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_deformable_convolution_desc), NULL,
                                     deform_kernel, s, workload_out, message_out);
}
