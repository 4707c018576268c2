/* Acme's kernels: float32 RELU / leaky RELU / sigmoid, same-shape ADD / MUL (with a fused
 * RELU), and fully connected y = act(a @ b + c) without transposes or scaling. Each
 * workload copies what it needs from the layer (the layer is only borrowed). */
#include "acme.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- limits ------------------------------------------------------------------------ */

static int is_relu_or_none(const pn_activation_desc* act) {
    return act == NULL || (PN_HAS_FIELD(act, pn_activation_desc, kind) && act->kind == PN_ACTIVATION_RELU);
}

pn_status acme_check_activation(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_activation_desc* d = (const pn_activation_desc*)layer->descriptor;
    if (d->kind != PN_ACTIVATION_RELU && d->kind != PN_ACTIVATION_LEAKY_RELU &&
        d->kind != PN_ACTIVATION_SIGMOID) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs the RELU, LEAKY_RELU and SIGMOID activations only",
                       plugin->id);
    }
    return pn_plugin_float32_only(plugin, layer, reason);
}

pn_status acme_check_binary(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    if (d->op != PN_BINARY_ADD && d->op != PN_BINARY_MUL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs ADD and MUL only", plugin->id);
    }
    if (!pn_same_dims(&layer->inputs[0], &layer->outputs[0]) ||
        !pn_same_dims(&layer->inputs[1], &layer->outputs[0])) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s does not broadcast: both inputs need the output's shape",
                       plugin->id);
    }
    if (!is_relu_or_none(d->fused_activation)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s fuses RELU only", plugin->id);
    }
    return pn_plugin_float32_only(plugin, layer, reason);
}

pn_status acme_check_fully_connected(const pn_plugin* plugin, const pn_layer* layer,
                                     pn_string_out* reason) {
    const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)layer->descriptor;
    if (d->transpose_a || d->transpose_b || d->alpha != 1.0f || d->beta != 1.0f ||
        (d->flags & PN_LAYER_FLAG_HAS_ADDEND)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s runs a @ b + c only: no transposes, alpha = beta = 1, no addend", plugin->id);
    }
    if ((d->flags & PN_LAYER_FLAG_HAS_BIAS) &&
        !(layer->inputs[2].rank == 1 && layer->inputs[2].dims[0] == layer->outputs[0].dims[1])) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s takes a bias of shape [N] only", plugin->id);
    }
    if (!is_relu_or_none(d->fused_activation)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s fuses RELU only", plugin->id);
    }
    return pn_plugin_float32_only(plugin, layer, reason);
}

/* ---- workloads ------------------------------------------------------------------- */

typedef struct acme_state {
    pn_layer_kind kind;
    uint32_t op;  /* activation kind or binary operation */
    float alpha;  /* leaky RELU slope */
    int relu;     /* fused RELU */
    int has_bias;
    int64_t count, m, k, n;
} acme_state;

static pn_status acme_execute(void* state, const pn_execute_args* args, pn_string_out* message_out) {
    const acme_state* s = (const acme_state*)state;
    float* y = (float*)args->outputs[0].data;
    const float* a = (const float*)args->inputs[0].data;
    if (s->kind == PN_LAYER_ACTIVATION) {
        for (int64_t i = 0; i < s->count; ++i) {
            float x = a[i];
            y[i] = s->op == PN_ACTIVATION_RELU         ? (x > 0.0f ? x : 0.0f)
                   : s->op == PN_ACTIVATION_LEAKY_RELU ? (x >= 0.0f ? x : s->alpha * x)
                                                       : 1.0f / (1.0f + expf(-x));
        }
        return PN_OK;
    }
    const float* b = (const float*)args->inputs[1].data;
    if (s->kind == PN_LAYER_ELEMENTWISE_BINARY) {
        for (int64_t i = 0; i < s->count; ++i) {
            float v = s->op == PN_BINARY_ADD ? a[i] + b[i] : a[i] * b[i];
            y[i] = s->relu && v < 0.0f ? 0.0f : v;
        }
        return PN_OK;
    }
    if (s->kind == PN_LAYER_FULLY_CONNECTED) {
        const float* c = s->has_bias ? (const float*)args->inputs[2].data : NULL;
        for (int64_t i = 0; i < s->m; ++i) {
            for (int64_t j = 0; j < s->n; ++j) {
                double sum = c != NULL ? c[j] : 0.0;
                for (int64_t p = 0; p < s->k; ++p) {
                    sum += (double)a[i * s->k + p] * b[p * s->n + j];
                }
                float v = (float)sum;
                y[i * s->n + j] = s->relu && v < 0.0f ? 0.0f : v;
            }
        }
        return PN_OK;
    }
    return pn_fail(message_out, PN_ERR_INTERNAL, "AcmeBasic: a workload of unknown kind");
}

static pn_status acme_new(const acme_state* s, pn_workload** workload_out, pn_string_out* message_out) {
    acme_state* copy = (acme_state*)malloc(sizeof(*copy));
    if (copy == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "AcmeBasic: out of memory");
    }
    memcpy(copy, s, sizeof(*copy));
    *workload_out = pn_workload_new(copy, acme_execute, free, 0); /* frees copy on failure */
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "AcmeBasic: out of memory");
    }
    return PN_OK;
}

pn_status acme_create_activation(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out) {
    (void)context;
    const pn_activation_desc* d = (const pn_activation_desc*)layer->descriptor;
    acme_state s = {PN_LAYER_ACTIVATION, (uint32_t)d->kind, d->alpha, 0, 0,
                    pn_num_elements(&layer->inputs[0]), 0, 0, 0};
    return acme_new(&s, workload_out, message_out);
}

pn_status acme_create_binary(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    (void)context;
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    acme_state s = {PN_LAYER_ELEMENTWISE_BINARY, (uint32_t)d->op, 0.0f, d->fused_activation != NULL, 0,
                    pn_num_elements(&layer->outputs[0]), 0, 0, 0};
    return acme_new(&s, workload_out, message_out);
}

pn_status acme_create_fully_connected(void* context, const pn_layer* layer,
                                      pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    const pn_fully_connected_desc* d = (const pn_fully_connected_desc*)layer->descriptor;
    acme_state s = {PN_LAYER_FULLY_CONNECTED, 0, 0.0f, d->fused_activation != NULL,
                    (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0, 0,
                    layer->inputs[0].dims[0], layer->inputs[0].dims[1], layer->inputs[1].dims[1]};
    return acme_new(&s, workload_out, message_out);
}
