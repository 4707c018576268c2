/* NORMALIZATION on float32: LAYER and RMS over the trailing dims [axis, rank) (scale and bias
 * broadcast to them, expanded once: at create time when constant, else per run), GROUP over
 * NCHW-like x [N, C, ...] (instance normalization included). Rows or groups split over the
 * pool; each row reduced in float vector lanes, blocks and the moments in double (kernels/row_kernels_body.h).
 * LP is refused (the next backend runs it). */
#include "ops/create.h"
#include "kernels/row_kernels.h"

#include <stdlib.h>
#include <string.h>

#define MIN_PARALLEL 16384 /* elements per thread below which a wake-up does not pay */

typedef struct norm_priv {
    const accel_row_kernels* tk;
    pn_normalization_op op;
    float eps;
    int has_bias;
    int64_t rows, n;         /* LAYER, RMS: rows of n elements; GROUP: n images */
    int64_t groups, cpg, hw; /* GROUP: groups, channels per group, elements per channel */
    /* LAYER, RMS: scale and bias expanded to n floats; for a run-time operand whose element
     * count is not n, expanded at each run into the same buffer. Both live in the allocation
     * of the norm_priv itself (after it), so the workload's free() releases them. */
    float* scale;
    float* bias;
    float* spare;                 /* the next unused n floats of that allocation */
    int scale_ready, bias_ready;  /* expanded at create time (constant, or already full) */
    int64_t sstr[PN_MAX_DIMS], bstr[PN_MAX_DIMS]; /* broadcast strides over x.shape[axis:] */
    pn_tensor_info inner;         /* x.shape[axis:] */
} norm_priv;

pn_status accel_normalization_check(const pn_plugin* plugin, const pn_layer* layer,
                                    pn_string_out* reason) {
    const pn_normalization_desc* d = (const pn_normalization_desc*)layer->descriptor;
    if (d->op == PN_NORMALIZATION_LP) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s runs Normalization LAYER, RMS and GROUP; it has no LP kernel", plugin->id);
    }
    return pn_plugin_float32_only(plugin, layer, reason);
}

/* dst[k] = src at the broadcast position of element k of p->inner (strides str). */
static void expand(const norm_priv* p, const float* src, const int64_t* str, float* dst) {
    const pn_tensor_info* t = &p->inner;
    int64_t at[PN_MAX_DIMS] = {0};
    for (int64_t k = 0; k < p->n; ++k) {
        int64_t off = 0;
        for (uint32_t i = 0; i < t->rank; ++i) {
            off += at[i] * str[i];
        }
        dst[k] = src[off];
        for (int32_t i = (int32_t)t->rank - 1; i >= 0; --i) {
            if (++at[i] < t->dims[i]) {
                break;
            }
            at[i] = 0;
        }
    }
}

typedef struct norm_job {
    const norm_priv* p;
    const float* x;
    float* y;
    const float* scale;
    const float* bias;
} norm_job;

static void rows_range(void* raw, int64_t b, int64_t e) {
    const norm_job* j = (const norm_job*)raw;
    const norm_priv* p = j->p;
    p->tk->norm_rows(p->op == PN_NORMALIZATION_RMS, j->x + b * p->n, j->y + b * p->n, e - b, p->n,
                     j->scale, j->bias, p->eps);
}

/* Groups [b, e) of all images: moments over the group, then each channel's affine map. */
static void groups_range(void* raw, int64_t b, int64_t e) {
    const norm_job* j = (const norm_job*)raw;
    const norm_priv* p = j->p;
    const int64_t group_size = p->cpg * p->hw;
    for (int64_t u = b; u < e; ++u) {
        const int64_t g = u % p->groups;
        const float* x = j->x + u * group_size;
        float* y = j->y + u * group_size;
        float mean, rstd;
        p->tk->moments(x, group_size, p->eps, &mean, &rstd);
        for (int64_t c = 0; c < p->cpg; ++c) {
            const int64_t ch = g * p->cpg + c;
            const float a = rstd * j->scale[ch];
            p->tk->affine_row(x + c * p->hw, y + c * p->hw, p->hw, mean, a,
                              j->bias != NULL ? j->bias[ch] : 0.0f);
        }
    }
}

static void norm_kernel(const accel_op* op, const float* const* in, float* const* out) {
    norm_priv* p = (norm_priv*)op->priv;
    norm_job j = {p, in[0], out[0], in[1], p->has_bias ? in[2] : NULL};
    if (p->op == PN_NORMALIZATION_GROUP) {
        const int64_t units = p->rows * p->groups;
        const int64_t per = p->cpg * p->hw;
        accel_parallel_for_grain(op->env.threads, units, MIN_PARALLEL / (per > 0 ? per : 1) + 1,
                                 groups_range, &j);
        return;
    }
    /* LAYER, RMS: the expanded scale and bias (a run-time operand expanded here, by one thread) */
    if (p->scale_ready) {
        j.scale = p->scale != NULL ? p->scale : in[1];
    } else {
        expand(p, in[1], p->sstr, p->scale);
        j.scale = p->scale;
    }
    if (p->has_bias) {
        if (p->bias_ready) {
            j.bias = p->bias != NULL ? p->bias : in[2];
        } else {
            expand(p, in[2], p->bstr, p->bias);
            j.bias = p->bias;
        }
    }
    accel_parallel_for_grain(op->env.threads, p->rows, MIN_PARALLEL / (p->n > 0 ? p->n : 1) + 1,
                             rows_range, &j);
}

/* Sets up LAYER/RMS operand `i` (1 scale, 2 bias): a constant expanded now into *buf, a
 * run-time operand of n elements read in place (*buf stays NULL), any other run-time operand
 * given a buffer (p->spare) to expand into at each run. */
static void setup_operand(norm_priv* p, const pn_layer* layer, uint32_t i, float** buf, int* ready,
                          int64_t* str) {
    const pn_tensor_info* info = &layer->inputs[i];
    const void* constant = layer->constant_data != NULL ? layer->constant_data[i] : NULL;
    if (pn_broadcast_strides(info, &p->inner, str) != 0) {
        return; /* unreachable: the shared validator checked the broadcast */
    }
    if (constant == NULL && pn_num_elements(info) == p->n) {
        *ready = 1; /* the same n elements in the same order: read in place */
        return;
    }
    *buf = p->spare;
    p->spare += p->n;
    if (constant != NULL) {
        expand(p, (const float*)constant, str, *buf);
        *ready = 1;
    }
}

pn_status accel_normalization_create(void* context, const pn_layer* layer,
                                     pn_workload** workload_out, pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_normalization_desc* d = (const pn_normalization_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    int64_t n = 0;
    if (d->op != PN_NORMALIZATION_GROUP) {
        n = accel_span(x, (uint32_t)pn_normalize_axis(d->axis, x->rank), x->rank);
    }
    /* the struct, then room for the expanded scale and bias (2 n floats) */
    const size_t head = (sizeof(norm_priv) + 63) / 64 * 64;
    norm_priv* p = (norm_priv*)calloc(1, head + 2 * (size_t)n * sizeof(float));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    p->tk = accel_kernel_set_for(env->isa)->rows;
    p->op = d->op;
    p->eps = d->epsilon;
    p->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
    p->spare = (float*)((char*)p + head);
    if (d->op == PN_NORMALIZATION_GROUP) {
        p->rows = x->dims[0];
        p->groups = d->num_groups;
        p->cpg = x->dims[1] / d->num_groups;
        p->hw = accel_span(x, 2, x->rank);
    } else {
        uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
        p->rows = accel_span(x, 0, axis);
        p->n = accel_span(x, axis, x->rank);
        p->inner.struct_size = (uint32_t)sizeof(pn_tensor_info);
        p->inner.dtype = x->dtype;
        p->inner.rank = x->rank - axis;
        for (uint32_t i = axis; i < x->rank; ++i) {
            p->inner.dims[i - axis] = x->dims[i];
        }
        setup_operand(p, layer, 1, &p->scale, &p->scale_ready, p->sstr);
        if (p->has_bias) {
            setup_operand(p, layer, 2, &p->bias, &p->bias_ready, p->bstr);
        }
    }
    return accel_workload_new(env, layer, 0, NULL, norm_kernel, p, workload_out, message_out);
}
