/* RECURRENT layers (ONNX RNN, GRU, LSTM): ONNX's equations as backend_api.h states them,
 * one sequence and one direction at a time, computed in double on any float type. */
#include "cpuref.h"

#include <stdlib.h>

/* What a workload keeps besides the op: the layer's geometry, the input positions its flags
 * give, the activations, and double scratch sized at create (one execute at a time). */
typedef struct recurrent_state {
    int64_t seq, batch, size, hidden, dirs, gates;
    int bias, lens, initial_h, initial_c, peepholes; /* input index, or -1 when absent */
    uint32_t functions;                              /* activations per direction */
    pn_activation_desc act[6];
    double* w;     /* [dirs, gates * hidden, size] */
    double* r;     /* [dirs, gates * hidden, hidden] */
    double* b;     /* [dirs, 2 * gates * hidden], zeros when absent */
    double* p;     /* [dirs, 3 * hidden], zeros when absent */
    double* x;     /* one step of one sequence: [size] */
    double* h;     /* the state: [hidden] */
    double* c;     /* LSTM's cell state: [hidden] */
    double* pre;   /* the gates' x W^T + h R^T + Wb + Rb: [gates * hidden] */
    double* tmp;   /* GRU: r . h, then the new h: [2 * hidden] */
    double data[]; /* the arrays above */
} recurrent_state;

/* ---- Geometry --------------------------------------------------------------- */

static int64_t x_index(const recurrent_state* s, int batch_major, int64_t t, int64_t b) {
    return (batch_major ? b * s->seq + t : t * s->batch + b) * s->size;
}

static int64_t y_index(const recurrent_state* s, int batch_major, int64_t t, int64_t dir,
                       int64_t b) {
    return (batch_major ? (b * s->seq + t) * s->dirs + dir : (t * s->dirs + dir) * s->batch + b) *
           s->hidden;
}

static int64_t state_index(const recurrent_state* s, int batch_major, int64_t dir, int64_t b) {
    return (batch_major ? b * s->dirs + dir : dir * s->batch + b) * s->hidden;
}

/* ---- One step ------------------------------------------------------------------ */

static double clip(double v, double bound) {
    if (bound > 0.0) {
        if (v > bound) {
            return bound;
        }
        if (v < -bound) {
            return -bound;
        }
    }
    return v; /* NaN passes */
}

static double dot(const double* a, const double* b, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        sum += a[i] * b[i];
    }
    return sum;
}

/* pre[g * hidden + j] = x W^T + h R^T + Wb + Rb of gate g's row j, for the first `count`
 * gates (GRU computes its third gate itself). */
static void gate_inputs(recurrent_state* s, int64_t dir, int64_t count) {
    int64_t rows = s->gates * s->hidden;
    for (int64_t row = 0; row < count * s->hidden; ++row) {
        const double* w = s->w + (dir * rows + row) * s->size;
        const double* r = s->r + (dir * rows + row) * s->hidden;
        const double* b = s->b + dir * 2 * rows;
        s->pre[row] = dot(s->x, w, s->size) + dot(s->h, r, s->hidden) + b[row] + b[rows + row];
    }
}

/* The activation `k` of direction `dir` (f, g, h) of v. */
static double apply(const recurrent_state* s, int64_t dir, uint32_t k, double v) {
    return cpuref_activate(&s->act[dir * s->functions + k], v);
}

static void rnn_step(recurrent_state* s, const pn_recurrent_desc* d, int64_t dir) {
    gate_inputs(s, dir, 1);
    for (int64_t j = 0; j < s->hidden; ++j) {
        s->h[j] = apply(s, dir, 0, clip(s->pre[j], d->clip));
    }
}

/* Gates z, r, h (rows 0, 1, 2). */
static void gru_step(recurrent_state* s, const pn_recurrent_desc* d, int64_t dir) {
    int64_t n = s->hidden;
    double* reset_h = s->tmp;     /* r . h */
    double* next = s->tmp + n;    /* the new h */
    gate_inputs(s, dir, 2);
    for (int64_t j = 0; j < n; ++j) {
        s->pre[n + j] = apply(s, dir, 0, clip(s->pre[n + j], d->clip)); /* r */
        reset_h[j] = s->pre[n + j] * s->h[j];
    }
    int64_t rows = 3 * n;
    const double* bias = s->b + dir * 2 * rows;
    for (int64_t j = 0; j < n; ++j) {
        int64_t row = 2 * n + j;
        const double* w = s->w + (dir * rows + row) * s->size;
        const double* r = s->r + (dir * rows + row) * n;
        double recurrent = d->linear_before_reset
                               ? s->pre[n + j] * (dot(s->h, r, n) + bias[rows + row])
                               : dot(reset_h, r, n) + bias[rows + row];
        double candidate = apply(s, dir, 1, clip(dot(s->x, w, s->size) + bias[row] + recurrent,
                                               d->clip));
        double z = apply(s, dir, 0, clip(s->pre[j], d->clip));
        next[j] = (1.0 - z) * candidate + z * s->h[j];
    }
    for (int64_t j = 0; j < n; ++j) {
        s->h[j] = next[j];
    }
}

/* Gates i, o, f, c (rows 0..3); peepholes i, o, f. */
static void lstm_step(recurrent_state* s, const pn_recurrent_desc* d, int64_t dir) {
    int64_t n = s->hidden;
    const double* p = s->p + dir * 3 * n;
    gate_inputs(s, dir, 4);
    for (int64_t j = 0; j < n; ++j) {
        double c = s->c[j];
        double i = apply(s, dir, 0, clip(s->pre[j] + p[j] * c, d->clip));
        double f = d->input_forget ? 1.0 - i
                                   : apply(s, dir, 0, clip(s->pre[2 * n + j] + p[2 * n + j] * c,
                                                         d->clip));
        c = f * c + i * apply(s, dir, 1, clip(s->pre[3 * n + j], d->clip));
        double o = apply(s, dir, 0, clip(s->pre[n + j] + p[n + j] * c, d->clip));
        s->c[j] = c;
        s->h[j] = o * apply(s, dir, 2, c);
    }
}

/* ---- Kernel -------------------------------------------------------------------- */

static void load(double* dst, const cpuref_op* op, const void* const* in, int index, int64_t n) {
    if (index < 0) {
        for (int64_t i = 0; i < n; ++i) {
            dst[i] = 0.0;
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        dst[i] = pn_load_double(op->inputs[index].dtype, in[index], i);
    }
}

/* The state a sequence starts from: initial_h (initial_c) or zeros. */
static void load_state(double* dst, const recurrent_state* s, const cpuref_op* op,
                       const void* const* in, int index, int64_t at) {
    for (int64_t j = 0; j < s->hidden; ++j) {
        dst[j] = index < 0 ? 0.0 : pn_load_double(op->inputs[index].dtype, in[index], at + j);
    }
}

static void store(const cpuref_op* op, void* const* out, int index, int64_t at, const double* v,
                  int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
        pn_store_double(op->outputs[index].dtype, out[index], at + j, v == NULL ? 0.0 : v[j]);
    }
}

/* Direction `dir` over sequence `b` of length `len`: y's steps, then y_h (and y_c). */
static void run_sequence(recurrent_state* s, const cpuref_op* op, const void* const* in,
                         void* const* out, int64_t dir, int64_t b, int64_t len) {
    const pn_recurrent_desc* d = &op->desc.recurrent;
    int major = d->batch_major != 0;
    int reverse = d->direction == PN_DIRECTION_REVERSE || dir == 1;
    int64_t at = state_index(s, major, dir, b);
    load_state(s->h, s, op, in, s->initial_h, at);
    load_state(s->c, s, op, in, s->initial_c, at);
    for (int64_t step = 0; step < len; ++step) {
        int64_t t = reverse ? len - 1 - step : step;
        int64_t xi = x_index(s, major, t, b);
        for (int64_t i = 0; i < s->size; ++i) {
            s->x[i] = pn_load_double(op->inputs[0].dtype, in[0], xi + i);
        }
        if (d->cell == PN_RECURRENT_RNN) {
            rnn_step(s, d, dir);
        } else if (d->cell == PN_RECURRENT_GRU) {
            gru_step(s, d, dir);
        } else {
            lstm_step(s, d, dir);
        }
        store(op, out, 0, y_index(s, major, t, dir, b), s->h, s->hidden);
    }
    for (int64_t t = len; t < s->seq; ++t) {
        store(op, out, 0, y_index(s, major, t, dir, b), NULL, s->hidden);
    }
    /* A sequence of length 0 has no last step: its y_h and y_c are 0 (backend_api.h). */
    store(op, out, 1, at, len > 0 ? s->h : NULL, s->hidden);
    if (op->num_outputs == 3) {
        store(op, out, 2, at, len > 0 ? s->c : NULL, s->hidden);
    }
}

static pn_status recurrent_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                  pn_string_out* message_out) {
    recurrent_state* s = (recurrent_state*)op->priv;
    const int32_t* lens = s->lens < 0 ? NULL : (const int32_t*)in[s->lens];
    for (int64_t b = 0; lens != NULL && b < s->batch; ++b) {
        if (lens[b] < 0 || lens[b] > s->seq) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "Recurrent: sequence_lens[%lld] = %ld is outside [0, %lld] (the "
                           "sequence length)",
                           (long long)b, (long)lens[b], (long long)s->seq);
        }
    }
    int64_t rows = s->gates * s->hidden;
    load(s->w, op, in, 1, s->dirs * rows * s->size);
    load(s->r, op, in, 2, s->dirs * rows * s->hidden);
    load(s->b, op, in, s->bias, s->dirs * 2 * rows);
    load(s->p, op, in, s->peepholes, s->dirs * 3 * s->hidden);
    for (int64_t dir = 0; dir < s->dirs; ++dir) {
        for (int64_t b = 0; b < s->batch; ++b) {
            run_sequence(s, op, in, out, dir, b, lens != NULL ? (int64_t)lens[b] : s->seq);
        }
    }
    return PN_OK;
}

/* ---- Create -------------------------------------------------------------------- */

/* The input index of each optional input the flags name (in the header's order). */
static void locate_inputs(recurrent_state* s, uint32_t flags) {
    int next = 3;
    s->bias = (flags & PN_RECURRENT_HAS_BIAS) ? next++ : -1;
    s->lens = (flags & PN_RECURRENT_HAS_SEQUENCE_LENS) ? next++ : -1;
    s->initial_h = (flags & PN_RECURRENT_HAS_INITIAL_H) ? next++ : -1;
    s->initial_c = (flags & PN_RECURRENT_HAS_INITIAL_C) ? next++ : -1;
    s->peepholes = (flags & PN_RECURRENT_HAS_PEEPHOLES) ? next++ : -1;
}

/* The state and its scratch in one block (NULL when out of memory or too large). */
static recurrent_state* state_new(const pn_layer* layer, const pn_recurrent_desc* d) {
    const pn_tensor_info* x = &layer->inputs[0];
    int64_t seq = d->batch_major ? x->dims[1] : x->dims[0];
    int64_t batch = d->batch_major ? x->dims[0] : x->dims[1];
    int64_t size = x->dims[2], hidden = (int64_t)d->hidden_size;
    int64_t dirs = d->direction == PN_DIRECTION_BIDIRECTIONAL ? 2 : 1;
    int64_t gates = d->cell == PN_RECURRENT_LSTM ? 4 : (d->cell == PN_RECURRENT_GRU ? 3 : 1);
    /* w and r are inputs (so their sizes fit); the rest are a few rows of hidden. */
    int64_t counts[9] = {pn_num_elements(&layer->inputs[1]), pn_num_elements(&layer->inputs[2]),
                         dirs * 2 * gates * hidden, dirs * 3 * hidden, size, hidden, hidden,
                         gates * hidden, 2 * hidden};
    uint64_t total = 0;
    for (int i = 0; i < 9; ++i) {
        total += (uint64_t)counts[i];
    }
    if (total > (uint64_t)((SIZE_MAX - sizeof(recurrent_state)) / sizeof(double))) {
        return NULL;
    }
    recurrent_state* s =
        (recurrent_state*)malloc(sizeof(recurrent_state) + (size_t)total * sizeof(double));
    if (s == NULL) {
        return NULL;
    }
    s->seq = seq;
    s->batch = batch;
    s->size = size;
    s->hidden = hidden;
    s->dirs = dirs;
    s->gates = gates;
    locate_inputs(s, d->flags);
    s->functions = d->cell == PN_RECURRENT_LSTM ? 3u : (d->cell == PN_RECURRENT_GRU ? 2u : 1u);
    for (uint32_t i = 0; i < 6; ++i) {
        s->act[i].struct_size = (uint32_t)sizeof(pn_activation_desc);
        s->act[i].kind = i < d->num_activations ? d->activations[i] : PN_ACTIVATION_INVALID;
        s->act[i].alpha = d->activation_alpha[i];
        s->act[i].beta = d->activation_beta[i];
    }
    double** arrays[9] = {&s->w, &s->r, &s->b, &s->p, &s->x, &s->h, &s->c, &s->pre, &s->tmp};
    double* next = s->data;
    for (int i = 0; i < 9; ++i) {
        *arrays[i] = next;
        next += counts[i];
    }
    return s;
}

pn_status cpuref_recurrent_create(void* context, const pn_layer* layer,
                                  pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    recurrent_state* s = state_new(layer, (const pn_recurrent_desc*)layer->descriptor);
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuRef: out of memory creating a Recurrent workload");
    }
    return cpuref_typed_workload_new(layer, sizeof(pn_recurrent_desc), NULL, recurrent_kernel, s,
                                     workload_out, message_out);
}
