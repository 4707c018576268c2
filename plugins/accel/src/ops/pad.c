/* CpuAcc PAD (pn_pad_desc) on float32, every mode (CONSTANT with its value input or 0,
 * REFLECT, EDGE, WRAP), any rank, negative pads (cropping) included.
 *
 * The output is taken as rows along its last axis; rows are split over the thread pool. Each
 * row's outer coordinates map, axis by axis, to the input row they read (through a table per
 * axis made when the workload is created: the input index of every output index, or -1 for
 * the constant), or to the constant; the row itself is a copy of the input row's kept part
 * (memcpy) between its two padded ends, which are filled from a table of the last axis (the
 * value, the edge element, the mirrored or wrapped elements). */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

typedef struct pad_state {
    accel_env env;
    pn_tensor_info x_info, y_info, v_info;
    uint32_t num_inputs;
    uint32_t rank;
    int64_t in[PN_MAX_DIMS], out[PN_MAX_DIMS];
    int64_t* src[PN_MAX_DIMS];   /* per axis: the input index each output index reads, -1: constant */
    int64_t copy_at, copy_len;   /* last axis: the output positions that copy the input row */
    int64_t rows, row;           /* output rows and their length */
    int64_t* mem;
} pad_state;

static void pad_release(void* vs) {
    pad_state* s = (pad_state*)vs;
    if (s != NULL) {
        free(s->mem);
        free(s);
    }
}

/* The input coordinate (among the axis' `in` elements) output index o reads, or -1. */
static int64_t source_of(pn_pad_mode mode, int64_t o, int64_t begin, int64_t end, int64_t in) {
    int64_t first = begin < 0 ? -begin : 0;            /* the first element the negative pads keep */
    int64_t kept = in - first - (end < 0 ? -end : 0);
    int64_t p = o - (begin > 0 ? begin : 0);           /* counted from the first kept element */
    if (p < 0 || p >= kept) {
        switch (mode) {
        case PN_PAD_EDGE: p = p < 0 ? 0 : kept - 1; break;
        case PN_PAD_REFLECT: p = p < 0 ? -p : 2 * (kept - 1) - p; break; /* pads < kept */
        case PN_PAD_WRAP: p = ((p % kept) + kept) % kept; break;
        default: return -1;
        }
    }
    return first + p;
}

typedef struct pad_run {
    const pad_state* s;
    const float* x;
    float* y;
    float value;
} pad_run;

static void pad_rows(void* vctx, int64_t begin, int64_t end) {
    const pad_run* r = (const pad_run*)vctx;
    const pad_state* s = r->s;
    const uint32_t last = s->rank - 1;
    const int64_t* lsrc = s->src[last];
    int64_t istride[PN_MAX_DIMS], idx[PN_MAX_DIMS];
    int64_t st = 1;
    for (int32_t a = (int32_t)last; a >= 0; --a) {
        istride[a] = st;
        st *= s->in[a];
    }
    int64_t rem = begin;
    for (int32_t a = (int32_t)last - 1; a >= 0; --a) {
        idx[a] = rem % s->out[a];
        rem /= s->out[a];
    }
    for (int64_t row = begin; row < end; ++row) {
        int64_t off = 0;
        for (uint32_t a = 0; a < last && off >= 0; ++a) {
            int64_t i = s->src[a][idx[a]];
            off = i < 0 ? -1 : off + i * istride[a];
        }
        float* yr = r->y + row * s->row;
        if (off < 0) {
            for (int64_t j = 0; j < s->row; ++j) yr[j] = r->value;
        } else {
            const float* xr = r->x != NULL ? r->x + off : NULL; /* NULL: an empty input, never read */
            for (int64_t j = 0; j < s->copy_at; ++j) yr[j] = lsrc[j] < 0 ? r->value : xr[lsrc[j]];
            if (s->copy_len > 0) {
                memcpy(yr + s->copy_at, xr + lsrc[s->copy_at], (size_t)s->copy_len * sizeof(float));
            }
            for (int64_t j = s->copy_at + s->copy_len; j < s->row; ++j) yr[j] = lsrc[j] < 0 ? r->value : xr[lsrc[j]];
        }
        for (int32_t a = (int32_t)last - 1; a >= 0 && ++idx[a] == s->out[a]; --a) {
            idx[a] = 0;
        }
    }
}

static pn_status pad_execute(void* vs, const pn_execute_args* args, pn_string_out* message_out) {
    const pad_state* s = (const pad_state*)vs;
    const pn_tensor_info infos[2] = {s->x_info, s->v_info};
    pn_status st = pn_check_execute_args(args, s->num_inputs, infos, 1, &s->y_info, "CpuAcc", message_out);
    if (st != PN_OK || pn_num_elements(&s->y_info) == 0) {
        return st;
    }
    pad_run r = {s, (const float*)args->inputs[0].data, (float*)args->outputs[0].data,
                 s->num_inputs == 2 ? *(const float*)args->inputs[1].data : 0.0f};
    if (s->rank == 0) {
        r.y[0] = r.x[0];
        return PN_OK;
    }
    accel_parallel_for_grain(s->env.threads, s->rows, s->row > 0 ? 16384 / s->row + 1 : s->rows, pad_rows, &r);
    return PN_OK;
}

pn_status accel_pad_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                           pn_string_out* message_out) {
    const accel_env* env = (const accel_env*)context;
    const pn_pad_desc* d = (const pn_pad_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    pad_state* s = (pad_state*)calloc(1, sizeof(*s));
    int64_t total = 1;
    for (uint32_t a = 0; a < x->rank; ++a) {
        total += y->dims[a];
    }
    if (s != NULL) {
        s->mem = (int64_t*)malloc((size_t)total * sizeof(int64_t));
    }
    if (s == NULL || s->mem == NULL) {
        pad_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Pad workload");
    }
    s->env = *env;
    s->x_info = *x;
    s->y_info = *y;
    s->x_info.extension = s->y_info.extension = NULL;
    s->num_inputs = layer->num_inputs;
    if (layer->num_inputs == 2) {
        s->v_info = layer->inputs[1];
        s->v_info.extension = NULL;
    }
    s->rank = x->rank;
    int64_t* next = s->mem;
    for (uint32_t a = 0; a < x->rank; ++a) {
        s->in[a] = x->dims[a];
        s->out[a] = y->dims[a];
        s->src[a] = next;
        next += y->dims[a];
        for (int64_t o = 0; o < y->dims[a]; ++o) {
            s->src[a][o] = source_of(d->mode, o, d->pads_begin[a], d->pads_end[a], x->dims[a]);
        }
    }
    if (s->rank > 0) {
        uint32_t last = s->rank - 1;
        int64_t b = d->pads_begin[last], e = d->pads_end[last];
        s->row = s->out[last];
        s->copy_at = b > 0 ? b : 0;
        s->copy_len = s->in[last] - (b < 0 ? -b : 0) - (e < 0 ? -e : 0); /* the kept elements */
        s->rows = 1;
        for (uint32_t a = 0; a < last; ++a) s->rows *= s->out[a];
    }
    *workload_out = pn_workload_new(s, pad_execute, pad_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    return PN_OK;
}
