/* What the optimization passes share (opt/pass.h): fused layers' names, the tensor table. */
#include "opt/pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `other` without the part it shares with `first` up to and including a '.' or '/'. */
static const char* short_name(const char* first, const char* other) {
    size_t cut = 0;
    for (size_t i = 0; first[i] != '\0' && first[i] == other[i]; ++i) {
        if (other[i] == '.' || other[i] == '/') {
            cut = i + 1;
        }
    }
    return other[cut] != '\0' ? other + cut : other;
}

char* accel_fused_name(const pn_subgraph* sg, const int64_t* layers, uint32_t count) {
    const char* first = NULL;
    size_t len = 1;
    for (uint32_t k = 0; k < count; ++k) {
        if (layers[k] < 0) {
            continue;
        }
        const char* n = sg->layers[layers[k]].name != NULL ? sg->layers[layers[k]].name : "";
        len += first == NULL ? strlen(n) : 1 + strlen(short_name(first, n));
        first = first == NULL ? n : first;
    }
    char* text = (char*)malloc(len);
    if (text == NULL) {
        return NULL;
    }
    text[0] = '\0';
    size_t at = 0;
    first = NULL;
    for (uint32_t k = 0; k < count && at < len; ++k) {
        if (layers[k] < 0) {
            continue;
        }
        const char* n = sg->layers[layers[k]].name != NULL ? sg->layers[layers[k]].name : "";
        at += (size_t)(first == NULL ? snprintf(text + at, len - at, "%s", n)
                                     : snprintf(text + at, len - at, "+%s", short_name(first, n)));
        first = first == NULL ? n : first;
    }
    return text;
}

int accel_tensor_table_build(const pn_subgraph* sg, accel_tensor_table* t) {
    memset(t, 0, sizeof(*t));
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        const pn_layer* l = &sg->layers[i];
        for (uint32_t k = 0; k < l->num_inputs; ++k) t->max_id = l->input_ids[k] > t->max_id ? l->input_ids[k] : t->max_id;
        for (uint32_t k = 0; k < l->num_outputs; ++k) t->max_id = l->output_ids[k] > t->max_id ? l->output_ids[k] : t->max_id;
    }
    if (t->max_id >= ACCEL_MAX_TENSOR_ID) {
        return 0;
    }
    const size_t n = (size_t)t->max_id + 1;
    t->producer = (int64_t*)malloc(n * sizeof(int64_t));
    t->uses = (uint32_t*)calloc(n, sizeof(uint32_t));
    t->is_output = (unsigned char*)calloc(n, 1);
    if (t->producer == NULL || t->uses == NULL || t->is_output == NULL) {
        return 0;
    }
    for (size_t i = 0; i < n; ++i) {
        t->producer[i] = -1;
    }
    for (uint32_t i = 0; i < sg->num_output_ids; ++i) {
        if (sg->output_ids[i] <= t->max_id) {
            t->is_output[sg->output_ids[i]] = 1;
        }
    }
    for (uint32_t i = 0; i < sg->num_layers; ++i) {
        const pn_layer* l = &sg->layers[i];
        for (uint32_t k = 0; k < l->num_inputs; ++k) ++t->uses[l->input_ids[k]];
        for (uint32_t k = 0; k < l->num_outputs; ++k) t->producer[l->output_ids[k]] = (int64_t)i;
    }
    return 1;
}

void accel_tensor_table_free(accel_tensor_table* t) {
    free(t->producer);
    free(t->uses);
    free(t->is_output);
    memset(t, 0, sizeof(*t));
}
