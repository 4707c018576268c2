/* The one workload type of CpuRef: copies of the layer, argument checks, a kernel. */
#include "cpuref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Index helpers -------------------------------------------------------- */

void cpuref_layout_strides(pn_data_layout layout, const int64_t nchw[4], int64_t strides[4]) {
    int64_t c = nchw[1], h = nchw[2], w = nchw[3];
    if (layout == PN_LAYOUT_NHWC) {
        strides[0] = h * w * c;
        strides[1] = 1;
        strides[2] = w * c;
        strides[3] = c;
    } else {
        strides[0] = c * h * w;
        strides[1] = h * w;
        strides[2] = w;
        strides[3] = 1;
    }
}

void cpuref_unravel(const pn_tensor_info* info, int64_t linear, int64_t index[PN_MAX_DIMS]) {
    for (int32_t i = (int32_t)info->rank - 1; i >= 0; --i) {
        int64_t d = info->dims[i];
        index[i] = d > 0 ? linear % d : 0;
        linear = d > 0 ? linear / d : 0;
    }
}

int64_t cpuref_dot(const int64_t* index, const int64_t* strides, uint32_t rank) {
    int64_t offset = 0;
    for (uint32_t i = 0; i < rank; ++i) {
        offset += index[i] * strides[i];
    }
    return offset;
}

int64_t cpuref_span(const pn_tensor_info* info, uint32_t begin, uint32_t end) {
    int64_t n = 1;
    for (uint32_t i = begin; i < end; ++i) {
        n *= info->dims[i];
    }
    return n;
}

void cpuref_copy_floats(float* dst, const float* src, int64_t n) {
    if (n > 0) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    }
}

void cpuref_spatial3_dims(uint32_t rank, const int64_t* values, int64_t fill, int64_t out[3]) {
    for (uint32_t slot = 0; slot < 3; ++slot) {
        out[slot] = slot >= 3 - rank ? values[slot - (3 - rank)] : fill;
    }
}

void cpuref_spatial3_u32(uint32_t rank, const uint32_t* values, int64_t fill, int64_t out[3]) {
    for (uint32_t slot = 0; slot < 3; ++slot) {
        out[slot] = slot >= 3 - rank ? (int64_t)values[slot - (3 - rank)] : fill;
    }
}

/* ---- State ---------------------------------------------------------------- */

/* Which constant buffers a layer reads: per input the address the layer gave for its
 * constant data (NULL for a computed input). The addresses are only compared (by
 * reshape), never read: execute() reads constants from its arguments, like any input. */
typedef struct cpuref_constants {
    uint32_t num_inputs;
    const void** data;
} cpuref_constants;

static void constants_release(void* data) {
    cpuref_constants* c = (cpuref_constants*)data;
    if (c != NULL) {
        free(c->data);
        free(c);
    }
}

static pn_shared* constants_new(const pn_layer* layer) {
    cpuref_constants* c = (cpuref_constants*)calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->num_inputs = layer->num_inputs;
    c->data = (const void**)calloc(layer->num_inputs > 0 ? layer->num_inputs : 1, sizeof(void*));
    if (c->data == NULL) {
        free(c);
        return NULL;
    }
    for (uint32_t i = 0; layer->constant_data != NULL && i < layer->num_inputs; ++i) {
        c->data[i] = layer->constant_data[i];
    }
    return pn_shared_new(c, constants_release);
}

static void op_release(void* state) {
    cpuref_op* op = (cpuref_op*)state;
    if (op == NULL) {
        return;
    }
    pn_shared_unref(op->constants);
    if (op->staged != NULL) {
        for (uint32_t i = 0; i < op->num_inputs + op->num_outputs; ++i) {
            free(op->staged[i]);
        }
        free(op->staged);
    }
    free(op->priv);
    free(op->inputs);
    free(op->outputs);
    free(op->in_data);
    free(op->out_data);
    free(op->strides);
    free(op);
}

/* calloc that never asks for 0 bytes (so NULL always means out of memory). */
static void* alloc_array(uint32_t count, size_t size) {
    return calloc(count > 0 ? count : 1, size);
}

static cpuref_op* op_copy_layer(const pn_layer* layer) {
    cpuref_op* op = (cpuref_op*)calloc(1, sizeof(*op));
    if (op == NULL) {
        return NULL;
    }
    op->kind = layer->kind;
    op->num_inputs = layer->num_inputs;
    op->num_outputs = layer->num_outputs;
    op->inputs = (pn_tensor_info*)alloc_array(layer->num_inputs, sizeof(pn_tensor_info));
    op->outputs = (pn_tensor_info*)alloc_array(layer->num_outputs, sizeof(pn_tensor_info));
    op->in_data = (const float**)alloc_array(layer->num_inputs, sizeof(float*));
    op->out_data = (float**)alloc_array(layer->num_outputs, sizeof(float*));
    op->strides = (int64_t(*)[PN_MAX_DIMS])alloc_array(layer->num_inputs, sizeof(*op->strides));
    op->constants = constants_new(layer);
    if (op->inputs == NULL || op->outputs == NULL || op->in_data == NULL || op->out_data == NULL ||
        op->strides == NULL || op->constants == NULL) {
        op_release(op);
        return NULL;
    }
    /* Copy the fields we read: the caller's struct may be older than ours. */
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        op->inputs[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        op->inputs[i].dtype = layer->inputs[i].dtype;
        op->inputs[i].rank = layer->inputs[i].rank;
        memcpy(op->inputs[i].dims, layer->inputs[i].dims, sizeof(op->inputs[i].dims));
    }
    for (uint32_t i = 0; i < layer->num_outputs; ++i) {
        op->outputs[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        op->outputs[i].dtype = layer->outputs[i].dtype;
        op->outputs[i].rank = layer->outputs[i].rank;
        memcpy(op->outputs[i].dims, layer->outputs[i].dims, sizeof(op->outputs[i].dims));
    }
    return op;
}

static void op_copy_descriptor(cpuref_op* op, const pn_layer* layer, size_t desc_size,
                               const pn_activation_desc* fused) {
    if (desc_size > 0 && layer->descriptor != NULL) {
        size_t given = *(const uint32_t*)layer->descriptor;
        memcpy(&op->desc, layer->descriptor, given < desc_size ? given : desc_size);
    }
    /* The fused activation pointer inside the copy is borrowed: keep a copy instead. */
    if (op->kind == PN_LAYER_CONVOLUTION_2D) {
        op->desc.conv.fused_activation = NULL;
    } else if (op->kind == PN_LAYER_ELEMENTWISE_BINARY) {
        op->desc.binary.fused_activation = NULL;
    } else if (op->kind == PN_LAYER_FULLY_CONNECTED) {
        op->desc.fc.fused_activation = NULL;
    } else if (op->kind == PN_LAYER_CONVOLUTION) {
        op->desc.convnd.fused_activation = NULL;
    }
    if (fused != NULL) {
        op->has_activation = 1;
        op->activation.struct_size = (uint32_t)sizeof(pn_activation_desc);
        op->activation.kind = fused->kind;
        op->activation.alpha = fused->alpha;
        op->activation.beta = fused->beta;
    }
}

/* ---- Float staging ------------------------------------------------------------ */

/* A float32 buffer for each input and output of another float type, for a float kernel. */
static int op_stage(cpuref_op* op) {
    uint32_t n = op->num_inputs + op->num_outputs;
    for (uint32_t i = 0; i < n; ++i) {
        const pn_tensor_info* info = i < op->num_inputs ? &op->inputs[i] : &op->outputs[i - op->num_inputs];
        if (!pn_dtype_is_float(info->dtype) || info->dtype == PN_DTYPE_FLOAT32) {
            continue;
        }
        if (op->staged == NULL) {
            op->staged = (float**)calloc(n, sizeof(float*));
            if (op->staged == NULL) {
                return -1;
            }
        }
        int64_t count = pn_num_elements(info);
        op->staged[i] = (float*)malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
        if (op->staged[i] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* ---- Execute -------------------------------------------------------------- */

static int outputs_empty(const cpuref_op* op) {
    for (uint32_t i = 0; i < op->num_outputs; ++i) {
        if (pn_num_elements(&op->outputs[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

/* ---- Execute -------------------------------------------------------------- */

static pn_status op_execute(void* state, const pn_execute_args* args, pn_string_out* message_out) {
    cpuref_op* op = (cpuref_op*)state;
    pn_status s = pn_check_execute_args(args, op->num_inputs, op->inputs, op->num_outputs,
                                        op->outputs, "CpuRef", message_out);
    if (s != PN_OK) {
        return s;
    }
    op->output_dims = PN_HAS_FIELD(args, pn_execute_args, output_dims) ? args->output_dims : NULL;
    if (op->kind == PN_LAYER_DATA_DEPENDENT && op->output_dims == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuRef DataDependent: the execute arguments "
                       "give no output_dims to report the outputs' actual dims in");
    }
    if (outputs_empty(op) && op->kind != PN_LAYER_DATA_DEPENDENT) { /* those report their dims */
        return PN_OK; /* nothing to write */
    }
    /* An empty input may come with NULL data: give kernels a valid pointer they never read. */
    static const double no_elements = 0.0;
    for (uint32_t i = 0; i < op->num_inputs; ++i) {
        const void* data = args->inputs[i].data;
        op->in_data[i] = data != NULL ? (const float*)data : (const float*)&no_elements;
    }
    for (uint32_t i = 0; i < op->num_outputs; ++i) {
        op->out_data[i] = (float*)args->outputs[i].data;
    }
    op->workspace = args->workspace;
    if (op->typed != NULL) {
        return op->typed(op, (const void* const*)op->in_data, (void* const*)op->out_data, message_out);
    }
    if (op->staged == NULL) {
        op->kernel(op, op->in_data, op->out_data);
        return PN_OK;
    }
    /* Other float types through float32: inputs converted in, outputs converted out. */
    const float** in = op->in_data;
    for (uint32_t i = 0; i < op->num_inputs; ++i) {
        if (op->staged[i] != NULL) {
            pn_convert(PN_DTYPE_FLOAT32, op->staged[i], op->inputs[i].dtype, in[i],
                       pn_num_elements(&op->inputs[i]));
            in[i] = op->staged[i];
        }
    }
    float** out = op->out_data;
    for (uint32_t i = 0; i < op->num_outputs; ++i) {
        if (op->staged[op->num_inputs + i] != NULL) {
            out[i] = op->staged[op->num_inputs + i];
        }
    }
    op->kernel(op, in, out);
    for (uint32_t i = 0; i < op->num_outputs; ++i) {
        if (op->staged[op->num_inputs + i] != NULL) {
            pn_convert(op->outputs[i].dtype, args->outputs[i].data, PN_DTYPE_FLOAT32, out[i],
                       pn_num_elements(&op->outputs[i]));
        }
    }
    return PN_OK;
}

/* ---- Reshape ------------------------------------------------------------------- */

/* NULL when `op` (just built from `layer`) is the layer of `src` at other shapes: the
 * same kind, descriptor, fused activation, element types, and the same constants (the
 * same buffers, of the same shapes); else what differs. */
static const char* op_differs(const cpuref_op* src, const cpuref_op* op, char* text, size_t size) {
    if (op->kind != src->kind || op->num_inputs != src->num_inputs ||
        op->num_outputs != src->num_outputs) {
        return "its kind or number of inputs or outputs differs";
    }
    if (memcmp(&op->desc, &src->desc, sizeof(op->desc)) != 0 ||
        op->has_activation != src->has_activation ||
        (op->has_activation && (op->activation.kind != src->activation.kind ||
                                op->activation.alpha != src->activation.alpha ||
                                op->activation.beta != src->activation.beta))) {
        return "its descriptor differs";
    }
    const cpuref_constants* a = (const cpuref_constants*)pn_shared_data(src->constants);
    const cpuref_constants* b = (const cpuref_constants*)pn_shared_data(op->constants);
    for (uint32_t i = 0; i < op->num_inputs; ++i) {
        if (op->inputs[i].dtype != src->inputs[i].dtype) {
            snprintf(text, size, "input %u has another element type", i);
            return text;
        }
        if (a->data[i] != b->data[i]) {
            snprintf(text, size, "input %u is not the constant buffer the workload was made with", i);
            return text;
        }
        if (a->data[i] != NULL && !pn_same_dims(&op->inputs[i], &src->inputs[i])) {
            snprintf(text, size, "constant input %u has another shape", i);
            return text;
        }
    }
    for (uint32_t i = 0; i < op->num_outputs; ++i) {
        if (op->outputs[i].dtype != src->outputs[i].dtype) {
            snprintf(text, size, "output %u has another element type", i);
            return text;
        }
    }
    return NULL;
}

/* pn_workload.reshape: the layer is judged and built as create_workload would (CpuRef
 * derives nothing from constants: it reads them at execute), checked to be the source's
 * layer at other shapes, and the new workload shares the source's record of its constant
 * buffers. */
static pn_status op_reshape(const void* state, const pn_layer* layer, pn_workload** workload_out,
                            pn_string_out* message_out) {
    const cpuref_op* src = (const cpuref_op*)state;
    pn_workload* made = NULL;
    pn_status s = cpuref_create_workload(layer, &made, message_out);
    if (s != PN_OK) {
        return s;
    }
    cpuref_op* op = (cpuref_op*)pn_workload_state(made);
    char text[96];
    const char* why = op_differs(src, op, text, sizeof(text));
    if (why != NULL) {
        made->destroy(made);
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuRef reshape(layer '%s'): not the workload's layer at other shapes: %s",
                       layer->name != NULL ? layer->name : "?", why);
    }
    pn_shared_unref(op->constants);
    op->constants = pn_shared_ref(src->constants);
    *workload_out = made;
    return PN_OK;
}

static pn_status op_finish(cpuref_op* op, const pn_layer* layer, size_t workspace_bytes,
                           pn_workload** workload_out, pn_string_out* message_out) {
    *workload_out = pn_workload_new_reshapable(op, op_execute, op_release, workspace_bytes,
                                               op_reshape);
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    return PN_OK;
}

pn_status cpuref_workload_new(const pn_layer* layer, size_t desc_size,
                              const pn_activation_desc* fused, cpuref_kernel kernel,
                              pn_workload** workload_out, pn_string_out* message_out) {
    return cpuref_workload_new_scratch(layer, desc_size, fused, kernel, 0, workload_out,
                                       message_out);
}

pn_status cpuref_workload_new_scratch(const pn_layer* layer, size_t desc_size,
                                      const pn_activation_desc* fused, cpuref_kernel kernel,
                                      size_t workspace_bytes, pn_workload** workload_out,
                                      pn_string_out* message_out) {
    cpuref_op* op = op_copy_layer(layer);
    if (op == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    op_copy_descriptor(op, layer, desc_size, fused);
    op->kernel = kernel;
    if (op_stage(op) != 0) {
        op_release(op);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    return op_finish(op, layer, workspace_bytes, workload_out, message_out);
}

pn_status cpuref_typed_workload_new(const pn_layer* layer, size_t desc_size,
                                    const pn_activation_desc* fused, cpuref_typed_kernel kernel,
                                    void* priv, pn_workload** workload_out,
                                    pn_string_out* message_out) {
    cpuref_op* op = op_copy_layer(layer);
    if (op == NULL) {
        free(priv);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuRef: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    op_copy_descriptor(op, layer, desc_size, fused);
    op->typed = kernel;
    op->priv = priv;
    return op_finish(op, layer, 0, workload_out, message_out);
}
