/* CpuAcc pattern fusion (opt/patterns.h): RMS normalization as T5 and Llama export it,
 * x * rsqrt(mean(x^2) + eps) * scale, replaced by one Normalization RMS. torch exports rsqrt as
 * Div(1, Sqrt(.)); Reciprocal(Sqrt(.)) and Rsqrt(.) are taken too, x^2 as Pow(x, 2) or
 * Mul(x, x), the two products in either operand order; the scale is required (the layer takes
 * one). The fused layer computes each row's mean square once and divides by its root (CpuRef in
 * double, CpuAcc's normalization rows), where the decomposition rounds after each of its six
 * layers: the results agree to float32 rounding, not bit for bit. */
#include "opt/pattern_match.h"

#include <math.h>

/* The tensor whose reciprocal square root layer `at` is (Div(1, Sqrt(v)), Reciprocal(Sqrt(v)),
 * Rsqrt(v)), its layers made members; UINT32_MAX when `at` is none of them. */
static uint32_t rsqrt_of(pat_ctx* c, int64_t at) {
    const pn_layer* l = layer_at(c, at);
    float one;
    uint32_t root;
    if (is_unary(l, PN_UNARY_RSQRT)) {
        return add_member(c, at) ? l->input_ids[0] : UINT32_MAX;
    }
    if (is_binary(l, PN_BINARY_DIV) && const_scalar(l, 0, &one) && one == 1.0f && keeps_shape(l, 1)) {
        root = l->input_ids[1];
    } else if (is_unary(l, PN_UNARY_RECIPROCAL)) {
        root = l->input_ids[0];
    } else {
        return UINT32_MAX;
    }
    const int64_t ps = prod(c, root);
    if (ps < 0 || !inner(c, root, 1)) {
        return UINT32_MAX;
    }
    const pn_layer* sq = layer_at(c, ps);
    if (!(is_unary(sq, PN_UNARY_SQRT) || is_activation(sq, PN_ACTIVATION_SQRT)) || !add_member(c, at) ||
        !add_member(c, ps)) {
        return UINT32_MAX;
    }
    return sq->input_ids[0];
}

int accel_match_rms_norm(pat_ctx* c, int64_t at, pat_match* m) {
    c->num_members = 0;
    const uint32_t ve = rsqrt_of(c, at);
    if (ve == UINT32_MAX) {
        return 0;
    }
    /* mean(x^2) + eps */
    const int64_t pve = prod(c, ve);
    if (pve < 0 || !inner(c, ve, 1) || !is_binary(layer_at(c, pve), PN_BINARY_ADD)) {
        return 0;
    }
    const pn_layer* al = layer_at(c, pve);
    float eps = 0.0f;
    uint32_t ts;
    if (!adds_epsilon(al, &eps, &ts) || !add_member(c, pve)) {
        return 0;
    }
    const uint32_t v = al->input_ids[ts];
    const int64_t pv = prod(c, v);
    if (pv < 0 || !inner(c, v, 1) || layer_at(c, pv)->kind != PN_LAYER_REDUCE) {
        return 0;
    }
    const uint32_t sq = layer_at(c, pv)->input_ids[0];
    const int64_t pp = prod(c, sq);
    int32_t axis;
    if (pp < 0 || !inner(c, sq, 1) || !trailing_mean(layer_at(c, pv), sq, &axis) || !add_member(c, pv)) {
        return 0;
    }
    const pn_layer* pl = layer_at(c, pp);
    float two;
    uint32_t x;
    if (is_binary(pl, PN_BINARY_POWER) && const_scalar(pl, 1, &two) && two == 2.0f && keeps_shape(pl, 0)) {
        x = pl->input_ids[0];
    } else if (is_binary(pl, PN_BINARY_MUL) && pl->input_ids[0] == pl->input_ids[1]) {
        x = pl->input_ids[0];
    } else {
        return 0;
    }
    if (!pn_same_dims(&pl->outputs[0], &pl->inputs[0]) || !add_member(c, pp)) {
        return 0;
    }
    /* x * r, then * scale */
    const pn_layer* rl = layer_at(c, at);
    const int64_t pmul = consumer(c, rl->output_ids[0]);
    if (pmul < 0 || !is_binary(layer_at(c, pmul), PN_BINARY_MUL)) {
        return 0;
    }
    const pn_layer* ml = layer_at(c, pmul);
    const uint32_t r_slot = ml->input_ids[0] == rl->output_ids[0] ? 0u : 1u;
    if (ml->input_ids[1 - r_slot] != x || !pn_same_dims(&ml->outputs[0], &pl->inputs[0]) || !add_member(c, pmul)) {
        return 0;
    }
    uint32_t scale_slot;
    const int64_t pscale = scaling_mul(c, ml->output_ids[0], &pl->inputs[0], &scale_slot);
    if (pscale < 0) {
        return 0;
    }
    const pn_layer* sl = layer_at(c, pscale);
    m->kind = PN_LAYER_NORMALIZATION;
    m->norm.struct_size = (uint32_t)sizeof(pn_normalization_desc);
    m->norm.op = PN_NORMALIZATION_RMS;
    m->norm.axis = axis;
    m->norm.num_groups = 0;
    m->norm.epsilon = eps;
    m->norm.flags = 0u;
    m->num_inputs = 2;
    m->input_ids[0] = x;
    m->inputs[0] = pl->inputs[0];
    m->constants[0] = pl->constant_data != NULL ? pl->constant_data[0] : NULL;
    m->input_ids[1] = sl->input_ids[scale_slot];
    m->inputs[1] = sl->inputs[scale_slot];
    m->constants[1] = sl->constant_data != NULL ? sl->constant_data[scale_slot] : NULL;
    m->output_id = sl->output_ids[0];
    m->output = sl->outputs[0];
    return 1;
}
