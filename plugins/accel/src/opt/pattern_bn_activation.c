/* CpuAcc pattern fusion (opt/patterns.h): a batch normalization with the activation that alone reads it (ops/batch_norm.h). */
#include "opt/pattern_match.h"
#include "ops/batch_norm.h"

#include <stdlib.h>
#include <string.h>

/* ---- Batch normalization + activation (ops/batch_norm.h) ------------------------------------------- */

/* A BATCH_NORMALIZATION with constant scale, bias, mean and var, and the ACTIVATION that alone
 * reads its output: one PRECOMPILED layer. */
int accel_match_bn_activation(pat_ctx* c, int64_t i, pat_match* m) {
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

