/* CpuAcc linear fusion (rules in opt/linear_fusion.h): a MatMul or Gemm with constant weights and
 * its bias, residual, activation and Reshapes as one fused linear layer (ops/fused_linear.h). */
#include "opt/linear_fusion.h"
#include "ops/fused_linear.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINEAR_MAX_MEMBERS 16 /* layers of one fusion, at most */

#define LINEAR_MAX_INPUTS (1 + 2 * ACCEL_LINEAR_GROUP_MAX) /* a, b, bias, residual, normalization scale
                                                           and bias; a group's a, b's and biases */

typedef struct linear_slot {
    uint32_t replaced[LINEAR_MAX_MEMBERS];
    pn_tensor_info inputs[LINEAR_MAX_INPUTS]; /* the replacement's (fusion_item holds 4 at most) */
    uint32_t input_ids[LINEAR_MAX_INPUTS];
    accel_linear* payload;
    accel_linear_group* group; /* sibling projections: their payload, outputs and output ids */
    pn_tensor_info outputs[ACCEL_LINEAR_GROUP_MAX];
    uint32_t output_ids[ACCEL_LINEAR_GROUP_MAX];
} linear_slot;

struct accel_linear_fusions {
    linear_slot* slots; /* one per substitution index (o->items' index) */
    uint32_t capacity;
};

void accel_linear_fusions_release(accel_linear_fusions* f, int owns_payloads) {
    if (f == NULL) {
        return;
    }
    if (owns_payloads) {
        for (uint32_t i = 0; i < f->capacity; ++i) {
            accel_linear_release(f->slots[i].payload);
            free(f->slots[i].group);
        }
    }
    free(f->slots);
    free(f);
}

/* ---- The subgraph's tensors ------------------------------------------------------------- */

typedef struct lin_ctx {
    const pn_subgraph* sg;
    const unsigned char* state;
    accel_tensor_table t;     /* producers, reads and outputs by tensor id */
} lin_ctx;

static void ctx_free(lin_ctx* c) { accel_tensor_table_free(&c->t); }

/* 1, or 0 when out of memory or when the ids are too large for tables (c->t.max_id says which). */
static int ctx_init(lin_ctx* c, const pn_subgraph* sg, const unsigned char* state) {
    memset(c, 0, sizeof(*c));
    c->sg = sg;
    c->state = state;
    return accel_tensor_table_build(sg, &c->t);
}

/* Tensor id is read by exactly one layer, once, and is not a subgraph output. */
static int single_use(const lin_ctx* c, uint32_t id) {
    return id <= c->t.max_id && c->t.uses[id] == 1 && !c->t.is_output[id];
}

/* The one layer that reads tensor id when it is a candidate (single_use), else -1. */
static int64_t next_layer(const lin_ctx* c, uint32_t id) {
    if (!single_use(c, id)) {
        return -1;
    }
    for (uint32_t j = 0; j < c->sg->num_layers; ++j) {
        const pn_layer* l = &c->sg->layers[j];
        for (uint32_t k = 0; k < l->num_inputs; ++k) {
            if (l->input_ids[k] == id) {
                return c->state[j] == LAYER_CANDIDATE && l->num_outputs == 1 ? (int64_t)j : -1;
            }
        }
    }
    return -1;
}

static const void* constant_of(const pn_layer* l, uint32_t slot) {
    return l->constant_data != NULL ? l->constant_data[slot] : NULL;
}

/* t's dims are all 1 but the last, which is n (rank 0: n is 1). */
static int is_row_vector(const pn_tensor_info* t, int64_t n) {
    if (t->rank == 0) {
        return n == 1;
    }
    for (uint32_t i = 0; i + 1 < t->rank; ++i) {
        if (t->dims[i] != 1) {
            return 0;
        }
    }
    return t->dims[t->rank - 1] == n;
}

static int64_t last_dim(const pn_tensor_info* t) { return t->rank > 0 ? t->dims[t->rank - 1] : 1; }

/* ---- One fusion's links ----------------------------------------------------------------- */

typedef struct lin_links {
    int64_t head, reshape_in;      /* -1: none */
    int64_t bias_add, residual_add, act, norm, last;
    int64_t split;                 /* a Split of the last link's output along its last axis, or -1 */
    uint32_t bias_slot, addend_slot;
    int reshapes;                  /* Reshapes fused (before and after) */
    int64_t members[LINEAR_MAX_MEMBERS];
    uint32_t num_members;
    int64_t k, n;
    int is_fc;
} lin_links;

static int add_member(lin_links* L, int64_t i) {
    if (L->num_members >= LINEAR_MAX_MEMBERS) {
        return 0;
    }
    L->members[L->num_members++] = i;
    return 1;
}

/* Whether layer h can head a fusion (K, N into L); FullyConnected's c decides the bias. */
static int head_ok(const pn_layer* h, lin_links* L) {
    if (h->num_outputs != 1 || h->outputs[0].dtype != PN_DTYPE_FLOAT32) {
        return 0;
    }
    if (h->kind == PN_LAYER_MATMUL) {
        if (h->num_inputs != 2 || constant_of(h, 1) == NULL) {
            return 0;
        }
        const pn_tensor_info* a = &h->inputs[0];
        const pn_tensor_info* b = &h->inputs[1];
        if (a->rank < 1 || b->rank < 2) {
            return 0;
        }
        for (uint32_t i = 0; i + 2 < b->rank; ++i) {
            if (b->dims[i] != 1) {
                return 0;
            }
        }
        L->k = a->dims[a->rank - 1];
        L->n = b->dims[b->rank - 1];
        L->is_fc = 0;
        return b->dims[b->rank - 2] == L->k;
    }
    if (h->kind != PN_LAYER_FULLY_CONNECTED) {
        return 0;
    }
    const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)h->descriptor;
    if (d == NULL || d->transpose_a || (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0 || d->fused_activation != NULL ||
        h->num_inputs < 2 || constant_of(h, 1) == NULL || h->inputs[0].rank != 2 || h->outputs[0].rank != 2) {
        return 0;
    }
    L->k = h->inputs[0].dims[1];
    L->n = h->outputs[0].dims[1];
    L->is_fc = 1;
    if ((d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0) {
        if (h->num_inputs != 3 || constant_of(h, 2) == NULL || !is_row_vector(&h->inputs[2], L->n)) {
            return 0;
        }
        L->bias_slot = 2;
    }
    return 1;
}

/* Stages of the chain after the head: links come in this order (Reshapes anywhere). */
enum { STAGE_PRODUCT = 0, STAGE_BIAS = 1, STAGE_RESIDUAL = 2, STAGE_ACT = 3, STAGE_NORM = 4 };

/* The link layer `j` makes after tensor `t` (read by it) at `stage`: the new stage, or -1 when
 * it is none. */
static int link_of(const lin_links* L, const pn_layer* l, const pn_tensor_info* t, uint32_t t_id, int stage,
                   int has_bias, uint32_t* slot_out) {
    switch (l->kind) {
    case PN_LAYER_RESHAPE:
        return l->num_inputs == 1 && last_dim(&l->outputs[0]) == L->n && l->outputs[0].rank >= 1 ? stage : -1;
    case PN_LAYER_ACTIVATION:
        return stage < STAGE_ACT && l->num_inputs == 1 ? STAGE_ACT : -1;
    case PN_LAYER_NORMALIZATION: { /* LAYER or RMS over the last axis, x the chain's tensor */
        const pn_normalization_desc* d = (const pn_normalization_desc*)l->descriptor;
        const int has_b = d != NULL && (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
        if (d == NULL || stage >= STAGE_NORM || (d->op != PN_NORMALIZATION_LAYER && d->op != PN_NORMALIZATION_RMS) ||
            t->rank < 1 || (d->axis != -1 && d->axis != (int32_t)t->rank - 1) || last_dim(t) != L->n ||
            l->num_inputs != 2u + (has_b ? 1u : 0u) || l->input_ids[0] != t_id ||
            l->outputs[0].dtype != PN_DTYPE_FLOAT32 || !pn_same_dims(&l->outputs[0], t)) {
            return -1;
        }
        for (uint32_t i = 1; i < l->num_inputs; ++i) {
            if (constant_of(l, i) == NULL || l->inputs[i].dtype != PN_DTYPE_FLOAT32 ||
                !is_row_vector(&l->inputs[i], L->n)) {
                return -1;
            }
        }
        return STAGE_NORM;
    }
    case PN_LAYER_ELEMENTWISE_BINARY: {
        const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)l->descriptor;
        if (d == NULL || d->op != PN_BINARY_ADD || d->fused_activation != NULL || l->num_inputs != 2 ||
            stage >= STAGE_RESIDUAL) {
            return -1;
        }
        const uint32_t slot = l->input_ids[0] == t_id ? 1u : 0u;
        const pn_tensor_info* other = &l->inputs[slot];
        if (l->outputs[0].dtype != PN_DTYPE_FLOAT32 || other->dtype != PN_DTYPE_FLOAT32 ||
            !pn_same_dims(&l->outputs[0], t)) {
            return -1;
        }
        *slot_out = slot;
        if (stage < STAGE_BIAS && !has_bias && constant_of(l, slot) != NULL && other->rank <= t->rank &&
            is_row_vector(other, L->n) && last_dim(t) == L->n) {
            return STAGE_BIAS;
        }
        return pn_same_dims(other, t) ? STAGE_RESIDUAL : -1;
    }
    default:
        return -1;
    }
}

/* The Split (accepted by the backend's check, not yet claimed: several outputs make it a kept
 * layer) that alone reads layer `last`'s output, along its last axis into 2 ..
 * ACCEL_LINEAR_GROUP_MAX float32 pieces, else -1. */
static int64_t split_after(const lin_ctx* c, int64_t last, const lin_links* L) {
    const uint32_t id = c->sg->layers[last].output_ids[0];
    if (!single_use(c, id)) {
        return -1;
    }
    for (uint32_t j = 0; j < c->sg->num_layers; ++j) {
        const pn_layer* l = &c->sg->layers[j];
        if (l->num_inputs < 1 || l->input_ids[0] != id) {
            continue;
        }
        const pn_split_desc* d = (const pn_split_desc*)l->descriptor;
        const pn_tensor_info* x = &l->inputs[0];
        if ((c->state[j] != LAYER_CANDIDATE && c->state[j] != LAYER_KEPT) || l->kind != PN_LAYER_SPLIT || d == NULL || l->num_inputs != 1 ||
            x->rank < 1 || (d->axis != -1 && d->axis != (int32_t)x->rank - 1) || last_dim(x) != L->n ||
            l->num_outputs < 2 || l->num_outputs > ACCEL_LINEAR_GROUP_MAX) {
            return -1;
        }
        for (uint32_t q = 0; q < l->num_outputs; ++q) {
            if (l->outputs[q].dtype != PN_DTYPE_FLOAT32) {
                return -1;
            }
        }
        return (int64_t)j;
    }
    return -1;
}

/* The longest links headed by layer h (L->num_members 0: none worth fusing). */
static void find_links(const lin_ctx* c, uint32_t h, lin_links* L) {
    const pn_subgraph* sg = c->sg;
    memset(L, 0, sizeof(*L));
    L->head = L->reshape_in = L->bias_add = L->residual_add = L->act = L->norm = L->split = -1;
    L->last = h;
    const pn_layer* head = &sg->layers[h];
    if (!head_ok(head, L)) {
        return;
    }
    add_member(L, h);
    /* the Reshape before the head */
    const uint32_t a_id = head->input_ids[0];
    const int64_t p = a_id <= c->t.max_id ? c->t.producer[a_id] : -1;
    if (p >= 0 && c->state[p] == LAYER_CANDIDATE && sg->layers[p].kind == PN_LAYER_RESHAPE &&
        sg->layers[p].num_inputs == 1 && sg->layers[p].num_outputs == 1 && single_use(c, a_id) &&
        sg->layers[p].inputs[0].rank >= 1 && last_dim(&sg->layers[p].inputs[0]) == L->k &&
        sg->layers[p].inputs[0].dtype == PN_DTYPE_FLOAT32) {
        L->reshape_in = p;
        ++L->reshapes;
        add_member(L, p);
    }
    int stage = STAGE_PRODUCT;
    int has_bias = L->is_fc && L->bias_slot == 2;
    int64_t cur = h;
    for (;;) {
        const pn_layer* from = &sg->layers[cur];
        const int64_t j = next_layer(c, from->output_ids[0]);
        if (j < 0 || L->num_members >= LINEAR_MAX_MEMBERS) {
            break;
        }
        const pn_layer* l = &sg->layers[j];
        uint32_t slot = 0;
        const int next = link_of(L, l, &from->outputs[0], from->output_ids[0], stage, has_bias, &slot);
        if (next < 0) {
            break;
        }
        if (l->kind == PN_LAYER_RESHAPE) {
            ++L->reshapes;
        } else if (next == STAGE_BIAS) {
            L->bias_add = j;
            L->bias_slot = slot;
            has_bias = 1;
        } else if (next == STAGE_RESIDUAL) {
            L->residual_add = j;
            L->addend_slot = slot;
        } else if (next == STAGE_NORM) {
            L->norm = j;
        } else {
            L->act = j;
        }
        stage = next;
        add_member(L, j);
        cur = j;
    }
    L->head = h;
    L->last = cur;
    const int64_t sp = split_after(c, cur, L);
    if (sp >= 0 && L->norm < 0 && add_member(L, sp)) {
        L->split = sp;
    }
    const int worth = L->split >= 0 || (L->is_fc ? L->reshapes > 0 : L->num_members > 1);
    if (!worth) {
        L->num_members = 0;
    }
}

/* ---- Building the replacement ----------------------------------------------------------- */

static const char* act_name(pn_activation_kind kind) {
    static const char* const names[] = {"?", "relu", "clip", "leaky_relu", "sigmoid", "tanh", "elu",
                                        "hard_swish", "hard_sigmoid", "abs", "sqrt", "square", "linear",
                                        "gelu", "gelu_tanh", "swish", "mish", "softplus", "softsign", "selu",
                                        "celu", "thresholded_relu", "shrink", "scaled_tanh"};
    return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

static int cmp_i64(const void* a, const void* b) {
    const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
    return x < y ? -1 : x > y;
}

/* The payload of links L (malloc'd; NULL when out of memory). */
static accel_linear* make_payload(const pn_subgraph* sg, const lin_links* L) {
    accel_linear* p = (accel_linear*)calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    const pn_layer* head = &sg->layers[L->head];
    p->magic = ACCEL_LINEAR_MAGIC;
    p->alpha = 1.0f;
    p->beta = 1.0f;
    if (L->is_fc) {
        const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)head->descriptor;
        p->transpose_b = d->transpose_b != 0;
        p->alpha = d->alpha;
        p->beta = L->bias_slot == 2 && L->bias_add < 0 ? d->beta : 1.0f;
    }
    p->has_bias = L->bias_add >= 0 || (L->is_fc && L->bias_slot == 2);
    p->has_addend = L->residual_add >= 0;
    if (L->norm >= 0) {
        const pn_normalization_desc* d = (const pn_normalization_desc*)sg->layers[L->norm].descriptor;
        p->has_norm = 1;
        p->norm_rms = d->op == PN_NORMALIZATION_RMS;
        p->has_norm_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
        p->norm_eps = d->epsilon;
    }
    p->num_inputs = 2u + (p->has_bias ? 1u : 0u) + (p->has_addend ? 1u : 0u) + (p->has_norm ? 1u : 0u) +
                    (p->has_norm_bias ? 1u : 0u);
    p->num_outputs = 1;
    if (L->split >= 0) {
        const pn_layer* sp = &sg->layers[L->split];
        p->num_outputs = sp->num_outputs;
        for (uint32_t q = 0; q < sp->num_outputs; ++q) {
            p->split_n[q] = last_dim(&sp->outputs[q]);
        }
    }
    if (L->act >= 0) {
        const pn_activation_desc* a = (const pn_activation_desc*)sg->layers[L->act].descriptor;
        p->has_act = 1;
        p->act.struct_size = (uint32_t)sizeof(pn_activation_desc);
        p->act.kind = a->kind;
        p->act.alpha = a->alpha;
        p->act.beta = a->beta;
    }
    int at = snprintf(p->label, sizeof(p->label), "%s [*, %lld] x [%lld, %lld]%s", L->is_fc ? "gemm" : "matmul",
                      (long long)L->k, (long long)L->k, (long long)L->n, p->transpose_b ? "^T" : "");
    if (p->alpha != 1.0f && at >= 0 && (size_t)at < sizeof(p->label)) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, " * %g", (double)p->alpha);
    }
    if (p->has_bias && at >= 0 && (size_t)at < sizeof(p->label)) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, p->beta != 1.0f ? " + %g * bias" : " + bias",
                       (double)p->beta);
    }
    if (p->has_addend && at >= 0 && (size_t)at < sizeof(p->label)) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, " + residual");
    }
    if (p->has_act && at >= 0 && (size_t)at < sizeof(p->label)) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, " + %s(%g, %g)", act_name(p->act.kind),
                       (double)p->act.alpha, (double)p->act.beta);
    }
    if (p->has_norm && at >= 0 && (size_t)at < sizeof(p->label)) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, " + %s(eps %g)",
                       p->norm_rms ? "rms_norm" : "layer_norm", (double)p->norm_eps);
    }
    if (L->reshapes > 0 && at >= 0 && (size_t)at < sizeof(p->label)) {
        at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, ", %d reshape%s absorbed", L->reshapes,
                       L->reshapes > 1 ? "s" : "");
    }
    if (p->num_outputs > 1 && at >= 0 && (size_t)at < sizeof(p->label)) {
        snprintf(p->label + at, sizeof(p->label) - (size_t)at, ", split in %u", p->num_outputs);
    }
    return p;
}

/* Fills item `it` (its replacement `r`) and slot `sl` (the replacement's inputs) for links L. 0
 * when out of memory. */
static int build(const pn_subgraph* sg, const lin_links* L, fusion_item* it, linear_slot* sl, pn_layer* r) {
    const pn_layer* head = &sg->layers[L->head];
    const pn_layer* last = &sg->layers[L->split >= 0 ? L->split : L->last];
    memset(it, 0, sizeof(*it));
    sl->payload = make_payload(sg, L);
    if (sl->payload == NULL) {
        return 0;
    }
    const accel_linear* p = sl->payload;
    uint32_t n = 0;
    const pn_layer* a_from = L->reshape_in >= 0 ? &sg->layers[L->reshape_in] : head;
    sl->inputs[n] = a_from->inputs[0];
    sl->input_ids[n++] = a_from->input_ids[0];
    sl->inputs[n] = head->inputs[1];
    sl->input_ids[n++] = head->input_ids[1];
    if (p->has_bias) {
        const pn_layer* from = L->bias_add >= 0 ? &sg->layers[L->bias_add] : head;
        sl->inputs[n] = from->inputs[L->bias_slot];
        sl->input_ids[n++] = from->input_ids[L->bias_slot];
    }
    if (p->has_addend) {
        const pn_layer* from = &sg->layers[L->residual_add];
        sl->inputs[n] = from->inputs[L->addend_slot];
        sl->input_ids[n++] = from->input_ids[L->addend_slot];
    }
    if (p->has_norm) {
        const pn_layer* from = &sg->layers[L->norm];
        for (uint32_t i = 1; i < from->num_inputs; ++i) {
            sl->inputs[n] = from->inputs[i];
            sl->input_ids[n++] = from->input_ids[i];
        }
    }
    for (uint32_t i = 0; i < n; ++i) {
        sl->inputs[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
    }
    it->output = last->outputs[0];
    it->output.struct_size = (uint32_t)sizeof(pn_tensor_info);
    it->output_id = last->output_ids[0];
    it->desc.pre.struct_size = (uint32_t)sizeof(pn_precompiled_desc);
    it->desc.pre.payload = sl->payload;
    it->desc.pre.release_payload = accel_linear_release;
    it->desc.pre.label = sl->payload->label;
    it->links.head = L->head; /* the chain pass looks for convolution heads only */
    it->links.add = -1;
    it->links.act = -1;
    for (uint32_t k = 0; k < L->num_members; ++k) {
        sl->replaced[k] = sg->layers[L->members[k]].id;
    }
    memset(r, 0, sizeof(*r));
    r->struct_size = (uint32_t)sizeof(pn_layer);
    r->kind = PN_LAYER_PRECOMPILED;
    r->descriptor = &it->desc.pre;
    r->num_inputs = n;
    r->inputs = sl->inputs;
    r->constant_data = NULL; /* the runtime knows its constants by tensor id */
    r->num_outputs = 1;
    r->outputs = &it->output;
    r->input_ids = sl->input_ids;
    r->output_ids = &it->output_id;
    if (L->split >= 0) { /* the Split's pieces are the outputs */
        for (uint32_t q = 0; q < last->num_outputs; ++q) {
            sl->outputs[q] = last->outputs[q];
            sl->outputs[q].struct_size = (uint32_t)sizeof(pn_tensor_info);
            sl->output_ids[q] = last->output_ids[q];
        }
        r->num_outputs = last->num_outputs;
        r->outputs = sl->outputs;
        r->output_ids = sl->output_ids;
    }
    return 1;
}

/* ---- Sibling projections (ops/fused_linear.h's accel_linear_group) ----------------------------------- */

/* Links L are a MatMul with nothing but a bias Add and Reshapes after it, and no Reshape before. */
static int projection_only(const lin_links* L) {
    return L->num_members > 0 && !L->is_fc && L->reshape_in < 0 && L->residual_add < 0 && L->act < 0 &&
           L->norm < 0 && L->split < 0;
}

/* The slots' storage (o->linear), made on the first fusion. */
static int ensure_slots(const pn_subgraph* sg, accel_optimization* o) {
    if (o->linear != NULL) {
        return 1;
    }
    o->linear = (accel_linear_fusions*)calloc(1, sizeof(*o->linear));
    const uint32_t cap = sg->num_layers > 0 ? sg->num_layers : 1;
    if (o->linear == NULL || (o->linear->slots = (linear_slot*)calloc(cap, sizeof(linear_slot))) == NULL) {
        return 0;
    }
    o->linear->capacity = cap;
    return 1;
}

/* Groups of 2 .. ACCEL_LINEAR_GROUP_MAX MatMuls of one tensor a (the same K) whose links are
 * projection_only (a bare MatMul counts: it is one with no bias), in layer order, each group one
 * substitution with one output per product. */
static pn_status fuse_projections(const lin_ctx* c, accel_optimization* o, unsigned char* state) {
    const pn_subgraph* sg = c->sg;
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        if (state[i] != LAYER_CANDIDATE || sg->layers[i].kind != PN_LAYER_MATMUL) {
            continue;
        }
        lin_links first, L[ACCEL_LINEAR_GROUP_MAX];
        find_links(c, i, &first);
        if (first.num_members == 0) { /* a bare MatMul: only the head */
            memset(&first, 0, sizeof(first));
            if (!head_ok(&sg->layers[i], &first)) {
                continue;
            }
            first.head = i;
            first.reshape_in = first.bias_add = first.residual_add = first.act = first.norm = first.split = -1;
            first.last = i;
            first.members[first.num_members++] = i;
        }
        if (!projection_only(&first)) {
            continue;
        }
        const uint32_t a_id = sg->layers[i].input_ids[0];
        uint32_t g = 0, members = 0;
        L[g++] = first;
        members += first.num_members;
        for (uint32_t j = i + 1; j < sg->num_layers && g < ACCEL_LINEAR_GROUP_MAX; ++j) {
            const pn_layer* h = &sg->layers[j];
            if (state[j] != LAYER_CANDIDATE || h->kind != PN_LAYER_MATMUL || h->input_ids[0] != a_id) {
                continue;
            }
            lin_links M;
            find_links(c, j, &M);
            if (M.num_members == 0) {
                memset(&M, 0, sizeof(M));
                if (!head_ok(h, &M)) {
                    continue;
                }
                M.head = j;
                M.reshape_in = M.bias_add = M.residual_add = M.act = M.norm = M.split = -1;
                M.last = j;
                M.members[M.num_members++] = j;
            }
            if (!projection_only(&M) || M.k != first.k || members + M.num_members > LINEAR_MAX_MEMBERS) {
                continue;
            }
            L[g++] = M;
            members += M.num_members;
        }
        if (g < 2 || !ensure_slots(sg, o)) {
            if (g >= 2) {
                return PN_ERR_OUT_OF_MEMORY;
            }
            continue;
        }
        const uint32_t k = o->base.num_substitutions;
        fusion_item* it = &o->items[k];
        linear_slot* sl = &o->linear->slots[k];
        pn_substitution* sub = &o->substitutions[k];
        memset(it, 0, sizeof(*it));
        accel_linear_group* p = (accel_linear_group*)calloc(1, sizeof(*p));
        if (p == NULL) {
            return PN_ERR_OUT_OF_MEMORY;
        }
        sl->group = p;
        p->magic = ACCEL_LINEAR_GROUP_MAGIC;
        p->num_outputs = g;
        int64_t all[LINEAR_MAX_MEMBERS];
        uint32_t n_all = 0, n_in = 0;
        sl->inputs[n_in] = sg->layers[i].inputs[0];
        sl->input_ids[n_in++] = a_id;
        int at = snprintf(p->label, sizeof(p->label), "matmul [*, %lld] x [%lld, ", (long long)first.k,
                          (long long)first.k);
        for (uint32_t q = 0; q < g; ++q) {
            const pn_layer* h = &sg->layers[L[q].head];
            sl->inputs[n_in] = h->inputs[1];
            sl->input_ids[n_in++] = h->input_ids[1];
            p->has_bias[q] = L[q].bias_add >= 0;
            sl->outputs[q] = sg->layers[L[q].last].outputs[0];
            sl->outputs[q].struct_size = (uint32_t)sizeof(pn_tensor_info);
            sl->output_ids[q] = sg->layers[L[q].last].output_ids[0];
            for (uint32_t m = 0; m < L[q].num_members; ++m) {
                all[n_all++] = L[q].members[m];
            }
            if (at >= 0 && (size_t)at < sizeof(p->label)) {
                at += snprintf(p->label + at, sizeof(p->label) - (size_t)at, "%s%lld", q > 0 ? " | " : "",
                               (long long)L[q].n);
            }
        }
        for (uint32_t q = 0; q < g; ++q) {
            if (p->has_bias[q]) {
                const pn_layer* add = &sg->layers[L[q].bias_add];
                sl->inputs[n_in] = add->inputs[L[q].bias_slot];
                sl->input_ids[n_in++] = add->input_ids[L[q].bias_slot];
            }
        }
        if (at >= 0 && (size_t)at < sizeof(p->label)) {
            snprintf(p->label + at, sizeof(p->label) - (size_t)at, "]%s, %u projections of one input",
                     p->has_bias[0] ? " + bias" : "", g);
        }
        p->num_inputs = n_in;
        for (uint32_t q = 0; q < n_in; ++q) {
            sl->inputs[q].struct_size = (uint32_t)sizeof(pn_tensor_info);
        }
        qsort(all, n_all, sizeof(int64_t), cmp_i64); /* names and ids in layer order */
        it->name = accel_fused_name(sg, all, n_all);
        o->base.num_substitutions = k + 1; /* counted now, so release frees the name and payload */
        o->num_items = k + 1;
        if (it->name == NULL) {
            return PN_ERR_OUT_OF_MEMORY;
        }
        it->desc.pre.struct_size = (uint32_t)sizeof(pn_precompiled_desc);
        it->desc.pre.payload = p;
        it->desc.pre.release_payload = free;
        it->desc.pre.label = p->label;
        it->links.head = L[0].head;
        it->links.add = -1;
        it->links.act = -1;
        for (uint32_t m = 0; m < n_all; ++m) {
            sl->replaced[m] = sg->layers[all[m]].id;
            state[all[m]] = LAYER_CLAIMED;
        }
        pn_layer* r = &sub->replacement;
        memset(r, 0, sizeof(*r));
        r->struct_size = (uint32_t)sizeof(pn_layer);
        r->kind = PN_LAYER_PRECOMPILED;
        r->name = it->name;
        r->descriptor = &it->desc.pre;
        r->num_inputs = n_in;
        r->inputs = sl->inputs;
        r->num_outputs = g;
        r->outputs = sl->outputs;
        r->input_ids = sl->input_ids;
        r->output_ids = sl->output_ids;
        sub->struct_size = (uint32_t)sizeof(pn_substitution);
        sub->num_replaced_layer_ids = n_all;
        sub->replaced_layer_ids = sl->replaced;
    }
    return PN_OK;
}

pn_status accel_fuse_linear(const pn_subgraph* sg, const pn_plugin* plugin, accel_optimization* o,
                            unsigned char* state) {
    (void)plugin; /* candidates passed its check when opt/optimize.c sorted the layers */
    lin_ctx c;
    if (!ctx_init(&c, sg, state)) {
        const int too_large = c.t.max_id >= ACCEL_MAX_TENSOR_ID;
        ctx_free(&c);
        return too_large ? PN_OK : PN_ERR_OUT_OF_MEMORY; /* ids too large for tables: no fusions */
    }
    pn_status s = fuse_projections(&c, o, state);
    for (uint32_t i = 0; i < sg->num_layers && s == PN_OK; ++i) {
        const pn_layer_kind kind = sg->layers[i].kind;
        if (state[i] != LAYER_CANDIDATE || (kind != PN_LAYER_MATMUL && kind != PN_LAYER_FULLY_CONNECTED)) {
            continue;
        }
        lin_links L;
        find_links(&c, i, &L);
        if (L.num_members == 0) { /* every member a candidate: it passed the backend's check */
            continue;
        }
        if (!ensure_slots(sg, o)) {
            s = PN_ERR_OUT_OF_MEMORY;
            break;
        }
        qsort(L.members, L.num_members, sizeof(int64_t), cmp_i64); /* names and ids in layer order */
        const uint32_t k = o->base.num_substitutions;
        fusion_item* it = &o->items[k];
        linear_slot* sl = &o->linear->slots[k];
        pn_substitution* sub = &o->substitutions[k];
        if (!build(sg, &L, it, sl, &sub->replacement)) {
            s = PN_ERR_OUT_OF_MEMORY;
            break;
        }
        it->name = accel_fused_name(sg, L.members, L.num_members);
        o->base.num_substitutions = k + 1; /* counted now, so release frees the name and payload */
        o->num_items = k + 1;
        if (it->name == NULL) {
            s = PN_ERR_OUT_OF_MEMORY;
            break;
        }
        sub->struct_size = (uint32_t)sizeof(pn_substitution);
        sub->num_replaced_layer_ids = L.num_members;
        sub->replaced_layer_ids = sl->replaced;
        sub->replacement.name = it->name;
        for (uint32_t m = 0; m < L.num_members; ++m) {
            state[L.members[m]] = LAYER_CLAIMED;
        }
    }
    ctx_free(&c);
    return s;
}
