/* CpuAcc blocked chains (chain/chain.h). What a chain admits: which steps the blocked kernels run inside a chain (accel_chain_step_fit) and the tests the payload builder shares with it. */
#include "chain/packed_chain.h"
#include "plugnn/pn_resize_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The activation of a step as a clamp; 0 when it is not one that keeps zero at zero. */
int chain_clamp_of(const pn_activation_desc* act, float* lo, float* hi) {
    *lo = -INFINITY;
    *hi = INFINITY;
    if (act == NULL || act->kind == PN_ACTIVATION_INVALID) {
        return 1;
    }
    if (act->kind == PN_ACTIVATION_RELU) {
        *lo = 0.0f;
        return 1;
    }
    if (act->kind == PN_ACTIVATION_BOUNDED_RELU && act->alpha <= 0.0f && act->beta >= 0.0f) {
        *lo = act->alpha;
        *hi = act->beta;
        return 1;
    }
    return 0;
}

const pn_activation_desc* chain_step_act(const accel_chain_step* cs) {
    if (cs->layer->kind == PN_LAYER_ELEMENTWISE_BINARY) { /* a sum */
        const pn_elementwise_binary_desc* e = (const pn_elementwise_binary_desc*)cs->layer->descriptor;
        return cs->act != NULL ? cs->act : e->fused_activation;
    }
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)cs->layer->descriptor;
    return cs->act != NULL ? cs->act : d->fused_activation;
}

/* Whether a step's activation keeps the zero lanes of its output zero (accel_chain_step_fit):
 * a clamp that does, or a kind whose kernel (the one the chain runs it with) maps 0 to +-0. */
int chain_keeps_zero(accel_isa isa, const pn_activation_desc* act) {
    float lo, hi;
    if (chain_clamp_of(act, &lo, &hi)) {
        return 1;
    }
    const float zero = 0.0f;
    float out = 1.0f;
    accel_kernel_set_for(isa)->vector->activation(act, &zero, &out, 1);
    return out == 0.0f;
}

/* Inside a chain no conversion has to be paid for, so a tensor may fill as little as half of
 * its 16-channel blocks (8 channels in 16 lanes, 24 in 32): the dense kernel skips the zero
 * input channels, only output lanes are wasted. */
int chain_blocks_pay(int64_t channels) {
    return channels >= B / 2 && chain_blocks(channels) * B <= channels * 2;
}

/* A 1x1 convolution of a 1 x 1 map (squeeze-and-excitation's fully connected layers): its
 * input and output are a few blocks whatever their channel counts, so it runs in a chain with
 * any of them (4 or 6 channels included), on 16-lane blocks. */
int chain_tiny_map(const pn_layer* l) {
    const pn_tensor_info* xi = &l->inputs[0];
    const pn_tensor_info* yi = &l->outputs[0];
    const pn_tensor_info* wi = &l->inputs[1];
    return l->num_inputs >= 2 && xi->rank == 4 && yi->rank == 4 && wi->rank == 4 && xi->dims[2] == 1 &&
           xi->dims[3] == 1 && yi->dims[2] == 1 && yi->dims[3] == 1 && wi->dims[2] == 1 && wi->dims[3] == 1 &&
           xi->dims[1] >= 1 && yi->dims[1] >= 1;
}

/* The payload of a PRECOMPILED batch normalization + activation layer (ops/batch_norm.h) in NCHW
 * of rank 4, else NULL. */
const accel_bn_act* chain_bn_act_of(const pn_layer* l) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)l->descriptor;
    const accel_bn_act* p = l->kind == PN_LAYER_PRECOMPILED && d != NULL ? (const accel_bn_act*)d->payload : NULL;
    return p != NULL && p->magic == ACCEL_BN_ACT_MAGIC && p->layout == PN_LAYOUT_NCHW && p->input.rank == 4 ? p : NULL;
}

#if defined(ACCEL_HAVE_X86_KERNELS)
/* A channel scale step: MUL, no activation, x [N, C, H, W] = the output's shape, s [N, C, 1, 1]. */
static int scale_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)l->descriptor;
    if (d->op != PN_BINARY_MUL || d->fused_activation != NULL || cs->act != NULL || cs->addend_id != 0 ||
        cs->scale_id == 0 || l->num_inputs != 2 || l->num_outputs != 1) {
        return 0;
    }
    const pn_tensor_info *x = NULL, *sc = NULL, *y = &l->outputs[0];
    for (uint32_t k = 0; k < 2; ++k) {
        if (l->input_ids[k] == cs->x_id && x == NULL) x = &l->inputs[k];
        else if (l->input_ids[k] == cs->scale_id) sc = &l->inputs[k];
    }
    if (x == NULL || sc == NULL || x->rank != 4 || sc->rank != 4 || y->rank != 4 || cs->y_info->rank != 4 ||
        x->dtype != PN_DTYPE_FLOAT32 || sc->dtype != PN_DTYPE_FLOAT32 || y->dtype != PN_DTYPE_FLOAT32) {
        return 0;
    }
    for (uint32_t i = 0; i < 4; ++i) {
        if (x->dims[i] != y->dims[i] || cs->y_info->dims[i] != y->dims[i]) return 0;
    }
    return x->dims[0] >= 1 && x->dims[2] >= 1 && x->dims[3] >= 1 && sc->dims[0] == x->dims[0] &&
           sc->dims[1] == x->dims[1] && sc->dims[2] == 1 && sc->dims[3] == 1 && chain_blocks_pay(x->dims[1]);
}

/* A batch normalization step (chain/chain.h). */
static int bn_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const accel_bn_act* p = chain_bn_act_of(l);
    if (p == NULL || cs->act != NULL || cs->addend_id != 0 || cs->scale_id != 0 || l->num_inputs != 1 ||
        l->num_outputs != 1 || cs->x_id != l->input_ids[0] || cs->y_info->rank != 4) {
        return 0;
    }
    const pn_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (x->rank != 4 || y->rank != 4 || x->dtype != PN_DTYPE_FLOAT32 || y->dtype != PN_DTYPE_FLOAT32 ||
        !pn_same_dims(x, y) || !pn_same_dims(x, &p->input) || !pn_same_dims(cs->y_info, y) || p->channels != x->dims[1]) {
        return 0;
    }
    return x->dims[0] >= 1 && x->dims[2] >= 1 && x->dims[3] >= 1 && chain_blocks_pay(x->dims[1]);
}

/* A channel concatenation step (chain/chain.h). */
static int concat_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_concat_desc* d = (const pn_concat_desc*)l->descriptor;
    const pn_tensor_info* y = &l->outputs[0];
    if ((d->axis != 1 && d->axis != -3) || cs->act != NULL || cs->addend_id != 0 || cs->scale_id != 0 ||
        l->num_inputs < 1 || l->num_inputs > ACCEL_CHAIN_MAX_PARTS || l->num_outputs != 1 || y->rank != 4 ||
        y->dtype != PN_DTYPE_FLOAT32 || cs->y_info->rank != 4 || cs->x_id != l->input_ids[0] ||
        y->dims[0] < 1 || y->dims[2] < 1 || y->dims[3] < 1 || !chain_blocks_pay(y->dims[1])) {
        return 0;
    }
    int64_t channels = 0;
    for (uint32_t k = 0; k < l->num_inputs; ++k) {
        const pn_tensor_info* x = &l->inputs[k];
        if (x->rank != 4 || x->dtype != PN_DTYPE_FLOAT32 || x->dims[0] != y->dims[0] || x->dims[2] != y->dims[2] ||
            x->dims[3] != y->dims[3] || x->dims[1] < 1 || (k + 1 < l->num_inputs && x->dims[1] % B != 0)) {
            return 0;
        }
        channels += x->dims[1];
    }
    for (uint32_t i = 0; i < 4; ++i) {
        if (cs->y_info->dims[i] != y->dims[i]) return 0;
    }
    return channels == y->dims[1];
}

/* A transposed convolution step (chain/chain.h): kernel = stride, no padding. */
static int deconv_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_convolution_desc* d = (const pn_convolution_desc*)l->descriptor;
    if (d->op != PN_CONVOLUTION_TRANSPOSED || d->spatial_rank != 2 || d->groups != 1 || cs->addend_id != 0 ||
        cs->scale_id != 0 || (cs->act != NULL && d->fused_activation != NULL) || l->num_inputs < 2 ||
        l->num_outputs != 1 || cs->x_id != l->input_ids[0] || l->constant_data == NULL ||
        l->constant_data[1] == NULL || ((d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0 &&
                                        (l->num_inputs < 3 || l->constant_data[2] == NULL))) {
        return 0;
    }
    const pn_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    if (x->rank != 4 || w->rank != 4 || y->rank != 4 || cs->y_info->rank != 4 || x->dtype != PN_DTYPE_FLOAT32 ||
        w->dtype != PN_DTYPE_FLOAT32 || y->dtype != PN_DTYPE_FLOAT32 || !pn_same_dims(cs->y_info, y)) {
        return 0;
    }
    for (uint32_t a = 0; a < 2; ++a) {
        if (d->strides[a] != (uint32_t)w->dims[2 + a] || d->pads_begin[a] != 0 || d->pads_end[a] != 0 ||
            d->output_padding[a] != 0 || d->dilations[a] != 1 || y->dims[2 + a] != x->dims[2 + a] * w->dims[2 + a]) {
            return 0;
        }
    }
    return x->dims[0] >= 1 && x->dims[2] >= 1 && x->dims[3] >= 1 && w->dims[0] == x->dims[1] &&
           w->dims[1] == y->dims[1] && y->dims[0] == x->dims[0] && w->dims[3] <= ACCEL_DECONV_MAX_KW &&
           chain_blocks_pay(x->dims[1]) && chain_blocks_pay(y->dims[1]);
}

/* A resize step (chain/chain.h): H and W only, two taps per axis, no output extrapolated or zeroed;
 * LINEAR resizes both (an axis left as it is would multiply its element by a weight 0). */
static int resize_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_resize_desc* d = (const pn_resize_desc*)l->descriptor;
    const pn_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if ((d->mode != PN_RESIZE_NEAREST && d->mode != PN_RESIZE_LINEAR) || cs->act != NULL || cs->addend_id != 0 ||
        cs->scale_id != 0 || l->num_inputs != 1 || l->num_outputs != 1 || cs->x_id != l->input_ids[0] ||
        x->rank != 4 || y->rank != 4 || d->rank != 4 || cs->y_info->rank != 4 || x->dtype != PN_DTYPE_FLOAT32 ||
        y->dtype != PN_DTYPE_FLOAT32 || !pn_same_dims(cs->y_info, y) || x->dims[0] < 1 || x->dims[2] < 1 ||
        x->dims[3] < 1 || y->dims[2] < 1 || y->dims[3] < 1 || y->dims[2] > INT32_MAX || y->dims[3] > INT32_MAX ||
        !pn_resize_axis_skipped(d, 0, x->dims[0], y->dims[0]) ||
        !pn_resize_axis_skipped(d, 1, x->dims[1], y->dims[1]) ||
        !chain_blocks_pay(x->dims[1])) {
        return 0;
    }
    for (uint32_t a = 2; a < 4; ++a) {
        if (pn_resize_taps(d, a) != 2 ||
            (d->mode == PN_RESIZE_LINEAR && pn_resize_axis_skipped(d, a, x->dims[a], y->dims[a]))) {
            return 0;
        }
        for (int64_t o = 0; o < y->dims[a]; ++o) {
            int64_t first = 0;
            double w[2];
            unsigned char special = PN_RESIZE_NORMAL;
            if (!pn_resize_axis_skipped(d, a, x->dims[a], y->dims[a])) {
                pn_resize_plan_index(d, a, x->dims[a], y->dims[a], 2, o, &first, w, &special);
            }
            if (special != PN_RESIZE_NORMAL) return 0;
        }
    }
    return 1;
}

#endif

/* The first channel and the channel count of a view step's y in its x (view_fit), or 0 when
 * the layer is not a channel view. */
int chain_view_range(const accel_chain_step* cs, int64_t* start, int64_t* count) {
    const pn_layer* l = cs->layer;
    const pn_tensor_info* x = &l->inputs[0];
    if (l->num_inputs != 1 || x->rank != 4 || cs->y_info->rank != 4) {
        return 0;
    }
    if (l->kind == PN_LAYER_SLICE) {
        const pn_slice_desc* d = (const pn_slice_desc*)l->descriptor;
        if (l->num_outputs != 1 || d->rank != 4 || l->output_ids[0] != cs->y_id) return 0;
        for (uint32_t a = 0; a < 4; ++a) {
            if (d->steps[a] != 1 || (a != 1 && (d->starts[a] != 0 || x->dims[a] != cs->y_info->dims[a]))) return 0;
        }
        *start = d->starts[1];
        *count = cs->y_info->dims[1];
        return 1;
    }
    const pn_split_desc* d = (const pn_split_desc*)l->descriptor;
    if (l->kind != PN_LAYER_SPLIT || (d->axis != 1 && d->axis != -3)) {
        return 0;
    }
    int64_t at = 0;
    for (uint32_t k = 0; k < l->num_outputs; ++k) {
        if (l->output_ids[k] == cs->y_id) {
            *start = at;
            *count = l->outputs[k].dims[1];
            return pn_same_dims(&l->outputs[k], cs->y_info);
        }
        at += l->outputs[k].dims[1];
    }
    return 0;
}

#if defined(ACCEL_HAVE_X86_KERNELS)
/* A channel view step (chain/chain.h). */
static int view_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_tensor_info *x = &l->inputs[0], *y = cs->y_info;
    int64_t start = 0, count = 0;
    if (!chain_view_range(cs, &start, &count) || cs->act != NULL || cs->addend_id != 0 || cs->scale_id != 0 ||
        cs->x_id != l->input_ids[0] || x->dtype != PN_DTYPE_FLOAT32 || y->dtype != PN_DTYPE_FLOAT32) {
        return 0;
    }
    return x->dims[0] >= 1 && x->dims[2] >= 1 && x->dims[3] >= 1 && y->dims[0] == x->dims[0] &&
           y->dims[2] == x->dims[2] && y->dims[3] == x->dims[3] && count >= 1 && start >= 0 &&
           start + count <= x->dims[1] && start % B == 0 && ((start + count) % B == 0 || start + count == x->dims[1]) &&
           chain_blocks_pay(x->dims[1]);
}

/* A sum step (chain/chain.h). */
static int sum_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)l->descriptor;
    if (d->op != PN_BINARY_ADD || (cs->act != NULL && d->fused_activation != NULL) || cs->scale_id != 0 ||
        l->num_inputs != 2 || l->num_outputs != 1 || cs->x_id != l->input_ids[0] || cs->addend_id != l->input_ids[1]) {
        return 0;
    }
    const pn_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    if (a->rank != 4 || b->rank != 4 || y->rank != 4 || a->dtype != PN_DTYPE_FLOAT32 || b->dtype != PN_DTYPE_FLOAT32 ||
        y->dtype != PN_DTYPE_FLOAT32 || !pn_same_dims(a, y) || !pn_same_dims(b, y) || !pn_same_dims(cs->y_info, y)) {
        return 0;
    }
    return y->dims[0] >= 1 && y->dims[2] >= 1 && y->dims[3] >= 1 && chain_blocks_pay(y->dims[1]);
}

#endif

accel_chain_fit accel_chain_step_fit(accel_isa isa, const accel_chain_step* cs) {
#if defined(ACCEL_HAVE_X86_KERNELS)
    const pn_layer* l = cs->layer;
    if (!accel_kernel_set_for(isa)->nchwc || l->descriptor == NULL) {
        return ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_POOLING_2D) {
        const pn_pooling_2d_desc* p = (const pn_pooling_2d_desc*)l->descriptor;
        const pn_tensor_info* pi = &l->inputs[0];
        const pn_tensor_info* po = &l->outputs[0];
        return p->layout == PN_LAYOUT_NCHW && (p->kind == PN_POOLING_MAX || p->kind == PN_POOLING_AVERAGE) &&
                       cs->act == NULL && cs->addend_id == 0 && cs->scale_id == 0 && pi->rank == 4 && po->rank == 4 &&
                       pi->dtype == PN_DTYPE_FLOAT32 && po->dtype == PN_DTYPE_FLOAT32 && pi->dims[0] >= 1 &&
                       po->dims[2] >= 1 && po->dims[3] >= 1 && chain_blocks_pay(pi->dims[1])
                   ? ACCEL_CHAIN_YES
                   : ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_ELEMENTWISE_BINARY) {
        return (cs->scale_id != 0 ? scale_fit(cs) : sum_fit(cs)) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_SLICE || l->kind == PN_LAYER_SPLIT) {
        return view_fit(cs) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_CONCAT) {
        return concat_fit(cs) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_PRECOMPILED) {
        return bn_fit(cs) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_CONVOLUTION) {
        return deconv_fit(cs) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    if (l->kind == PN_LAYER_RESIZE) {
        return resize_fit(cs) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    if (l->kind != PN_LAYER_CONVOLUTION_2D) {
        return ACCEL_CHAIN_NO;
    }
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)l->descriptor;
    const pn_tensor_info* xi = &l->inputs[0];
    const pn_tensor_info* yi = &l->outputs[0];
    if (d->layout != PN_LAYOUT_NCHW || (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0 ||
        (cs->act != NULL && d->fused_activation != NULL) || cs->scale_id != 0 ||
        l->constant_data == NULL || l->constant_data[1] == NULL ||
        ((d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0 && l->constant_data[2] == NULL) ||
        xi->rank != 4 || yi->rank != 4 || cs->y_info->rank != 4 ||
        xi->dtype != PN_DTYPE_FLOAT32 || yi->dtype != PN_DTYPE_FLOAT32) {
        return ACCEL_CHAIN_NO;
    }
    for (uint32_t i = 0; i < 4; ++i) {
        if (cs->y_info->dims[i] != yi->dims[i]) {
            return ACCEL_CHAIN_NO;
        }
    }
    int64_t c = xi->dims[1], o = yi->dims[1];
    if (xi->dims[0] < 1 || yi->dims[2] < 1 || yi->dims[3] < 1) {
        return ACCEL_CHAIN_NO;
    }
    if (d->groups == 1 && chain_tiny_map(l)) {
        return ACCEL_CHAIN_YES; /* any channel counts: a few products on 16-lane blocks */
    }
    if (d->groups == 1 && o < B / 2 && chain_blocks_pay(c) && l->inputs[1].dims[2] == 1 && l->inputs[1].dims[3] == 1 &&
        d->stride_h == 1 && d->stride_w == 1 && d->pad_top == 0 && d->pad_left == 0 && d->pad_bottom == 0 &&
        d->pad_right == 0) {
        /* a 1x1 projection to fewer than 8 channels (a segmentation head: U-Net's 2 classes): 16
         * lanes for o channels, but its input is not unpacked to NCHW (it is the larger tensor) */
        return ACCEL_CHAIN_YES;
    }
    if (d->groups == 1 && chain_blocks_pay(o)) {
        return chain_blocks_pay(c) ? ACCEL_CHAIN_YES
                                   : c <= 64 ? ACCEL_CHAIN_FIRST : ACCEL_CHAIN_NO;
    }
    /* depthwise, multiplier 1 */
    if (d->groups == c && o == c) {
        return chain_blocks_pay(c) ? ACCEL_CHAIN_YES : ACCEL_CHAIN_NO;
    }
    return d->groups > 1 && chain_blocks_pay(c) && chain_blocks_pay(o) &&
                   accel_nchwc_group_blocks(c, o, (int64_t)d->groups) > 0
               ? ACCEL_CHAIN_YES
               : ACCEL_CHAIN_NO;
#else
    (void)isa;
    (void)cs;
    return ACCEL_CHAIN_NO;
#endif
}
