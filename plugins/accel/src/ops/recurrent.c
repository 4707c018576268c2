/* CpuAcc RECURRENT (ONNX RNN, GRU, LSTM) on float32, with ONNX's equations as backend_api.h
 * states them (every cell, direction, layout, optional input, clip, linear_before_reset,
 * input_forget and every activation the validator accepts).
 *
 * Per direction: the input projection of every step as one GEMM, xp[seq * batch, gates *
 * hidden] = x W^T (rows of x in memory order, read in place; W^T packed once at create when w
 * is constant, else packed into the workspace by each execute), then per step the recurrent
 * product h R^T over the batch (R^T packed the same way; batch 1 runs the GEMM's gemv), and the
 * gates elementwise: sums with the bias, clip, the direction's activations through
 * accel_apply_activation (the vector kernels of kernels/math_functions.h, e.g. tanh and sigmoid, accuracy in
 * plugins/accel/README.md), then the state update. GRU with linear_before_reset 0 runs a second
 * product per step, (r . h) Rh^T, with Rh^T packed apart from Rz, Rr.
 *
 * sequence_lens: at step s sequence b runs time t = s (forward) or len - 1 - s (reverse) while
 * s < len; its state then holds; y is 0 at t >= len, y_h (y_c) 0 when len is 0. A value
 * outside [0, seq] fails execute() with PN_ERR_INVALID_ARGUMENT before anything is written.
 *
 * Threads: the projection GEMMs split over the pool; the steps are serial (a step's work is
 * small), except that a bidirectional layer runs its two directions on two threads at once.
 * gemm_run gives the same bits at every grid, and each direction is computed the same way
 * wherever it runs, so results do not depend on the thread count. */
#include "ops/create.h"
#include "gemm/gemm.h"
#include "ops/shared_weights.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN_FLOATS(n) (((n) + 15) & ~(size_t)15)

typedef struct rec_state {
    accel_env env;
    const gemm_arch* arch;
    int cell, major, dirs, reverse_only, lbr, input_forget, num_outputs;
    uint32_t num_inputs;
    int64_t seq, batch, size, hidden, gates;
    int bias, lens, initial_h, initial_c, peepholes; /* input index, or -1 */
    float clip;
    pn_activation_desc act[6];
    uint32_t functions;
    /* Packed B operands per direction (`*_each` floats apart), or NULL: packed per execute. */
    const float* wpack;  /* W^T [size, gates * hidden] */
    const float* rpack;  /* R^T [hidden, n_r] with n_r the first product's columns */
    const float* rhpack; /* GRU, linear_before_reset 0: Rh^T [hidden, hidden] */
    size_t w_each, r_each, rh_each;
    int64_t n_r;         /* columns of the per-step product: gates * hidden (GRU lbr 0: 2 hidden) */
    int64_t* offs;       /* 0..size-1: x read in place by the projection, or NULL */
    /* Workspace layout, in floats from a 64-byte aligned base. */
    size_t ws_proj, ws_xp, ws_bias, ws_pack, ws_dir, dir_floats, ws_total;
    size_t proj_floats;  /* the projection GEMM's own workspace */
    size_t step_gemm;    /* a per-step GEMM's workspace (one thread) */
} rec_state;

pn_status accel_recurrent_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_recurrent_desc* d = (const pn_recurrent_desc*)layer->descriptor;
    int lens = -1;
    if (d->flags & PN_RECURRENT_HAS_SEQUENCE_LENS) {
        lens = (d->flags & PN_RECURRENT_HAS_BIAS) ? 4 : 3;
    }
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        if ((int)i != lens && layer->inputs[i].dtype != PN_DTYPE_FLOAT32) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Recurrent on float32 only; input %u is %s",
                           plugin->id, i, pn_dtype_name(layer->inputs[i].dtype));
        }
    }
    for (uint32_t i = 0; i < layer->num_outputs; ++i) {
        if (layer->outputs[i].dtype != PN_DTYPE_FLOAT32) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Recurrent on float32 only; output %u is %s",
                           plugin->id, i, pn_dtype_name(layer->outputs[i].dtype));
        }
    }
    return PN_OK;
}

static void rec_release(void* vs) {
    rec_state* s = (rec_state*)vs;
    if (s != NULL) {
        free(s->offs);
        free(s);
    }
}

/* ---- Geometry ------------------------------------------------------------------ */

static int64_t x_row(const rec_state* s, int64_t t, int64_t b) {
    return s->major ? b * s->seq + t : t * s->batch + b;
}

static int64_t y_at(const rec_state* s, int64_t t, int64_t dir, int64_t b) {
    return (s->major ? (b * s->seq + t) * s->dirs + dir : (t * s->dirs + dir) * s->batch + b) * s->hidden;
}

static int64_t state_at(const rec_state* s, int64_t dir, int64_t b) {
    return (s->major ? b * s->dirs + dir : dir * s->batch + b) * s->hidden;
}

static void clip_row(float* v, int64_t n, float bound) {
    if (bound > 0.0f) {
        for (int64_t j = 0; j < n; ++j) {
            float x = v[j];
            v[j] = x > bound ? bound : (x < -bound ? -bound : x); /* NaN passes */
        }
    }
}

/* ---- One direction ------------------------------------------------------------- */

typedef struct rec_run {
    const rec_state* s;
    const float* const* in;  /* the float inputs (NULL where absent) */
    const int32_t* lens;
    float* const* out;
    float* ws;
    const float* wpack;      /* this execute's packed operands (the state's, or the workspace's) */
    const float* rpack;
    const float* rhpack;
} rec_run;

/* The per-step product c[batch, n] = a[batch, hidden] B^T with B packed, on one thread. */
static void step_gemm(const rec_state* s, const accel_env* serial, const float* a, const float* packed,
                      int64_t n, float* c, float* gws) {
    gemm_operand ga = {a, s->hidden, 1, NULL, NULL, NULL, NULL, NULL};
    gemm_operand gb = {NULL, 0, 0, packed, NULL, NULL, NULL, NULL};
    gemm_run(serial, s->arch, s->batch, n, s->hidden, &ga, &gb, c, n, 0, gws, NULL, NULL);
}

static void run_direction(const rec_run* run, int64_t dir) {
    const rec_state* s = run->s;
    const int64_t H = s->hidden, GH = s->gates * H, B = s->batch;
    const int reverse = s->reverse_only || dir == 1;
    const pn_activation_desc* f = &s->act[dir * s->functions];
    const pn_activation_desc* g = s->functions > 1 ? f + 1 : NULL;
    const pn_activation_desc* hf = s->functions > 2 ? f + 2 : NULL;
    accel_env serial = s->env;
    serial.threads = NULL;

    float* base = run->ws + s->ws_dir + (size_t)dir * s->dir_floats;
    float* h = base;                                  /* [B, H] */
    float* c = h + ALIGN_FLOATS((size_t)(B * H));     /* [B, H] */
    float* hr = c + ALIGN_FLOATS((size_t)(B * H));    /* [B, n_r] */
    float* rh = hr + ALIGN_FLOATS((size_t)(B * s->n_r)); /* GRU: [B, H] r . h, then [B, H] product */
    float* rhr = rh + ALIGN_FLOATS((size_t)(B * H));
    float* zr = rhr + ALIGN_FLOATS((size_t)(B * H));   /* GRU: [B, 2H] z, r */
    float* buf = zr + ALIGN_FLOATS((size_t)(B * 2 * H)); /* [GH + H] */
    float* gws = buf + ALIGN_FLOATS((size_t)(GH + H));

    const float* xp = run->ws + s->ws_xp + (size_t)dir * (size_t)(s->seq * B * GH);
    const float* bsum = run->ws + s->ws_bias + (size_t)dir * (size_t)(GH + H); /* [GH], then Rbh [H] */
    const float* rbh = bsum + GH;
    const float* p = run->in[s->peepholes < 0 ? 0 : s->peepholes];
    p = s->peepholes < 0 ? NULL : p + dir * 3 * H;
    const float* wp = run->rpack + (size_t)dir * s->r_each;
    const float* whp = run->rhpack != NULL ? run->rhpack + (size_t)dir * s->rh_each : NULL;
    float* y = run->out[0];

    int64_t steps = 0;
    for (int64_t b = 0; b < B; ++b) {
        const int64_t len = run->lens != NULL ? run->lens[b] : s->seq;
        steps = len > steps ? len : steps;
        const float* ih = s->initial_h >= 0 ? run->in[s->initial_h] + state_at(s, dir, b) : NULL;
        const float* ic = s->initial_c >= 0 ? run->in[s->initial_c] + state_at(s, dir, b) : NULL;
        for (int64_t j = 0; j < H; ++j) {
            h[b * H + j] = ih != NULL ? ih[j] : 0.0f;
            c[b * H + j] = ic != NULL ? ic[j] : 0.0f;
        }
    }
    memset(rh, 0, (size_t)(B * H) * sizeof(float));

    for (int64_t step = 0; step < steps; ++step) {
        step_gemm(s, &serial, h, wp, s->n_r, hr, gws);
        if (s->cell == PN_RECURRENT_GRU) {
            for (int64_t b = 0; b < B; ++b) {
                const int64_t len = run->lens != NULL ? run->lens[b] : s->seq;
                if (step >= len) continue;
                const int64_t t = reverse ? len - 1 - step : step;
                const float* xr = xp + x_row(s, t, b) * GH;
                float* v = zr + b * 2 * H;
                const float* hrb = hr + b * s->n_r;
                for (int64_t j = 0; j < 2 * H; ++j) v[j] = xr[j] + hrb[j] + bsum[j];
                clip_row(v, 2 * H, s->clip);
                accel_apply_activation(s->env.isa, f, v, 2 * H);
                if (!s->lbr) {
                    for (int64_t j = 0; j < H; ++j) rh[b * H + j] = v[H + j] * h[b * H + j];
                }
            }
            if (!s->lbr) step_gemm(s, &serial, rh, whp, H, rhr, gws);
        }
        for (int64_t b = 0; b < B; ++b) {
            const int64_t len = run->lens != NULL ? run->lens[b] : s->seq;
            if (step >= len) continue;
            const int64_t t = reverse ? len - 1 - step : step;
            const float* xr = xp + x_row(s, t, b) * GH;
            const float* hrb = hr + b * s->n_r;
            float* hb = h + b * H;
            float* cb = c + b * H;
            if (s->cell == PN_RECURRENT_RNN) {
                for (int64_t j = 0; j < H; ++j) buf[j] = xr[j] + hrb[j] + bsum[j];
                clip_row(buf, H, s->clip);
                accel_apply_activation(s->env.isa, f, buf, H);
                memcpy(hb, buf, (size_t)H * sizeof(float));
            } else if (s->cell == PN_RECURRENT_GRU) {
                const float* z = zr + b * 2 * H;
                const float* r = z + H;
                if (s->lbr) {
                    for (int64_t j = 0; j < H; ++j)
                        buf[j] = xr[2 * H + j] + bsum[2 * H + j] + r[j] * (hrb[2 * H + j] + rbh[j]);
                } else {
                    const float* q = rhr + b * H;
                    for (int64_t j = 0; j < H; ++j) buf[j] = xr[2 * H + j] + bsum[2 * H + j] + q[j] + rbh[j];
                }
                clip_row(buf, H, s->clip);
                accel_apply_activation(s->env.isa, g, buf, H);
                for (int64_t j = 0; j < H; ++j) hb[j] = (1.0f - z[j]) * buf[j] + z[j] * hb[j];
            } else { /* LSTM: gates i, o, f, c */
                float* gi = buf;
                float* go = buf + H;
                float* gf = buf + 2 * H;
                float* gc = buf + 3 * H;
                float* tc = buf + 4 * H;
                for (int64_t j = 0; j < GH; ++j) buf[j] = xr[j] + hrb[j] + bsum[j];
                if (p != NULL) {
                    for (int64_t j = 0; j < H; ++j) {
                        gi[j] += p[j] * cb[j];
                        gf[j] += p[2 * H + j] * cb[j];
                    }
                }
                clip_row(gi, H, s->clip);
                accel_apply_activation(s->env.isa, f, gi, H);
                if (s->input_forget) {
                    for (int64_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
                } else {
                    clip_row(gf, H, s->clip);
                    accel_apply_activation(s->env.isa, f, gf, H);
                }
                clip_row(gc, H, s->clip);
                accel_apply_activation(s->env.isa, g, gc, H);
                for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
                if (p != NULL) {
                    for (int64_t j = 0; j < H; ++j) go[j] += p[H + j] * cb[j];
                }
                clip_row(go, H, s->clip);
                accel_apply_activation(s->env.isa, f, go, H);
                memcpy(tc, cb, (size_t)H * sizeof(float));
                accel_apply_activation(s->env.isa, hf, tc, H);
                for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * tc[j];
            }
            memcpy(y + y_at(s, t, dir, b), hb, (size_t)H * sizeof(float));
        }
    }

    for (int64_t b = 0; b < B; ++b) {
        const int64_t len = run->lens != NULL ? run->lens[b] : s->seq;
        for (int64_t t = len; t < s->seq; ++t) {
            memset(y + y_at(s, t, dir, b), 0, (size_t)H * sizeof(float));
        }
        if (len > 0) {
            memcpy(run->out[1] + state_at(s, dir, b), h + b * H, (size_t)H * sizeof(float));
        } else {
            memset(run->out[1] + state_at(s, dir, b), 0, (size_t)H * sizeof(float));
        }
        if (s->num_outputs == 3) {
            float* yc = run->out[2] + state_at(s, dir, b);
            if (len > 0) {
                memcpy(yc, c + b * H, (size_t)H * sizeof(float));
            } else {
                memset(yc, 0, (size_t)H * sizeof(float));
            }
        }
    }
}

static void directions_job(void* ctx, int64_t begin, int64_t end) {
    for (int64_t dir = begin; dir < end; ++dir) {
        run_direction((const rec_run*)ctx, dir);
    }
}

/* ---- Execute ------------------------------------------------------------------- */

static pn_status rec_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const rec_state* s = (const rec_state*)vs;
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != (uint32_t)s->num_outputs) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc execute: Recurrent expects %u inputs and %d outputs", s->num_inputs,
                       s->num_outputs);
    }
    const int32_t* lens = s->lens >= 0 ? (const int32_t*)args->inputs[s->lens].data : NULL;
    for (int64_t b = 0; lens != NULL && b < s->batch; ++b) {
        if (lens[b] < 0 || lens[b] > s->seq) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT,
                           "Recurrent: sequence_lens[%lld] = %ld is outside [0, %lld] (the sequence length)",
                           (long long)b, (long)lens[b], (long long)s->seq);
        }
    }
    if (s->batch == 0) {
        return PN_OK;
    }
    if (s->ws_total > 0 && args->workspace == NULL) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: Recurrent needs a workspace");
    }
    const float* in[8] = {NULL};
    for (uint32_t i = 0; i < s->num_inputs && i < 8; ++i) {
        in[i] = (int)i == s->lens ? NULL : (const float*)args->inputs[i].data;
    }
    float* out[3] = {NULL, NULL, NULL};
    for (int i = 0; i < s->num_outputs; ++i) {
        out[i] = (float*)args->outputs[i].data;
    }
    float* ws = (float*)(((uintptr_t)args->workspace + 63) & ~(uintptr_t)63);
    const int64_t H = s->hidden, GH = s->gates * H, rows = s->seq * s->batch;

    rec_run run = {s, in, lens, out, ws, s->wpack, s->rpack, s->rhpack};
    float* pk = ws + s->ws_pack;
    if (run.wpack == NULL && s->size > 0) {
        for (int64_t dir = 0; dir < s->dirs; ++dir) {
            gemm_pack_b_full(s->arch, s->size, GH, in[1] + dir * GH * s->size, 1, s->size,
                             pk + (size_t)dir * s->w_each);
        }
        run.wpack = pk;
        pk += (size_t)s->dirs * s->w_each;
    }
    if (run.rpack == NULL) {
        for (int64_t dir = 0; dir < s->dirs; ++dir) {
            const float* r = in[2] + dir * GH * H;
            gemm_pack_b_full(s->arch, H, s->n_r, r, 1, H, pk + (size_t)dir * s->r_each);
            if (s->rh_each > 0) {
                gemm_pack_b_full(s->arch, H, H, r + 2 * H * H, 1, H,
                                 pk + (size_t)s->dirs * s->r_each + (size_t)dir * s->rh_each);
            }
        }
        run.rpack = pk;
        run.rhpack = s->rh_each > 0 ? pk + (size_t)s->dirs * s->r_each : NULL;
    }

    /* The gates' biases: Wb + Rb, but GRU's h gate keeps Rbh apart (after it Rbh [H]). */
    for (int64_t dir = 0; dir < s->dirs; ++dir) {
        float* bs = ws + s->ws_bias + (size_t)dir * (size_t)(GH + H);
        const float* bias = s->bias >= 0 ? in[s->bias] + dir * 2 * GH : NULL;
        for (int64_t j = 0; j < GH + H; ++j) bs[j] = 0.0f;
        if (bias != NULL) {
            int64_t split = s->cell == PN_RECURRENT_GRU ? 2 * H : GH;
            for (int64_t j = 0; j < GH; ++j) bs[j] = bias[j] + (j < split ? bias[GH + j] : 0.0f);
            if (s->cell == PN_RECURRENT_GRU) {
                for (int64_t j = 0; j < H; ++j) bs[GH + j] = bias[GH + 2 * H + j];
            }
        }
    }

    /* The input projection of every step, per direction. */
    for (int64_t dir = 0; dir < s->dirs; ++dir) {
        float* xp = ws + s->ws_xp + (size_t)dir * (size_t)(rows * GH);
        if (rows == 0) continue;
        if (s->size == 0) {
            memset(xp, 0, (size_t)(rows * GH) * sizeof(float));
            continue;
        }
        const gemm_indirect ind = {in[0], s->offs, rows, 0, s->size};
        gemm_operand ga = {in[0], s->size, 1, NULL, NULL, NULL, NULL, s->offs != NULL ? &ind : NULL};
        gemm_operand gb = {NULL, 0, 0, run.wpack + (size_t)dir * s->w_each, NULL, NULL, NULL, NULL};
        gemm_run(&s->env, s->arch, rows, GH, s->size, &ga, &gb, xp, GH, 0, ws + s->ws_proj, NULL, NULL);
    }

    if (s->dirs == 2 && accel_threads_count(s->env.threads) >= 2) {
        accel_parallel_for_grain(s->env.threads, 2, 1, directions_job, &run);
    } else {
        directions_job(&run, 0, s->dirs);
    }
    return PN_OK;
}

/* ---- Create -------------------------------------------------------------------- */

static pn_status rec_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                           pn_workload** workload_out, pn_string_out* message_out) {
    const pn_recurrent_desc* d = (const pn_recurrent_desc*)layer->descriptor;
    rec_state* s = (rec_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->arch = accel_kernel_set_for(env->isa)->gemm;
    const pn_tensor_info* x = &layer->inputs[0];
    s->cell = (int)d->cell;
    s->major = d->batch_major != 0;
    s->seq = s->major ? x->dims[1] : x->dims[0];
    s->batch = s->major ? x->dims[0] : x->dims[1];
    s->size = x->dims[2];
    s->hidden = (int64_t)d->hidden_size;
    s->dirs = d->direction == PN_DIRECTION_BIDIRECTIONAL ? 2 : 1;
    s->reverse_only = d->direction == PN_DIRECTION_REVERSE;
    s->gates = d->cell == PN_RECURRENT_LSTM ? 4 : (d->cell == PN_RECURRENT_GRU ? 3 : 1);
    s->lbr = d->linear_before_reset != 0;
    s->input_forget = d->input_forget != 0;
    s->clip = d->clip;
    s->num_inputs = layer->num_inputs;
    s->num_outputs = (int)layer->num_outputs;
    int next = 3;
    s->bias = (d->flags & PN_RECURRENT_HAS_BIAS) ? next++ : -1;
    s->lens = (d->flags & PN_RECURRENT_HAS_SEQUENCE_LENS) ? next++ : -1;
    s->initial_h = (d->flags & PN_RECURRENT_HAS_INITIAL_H) ? next++ : -1;
    s->initial_c = (d->flags & PN_RECURRENT_HAS_INITIAL_C) ? next++ : -1;
    s->peepholes = (d->flags & PN_RECURRENT_HAS_PEEPHOLES) ? next++ : -1;
    s->functions = d->cell == PN_RECURRENT_LSTM ? 3u : (d->cell == PN_RECURRENT_GRU ? 2u : 1u);
    for (uint32_t i = 0; i < 6; ++i) {
        s->act[i].struct_size = (uint32_t)sizeof(pn_activation_desc);
        s->act[i].kind = i < d->num_activations ? d->activations[i] : PN_ACTIVATION_INVALID;
        s->act[i].alpha = d->activation_alpha[i];
        s->act[i].beta = d->activation_beta[i];
    }
    const int64_t H = s->hidden, GH = s->gates * H, rows = s->seq * s->batch;
    s->n_r = (s->cell == PN_RECURRENT_GRU && !s->lbr) ? 2 * H : GH;
    s->w_each = s->size > 0 ? gemm_packed_b_floats(s->arch, s->size, GH) : 0;
    s->r_each = gemm_packed_b_floats(s->arch, H, s->n_r);
    s->rh_each = (s->cell == PN_RECURRENT_GRU && !s->lbr) ? gemm_packed_b_floats(s->arch, H, H) : 0;

    const void* const* cd = layer->constant_data;
    const float* wc = cd != NULL ? (const float*)cd[1] : NULL;
    const float* rc = cd != NULL ? (const float*)cd[2] : NULL;
    size_t each = 0;
    if (wc != NULL && s->size > 0) {
        s->wpack = accel_pack_gemm(packs, env->isa, 0, wc, s->size, GH, 1, s->size, s->dirs, GH * s->size, &each);
        if (s->wpack == NULL) goto oom;
        s->w_each = each;
    }
    if (rc != NULL) {
        s->rpack = accel_pack_gemm(packs, env->isa, 0, rc, H, s->n_r, 1, H, s->dirs, GH * H, &each);
        if (s->rpack == NULL) goto oom;
        s->r_each = each;
        if (s->rh_each > 0) {
            s->rhpack = accel_pack_gemm(packs, env->isa, 0, rc + 2 * H * H, H, H, 1, H, s->dirs, GH * H, &each);
            if (s->rhpack == NULL) goto oom;
            s->rh_each = each;
        }
    }
    if (s->arch->ukr_ind != NULL && s->size > 0 && rows > 1) {
        s->offs = (int64_t*)malloc((size_t)s->size * sizeof(int64_t));
        if (s->offs == NULL) goto oom;
        for (int64_t q = 0; q < s->size; ++q) s->offs[q] = q;
    }

    /* Workspace: projection GEMM scratch, xp, biases, packs made per execute, per-direction state. */
    const int threads = accel_threads_count(env->threads);
    s->proj_floats = rows > 0 && s->size > 0
                         ? gemm_workspace_floats(s->arch, threads, rows, GH, s->size, s->offs != NULL, 1, 0)
                         : 0;
    s->step_gemm = gemm_workspace_floats(s->arch, 1, s->batch, GH, H, 0, 1, 0);
    size_t pack_floats = 0;
    if (s->wpack == NULL) pack_floats += (size_t)s->dirs * s->w_each;
    if (s->rpack == NULL) pack_floats += (size_t)s->dirs * (s->r_each + s->rh_each);
    const size_t B = (size_t)s->batch;
    s->dir_floats = 4 * ALIGN_FLOATS(B * (size_t)H) + ALIGN_FLOATS(B * (size_t)s->n_r) +
                    ALIGN_FLOATS(B * 2 * (size_t)H) + ALIGN_FLOATS((size_t)(GH + H)) +
                    ALIGN_FLOATS(s->step_gemm);
    s->ws_proj = 0;
    s->ws_xp = ALIGN_FLOATS(s->proj_floats);
    s->ws_bias = s->ws_xp + ALIGN_FLOATS((size_t)s->dirs * (size_t)(rows * GH));
    s->ws_pack = s->ws_bias + ALIGN_FLOATS((size_t)s->dirs * (size_t)(GH + H));
    s->ws_dir = s->ws_pack + ALIGN_FLOATS(pack_floats);
    s->ws_total = s->ws_dir + (size_t)s->dirs * s->dir_floats;
    pn_workload* wl = pn_workload_new(s, rec_execute, rec_release, s->ws_total * sizeof(float) + 64);
    if (wl == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
oom:
    rec_release(s);
    return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory making a Recurrent workload");
}

pn_status accel_recurrent_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, rec_build, workload_out, message_out);
}
