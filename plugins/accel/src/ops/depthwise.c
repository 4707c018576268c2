/* CpuAcc depthwise CONVOLUTION_2D: state, threading, and the NHWC multiplier > 1 loop (see
 * ops/depthwise.h; the vector kernels are dw_nchw / dw_nhwc in kernels/depthwise_rows.h). */
#include "ops/depthwise.h"

#include <stdlib.h>
#include <string.h>

/* Output elements times taps below which one work item is not worth waking a thread. */
#define DW_GRAIN_WORK 16384

struct accel_dw {
    accel_env env;
    const accel_kernels* k;
    accel_dw_params p;      /* p.act points at act below, or is NULL */
    pn_activation_desc act;
    int nhwc;
    int nhwc_kernel;        /* NHWC with multiplier 1 and kh * kw <= ACCEL_TAPS_MAX */
    int64_t n, c, o, mult;  /* batch, input and output channels, o / c */
    int64_t blocks;         /* NCHW: row blocks per output plane */
    int64_t block_rows;     /* NCHW: output rows per block */
    float* wt;              /* NHWC kernel: constant weights as [kh * kw][o], or NULL */
};

typedef struct dw_job {
    const accel_dw* dw;
    const float* x;
    const float* w;  /* NCHW: [o][kh * kw]; NHWC kernel: [kh * kw][o] */
    const float* bias;
    const float* addend;
    float* y;
} dw_job;

pn_status accel_dw_create(const accel_env* env, const pn_layer* layer, accel_dw** dw_out,
                          pn_string_out* message_out) {
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    accel_dw* dw = (accel_dw*)calloc(1, sizeof(*dw));
    if (dw == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuAcc: out of memory creating a depthwise Convolution2d");
    }
    int64_t xd[4], yd[4];
    pn_layout_nchw(&layer->inputs[0], d->layout, xd);
    pn_layout_nchw(&layer->outputs[0], d->layout, yd);
    const pn_tensor_info* wi = &layer->inputs[1];
    dw->env = *env;
    dw->k = accel_kernel_set_for(env->isa)->vector;
    dw->nhwc = d->layout == PN_LAYOUT_NHWC;
    dw->n = xd[0];
    dw->c = xd[1];
    dw->o = yd[1];
    dw->mult = dw->c > 0 ? dw->o / dw->c : 1;
    accel_dw_params* p = &dw->p;
    p->ih = xd[2];
    p->iw = xd[3];
    p->oh = yd[2];
    p->ow = yd[3];
    p->c = dw->o;
    p->kh = wi->dims[2];
    p->kw = wi->dims[3];
    p->sh = d->stride_h;
    p->sw = d->stride_w;
    p->dh = d->dilation_h;
    p->dw = d->dilation_w;
    p->pt = d->pad_top;
    p->pl = d->pad_left;
    if (accel_copy_activation(d->fused_activation, &dw->act)) {
        p->act = &dw->act;
    }
    const int64_t taps = p->kh * p->kw;
    dw->nhwc_kernel = dw->nhwc && dw->mult == 1 && taps <= ACCEL_TAPS_MAX;
    /* NCHW: enough items for every thread (4 per thread), whole planes when there are. */
    int64_t planes = dw->n * dw->o, want = 4 * (int64_t)accel_threads_count(env->threads);
    dw->blocks = planes >= want || planes == 0 ? 1 : (want + planes - 1) / planes;
    dw->blocks = dw->blocks > p->oh ? (p->oh > 0 ? p->oh : 1) : dw->blocks;
    dw->block_rows = p->oh > 0 ? (p->oh + dw->blocks - 1) / dw->blocks : 1;
    const float* wc = layer->constant_data != NULL ? (const float*)layer->constant_data[1] : NULL;
    if (dw->nhwc_kernel && wc != NULL) {
        dw->wt = (float*)malloc((size_t)(dw->o * taps > 0 ? dw->o * taps : 1) * sizeof(float));
        if (dw->wt == NULL) {
            accel_dw_destroy(dw);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                           "CpuAcc: out of memory packing depthwise Convolution2d weights");
        }
        for (int64_t t = 0; t < taps; ++t) {
            for (int64_t o = 0; o < dw->o; ++o) {
                dw->wt[t * dw->o + o] = wc[o * taps + t];
            }
        }
    }
    *dw_out = dw;
    return PN_OK;
}

void accel_dw_destroy(accel_dw* dw) {
    if (dw != NULL) {
        free(dw->wt);
        free(dw);
    }
}

size_t accel_dw_workspace_bytes(const accel_dw* dw) {
    if (!dw->nhwc_kernel || dw->wt != NULL) {
        return 0;
    }
    return (size_t)(dw->o * dw->p.kh * dw->p.kw) * sizeof(float) + 64;
}

/* NCHW items: (image, output channel, row block), in that order; a range's consecutive
 * blocks of one plane go to the kernel as one call. */
static void dw_nchw_range(void* raw, int64_t begin, int64_t end) {
    const dw_job* j = (const dw_job*)raw;
    const accel_dw* dw = j->dw;
    const accel_dw_params* p = &dw->p;
    const int64_t taps = p->kh * p->kw, in_plane = p->ih * p->iw, out_plane = p->oh * p->ow;
    for (int64_t u = begin; u < end;) {
        int64_t plane = u / dw->blocks, b0 = u % dw->blocks;
        int64_t b1 = b0 + (end - u) < dw->blocks ? b0 + (end - u) : dw->blocks;
        int64_t n = plane / dw->o, o = plane % dw->o;
        int64_t oy0 = b0 * dw->block_rows, oy1 = b1 * dw->block_rows;
        oy1 = oy1 > p->oh ? p->oh : oy1;
        if (oy0 < oy1) {
            dw->k->dw_nchw(p, j->x + (n * dw->c + o / dw->mult) * in_plane, j->w + o * taps,
                           j->bias != NULL ? j->bias[o] : 0.0f,
                           j->addend != NULL ? j->addend + plane * out_plane : NULL,
                           j->y + plane * out_plane, oy0, oy1);
        }
        u += b1 - b0;
    }
}

/* NHWC items with the kernel: output rows (image, oy); consecutive rows of one image go to
 * the kernel as one call. */
static void dw_nhwc_range(void* raw, int64_t begin, int64_t end) {
    const dw_job* j = (const dw_job*)raw;
    const accel_dw* dw = j->dw;
    const accel_dw_params* p = &dw->p;
    const int64_t x_image = p->ih * p->iw * dw->c, y_image = p->oh * p->ow * dw->o;
    for (int64_t u = begin; u < end;) {
        int64_t n = u / p->oh, oy0 = u % p->oh;
        int64_t oy1 = oy0 + (end - u) < p->oh ? oy0 + (end - u) : p->oh;
        dw->k->dw_nhwc(p, j->x + n * x_image, j->w, j->bias,
                       j->addend != NULL ? j->addend + n * y_image : NULL, j->y + n * y_image,
                       oy0, oy1);
        u += oy1 - oy0;
    }
}

/* NHWC items without the kernel (multiplier > 1 or more than ACCEL_TAPS_MAX taps): output rows
 * (image, oy), every output pixel's channels accumulated tap by tap. */
static void dw_nhwc_direct_range(void* raw, int64_t begin, int64_t end) {
    const dw_job* j = (const dw_job*)raw;
    const accel_dw* dw = j->dw;
    const accel_dw_params* p = &dw->p;
    const int64_t mult = dw->mult, khw = p->kh * p->kw, o_count = dw->o;
    for (int64_t item = begin; item < end; ++item) {
        int64_t n = item / p->oh, oy = item % p->oh;
        for (int64_t ox = 0; ox < p->ow; ++ox) {
            int64_t at = ((n * p->oh + oy) * p->ow + ox) * o_count;
            float* yo = j->y + at;
            for (int64_t o = 0; o < o_count; ++o) {
                yo[o] = j->bias != NULL ? j->bias[o] : 0.0f;
            }
            for (int64_t ky = 0; ky < p->kh; ++ky) {
                int64_t iy = oy * p->sh - p->pt + ky * p->dh;
                if (iy < 0 || iy >= p->ih) {
                    continue;
                }
                for (int64_t kx = 0; kx < p->kw; ++kx) {
                    int64_t ix = ox * p->sw - p->pl + kx * p->dw;
                    if (ix < 0 || ix >= p->iw) {
                        continue;
                    }
                    const float* xp = j->x + ((n * p->ih + iy) * p->iw + ix) * dw->c;
                    const float* wk = j->w + ky * p->kw + kx;
                    for (int64_t o = 0; o < o_count; ++o) {
                        yo[o] += xp[o / mult] * wk[o * khw];
                    }
                }
            }
            if (j->addend != NULL) {
                const float* ap = j->addend + at;
                for (int64_t o = 0; o < o_count; ++o) {
                    yo[o] += ap[o];
                }
            }
            accel_apply_activation(dw->env.isa, p->act, yo, o_count);
        }
    }
}

void accel_dw_run(const accel_dw* dw, const float* x, const float* w, const float* bias,
                  const float* addend, float* y, void* workspace) {
    const accel_dw_params* p = &dw->p;
    const int64_t taps = p->kh * p->kw;
    dw_job j = {dw, x, w, bias, addend, y};
    if (!dw->nhwc) {
        int64_t items = dw->n * dw->o * dw->blocks;
        int64_t work = dw->block_rows * p->ow * (taps + 1);
        accel_parallel_for_grain(dw->env.threads, items, DW_GRAIN_WORK / (work > 0 ? work : 1),
                                 dw_nchw_range, &j);
        return;
    }
    int64_t items = dw->n * p->oh;
    int64_t work = p->ow * dw->o * (taps + 1);
    int64_t grain = DW_GRAIN_WORK / (work > 0 ? work : 1);
    if (!dw->nhwc_kernel) {
        accel_parallel_for_grain(dw->env.threads, items, grain, dw_nhwc_direct_range, &j);
        return;
    }
    if (dw->wt != NULL) {
        j.w = dw->wt;
    } else {
        float* wt = (float*)workspace;
        for (int64_t t = 0; t < taps; ++t) {
            for (int64_t o = 0; o < dw->o; ++o) {
                wt[t * dw->o + o] = w[o * taps + t];
            }
        }
        j.w = wt;
    }
    accel_parallel_for_grain(dw->env.threads, items, grain, dw_nhwc_range, &j);
}
