/* Validation of PN_LAYER_RECURRENT (ONNX RNN, GRU, LSTM): the descriptor, the inputs its
 * flags name, every shape, the activations and the element types (backend_api.h). */
#include "pn_validate_internal.h"

#include <stdio.h>

/* The optional inputs, in the order they follow x, w, r (their flag bits). */
static const struct {
    uint32_t flag;
    const char* name;
} optional_inputs[] = {
    {PN_RECURRENT_HAS_BIAS, "b"},
    {PN_RECURRENT_HAS_SEQUENCE_LENS, "sequence_lens"},
    {PN_RECURRENT_HAS_INITIAL_H, "initial_h"},
    {PN_RECURRENT_HAS_INITIAL_C, "initial_c"},
    {PN_RECURRENT_HAS_PEEPHOLES, "p"},
};

#define NUM_OPTIONAL (sizeof(optional_inputs) / sizeof(optional_inputs[0]))
#define KNOWN_FLAGS                                                                     \
    (PN_RECURRENT_HAS_BIAS | PN_RECURRENT_HAS_SEQUENCE_LENS | PN_RECURRENT_HAS_INITIAL_H | \
     PN_RECURRENT_HAS_INITIAL_C | PN_RECURRENT_HAS_PEEPHOLES)

static const char* cell_name(pn_recurrent_cell cell) {
    switch (cell) {
    case PN_RECURRENT_RNN: return "RNN";
    case PN_RECURRENT_GRU: return "GRU";
    case PN_RECURRENT_LSTM: return "LSTM";
    case PN_RECURRENT_INVALID: break;
    }
    return "?";
}

/* Gates per cell (the rows of w and r per direction are gates * hidden). */
static uint32_t cell_gates(pn_recurrent_cell cell) {
    return cell == PN_RECURRENT_LSTM ? 4u : (cell == PN_RECURRENT_GRU ? 3u : 1u);
}

/* Activations per direction: RNN f; GRU f, g; LSTM f, g, h. */
static uint32_t cell_functions(pn_recurrent_cell cell) {
    return cell == PN_RECURRENT_LSTM ? 3u : (cell == PN_RECURRENT_GRU ? 2u : 1u);
}

/* The activation kinds ONNX's recurrent operators name (Affine is LINEAR). */
static int is_recurrent_activation(pn_activation_kind kind) {
    switch (kind) {
    case PN_ACTIVATION_RELU:
    case PN_ACTIVATION_TANH:
    case PN_ACTIVATION_SIGMOID:
    case PN_ACTIVATION_LINEAR:
    case PN_ACTIVATION_LEAKY_RELU:
    case PN_ACTIVATION_THRESHOLDED_RELU:
    case PN_ACTIVATION_SCALED_TANH:
    case PN_ACTIVATION_HARD_SIGMOID:
    case PN_ACTIVATION_ELU:
    case PN_ACTIVATION_SOFTSIGN:
    case PN_ACTIVATION_SOFTPLUS: return 1;
    default: return 0;
    }
}

static pn_status check_bool(pn_bool value, const char* field, pn_string_out* reason) {
    if (value > 1) {
        return PNV_FAIL(reason, "Recurrent: %s must be 0 or 1, got %u", field, value);
    }
    return PN_OK;
}

/* The descriptor's values on their own and the cell/flag/option combinations. */
static pn_status check_descriptor(const pn_recurrent_desc* d, pn_string_out* reason) {
    if (d->cell < PN_RECURRENT_RNN || d->cell > PN_RECURRENT_LSTM) {
        return PNV_FAIL(reason, "Recurrent: unknown cell %d", (int)d->cell);
    }
    if (d->direction < PN_DIRECTION_FORWARD || d->direction > PN_DIRECTION_BIDIRECTIONAL) {
        return PNV_FAIL(reason, "Recurrent: unknown direction %d", (int)d->direction);
    }
    if (d->hidden_size < 1) {
        return PNV_FAIL(reason, "Recurrent: hidden_size must be >= 1, got 0");
    }
    if ((d->flags & ~KNOWN_FLAGS) != 0) {
        return PNV_FAIL(reason, "Recurrent: unknown flags 0x%x", d->flags & ~KNOWN_FLAGS);
    }
    PNV_TRY(check_bool(d->batch_major, "batch_major", reason));
    PNV_TRY(check_bool(d->linear_before_reset, "linear_before_reset", reason));
    PNV_TRY(check_bool(d->input_forget, "input_forget", reason));
    if (!(d->clip >= 0.0f)) {
        return PNV_FAIL(reason, "Recurrent: clip must be >= 0 (0: none), got %g", (double)d->clip);
    }
    const char* cell = cell_name(d->cell);
    if (d->cell != PN_RECURRENT_LSTM) {
        if (d->flags & PN_RECURRENT_HAS_INITIAL_C) {
            return PNV_FAIL(reason, "Recurrent: initial_c is LSTM's, the cell is %s", cell);
        }
        if (d->flags & PN_RECURRENT_HAS_PEEPHOLES) {
            return PNV_FAIL(reason, "Recurrent: peepholes are LSTM's, the cell is %s", cell);
        }
        if (d->input_forget) {
            return PNV_FAIL(reason, "Recurrent: input_forget is LSTM's, the cell is %s", cell);
        }
    }
    if (d->cell != PN_RECURRENT_GRU && d->linear_before_reset) {
        return PNV_FAIL(reason, "Recurrent: linear_before_reset is GRU's, the cell is %s", cell);
    }
    uint32_t dirs = d->direction == PN_DIRECTION_BIDIRECTIONAL ? 2u : 1u;
    uint32_t needed = cell_functions(d->cell) * dirs;
    if (d->num_activations != needed) {
        return PNV_FAIL(reason, "Recurrent: a%s %s takes %u activations (%u per direction), got %u",
                        dirs == 2 ? " bidirectional" : "", cell, needed, needed / dirs,
                        d->num_activations);
    }
    for (uint32_t i = 0; i < d->num_activations; ++i) {
        if (!is_recurrent_activation(d->activations[i])) {
            return PNV_FAIL(reason, "Recurrent: activation %u (kind %d) is not one of the "
                            "recurrent activations (relu, tanh, sigmoid, linear, leaky_relu, "
                            "thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, softplus)",
                            i, (int)d->activations[i]);
        }
    }
    return PN_OK;
}

static uint32_t num_optional_inputs(uint32_t flags) {
    uint32_t n = 0;
    for (size_t i = 0; i < NUM_OPTIONAL; ++i) {
        n += (flags & optional_inputs[i].flag) ? 1u : 0u;
    }
    return n;
}

/* Counts: x, w, r and one input per flag; y, y_h and, for LSTM, y_c. */
static pn_status check_counts(const pn_layer* layer, const pn_recurrent_desc* d,
                              pn_string_out* reason) {
    uint32_t inputs = 3 + num_optional_inputs(d->flags);
    if (layer->num_inputs != inputs) {
        return PNV_FAIL(reason, "Recurrent: takes %u inputs (x, w, r and one per flag 0x%x), "
                        "got %u", inputs, d->flags, layer->num_inputs);
    }
    uint32_t outputs = d->cell == PN_RECURRENT_LSTM ? 3u : 2u;
    if (layer->num_outputs != outputs) {
        return PNV_FAIL(reason, "Recurrent: %s has %u outputs (y, y_h%s), got %u",
                        cell_name(d->cell), outputs, outputs == 3 ? ", y_c" : "",
                        layer->num_outputs);
    }
    return PN_OK;
}

/* A shape to compare with, of rank 1 to 4. */
static pn_tensor_info shape_of(uint32_t rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    pn_tensor_info info = {0};
    info.struct_size = (uint32_t)sizeof(info);
    info.rank = rank;
    info.dims[0] = d0;
    info.dims[1] = d1;
    info.dims[2] = d2;
    info.dims[3] = d3;
    return info;
}

/* Every input's and output's shape, from x's and the descriptor's. */
static pn_status check_shapes(const pn_layer* layer, const pn_recurrent_desc* d,
                              pn_string_out* reason) {
    const pn_tensor_info* x = &layer->inputs[0];
    PNV_TRY(pnv_rank(layer, x, "x", 3, 3, reason));
    int64_t seq = d->batch_major ? x->dims[1] : x->dims[0];
    int64_t batch = d->batch_major ? x->dims[0] : x->dims[1];
    int64_t size = x->dims[2];
    int64_t dirs = d->direction == PN_DIRECTION_BIDIRECTIONAL ? 2 : 1;
    int64_t hidden = (int64_t)d->hidden_size;
    int64_t rows = (int64_t)cell_gates(d->cell) * hidden;
    pn_tensor_info w = shape_of(3, dirs, rows, size, 0);
    pn_tensor_info r = shape_of(3, dirs, rows, hidden, 0);
    PNV_TRY(pnv_shape_is(layer, &layer->inputs[1], &w, "w", reason));
    PNV_TRY(pnv_shape_is(layer, &layer->inputs[2], &r, "r", reason));
    /* The state (initial_h, initial_c, y_h, y_c) is laid out like y without its seq axis. */
    pn_tensor_info state = d->batch_major ? shape_of(3, batch, dirs, hidden, 0)
                                          : shape_of(3, dirs, batch, hidden, 0);
    const pn_tensor_info expected[NUM_OPTIONAL] = {
        shape_of(2, dirs, 2 * rows, 0, 0), shape_of(1, batch, 0, 0, 0), state, state,
        shape_of(2, dirs, 3 * hidden, 0, 0)};
    uint32_t next = 3;
    for (size_t i = 0; i < NUM_OPTIONAL; ++i) {
        if (d->flags & optional_inputs[i].flag) {
            char what[48];
            snprintf(what, sizeof(what), "input %u (%s)", next, optional_inputs[i].name);
            PNV_TRY(pnv_shape_is(layer, &layer->inputs[next], &expected[i], what, reason));
            ++next;
        }
    }
    pn_tensor_info y = d->batch_major ? shape_of(4, batch, seq, dirs, hidden)
                                      : shape_of(4, seq, dirs, batch, hidden);
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[0], &y, "output 0 (y)", reason));
    PNV_TRY(pnv_shape_is(layer, &layer->outputs[1], &state, "output 1 (y_h)", reason));
    if (layer->num_outputs == 3) {
        PNV_TRY(pnv_shape_is(layer, &layer->outputs[2], &state, "output 2 (y_c)", reason));
    }
    return PN_OK;
}

/* One float type for every tensor but sequence_lens, which is INT32. */
static pn_status check_types(const pn_layer* layer, const pn_recurrent_desc* d,
                             pn_string_out* reason) {
    uint32_t lens = UINT32_MAX;
    if (d->flags & PN_RECURRENT_HAS_SEQUENCE_LENS) {
        lens = (d->flags & PN_RECURRENT_HAS_BIAS) ? 4u : 3u;
        const pn_tensor_info* info = &layer->inputs[lens];
        if (info->dtype != PN_DTYPE_INT32) {
            return PNV_FAIL(reason, "Recurrent: input %u (sequence_lens) must be int32, not %s",
                            lens, pn_dtype_name(info->dtype));
        }
    }
    /* x, w, r, b and the outputs; then the inputs after sequence_lens. */
    PNV_TRY(pnv_same_type(layer, 0, lens == UINT32_MAX ? UINT32_MAX : lens - 1, 1, PNV_FLOAT,
                          reason));
    pn_data_type t = layer->inputs[0].dtype;
    for (uint32_t i = lens + 1; lens != UINT32_MAX && i < layer->num_inputs; ++i) {
        if (layer->inputs[i].dtype != t) {
            return PNV_FAIL(reason, "Recurrent: input %u is %s but input 0 is %s", i,
                            pn_dtype_name(layer->inputs[i].dtype), pn_dtype_name(t));
        }
    }
    return PN_OK;
}

pn_status pn_validate_recurrent(const pn_layer* layer, pn_string_out* reason) {
    const pn_recurrent_desc* d = (const pn_recurrent_desc*)layer->descriptor;
    PNV_TRY(check_descriptor(d, reason));
    PNV_TRY(check_counts(layer, d, reason));
    PNV_TRY(check_types(layer, d, reason));
    return check_shapes(layer, d, reason);
}
