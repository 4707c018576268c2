/* CpuAcc RESIZE (pn_resize_desc, ONNX Resize) on float32. Every axis is planned when the
 * workload is made, with plugin_common's pn_resize_plan.h (the coordinates, taps and weights
 * CpuRef plans with); execute() only applies the plan, over the thread pool.
 *
 * NEAREST (every nearest_mode, every coordinate transform, exclude_outside, extrapolation; any
 * rank, any axes): a gather. Output rows (every axis but the last) are split over the threads;
 * each row's source row is the sum of its axes' chosen input indices, and its elements are
 * gathered through the last axis' table. A row whose source row is the one of the row before
 * (upsampling along an outer axis) is a copy of that output row.
 *
 * LINEAR and CUBIC (antialias, exclude_outside, extrapolation included) when no axis but the
 * last two is resized (the upsampling of FPN, DeepLab, U-Net: [N, C, H, W] along H and W, and
 * 1-D resizes of the last axis): separable. Jobs are blocks of output rows of one plane; each
 * first interpolates the input rows its block reads along W (the horizontal pass, into the
 * scratch rows of its part of the jobs), then combines those rows along H for every output row (the vertical
 * pass, vectorized along W). Weights are rounded to float32 once and summed in float32, tap
 * by tap in order, so the result does not depend on the thread count. A layer that resizes
 * another axis with LINEAR or CUBIC is refused (accel_resize_check) and runs on the next
 * backend. */
#include "ops/create.h"
#include "plugnn/pn_resize_plan.h"
#include "kernels/resize_rows.h"

#include <stdlib.h>
#include <string.h>

/* Taps per output index the separable kernels take at most (antialias with a scale of about
 * 1/1000 and below needs more; such a layer is refused). */
#define RESIZE_MAX_TAPS 2048
/* Tap rows the vertical pass combines in one call (antialias may have more: then in groups). */
#define RESIZE_COMBINE_TAPS 64
/* Output floats a job of the separable kernels covers at least, when the plane has them. */
#define RESIZE_JOB_FLOATS 4096

pn_status accel_resize_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    pn_status s = pn_plugin_float32_only(plugin, layer, reason);
    if (s != PN_OK) {
        return s;
    }
    const pn_resize_desc* d = (const pn_resize_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    if (d->mode == PN_RESIZE_NEAREST) {
        return PN_OK;
    }
    for (uint32_t a = 0; a + 2 < x->rank; ++a) {
        if (!pn_resize_axis_skipped(d, a, x->dims[a], y->dims[a])) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED,
                           "%s resizes %s only along the last two axes; axis %u (of rank %u) is resized",
                           plugin->id, d->mode == PN_RESIZE_LINEAR ? "LINEAR" : "CUBIC", a, x->rank);
        }
    }
    for (uint32_t a = x->rank >= 2 ? x->rank - 2 : 0; a < x->rank; ++a) {
        int64_t taps = pn_resize_taps(d, a);
        if (taps < 0 || taps > RESIZE_MAX_TAPS) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED,
                           "%s resizes with at most %d taps per output; axis %u (antialias, scale %g) needs more",
                           plugin->id, RESIZE_MAX_TAPS, a, d->scales[a]);
        }
    }
    return PN_OK;
}

/* ---- the plan ------------------------------------------------------------------------------- */

/* One axis of the separable kernels: output index o reads input indices idx[t * out + o]
 * (clamped; tap-major, for the vectorized gather) with weights w[t * out + o]; special[o] is a
 * pn_resize_special. */
typedef struct sep_axis {
    int64_t in, out, taps;
    int identity;           /* left as it is: taps 1, idx = o, w = 1 */
    int any_special;        /* some output index is special (else special[] need not be read) */
    int32_t* idx;
    float* w;
    unsigned char* special;
} sep_axis;

typedef struct resize_plan {
    accel_env env;
    pn_tensor_info x_info, y_info;        /* the layer's (execute() checks its tensors against them) */
    int nearest;
    uint32_t rank;
    int64_t in[PN_MAX_DIMS], out[PN_MAX_DIMS];
    float extrapolation;
    /* NEAREST */
    int64_t* src[PN_MAX_DIMS];            /* per axis: the (clamped) input index of each output index */
    unsigned char* special[PN_MAX_DIMS];  /* per axis: NULL when none of its outputs is special */
    int64_t rows, row;                    /* output rows (every axis but the last) and their length */
    int64_t repeat;                       /* > 0: the last axis repeats each input element this many
                                             times (src[j] = j / repeat, no special): a copy (1) or
                                             an unrolled repeat instead of a gather */
    /* LINEAR / CUBIC */
    int64_t planes;
    sep_axis h, w;
    int64_t rows_per_job, jobs, max_span; /* max_span: input rows a job reads at most */
    int64_t parts;                        /* jobs are run in this many parts, one scratch each */
    const accel_resize_rows* rows_k;      /* the row kernels of env.isa */
    float* scratch;                       /* parts * max_span * out[W] floats: the rows of the
                                             horizontal pass (execute() is never concurrent
                                             with itself, so the workload owns it) */
} resize_plan;

static size_t round8(size_t bytes) { return (bytes + 7) / 8 * 8; }

/* Bytes of the plan and its tables, laid out after it in one allocation (freed with free()),
 * without the separable kernels' scratch. */
static size_t plan_bytes(const pn_resize_desc* d, const pn_tensor_info* x, const pn_tensor_info* y) {
    size_t bytes = round8(sizeof(resize_plan));
    if (d->mode == PN_RESIZE_NEAREST) {
        for (uint32_t a = 0; a < x->rank; ++a) {
            bytes += round8((size_t)y->dims[a] * sizeof(int64_t)) + round8((size_t)y->dims[a]);
        }
        return bytes;
    }
    for (uint32_t a = x->rank >= 2 ? x->rank - 2 : 0; a < x->rank; ++a) {
        size_t taps = (size_t)pn_resize_taps(d, a);
        bytes += round8((size_t)y->dims[a] * taps * sizeof(int32_t)) +
                 round8((size_t)y->dims[a] * taps * sizeof(float)) + round8((size_t)y->dims[a]);
    }
    return bytes + 64;
}

static unsigned char* take(unsigned char** next, size_t bytes) {
    unsigned char* p = *next;
    *next += round8(bytes);
    return p;
}

static void plan_nearest(resize_plan* p, const pn_resize_desc* d, unsigned char* next) {
    double w[2];
    for (uint32_t a = 0; a < p->rank; ++a) {
        int64_t in = p->in[a], out = p->out[a];
        p->src[a] = (int64_t*)(void*)take(&next, (size_t)out * sizeof(int64_t));
        unsigned char* sp = take(&next, (size_t)out);
        int skip = pn_resize_axis_skipped(d, a, in, out), any = 0;
        for (int64_t o = 0; o < out; ++o) {
            int64_t first = o;
            sp[o] = PN_RESIZE_NORMAL;
            if (!skip) {
                pn_resize_plan_index(d, a, in, out, 2, o, &first, w, &sp[o]);
                first += w[1] != 0.0 ? 1 : 0;
            }
            p->src[a][o] = first < 0 ? 0 : (first >= in ? in - 1 : first);
            any |= sp[o] != PN_RESIZE_NORMAL;
        }
        p->special[a] = any ? sp : NULL;
    }
}

static void plan_sep_axis(sep_axis* ax, const pn_resize_desc* d, int32_t axis, int64_t in, int64_t out,
                          unsigned char** next) {
    ax->in = in;
    ax->out = out;
    ax->identity = axis < 0 || pn_resize_axis_skipped(d, (uint32_t)axis, in, out);
    ax->taps = ax->identity ? 1 : pn_resize_taps(d, (uint32_t)axis);
    ax->idx = (int32_t*)(void*)take(next, (size_t)(out * ax->taps) * sizeof(int32_t));
    ax->w = (float*)(void*)take(next, (size_t)(out * ax->taps) * sizeof(float));
    ax->special = take(next, (size_t)out);
    double wd[RESIZE_MAX_TAPS];
    for (int64_t o = 0; o < out; ++o) {
        int64_t first = o;
        ax->special[o] = PN_RESIZE_NORMAL;
        wd[0] = 1.0;
        if (!ax->identity) {
            pn_resize_plan_index(d, (uint32_t)axis, in, out, ax->taps, o, &first, wd, &ax->special[o]);
        }
        ax->any_special |= ax->special[o] != PN_RESIZE_NORMAL;
        for (int64_t t = 0; t < ax->taps; ++t) {
            int64_t i = first + t;
            ax->idx[t * out + o] = (int32_t)(i < 0 ? 0 : (i >= in ? in - 1 : i));
            ax->w[t * out + o] = (float)wd[t];
        }
    }
}

/* The separable plan: H = axis rank - 2 (or none: one row), W = axis rank - 1. */
static void plan_separable(resize_plan* p, const pn_resize_desc* d, unsigned char* next) {
    uint32_t r = p->rank;
    int has_h = r >= 2;
    p->planes = 1;
    for (uint32_t a = 0; a + 2 < r; ++a) {
        p->planes *= p->in[a];
    }
    plan_sep_axis(&p->h, d, has_h ? (int32_t)r - 2 : -1, has_h ? p->in[r - 2] : 1, has_h ? p->out[r - 2] : 1, &next);
    plan_sep_axis(&p->w, d, (int32_t)r - 1, p->in[r - 1], p->out[r - 1], &next);
    int64_t oh = p->h.out, ow = p->w.out;
    int64_t rpj = ow > 0 ? (RESIZE_JOB_FLOATS + ow - 1) / ow : oh;
    p->rows_per_job = rpj < 1 ? 1 : (rpj > oh ? oh : rpj);
    p->jobs = oh > 0 ? p->planes * ((oh + p->rows_per_job - 1) / p->rows_per_job) : 0;
    p->max_span = 0;
    for (int64_t oy0 = 0; oy0 < oh; oy0 += p->rows_per_job) {
        int64_t lo = INT64_MAX, hi = -1;
        for (int64_t oy = oy0; oy < oh && oy < oy0 + p->rows_per_job; ++oy) {
            for (int64_t t = 0; t < p->h.taps; ++t) {
                int64_t i = p->h.idx[t * oh + oy];
                lo = i < lo ? i : lo;
                hi = i > hi ? i : hi;
            }
        }
        p->max_span = hi - lo + 1 > p->max_span ? hi - lo + 1 : p->max_span;
    }
}

/* ---- NEAREST ---------------------------------------------------------------------------------- */

typedef struct resize_run {
    const resize_plan* p;
    const float* x;
    float* y;
} resize_run;

static void nearest_rows(void* vctx, int64_t begin, int64_t end) {
    const resize_run* r = (const resize_run*)vctx;
    const resize_plan* p = r->p;
    const uint32_t last = p->rank - 1;
    int64_t istride[PN_MAX_DIMS], idx[PN_MAX_DIMS];
    int64_t s = 1;
    for (int32_t a = (int32_t)last; a >= 0; --a) {
        istride[a] = s;
        s *= p->in[a];
    }
    int64_t rem = begin;
    for (int32_t a = (int32_t)last - 1; a >= 0; --a) {
        idx[a] = rem % p->out[a];
        rem /= p->out[a];
    }
    const int64_t* src = p->src[last];
    const unsigned char* lsp = p->special[last];
    int64_t prev_off = -1;
    int prev_sp = -1;
    for (int64_t row = begin; row < end; ++row) {
        int64_t off = 0;
        int sp = PN_RESIZE_NORMAL;
        for (uint32_t a = 0; a < last; ++a) {
            off += p->src[a][idx[a]] * istride[a];
            if (p->special[a] != NULL && p->special[a][idx[a]] != PN_RESIZE_NORMAL) {
                sp = p->special[a][idx[a]]; /* the last resized axis decides */
            }
        }
        float* yr = r->y + row * p->row;
        if (row > begin && off == prev_off && sp == prev_sp) {
            memcpy(yr, yr - p->row, (size_t)p->row * sizeof(float));
        } else {
            const float* xr = r->x + off;
            float fill = sp == PN_RESIZE_EXTRAPOLATE ? p->extrapolation : 0.0f;
            if (sp == PN_RESIZE_NORMAL && p->repeat == 1) {
                memcpy(yr, xr, (size_t)p->row * sizeof(float));
            } else if (sp == PN_RESIZE_NORMAL && p->repeat == 2) {
                for (int64_t j = 0; j < p->row / 2; ++j) {
                    yr[2 * j] = xr[j];
                    yr[2 * j + 1] = xr[j];
                }
            } else if (lsp == NULL && sp == PN_RESIZE_NORMAL) {
                for (int64_t j = 0; j < p->row; ++j) yr[j] = xr[src[j]];
            } else if (lsp == NULL) {
                for (int64_t j = 0; j < p->row; ++j) yr[j] = fill;
            } else {
                for (int64_t j = 0; j < p->row; ++j) {
                    int e = lsp[j] != PN_RESIZE_NORMAL ? lsp[j] : sp;
                    yr[j] = e == PN_RESIZE_NORMAL ? xr[src[j]] : e == PN_RESIZE_EXTRAPOLATE ? p->extrapolation : 0.0f;
                }
            }
        }
        prev_off = off;
        prev_sp = sp;
        for (int32_t a = (int32_t)last - 1; a >= 0 && ++idx[a] == p->out[a]; --a) {
            idx[a] = 0;
        }
    }
}

/* ---- LINEAR and CUBIC: separable along the last two axes ----------------------------------- */

/* tmp[ox] = the row xr interpolated along W. */
static void horizontal(const accel_resize_rows* k, const sep_axis* w, const float* xr, float* tmp) {
    if (w->identity) {
        memcpy(tmp, xr, (size_t)w->out * sizeof(float));
    } else {
        k->gather(xr, w->idx, w->w, w->taps, w->out, tmp);
    }
}

/* One job: output rows [oy0, oy1) of one plane, with `tmp` (max_span rows) for the input rows
 * interpolated along W. */
static void separable_job(const resize_run* r, int64_t job, float* tmp) {
    const resize_plan* p = r->p;
    const sep_axis* h = &p->h;
    const sep_axis* w = &p->w;
    const int64_t ow = w->out, blocks = (h->out + p->rows_per_job - 1) / p->rows_per_job;
    int64_t plane = job / blocks, oy0 = (job % blocks) * p->rows_per_job;
    int64_t oy1 = oy0 + p->rows_per_job < h->out ? oy0 + p->rows_per_job : h->out;
    const float* xp = r->x + plane * h->in * w->in;
    float* yp = r->y + plane * h->out * ow;
    int64_t lo = INT64_MAX, hi = -1;
    for (int64_t t = 0; t < h->taps; ++t) {
        for (int64_t oy = oy0; oy < oy1; ++oy) {
            int64_t i = h->idx[t * h->out + oy];
            lo = i < lo ? i : lo;
            hi = i > hi ? i : hi;
        }
    }
    for (int64_t iy = lo; iy <= hi; ++iy) {
        horizontal(p->rows_k, w, xp + iy * w->in, tmp + (iy - lo) * ow);
    }
    for (int64_t oy = oy0; oy < oy1; ++oy) {
        float* yr = yp + oy * ow;
        if (h->special[oy] == PN_RESIZE_EXTRAPOLATE) {
            for (int64_t o = 0; o < ow; ++o) yr[o] = p->extrapolation;
            continue;
        }
        if (h->identity) {
            memcpy(yr, tmp + (h->idx[oy] - lo) * ow, (size_t)ow * sizeof(float));
        } else {
            const float* rows[RESIZE_COMBINE_TAPS];
            float wt[RESIZE_COMBINE_TAPS];
            for (int64_t t0 = 0; t0 < h->taps; t0 += RESIZE_COMBINE_TAPS) { /* taps in groups */
                int64_t n = h->taps - t0 < RESIZE_COMBINE_TAPS ? h->taps - t0 : RESIZE_COMBINE_TAPS;
                for (int64_t t = 0; t < n; ++t) {
                    rows[t] = tmp + (h->idx[(t0 + t) * h->out + oy] - lo) * ow;
                    wt[t] = h->w[(t0 + t) * h->out + oy];
                }
                if (t0 == 0) {
                    p->rows_k->combine(rows, wt, n, yr, ow);
                } else { /* yr += the later groups' taps, in order */
                    for (int64_t t = 0; t < n; ++t) {
                        const float* r = rows[t];
                        const float wv = wt[t];
                        for (int64_t o = 0; o < ow; ++o) yr[o] += wv * r[o];
                    }
                }
            }
        }
        for (int64_t o = 0; w->any_special && o < ow; ++o) {
            if (w->special[o] == PN_RESIZE_EXTRAPOLATE) yr[o] = p->extrapolation;
        }
    }
}

/* Parts [begin, end): part i runs jobs [i * jobs / parts, (i + 1) * jobs / parts) with its own
 * scratch rows. */
static void separable_parts(void* vctx, int64_t begin, int64_t end) {
    const resize_run* r = (const resize_run*)vctx;
    const resize_plan* p = r->p;
    for (int64_t part = begin; part < end; ++part) {
        float* tmp = p->scratch + part * p->max_span * p->w.out;
        for (int64_t job = part * p->jobs / p->parts; job < (part + 1) * p->jobs / p->parts; ++job) {
            separable_job(r, job, tmp);
        }
    }
}

static void resize_release(void* vp) {
    resize_plan* p = (resize_plan*)vp;
    if (p != NULL) {
        free(p->scratch);
        free(p);
    }
}

static pn_status resize_execute(void* vp, const pn_execute_args* args, pn_string_out* message_out) {
    const resize_plan* p = (const resize_plan*)vp;
    pn_status st = pn_check_execute_args(args, 1, &p->x_info, 1, &p->y_info, "CpuAcc", message_out);
    if (st != PN_OK || pn_num_elements(&p->y_info) == 0) {
        return st;
    }
    resize_run r = {p, (const float*)args->inputs[0].data, (float*)args->outputs[0].data};
    if (p->rank == 0) {
        r.y[0] = r.x[0];
    } else if (p->nearest) {
        accel_parallel_for_grain(p->env.threads, p->rows, p->row > 0 ? 16384 / p->row + 1 : p->rows, nearest_rows,
                                 &r);
    } else {
        accel_parallel_for(p->env.threads, p->parts, separable_parts, &r);
    }
    return PN_OK;
}

pn_status accel_resize_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_resize_desc* d = (const pn_resize_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    resize_plan* p = (resize_plan*)calloc(1, plan_bytes(d, x, y));
    if (p == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory planning the Resize '%s'",
                       layer->name != NULL ? layer->name : "?");
    }
    p->env = *env;
    p->rows_k = accel_kernel_set_for(env->isa)->resize;
    p->x_info = *x;
    p->y_info = *y;
    p->x_info.extension = p->y_info.extension = NULL;
    p->nearest = d->mode == PN_RESIZE_NEAREST;
    p->rank = x->rank;
    p->extrapolation = d->extrapolation_value;
    for (uint32_t a = 0; a < x->rank; ++a) {
        p->in[a] = x->dims[a];
        p->out[a] = y->dims[a];
    }
    unsigned char* tables = (unsigned char*)p + round8(sizeof(resize_plan));
    if (p->rank > 0 && p->nearest) {
        plan_nearest(p, d, tables);
        p->row = p->out[p->rank - 1];
        int64_t in = p->in[p->rank - 1], f = in > 0 && p->row % in == 0 ? p->row / in : 0;
        for (int64_t j = 0; f > 0 && j < p->row; ++j) {
            f = p->src[p->rank - 1][j] == j / f ? f : 0;
        }
        p->repeat = p->special[p->rank - 1] == NULL ? f : 0;
        p->rows = 1;
        for (uint32_t a = 0; a + 1 < p->rank; ++a) p->rows *= p->out[a];
    } else if (p->rank > 0) {
        plan_separable(p, d, tables);
        int64_t parts = 4 * (int64_t)accel_threads_count(env->threads);
        p->parts = p->jobs < parts ? p->jobs : parts;
        size_t floats = (size_t)(p->parts * p->max_span * p->w.out);
        p->scratch = (float*)malloc((floats > 0 ? floats : 1) * sizeof(float));
        if (p->scratch == NULL) {
            free(p);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory for the Resize '%s'",
                           layer->name != NULL ? layer->name : "?");
        }
    }
    *workload_out = pn_workload_new(p, resize_execute, resize_release, 0);
    if (*workload_out == NULL) { /* p released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    return PN_OK;
}
