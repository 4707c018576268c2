/* CpuAcc subgraph optimization: conv/fc/binary fused with a residual ADD and an activation
 * (the rules are in fusion.h). */
#include "fusion.h"
#include "conv_chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUSION_MAX_INPUTS 4  /* the head's inputs (at most 3) plus the addend */
#define FUSION_MAX_CHAIN 3   /* head, ADD, activation */
#define FUSION_REASON_MAX 256

/* One candidate chain: indices into the subgraph's layers, -1 for a missing link. */
typedef struct fusion_chain {
    int64_t head;
    int64_t add;
    uint32_t addend_slot; /* the ADD input that is the addend */
    int64_t act;
} fusion_chain;

/* Storage behind one substitution: everything its replacement layer points to. */
typedef struct fusion_item {
    uint32_t replaced[FUSION_MAX_CHAIN];
    union {
        pn_convolution_2d_desc conv;
        pn_fully_connected_desc fc;
        pn_elementwise_binary_desc binary;
    } desc;
    pn_activation_desc act;
    pn_tensor_info inputs[FUSION_MAX_INPUTS];
    uint32_t input_ids[FUSION_MAX_INPUTS];
    pn_tensor_info output;
    uint32_t output_id;
    char* name; /* malloc'd, set once the chain is final */
    fusion_chain links;     /* the fused layers' indices in the subgraph */
} fusion_item;

/* Storage behind one blocked-chain substitution (conv_chain.h). */
typedef struct chain_item {
    uint32_t* replaced;        /* layer ids, in layer order */
    uint32_t num_replaced;
    pn_tensor_info* infos;     /* inputs then outputs */
    uint32_t* ids;             /* input then output tensor ids */
    pn_precompiled_desc desc;
    char* name;
    accel_chain* payload;      /* the runtime's once the result is returned */
} chain_item;

/* What accel_optimize_subgraph returns; every array has one slot per subgraph layer. */
typedef struct accel_optimization {
    pn_optimization base; /* first: accel_release_optimization casts back */
    pn_substitution* substitutions;
    fusion_item* items;
    uint32_t num_items;        /* fusion items made (some may be replaced by a chain) */
    chain_item* chains;
    uint32_t num_chains;
    int owns_payloads;         /* 1 until the result reaches the runtime */
    pn_failed_layer* failed;
    char (*reasons)[FUSION_REASON_MAX];
    uint32_t* untouched;
} accel_optimization;


void accel_release_optimization(pn_optimization* optimization) {
    accel_optimization* o = (accel_optimization*)optimization;
    if (o == NULL) {
        return;
    }
    if (o->items != NULL) {
        for (uint32_t i = 0; i < o->num_items; ++i) {
            free(o->items[i].name);
        }
    }
    if (o->chains != NULL) {
        for (uint32_t i = 0; i < o->num_chains; ++i) {
            chain_item* c = &o->chains[i];
            free(c->replaced);
            free(c->infos);
            free(c->ids);
            free(c->name);
            if (o->owns_payloads) {
                accel_chain_release(c->payload);
            }
        }
    }
    free(o->chains);
    free(o->substitutions);
    free(o->items);
    free(o->failed);
    free(o->reasons);
    free(o->untouched);
    free(o);
}

/* ---- Subgraph queries -------------------------------------------------------------- */

/* The index of the one layer that reads tensor `id`, or -1 when the tensor is one of the
 * subgraph's outputs or is read by no layer or more than once (by any layers). */
static int64_t sole_consumer(const pn_subgraph* sg, uint32_t id) {
    for (uint32_t i = 0; i < sg->num_output_ids; ++i) {
        if (sg->output_ids[i] == id) {
            return -1;
        }
    }
    int64_t user = -1;
    uint32_t uses = 0;
    for (uint32_t j = 0; j < sg->num_layers; ++j) {
        const pn_layer* l = &sg->layers[j];
        for (uint32_t k = 0; k < l->num_inputs; ++k) {
            if (l->input_ids[k] == id) {
                ++uses;
                user = (int64_t)j;
            }
        }
    }
    return uses == 1 ? user : -1;
}

/* The fused activation of a head or ADD layer (NULL: none). */
static const pn_activation_desc* fused_activation_of(const pn_layer* layer) {
    switch (layer->kind) {
    case PN_LAYER_CONVOLUTION_2D:
        return ((const pn_convolution_2d_desc*)layer->descriptor)->fused_activation;
    case PN_LAYER_FULLY_CONNECTED:
        return ((const pn_fully_connected_desc*)layer->descriptor)->fused_activation;
    case PN_LAYER_ELEMENTWISE_BINARY:
        return ((const pn_elementwise_binary_desc*)layer->descriptor)->fused_activation;
    default:
        return NULL;
    }
}

/* The PN_LAYER_FLAG_* of a conv or fc layer, 0 for other kinds. */
static uint32_t flags_of(const pn_layer* layer) {
    switch (layer->kind) {
    case PN_LAYER_CONVOLUTION_2D:
        return ((const pn_convolution_2d_desc*)layer->descriptor)->flags;
    case PN_LAYER_FULLY_CONNECTED:
        return ((const pn_fully_connected_desc*)layer->descriptor)->flags;
    default:
        return 0;
    }
}

/* 1 when `add` is a residual ADD of `head`'s output: no fused activation, and the other
 * operand (its slot into *addend_slot) of exactly the head output's dtype and dims, which
 * is also the ADD's output shape. The caller made sure the head's output has this ADD as its
 * one use, so the other operand is a different tensor. */
static int is_residual_add(const pn_layer* head, const pn_layer* add, uint32_t* addend_slot) {
    if (add->kind != PN_LAYER_ELEMENTWISE_BINARY) {
        return 0;
    }
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)add->descriptor;
    if (d->op != PN_BINARY_ADD || d->fused_activation != NULL) {
        return 0;
    }
    uint32_t slot = add->input_ids[0] == head->output_ids[0] ? 1u : 0u;
    const pn_tensor_info* y = &head->outputs[0];
    if (add->inputs[slot].dtype != y->dtype || !pn_same_dims(&add->inputs[slot], y) ||
        add->outputs[0].dtype != y->dtype || !pn_same_dims(&add->outputs[0], y)) {
        return 0;
    }
    *addend_slot = slot;
    return 1;
}

/* ---- Building a replacement ------------------------------------------------------------ */

/* Copies a descriptor of the layer kind's 1.0 struct (`size` bytes) from a writer whose
 * struct_size may differ, and marks the copy as ours. */
static void copy_desc(void* dst, size_t size, const void* src) {
    uint32_t src_size = *(const uint32_t*)src;
    memset(dst, 0, size);
    memcpy(dst, src, src_size < size ? src_size : size);
    *(uint32_t*)dst = (uint32_t)size;
}

/* Fills `it` and the replacement layer `r` (pointing into `it`, name still NULL) for chain
 * `c` of subgraph `sg`. */
static void build_replacement(const pn_subgraph* sg, const fusion_chain* c, fusion_item* it,
                              pn_layer* r) {
    const pn_layer* head = &sg->layers[c->head];
    const pn_layer* add = c->add >= 0 ? &sg->layers[c->add] : NULL;
    const pn_layer* act = c->act >= 0 ? &sg->layers[c->act] : NULL;
    const pn_layer* tail = act != NULL ? act : add != NULL ? add : head;
    memset(it, 0, sizeof(*it));
    uint32_t n = head->num_inputs;
    memcpy(it->inputs, head->inputs, n * sizeof(pn_tensor_info));
    memcpy(it->input_ids, head->input_ids, n * sizeof(uint32_t));
    uint32_t num_replaced = 0;
    it->replaced[num_replaced++] = head->id;
    if (add != NULL) {
        it->inputs[n] = add->inputs[c->addend_slot];
        it->input_ids[n] = add->input_ids[c->addend_slot];
        ++n;
        it->replaced[num_replaced++] = add->id;
    }
    const pn_activation_desc* fused = NULL;
    if (act != NULL) {
        const pn_activation_desc* a = (const pn_activation_desc*)act->descriptor;
        it->act.struct_size = (uint32_t)sizeof(pn_activation_desc);
        it->act.kind = a->kind;
        it->act.alpha = a->alpha;
        it->act.beta = a->beta;
        fused = &it->act;
        it->replaced[num_replaced++] = act->id;
    }
    switch (head->kind) {
    case PN_LAYER_CONVOLUTION_2D:
        copy_desc(&it->desc.conv, sizeof(it->desc.conv), head->descriptor);
        it->desc.conv.flags |= add != NULL ? PN_LAYER_FLAG_HAS_ADDEND : 0u;
        it->desc.conv.fused_activation = fused;
        break;
    case PN_LAYER_FULLY_CONNECTED:
        copy_desc(&it->desc.fc, sizeof(it->desc.fc), head->descriptor);
        it->desc.fc.flags |= add != NULL ? PN_LAYER_FLAG_HAS_ADDEND : 0u;
        it->desc.fc.fused_activation = fused;
        break;
    default: /* PN_LAYER_ELEMENTWISE_BINARY, the only other head kind */
        copy_desc(&it->desc.binary, sizeof(it->desc.binary), head->descriptor);
        it->desc.binary.fused_activation = fused;
        break;
    }
    it->output = tail->outputs[0];
    it->output_id = tail->output_ids[0];

    memset(r, 0, sizeof(*r));
    r->struct_size = (uint32_t)sizeof(pn_layer);
    r->kind = head->kind;
    r->name = head->name;
    r->descriptor = &it->desc;
    r->num_inputs = n;
    r->inputs = it->inputs;
    r->constant_data = NULL; /* the runtime knows its constants by tensor id */
    r->num_outputs = 1;
    r->outputs = &it->output;
    r->input_ids = it->input_ids;
    r->output_ids = &it->output_id;
}

/* 1 when chain `c`, built into `it`/`r`, passes the backend's check. */
static int chain_accepted(const pn_subgraph* sg, const fusion_chain* c, const pn_plugin* plugin,
                          fusion_item* it, pn_layer* r) {
    char reason[FUSION_REASON_MAX];
    pn_string_out out = {reason, sizeof(reason)};
    build_replacement(sg, c, it, r);
    return pn_plugin_check_layer(plugin, r, &out) == PN_OK;
}

/* `other` without the part it shares with `first` up to and including a '.' or '/'
 * ("layer1.0.add" after "layer1.0.conv2" is "add"); all of `other` when that leaves nothing. */
static const char* short_name(const char* first, const char* other) {
    size_t cut = 0;
    for (size_t i = 0; first[i] != '\0' && first[i] == other[i]; ++i) {
        if (other[i] == '.' || other[i] == '/') {
            cut = i + 1;
        }
    }
    return other[cut] != '\0' ? other + cut : other;
}

/* The replacement's name: the chain's layer names joined with '+' (see short_name), malloc'd,
 * or NULL when out of memory. */
static char* chain_name(const pn_subgraph* sg, const fusion_chain* c) {
    const char* first = sg->layers[c->head].name != NULL ? sg->layers[c->head].name : "";
    const char* parts[FUSION_MAX_CHAIN - 1] = {"", ""};
    const char* seps[FUSION_MAX_CHAIN - 1] = {"", ""};
    int64_t links[FUSION_MAX_CHAIN - 1] = {c->add, c->act};
    size_t len = strlen(first) + 1;
    for (int i = 0; i < FUSION_MAX_CHAIN - 1; ++i) {
        if (links[i] >= 0) {
            const char* name = sg->layers[links[i]].name;
            parts[i] = short_name(first, name != NULL ? name : "");
            seps[i] = "+";
            len += 1 + strlen(parts[i]);
        }
    }
    char* text = (char*)malloc(len);
    if (text != NULL) {
        snprintf(text, len, "%s%s%s%s%s", first, seps[0], parts[0], seps[1], parts[1]);
    }
    return text;
}

/* PN_OK when the subgraph's arrays are present and every layer carries its ids. */
static pn_status check_subgraph(const pn_subgraph* sg, pn_string_out* message_out) {
    if (!PN_HAS_FIELD(sg, pn_subgraph, output_ids)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc optimize_subgraph: the subgraph is NULL or its struct_size is too "
                       "small");
    }
    if ((sg->num_layers > 0 && sg->layers == NULL) ||
        (sg->num_output_ids > 0 && sg->output_ids == NULL)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc optimize_subgraph: the subgraph's %s array is NULL",
                       sg->layers == NULL ? "layers" : "output_ids");
    }
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        const pn_layer* l = &sg->layers[i];
        if (!PN_HAS_FIELD(l, pn_layer, id) || (l->num_inputs > 0 && l->input_ids == NULL) ||
            (l->num_outputs > 0 && l->output_ids == NULL)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc optimize_subgraph: layer %u ('%s') has no tensor ids", i,
                           PN_HAS_FIELD(l, pn_layer, name) && l->name != NULL ? l->name : "?");
        }
    }
    return PN_OK;
}

/* The result's arrays, one slot per layer; NULL when out of memory. */
static accel_optimization* optimization_new(uint32_t num_layers) {
    size_t slots = num_layers > 0 ? num_layers : 1;
    accel_optimization* o = (accel_optimization*)calloc(1, sizeof(*o));
    if (o == NULL) {
        return NULL;
    }
    o->base.struct_size = (uint32_t)sizeof(pn_optimization);
    o->substitutions = (pn_substitution*)calloc(slots, sizeof(pn_substitution));
    o->items = (fusion_item*)calloc(slots, sizeof(fusion_item));
    o->failed = (pn_failed_layer*)calloc(slots, sizeof(pn_failed_layer));
    o->reasons = (char(*)[FUSION_REASON_MAX])calloc(slots, FUSION_REASON_MAX);
    o->untouched = (uint32_t*)calloc(slots, sizeof(uint32_t));
    o->chains = (chain_item*)calloc(slots, sizeof(chain_item));
    o->owns_payloads = 1;
    if (o->substitutions == NULL || o->items == NULL || o->failed == NULL || o->reasons == NULL ||
        o->untouched == NULL || o->chains == NULL) {
        accel_release_optimization(&o->base);
        return NULL;
    }
    o->base.substitutions = o->substitutions;
    o->base.failed = o->failed;
    o->base.untouched_layer_ids = o->untouched;
    return o;
}

/* What optimize_subgraph makes of each layer. */
enum { LAYER_FAILED = 0, LAYER_KEPT = 1, LAYER_CANDIDATE = 2, LAYER_CLAIMED = 3 };

/* Checks every layer: each refused one is recorded as failed with the check's reason
 * (state LAYER_FAILED), an accepted one with one output may join a chain (LAYER_CANDIDATE),
 * any other is kept as it is (LAYER_KEPT). */
static void sort_layers(const pn_subgraph* sg, const pn_plugin* plugin, accel_optimization* o,
                        unsigned char* state) {
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        const pn_layer* l = &sg->layers[i];
        uint32_t f = o->base.num_failed;
        pn_string_out reason = {o->reasons[f], FUSION_REASON_MAX};
        if (pn_plugin_check_layer(plugin, l, &reason) != PN_OK) {
            o->failed[f].struct_size = (uint32_t)sizeof(pn_failed_layer);
            o->failed[f].layer_id = l->id;
            o->failed[f].reason = o->reasons[f];
            o->base.num_failed = f + 1;
            state[i] = LAYER_FAILED;
        } else {
            state[i] = l->num_outputs == 1 ? LAYER_CANDIDATE : LAYER_KEPT;
        }
    }
}

/* The longest chain headed by layer `h` whose links are candidates and whose fused layer
 * passes the backend's check (built into `it`/`r` on the way); c->add and c->act are -1 for the links
 * not taken. */
static void longest_chain(const pn_subgraph* sg, uint32_t h, const unsigned char* state,
                          const pn_plugin* plugin, fusion_chain* c, fusion_item* it, pn_layer* r) {
    const pn_layer* head = &sg->layers[h];
    c->head = (int64_t)h;
    c->add = -1;
    c->addend_slot = 0;
    c->act = -1;
    if (fused_activation_of(head) != NULL) {
        return;
    }
    int64_t next = sole_consumer(sg, head->output_ids[0]);
    if (next >= 0 && state[next] == LAYER_CANDIDATE && head->kind != PN_LAYER_ELEMENTWISE_BINARY &&
        (flags_of(head) & PN_LAYER_FLAG_HAS_ADDEND) == 0 && head->num_inputs < FUSION_MAX_INPUTS &&
        is_residual_add(head, &sg->layers[next], &c->addend_slot)) {
        c->add = next;
        if (!chain_accepted(sg, c, plugin, it, r)) {
            c->add = -1;
        }
    }
    const pn_layer* tail = c->add >= 0 ? &sg->layers[c->add] : head;
    next = sole_consumer(sg, tail->output_ids[0]);
    if (next >= 0 && state[next] == LAYER_CANDIDATE &&
        sg->layers[next].kind == PN_LAYER_ACTIVATION) {
        c->act = next;
        if (!chain_accepted(sg, c, plugin, it, r)) {
            c->act = -1;
        }
    }
}

/* ---- Blocked chains ---------------------------------------------------------------------- */

/* One convolution with what fusion gave it (a fusion item, or a convolution left alone), or
 * a pooling layer. */
typedef struct chain_unit {
    int64_t head, add, act, last; /* layer indices (-1: none); last = the unit's latest layer */
    uint32_t addend_slot;
    int64_t item;                 /* fusion item index, -1 for a lone convolution */
    accel_chain_conv cc;
    accel_chain_fit fit;          /* what the blocked kernels make of it */
} chain_unit;

/* 1 when tensor `id` is a subgraph output or read by a layer outside units [first, end). */
static int used_outside(const pn_subgraph* sg, uint32_t id, const chain_unit* units, uint32_t first,
                        uint32_t end, const int64_t* unit_of) {
    for (uint32_t i = 0; i < sg->num_output_ids; ++i) {
        if (sg->output_ids[i] == id) {
            return 1;
        }
    }
    for (uint32_t j = 0; j < sg->num_layers; ++j) {
        int64_t u = unit_of[j];
        if (u >= (int64_t)first && u < (int64_t)end) {
            continue;
        }
        for (uint32_t k = 0; k < sg->layers[j].num_inputs; ++k) {
            if (sg->layers[j].input_ids[k] == id) {
                return 1;
            }
        }
    }
    (void)units;
    return 0;
}

/* Replaces units [first, end) (all eligible, at least two) by one PRECOMPILED layer running
 * them as a blocked chain: chain item o->chains[o->num_chains], their fusion items marked
 * dropped (item_dropped), their lone convolutions marked claimed. */
static pn_status make_chain(const pn_subgraph* sg, accel_optimization* o, chain_unit* units,
                            uint32_t first, uint32_t end, const int64_t* unit_of,
                            unsigned char* state, unsigned char* item_dropped) {
    uint32_t count = end - first;
    accel_chain_conv* convs = (accel_chain_conv*)calloc(count, sizeof(accel_chain_conv));
    uint32_t* exports = (uint32_t*)calloc(count, sizeof(uint32_t));
    chain_item* c = &o->chains[o->num_chains];
    memset(c, 0, sizeof(*c));
    if (convs == NULL || exports == NULL) {
        free(convs);
        free(exports);
        return PN_ERR_OUT_OF_MEMORY;
    }
    uint32_t num_exports = 0;
    for (uint32_t u = first; u < end; ++u) {
        convs[u - first] = units[u].cc;
        if (used_outside(sg, units[u].cc.y_id, units, first, end, unit_of)) {
            exports[num_exports++] = units[u].cc.y_id;
        }
    }
    c->payload = accel_chain_new(convs, count, exports, num_exports);
    free(convs);
    free(exports);
    o->num_chains += 1; /* counted now, so release frees what is made */
    if (c->payload == NULL) {
        return PN_ERR_OUT_OF_MEMORY;
    }
    uint32_t nin = accel_chain_num_inputs(c->payload), nout = accel_chain_num_outputs(c->payload);
    c->replaced = (uint32_t*)calloc(sg->num_layers, sizeof(uint32_t));
    c->infos = (pn_tensor_info*)calloc((size_t)nin + nout, sizeof(pn_tensor_info));
    c->ids = (uint32_t*)calloc((size_t)nin + nout, sizeof(uint32_t));
    const char* head_name = sg->layers[units[first].head].name;
    const char* last_name = sg->layers[units[end - 1].last].name;
    size_t len = strlen(head_name != NULL ? head_name : "") + strlen(last_name != NULL ? last_name : "") + 3;
    c->name = (char*)malloc(len);
    if (c->replaced == NULL || c->infos == NULL || c->ids == NULL || c->name == NULL) {
        return PN_ERR_OUT_OF_MEMORY;
    }
    snprintf(c->name, len, "%s..%s", head_name != NULL ? head_name : "", last_name != NULL ? last_name : "");
    for (uint32_t i = 0; i < nin; ++i) {
        accel_chain_input(c->payload, i, &c->ids[i], &c->infos[i]);
    }
    for (uint32_t i = 0; i < nout; ++i) {
        accel_chain_output(c->payload, i, &c->ids[nin + i], &c->infos[nin + i]);
    }
    /* Every layer of every unit, in layer order (the runtime puts the replacement where the
     * last one was). */
    uint32_t num_replaced = 0;
    for (uint32_t j = 0; j < sg->num_layers; ++j) {
        if (unit_of[j] >= (int64_t)first && unit_of[j] < (int64_t)end) {
            c->replaced[num_replaced++] = sg->layers[j].id;
            state[j] = LAYER_CLAIMED;
        }
    }
    for (uint32_t u = first; u < end; ++u) {
        if (units[u].item >= 0) {
            item_dropped[units[u].item] = 1;
        }
    }
    c->desc.struct_size = (uint32_t)sizeof(pn_precompiled_desc);
    c->desc.payload = c->payload;
    c->desc.release_payload = accel_chain_release;
    c->desc.label = accel_chain_label(c->payload);
    c->num_replaced = num_replaced;
    return PN_OK;
}

/* Ends the run of units [first, first + len): a chain when it still has two units after
 * dropping a narrow-input first unit (ACCEL_CHAIN_FIRST) whose input another unit reads too
 * (the chain keeps that input as one narrow block, which only its first step can read; the
 * eligibility rules make this impossible today, the check keeps the chain sound if they
 * change). */
static pn_status close_run(const pn_subgraph* sg, accel_optimization* o, chain_unit* units,
                           uint32_t first, uint32_t len, const int64_t* unit_of, unsigned char* state,
                           unsigned char* item_dropped) {
    if (len >= 2 && units[first].fit == ACCEL_CHAIN_FIRST) {
        uint32_t x = units[first].cc.x_id;
        for (uint32_t u = first + 1; u < first + len; ++u) {
            if (units[u].cc.x_id == x || units[u].cc.addend_id == x) {
                ++first;
                --len;
                break;
            }
        }
    }
    return len >= 2 ? make_chain(sg, o, units, first, first + len, unit_of, state, item_dropped) : PN_OK;
}

/* Finds the runs of two or more consecutive convolution units (in the order of their latest
 * layer, nothing else in between) that the blocked kernels run on `isa`, and replaces each by
 * one blocked chain; then rebuilds the substitution list. */
static pn_status form_chains(const pn_subgraph* sg, accel_optimization* o, unsigned char* state,
                             accel_isa isa) {
    uint32_t nl = sg->num_layers;
    chain_unit* units = (chain_unit*)calloc(nl > 0 ? nl : 1, sizeof(chain_unit));
    int64_t* unit_of = (int64_t*)malloc((nl > 0 ? nl : 1) * sizeof(int64_t));
    int64_t* last_unit = (int64_t*)malloc((nl > 0 ? nl : 1) * sizeof(int64_t));
    unsigned char* item_dropped = (unsigned char*)calloc(o->num_items + 1, 1);
    pn_status s = PN_OK;
    if (units == NULL || unit_of == NULL || last_unit == NULL || item_dropped == NULL) {
        s = PN_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (uint32_t j = 0; j < nl; ++j) {
        unit_of[j] = -1;
        last_unit[j] = -1;
    }
    /* The units, numbered in the order of their latest layer. */
    uint32_t num_units = 0;
    for (uint32_t j = 0; j < nl; ++j) {
        int64_t item = -1;
        for (uint32_t k = 0; k < o->num_items; ++k) {
            const fusion_item* it = &o->items[k];
            const fusion_chain* l = &it->links;
            int64_t last = l->act >= 0 ? l->act : l->add >= 0 ? l->add : l->head;
            if (last == (int64_t)j && sg->layers[l->head].kind == PN_LAYER_CONVOLUTION_2D) {
                item = (int64_t)k;
            }
        }
        chain_unit* u = &units[num_units];
        if (item >= 0) {
            const fusion_chain* l = &o->items[item].links;
            u->head = l->head;
            u->add = l->add;
            u->act = l->act;
            u->addend_slot = l->addend_slot;
        } else if (state[j] == LAYER_CANDIDATE && (sg->layers[j].kind == PN_LAYER_CONVOLUTION_2D ||
                                                   sg->layers[j].kind == PN_LAYER_POOLING_2D)) {
            u->head = (int64_t)j;
            u->add = -1;
            u->act = -1;
        } else {
            continue;
        }
        u->last = (int64_t)j;
        u->item = item;
        const pn_layer* head = &sg->layers[u->head];
        const pn_layer* last = &sg->layers[u->last];
        u->cc.conv = head;
        u->cc.x_id = head->input_ids[0];
        u->cc.y_id = last->output_ids[0];
        u->cc.y_info = &last->outputs[0];
        u->cc.addend_id = u->add >= 0 ? sg->layers[u->add].input_ids[u->addend_slot] : 0;
        u->cc.act = u->act >= 0 ? (const pn_activation_desc*)sg->layers[u->act].descriptor : NULL;
        unit_of[u->head] = num_units;
        if (u->add >= 0) unit_of[u->add] = num_units;
        if (u->act >= 0) unit_of[u->act] = num_units;
        u->fit = accel_chain_conv_eligible(isa, &u->cc);
        last_unit[j] = num_units;
        ++num_units;
    }
    /* Runs: walk the layers; a unit's latest layer extends the run when the blocked kernels
     * run the unit anywhere in a chain, or starts a new run when they run it only first; a
     * unit's other layers change nothing; anything else ends the run. */
    uint32_t run_first = 0, run_len = 0;
    for (uint32_t j = 0; j <= nl && s == PN_OK; ++j) {
        if (j < nl && last_unit[j] < 0 && unit_of[j] >= 0) {
            continue;
        }
        int64_t u = j < nl ? last_unit[j] : -1;
        accel_chain_fit fit = u >= 0 ? units[u].fit : ACCEL_CHAIN_NO;
        if (fit == ACCEL_CHAIN_YES) {
            if (run_len == 0) run_first = (uint32_t)u;
            ++run_len;
            continue;
        }
        s = close_run(sg, o, units, run_first, run_len, unit_of, state, item_dropped);
        run_first = (uint32_t)(u >= 0 ? u : 0);
        run_len = fit == ACCEL_CHAIN_FIRST ? 1 : 0;
    }
    if (s != PN_OK || o->num_chains == 0) {
        goto done;
    }
    /* The substitutions: fusions not taken into a chain, then the chains. */
    uint32_t k = 0;
    for (uint32_t i = 0; i < o->num_items; ++i) {
        if (!item_dropped[i]) {
            o->substitutions[k++] = o->substitutions[i];
        }
    }
    for (uint32_t i = 0; i < o->num_chains; ++i) {
        chain_item* c = &o->chains[i];
        pn_substitution* sub = &o->substitutions[k++];
        uint32_t nin = accel_chain_num_inputs(c->payload), nout = accel_chain_num_outputs(c->payload);
        memset(sub, 0, sizeof(*sub));
        sub->struct_size = (uint32_t)sizeof(pn_substitution);
        sub->num_replaced_layer_ids = c->num_replaced;
        sub->replaced_layer_ids = c->replaced;
        pn_layer* r = &sub->replacement;
        r->struct_size = (uint32_t)sizeof(pn_layer);
        r->kind = PN_LAYER_PRECOMPILED;
        r->name = c->name;
        r->descriptor = &c->desc;
        r->num_inputs = nin;
        r->inputs = c->infos;
        r->num_outputs = nout;
        r->outputs = c->infos + nin;
        r->input_ids = c->ids;
        r->output_ids = c->ids + nin;
    }
    o->base.num_substitutions = k;
done:
    free(units);
    free(unit_of);
    free(last_unit);
    free(item_dropped);
    return s;
}

pn_status accel_optimize_subgraph(const pn_subgraph* subgraph, int fuse, int chains, accel_isa isa,
                                  const pn_plugin* plugin, pn_optimization** optimization_out,
                                  pn_string_out* message_out) {
    if (optimization_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc optimize_subgraph: optimization_out is NULL");
    }
    *optimization_out = NULL;
    pn_status s = check_subgraph(subgraph, message_out);
    if (s != PN_OK) {
        return s;
    }
    const pn_subgraph* sg = subgraph;
    accel_optimization* o = optimization_new(sg->num_layers);
    unsigned char* state = (unsigned char*)calloc(sg->num_layers > 0 ? sg->num_layers : 1, 1);
    if (o == NULL || state == NULL) {
        accel_release_optimization(o == NULL ? NULL : &o->base);
        free(state);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuAcc optimize_subgraph: out of memory");
    }
    sort_layers(sg, plugin, o, state);

    /* Heads in layer order: a producer comes before its consumers, so a conv claims its
     * residual ADD before the ADD could head a chain of its own. */
    for (uint32_t i = 0; fuse && i < sg->num_layers; ++i) {
        pn_layer_kind kind = sg->layers[i].kind;
        if (state[i] != LAYER_CANDIDATE ||
            (kind != PN_LAYER_CONVOLUTION_2D && kind != PN_LAYER_FULLY_CONNECTED &&
             kind != PN_LAYER_ELEMENTWISE_BINARY)) {
            continue;
        }
        uint32_t k = o->base.num_substitutions;
        fusion_item* it = &o->items[k];
        pn_substitution* sub = &o->substitutions[k];
        fusion_chain c;
        longest_chain(sg, i, state, plugin, &c, it, &sub->replacement);
        if (c.add < 0 && c.act < 0) {
            continue;
        }
        build_replacement(sg, &c, it, &sub->replacement); /* the last try may have failed */
        it->name = chain_name(sg, &c);
        it->links = c;
        o->base.num_substitutions = k + 1; /* counted now, so release frees the name */
        o->num_items = k + 1;
        if (it->name == NULL) {
            s = PN_ERR_OUT_OF_MEMORY;
            break;
        }
        sub->struct_size = (uint32_t)sizeof(pn_substitution);
        sub->num_replaced_layer_ids = 1u + (c.add >= 0 ? 1u : 0u) + (c.act >= 0 ? 1u : 0u);
        sub->replaced_layer_ids = it->replaced;
        sub->replacement.name = it->name;
        state[i] = LAYER_CLAIMED;
        if (c.add >= 0) {
            state[c.add] = LAYER_CLAIMED;
        }
        if (c.act >= 0) {
            state[c.act] = LAYER_CLAIMED;
        }
    }
    if (s == PN_OK && chains) {
        s = form_chains(sg, o, state, isa);
    }
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        if (state[i] == LAYER_KEPT || state[i] == LAYER_CANDIDATE) {
            o->untouched[o->base.num_untouched++] = sg->layers[i].id;
        }
    }
    free(state);
    if (s != PN_OK) {
        accel_release_optimization(&o->base);
        return pn_fail(message_out, s, "CpuAcc optimize_subgraph: out of memory");
    }
    o->owns_payloads = 0; /* the runtime owns each chain's payload from here on */
    *optimization_out = &o->base;
    return PN_OK;
}
