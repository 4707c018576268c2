/* CpuAcc pattern fusion (rules in opt/patterns.h): the result, and the run of every family's
 * matcher (opt/pattern_match.h) over the subgraph. */
#include "opt/patterns.h"
#include "opt/pattern_match.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    pat_own own;                    /* a PRECOMPILED payload of ops/data_movement.c / ops/batch_norm.c */
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
    const pn_subgraph* source;      /* the subgraph matched (borrowed: optimize_subgraph's call) */
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

uint32_t accel_patterns_member_names(const accel_patterns* p, uint32_t layer_id, const char** names, uint32_t max) {
    const pat_item* it = item_of(p, layer_id);
    uint32_t n = 0;
    for (uint32_t k = 0; it != NULL && k < it->num_replaced && n < max; ++k) {
        for (uint32_t j = 0; j < p->source->num_layers; ++j) {
            const pn_layer* l = &p->source->layers[j];
            if (l->id == it->replaced[k]) {
                names[n++] = PN_HAS_FIELD(l, pn_layer, name) && l->name != NULL ? l->name : "?";
                break;
            }
        }
    }
    return n;
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
    p->source = sg;
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
    static const matcher matchers[] = {accel_match_attention, accel_match_layer_norm, accel_match_rms_norm, accel_match_gelu_erf, accel_match_gelu_tanh,
                                       accel_match_swish,
                                       accel_match_reshape_transpose, accel_match_bn_activation};
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
