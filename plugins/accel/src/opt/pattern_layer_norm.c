/* CpuAcc pattern fusion (opt/patterns.h): LayerNorm's opset-13 decomposition, replaced by one Normalization LAYER. */
#include "opt/pattern_match.h"

#include <math.h>
#include <string.h>

/* (x - mean) / sqrt(mean((x - mean)^2) + eps) * scale [+ bias], found from its Div layer. */
int accel_match_layer_norm(pat_ctx* c, int64_t div, pat_match* m) {
    const pn_layer* dl = layer_at(c, div);
    if (!is_binary(dl, PN_BINARY_DIV)) {
        return 0;
    }
    c->num_members = 0;
    add_member(c, div);
    const uint32_t d = dl->input_ids[0], sd = dl->input_ids[1];
    const int64_t psub = prod(c, d), ps = prod(c, sd);
    if (psub < 0 || ps < 0 || !is_binary(layer_at(c, psub), PN_BINARY_SUB) || !inner(c, sd, 1) ||
        !pn_same_dims(&dl->outputs[0], &dl->inputs[0])) {
        return 0;
    }
    const pn_layer* sub = layer_at(c, psub);
    const uint32_t x = sub->input_ids[0], mean = sub->input_ids[1];
    const int64_t pm = prod(c, mean);
    int32_t axis, axis2;
    if (pm < 0 || !inner(c, mean, 1) || !trailing_mean(layer_at(c, pm), x, &axis) ||
        !pn_same_dims(&sub->outputs[0], &sub->inputs[0])) {
        return 0;
    }
    add_member(c, psub);
    add_member(c, pm);
    /* the denominator: sqrt(mean(d^2) + eps) */
    const pn_layer* sq = layer_at(c, ps);
    if (!(is_unary(sq, PN_UNARY_SQRT) || is_activation(sq, PN_ACTIVATION_SQRT)) || !add_member(c, ps)) {
        return 0;
    }
    const uint32_t ve = sq->input_ids[0];
    const int64_t pve = prod(c, ve);
    if (pve < 0 || !inner(c, ve, 1) || !is_binary(layer_at(c, pve), PN_BINARY_ADD)) {
        return 0;
    }
    const pn_layer* al = layer_at(c, pve);
    float eps = 0.0f;
    uint32_t ts;
    if (!adds_epsilon(al, &eps, &ts)) {
        return 0;
    }
    add_member(c, pve);
    const uint32_t v = al->input_ids[ts];
    const int64_t pv = prod(c, v);
    if (pv < 0 || !inner(c, v, 1) || layer_at(c, pv)->kind != PN_LAYER_REDUCE) {
        return 0;
    }
    const uint32_t p2 = layer_at(c, pv)->input_ids[0];
    const int64_t pp = prod(c, p2);
    if (pp < 0 || !inner(c, p2, 1) || !trailing_mean(layer_at(c, pv), p2, &axis2) || axis2 != axis) {
        return 0;
    }
    add_member(c, pv);
    const pn_layer* pl = layer_at(c, pp);
    float two;
    uint32_t d_uses;
    if (is_binary(pl, PN_BINARY_POWER) && pl->input_ids[0] == d && const_scalar(pl, 1, &two) && two == 2.0f) {
        d_uses = 2;
    } else if (is_binary(pl, PN_BINARY_MUL) && pl->input_ids[0] == d && pl->input_ids[1] == d) {
        d_uses = 3;
    } else {
        return 0;
    }
    if (!inner(c, d, d_uses) || !add_member(c, pp)) {
        return 0;
    }
    /* the scale (required: the Normalization layer takes one) and the bias */
    uint32_t scale_slot;
    const int64_t pmul = scaling_mul(c, dl->output_ids[0], &sub->inputs[0], &scale_slot);
    if (pmul < 0) {
        return 0;
    }
    const pn_layer* ml = layer_at(c, pmul);
    const pn_layer* last = ml;
    const int64_t padd = consumer(c, ml->output_ids[0]);
    int has_bias = 0;
    uint32_t nb = 0;
    if (padd >= 0 && is_binary(layer_at(c, padd), PN_BINARY_ADD) &&
        pn_same_dims(&layer_at(c, padd)->outputs[0], &sub->inputs[0])) {
        const pn_layer* bl = layer_at(c, padd);
        nb = bl->input_ids[0] == ml->output_ids[0] ? 0u : 1u;
        if (bl->input_ids[1 - nb] != ml->output_ids[0] && add_member(c, padd)) {
            has_bias = 1;
            last = bl;
        }
    }
    m->kind = PN_LAYER_NORMALIZATION;
    m->norm.struct_size = (uint32_t)sizeof(pn_normalization_desc);
    m->norm.op = PN_NORMALIZATION_LAYER;
    m->norm.axis = axis;
    m->norm.num_groups = 0;
    m->norm.epsilon = eps;
    m->norm.flags = has_bias ? PN_LAYER_FLAG_HAS_BIAS : 0u;
    m->num_inputs = has_bias ? 3 : 2;
    m->input_ids[0] = x;
    m->inputs[0] = sub->inputs[0];
    m->constants[0] = sub->constant_data != NULL ? sub->constant_data[0] : NULL;
    m->input_ids[1] = ml->input_ids[scale_slot];
    m->inputs[1] = ml->inputs[scale_slot];
    m->constants[1] = ml->constant_data != NULL ? ml->constant_data[scale_slot] : NULL;
    if (has_bias) {
        const pn_layer* bl = last;
        m->input_ids[2] = bl->input_ids[1 - nb];
        m->inputs[2] = bl->inputs[1 - nb];
        m->constants[2] = bl->constant_data != NULL ? bl->constant_data[1 - nb] : NULL;
    }
    m->output_id = last->output_ids[0];
    m->output = last->outputs[0];
    return 1;
}

