/* CpuAcc optimize_subgraph (opt/optimize.h): the result, the layers' first judgement, the passes. */
#include "opt/optimize.h"
#include "opt/chain_plan.h"
#include "opt/layer_fusion.h"
#include "opt/linear_fusion.h"
#include "opt/pass.h"
#include "opt/patterns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    accel_patterns_release(o->patterns, o->owns_payloads);
    accel_linear_fusions_release(o->linear, o->owns_payloads);
    free(o->chains);
    free(o->substitutions);
    free(o->items);
    free(o->failed);
    free(o->reasons);
    free(o->untouched);
    free(o);
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

/* Checks every layer: each refused one is recorded as failed with the check's reason
 * (state LAYER_FAILED), an accepted one with one output may join a chain (LAYER_CANDIDATE),
 * any other is kept as it is (LAYER_KEPT). */
static void sort_layers(const pn_subgraph* sg, const pn_plugin* plugin, accel_optimization* o,
                        unsigned char* state) {
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        const pn_layer* l = &sg->layers[i];
        if (accel_patterns_kind_of(o->patterns, l->id) == 2) { /* our own PRECOMPILED match */
            state[i] = LAYER_CLAIMED;
            continue;
        }
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
    accel_patterns* patterns = NULL;
    if (fuse) { /* the later passes see each pattern match as one layer */
        s = accel_find_patterns(subgraph, plugin, &patterns);
        if (s != PN_OK) {
            return pn_fail(message_out, s, "CpuAcc optimize_subgraph: out of memory");
        }
        sg = patterns != NULL ? accel_patterns_view(patterns) : subgraph;
    }
    accel_optimization* o = optimization_new(sg->num_layers);
    if (o != NULL) {
        o->patterns = patterns;
    } else {
        accel_patterns_release(patterns, 1);
    }
    unsigned char* state = (unsigned char*)calloc(sg->num_layers > 0 ? sg->num_layers : 1, 1);
    if (o == NULL || state == NULL) {
        accel_release_optimization(o == NULL ? NULL : &o->base);
        free(state);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       "CpuAcc optimize_subgraph: out of memory");
    }
    sort_layers(sg, plugin, o, state);

    if (fuse) { /* products with their bias, residual, activation, Reshapes (opt/linear_fusion.h) */
        s = accel_fuse_linear(sg, plugin, o, state);
    }
    if (fuse && s == PN_OK) {
        s = accel_fuse_layers(sg, plugin, o, state);
    }
    if (s == PN_OK && chains) {
        s = accel_plan_chains(sg, o, state, isa);
    }
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        if (state[i] == LAYER_KEPT || state[i] == LAYER_CANDIDATE) {
            o->untouched[o->base.num_untouched++] = sg->layers[i].id;
        }
    }
    if (s == PN_OK && patterns != NULL) {
        s = accel_patterns_finish(patterns, o); /* in the subgraph's own layer ids again */
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
