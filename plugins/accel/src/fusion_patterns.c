/* CpuAcc pattern fusion (rules in fusion_patterns.h): GELU (erf and tanh), SiLU and hard
 * swish, LayerNorm's decomposition, attention. */
#include "fusion_patterns.h"
#include "attention.h"
#include "index_copy.h"
#include "batch_norm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 24       /* layers of one match, at most */

/* ---- The result ------------------------------------------------------------------------------ */

/* A PRECOMPILED payload other than attention's: the pointer, its release and its label. */
typedef struct pat_own {
    void* payload;
    void (*release)(void*);
    const char* label;
} pat_own;

static void own_release(pat_own* o) {
    if (o->payload != NULL && o->release != NULL) {
        o->release(o->payload);
    }
    o->payload = NULL;
}

typedef struct pat_item {
    uint32_t replaced[MAX_MEMBERS]; /* the subgraph's layer ids, in layer order */
    uint32_t num_replaced;
    uint32_t sink;                  /* index of its last layer in the subgraph */
    pn_layer layer;                 /* the replacement, as the view shows it */
    union {
        pn_activation_desc act;
        pn_normalization_desc norm;
        pn_precompiled_desc pre;
    } desc;
    pn_tensor_info inputs[4];
    uint32_t input_ids[4];
    const void* constants[4];
    pn_tensor_info output;
    uint32_t output_id;
    char* name;
    accel_attention* payload;       /* attention only */
    pat_own own;                    /* a PRECOMPILED payload of data_movement.c / batch_norm.c */
    int claimed;                    /* finish: inside a substitution */
} pat_item;

struct accel_patterns {
    pat_item* items;
    uint32_t num_items;
    uint32_t first_id;              /* items[k]'s layer id is first_id + k */
    pn_layer* layers;               /* the view's */
    pn_subgraph view;
    uint32_t** lists;               /* replaced-id arrays made by finish */
    uint32_t num_lists;
};

void accel_patterns_release(accel_patterns* p, int owns_payloads) {
    if (p == NULL) {
        return;
    }
    for (uint32_t i = 0; i < p->num_items; ++i) {
        free(p->items[i].name);
        if (owns_payloads) {
            accel_attention_release(p->items[i].payload);
            own_release(&p->items[i].own);
        }
    }
    for (uint32_t i = 0; i < p->num_lists; ++i) {
        free(p->lists[i]);
    }
    free(p->lists);
    free(p->items);
    free(p->layers);
    free(p);
}

const pn_subgraph* accel_patterns_view(const accel_patterns* p) { return &p->view; }

static pat_item* item_of(const accel_patterns* p, uint32_t id) {
    if (p == NULL || id < p->first_id || id - p->first_id >= p->num_items) {
        return NULL;
    }
    return &p->items[id - p->first_id];
}

int accel_patterns_kind_of(const accel_patterns* p, uint32_t layer_id) {
    const pat_item* it = item_of(p, layer_id);
    if (it == NULL) {
        return 0;
    }
    return it->layer.kind == PN_LAYER_PRECOMPILED ? 2 : 1;
}

/* ---- The subgraph as the matchers see it ----------------------------------------------------- */

typedef struct pat_ctx {
    const pn_subgraph* sg;
    const pn_plugin* plugin;
    accel_tensor_table t;     /* producers, reads and outputs by tensor id */
    unsigned char* ok;        /* layer -> passes the backend's check, one output */
    unsigned char* taken;     /* layer -> in a match */
    uint32_t members[MAX_MEMBERS];
    uint32_t num_members;
} pat_ctx;

static const pn_layer* layer_at(const pat_ctx* c, int64_t i) { return &c->sg->layers[i]; }

/* The layer (index) that produces tensor id, when a match may take it: it passes the check,
 * has one output and is in no match yet; else -1. */
static int64_t prod(const pat_ctx* c, uint32_t id) {
    if (id > c->t.max_id) {
        return -1;
    }
    const int64_t p = c->t.producer[id];
    return p >= 0 && c->ok[p] && !c->taken[p] ? p : -1;
}

/* Tensor id is read exactly n times by the subgraph's layers and is not one of its outputs. */
static int inner(const pat_ctx* c, uint32_t id, uint32_t n) {
    return id <= c->t.max_id && c->t.uses[id] == n && !c->t.is_output[id];
}

/* The one layer that reads tensor id (inner(id, 1)), else -1. */
static int64_t consumer(const pat_ctx* c, uint32_t id) {
    if (!inner(c, id, 1)) {
        return -1;
    }
    for (uint32_t j = 0; j < c->sg->num_layers; ++j) {
        const pn_layer* l = layer_at(c, j);
        for (uint32_t k = 0; k < l->num_inputs; ++k) {
            if (l->input_ids[k] == id) {
                return c->ok[j] && !c->taken[j] ? (int64_t)j : -1;
            }
        }
    }
    return -1;
}

static int add_member(pat_ctx* c, int64_t i) {
    for (uint32_t k = 0; k < c->num_members; ++k) {
        if (c->members[k] == (uint32_t)i) {
            return 0;
        }
    }
    if (c->num_members >= MAX_MEMBERS) {
        return 0;
    }
    c->members[c->num_members++] = (uint32_t)i;
    return 1;
}

static int is_binary(const pn_layer* l, pn_binary_op op) {
    if (l->kind != PN_LAYER_ELEMENTWISE_BINARY || l->num_inputs != 2) {
        return 0;
    }
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)l->descriptor;
    return d->op == op && d->fused_activation == NULL;
}

static int is_activation(const pn_layer* l, pn_activation_kind kind) {
    return l->kind == PN_LAYER_ACTIVATION && ((const pn_activation_desc*)l->descriptor)->kind == kind;
}

static int is_unary(const pn_layer* l, pn_unary_op op) {
    return l->kind == PN_LAYER_ELEMENTWISE_UNARY &&
           ((const pn_elementwise_unary_desc*)l->descriptor)->op == op;
}

/* Input `slot` of l is a float32 constant whose elements are all one value (into *v). */
static int const_scalar(const pn_layer* l, uint32_t slot, float* v) {
    if (slot >= l->num_inputs || l->constant_data == NULL || l->constant_data[slot] == NULL ||
        l->inputs[slot].dtype != PN_DTYPE_FLOAT32) {
        return 0;
    }
    const float* data = (const float*)l->constant_data[slot];
    const int64_t n = pn_num_elements(&l->inputs[slot]);
    if (n < 1) {
        return 0;
    }
    for (int64_t i = 1; i < n; ++i) {
        if (data[i] != data[0]) {
            return 0;
        }
    }
    *v = data[0];
    return 1;
}

static int near(float v, double target, double rel) { return fabs((double)v - target) <= rel * fabs(target); }

/* Binary layer l combines its tensor operand (the other slot than `const_slot`) with a
 * constant without broadcasting the result larger: its output has that operand's dims. */
static int keeps_shape(const pn_layer* l, uint32_t tensor_slot) {
    return pn_same_dims(&l->outputs[0], &l->inputs[tensor_slot]);
}

/* One operand of binary l is a constant scalar near `target` (relative rel): its slot into
 * *const_slot. */
static int has_const(const pn_layer* l, double target, double rel, uint32_t* const_slot) {
    for (uint32_t s = 0; s < 2; ++s) {
        float v;
        if (const_scalar(l, s, &v) && near(v, target, rel) && keeps_shape(l, 1 - s)) {
            *const_slot = s;
            return 1;
        }
    }
    return 0;
}

/* ---- Matches ----------------------------------------------------------------------------------- */

/* What a matcher found: the replacement's kind, descriptor, inputs and output. */
typedef struct pat_match {
    pn_layer_kind kind;
    pn_activation_desc act;
    pn_normalization_desc norm;
    accel_attention* payload;
    pat_own own;                 /* a payload of data_movement.c / batch_norm.c (kind PRECOMPILED, payload NULL) */
    uint32_t num_inputs;
    uint32_t input_ids[4];
    pn_tensor_info inputs[4];
    const void* constants[4];
    uint32_t output_id;
    pn_tensor_info output;
} pat_match;

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
static int match_gelu_erf(pat_ctx* c, int64_t top, pat_match* m) {
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
static int match_gelu_tanh(pat_ctx* c, int64_t top, pat_match* m) {
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
static int match_swish(pat_ctx* c, int64_t top, pat_match* m) {
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

/* Reduce MEAN of tensor `in` over the trailing axes [k, rank) with keep_dims, k into *axis. */
static int trailing_mean(const pn_layer* l, uint32_t in, int32_t* axis) {
    if (l->kind != PN_LAYER_REDUCE || l->input_ids[0] != in) {
        return 0;
    }
    const pn_reduce_desc* d = (const pn_reduce_desc*)l->descriptor;
    const uint32_t rank = l->inputs[0].rank;
    if (d->op != PN_REDUCE_MEAN || !d->keep_dims || d->num_axes == 0 || d->num_axes > rank) {
        return 0;
    }
    const uint32_t k = rank - d->num_axes;
    for (uint32_t i = 0; i < d->num_axes; ++i) {
        if (d->axes[i] != k + i) {
            return 0;
        }
    }
    *axis = (int32_t)k;
    return 1;
}

/* (x - mean) / sqrt(mean((x - mean)^2) + eps) * scale [+ bias], found from its Div layer. */
static int match_layer_norm(pat_ctx* c, int64_t div, pat_match* m) {
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
    uint32_t cs;
    if (const_scalar(al, 1, &eps) && keeps_shape(al, 0)) {
        cs = 1;
    } else if (const_scalar(al, 0, &eps) && keeps_shape(al, 1)) {
        cs = 0;
    } else {
        return 0;
    }
    if (!(eps >= 0.0f) || isinf(eps)) {
        return 0;
    }
    add_member(c, pve);
    const uint32_t v = al->input_ids[1 - cs];
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
    const int64_t pmul = consumer(c, dl->output_ids[0]);
    if (pmul < 0 || !is_binary(layer_at(c, pmul), PN_BINARY_MUL)) {
        return 0;
    }
    const pn_layer* ml = layer_at(c, pmul);
    const uint32_t ns = ml->input_ids[0] == dl->output_ids[0] ? 0u : 1u;
    if (!pn_same_dims(&ml->outputs[0], &sub->inputs[0]) || !add_member(c, pmul)) {
        return 0;
    }
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
    m->input_ids[1] = ml->input_ids[1 - ns];
    m->inputs[1] = ml->inputs[1 - ns];
    m->constants[1] = ml->constant_data != NULL ? ml->constant_data[1 - ns] : NULL;
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

/* ---- Attention ------------------------------------------------------------------------------- */

/* An operand of the fused attention: a tensor of the subgraph seen through absorbed layers. */
typedef struct operand {
    uint32_t id;                    /* the tensor read */
    pn_tensor_info info;            /* its info */
    uint32_t rank;                  /* the logical operand */
    int64_t dims[PN_MAX_DIMS];
    int64_t strides[PN_MAX_DIMS];   /* elements of the tensor read */
} operand;

static void contiguous_strides(const pn_tensor_info* t, int64_t* s) {
    int64_t n = 1;
    for (int32_t i = (int32_t)t->rank - 1; i >= 0; --i) {
        s[i] = n;
        n *= t->dims[i];
    }
}

/* A factor of a Mul or Div by a constant scalar that keeps the shape, read only by the next
 * layer: the tensor operand's id into *id, the factor into *scale. */
static int fold_scale(pat_ctx* c, uint32_t* id, double* scale) {
    const int64_t p = prod(c, *id);
    if (p < 0 || !inner(c, *id, 1)) {
        return 0;
    }
    const pn_layer* l = layer_at(c, p);
    float v;
    if (is_binary(l, PN_BINARY_DIV) && const_scalar(l, 1, &v) && v != 0.0f && keeps_shape(l, 0)) {
        if (!add_member(c, p)) return 0;
        *scale /= (double)v;
        *id = l->input_ids[0];
        return 1;
    }
    for (uint32_t s = 0; s < 2 && is_binary(l, PN_BINARY_MUL); ++s) {
        if (const_scalar(l, s, &v) && keeps_shape(l, 1 - s)) {
            if (!add_member(c, p)) return 0;
            *scale *= (double)v;
            *id = l->input_ids[1 - s];
            return 1;
        }
    }
    return 0;
}

/* The operand of a MatMul input: tensor id (info as the MatMul sees it), through a constant
 * scale (when `scale` is not NULL), a Transpose, another constant scale and a Reshape of a
 * tensor that only they read. */
static void input_operand(pat_ctx* c, uint32_t id, const pn_tensor_info* info, double* scale, operand* o) {
    if (scale != NULL) {
        fold_scale(c, &id, scale);
    }
    o->rank = info->rank;
    for (uint32_t i = 0; i < info->rank; ++i) {
        o->dims[i] = info->dims[i];
    }
    contiguous_strides(info, o->strides);
    o->id = id;
    o->info = *info;
    int64_t p = prod(c, id);
    if (p >= 0 && inner(c, id, 1) && layer_at(c, p)->kind == PN_LAYER_TRANSPOSE && add_member(c, p)) {
        const pn_layer* t = layer_at(c, p);
        const pn_transpose_desc* d = (const pn_transpose_desc*)t->descriptor;
        int64_t s[PN_MAX_DIMS];
        contiguous_strides(&t->inputs[0], s);
        for (uint32_t i = 0; i < d->rank; ++i) {
            o->strides[i] = s[d->perm[i]];
        }
        id = t->input_ids[0];
        o->id = id;
        o->info = t->inputs[0];
        if (scale != NULL && fold_scale(c, &id, scale)) {
            o->id = id; /* the same dims and layout as the scaled tensor */
        }
    }
    p = prod(c, o->id);
    if (p >= 0 && inner(c, o->id, 1) && layer_at(c, p)->kind == PN_LAYER_RESHAPE && add_member(c, p)) {
        o->id = layer_at(c, p)->input_ids[0]; /* the same elements in the same order */
        o->info = layer_at(c, p)->inputs[0];
    }
}

/* Batch strides of operand o (matrix dims last) broadcast to the batch dims bd[0..nb). */
static int batch_strides(const operand* o, uint32_t nb, const int64_t* bd, int64_t* out) {
    const int32_t ob = (int32_t)o->rank - 2;
    for (uint32_t i = 0; i < nb; ++i) {
        const int32_t a = (int32_t)i - ((int32_t)nb - ob);
        if (a < 0 || o->dims[a] == 1) {
            out[i] = 0;
        } else if (o->dims[a] == bd[i]) {
            out[i] = o->strides[a];
        } else {
            return 0;
        }
    }
    return 1;
}

/* The masks added to the scores between the first product (and its scale) and the softmax. */
#define MAX_MASKS 4
#define MAX_OWN_MASK (1 << 22) /* floats of a summed constant mask, at most */
typedef struct mask_chain {
    uint32_t count;
    uint32_t id[MAX_MASKS];
    pn_tensor_info info[MAX_MASKS];
    const void* data[MAX_MASKS];       /* constant data, or NULL */
    pn_tensor_info at[MAX_MASKS];      /* the shape the mask is added at (its Add's output) */
    int reshaped;                      /* a Reshape lies between a mask and the scores */
} mask_chain;

/* Tensor id comes from a MatMul through Reshapes, Adds (of either operand) and Muls or Divs
 * by constants, each read only by the next. */
static int leads_to_matmul(const pat_ctx* c, uint32_t id, int depth) {
    const int64_t p = prod(c, id);
    if (p < 0 || !inner(c, id, 1) || depth > 8) {
        return 0;
    }
    const pn_layer* l = layer_at(c, p);
    float v;
    switch (l->kind) {
    case PN_LAYER_MATMUL: return 1;
    case PN_LAYER_RESHAPE: return leads_to_matmul(c, l->input_ids[0], depth + 1);
    case PN_LAYER_ELEMENTWISE_BINARY:
        if (is_binary(l, PN_BINARY_ADD)) {
            return leads_to_matmul(c, l->input_ids[0], depth + 1) || leads_to_matmul(c, l->input_ids[1], depth + 1);
        }
        if (is_binary(l, PN_BINARY_MUL) || is_binary(l, PN_BINARY_DIV)) {
            return (const_scalar(l, 1, &v) && leads_to_matmul(c, l->input_ids[0], depth + 1)) ||
                   (is_binary(l, PN_BINARY_MUL) && const_scalar(l, 0, &v) &&
                    leads_to_matmul(c, l->input_ids[1], depth + 1));
        }
        return 0;
    default: return 0;
    }
}

/* From the softmax's input *t back over Adds of masks and Reshapes (each read only by the
 * next, each Add keeping its scores operand's shape) to the tensor before them; 0 when a step
 * does not fit. */
static int mask_steps(pat_ctx* c, uint32_t* t, mask_chain* mc) {
    int reshape_seen = 0;
    for (int step = 0; step < 2 * MAX_MASKS; ++step) {
        const int64_t p = prod(c, *t);
        if (p < 0 || !inner(c, *t, 1)) {
            return 1;
        }
        const pn_layer* l = layer_at(c, p);
        if (l->kind == PN_LAYER_RESHAPE) {
            if (!leads_to_matmul(c, l->input_ids[0], 0) || !add_member(c, p)) {
                return 1; /* not ours: the product comes through something else */
            }
            reshape_seen = 1;
            *t = l->input_ids[0];
            continue;
        }
        if (!is_binary(l, PN_BINARY_ADD)) {
            return 1;
        }
        uint32_t s = 2;
        for (uint32_t k = 0; k < 2 && s == 2; ++k) {
            if (keeps_shape(l, k) && leads_to_matmul(c, l->input_ids[k], 0)) {
                s = k;
            }
        }
        if (s == 2 || mc->count >= MAX_MASKS || !add_member(c, p)) {
            return 0;
        }
        mc->id[mc->count] = l->input_ids[1 - s];
        mc->info[mc->count] = l->inputs[1 - s];
        mc->data[mc->count] = l->constant_data != NULL ? l->constant_data[1 - s] : NULL;
        mc->at[mc->count] = l->outputs[0];
        mc->reshaped |= reshape_seen;
        ++mc->count;
        *t = l->input_ids[s];
    }
    return 0;
}

/* The masks of mc (all constant) summed into one float array of the scores' shape (elements in
 * the same order: Reshapes keep it); 1, 0 when a mask is not constant or the sum would be too
 * large, -1 when out of memory. */
static int combine_masks(const mask_chain* mc, const pn_tensor_info* scores, float** out) {
    const int64_t n = pn_num_elements(scores);
    if (n > MAX_OWN_MASK) {
        return 0;
    }
    for (uint32_t k = 0; k < mc->count; ++k) {
        if (mc->data[k] == NULL || mc->info[k].dtype != PN_DTYPE_FLOAT32 || pn_num_elements(&mc->at[k]) != n) {
            return 0;
        }
    }
    float* sum = (float*)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (sum == NULL) {
        return -1;
    }
    /* in the order the Adds run: the one nearest the product first */
    for (int64_t e = 0; e < n; ++e) {
        sum[e] = 0.0f;
    }
    for (int32_t k = (int32_t)mc->count - 1; k >= 0; --k) {
        const pn_tensor_info* at = &mc->at[k];
        int64_t str[PN_MAX_DIMS];
        if (pn_broadcast_strides(&mc->info[k], at, str) != 0) {
            free(sum);
            return 0;
        }
        const float* m = (const float*)mc->data[k];
        int64_t idx[PN_MAX_DIMS] = {0};
        for (int64_t e = 0; e < n; ++e) {
            int64_t off = 0;
            for (uint32_t i = 0; i < at->rank; ++i) {
                off += idx[i] * str[i];
            }
            sum[e] += m[off];
            for (int32_t i = (int32_t)at->rank - 1; i >= 0; --i) {
                if (++idx[i] < at->dims[i]) {
                    break;
                }
                idx[i] = 0;
            }
        }
    }
    *out = sum;
    return 1;
}

/* softmax(scale * A B + mask) V from the Softmax layer `sm`. */
static int match_attention(pat_ctx* c, int64_t sm, pat_match* m) {
    const pn_layer* sl = layer_at(c, sm);
    if (sl->kind != PN_LAYER_SOFTMAX) {
        return 0;
    }
    const pn_tensor_info* st = &sl->inputs[0];
    if (st->rank < 2 || pn_normalize_axis(((const pn_softmax_desc*)sl->descriptor)->axis, st->rank) !=
                            (int32_t)st->rank - 1) {
        return 0;
    }
    c->num_members = 0;
    add_member(c, sm);
    /* the second product: P @ V, P this softmax's output */
    const int64_t pv = consumer(c, sl->output_ids[0]);
    if (pv < 0 || layer_at(c, pv)->kind != PN_LAYER_MATMUL || layer_at(c, pv)->input_ids[0] != sl->output_ids[0] ||
        !add_member(c, pv)) {
        return 0;
    }
    const pn_layer* ml2 = layer_at(c, pv);
    /* the masks (Adds, Reshapes between them), the scale and the first product */
    uint32_t t = sl->input_ids[0];
    mask_chain mc;
    memset(&mc, 0, sizeof(mc));
    double scale = 1.0;
    if (!mask_steps(c, &t, &mc)) {
        return 0;
    }
    fold_scale(c, &t, &scale);
    const int64_t pm1 = prod(c, t);
    if (pm1 < 0 || !inner(c, t, 1) || layer_at(c, pm1)->kind != PN_LAYER_MATMUL || !add_member(c, pm1)) {
        return 0;
    }
    const pn_layer* ml1 = layer_at(c, pm1);
    const pn_tensor_info* scores = &ml1->outputs[0];
    if (ml1->inputs[0].rank < 2 || ml1->inputs[1].rank < 2 || ml2->inputs[1].rank < 2 ||
        scores->rank != ml2->outputs[0].rank || !pn_same_dims(scores, st)) {
        return 0;
    }
    operand q, k, v;
    input_operand(c, ml1->input_ids[0], &ml1->inputs[0], &scale, &q);
    input_operand(c, ml1->input_ids[1], &ml1->inputs[1], &scale, &k);
    input_operand(c, ml2->input_ids[1], &ml2->inputs[1], NULL, &v);
    /* the output, through a Transpose and a Reshape that only it feeds */
    const pn_tensor_info* oi = &ml2->outputs[0];
    int64_t os[PN_MAX_DIMS];
    contiguous_strides(oi, os);
    uint32_t out_id = ml2->output_ids[0];
    pn_tensor_info out_info = *oi;
    int64_t pt = consumer(c, out_id);
    if (pt >= 0 && layer_at(c, pt)->kind == PN_LAYER_TRANSPOSE && add_member(c, pt)) {
        const pn_layer* tl = layer_at(c, pt);
        const pn_transpose_desc* d = (const pn_transpose_desc*)tl->descriptor;
        int64_t fs[PN_MAX_DIMS];
        contiguous_strides(&tl->outputs[0], fs);
        for (uint32_t i = 0; i < d->rank; ++i) {
            os[d->perm[i]] = fs[i];
        }
        out_id = tl->output_ids[0];
        out_info = tl->outputs[0];
        const int64_t pr = consumer(c, out_id);
        if (pr >= 0 && layer_at(c, pr)->kind == PN_LAYER_RESHAPE && add_member(c, pr)) {
            out_id = layer_at(c, pr)->output_ids[0];
            out_info = layer_at(c, pr)->outputs[0];
        }
    }
    /* dims: A [.., sq, d] B [.., d, sk] V [.., sk, dv] out [.., sq, dv] */
    const uint32_t r = scores->rank, nb = r - 2;
    const int64_t sq = scores->dims[r - 2], sk = scores->dims[r - 1];
    const int64_t dd = q.dims[q.rank - 1], dv = v.dims[v.rank - 1];
    if (q.dims[q.rank - 2] != sq || k.dims[k.rank - 2] != dd || k.dims[k.rank - 1] != sk ||
        v.dims[v.rank - 2] != sk || oi->dims[r - 2] != sq || oi->dims[r - 1] != dv || nb > PN_MAX_DIMS - 2 ||
        sk < 1) {
        return 0;
    }
    for (uint32_t i = 0; i < nb; ++i) {
        if (oi->dims[i] != scores->dims[i]) {
            return 0; /* V broadcasting P's batch larger */
        }
    }
    accel_attention* a = (accel_attention*)calloc(1, sizeof(*a));
    if (a == NULL) {
        return -1;
    }
    a->magic = ACCEL_ATTN_MAGIC;
    a->batch_rank = nb;
    for (uint32_t i = 0; i < nb; ++i) {
        a->bdims[i] = scores->dims[i];
        a->ob[i] = os[i];
    }
    /* one mask added at the scores' own shape: an input of the layer, read through broadcast
     * strides; several, or any behind a Reshape: all constant, summed now into one of the
     * scores' shape that the payload owns */
    const int has_mask = mc.count > 0;
    const int mask_input = mc.count == 1 && !mc.reshaped;
    int64_t ms[PN_MAX_DIMS] = {0};
    if (!batch_strides(&q, nb, a->bdims, a->qb) || !batch_strides(&k, nb, a->bdims, a->kb) ||
        !batch_strides(&v, nb, a->bdims, a->vb) ||
        (mask_input && pn_broadcast_strides(&mc.info[0], scores, ms) != 0)) {
        free(a);
        return 0;
    }
    if (has_mask && !mask_input) {
        const int made = combine_masks(&mc, scores, &a->own_mask);
        if (made <= 0) {
            free(a);
            return made;
        }
        contiguous_strides(scores, ms);
    }
    for (uint32_t i = 0; i < nb; ++i) {
        a->mb[i] = ms[i];
    }
    a->sq = sq;
    a->sk = sk;
    a->d = dd;
    a->dv = dv;
    a->q_rs = q.strides[q.rank - 2];
    a->q_cs = q.strides[q.rank - 1];
    a->k_ps = k.strides[k.rank - 2];
    a->k_js = k.strides[k.rank - 1];
    a->v_js = v.strides[v.rank - 2];
    a->v_cs = v.strides[v.rank - 1];
    a->m_rs = ms[nb];
    a->m_cs = ms[nb + 1];
    a->o_rs = os[r - 2];
    a->o_cs = os[r - 1];
    a->scale = (float)scale;
    const operand* ops[3] = {&q, &k, &v};
    for (uint32_t i = 0; i < 3; ++i) {
        m->input_ids[i] = ops[i]->id;
        m->inputs[i] = ops[i]->info;
        m->constants[i] = NULL;
        a->inputs[i] = ops[i]->info;
    }
    m->num_inputs = 3;
    if (mask_input) {
        m->input_ids[3] = mc.id[0];
        m->inputs[3] = mc.info[0];
        m->constants[3] = mc.data[0];
        a->inputs[3] = mc.info[0];
        m->num_inputs = 4;
    }
    a->num_inputs = m->num_inputs;
    a->output = out_info;
    snprintf(a->label, sizeof(a->label),
             "attention: %lld x %lld batch(es) of [%lld, %lld] x [%lld, %lld]^T, scale %g%s, softmax, x V [%lld, %lld]",
             (long long)(nb > 0 ? a->bdims[0] : 1), (long long)(nb > 1 ? a->bdims[nb - 1] : 1), (long long)sq,
             (long long)dd, (long long)sk, (long long)dd, (double)a->scale,
             !has_mask ? "" : mask_input ? ", mask" : ", constant masks summed",
             (long long)sk, (long long)dv);
    for (uint32_t i = 0; i < 4; ++i) {
        a->inputs[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
    }
    a->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    m->kind = PN_LAYER_PRECOMPILED;
    m->payload = a;
    m->output_id = out_id;
    m->output = out_info;
    return 1;
}

/* ---- Reshape-transpose (index_copy.h) ------------------------------------------------------------ */

static int is_reshape(const pn_layer* l) {
    return (l->kind == PN_LAYER_RESHAPE || l->kind == PN_LAYER_COPY) && l->num_inputs == 1;
}

/* Transpose `t` with the Reshape (or Copy) that only feeds it and / or the one that only it
 * feeds: one PRECOMPILED copy (at least one Reshape, else the Transpose stays as it is). */
static int match_reshape_transpose(pat_ctx* c, int64_t t, pat_match* m) {
    const pn_layer* tl = layer_at(c, t);
    if (tl->kind != PN_LAYER_TRANSPOSE || tl->num_inputs != 1) {
        return 0;
    }
    const pn_transpose_desc* d = (const pn_transpose_desc*)tl->descriptor;
    const pn_tensor_info* a = &tl->inputs[0]; /* the shape the permutation applies to */
    c->num_members = 0;
    add_member(c, t);
    uint32_t in_id = tl->input_ids[0];
    pn_tensor_info in_info = *a;
    const int64_t pr = prod(c, in_id);
    if (pr >= 0 && inner(c, in_id, 1) && is_reshape(layer_at(c, pr)) && add_member(c, pr)) {
        in_id = layer_at(c, pr)->input_ids[0];
        in_info = layer_at(c, pr)->inputs[0];
    }
    uint32_t out_id = tl->output_ids[0];
    pn_tensor_info out_info = tl->outputs[0];
    const int64_t nr = consumer(c, out_id);
    if (nr >= 0 && is_reshape(layer_at(c, nr)) && add_member(c, nr)) {
        out_id = layer_at(c, nr)->output_ids[0];
        out_info = layer_at(c, nr)->outputs[0];
    }
    if (c->num_members < 2 || in_info.dtype != out_info.dtype || d->rank != a->rank) {
        return 0;
    }
    /* only a transpose whose innermost output run is contiguous in x: a strided one keeps the
     * Transpose layer's 16 x 16 block transposes (YOLO's [.., 85, H, W] -> [.., H, W, 85]) */
    int64_t as[PN_MAX_DIMS];
    contiguous_strides(a, as);
    int32_t last = (int32_t)d->rank - 1;
    while (last > 0 && tl->outputs[0].dims[last] == 1) --last;
    if (d->rank > 0 && as[d->perm[last]] != 1) {
        return 0;
    }
    accel_index_copy* p = (accel_index_copy*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return -1;
    }
    p->magic = ACCEL_INDEX_COPY_MAGIC;
    p->rank = d->rank;
    for (uint32_t i = 0; i < d->rank; ++i) {
        p->dims[i] = tl->outputs[0].dims[i];
        p->xs[i] = as[d->perm[i]];
    }
    p->input = in_info;
    p->output = out_info;
    p->input.struct_size = p->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    p->input.extension = p->output.extension = NULL;
    int at = snprintf(p->label, sizeof(p->label), "reshape-transpose: rank %u perm (", d->rank);
    for (uint32_t i = 0; i < d->rank && at > 0 && (size_t)at < sizeof(p->label); ++i) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, i > 0 ? ", %u" : "%u", d->perm[i]);
    }
    if (at > 0 && (size_t)at < sizeof(p->label)) {
        snprintf(p->label + at, sizeof(p->label) - (size_t)at, "), one copy");
    }
    m->kind = PN_LAYER_PRECOMPILED;
    m->own.payload = p;
    m->own.release = accel_index_copy_release;
    m->own.label = p->label;
    m->num_inputs = 1;
    m->input_ids[0] = in_id;
    m->inputs[0] = in_info;
    m->constants[0] = NULL;
    m->output_id = out_id;
    m->output = out_info;
    return 1;
}

/* ---- Batch normalization + activation (batch_norm.h) ------------------------------------------- */

/* A BATCH_NORMALIZATION with constant scale, bias, mean and var, and the ACTIVATION that alone
 * reads its output: one PRECOMPILED layer. */
static int match_bn_activation(pat_ctx* c, int64_t i, pat_match* m) {
    const pn_layer* bn = layer_at(c, i);
    const void* const* k = bn->constant_data;
    if (bn->kind != PN_LAYER_BATCH_NORMALIZATION || bn->num_inputs != 5 || k == NULL || k[1] == NULL ||
        k[2] == NULL || k[3] == NULL || k[4] == NULL) {
        return 0;
    }
    const int64_t a = consumer(c, bn->output_ids[0]);
    if (a < 0 || layer_at(c, a)->kind != PN_LAYER_ACTIVATION) {
        return 0;
    }
    const pn_layer* al = layer_at(c, a);
    if (al->outputs[0].dtype != bn->outputs[0].dtype || !pn_same_dims(&al->outputs[0], &bn->outputs[0])) {
        return 0;
    }
    c->num_members = 0;
    add_member(c, i);
    add_member(c, a);
    accel_bn_act* p = accel_bn_act_new(bn, (const pn_activation_desc*)al->descriptor);
    if (p == NULL) {
        return -1;
    }
    m->kind = PN_LAYER_PRECOMPILED;
    m->own.payload = p;
    m->own.release = accel_bn_act_release;
    m->own.label = p->label;
    m->num_inputs = 1;
    m->input_ids[0] = bn->input_ids[0];
    m->inputs[0] = bn->inputs[0];
    m->constants[0] = NULL;
    m->output_id = al->output_ids[0];
    m->output = al->outputs[0];
    return 1;
}

/* ---- Building the result ---------------------------------------------------------------------- */

static int cmp_u32(const void* a, const void* b) {
    const uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
    return x < y ? -1 : x > y;
}

/* The members' names joined (accel_fused_name), in layer order. */
static char* joined_name(const pat_ctx* c) {
    int64_t layers[MAX_MEMBERS];
    for (uint32_t k = 0; k < c->num_members; ++k) {
        layers[k] = (int64_t)c->members[k];
    }
    return accel_fused_name(c->sg, layers, c->num_members);
}

/* The item of match m over the current members; 0 when the backend refuses the replacement
 * (nothing kept), -1 when out of memory. */
static int make_item(pat_ctx* c, const pat_match* m, pat_item* it) {
    memset(it, 0, sizeof(*it));
    qsort(c->members, c->num_members, sizeof(uint32_t), cmp_u32);
    it->num_replaced = c->num_members;
    for (uint32_t k = 0; k < c->num_members; ++k) {
        it->replaced[k] = layer_at(c, c->members[k])->id;
    }
    it->sink = c->members[c->num_members - 1];
    for (uint32_t i = 0; i < m->num_inputs; ++i) {
        it->inputs[i] = m->inputs[i];
        it->inputs[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        it->input_ids[i] = m->input_ids[i];
        it->constants[i] = m->constants[i];
    }
    it->output = m->output;
    it->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    it->output_id = m->output_id;
    pn_layer* r = &it->layer;
    r->struct_size = (uint32_t)sizeof(pn_layer);
    r->kind = m->kind;
    switch (m->kind) {
    case PN_LAYER_ACTIVATION: it->desc.act = m->act; break;
    case PN_LAYER_NORMALIZATION: it->desc.norm = m->norm; break;
    default:
        if (m->own.payload != NULL) { /* a reshape-transpose, a batch normalization with its activation */
            it->desc.pre.struct_size = (uint32_t)sizeof(pn_precompiled_desc);
            it->desc.pre.payload = m->own.payload;
            it->desc.pre.release_payload = m->own.release;
            it->desc.pre.label = m->own.label;
            it->own = m->own;
            break;
        }
        it->desc.pre.struct_size = (uint32_t)sizeof(pn_precompiled_desc);
        it->desc.pre.payload = m->payload;
        it->desc.pre.release_payload = accel_attention_release;
        it->desc.pre.label = m->payload->label;
        it->payload = m->payload;
        break;
    }
    r->descriptor = &it->desc;
    r->num_inputs = m->num_inputs;
    r->inputs = it->inputs;
    r->constant_data = it->constants;
    r->num_outputs = 1;
    r->outputs = &it->output;
    r->input_ids = it->input_ids;
    r->output_ids = &it->output_id;
    if (m->kind != PN_LAYER_PRECOMPILED) {
        char reason[FUSION_REASON_MAX];
        pn_string_out out = {reason, sizeof(reason)};
        r->name = layer_at(c, it->sink)->name;
        if (pn_plugin_check_layer(c->plugin, r, &out) != PN_OK) {
            return 0;
        }
    }
    it->name = joined_name(c);
    if (it->name == NULL) { /* the caller releases the match's payload (m->payload, m->own) */
        it->payload = NULL;
        it->own.payload = NULL;
        return -1;
    }
    r->name = it->name;
    for (uint32_t k = 0; k < c->num_members; ++k) {
        c->taken[c->members[k]] = 1;
    }
    return 1;
}

/* Counts, producers and checks of the subgraph's tensors and layers; 0 when out of memory or
 * when the tensor ids are too large for tables. */
static int ctx_init(pat_ctx* c, const pn_subgraph* sg, const pn_plugin* plugin) {
    memset(c, 0, sizeof(*c));
    c->sg = sg;
    c->plugin = plugin;
    if (!accel_tensor_table_build(sg, &c->t)) {
        return 0;
    }
    const size_t nl = sg->num_layers > 0 ? sg->num_layers : 1;
    c->ok = (unsigned char*)calloc(nl, 1);
    c->taken = (unsigned char*)calloc(nl, 1);
    if (c->ok == NULL || c->taken == NULL) {
        return 0;
    }
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        const pn_layer* l = &sg->layers[i];
        char reason[FUSION_REASON_MAX];
        pn_string_out out = {reason, sizeof(reason)};
        c->ok[i] = l->num_outputs == 1 && l->kind != PN_LAYER_PRECOMPILED &&
                   pn_plugin_check_layer(plugin, l, &out) == PN_OK;
    }
    return 1;
}

static void ctx_free(pat_ctx* c) {
    accel_tensor_table_free(&c->t);
    free(c->ok);
    free(c->taken);
}

/* The view: the subgraph's layers not in a match, each match's layer where its last was. */
static int make_view(accel_patterns* p, const pn_subgraph* sg, const unsigned char* taken) {
    const uint32_t n = sg->num_layers;
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; ++i) {
        count += taken[i] ? 0u : 1u;
    }
    count += p->num_items;
    p->layers = (pn_layer*)calloc(count > 0 ? count : 1, sizeof(pn_layer));
    if (p->layers == NULL) {
        return 0;
    }
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (!taken[i]) {
            p->layers[w++] = sg->layers[i];
        }
        for (uint32_t k = 0; k < p->num_items; ++k) {
            if (p->items[k].sink == i) {
                p->layers[w] = p->items[k].layer;
                p->layers[w].id = p->first_id + k;
                ++w;
            }
        }
    }
    p->view = *sg;
    p->view.num_layers = w;
    p->view.layers = p->layers;
    return 1;
}

typedef int (*matcher)(pat_ctx*, int64_t, pat_match*);

pn_status accel_find_patterns(const pn_subgraph* sg, const pn_plugin* plugin, accel_patterns** out) {
    *out = NULL;
    pat_ctx c;
    accel_patterns* p = (accel_patterns*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return PN_ERR_OUT_OF_MEMORY;
    }
    if (!ctx_init(&c, sg, plugin)) {
        const int too_large = c.t.max_id >= ACCEL_MAX_TENSOR_ID;
        ctx_free(&c);
        free(p);
        return too_large ? PN_OK : PN_ERR_OUT_OF_MEMORY; /* ids too large for tables: no patterns */
    }
    p->items = (pat_item*)calloc(sg->num_layers > 0 ? sg->num_layers : 1, sizeof(pat_item));
    if (p->items == NULL) {
        ctx_free(&c);
        free(p);
        return PN_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        p->first_id = sg->layers[i].id >= p->first_id ? sg->layers[i].id + 1 : p->first_id;
    }
    if (p->first_id > UINT32_MAX - sg->num_layers) { /* no room for ids of our own */
        ctx_free(&c);
        accel_patterns_release(p, 1);
        return PN_OK;
    }
    /* attention first (it holds Mul and Add layers of its own), then the others */
    static const matcher matchers[] = {match_attention, match_layer_norm, match_gelu_erf, match_gelu_tanh,
                                       match_swish,
                                       match_reshape_transpose, match_bn_activation};
    pn_status s = PN_OK;
    for (size_t mi = 0; mi < sizeof(matchers) / sizeof(matchers[0]) && s == PN_OK; ++mi) {
        for (uint32_t i = 0; i < sg->num_layers && s == PN_OK; ++i) {
            if (!c.ok[i] || c.taken[i]) {
                continue;
            }
            pat_match m;
            memset(&m, 0, sizeof(m));
            c.num_members = 0;
            const int found = matchers[mi](&c, (int64_t)i, &m);
            if (found < 0) {
                s = PN_ERR_OUT_OF_MEMORY;
            } else if (found > 0) {
                const int made = make_item(&c, &m, &p->items[p->num_items]);
                if (made > 0) {
                    ++p->num_items;
                } else {
                    accel_attention_release(m.payload);
                    own_release(&m.own);
                    s = made < 0 ? PN_ERR_OUT_OF_MEMORY : PN_OK;
                }
            }
        }
    }
    if (s == PN_OK && p->num_items > 0 && !make_view(p, sg, c.taken)) {
        s = PN_ERR_OUT_OF_MEMORY;
    }
    ctx_free(&c);
    if (s != PN_OK || p->num_items == 0) {
        accel_patterns_release(p, 1);
        return s;
    }
    *out = p;
    return PN_OK;
}

/* ---- After the later passes -------------------------------------------------------------------- */

static int keep_list(accel_patterns* p, uint32_t* list) {
    uint32_t** grown = (uint32_t**)realloc(p->lists, (p->num_lists + 1) * sizeof(*grown));
    if (grown == NULL) {
        free(list);
        return 0;
    }
    p->lists = grown;
    p->lists[p->num_lists++] = list;
    return 1;
}

pn_status accel_patterns_finish(accel_patterns* p, accel_optimization* o) {
    /* substitutions that took a match: its layers instead of its id */
    for (uint32_t k = 0; k < o->base.num_substitutions; ++k) {
        pn_substitution* sub = &o->substitutions[k];
        uint32_t count = 0;
        int any = 0;
        for (uint32_t i = 0; i < sub->num_replaced_layer_ids; ++i) {
            const pat_item* it = item_of(p, sub->replaced_layer_ids[i]);
            count += it != NULL ? it->num_replaced : 1u;
            any |= it != NULL;
        }
        if (!any) {
            continue;
        }
        uint32_t* list = (uint32_t*)malloc(count * sizeof(uint32_t));
        if (list == NULL || !keep_list(p, list)) {
            return PN_ERR_OUT_OF_MEMORY;
        }
        uint32_t w = 0;
        for (uint32_t i = 0; i < sub->num_replaced_layer_ids; ++i) {
            pat_item* it = item_of(p, sub->replaced_layer_ids[i]);
            if (it == NULL) {
                list[w++] = sub->replaced_layer_ids[i];
                continue;
            }
            it->claimed = 1;
            if (it->own.payload != NULL) { /* a batch normalization a chain took (it keeps a copy) */
                own_release(&it->own);
                it->desc.pre.payload = NULL;
            }
            memcpy(list + w, it->replaced, it->num_replaced * sizeof(uint32_t));
            w += it->num_replaced;
        }
        qsort(list, count, sizeof(uint32_t), cmp_u32);
        sub->replaced_layer_ids = list;
        sub->num_replaced_layer_ids = count;
    }
    /* matches left untouched, and the PRECOMPILED ones: a substitution each */
    uint32_t w = 0;
    for (uint32_t i = 0; i < o->base.num_untouched; ++i) {
        if (item_of(p, o->untouched[i]) == NULL) {
            o->untouched[w++] = o->untouched[i];
        }
    }
    o->base.num_untouched = w;
    for (uint32_t k = 0; k < p->num_items; ++k) {
        pat_item* it = &p->items[k];
        if (it->claimed) {
            continue;
        }
        pn_substitution* sub = &o->substitutions[o->base.num_substitutions++];
        memset(sub, 0, sizeof(*sub));
        sub->struct_size = (uint32_t)sizeof(pn_substitution);
        sub->num_replaced_layer_ids = it->num_replaced;
        sub->replaced_layer_ids = it->replaced;
        sub->replacement = it->layer;
        sub->replacement.constant_data = NULL; /* the runtime knows its constants by tensor id */
        it->claimed = 1;
    }
    return PN_OK;
}
