/* CpuAcc pattern fusion (opt/patterns.h): GELU (erf and tanh), SiLU and hard swish, each replaced by one Activation. */
#include "opt/pattern_match.h"

#include <math.h>
#include <string.h>

/* The factors of the product that Mul layer `top` computes, expanding a factor produced by
 * another Mul that only this product reads: up to 3, each a tensor id or (is_const) a
 * constant. */
typedef struct factor {
    int is_const;
    float value;
    uint32_t id;
    const pn_tensor_info* info;
} factor;

static uint32_t product_factors(pat_ctx* c, int64_t top, factor* f) {
    const pn_layer* l = layer_at(c, top);
    uint32_t n = 0;
    for (uint32_t s = 0; s < 2; ++s) {
        float v;
        if (const_scalar(l, s, &v)) {
            f[n++] = (factor){1, v, 0, NULL};
            continue;
        }
        const uint32_t id = l->input_ids[s];
        const int64_t p = prod(c, id);
        if (p >= 0 && is_binary(layer_at(c, p), PN_BINARY_MUL) && inner(c, id, 1) && n < 2) {
            const pn_layer* m = layer_at(c, p);
            if (!keeps_shape(l, s) || !add_member(c, p)) {
                return 0;
            }
            for (uint32_t t = 0; t < 2 && n < 3; ++t) {
                if (const_scalar(m, t, &v)) {
                    f[n++] = (factor){1, v, 0, NULL};
                } else {
                    f[n++] = (factor){0, 0.0f, m->input_ids[t], &m->inputs[t]};
                }
            }
            continue;
        }
        f[n++] = (factor){0, 0.0f, id, &l->inputs[s]};
    }
    return n;
}

/* Splits 3 factors into the constant (near `half`), x and the other tensor g (both ways:
 * which = 0 or 1). */
static int split_factors(const factor* f, uint32_t n, int which, const factor** x, const factor** g) {
    if (n != 3) {
        return 0;
    }
    const factor* tensors[2];
    uint32_t nt = 0, nc = 0;
    for (uint32_t i = 0; i < 3; ++i) {
        if (f[i].is_const) {
            if (!near(f[i].value, 0.5, 1e-6)) {
                return 0;
            }
            ++nc;
        } else if (nt < 2) {
            tensors[nt++] = &f[i];
        } else {
            return 0; /* three tensors: no constant half */
        }
    }
    if (nc != 1 || nt != 2) {
        return 0;
    }
    *x = tensors[which];
    *g = tensors[1 - which];
    return 1;
}

/* g = Add(t, 1) with t read only there: t's producer (added to the members), else -1. */
static int64_t one_plus(pat_ctx* c, uint32_t g) {
    const int64_t pg = prod(c, g);
    uint32_t cs;
    if (pg < 0 || !inner(c, g, 1) || !is_binary(layer_at(c, pg), PN_BINARY_ADD) ||
        !has_const(layer_at(c, pg), 1.0, 1e-6, &cs)) {
        return -1;
    }
    const uint32_t t = layer_at(c, pg)->input_ids[1 - cs];
    const int64_t pt = prod(c, t);
    if (pt < 0 || !inner(c, t, 1) || !add_member(c, pg) || !add_member(c, pt)) {
        return -1;
    }
    return pt;
}

/* Tensor d is x / sqrt 2 or x * (1 / sqrt 2) (either order), read only there. */
static int x_over_sqrt2(pat_ctx* c, uint32_t d, uint32_t x) {
    const int64_t pd = prod(c, d);
    if (pd < 0 || !inner(c, d, 1)) {
        return 0;
    }
    const pn_layer* l = layer_at(c, pd);
    float v;
    uint32_t cs;
    if (is_binary(l, PN_BINARY_DIV) && const_scalar(l, 1, &v) && near(v, sqrt(2.0), 2e-6) &&
        l->input_ids[0] == x && keeps_shape(l, 0)) {
        return add_member(c, pd);
    }
    if (is_binary(l, PN_BINARY_MUL) && has_const(l, sqrt(0.5), 2e-6, &cs) && l->input_ids[1 - cs] == x) {
        return add_member(c, pd);
    }
    return 0;
}

static void match_activation(pat_match* m, pn_activation_kind kind, float alpha, float beta,
                             const factor* x, const pn_layer* last) {
    m->kind = PN_LAYER_ACTIVATION;
    m->act.struct_size = (uint32_t)sizeof(pn_activation_desc);
    m->act.kind = kind;
    m->act.alpha = alpha;
    m->act.beta = beta;
    m->num_inputs = 1;
    m->input_ids[0] = x->id;
    m->inputs[0] = *x->info;
    m->output_id = last->output_ids[0];
    m->output = last->outputs[0];
}

/* The members' outputs all have x's dims. */
static int all_shaped_as(const pat_ctx* c, const pn_tensor_info* x) {
    for (uint32_t k = 0; k < c->num_members; ++k) {
        if (!pn_same_dims(&layer_at(c, c->members[k])->outputs[0], x)) {
            return 0;
        }
    }
    return 1;
}

/* x * 0.5 * (1 + erf(x / sqrt 2)) ending at Mul layer `top`. */
int accel_match_gelu_erf(pat_ctx* c, int64_t top, pat_match* m) {
    if (!is_binary(layer_at(c, top), PN_BINARY_MUL)) {
        return 0;
    }
    for (int which = 0; which < 2; ++which) {
        c->num_members = 0;
        add_member(c, top);
        factor f[3];
        const factor *x, *g;
        if (!split_factors(f, product_factors(c, top, f), which, &x, &g)) {
            continue;
        }
        const int64_t pe = one_plus(c, g->id);
        if (pe < 0 || !is_unary(layer_at(c, pe), PN_UNARY_ERF) ||
            !x_over_sqrt2(c, layer_at(c, pe)->input_ids[0], x->id) || !all_shaped_as(c, x->info)) {
            continue;
        }
        match_activation(m, PN_ACTIVATION_GELU, 0.0f, 0.0f, x, layer_at(c, top));
        return 1;
    }
    return 0;
}

/* Tensor t is x^3: Pow(x, 3), x * (x * x) or (x * x) * x, read only there. */
static int x_cubed(pat_ctx* c, uint32_t t, uint32_t x) {
    const int64_t p = prod(c, t);
    if (p < 0 || !inner(c, t, 1)) {
        return 0;
    }
    const pn_layer* l = layer_at(c, p);
    float v;
    if (is_binary(l, PN_BINARY_POWER) && const_scalar(l, 1, &v) && v == 3.0f && l->input_ids[0] == x &&
        keeps_shape(l, 0)) {
        return add_member(c, p);
    }
    if (!is_binary(l, PN_BINARY_MUL)) {
        return 0;
    }
    for (uint32_t s = 0; s < 2; ++s) {
        const uint32_t sq = l->input_ids[1 - s];
        const int64_t ps = prod(c, sq);
        if (l->input_ids[s] == x && ps >= 0 && inner(c, sq, 1) && is_binary(layer_at(c, ps), PN_BINARY_MUL) &&
            layer_at(c, ps)->input_ids[0] == x && layer_at(c, ps)->input_ids[1] == x) {
            return add_member(c, p) && add_member(c, ps);
        }
    }
    return 0;
}

/* 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) ending at Mul layer `top`. */
int accel_match_gelu_tanh(pat_ctx* c, int64_t top, pat_match* m) {
    const double k1 = sqrt(2.0 / 3.14159265358979323846);
    if (!is_binary(layer_at(c, top), PN_BINARY_MUL)) {
        return 0;
    }
    for (int which = 0; which < 2; ++which) {
        c->num_members = 0;
        add_member(c, top);
        factor f[3];
        const factor *x, *g;
        if (!split_factors(f, product_factors(c, top, f), which, &x, &g)) {
            continue;
        }
        const int64_t pt = one_plus(c, g->id);
        if (pt < 0 || !is_activation(layer_at(c, pt), PN_ACTIVATION_TANH)) {
            continue;
        }
        /* tanh's input: k1 * (x + k2 * x^3) */
        const uint32_t e = layer_at(c, pt)->input_ids[0];
        const int64_t pe = prod(c, e);
        uint32_t cs;
        if (pe < 0 || !inner(c, e, 1) || !is_binary(layer_at(c, pe), PN_BINARY_MUL) ||
            !has_const(layer_at(c, pe), k1, 2e-6, &cs) || !add_member(c, pe)) {
            continue;
        }
        const uint32_t s = layer_at(c, pe)->input_ids[1 - cs];
        const int64_t ps = prod(c, s);
        if (ps < 0 || !inner(c, s, 1) || !is_binary(layer_at(c, ps), PN_BINARY_ADD) || !add_member(c, ps)) {
            continue;
        }
        const pn_layer* add = layer_at(c, ps);
        const uint32_t xs = add->input_ids[0] == x->id ? 0u : 1u;
        const uint32_t cube_term = add->input_ids[1 - xs];
        const int64_t pc = prod(c, cube_term);
        if (add->input_ids[xs] != x->id || pc < 0 || !inner(c, cube_term, 1) ||
            !is_binary(layer_at(c, pc), PN_BINARY_MUL) || !has_const(layer_at(c, pc), 0.044715, 1e-6, &cs) ||
            !add_member(c, pc) || !x_cubed(c, layer_at(c, pc)->input_ids[1 - cs], x->id) ||
            !all_shaped_as(c, x->info)) {
            continue;
        }
        match_activation(m, PN_ACTIVATION_GELU_TANH, 0.0f, 0.0f, x, layer_at(c, top));
        return 1;
    }
    return 0;
}

/* x * sigmoid(x) -> SWISH; x * hard_sigmoid(x) with alpha 1/6, beta 1/2 -> HARD_SWISH. */
int accel_match_swish(pat_ctx* c, int64_t top, pat_match* m) {
    const pn_layer* l = layer_at(c, top);
    if (!is_binary(l, PN_BINARY_MUL)) {
        return 0;
    }
    for (uint32_t s = 0; s < 2; ++s) {
        const uint32_t gate = l->input_ids[s], x = l->input_ids[1 - s];
        const int64_t pg = prod(c, gate);
        if (pg < 0 || !inner(c, gate, 1) || layer_at(c, pg)->kind != PN_LAYER_ACTIVATION ||
            layer_at(c, pg)->input_ids[0] != x ||
            !pn_same_dims(&l->outputs[0], &l->inputs[1 - s]) || !pn_same_dims(&l->inputs[0], &l->inputs[1])) {
            continue;
        }
        const pn_layer* g = layer_at(c, pg);
        const pn_activation_desc* a = (const pn_activation_desc*)g->descriptor;
        const factor fx = {0, 0.0f, x, &l->inputs[1 - s]};
        if (is_activation(g, PN_ACTIVATION_SIGMOID)) {
            match_activation(m, PN_ACTIVATION_SWISH, 1.0f, 0.0f, &fx, l);
        } else if (is_activation(g, PN_ACTIVATION_HARD_SIGMOID) && near(a->alpha, 1.0 / 6.0, 1e-6) &&
                   a->beta == 0.5f) {
            match_activation(m, PN_ACTIVATION_HARD_SWISH, 0.0f, 0.0f, &fx, l);
        } else {
            continue;
        }
        c->num_members = 0;
        add_member(c, top);
        add_member(c, pg);
        return 1;
    }
    return 0;
}

