/* CpuAcc workload of the memory-bound families; argument checks; kernel selection. */
#include "accel.h"
#include "kernels/vector_kernels.h"

#include <stdlib.h>
#include <string.h>

void accel_apply_activation(accel_isa isa, const pn_activation_desc* act, float* y, int64_t n) {
    if (act != NULL && n > 0) {
        accel_kernel_set_for(isa)->vector->activation(act, y, y, n);
    }
}

int accel_copy_activation(const pn_activation_desc* src, pn_activation_desc* dst) {
    if (src == NULL || src->kind == PN_ACTIVATION_INVALID) {
        return 0;
    }
    *dst = *src;
    dst->struct_size = sizeof(*dst);
    return 1;
}

int64_t accel_span(const pn_tensor_info* info, uint32_t begin, uint32_t end) {
    int64_t n = 1;
    for (uint32_t i = begin; i < end; ++i) {
        n *= info->dims[i];
    }
    return n;
}

/* ---- The workload ------------------------------------------------------------ */

static void op_release(void* state) {
    accel_op* op = (accel_op*)state;
    if (op == NULL) {
        return;
    }
    free(op->inputs);
    free(op->outputs);
    free(op->in_data);
    free(op->out_data);
    free(op->priv);
    free(op);
}

static void* alloc_array(uint32_t count, size_t size) { return calloc(count > 0 ? count : 1, size); }

void accel_copy_infos(pn_tensor_info* dst, const pn_tensor_info* src, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        memset(&dst[i], 0, sizeof(dst[i]));
        dst[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        dst[i].dtype = src[i].dtype;
        dst[i].rank = src[i].rank;
        memcpy(dst[i].dims, src[i].dims, sizeof(dst[i].dims));
    }
}

void accel_copy_layer_infos(pn_tensor_info* dst, const pn_layer* layer) {
    accel_copy_infos(dst, layer->inputs, layer->num_inputs);
    accel_copy_infos(dst + layer->num_inputs, layer->outputs, layer->num_outputs);
}

static pn_status op_execute(void* state, const pn_execute_args* args, pn_string_out* message_out) {
    accel_op* op = (accel_op*)state;
    pn_status s = pn_check_execute_args(args, op->num_inputs, op->inputs, op->num_outputs,
                                        op->outputs, "CpuAcc",
                                        message_out);
    if (s != PN_OK) {
        return s;
    }
    if (pn_num_elements(&op->outputs[0]) == 0) {
        return PN_OK;
    }
    static const float no_elements = 0.0f;
    for (uint32_t i = 0; i < op->num_inputs; ++i) {
        const void* data = args->inputs[i].data;
        op->in_data[i] = data != NULL ? (const float*)data : &no_elements;
    }
    for (uint32_t i = 0; i < op->num_outputs; ++i) {
        op->out_data[i] = (float*)args->outputs[i].data;
    }
    op->kernel(op, op->in_data, op->out_data);
    return PN_OK;
}

int accel_streams(const accel_env* env, const pn_layer* layer) {
    int64_t bytes = 0;
    for (uint32_t i = 0; i < layer->num_inputs; ++i) {
        bytes += pn_num_elements(&layer->inputs[i]) * (int64_t)sizeof(float);
    }
    for (uint32_t i = 0; i < layer->num_outputs; ++i) {
        bytes += pn_num_elements(&layer->outputs[i]) * (int64_t)sizeof(float);
    }
    return bytes > env->stream_bytes;
}

pn_status accel_workload_new(const accel_env* env, const pn_layer* layer, size_t desc_size,
                             const pn_activation_desc* fused, accel_kernel kernel, void* priv,
                             pn_workload** workload_out, pn_string_out* message_out) {
    accel_op* op = (accel_op*)calloc(1, sizeof(*op));
    if (op == NULL) {
        free(priv);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    op->priv = priv;
    op->env = *env;
    op->k = accel_kernel_set_for(env->isa)->vector;
    op->kind = layer->kind;
    op->kernel = kernel;
    op->num_inputs = layer->num_inputs;
    op->num_outputs = layer->num_outputs;
    op->inputs = (pn_tensor_info*)alloc_array(layer->num_inputs, sizeof(pn_tensor_info));
    op->outputs = (pn_tensor_info*)alloc_array(layer->num_outputs, sizeof(pn_tensor_info));
    op->in_data = (const float**)alloc_array(layer->num_inputs, sizeof(float*));
    op->out_data = (float**)alloc_array(layer->num_outputs, sizeof(float*));
    if (op->inputs == NULL || op->outputs == NULL || op->in_data == NULL || op->out_data == NULL) {
        op_release(op);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    accel_copy_infos(op->inputs, layer->inputs, layer->num_inputs);
    accel_copy_infos(op->outputs, layer->outputs, layer->num_outputs);
    if (desc_size > 0 && layer->descriptor != NULL) {
        size_t given = *(const uint32_t*)layer->descriptor;
        if (desc_size > sizeof(op->desc)) {
            desc_size = sizeof(op->desc);
        }
        memcpy(&op->desc, layer->descriptor, given < desc_size ? given : desc_size);
    }
    if (op->kind == PN_LAYER_ELEMENTWISE_BINARY) {
        op->desc.binary.fused_activation = NULL; /* borrowed: keep the copy below instead */
    }
    op->stream_out = accel_streams(env, layer);
    op->has_activation = accel_copy_activation(fused, &op->activation);
    *workload_out = pn_workload_new(op, op_execute, op_release, 0);
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s "
                       "workload", pn_layer_kind_name(layer->kind));
    }
    return PN_OK;
}
