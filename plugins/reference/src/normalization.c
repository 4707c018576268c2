/* BATCH_NORMALIZATION (inference) and LOCAL_RESPONSE_NORMALIZATION (ONNX LRN). */
#include "cpuref.h"

#include <math.h>

/* A tensor seen as [outer, channels, inner] around its channel axis. */
typedef struct channel_view {
    int64_t outer, channels, inner;
} channel_view;

/* The channel axis is 3 for a rank-4 NHWC tensor, else 1. */
static channel_view channel_view_of(const pn_tensor_info* x, pn_data_layout layout) {
    uint32_t axis = x->rank == 4 && layout == PN_LAYOUT_NHWC ? 3 : 1;
    channel_view v;
    v.outer = cpuref_span(x, 0, axis);
    v.channels = x->dims[axis];
    v.inner = cpuref_span(x, axis + 1, x->rank);
    return v;
}

/* ---- BATCH_NORMALIZATION ------------------------------------------------------ */

static void batch_norm_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_batch_normalization_desc* d = &op->desc.bn;
    channel_view v = channel_view_of(&op->inputs[0], d->layout);
    const float *scale = in[1], *bias = in[2], *mean = in[3], *var = in[4];
    for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t c = 0; c < v.channels; ++c) {
            double inv_std = 1.0 / sqrt((double)var[c] + (double)d->epsilon);
            int64_t base = (o * v.channels + c) * v.inner;
            for (int64_t i = 0; i < v.inner; ++i) {
                double x = in[0][base + i];
                out[0][base + i] = (float)((double)scale[c] * (x - mean[c]) * inv_std + bias[c]);
            }
        }
    }
}

pn_status cpuref_batch_norm_create(void* context, const pn_layer* layer,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_batch_normalization_desc), NULL,
                               batch_norm_kernel, workload_out, message_out);
}

/* ---- LOCAL_RESPONSE_NORMALIZATION -------------------------------------------------- */

/* Sum of squares over channels [c - (size-1)/2, c + size/2], clipped to the tensor. */
static double lrn_square_sum(const float* x, const channel_view* v, int64_t c, int64_t size) {
    int64_t lo = c - (size - 1) / 2, hi = c + size / 2;
    lo = lo < 0 ? 0 : lo;
    hi = hi >= v->channels ? v->channels - 1 : hi;
    double sum = 0.0;
    for (int64_t k = lo; k <= hi; ++k) {
        double e = x[k * v->inner];
        sum += e * e;
    }
    return sum;
}

static void lrn_kernel(const cpuref_op* op, const float* const* in, float* const* out) {
    const pn_lrn_desc* d = &op->desc.lrn;
    channel_view v = channel_view_of(&op->inputs[0], d->layout);
    double alpha_over_size = (double)d->alpha / (double)d->size;
    for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
            /* x points at channel 0 of this (outer, inner) line. */
            const float* x = in[0] + o * v.channels * v.inner + i;
            float* y = out[0] + o * v.channels * v.inner + i;
            for (int64_t c = 0; c < v.channels; ++c) {
                double sum = lrn_square_sum(x, &v, c, d->size);
                double denom = pow((double)d->bias + alpha_over_size * sum, (double)d->beta);
                y[c * v.inner] = (float)((double)x[c * v.inner] / denom);
            }
        }
    }
}

pn_status cpuref_lrn_create(void* context, const pn_layer* layer,
                            pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_workload_new(layer, sizeof(pn_lrn_desc), NULL, lrn_kernel, workload_out,
                               message_out);
}
