/*
 * CpuAcc's pattern matcher as its families see it (opt/patterns.h has the rules; opt/patterns.c
 * runs the families over the subgraph and builds the result): the subgraph with its tensor
 * table, the layers a match took so far, the tests the families share, what a match gives,
 * and one matcher per family, each in a file of its own:
 *   opt/pattern_activations.c      GELU (erf and tanh), SiLU and hard swish
 *   opt/pattern_layer_norm.c       LayerNorm's decomposition
 *   opt/pattern_rms_norm.c         RMS normalization's decomposition (T5, Llama)
 *   opt/pattern_attention.c        attention
 *   opt/pattern_reshape_transpose.c  a Transpose with its Reshapes
 *   opt/pattern_bn_activation.c    a batch normalization with its activation
 */
#ifndef ACCEL_OPT_PATTERN_MATCH_H
#define ACCEL_OPT_PATTERN_MATCH_H

#include "ops/attention.h"
#include "opt/pass.h"

#include <math.h>
#include <stdint.h>

#define MAX_MEMBERS 24       /* layers of one match, at most */

/* ---- The result ------------------------------------------------------------------------------ */

/* A PRECOMPILED payload other than attention's: the pointer, its release and its label. */
typedef struct pat_own {
    void* payload;
    void (*release)(void*);
    const char* label;
} pat_own;

static inline void own_release(pat_own* o) {
    if (o->payload != NULL && o->release != NULL) {
        o->release(o->payload);
    }
    o->payload = NULL;
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

static inline const pn_layer* layer_at(const pat_ctx* c, int64_t i) { return &c->sg->layers[i]; }

/* The layer (index) that produces tensor id, when a match may take it: it passes the check,
 * has one output and is in no match yet; else -1. */
static inline int64_t prod(const pat_ctx* c, uint32_t id) {
    if (id > c->t.max_id) {
        return -1;
    }
    const int64_t p = c->t.producer[id];
    return p >= 0 && c->ok[p] && !c->taken[p] ? p : -1;
}

/* Tensor id is read exactly n times by the subgraph's layers and is not one of its outputs. */
static inline int inner(const pat_ctx* c, uint32_t id, uint32_t n) {
    return id <= c->t.max_id && c->t.uses[id] == n && !c->t.is_output[id];
}

/* The one layer that reads tensor id (inner(id, 1)), else -1. */
static inline int64_t consumer(const pat_ctx* c, uint32_t id) {
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

static inline int add_member(pat_ctx* c, int64_t i) {
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

static inline int is_binary(const pn_layer* l, pn_binary_op op) {
    if (l->kind != PN_LAYER_ELEMENTWISE_BINARY || l->num_inputs != 2) {
        return 0;
    }
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)l->descriptor;
    return d->op == op && d->fused_activation == NULL;
}

static inline int is_activation(const pn_layer* l, pn_activation_kind kind) {
    return l->kind == PN_LAYER_ACTIVATION && ((const pn_activation_desc*)l->descriptor)->kind == kind;
}

static inline int is_unary(const pn_layer* l, pn_unary_op op) {
    return l->kind == PN_LAYER_ELEMENTWISE_UNARY &&
           ((const pn_elementwise_unary_desc*)l->descriptor)->op == op;
}

/* Input `slot` of l is a float32 constant whose elements are all one value (into *v). */
static inline int const_scalar(const pn_layer* l, uint32_t slot, float* v) {
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

static inline int near(float v, double target, double rel) { return fabs((double)v - target) <= rel * fabs(target); }

/* Binary layer l combines its tensor operand (the other slot than `const_slot`) with a
 * constant without broadcasting the result larger: its output has that operand's dims. */
static inline int keeps_shape(const pn_layer* l, uint32_t tensor_slot) {
    return pn_same_dims(&l->outputs[0], &l->inputs[tensor_slot]);
}

/* One operand of binary l is a constant scalar near `target` (relative rel): its slot into
 * *const_slot. */
static inline int has_const(const pn_layer* l, double target, double rel, uint32_t* const_slot) {
    for (uint32_t s = 0; s < 2; ++s) {
        float v;
        if (const_scalar(l, s, &v) && near(v, target, rel) && keeps_shape(l, 1 - s)) {
            *const_slot = s;
            return 1;
        }
    }
    return 0;
}

/* Reduce MEAN of tensor `in` over the trailing axes [k, rank) with keep_dims, k into *axis. */
static inline int trailing_mean(const pn_layer* l, uint32_t in, int32_t* axis) {
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

/* Binary ADD l adds a finite constant scalar >= 0 (a normalization's epsilon, into *eps) to a
 * tensor (its slot into *tensor_slot) without broadcasting it larger. */
static inline int adds_epsilon(const pn_layer* l, float* eps, uint32_t* tensor_slot) {
    if (!is_binary(l, PN_BINARY_ADD)) {
        return 0;
    }
    for (uint32_t cs = 0; cs < 2; ++cs) {
        if (const_scalar(l, 1 - cs, eps) && keeps_shape(l, cs)) {
            *tensor_slot = cs;
            return *eps >= 0.0f && !isinf(*eps);
        }
    }
    return 0;
}

/* The MUL that is the one reader of tensor `value` and multiplies it by another tensor (a
 * normalization's scale), its output of `like`'s dims, taken into the match: its index and, in
 * *other, the slot of its other operand; -1 when there is none. */
static inline int64_t scaling_mul(pat_ctx* c, uint32_t value, const pn_tensor_info* like, uint32_t* other) {
    const int64_t i = consumer(c, value);
    if (i < 0 || !is_binary(layer_at(c, i), PN_BINARY_MUL)) {
        return -1;
    }
    const pn_layer* l = layer_at(c, i);
    const uint32_t slot = l->input_ids[0] == value ? 0u : 1u;
    if (l->input_ids[1 - slot] == value || !pn_same_dims(&l->outputs[0], like) || !add_member(c, i)) {
        return -1;
    }
    *other = 1 - slot;
    return i;
}

/* ---- What a match gives ----------------------------------------------------------------------------------- */

/* What a matcher found: the replacement's kind, descriptor, inputs and output. */
typedef struct pat_match {
    pn_layer_kind kind;
    pn_activation_desc act;
    pn_normalization_desc norm;
    accel_attention* payload;
    pat_own own;                 /* a payload of ops/data_movement.c / ops/batch_norm.c (kind PRECOMPILED, payload NULL) */
    uint32_t num_inputs;
    uint32_t input_ids[4];
    pn_tensor_info inputs[4];
    const void* constants[4];
    uint32_t output_id;
    pn_tensor_info output;
} pat_match;


/* The strides of a contiguous tensor t, in elements. */
static inline void contiguous_strides(const pn_tensor_info* t, int64_t* s) {
    int64_t n = 1;
    for (int32_t i = (int32_t)t->rank - 1; i >= 0; --i) {
        s[i] = n;
        n *= t->dims[i];
    }
}

/* ---- The families --------------------------------------------------------------------------- */

/* Each matcher tries the pattern whose last (or, for attention, its softmax) layer is layer
 * `at`: 1 with *m filled and the pattern's layers in c->members, 0 for no match, -1 when out of
 * memory. */
int accel_match_gelu_erf(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_gelu_tanh(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_swish(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_layer_norm(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_rms_norm(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_attention(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_reshape_transpose(pat_ctx* c, int64_t at, pat_match* m);
int accel_match_bn_activation(pat_ctx* c, int64_t at, pat_match* m);

#endif /* ACCEL_OPT_PATTERN_MATCH_H */
