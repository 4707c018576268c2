/* QUANTIZED_CONVOLUTION (ONNX ConvInteger, QLinearConv): a forward 1-, 2- or 3-D convolution of
 * INT8/UINT8 tensors shifted by their zero points, each output an exact integer sum wrapped to
 * INT32, given as such (INTEGER) or requantized (QLINEAR) as backend_api.h states. A 1-D or
 * 2-D layer runs as a 3-D one whose leading spatial axes have size 1. */
#include "cpuref.h"

#include <stdlib.h>

typedef struct qconv_state {
    int64_t batch, channels, outputs;    /* N, C, O */
    int64_t c_per_group, o_per_group;
    int64_t in[3], k[3], out[3];         /* spatial sizes, 3-D */
    int64_t stride[3], dilation[3], pad[3];
    int x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, bias;
} qconv_state;

/* The INT32 sum of output element (n, o, oz, oy, ox): taps outside x add nothing. */
static int32_t accumulate(const qconv_state* s, pn_data_type xt, const void* x, int64_t x_zero,
                          pn_data_type wt, const void* w, int64_t w_zero, int64_t n, int64_t o,
                          const int64_t at[3]) {
    int64_t g = o / s->o_per_group;
    int64_t taps = s->k[0] * s->k[1] * s->k[2];
    uint64_t acc = 0; /* modulo 2^64, so modulo 2^32 too */
    for (int64_t ci = 0; ci < s->c_per_group; ++ci) {
        int64_t c = g * s->c_per_group + ci;
        const int64_t x_plane = (n * s->channels + c) * s->in[0] * s->in[1] * s->in[2];
        const int64_t w_row = (o * s->c_per_group + ci) * taps;
        for (int64_t kz = 0; kz < s->k[0]; ++kz) {
            int64_t iz = at[0] * s->stride[0] - s->pad[0] + kz * s->dilation[0];
            for (int64_t ky = 0; ky < s->k[1]; ++ky) {
                int64_t iy = at[1] * s->stride[1] - s->pad[1] + ky * s->dilation[1];
                for (int64_t kx = 0; kx < s->k[2]; ++kx) {
                    int64_t ix = at[2] * s->stride[2] - s->pad[2] + kx * s->dilation[2];
                    if (iz < 0 || iz >= s->in[0] || iy < 0 || iy >= s->in[1] || ix < 0 ||
                        ix >= s->in[2]) {
                        continue; /* padding: x_zero_point, shifted to 0 */
                    }
                    int64_t xv =
                        pn_load_int64(xt, x, x_plane + (iz * s->in[1] + iy) * s->in[2] + ix);
                    int64_t wv =
                        pn_load_int64(wt, w, w_row + (kz * s->k[1] + ky) * s->k[2] + kx);
                    acc += (uint64_t)((xv - x_zero) * (wv - w_zero)); /* |product| < 2^16 */
                }
            }
        }
    }
    return cpuref_wrap_int32(acc);
}

static pn_status qconv_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                              pn_string_out* message_out) {
    (void)message_out;
    const qconv_state* s = (const qconv_state*)op->priv;
    const pn_tensor_info* info = op->inputs;
    int qlinear = s->y_zero_point >= 0;
    pn_data_type xt = info[s->x].dtype, wt = info[s->w].dtype, yt = op->outputs[0].dtype;
    int64_t x_zero = pn_load_int64(xt, in[s->x_zero_point], 0);
    int per_channel_zero = pn_num_elements(&info[s->w_zero_point]) > 1;
    int per_channel_scale = qlinear && pn_num_elements(&info[s->w_scale]) > 1;
    pn_data_type st = qlinear ? info[s->x_scale].dtype : PN_DTYPE_FLOAT32;
    double xs = qlinear ? pn_load_double(st, in[s->x_scale], 0) : 0.0;
    double ys = qlinear ? pn_load_double(st, in[s->y_scale], 0) : 0.0;
    double y_zero = qlinear ? (double)pn_load_int64(yt, in[s->y_zero_point], 0) : 0.0;
    int64_t plane = s->out[0] * s->out[1] * s->out[2];
    int64_t index = 0;
    for (int64_t n = 0; n < s->batch; ++n) {
        for (int64_t o = 0; o < s->outputs; ++o) {
            int64_t w_zero = pn_load_int64(wt, in[s->w_zero_point], per_channel_zero ? o : 0);
            double multiplier = 0.0;
            /* (x_scale * w_scale) / y_scale, each step rounded to the scales' type */
            if (qlinear) {
                double ws = pn_load_double(st, in[s->w_scale], per_channel_scale ? o : 0);
                multiplier = cpuref_round_to(st, cpuref_round_to(st, xs * ws) / ys);
            }
            int64_t bias = s->bias >= 0 ? pn_load_int64(PN_DTYPE_INT32, in[s->bias], o) : 0;
            for (int64_t p = 0; p < plane; ++p, ++index) {
                int64_t at[3] = {p / (s->out[1] * s->out[2]), (p / s->out[2]) % s->out[1],
                                 p % s->out[2]};
                int32_t acc =
                    accumulate(s, xt, in[s->x], x_zero, wt, in[s->w], w_zero, n, o, at);
                if (!qlinear) {
                    ((int32_t*)out[0])[index] = acc;
                    continue;
                }
                acc = cpuref_wrap_int32((uint64_t)acc + (uint64_t)bias);
                pn_store_int64(yt, out[0], index, cpuref_requantize(yt, acc, multiplier, y_zero));
            }
        }
    }
    return PN_OK;
}

/* The geometry of the layer, spatial axes right-aligned in 3-D, and its input positions. */
static void qconv_geometry(qconv_state* s, const pn_layer* layer,
                           const pn_quantized_convolution_desc* d) {
    int qlinear = d->op == PN_QUANTIZED_QLINEAR;
    s->x = 0;
    s->x_scale = qlinear ? 1 : -1;
    s->x_zero_point = qlinear ? 2 : 1;
    s->w = qlinear ? 3 : 2;
    s->w_scale = qlinear ? 4 : -1;
    s->w_zero_point = qlinear ? 5 : 3;
    s->y_scale = qlinear ? 6 : -1;
    s->y_zero_point = qlinear ? 7 : -1;
    s->bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) ? 8 : -1;
    const pn_tensor_info* x = &layer->inputs[s->x];
    const pn_tensor_info* w = &layer->inputs[s->w];
    const pn_tensor_info* y = &layer->outputs[0];
    uint32_t rank = d->spatial_rank;
    s->batch = x->dims[0];
    s->channels = x->dims[1];
    s->outputs = y->dims[1];
    s->c_per_group = s->channels / d->groups;
    s->o_per_group = s->outputs / d->groups;
    cpuref_spatial3_dims(rank, x->dims + 2, 1, s->in);
    cpuref_spatial3_dims(rank, w->dims + 2, 1, s->k);
    cpuref_spatial3_dims(rank, y->dims + 2, 1, s->out);
    cpuref_spatial3_u32(rank, d->strides, 1, s->stride);
    cpuref_spatial3_u32(rank, d->dilations, 1, s->dilation);
    cpuref_spatial3_u32(rank, d->pads_begin, 0, s->pad);
}

pn_status cpuref_quantized_convolution_create(void* context, const pn_layer* layer,
                                              pn_workload** workload_out,
                                              pn_string_out* message_out) {
    (void)context;
    const pn_quantized_convolution_desc* d =
        (const pn_quantized_convolution_desc*)layer->descriptor;
    qconv_state* s = (qconv_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating a QuantizedConvolution workload");
    }
    qconv_geometry(s, layer, d);
    return cpuref_typed_workload_new(layer, sizeof(*d), NULL, qconv_kernel, s, workload_out,
                                     message_out);
}
