/* CpuAcc POOLING (the N-D kind, pn_pooling_desc) on float32 (and MAX on int8 / uint8: ONNX MaxPool of
 * a quantized network), 1-D and 2-D: POOLING_2D's
 * workload (ops/pooling2d.c: the sub-plane and blocked-row kernels) on the 2-D view of the layer, a
 * 1-D layer as one of height 1 (x [N, C, L] -> [N, C, 1, L]; kernel, stride and dilation 1 and
 * no padding along the added axis). The view's workload checks its tensors against the view's
 * shapes, so the workload here checks the layer's own and passes the view's on. 3-D pooling is
 * refused (accel_pooling_nd_check) and runs on the next backend. */
#include "ops/create.h"

#include <stdlib.h>
#include <string.h>

pn_status accel_pooling_nd_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    /* float32, or MAX on int8 / uint8 (what the shared validation admits for integers), as POOLING_2D */
    const pn_data_type t = layer->num_inputs > 0 ? layer->inputs[0].dtype : PN_DTYPE_FLOAT32;
    const pn_pooling_desc* d = (const pn_pooling_desc*)layer->descriptor;
    pn_status s = (t == PN_DTYPE_UINT8 || t == PN_DTYPE_INT8) && d->kind == PN_POOLING_MAX
                      ? pn_plugin_check_dtype(plugin, layer, t, reason)
                      : pn_plugin_float32_only(plugin, layer, reason);
    if (s == PN_OK && d->spatial_rank > 2) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Pooling on 1-D and 2-D inputs only; this one is %u-D",
                       plugin->id, d->spatial_rank);
    }
    return s;
}

typedef struct view_state {
    pn_workload* inner;
    pn_tensor_info layer_in, layer_out; /* the layer's shapes */
    pn_tensor_info view_in, view_out;   /* the 2-D view's */
} view_state;

static void view_release(void* vs) {
    view_state* s = (view_state*)vs;
    if (s != NULL) {
        if (s->inner != NULL) {
            s->inner->destroy(s->inner);
        }
        free(s);
    }
}

static pn_status view_execute(void* vs, const pn_execute_args* args, pn_string_out* message_out) {
    const view_state* s = (const view_state*)vs;
    pn_status st = pn_check_execute_args(args, 1, &s->layer_in, 1, &s->layer_out, "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    pn_tensor in = args->inputs[0], out = args->outputs[0];
    in.info = &s->view_in;
    out.info = &s->view_out;
    pn_execute_args view = *args;
    view.inputs = &in;
    view.outputs = &out;
    return s->inner->execute(s->inner, &view, message_out);
}

static void lift(pn_tensor_info* dst, const pn_tensor_info* src) {
    *dst = *src;
    dst->struct_size = (uint32_t)sizeof(pn_tensor_info);
    dst->extension = NULL;
    if (src->rank == 3) { /* [N, C, L] -> [N, C, 1, L] */
        dst->rank = 4;
        dst->dims[3] = src->dims[2];
        dst->dims[2] = 1;
    }
}

pn_status accel_pooling_nd_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                  pn_string_out* message_out) {
    const pn_pooling_desc* d = (const pn_pooling_desc*)layer->descriptor;
    int two = d->spatial_rank == 2;
    pn_pooling_2d_desc p2;
    memset(&p2, 0, sizeof(p2));
    p2.struct_size = (uint32_t)sizeof(p2);
    p2.kind = d->kind;
    p2.layout = PN_LAYOUT_NCHW;
    p2.kernel_h = two ? d->kernel[0] : 1;
    p2.kernel_w = d->kernel[two ? 1 : 0];
    p2.stride_h = two ? d->strides[0] : 1;
    p2.stride_w = d->strides[two ? 1 : 0];
    p2.pad_top = two ? d->pads_begin[0] : 0;
    p2.pad_bottom = two ? d->pads_end[0] : 0;
    p2.pad_left = d->pads_begin[two ? 1 : 0];
    p2.pad_right = d->pads_end[two ? 1 : 0];
    p2.dilation_h = two ? d->dilations[0] : 1;
    p2.dilation_w = d->dilations[two ? 1 : 0];
    p2.rounding = d->rounding;
    p2.padding_method = d->padding_method;
    p2.p = d->p;
    view_state* s = (view_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->layer_in = layer->inputs[0];
    s->layer_out = layer->outputs[0];
    s->layer_in.extension = s->layer_out.extension = NULL;
    lift(&s->view_in, &layer->inputs[0]);
    lift(&s->view_out, &layer->outputs[0]);
    pn_layer view = *layer;
    view.kind = PN_LAYER_POOLING_2D;
    view.descriptor = &p2;
    view.inputs = &s->view_in;
    view.outputs = &s->view_out;
    /* The 2-D layer is valid when the N-D one is (the same windows): judged again to be sure. */
    pn_status st = pn_validate_layer(&view, message_out);
    if (st == PN_OK) {
        st = accel_pooling2d_create(context, &view, &s->inner, message_out);
    }
    if (st != PN_OK) {
        view_release(s);
        return st;
    }
    *workload_out = pn_workload_new(s, view_execute, view_release, s->inner->workspace_bytes);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    return PN_OK;
}
