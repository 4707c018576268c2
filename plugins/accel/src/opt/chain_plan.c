/* CpuAcc blocked-chain planning (rules in opt/chain_plan.h): runs of steps replaced by one
 * PRECOMPILED blocked chain. */
#include "opt/chain_plan.h"
#include "opt/patterns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One convolution with what fusion gave it (a fusion item, or a convolution left alone), a
 * pooling layer, a channel scale (a MUL of a tensor by a [N, C, 1, 1] one) or a channel
 * concatenation. */
typedef struct chain_unit {
    int64_t head, add, act, last; /* layer indices (-1: none); last = the unit's latest layer */
    uint32_t addend_slot;
    int64_t item;                 /* fusion item index, -1 for a lone convolution */
    accel_chain_step step;
    accel_chain_fit fit;          /* what the blocked kernels make of it */
} chain_unit;

/* Appends the original layers of `l` to the step's names: a pattern match's members (the
 * layers it replaced), else `l` itself ("?" when it has no name). */
static void add_names(const accel_patterns* patterns, const pn_layer* l, accel_chain_step* step) {
    uint32_t room = ACCEL_CHAIN_MAX_NAMES - step->num_names;
    uint32_t n = accel_patterns_member_names(patterns, l->id, step->names + step->num_names, room);
    if (n == 0 && room > 0) {
        step->names[step->num_names] = PN_HAS_FIELD(l, pn_layer, name) && l->name != NULL ? l->name : "?";
        n = 1;
    }
    step->num_names += n;
}

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

/* The operand slot of a MUL layer that is x in x * s with s of shape [N, C, 1, 1] and x of the
 * output's shape (squeeze-and-excitation's product), or -1. */
static int scale_x_slot(const pn_layer* l) {
    if (l->kind != PN_LAYER_ELEMENTWISE_BINARY || l->descriptor == NULL || l->num_inputs != 2 ||
        l->num_outputs != 1 || ((const pn_elementwise_binary_desc*)l->descriptor)->op != PN_BINARY_MUL) {
        return -1;
    }
    const pn_tensor_info* y = &l->outputs[0];
    for (int k = 0; k < 2; ++k) {
        const pn_tensor_info* x = &l->inputs[k];
        const pn_tensor_info* sc = &l->inputs[1 - k];
        if (x->rank == 4 && sc->rank == 4 && y->rank == 4 && pn_same_dims(x, y) && sc->dims[0] == y->dims[0] &&
            sc->dims[1] == y->dims[1] && sc->dims[2] == 1 && sc->dims[3] == 1 &&
            l->input_ids[0] != l->input_ids[1]) {
            return k;
        }
    }
    return -1;
}

/* 1 when unit u writes tensor `id` (any output of a SPLIT). */
static int unit_writes(const chain_unit* u, uint32_t id) {
    if (u->step.layer->kind == PN_LAYER_SPLIT) {
        for (uint32_t k = 0; k < u->step.layer->num_outputs; ++k) {
            if (u->step.layer->output_ids[k] == id) return 1;
        }
        return 0;
    }
    return u->step.y_id == id;
}

/* 1 when every part of concatenation unit `cat` is written by one of units [first, first +
 * len): a chain takes a concatenation only then. One whose parts come from outside (DenseNet's:
 * every earlier feature of the block) would convert each of them into the blocked layout and
 * the whole back out, where the runtime lets their producers write into the output in place.
 * The same for views and sums: they only move or add what the chain already holds. */
static int parts_in_run(const chain_unit* cat, const chain_unit* units, uint32_t first, uint32_t len) {
    const pn_layer* l = cat->step.layer;
    for (uint32_t k = 0; k < l->num_inputs; ++k) {
        int found = 0;
        for (uint32_t u = first; u < first + len && !found; ++u) found = unit_writes(&units[u], l->input_ids[k]);
        if (!found) {
            return 0;
        }
    }
    return 1;
}

/* 1 for an ELEMENTWISE_BINARY ADD of two tensors of its output's shape (a chain's sum step). */
static int sum_layer(const pn_layer* l) {
    return l->kind == PN_LAYER_ELEMENTWISE_BINARY && l->descriptor != NULL && l->num_inputs == 2 &&
           l->num_outputs == 1 && ((const pn_elementwise_binary_desc*)l->descriptor)->op == PN_BINARY_ADD &&
           pn_same_dims(&l->inputs[0], &l->outputs[0]) && pn_same_dims(&l->inputs[1], &l->outputs[0]);
}

/* The steps of unit u: one, or one per output of a SPLIT (each a view); 0 when out of room. */
static uint32_t unit_steps(const chain_unit* u, accel_chain_step* out) {
    if (u->step.layer->kind != PN_LAYER_SPLIT) {
        out[0] = u->step;
        return 1;
    }
    for (uint32_t k = 0; k < u->step.layer->num_outputs; ++k) {
        out[k] = u->step;
        out[k].y_id = u->step.layer->output_ids[k];
        out[k].y_info = &u->step.layer->outputs[k];
    }
    return u->step.layer->num_outputs;
}

/* Replaces units [first, end) (all eligible, at least two) by one PRECOMPILED layer running
 * them as a blocked chain: chain item o->chains[o->num_chains], their fusion items marked
 * dropped (item_dropped), their lone convolutions marked claimed. */
static pn_status make_chain(const pn_subgraph* sg, accel_optimization* o, chain_unit* units,
                            uint32_t first, uint32_t end, const int64_t* unit_of,
                            unsigned char* state, unsigned char* item_dropped) {
    uint32_t count = 0;
    for (uint32_t u = first; u < end; ++u) {
        count += units[u].step.layer->kind == PN_LAYER_SPLIT ? units[u].step.layer->num_outputs : 1;
    }
    accel_chain_step* steps = (accel_chain_step*)calloc(count, sizeof(accel_chain_step));
    uint32_t* exports = (uint32_t*)calloc(count, sizeof(uint32_t));
    chain_item* c = &o->chains[o->num_chains];
    memset(c, 0, sizeof(*c));
    if (steps == NULL || exports == NULL) {
        free(steps);
        free(exports);
        return PN_ERR_OUT_OF_MEMORY;
    }
    uint32_t num_exports = 0;
    uint32_t num_steps = 0;
    for (uint32_t u = first; u < end; ++u) {
        uint32_t n = unit_steps(&units[u], steps + num_steps);
        for (uint32_t k = num_steps; k < num_steps + n; ++k) {
            if (used_outside(sg, steps[k].y_id, units, first, end, unit_of)) {
                exports[num_exports++] = steps[k].y_id;
            }
        }
        num_steps += n;
    }
    c->payload = accel_chain_new(steps, count, exports, num_exports);
    free(steps);
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
        uint32_t x = units[first].step.x_id;
        for (uint32_t u = first + 1; u < first + len; ++u) {
            int part = 0;
            if (units[u].step.layer->kind == PN_LAYER_CONCAT) {
                for (uint32_t k = 0; k < units[u].step.layer->num_inputs; ++k) part |= units[u].step.layer->input_ids[k] == x;
            }
            if (units[u].step.x_id == x || units[u].step.addend_id == x || units[u].step.scale_id == x || part) {
                ++first;
                --len;
                break;
            }
        }
    }
    /* An upsampling last (a resize or a transposed convolution whose output only leaves the
     * chain: a segmentation network's final upsampling to the image size) runs after it on NCHW:
     * unpacking its smaller input costs less than writing its output blocked and unpacking that
     * (fcn_resnet50's 21 classes from 28 x 28 to 224 x 224). */
    while (len >= 1 && (units[first + len - 1].step.layer->kind == PN_LAYER_RESIZE ||
                        units[first + len - 1].step.layer->kind == PN_LAYER_CONVOLUTION)) {
        --len;
    }
    /* A channel scale alone with one other step gains nothing from the blocked layout (a
     * convolution followed by a product with a constant [1, C, 1, 1], ResNet50-FPN's frozen batch
     * normalization, ran 52 such pairs as chains, 7 ms slower than as two layers). */
    uint32_t scales = 0;
    for (uint32_t u = first; u < first + len; ++u) scales += units[u].step.scale_id != 0;
    /* nor do views and sums (they only move or add what the chain's other steps hold) */
    for (uint32_t u = first; u < first + len; ++u) {
        const pn_layer* l = units[u].step.layer;
        scales += l->kind == PN_LAYER_SLICE || l->kind == PN_LAYER_SPLIT ||
                  (l->kind == PN_LAYER_ELEMENTWISE_BINARY && units[u].step.scale_id == 0);
    }
    return len >= 2 && len - scales >= 2 ? make_chain(sg, o, units, first, first + len, unit_of, state, item_dropped)
                                         : PN_OK;
}

/* Finds the runs of two or more consecutive units (in the order of their latest
 * layer, nothing else in between) that the blocked kernels run on `isa`, and replaces each by
 * one blocked chain; then rebuilds the substitution list. */
pn_status accel_plan_chains(const pn_subgraph* sg, accel_optimization* o, unsigned char* state,
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
            const fusion_links* l = &it->links;
            int64_t last = l->act >= 0 ? l->act : l->add >= 0 ? l->add : l->head;
            if (last == (int64_t)j && (sg->layers[l->head].kind == PN_LAYER_CONVOLUTION_2D ||
                                       sg->layers[l->head].kind == PN_LAYER_CONVOLUTION)) {
                item = (int64_t)k;
            }
        }
        chain_unit* u = &units[num_units];
        if (item >= 0) {
            const fusion_links* l = &o->items[item].links;
            u->head = l->head;
            u->add = l->add;
            u->act = l->act;
            u->addend_slot = l->addend_slot;
        } else if ((sg->layers[j].kind == PN_LAYER_PRECOMPILED && accel_patterns_kind_of(o->patterns, sg->layers[j].id) == 2) ||
                   (state[j] == LAYER_CANDIDATE && (sg->layers[j].kind == PN_LAYER_CONVOLUTION_2D ||
                                                   sg->layers[j].kind == PN_LAYER_POOLING_2D ||
                                                   sg->layers[j].kind == PN_LAYER_CONCAT ||
                                                   sg->layers[j].kind == PN_LAYER_CONVOLUTION ||
                                                   sg->layers[j].kind == PN_LAYER_RESIZE ||
                                                   sg->layers[j].kind == PN_LAYER_SLICE || sum_layer(&sg->layers[j]) ||
                                                   scale_x_slot(&sg->layers[j]) >= 0)) ||
                   (state[j] == LAYER_KEPT && sg->layers[j].kind == PN_LAYER_SPLIT && sg->layers[j].num_outputs >= 1)) {
            /* (a PRECOMPILED layer of the pattern pass: accel_chain_step_fit takes batch
             * normalizations with their activation, ops/batch_norm.h) */
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
        u->step.layer = head;
        int xs = scale_x_slot(head);
        u->step.x_id = head->input_ids[xs > 0 ? xs : 0];
        u->step.scale_id = xs >= 0 ? head->input_ids[1 - xs] : 0;
        u->step.y_id = last->output_ids[0];
        u->step.y_info = &last->outputs[0];
        u->step.addend_id = u->add >= 0 ? sg->layers[u->add].input_ids[u->addend_slot] : 0;
        if (u->item < 0 && xs < 0 && sum_layer(head)) { /* a sum: x + addend */
            u->step.addend_id = head->input_ids[1];
        }
        u->step.act = u->act >= 0 ? (const pn_activation_desc*)sg->layers[u->act].descriptor : NULL;
        u->step.num_names = 0;
        add_names(o->patterns, head, &u->step);
        if (u->add >= 0) add_names(o->patterns, &sg->layers[u->add], &u->step);
        if (u->act >= 0) add_names(o->patterns, &sg->layers[u->act], &u->step);
        unit_of[u->head] = num_units;
        if (u->add >= 0) unit_of[u->add] = num_units;
        if (u->act >= 0) unit_of[u->act] = num_units;
        u->fit = accel_chain_step_fit(isa, &u->step);
        for (uint32_t k = 1; head->kind == PN_LAYER_SPLIT && k < head->num_outputs && u->fit != ACCEL_CHAIN_NO; ++k) {
            accel_chain_step piece = u->step; /* every output a view */
            piece.y_id = head->output_ids[k];
            piece.y_info = &head->outputs[k];
            u->fit = accel_chain_step_fit(isa, &piece);
        }
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
        const pn_layer_kind kind = u >= 0 ? units[u].step.layer->kind : PN_LAYER_CONCAT;
        if (fit == ACCEL_CHAIN_YES &&
            (kind == PN_LAYER_CONCAT || kind == PN_LAYER_SLICE || kind == PN_LAYER_SPLIT ||
             (kind == PN_LAYER_ELEMENTWISE_BINARY && units[u].step.scale_id == 0)) &&
            !parts_in_run(&units[u], units, run_first, run_len)) {
            fit = ACCEL_CHAIN_NO; /* a part from outside would be converted in, the whole out again */
        }
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

