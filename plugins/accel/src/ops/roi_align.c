/* ROI_ALIGN (ONNX RoiAlign) in AVERAGE mode on float32 (backend_api.h, pn_roi_align_desc):
 * bilinear interpolation is separable, so per region and bin each axis's samples are summed
 * once into weights over a run of plane indices (plugin_common's pn_roi_align_plan.h, in double,
 * the 1 / grid of the average folded in), and each channel's bin is then
 * sum_rows wy[r] * sum_cols wx[c] * x[r, c] in float32, reading only the elements a sample
 * weighs (so an inf or NaN no sample reaches stays out, as in CpuRef). The work is split over
 * the pool by (region, block of channels). MAX mode is refused (its maximum over the samples is
 * not separable; CpuRef runs it). */
#include "ops/create.h"

#include "plugnn/pn_roi_align_plan.h"

#include <stdlib.h>
#include <string.h>

#define ROI_CHANNELS 32 /* channels per work unit */

typedef struct roi_state {
    accel_env env;
    pn_roi_align_desc desc;
    pn_tensor_info infos[4]; /* x, rois, batch_indices, output */
} roi_state;

typedef struct roi_job {
    const roi_state* s;
    const float* x;
    const float* rois;
    const int64_t* images; /* [R], checked */
    float* y;
    int64_t blocks;        /* channel blocks per region */
    int failed;            /* out of memory in a unit */
} roi_job;

/* One axis's bins: bin p weighs plane indices first[p] .. first[p] + count[p] - 1 with
 * weights[p * size + k]. */
typedef struct roi_bins {
    int64_t* first;
    int64_t* count;
    float* weights;
} roi_bins;

static void plan_axis(const pn_roi_axis* a, uint32_t bins, int64_t size, double* scratch, roi_bins* out) {
    const double share = a->grid > 0 ? 1.0 / (double)a->grid : 0.0;
    for (uint32_t p = 0; p < bins; ++p) {
        int64_t first = 0;
        const int64_t count = a->grid > 0 ? pn_roi_bin_weights(a, p, size, &first, scratch) : 0;
        out->first[p] = first, out->count[p] = count;
        for (int64_t k = 0; k < count; ++k) {
            out->weights[(int64_t)p * size + k] = (float)(scratch[k] * share);
        }
    }
}

static void roi_units(void* raw, int64_t begin, int64_t end) {
    roi_job* j = (roi_job*)raw;
    const roi_state* s = j->s;
    const pn_roi_align_desc* d = &s->desc;
    const int64_t channels = s->infos[0].dims[1], h = s->infos[0].dims[2], w = s->infos[0].dims[3];
    const uint32_t oh = d->output_height, ow = d->output_width;
    const int64_t longest = h > w ? h : w;
    void* memory = malloc(sizeof(double) * (size_t)(longest > 0 ? longest : 1) +
                          sizeof(int64_t) * 2 * (size_t)(oh + ow) +
                          sizeof(float) * (size_t)((int64_t)oh * h + (int64_t)ow * w + 1));
    if (memory == NULL) {
        j->failed = 1;
        return;
    }
    double* scratch = (double*)memory;
    roi_bins ys, xs;
    ys.first = (int64_t*)(scratch + (longest > 0 ? longest : 1));
    ys.count = ys.first + oh;
    xs.first = ys.count + oh;
    xs.count = xs.first + ow;
    ys.weights = (float*)(xs.count + ow);
    xs.weights = ys.weights + (int64_t)oh * h;
    int64_t planned = -1;
    for (int64_t unit = begin; unit < end; ++unit) {
        const int64_t r = unit / j->blocks, c0 = (unit % j->blocks) * ROI_CHANNELS;
        const int64_t c1 = c0 + ROI_CHANNELS < channels ? c0 + ROI_CHANNELS : channels;
        if (r != planned) {
            const float* box = j->rois + r * 4;
            const pn_roi_axis ay = pn_roi_axis_of(d, box[1], box[3], oh);
            const pn_roi_axis ax = pn_roi_axis_of(d, box[0], box[2], ow);
            plan_axis(&ay, oh, h, scratch, &ys);
            plan_axis(&ax, ow, w, scratch, &xs);
            planned = r;
        }
        for (int64_t c = c0; c < c1; ++c) {
            const float* plane = j->x + (j->images[r] * channels + c) * h * w;
            float* out = j->y + (r * channels + c) * (int64_t)oh * ow;
            for (uint32_t ph = 0; ph < oh; ++ph) {
                const float* wy = ys.weights + (int64_t)ph * h;
                for (uint32_t pw = 0; pw < ow; ++pw) {
                    const float* wx = xs.weights + (int64_t)pw * w;
                    const int64_t nx = xs.count[pw];
                    float sum = 0.0f;
                    for (int64_t k = 0; k < ys.count[ph]; ++k) {
                        if (wy[k] == 0.0f) {
                            continue;
                        }
                        const float* row = plane + (ys.first[ph] + k) * w + xs.first[pw];
                        float inner = 0.0f;
                        for (int64_t i = 0; i < nx; ++i) {
                            inner += wx[i] != 0.0f ? wx[i] * row[i] : 0.0f;
                        }
                        sum += wy[k] * inner;
                    }
                    out[(int64_t)ph * ow + pw] = sum;
                }
            }
        }
    }
    free(memory);
}

static pn_status roi_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const roi_state* s = (const roi_state*)raw;
    pn_status st = pn_check_execute_args(args, 3, s->infos, 1, &s->infos[3], "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    const int64_t n = s->infos[0].dims[0], channels = s->infos[0].dims[1];
    const int64_t regions = s->infos[1].dims[0];
    if (regions == 0 || channels == 0) {
        return PN_OK;
    }
    int64_t* images = (int64_t*)malloc(sizeof(int64_t) * (size_t)regions);
    if (images == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc RoiAlign: out of memory");
    }
    const int wide = s->infos[2].dtype == PN_DTYPE_INT64;
    for (int64_t r = 0; r < regions; ++r) {
        images[r] = wide ? ((const int64_t*)args->inputs[2].data)[r] : ((const int32_t*)args->inputs[2].data)[r];
        if (images[r] < 0 || images[r] >= n) {
            const long long bad = (long long)images[r];
            free(images);
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "RoiAlign: batch_indices[%lld] = %lld is not an image "
                           "of x (0 to %lld)", (long long)r, bad, (long long)(n - 1));
        }
    }
    roi_job job = {s, (const float*)args->inputs[0].data, (const float*)args->inputs[1].data, images,
                   (float*)args->outputs[0].data, (channels + ROI_CHANNELS - 1) / ROI_CHANNELS, 0};
    accel_parallel_for_grain(s->env.threads, regions * job.blocks, 1, roi_units, &job);
    free(images);
    if (job.failed) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc RoiAlign: out of memory for the bins' weights");
    }
    return PN_OK;
}

pn_status accel_roi_align_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_roi_align_desc* d = (const pn_roi_align_desc*)layer->descriptor;
    if (layer->inputs[0].dtype != PN_DTYPE_FLOAT32) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs RoiAlign on float32 only; input 0 is %s", plugin->id,
                       pn_dtype_name(layer->inputs[0].dtype));
    }
    if (d->mode != PN_POOLING_AVERAGE) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs RoiAlign in AVERAGE mode only (its bins are separable); "
                       "this one is MAX", plugin->id);
    }
    return PN_OK;
}

static void roi_release(void* raw) { free(raw); }

pn_status accel_roi_align_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out) {
    roi_state* s = (roi_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a RoiAlign workload");
    }
    s->env = *(const accel_env*)context;
    s->desc = *(const pn_roi_align_desc*)layer->descriptor;
    accel_copy_layer_infos(s->infos, layer); /* x, rois, batch_indices, output */
    *workload_out = pn_workload_new(s, roi_execute, roi_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a RoiAlign workload");
    }
    return PN_OK;
}
