/* BATCH_NORMALIZATION (inference) on float32: y = (x - mean[c]) * a[c] + bias[c] with
 * a[c] = scale[c] / sqrt(var[c] + eps) computed in double as CpuRef does, once at create time
 * when the four operands are constant, else at each run. Channels-second x (rank 2, 3, 4 NCHW;
 * the shared validation allows rank 2 to 4) runs rows of one channel through the affine row kernel of kernels/row_kernels_body.h; rank-4
 * NHWC x runs rows of all channels. Rows split over the pool. */
#include "ops/batch_norm.h"
#include "ops/create.h"
#include "kernels/row_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_PARALLEL 16384 /* elements per thread below which a wake-up does not pay */

typedef struct bn_priv {
    const accel_row_kernels* tk;
    float eps;
    int nhwc;                   /* channels last (rank-4 NHWC) */
    int64_t outer, channels, inner;
    int ready;                  /* coef holds a (then mean, then bias) from constant operands */
    float* coef;                /* 3 * channels floats: a, mean, bias (inside this allocation) */
    const accel_kernels* k;     /* the activation's kernels, when act is set */
    const pn_activation_desc* act; /* &act_copy with a fused activation, else NULL */
    pn_activation_desc act_copy;
} bn_priv;

/* coef = a, mean, bias of the channels from scale, bias, mean, var. */
static void bn_coefficients(int64_t channels, float eps, const float* scale, const float* bias,
                            const float* mean, const float* var, float* coef) {
    for (int64_t c = 0; c < channels; ++c) {
        coef[c] = (float)((double)scale[c] / sqrt((double)var[c] + (double)eps));
        coef[channels + c] = mean[c];
        coef[2 * channels + c] = bias[c];
    }
}

typedef struct bn_job {
    const bn_priv* p;
    const float* x;
    const float* coef;           /* a, mean, bias; NULL: from the run-time operands below */
    const float* const* in;      /* x, scale, bias, mean, var */
    float* y;
} bn_job;

/* a, mean and bias of channel c. */
static void bn_channel(const bn_job* j, int64_t c, float* a, float* m, float* bias) {
    if (j->coef != NULL) {
        const int64_t C = j->p->channels;
        *a = j->coef[c];
        *m = j->coef[C + c];
        *bias = j->coef[2 * C + c];
        return;
    }
    float one[3];
    bn_coefficients(1, j->p->eps, j->in[1] + c, j->in[2] + c, j->in[3] + c, j->in[4] + c, one);
    *a = one[0];
    *m = one[1];
    *bias = one[2];
}

/* Rows [b, e): channels-second, row r is channel r % channels of its outer index. */
static void bn_rows(void* raw, int64_t b, int64_t e) {
    const bn_job* j = (const bn_job*)raw;
    const bn_priv* p = j->p;
    for (int64_t r = b; r < e; ++r) {
        float a, m, bias;
        bn_channel(j, r % p->channels, &a, &m, &bias);
        p->tk->affine_row(j->x + r * p->inner, j->y + r * p->inner, p->inner, m, a, bias);
        if (p->act != NULL) {
            p->k->activation(p->act, j->y + r * p->inner, j->y + r * p->inner, p->inner);
        }
    }
}

/* Rows [b, e) of NHWC x: each one pixel's C channels. */
static void bn_rows_nhwc(void* raw, int64_t b, int64_t e) {
    const bn_job* j = (const bn_job*)raw;
    const int64_t C = j->p->channels;
    for (int64_t r = b; r < e; ++r) {
        const float* x = j->x + r * C;
        float* y = j->y + r * C;
        if (j->coef != NULL) {
            const float *a = j->coef, *m = j->coef + C, *bias = j->coef + 2 * C;
            for (int64_t c = 0; c < C; ++c) {
                y[c] = (x[c] - m[c]) * a[c] + bias[c];
            }
            if (j->p->act != NULL) {
                j->p->k->activation(j->p->act, y, y, C);
            }
            continue;
        }
        for (int64_t c = 0; c < C; ++c) {
            float a, m, bias;
            bn_channel(j, c, &a, &m, &bias);
            y[c] = (x[c] - m) * a + bias;
        }
        if (j->p->act != NULL) {
            j->p->k->activation(j->p->act, y, y, C);
        }
    }
}

static void bn_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const bn_priv* p = (const bn_priv*)op->priv;
    bn_job j = {p, in[0], p->ready ? p->coef : NULL, in, out[0]};
    if (p->nhwc) {
        accel_parallel_for_grain(op->env.threads, p->outer * p->inner, MIN_PARALLEL / (p->channels + 1) + 1,
                                 bn_rows_nhwc, &j);
    } else {
        accel_parallel_for_grain(op->env.threads, p->outer * p->channels, MIN_PARALLEL / (p->inner + 1) + 1,
                                 bn_rows, &j);
    }
}

pn_status accel_batch_norm_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                  pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_batch_normalization_desc* d = (const pn_batch_normalization_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const int nhwc = x->rank == 4 && d->layout == PN_LAYOUT_NHWC;
    const uint32_t axis = nhwc ? 3u : 1u;
    const int64_t channels = x->dims[axis];
    const size_t head = (sizeof(bn_priv) + 63) / 64 * 64;
    bn_priv* p = (bn_priv*)calloc(1, head + 3 * (size_t)channels * sizeof(float));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a BatchNormalization workload");
    }
    p->tk = accel_kernel_set_for(env->isa)->rows;
    p->eps = d->epsilon;
    p->nhwc = nhwc;
    p->outer = accel_span(x, 0, axis);
    p->channels = channels;
    p->inner = accel_span(x, axis + 1, x->rank);
    p->coef = (float*)((char*)p + head);
    const void* const* k = layer->constant_data;
    p->ready = k != NULL && k[1] != NULL && k[2] != NULL && k[3] != NULL && k[4] != NULL;
    if (p->ready) {
        bn_coefficients(channels, p->eps, (const float*)k[1], (const float*)k[2], (const float*)k[3],
                        (const float*)k[4], p->coef);
    }
    return accel_workload_new(env, layer, 0, NULL, bn_kernel, p, workload_out, message_out);
}

/* ---- With its activation: the PRECOMPILED layer of opt/patterns.c (ops/batch_norm.h) ---------- */

accel_bn_act* accel_bn_act_new(const pn_layer* bn, const pn_activation_desc* act) {
    const pn_batch_normalization_desc* d = (const pn_batch_normalization_desc*)bn->descriptor;
    const pn_tensor_info* x = &bn->inputs[0];
    const int64_t channels = x->dims[x->rank == 4 && d->layout == PN_LAYOUT_NHWC ? 3 : 1];
    accel_bn_act* p = (accel_bn_act*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->coef = (float*)malloc((size_t)(3 * channels) * sizeof(float) + 1);
    if (p->coef == NULL) {
        free(p);
        return NULL;
    }
    const void* const* k = bn->constant_data;
    bn_coefficients(channels, d->epsilon, (const float*)k[1], (const float*)k[2], (const float*)k[3],
                    (const float*)k[4], p->coef);
    p->magic = ACCEL_BN_ACT_MAGIC;
    p->input = *x;
    p->output = bn->outputs[0];
    p->input.struct_size = p->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    p->input.extension = p->output.extension = NULL;
    p->layout = d->layout;
    p->act = *act;
    p->act.struct_size = (uint32_t)sizeof(pn_activation_desc);
    p->channels = channels;
    snprintf(p->label, sizeof(p->label), "batch normalization + activation kind %d: %lld channels",
             (int)act->kind, (long long)channels);
    return p;
}

void accel_bn_act_release(void* payload) {
    accel_bn_act* p = (accel_bn_act*)payload;
    if (p != NULL) {
        free(p->coef);
        free(p);
    }
}

pn_status accel_bn_act_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const accel_bn_act* b = (const accel_bn_act*)((const pn_precompiled_desc*)layer->descriptor)->payload;
    const pn_tensor_info* x = &layer->inputs[0];
    if (layer->num_inputs != 1 || layer->num_outputs != 1 || x->dtype != b->input.dtype ||
        !pn_same_dims(x, &b->input) || layer->outputs[0].dtype != b->output.dtype ||
        !pn_same_dims(&layer->outputs[0], &b->output)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled batch normalization '%s' does not have its payload's input and output",
                       layer->name != NULL ? layer->name : "");
    }
    const int nhwc = x->rank == 4 && b->layout == PN_LAYOUT_NHWC;
    const uint32_t axis = nhwc ? 3u : 1u;
    const size_t head = (sizeof(bn_priv) + 63) / 64 * 64;
    bn_priv* p = (bn_priv*)calloc(1, head + 3 * (size_t)b->channels * sizeof(float));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a BatchNormalization workload");
    }
    p->tk = accel_kernel_set_for(env->isa)->rows;
    p->nhwc = nhwc;
    p->outer = accel_span(x, 0, axis);
    p->channels = b->channels;
    p->inner = accel_span(x, axis + 1, x->rank);
    p->coef = (float*)((char*)p + head);
    memcpy(p->coef, b->coef, 3 * (size_t)b->channels * sizeof(float));
    p->ready = 1;
    p->k = accel_kernel_set_for(env->isa)->vector;
    p->act_copy = b->act;
    p->act = &p->act_copy; /* inside the allocation: the workload keeps it where it is */
    return accel_workload_new(env, layer, 0, NULL, bn_kernel, p, workload_out, message_out);
}
