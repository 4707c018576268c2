/* BATCH_NORMALIZATION (inference), LOCAL_RESPONSE_NORMALIZATION (ONNX LRN) and
 * NORMALIZATION (LAYER, RMS, GROUP, LP; computed in double on any float type). */
#include "cpuref.h"

#include <math.h>
#include <stdlib.h>

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

/* ---- NORMALIZATION (LAYER, RMS, GROUP, LP) ------------------------------------------------ */

/* What a NORMALIZATION workload keeps: the geometry, and for LAYER and RMS the strides of
 * scale and bias broadcast to the normalized dims and double scratch to expand them into at
 * each execute (one execute at a time). Everything is computed in double. */
typedef struct norm_state {
    int64_t outer;   /* LAYER, RMS: sets normalized; GROUP: N; LP: lines before the axis */
    int64_t size;    /* LAYER, RMS: elements per set; GROUP: C; LP: the axis' length */
    int64_t inner;   /* GROUP: elements per channel (the dims after C); LP: lines after the axis */
    int64_t groups;  /* GROUP */
    int has_bias;
    pn_tensor_info normalized;                 /* LAYER, RMS: x.shape[axis:] */
    int64_t param_strides[2][PN_MAX_DIMS];     /* LAYER, RMS: scale's and bias' */
    double* scale;                             /* LAYER, RMS: [size] */
    double* bias;                              /* LAYER, RMS: [size], zeros without a bias */
    double data[];
} norm_state;

/* scale (k = 0) or bias (k = 1) broadcast to the normalized dims, into s->scale / s->bias. */
static void expand_parameter(norm_state* s, int k, pn_data_type t, const void* param) {
    double* dst = k == 0 ? s->scale : s->bias;
    int64_t index[PN_MAX_DIMS];
    for (int64_t j = 0; j < s->size; ++j) {
        cpuref_unravel(&s->normalized, j, index);
        dst[j] = pn_load_double(t, param, cpuref_dot(index, s->param_strides[k], s->normalized.rank));
    }
}

/* LAYER (centered) or RMS over each of the `outer` sets of `size` consecutive elements. */
static void normalize_trailing(norm_state* s, int centered, double eps, pn_data_type t,
                               const void* x, void* y) {
    double n = (double)s->size;
    for (int64_t o = 0; o < s->outer; ++o) {
        int64_t base = o * s->size;
        double mean = 0.0, var = 0.0;
        if (centered) {
            for (int64_t j = 0; j < s->size; ++j) {
                mean += pn_load_double(t, x, base + j);
            }
            mean /= n;
        }
        for (int64_t j = 0; j < s->size; ++j) {
            double dev = pn_load_double(t, x, base + j) - mean;
            var += dev * dev;
        }
        double inv = 1.0 / sqrt(var / n + eps);
        for (int64_t j = 0; j < s->size; ++j) {
            double v = (pn_load_double(t, x, base + j) - mean) * inv;
            pn_store_double(t, y, base + j, v * s->scale[j] + s->bias[j]);
        }
    }
}

/* GROUP: per sample and group, over its channels and all their elements. */
static void normalize_groups(const norm_state* s, double eps, pn_data_type t, const void* x,
                             const void* scale, const void* bias, void* y) {
    int64_t per_group = s->size / s->groups;
    int64_t count = per_group * s->inner;
    for (int64_t b = 0; b < s->outer; ++b) {
        for (int64_t g = 0; g < s->groups; ++g) {
            int64_t base = (b * s->size + g * per_group) * s->inner;
            double mean = 0.0, var = 0.0;
            for (int64_t j = 0; j < count; ++j) {
                mean += pn_load_double(t, x, base + j);
            }
            mean /= (double)count;
            for (int64_t j = 0; j < count; ++j) {
                double dev = pn_load_double(t, x, base + j) - mean;
                var += dev * dev;
            }
            double inv = 1.0 / sqrt(var / (double)count + eps);
            for (int64_t j = 0; j < count; ++j) {
                int64_t c = g * per_group + j / s->inner;
                double v = (pn_load_double(t, x, base + j) - mean) * inv * pn_load_double(t, scale, c);
                pn_store_double(t, y, base + j, bias != NULL ? v + pn_load_double(t, bias, c) : v);
            }
        }
    }
}

/* LP: each line along the axis divided by its p-norm (a zero norm gives 0). */
static void normalize_lp(const norm_state* s, uint32_t p, pn_data_type t, const void* x, void* y) {
    for (int64_t o = 0; o < s->outer; ++o) {
        for (int64_t i = 0; i < s->inner; ++i) {
            int64_t base = o * s->size * s->inner + i;
            double norm = 0.0;
            for (int64_t j = 0; j < s->size; ++j) {
                double v = pn_load_double(t, x, base + j * s->inner);
                norm += p == 1 ? fabs(v) : v * v;
            }
            norm = p == 1 ? norm : sqrt(norm);
            for (int64_t j = 0; j < s->size; ++j) {
                double v = pn_load_double(t, x, base + j * s->inner);
                pn_store_double(t, y, base + j * s->inner, norm == 0.0 ? 0.0 : v / norm);
            }
        }
    }
}

static pn_status normalization_kernel(const cpuref_op* op, const void* const* in,
                                      void* const* out, pn_string_out* message_out) {
    (void)message_out;
    norm_state* s = (norm_state*)op->priv;
    const pn_normalization_desc* d = &op->desc.norm;
    pn_data_type t = op->inputs[0].dtype;
    double eps = (double)d->epsilon;
    switch (d->op) {
    case PN_NORMALIZATION_GROUP:
        normalize_groups(s, eps, t, in[0], in[1], s->has_bias ? in[2] : NULL, out[0]);
        break;
    case PN_NORMALIZATION_LP: normalize_lp(s, d->num_groups, t, in[0], out[0]); break;
    default:
        expand_parameter(s, 0, t, in[1]);
        if (s->has_bias) {
            expand_parameter(s, 1, t, in[2]);
        }
        normalize_trailing(s, d->op == PN_NORMALIZATION_LAYER, eps, t, in[0], out[0]);
        break;
    }
    return PN_OK;
}

pn_status cpuref_normalization_create(void* context, const pn_layer* layer,
                                      pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_normalization_desc* d = (const pn_normalization_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    int trailing = d->op == PN_NORMALIZATION_LAYER || d->op == PN_NORMALIZATION_RMS;
    uint32_t axis = d->op == PN_NORMALIZATION_GROUP ? 1u : (uint32_t)pn_normalize_axis(d->axis, x->rank);
    int64_t size = trailing ? cpuref_span(x, axis, x->rank) : x->dims[axis];
    size_t scratch = trailing ? 2 * (size_t)size : 0;
    norm_state* s = (norm_state*)calloc(1, sizeof(*s) + scratch * sizeof(double));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a "
                       "Normalization workload");
    }
    s->outer = cpuref_span(x, 0, axis);
    s->size = size;
    s->inner = trailing ? 1 : cpuref_span(x, axis + 1, x->rank);
    s->groups = d->op == PN_NORMALIZATION_GROUP ? (int64_t)d->num_groups : 1;
    s->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    if (trailing) {
        s->scale = s->data;
        s->bias = s->data + size; /* zeros (calloc) unless a bias is expanded into it */
        s->normalized.struct_size = (uint32_t)sizeof(pn_tensor_info);
        s->normalized.rank = x->rank - axis;
        for (uint32_t i = axis; i < x->rank; ++i) {
            s->normalized.dims[i - axis] = x->dims[i];
        }
        for (uint32_t k = 0; k + 1 < layer->num_inputs && k < 2; ++k) {
            pn_broadcast_strides(&layer->inputs[k + 1], &s->normalized, s->param_strides[k]);
        }
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_normalization_desc), NULL,
                                     normalization_kernel, s, workload_out, message_out);
}
