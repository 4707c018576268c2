/* POOLING_2D: MAX, AVERAGE (EXCLUDE/INCLUDE) and LP, NCHW or NHWC; output rows split over
 * the pool. NCHW walks each plane's windows; NHWC vectorizes over channels. */
#include "accel.h"

#include <stdlib.h>

typedef struct pool_job {
    const accel_op* op;
    const accel_pool_params* pp;
    const float* x;
    float* y;
    int64_t x_image; /* elements per image (NHWC) or per plane (NCHW) */
    int64_t y_image;
} pool_job;

static void pool_range(void* raw, int64_t u0, int64_t u1) {
    const pool_job* j = (const pool_job*)raw;
    const int64_t oh = j->pp->oh;
    const int nhwc = j->op->desc.pool.layout == PN_LAYOUT_NHWC;
    for (int64_t u = u0; u < u1;) {
        int64_t image = u / oh, oy = u % oh;
        int64_t oy_end = oy + (u1 - u);
        oy_end = oy_end > oh ? oh : oy_end;
        const float* x = j->x + image * j->x_image;
        float* y = j->y + image * j->y_image;
        if (nhwc) {
            j->op->k->pool_nhwc(j->pp, x, y, oy, oy_end);
        } else {
            j->op->k->pool_nchw(j->pp, x, y, oy, oy_end);
        }
        u += oy_end - oy;
    }
}

static void pooling2d_kernel(const accel_op* op, const float* const* in, float* const* out) {
    const accel_pool_params* pp = (const accel_pool_params*)op->priv;
    int64_t xn[4], yn[4];
    pn_layout_nchw(&op->inputs[0], op->desc.pool.layout, xn);
    pn_layout_nchw(&op->outputs[0], op->desc.pool.layout, yn);
    pool_job j = {op, pp, in[0], out[0], 0, 0};
    int64_t images;
    if (op->desc.pool.layout == PN_LAYOUT_NHWC) {
        images = xn[0];
        j.x_image = xn[1] * xn[2] * xn[3];
        j.y_image = yn[1] * yn[2] * yn[3];
    } else {
        images = xn[0] * xn[1]; /* planes */
        j.x_image = xn[2] * xn[3];
        j.y_image = yn[2] * yn[3];
    }
    int64_t work_per_row = (j.y_image / (pp->oh > 0 ? pp->oh : 1)) * pp->kh * pp->kw + 1;
    accel_parallel_for_grain(op->env.pool, images * pp->oh, 65536 / work_per_row, pool_range, &j);
}

pn_status accel_pooling2d_create(const accel_env* env, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    const pn_pooling_2d_desc* d = (const pn_pooling_2d_desc*)layer->descriptor;
    accel_pool_params* pp = (accel_pool_params*)calloc(1, sizeof(*pp));
    if (pp == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    int64_t xn[4], yn[4];
    pn_layout_nchw(&layer->inputs[0], d->layout, xn);
    pn_layout_nchw(&layer->outputs[0], d->layout, yn);
    pp->kind = (int)d->kind;
    pp->include_padding = d->kind == PN_POOLING_AVERAGE && d->padding_method == PN_PADDING_INCLUDE;
    pp->p = d->kind == PN_POOLING_LP ? d->p : 1.0f;
    pp->c = xn[1];
    pp->ih = xn[2];
    pp->iw = xn[3];
    pp->oh = yn[2];
    pp->ow = yn[3];
    pp->kh = d->kernel_h;
    pp->kw = d->kernel_w;
    pp->sh = d->stride_h;
    pp->sw = d->stride_w;
    pp->dh = d->dilation_h;
    pp->dw = d->dilation_w;
    pp->pt = d->pad_top;
    pp->pl = d->pad_left;
    pp->pb = d->pad_bottom;
    pp->pr = d->pad_right;
    return accel_workload_new(env, layer, sizeof(*d), NULL, pooling2d_kernel, pp, workload_out,
                              message_out);
}
