/* CpuAcc layer fusion (rules in opt/layer_fusion.h): conv/fc/binary fused with a residual ADD and an
 * activation; an N-D CONVOLUTION (no addend in its descriptor) with an activation. */
#include "opt/layer_fusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    case PN_LAYER_CONVOLUTION:
        return ((const pn_convolution_desc*)layer->descriptor)->fused_activation;
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

/* Fills `it` and the replacement layer `r` (pointing into `it`, name still NULL) for links
 * `c` of subgraph `sg`. */
static void build_replacement(const pn_subgraph* sg, const fusion_links* c, fusion_item* it,
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
    case PN_LAYER_CONVOLUTION:
        copy_desc(&it->desc.conv_nd, sizeof(it->desc.conv_nd), head->descriptor);
        it->desc.conv_nd.fused_activation = fused;
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

/* 1 when links `c`, built into `it`/`r`, passes the backend's check. */
static int links_accepted(const pn_subgraph* sg, const fusion_links* c, const pn_plugin* plugin,
                          fusion_item* it, pn_layer* r) {
    char reason[FUSION_REASON_MAX];
    pn_string_out out = {reason, sizeof(reason)};
    build_replacement(sg, c, it, r);
    return pn_plugin_check_layer(plugin, r, &out) == PN_OK;
}

/* The replacement's name (accel_fused_name): head, ADD, activation. */
static char* fused_name(const pn_subgraph* sg, const fusion_links* c) {
    const int64_t layers[FUSION_MAX_LINKS] = {c->head, c->add, c->act};
    return accel_fused_name(sg, layers, FUSION_MAX_LINKS);
}

/* PN_OK when the subgraph's arrays are present and every layer carries its ids. */
/* The longest links headed by layer `h` that are candidates and whose fused layer passes the
 * backend's check (built into `it`/`r` on the way); c->add and c->act are -1 for the links not
 * taken. */
static void longest_links(const pn_subgraph* sg, uint32_t h, const unsigned char* state,
                          const pn_plugin* plugin, fusion_links* c, fusion_item* it, pn_layer* r) {
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
        head->kind != PN_LAYER_CONVOLUTION && (flags_of(head) & PN_LAYER_FLAG_HAS_ADDEND) == 0 && head->num_inputs < FUSION_MAX_INPUTS &&
        is_residual_add(head, &sg->layers[next], &c->addend_slot)) {
        c->add = next;
        if (!links_accepted(sg, c, plugin, it, r)) {
            c->add = -1;
        }
    }
    const pn_layer* tail = c->add >= 0 ? &sg->layers[c->add] : head;
    next = sole_consumer(sg, tail->output_ids[0]);
    if (next >= 0 && state[next] == LAYER_CANDIDATE &&
        sg->layers[next].kind == PN_LAYER_ACTIVATION) {
        c->act = next;
        if (!links_accepted(sg, c, plugin, it, r)) {
            c->act = -1;
        }
    }
}

pn_status accel_fuse_layers(const pn_subgraph* sg, const pn_plugin* plugin, accel_optimization* o,
                            unsigned char* state) {
    /* Heads in layer order: a producer comes before its consumers, so a conv claims its
     * residual ADD before the ADD could head a fusion of its own. */
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        pn_layer_kind kind = sg->layers[i].kind;
        if (state[i] != LAYER_CANDIDATE ||
            (kind != PN_LAYER_CONVOLUTION_2D && kind != PN_LAYER_CONVOLUTION &&
             kind != PN_LAYER_FULLY_CONNECTED && kind != PN_LAYER_ELEMENTWISE_BINARY)) {
            continue;
        }
        uint32_t k = o->base.num_substitutions;
        fusion_item* it = &o->items[k];
        pn_substitution* sub = &o->substitutions[k];
        fusion_links c;
        longest_links(sg, i, state, plugin, &c, it, &sub->replacement);
        if (c.add < 0 && c.act < 0) {
            continue;
        }
        build_replacement(sg, &c, it, &sub->replacement); /* the last try may have failed */
        it->name = fused_name(sg, &c);
        it->links = c;
        o->base.num_substitutions = k + 1; /* counted now, so release frees the name */
        o->num_items = k + 1;
        if (it->name == NULL) {
            return PN_ERR_OUT_OF_MEMORY;
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
    return PN_OK;
}
