/* CpuAcc blocked chains (see chain_run.h): which steps they run, the payload, its workload. */
#include "chain_run.h"
#include "batch_norm.h"
#include "chain_upsample.h"
#include "conv_nchwc.h"
#include "shared_weights.h"
#include "plugnn/pn_resize_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define B NCHWC_BLOCK
#define CHAIN_MAGIC 0x314e4843u /* "CHN1" */

typedef struct chain_tensor {
    uint32_t id;
    pn_tensor_info info;     /* NCHW float32 */
    int64_t ib;              /* channels per block: 16, or all of a narrow input's */
    int64_t ht, hl, hb, hr;  /* halo the consuming convolutions read (their padding) */
    int produced;            /* written by a step (else an input of the chain) */
    int32_t alias_of;        /* -1, or the concatenation whose blocks [alias_block, ...) hold this
                                tensor (a part, or a concatenation of its first parts: alias_concats) */
    int64_t alias_block;
} chain_tensor;

typedef struct packed_step {
    int64_t rpj;             /* output rows per job (step_rows_per_job) */
    int64_t pass_blocks;     /* (dense convolutions) input blocks per pass (accel_nchwc_pass_blocks) */
    int rows_first;          /* jobs split by rows before output blocks (step_rows_first) */
    int pooling;             /* a pooling step (pp), else a convolution */
    nchwc_pool pp;
    int depthwise;
    int grouped;             /* a grouped convolution: one output block per job, reading gcb input
                                blocks from accel_nchwc_group_first (conv_nchwc.h) */
    int64_t groups;
    int scale_step;          /* a channel scale: y = x * s (s [N, C, 1, 1], tensor index `scale`) */
    int32_t scale;
    int bn_step;             /* a batch normalization: y = clamp(fma(x - m, a, c)) (+ post_act) */
    float* bn_coef;          /* (bn_step) per output block a[16], m[16], c[16], zeros past the
                                channels (owned) */
    int concat;              /* a channel concatenation: y's blocks [part_block[k], ...) are part k's */
    uint32_t num_parts;
    uint32_t part[ACCEL_CHAIN_MAX_PARTS];        /* tensor indices */
    int64_t part_block[ACCEL_CHAIN_MAX_PARTS];   /* the first output block of each part */
    int in_place;            /* (concat) its parts are written inside it: nothing to run */
    int view;                /* a channel view: y is x's blocks [view_block, ...) (alias_views) */
    int64_t view_block;
    int sum_step;            /* a sum: y = clamp(x + addend) (+ post_act) */
    int rezero;              /* post_act maps 0 elsewhere: zero the last block's lanes past oc_last */
    nchwc_geom g;
    uint32_t x, y;           /* tensor indices */
    int32_t addend;          /* tensor index, -1: none */
    int64_t pt, pl;          /* the convolution's top and left padding */
    float lo, hi;            /* fused activation as a clamp */
    int post_act;            /* a fused activation that is not a clamp, applied after the kernel */
    pn_activation_desc act;  /* (post_act) */
    int64_t o, c;            /* a convolution's output and input channels (weights [o][c/groups][kh][kw]) */
    nchwc_window win;        /* the taps it runs (g.kh x g.kw of the weights' kernel: chain_taps) */
    int32_t w_in, b_in;      /* a convolution's weights and bias: indices into the replacement's
                                inputs (constants, packed by the workload), b_in -1: no bias */
    int deconv;              /* a transposed convolution with kernel = stride (chain_upsample.h):
                                g.kh x g.kw the kernel, g.cb / g.ic_last its input blocks */
    int resize;              /* a resize along H and W: 1 LINEAR, 2 NEAREST (chain_upsample.h) */
    int32_t* rs_idx;         /* (resize) per output row its 2 input rows, then per output column its
                                2 input columns (owned) */
    float* rs_w;             /* (resize) their weights, the same layout (owned) */
} packed_step;

/* The chain's convolutions' weights and biases are inputs of the replacement layer (after the
 * activations it reads), so the runtime keeps them alive and gives them to create_workload and
 * reshape as constants: the workload packs them (shared_weights.h), not optimize_subgraph, and
 * the workloads of one session's specializations share one packed copy. */
struct accel_chain {
    uint32_t magic;
    uint32_t num_tensors, num_steps, num_inputs, num_outputs, num_consts;
    chain_tensor* tensors;
    packed_step* steps;
    uint32_t* inputs;        /* tensor indices of the replacement's activation inputs */
    uint32_t* outputs;       /* tensor indices of the replacement's outputs */
    uint32_t* const_ids;     /* the tensor ids of the constant inputs, after the activations */
    pn_tensor_info* const_infos;
    char label[256];
};

static int64_t blocks(int64_t v) { return (v + B - 1) / B; }

/* The geometry of a step that reads its input only inside the image at its own positions (a
 * Concat, a squeeze-excitation scale): 1x1, every block of the output `y`'s channels, no clamp. */
static void pointwise_geometry(packed_step* st, const pn_tensor_info* y) {
    st->g.ib = B;
    st->g.cb = st->g.ocb = blocks(y->dims[1]);
    st->g.oh = y->dims[2];
    st->g.ow = y->dims[3];
    st->g.kh = st->g.kw = 1;
    st->lo = -INFINITY;
    st->hi = INFINITY;
}

static float* align64(float* p) { return (float*)(((uintptr_t)p + 63u) & ~(uintptr_t)63u); }

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The activation of a step as a clamp; 0 when it is not one that keeps zero at zero. */
static int clamp_of(const pn_activation_desc* act, float* lo, float* hi) {
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

static const pn_activation_desc* step_act(const accel_chain_step* cs) {
    if (cs->layer->kind == PN_LAYER_ELEMENTWISE_BINARY) { /* a sum */
        const pn_elementwise_binary_desc* e = (const pn_elementwise_binary_desc*)cs->layer->descriptor;
        return cs->act != NULL ? cs->act : e->fused_activation;
    }
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)cs->layer->descriptor;
    return cs->act != NULL ? cs->act : d->fused_activation;
}

/* Whether a step's activation keeps the zero lanes of its output zero (accel_chain_step_fit):
 * a clamp that does, or a kind whose kernel (the one the chain runs it with) maps 0 to +-0. */
static int keeps_zero(accel_isa isa, const pn_activation_desc* act) {
    float lo, hi;
    if (clamp_of(act, &lo, &hi)) {
        return 1;
    }
    const float zero = 0.0f;
    float out = 1.0f;
    accel_kernels_for(isa)->activation(act, &zero, &out, 1);
    return out == 0.0f;
}

/* Inside a chain no conversion has to be paid for, so a tensor may fill as little as half of
 * its 16-channel blocks (8 channels in 16 lanes, 24 in 32): the dense kernel skips the zero
 * input channels, only output lanes are wasted. */
static int chain_blocks_pay(int64_t channels) {
    return channels >= B / 2 && blocks(channels) * B <= channels * 2;
}

/* A 1x1 convolution of a 1 x 1 map (squeeze-and-excitation's fully connected layers): its
 * input and output are a few blocks whatever their channel counts, so it runs in a chain with
 * any of them (4 or 6 channels included), on 16-lane blocks. */
static int tiny_map(const pn_layer* l) {
    const pn_tensor_info* xi = &l->inputs[0];
    const pn_tensor_info* yi = &l->outputs[0];
    const pn_tensor_info* wi = &l->inputs[1];
    return l->num_inputs >= 2 && xi->rank == 4 && yi->rank == 4 && wi->rank == 4 && xi->dims[2] == 1 &&
           xi->dims[3] == 1 && yi->dims[2] == 1 && yi->dims[3] == 1 && wi->dims[2] == 1 && wi->dims[3] == 1 &&
           xi->dims[1] >= 1 && yi->dims[1] >= 1;
}

/* The payload of a PRECOMPILED batch normalization + activation layer (batch_norm.h) in NCHW
 * of rank 4, else NULL. */
static const accel_bn_act* bn_act_of(const pn_layer* l) {
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

/* A batch normalization step (chain_run.h). */
static int bn_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const accel_bn_act* p = bn_act_of(l);
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

/* A channel concatenation step (chain_run.h). */
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

/* A transposed convolution step (chain_run.h): kernel = stride, no padding. */
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

/* A resize step (chain_run.h): H and W only, two taps per axis, no output extrapolated or zeroed;
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
static int view_range(const accel_chain_step* cs, int64_t* start, int64_t* count) {
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
/* A channel view step (chain_run.h). */
static int view_fit(const accel_chain_step* cs) {
    const pn_layer* l = cs->layer;
    const pn_tensor_info *x = &l->inputs[0], *y = cs->y_info;
    int64_t start = 0, count = 0;
    if (!view_range(cs, &start, &count) || cs->act != NULL || cs->addend_id != 0 || cs->scale_id != 0 ||
        cs->x_id != l->input_ids[0] || x->dtype != PN_DTYPE_FLOAT32 || y->dtype != PN_DTYPE_FLOAT32) {
        return 0;
    }
    return x->dims[0] >= 1 && x->dims[2] >= 1 && x->dims[3] >= 1 && y->dims[0] == x->dims[0] &&
           y->dims[2] == x->dims[2] && y->dims[3] == x->dims[3] && count >= 1 && start >= 0 &&
           start + count <= x->dims[1] && start % B == 0 && ((start + count) % B == 0 || start + count == x->dims[1]) &&
           chain_blocks_pay(x->dims[1]);
}

/* A sum step (chain_run.h). */
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
    if (isa != ACCEL_ISA_AVX512 || l->descriptor == NULL) {
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
    if (d->groups == 1 && tiny_map(l)) {
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

/* ---- the payload ------------------------------------------------------------------------ */

void accel_chain_release(void* payload) {
    accel_chain* ch = (accel_chain*)payload;
    if (ch == NULL) {
        return;
    }
    for (uint32_t i = 0; ch->steps != NULL && i < ch->num_steps; ++i) {
        free(ch->steps[i].bn_coef);
        free(ch->steps[i].rs_idx);
        free(ch->steps[i].rs_w);
    }
    free(ch->steps);
    free(ch->const_ids);
    free(ch->const_infos);
    free(ch->tensors);
    free(ch->inputs);
    free(ch->outputs);
    free(ch);
}

/* The index of tensor `id`, added with `info` when new; -1 when out of room. */
static int32_t tensor_index(accel_chain* ch, uint32_t id, const pn_tensor_info* info) {
    for (uint32_t i = 0; i < ch->num_tensors; ++i) {
        if (ch->tensors[i].id == id) {
            return (int32_t)i;
        }
    }
    chain_tensor* t = &ch->tensors[ch->num_tensors];
    memset(t, 0, sizeof(*t));
    t->id = id;
    t->ib = B;
    t->alias_of = -1;
    t->info = *info;
    t->info.struct_size = sizeof(t->info);
    t->info.extension = NULL;
    return (int32_t)ch->num_tensors++;
}

/* The taps [t0, t0 + n) of a kernel axis of k taps that read an input element for some output:
 * output i reads input i * stride - pad + t * dilation, inside [0, in) for some i in [0, out).
 * The others read only padding whatever the output (a dilated convolution on a small map:
 * DeepLabV3's ASPP rates 24 and 36 on 14 x 14 leave only the middle tap of 3), so the chain
 * runs without them, with the padding shifted by t0 taps: the same sums, less work, and a
 * narrower halo. */
static void chain_taps(int64_t k, int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t dil, int64_t* t0,
                       int64_t* n) {
    int64_t first = -1, last = -1;
    for (int64_t t = 0; t < k; ++t) {
        int64_t lo = t * dil - pad;                                   /* output 0's input */
        int64_t i0 = lo >= 0 ? 0 : (-lo + stride - 1) / stride;      /* the first output at or past 0 */
        if (i0 < out && lo + i0 * stride < in) {
            first = first < 0 ? t : first;
            last = t;
        }
    }
    *t0 = first < 0 ? 0 : first; /* no tap reads the input (all padding): keep one, it reads zeros */
    *n = first < 0 ? 1 : last - first + 1;
}

/* The index of constant tensor `id` among the chain's constant inputs, added when new. */
static uint32_t const_input(accel_chain* ch, uint32_t id, const pn_tensor_info* info) {
    for (uint32_t i = 0; i < ch->num_consts; ++i) {
        if (ch->const_ids[i] == id) {
            return i;
        }
    }
    ch->const_ids[ch->num_consts] = id;
    ch->const_infos[ch->num_consts] = *info;
    ch->const_infos[ch->num_consts].struct_size = sizeof(pn_tensor_info);
    ch->const_infos[ch->num_consts].extension = NULL;
    return ch->num_consts++;
}

/* Steps with no weights of their own to pack: pooling, channel scales, concatenations, batch
 * normalizations (the chain keeps a copy of their coefficients), resizes, sums and views. */
static int step_weightless(const packed_step* st) {
    return st->pooling || st->scale_step || st->concat || st->bn_step || st->resize || st->sum_step || st->view;
}

/* Steps whose units of work are one output block each (dense convolutions take a pair). */
static int step_single_blocks(const packed_step* st) {
    return step_weightless(st) || st->depthwise || st->grouped || st->deconv;
}

/* Output blocks per job: one for depthwise and pooling steps, a pair for dense ones. */
static int64_t step_units(const packed_step* st) {
    return step_single_blocks(st) ? st->g.ocb
                                                                                       : (st->g.ocb + 1) / 2;
}

/* Row groups of a step's jobs: as many rows as leave at least CHAIN_MIN_JOBS jobs over the `n`
 * images (a job is a call with its own setup; tens of rows amortize it), in whole multi-row
 * tiles for dense steps (accel_nchwc_rows_per_job). */
#define CHAIN_MIN_JOBS 16
static int64_t step_rows_per_job(const packed_step* st, int64_t n) {
    int64_t base = step_weightless(st) || st->depthwise || st->deconv ? 1
                   : accel_nchwc_rows_per_job(st->g.ow, st->grouped ? 1 : st->g.ocb);
    int64_t units = n * step_units(st);
    int64_t groups = (CHAIN_MIN_JOBS + units - 1) / units;
    int64_t rows = st->g.oh / groups / base * base;
    return rows > base ? rows : base;
}

/* Whether a step's threads split its output by rows (each its own band of every output block)
 * rather than by output blocks (each all rows of its blocks): where the step's weights are
 * fewer floats than its input and output together. A band is what the thread wrote in the
 * step before (the cuts of step_parallel), so its input is in its own caches, but every
 * thread then reads all of the step's weights. It matters most where the two cores do not
 * share a last-level cache (a VM whose vCPUs the host put on different core complexes: a
 * cache line's round trip between them takes 320-580 ns instead of 50-160): two threads, old and
 * new build alternated in one process with onnxruntime, medians of rounds tagged by that
 * latency: MobileNetV2 224 6.91 -> 6.29 ms (onnxruntime 6.62) apart, 3.87 -> 3.86 ms
 * (onnxruntime 4.07) on a shared L3; ResNet-18 224 18.02 -> 17.65 ms apart. Splitting every
 * step by rows, weight-heavy 7 x 7 steps included, was 3 % slower on a shared L3. */
static int step_rows_first(const packed_step* st) {
    if (step_weightless(st)) {
        return 1; /* no weights */
    }
    const nchwc_geom* g = &st->g;
    if (st->deconv) { /* each output pixel reads one input pixel */
        return g->cb * B * g->kh * g->kw * g->ocb * B <
               g->cb * B * (g->oh / g->kh) * (g->ow / g->kw) + g->ocb * B * g->oh * g->ow;
    }
    int64_t weights = (st->depthwise ? 1 : g->cb * g->ib) * g->kh * g->kw * g->ocb * B;
    int64_t in = (st->grouped ? blocks(st->c) * B : g->cb * g->ib) * ((g->oh - 1) * g->sh + 1) *
                 ((g->ow - 1) * g->sw + 1);
    int64_t out = g->ocb * B * g->oh * g->ow;
    return weights < in + out;
}

/* 1 when concatenation step a's parts are the first parts of step b's, in order. */
static int parts_prefix(const packed_step* a, const packed_step* b) {
    if (a->num_parts > b->num_parts) {
        return 0;
    }
    for (uint32_t k = 0; k < a->num_parts; ++k) {
        if (a->part[k] != b->part[k]) return 0;
    }
    return 1;
}

/* Concatenations written in place: the parts of a concatenation R (the root) live inside R's
 * storage at their blocks, and so does every concatenation of R's first parts (DenseNet's:
 * each dense layer concatenates every feature so far, a prefix of the block's last
 * concatenation), so no part is ever copied; those concatenation steps run nothing. A root
 * takes its parts when each is written by a step of the chain other than a concatenation,
 * appears in R once, and is a part of no concatenation but R and R's prefixes; else its steps
 * copy, as without this. The members' halos become the widest of the group (one storage
 * geometry). */
static void alias_concats(accel_chain* ch) {
    for (uint32_t r = 0; r < ch->num_steps; ++r) {
        packed_step* root = &ch->steps[r];
        if (!root->concat) continue;
        int is_root = 1, ok = 1;
        for (uint32_t i = 0; i < ch->num_steps && is_root; ++i) { /* no longer concatenation extends it */
            const packed_step* o = &ch->steps[i];
            is_root = !(o->concat && i != r && o->num_parts > root->num_parts && parts_prefix(root, o));
        }
        if (!is_root) continue;
        for (uint32_t k = 0; k < root->num_parts && ok; ++k) {
            const uint32_t p = root->part[k];
            ok = ch->tensors[p].produced && ch->tensors[p].alias_of < 0;
            for (uint32_t q = 0; q < k && ok; ++q) ok = root->part[q] != p;
            for (uint32_t i = 0; i < ch->num_steps && ok; ++i) {
                const packed_step* o = &ch->steps[i];
                if (o->y == p && (o->concat || o->view)) ok = 0; /* a concatenation of concatenations
                                                                    or of views: copied */
                for (uint32_t q = 0; o->concat && i != r && q < o->num_parts && ok; ++q) {
                    /* another concatenation reading p must be a prefix of the root, not one that
                       extends a prefix of it differently */
                    if (o->part[q] == p && !parts_prefix(o, root)) ok = 0;
                }
            }
        }
        if (!ok) continue;
        chain_tensor* rt = &ch->tensors[root->y];
        int64_t ht = rt->ht, hl = rt->hl, hb = rt->hb, hr = rt->hr;
        for (int pass = 0; pass < 2; ++pass) { /* the widest halo, then given to every member */
            for (uint32_t i = 0; i < ch->num_steps; ++i) {
                packed_step* o = &ch->steps[i];
                if (!o->concat || !parts_prefix(o, root)) continue;
                for (uint32_t k = 0; k <= o->num_parts; ++k) {
                    chain_tensor* t = &ch->tensors[k < o->num_parts ? o->part[k] : o->y];
                    if (pass == 0) {
                        ht = max64(ht, t->ht);
                        hl = max64(hl, t->hl);
                        hb = max64(hb, t->hb);
                        hr = max64(hr, t->hr);
                        continue;
                    }
                    t->ht = ht;
                    t->hl = hl;
                    t->hb = hb;
                    t->hr = hr;
                    if (t != rt) {
                        t->alias_of = (int32_t)root->y;
                        t->alias_block = k < o->num_parts ? o->part_block[k] : 0;
                    }
                }
                o->in_place = 1;
            }
        }
    }
}

/* A 1x1 convolution (stride 1, no padding, groups 1, no activation, no addend) of a resized
 * tensor r that nothing else reads: conv(resize(x)) = resize(conv(x)), since each resized value
 * is a weighted sum of input values whose weights sum to 1 (LINEAR) or one input value (NEAREST),
 * so the convolution runs on the smaller input and the resize on its output (a U-Net's bilinear
 * decoder: Resize 2x then a 1x1 convolution halving the channels; the products drop to a quarter
 * and the resize moves half the channels). r's entry becomes the convolution's output at the input's
 * size; the two steps swap places. The sums differ from the unswapped ones by the rounding of
 * the weights' sum (and the bias is multiplied by it). */
static void commute_resizes(accel_chain* ch, const uint32_t* export_ids, uint32_t num_export) {
    for (uint32_t i = 0; i + 1 < ch->num_steps; ++i) {
        packed_step* rs = &ch->steps[i];
        packed_step* cv = &ch->steps[i + 1];
        const uint32_t r = rs->y;
        int ok = rs->resize && cv->x == r && !step_single_blocks(cv) && cv->addend < 0 && !cv->post_act &&
                 cv->lo == -INFINITY && cv->hi == INFINITY && cv->g.ib == B && cv->win.full_kh == 1 &&
                 cv->win.full_kw == 1 && cv->g.sh == 1 && cv->g.sw == 1 && cv->pt == 0 && cv->pl == 0 &&
                 ch->tensors[r].alias_of < 0;
        for (uint32_t e = 0; e < num_export && ok; ++e) ok = export_ids[e] != ch->tensors[r].id;
        for (uint32_t k = 0; k < ch->num_steps && ok; ++k) {
            const packed_step* o = &ch->steps[k];
            if (k == i + 1) continue;
            ok = o->x != r && o->addend != (int32_t)r && o->scale != (int32_t)r;
            for (uint32_t q = 0; q < o->num_parts && ok; ++q) ok = o->part[q] != r;
        }
        if (!ok) continue;
        const chain_tensor* xt = &ch->tensors[rs->x];
        chain_tensor* t = &ch->tensors[r]; /* now the convolution's output at x's size */
        t->info.dims[1] = cv->o;
        t->info.dims[2] = xt->info.dims[2];
        t->info.dims[3] = xt->info.dims[3];
        t->ht = t->hl = t->hb = t->hr = 0; /* read by the resize only: inside the image */
        const uint32_t c = cv->y;
        cv->x = rs->x;
        cv->y = r;
        cv->g.oh = cv->g.img_h = xt->info.dims[2];
        cv->g.ow = cv->g.img_w = xt->info.dims[3];
        rs->x = r;
        rs->y = c;
        pointwise_geometry(rs, &ch->tensors[c].info);
        const packed_step swap = *rs;
        *rs = *cv;
        *cv = swap;
    }
}

/* The step that writes tensor t, or -1 (an input of the chain). */
static int64_t producer_of(const accel_chain* ch, uint32_t t) {
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        if (ch->steps[i].y == t) return (int64_t)i;
    }
    return -1;
}

/* A concatenation's consecutive parts that are views of one tensor x, in order, covering every
 * block of x (C2f's Concat(Slice(x, 0:h), Slice(x, h:2h), ...)), become the one part x: x is then
 * written into the concatenation in place (alias_concats) and the views alias it there
 * (alias_views), so nothing is copied. */
static void merge_view_parts(accel_chain* ch) {
    for (uint32_t r = 0; r < ch->num_steps; ++r) {
        packed_step* cat = &ch->steps[r];
        if (!cat->concat) continue;
        for (uint32_t k = 0; k < cat->num_parts; ++k) {
            const int64_t v = producer_of(ch, cat->part[k]);
            if (v < 0 || !ch->steps[v].view || ch->steps[v].view_block != 0) continue;
            const uint32_t x = ch->steps[v].x;
            const int64_t xblocks = blocks(ch->tensors[x].info.dims[1]);
            int64_t covered = 0;
            uint32_t m = k;
            while (m < cat->num_parts && covered < xblocks) {
                const int64_t p = producer_of(ch, cat->part[m]);
                if (p < 0 || !ch->steps[p].view || ch->steps[p].x != x || ch->steps[p].view_block != covered) break;
                covered += blocks(ch->tensors[cat->part[m]].info.dims[1]);
                ++m;
            }
            if (covered != xblocks || m - k < 1) continue;
            cat->part[k] = x; /* parts [k, m) -> x at part k's block */
            for (uint32_t q = m; q < cat->num_parts; ++q) {
                cat->part[k + 1 + q - m] = cat->part[q];
                cat->part_block[k + 1 + q - m] = cat->part_block[q];
            }
            cat->num_parts -= m - k - 1;
        }
    }
}

/* Views alias their x: y is x's blocks [view_block, ...) in x's storage (or in the storage of
 * the concatenation x was placed in), with x's halo, which is widened beforehand (views_halo)
 * to cover what y's readers need. Nothing runs for a view. */
static void views_halo(accel_chain* ch) {
    for (uint32_t i = ch->num_steps; i-- > 0;) { /* last to first: a view of a view reaches its root */
        const packed_step* st = &ch->steps[i];
        if (!st->view) continue;
        chain_tensor *xt = &ch->tensors[st->x], *yt = &ch->tensors[st->y];
        xt->ht = max64(xt->ht, yt->ht);
        xt->hl = max64(xt->hl, yt->hl);
        xt->hb = max64(xt->hb, yt->hb);
        xt->hr = max64(xt->hr, yt->hr);
    }
}

static void alias_views(accel_chain* ch) {
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        packed_step* st = &ch->steps[i];
        if (!st->view) continue;
        const chain_tensor* xt = &ch->tensors[st->x];
        chain_tensor* yt = &ch->tensors[st->y];
        yt->ht = xt->ht;
        yt->hl = xt->hl;
        yt->hb = xt->hb;
        yt->hr = xt->hr;
        yt->alias_of = xt->alias_of >= 0 ? xt->alias_of : (int32_t)st->x;
        yt->alias_block = (xt->alias_of >= 0 ? xt->alias_block : 0) + st->view_block;
        st->in_place = 1;
    }
}

/* The chain's label: its convolutions, then the count of each other kind of step it has
 * ("blocked NCHW16c chain of 7 convolutions, 1 pooling, 3 concatenations"). */
static void chain_label(accel_chain* ch, uint32_t count) {
    uint32_t n[8] = {0};
    static const char* const names[8] = {"pooling", "scales", "concatenations", "batch normalizations",
                                         "transposed convolutions", "resizes", "views", "sums"};
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        const packed_step* st = &ch->steps[i];
        n[0] += (uint32_t)(st->pooling != 0);
        n[1] += (uint32_t)(st->scale_step != 0);
        n[2] += (uint32_t)(st->concat != 0);
        n[3] += (uint32_t)(st->bn_step != 0);
        n[4] += (uint32_t)(st->deconv != 0);
        n[5] += (uint32_t)(st->resize != 0);
        n[6] += (uint32_t)(st->view != 0);
        n[7] += (uint32_t)(st->sum_step != 0);
    }
    uint32_t convs = count;
    for (int k = 0; k < 8; ++k) convs -= n[k];
    int at = snprintf(ch->label, sizeof(ch->label), "blocked NCHW16c chain of %u convolutions", convs);
    for (int k = 0; k < 8 && at > 0 && (size_t)at < sizeof(ch->label); ++k) {
        if (n[k] > 0) at += snprintf(ch->label + at, sizeof(ch->label) - (size_t)at, ", %u %s", n[k], names[k]);
    }
}

accel_chain* accel_chain_new(const accel_chain_step* steps, uint32_t count, const uint32_t* export_ids,
                             uint32_t num_export) {
    accel_chain* ch = (accel_chain*)calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return NULL;
    }
    ch->magic = CHAIN_MAGIC;
    size_t slots = 1; /* tensors a step names: x, addend, scale and y, or a concatenation's parts and y */
    for (uint32_t i = 0; i < count; ++i) {
        slots += steps[i].layer->kind == PN_LAYER_CONCAT ? (size_t)steps[i].layer->num_inputs + 1 : 4;
    }
    ch->tensors = (chain_tensor*)calloc(slots, sizeof(chain_tensor));
    ch->steps = (packed_step*)calloc((size_t)count + 1, sizeof(packed_step));
    ch->inputs = (uint32_t*)calloc(slots, sizeof(uint32_t));
    ch->outputs = (uint32_t*)calloc((size_t)count + 1, sizeof(uint32_t));
    ch->const_ids = (uint32_t*)calloc((size_t)count * 2 + 1, sizeof(uint32_t));
    ch->const_infos = (pn_tensor_info*)calloc((size_t)count * 2 + 1, sizeof(pn_tensor_info));
    if (ch->tensors == NULL || ch->steps == NULL || ch->inputs == NULL || ch->outputs == NULL ||
        ch->const_ids == NULL || ch->const_infos == NULL) {
        accel_chain_release(ch);
        return NULL;
    }
    for (uint32_t i = 0; i < count; ++i) {
        const accel_chain_step* cs = &steps[i];
        const pn_layer* l = cs->layer;
        const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)l->descriptor;
        packed_step* st = &ch->steps[ch->num_steps++];
        uint32_t xslot = 0;
        while (xslot + 1 < l->num_inputs && l->input_ids[xslot] != cs->x_id) ++xslot;
        int32_t x = tensor_index(ch, cs->x_id, &l->inputs[xslot]);
        if (!ch->tensors[x].produced) {
            int seen = 0;
            for (uint32_t k = 0; k < ch->num_inputs; ++k) seen |= ch->inputs[k] == (uint32_t)x;
            if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)x;
        }
        st->x = (uint32_t)x;
        st->addend = -1;
        if (cs->addend_id != 0) {
            int32_t a = tensor_index(ch, cs->addend_id, cs->y_info);
            if (!ch->tensors[a].produced) {
                int seen = 0;
                for (uint32_t k = 0; k < ch->num_inputs; ++k) seen |= ch->inputs[k] == (uint32_t)a;
                if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)a;
            }
            st->addend = a;
        }
        st->scale = -1;
        if (cs->scale_id != 0) {
            uint32_t sslot = 0;
            while (sslot + 1 < l->num_inputs && l->input_ids[sslot] != cs->scale_id) ++sslot;
            int32_t sc = tensor_index(ch, cs->scale_id, &l->inputs[sslot]);
            if (!ch->tensors[sc].produced) {
                int seen = 0;
                for (uint32_t k = 0; k < ch->num_inputs; ++k) seen |= ch->inputs[k] == (uint32_t)sc;
                if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)sc;
            }
            st->scale = sc;
        }
        int32_t y = tensor_index(ch, cs->y_id, cs->y_info);
        ch->tensors[y].produced = 1;
        st->y = (uint32_t)y;
        int64_t view_start = 0, view_count = 0;
        if (view_range(cs, &view_start, &view_count)) { /* y is blocks of x: alias_views */
            st->view = 1;
            st->view_block = view_start / B;
            pointwise_geometry(st, cs->y_info);
            continue;
        }
        if (l->kind == PN_LAYER_ELEMENTWISE_BINARY && cs->scale_id == 0) { /* a sum: reads only inside the image */
            st->sum_step = 1;
            pointwise_geometry(st, cs->y_info);
            st->g.oc_last = cs->y_info->dims[1] - (st->g.ocb - 1) * B;
            if (!clamp_of(step_act(cs), &st->lo, &st->hi)) {
                st->post_act = accel_copy_activation(step_act(cs), &st->act);
                st->rezero = st->post_act && st->g.oc_last < B && !keeps_zero(ACCEL_ISA_PORTABLE, step_act(cs));
            }
            continue;
        }
        if (l->kind == PN_LAYER_CONCAT) { /* reads only inside the image: no halo, no weights */
            st->concat = 1;
            st->num_parts = l->num_inputs;
            int64_t first = 0;
            for (uint32_t k = 0; k < l->num_inputs; ++k) {
                int32_t part = tensor_index(ch, l->input_ids[k], &l->inputs[k]);
                if (!ch->tensors[part].produced) {
                    int seen = 0;
                    for (uint32_t q = 0; q < ch->num_inputs; ++q) seen |= ch->inputs[q] == (uint32_t)part;
                    if (!seen) ch->inputs[ch->num_inputs++] = (uint32_t)part;
                }
                st->part[k] = (uint32_t)part;
                st->part_block[k] = first;
                first += blocks(l->inputs[k].dims[1]);
            }
            pointwise_geometry(st, cs->y_info);
            continue;
        }
        if (cs->scale_id != 0) { /* reads only inside the image: no halo, no weights */
            st->scale_step = 1;
            pointwise_geometry(st, cs->y_info);
            continue;
        }
        if (l->kind == PN_LAYER_PRECOMPILED) { /* batch normalization: reads only inside the image */
            const accel_bn_act* p = bn_act_of(l);
            const int64_t c = p->channels, cb = blocks(c);
            st->bn_step = 1;
            st->g.ib = B;
            st->g.cb = st->g.ocb = cb;
            st->g.oc_last = c - (cb - 1) * B;
            st->g.oh = cs->y_info->dims[2];
            st->g.ow = cs->y_info->dims[3];
            st->g.kh = st->g.kw = 1;
            st->bn_coef = (float*)malloc((size_t)(cb * 3 * B) * sizeof(float));
            if (st->bn_coef == NULL) {
                accel_chain_release(ch);
                return NULL;
            }
            for (int64_t k = 0; k < cb * B; ++k) { /* zeros past the channels: 0 stays 0 before the activation */
                float* v = st->bn_coef + (k / B) * 3 * B + k % B;
                v[0] = k < c ? p->coef[k] : 0.0f;
                v[B] = k < c ? p->coef[c + k] : 0.0f;
                v[2 * B] = k < c ? p->coef[2 * c + k] : 0.0f;
            }
            if (!clamp_of(&p->act, &st->lo, &st->hi)) {
                st->post_act = accel_copy_activation(&p->act, &st->act);
                st->rezero = st->post_act && st->g.oc_last < B && !keeps_zero(ACCEL_ISA_PORTABLE, &p->act);
            }
            continue;
        }
        if (l->kind == PN_LAYER_CONVOLUTION) { /* transposed, kernel = stride: reads only inside the image */
            const pn_convolution_desc* dd = (const pn_convolution_desc*)l->descriptor;
            const int64_t c = l->inputs[0].dims[1], o = cs->y_info->dims[1];
            const pn_activation_desc* act = cs->act != NULL ? cs->act : dd->fused_activation;
            st->deconv = 1;
            st->g.ib = B;
            st->g.cb = blocks(c);
            st->g.ic_last = c - (st->g.cb - 1) * B;
            st->g.ocb = blocks(o);
            st->g.oc_last = o - (st->g.ocb - 1) * B;
            st->g.oh = cs->y_info->dims[2];
            st->g.ow = cs->y_info->dims[3];
            st->g.kh = st->g.sh = l->inputs[1].dims[2];
            st->g.kw = st->g.sw = l->inputs[1].dims[3];
            if (!clamp_of(act, &st->lo, &st->hi)) {
                st->post_act = accel_copy_activation(act, &st->act);
                st->rezero = st->post_act && st->g.oc_last < B && !keeps_zero(ACCEL_ISA_PORTABLE, act);
            }
            st->o = o;
            st->c = c;
            st->w_in = (int32_t)const_input(ch, l->input_ids[1], &l->inputs[1]);
            st->b_in = (dd->flags & PN_LAYER_FLAG_HAS_BIAS) != 0
                           ? (int32_t)const_input(ch, l->input_ids[2], &l->inputs[2])
                           : -1;
            continue;
        }
        if (l->kind == PN_LAYER_RESIZE) { /* reads only inside the image: no halo, no weights */
            const pn_resize_desc* rd = (const pn_resize_desc*)l->descriptor;
            const int64_t oh = cs->y_info->dims[2], ow = cs->y_info->dims[3];
            st->resize = rd->mode == PN_RESIZE_NEAREST ? 2 : 1;
            pointwise_geometry(st, cs->y_info);
            st->rs_idx = (int32_t*)malloc((size_t)(2 * (oh + ow)) * sizeof(int32_t));
            st->rs_w = (float*)malloc((size_t)(2 * (oh + ow)) * sizeof(float));
            if (st->rs_idx == NULL || st->rs_w == NULL) {
                accel_chain_release(ch);
                return NULL;
            }
            for (uint32_t a = 2; a < 4; ++a) { /* the plan CpuRef's is (pn_resize_plan.h), weights in float */
                const int64_t in = l->inputs[0].dims[a], out = cs->y_info->dims[a];
                int32_t* idx = st->rs_idx + (a == 2 ? 0 : 2 * oh);
                float* wt = st->rs_w + (a == 2 ? 0 : 2 * oh);
                for (int64_t q = 0; q < out; ++q) {
                    int64_t first = q;
                    double w[2] = {1.0, 0.0};
                    unsigned char special = PN_RESIZE_NORMAL;
                    if (!pn_resize_axis_skipped(rd, a, in, out)) {
                        pn_resize_plan_index(rd, a, in, out, 2, q, &first, w, &special);
                    }
                    for (int64_t t = 0; t < 2; ++t) {
                        int64_t i = st->resize == 2 ? first + (w[1] != 0.0 ? 1 : 0) : first + t;
                        idx[2 * q + t] = (int32_t)(i < 0 ? 0 : (i >= in ? in - 1 : i));
                        wt[2 * q + t] = (float)w[t];
                    }
                }
            }
            continue;
        }
        if (l->kind == PN_LAYER_POOLING_2D) {
            const pn_pooling_2d_desc* p = (const pn_pooling_2d_desc*)l->descriptor;
            nchwc_pool pp = {p->kind, p->padding_method == PN_PADDING_INCLUDE,
                             l->inputs[0].dims[2], l->inputs[0].dims[3], cs->y_info->dims[2],
                             cs->y_info->dims[3], p->kernel_h, p->kernel_w, p->stride_h, p->stride_w,
                             p->dilation_h, p->dilation_w, p->pad_top, p->pad_left, p->pad_bottom,
                             p->pad_right};
            st->pooling = 1;
            st->pp = pp;
            st->g.ib = B;
            st->g.cb = st->g.ocb = blocks(l->inputs[0].dims[1]);
            st->g.oh = pp.oh;
            st->g.ow = pp.ow;
            continue; /* reads only inside the image: no halo, no weights */
        }
        const pn_tensor_info* xi = &l->inputs[0];
        const pn_tensor_info* wi = &l->inputs[1];
        int64_t c = xi->dims[1], h = xi->dims[2], w = xi->dims[3], o = cs->y_info->dims[1];
        nchwc_geom* g = &st->g;
        st->depthwise = d->groups != 1 && d->groups == c && o == c;
        st->grouped = d->groups != 1 && !st->depthwise;
        st->groups = d->groups;
        /* a narrow input: one block (the first step only, never a tiny map's input: fit) */
        g->ib = d->groups == 1 && !chain_blocks_pay(c) && !tiny_map(l) ? c : B;
        ch->tensors[x].ib = g->ib;
        g->cb = (c + g->ib - 1) / g->ib;
        g->ic_last = c - (g->cb - 1) * g->ib;
        if (st->grouped) { /* the kernel's view: gcb whole blocks from each output block's first */
            g->cb = accel_nchwc_group_blocks(c, o, st->groups);
            g->ic_last = B;
        }
        g->ocb = blocks(o);
        g->oc_last = o - (g->ocb - 1) * B;
        g->oh = cs->y_info->dims[2];
        g->ow = cs->y_info->dims[3];
        g->sh = d->stride_h;
        g->sw = d->stride_w;
        g->dh = d->dilation_h;
        g->dw = d->dilation_w;
        st->win.full_kh = wi->dims[2];
        st->win.full_kw = wi->dims[3];
        chain_taps(wi->dims[2], h, cs->y_info->dims[2], g->sh, d->pad_top, g->dh, &st->win.ky0, &st->win.kh);
        chain_taps(wi->dims[3], w, cs->y_info->dims[3], g->sw, d->pad_left, g->dw, &st->win.kx0, &st->win.kw);
        g->kh = st->win.kh;
        g->kw = st->win.kw;
        st->pt = (int64_t)d->pad_top - st->win.ky0 * g->dh; /* < 0: the window starts inside the image */
        st->pl = (int64_t)d->pad_left - st->win.kx0 * g->dw;
        g->img_top = st->pt; /* the kernel reads x from the view at (ht - pt, hl - pl) */
        g->img_h = h;
        g->img_left = st->pl; /* and the columns: one-row tiles skip the tap columns outside */
        g->img_w = w;
        if (!clamp_of(step_act(cs), &st->lo, &st->hi)) { /* lo, hi: +-inf */
            st->post_act = accel_copy_activation(step_act(cs), &st->act);
            st->rezero = st->post_act && g->oc_last < B && !keeps_zero(ACCEL_ISA_PORTABLE, step_act(cs));
        }
        /* The input's halo covers this convolution's padding and every tap it reads. */
        chain_tensor* xt = &ch->tensors[x];
        int64_t need_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
        int64_t need_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
        xt->ht = max64(xt->ht, st->pt);
        xt->hl = max64(xt->hl, st->pl);
        xt->hb = max64(xt->hb, need_h - st->pt - h);
        xt->hr = max64(xt->hr, need_w - st->pl - w);
        st->o = o;
        st->c = c;
        st->w_in = (int32_t)const_input(ch, l->input_ids[1], &l->inputs[1]);
        st->b_in = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0 ? (int32_t)const_input(ch, l->input_ids[2], &l->inputs[2])
                                                          : -1;
    }
    commute_resizes(ch, export_ids, num_export);
    merge_view_parts(ch);
    views_halo(ch);
    alias_concats(ch);
    alias_views(ch);
    for (uint32_t i = 0; i < ch->num_steps; ++i) { /* constants follow the activations */
        if (!step_weightless(&ch->steps[i])) {
            ch->steps[i].w_in += (int32_t)ch->num_inputs;
            ch->steps[i].b_in += ch->steps[i].b_in >= 0 ? (int32_t)ch->num_inputs : 0;
        }
    }
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        packed_step* st = &ch->steps[i];
        st->rpj = step_rows_per_job(st, ch->tensors[st->y].info.dims[0]);
        st->rows_first = step_rows_first(st);
        if (!step_single_blocks(st)) {
            st->pass_blocks = accel_nchwc_pass_blocks(&st->g);
        }
    }
    for (uint32_t e = 0; e < num_export; ++e) {
        for (uint32_t i = 0; i < ch->num_tensors; ++i) {
            if (ch->tensors[i].id == export_ids[e] && ch->tensors[i].produced) {
                ch->outputs[ch->num_outputs++] = i;
                break;
            }
        }
    }
    chain_label(ch, count);
    return ch;
}

uint32_t accel_chain_num_inputs(const accel_chain* ch) { return ch->num_inputs + ch->num_consts; }
uint32_t accel_chain_num_outputs(const accel_chain* ch) { return ch->num_outputs; }
const char* accel_chain_label(const accel_chain* ch) { return ch->label; }

void accel_chain_input(const accel_chain* ch, uint32_t i, uint32_t* id, pn_tensor_info* info) {
    if (i >= ch->num_inputs) {
        *id = ch->const_ids[i - ch->num_inputs];
        *info = ch->const_infos[i - ch->num_inputs];
        return;
    }
    *id = ch->tensors[ch->inputs[i]].id;
    *info = ch->tensors[ch->inputs[i]].info;
}

void accel_chain_output(const accel_chain* ch, uint32_t i, uint32_t* id, pn_tensor_info* info) {
    *id = ch->tensors[ch->outputs[i]].id;
    *info = ch->tensors[ch->outputs[i]].info;
}

/* ---- the workload ------------------------------------------------------------------------- */

#if defined(ACCEL_HAVE_X86_KERNELS)

typedef struct chain_state {
    accel_env env;
    const accel_chain* ch;   /* the payload: lives until every workload made from it is gone */
    const float** w;         /* per step: its packed weights (accel_nchwc_packed), or NULL */
    const float** bias;      /* per step: its bias, 16-channel blocks (inside the same block) */
    nchwc_tensor* storage;   /* one per chain tensor */
    unsigned char* dirty;    /* per tensor: its step zeros its halo every run (plan_storage) */
    float* raw;
    uint32_t* exec;          /* the steps in the order they run (chain_schedule) */
    uint32_t* time_of;       /* per step: its group, the steps of a group run as one parallel loop */
    uint32_t* group_first;   /* group g is exec[group_first[g], group_first[g + 1]) */
    uint32_t num_groups;
} chain_state;

static void chain_state_release(void* vs) {
    chain_state* s = (chain_state*)vs;
    if (s != NULL) {
        free(s->w);
        free(s->bias);
        free(s->storage);
        free(s->dirty);
        free(s->raw);
        free(s->exec);
        free(s->time_of);
        free(s->group_first);
        free(s);
    }
}

/* The view of image n of tensor t shifted by (dr, dc) pixels from its storage origin. */
static nchwc_view view_of(const nchwc_tensor* t, int64_t n, int64_t dr, int64_t dc) {
    nchwc_view v = {t->data + n * t->image_floats + (dr * t->cols + dc) * B, t->rows, t->cols};
    return v;
}

typedef struct step_run {
    const chain_state* s;
    const packed_step* st;
    const float* w;          /* the step's packed weights and bias (convolutions) */
    const float* bias;
} step_run;

static int64_t step_jobs(const packed_step* st, int64_t n) {
    return n * step_units(st) * ((st->g.oh + st->rpj - 1) / st->rpj);
}

/* About the floating-point operations of one of a step's jobs (at least 1): a pooling step's
 * taps are its window's (its geometry g has no kernel), 2 operations each as for a product. */
static int64_t step_job_flops(const packed_step* st) {
    const nchwc_geom* g = &st->g;
    int64_t taps = st->pooling ? st->pp.kh * st->pp.kw : g->kh * g->kw, per_job;
    if (step_weightless(st) || st->depthwise) {
        per_job = 2 * taps * g->ow * B * st->rpj;
    } else if (st->deconv) { /* every output vector: cb * 16 products */
        per_job = 2 * g->cb * B * g->ow * B * st->rpj;
    } else {
        int64_t nb = g->ocb >= 2 && !st->grouped ? 2 : 1;
        per_job = 2 * taps * g->cb * g->ib * nb * B * g->ow * st->rpj;
    }
    return per_job > 0 ? per_job : 1;
}

/* Jobs per thread at least, so that a part is worth waking a thread for (about 4 us):
 * small layers run on the calling thread alone. */
static int64_t step_grain(const packed_step* st) {
    return ACCEL_NCHWC_MIN_PART_FLOPS / step_job_flops(st) + 1;
}

/* Zeros the halo beside output rows [oy, oy + rows) of blocks [b0, b1) of image n of t, and
 * the halo rows above and below the image when those are its first or last rows. */
static void zero_halo(const nchwc_tensor* t, int64_t n, int64_t b0, int64_t b1, int64_t oy, int64_t rows) {
    const int64_t hb = t->rows - t->ht - t->h, hr = t->cols - t->hl - t->w;
    const size_t row = (size_t)(t->cols * t->ib);
    for (int64_t b = b0; b < b1; ++b) {
        float* plane = t->data + n * t->image_floats + b * t->rows * row;
        if (oy == 0 && t->ht > 0) memset(plane, 0, (size_t)t->ht * row * sizeof(float));
        if (oy + rows == t->h && hb > 0) memset(plane + (t->ht + t->h) * row, 0, (size_t)hb * row * sizeof(float));
        for (int64_t r = t->ht + oy; r < t->ht + oy + rows; ++r) {
            if (t->hl > 0) memset(plane + r * row, 0, (size_t)(t->hl * t->ib) * sizeof(float));
            if (hr > 0) memset(plane + r * row + (t->hl + t->w) * t->ib, 0, (size_t)(hr * t->ib) * sizeof(float));
        }
    }
}

/* Output rows [oy, oy + rows) of unit u (a pair of output blocks of a dense step, one block of
 * a depthwise or pooling step) of image n. */
static void step_block(const step_run* r, int64_t n, int64_t u, int64_t oy, int64_t rows) {
    const packed_step* st = r->st;
    const nchwc_geom* g = &st->g;
    const nchwc_tensor* xt = &r->s->storage[st->x];
    const nchwc_tensor* yt = &r->s->storage[st->y];
    const int single = step_single_blocks(st);
    const int64_t b0 = single ? u : 2 * u, b1 = single ? u + 1 : (2 * u + 2 < g->ocb ? 2 * u + 2 : g->ocb);
    if (r->s->dirty[st->y]) {
        zero_halo(yt, n, b0, b1, oy, rows);
    }
    nchwc_view xv = view_of(xt, n, xt->ht - st->pt, xt->hl - st->pl);
    nchwc_view yv = view_of(yt, n, yt->ht, yt->hl);
    nchwc_epilogue epi = {{NULL, 0, 0}, st->lo, st->hi};
    if (st->addend >= 0) {
        const nchwc_tensor* at = &r->s->storage[st->addend];
        epi.addend = view_of(at, n, at->ht, at->hl);
    }
    if (st->concat) { /* block u of y is block u - part_block[k] of part k */
        uint32_t k = 0;
        while (k + 1 < st->num_parts && st->part_block[k + 1] <= u) ++k;
        const nchwc_tensor* pt = &r->s->storage[st->part[k]];
        const nchwc_view pv = view_of(pt, n, pt->ht, pt->hl);
        const float* src = pv.data + (u - st->part_block[k]) * pv.rows * pv.cols * B;
        float* dst = yv.data + u * yv.rows * yv.cols * B;
        for (int64_t y = oy; y < oy + rows; ++y) {
            memcpy(dst + y * yv.cols * B, src + y * pv.cols * B, (size_t)(g->ow * B) * sizeof(float));
        }
        return;
    }
    if (st->scale_step) {
        const nchwc_tensor* sct = &r->s->storage[st->scale];
        const float* sv = view_of(sct, n, sct->ht, sct->hl).data + u * sct->rows * sct->cols * B;
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) accel_nchwc_scale_row_avx512(&image, sv, &yv, u, y, g->ow);
        return;
    }
    if (st->pooling) {
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) accel_nchwc_pool_row_avx512(&st->pp, &image, &yv, u, y);
    } else if (st->deconv) {
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_deconv_row_avx512(&image, r->w, r->bias, &yv, g->cb, g->ic_last, g->kh, g->kw, g->ow / g->kw, u,
                                          y, st->lo, st->hi);
        }
    } else if (st->resize) {
        nchwc_view image = view_of(xt, n, xt->ht, xt->hl);
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_resize_row_avx512(&image, &yv, u, y, g->ow, st->rs_idx + 2 * y, st->rs_w + 2 * y,
                                          st->rs_idx + 2 * g->oh, st->rs_w + 2 * g->oh, st->resize == 2);
        }
    } else if (st->grouped) {
        nchwc_view xg = xv;
        xg.data += accel_nchwc_group_first(st->c, st->o, st->groups, g->cb, u) * xt->rows * xt->cols * B;
        accel_nchwc_conv_rows_avx512(g, &xg, r->w, r->bias, &yv, &epi, u, 1, oy, rows);
    } else if (st->depthwise) {
        for (int64_t y = oy; y < oy + rows; ++y) accel_nchwc_dwconv_row_avx512(g, &xv, r->w, r->bias, &yv, &epi, u, y);
    } else if (st->sum_step) {
        const nchwc_tensor* at = &r->s->storage[st->addend];
        const nchwc_view av = view_of(at, n, at->ht, at->hl);
        const float* xr = xv.data + u * xv.rows * xv.cols * B;
        const float* ar = av.data + u * av.rows * av.cols * B;
        float* yr = yv.data + u * yv.rows * yv.cols * B;
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_add_row_avx512(xr + y * xv.cols * B, ar + y * av.cols * B, yr + y * yv.cols * B, g->ow, st->lo,
                                       st->hi);
        }
    } else if (st->bn_step) {
        const float* xr = xv.data + u * xv.rows * xv.cols * B;
        float* yr = yv.data + u * yv.rows * yv.cols * B;
        for (int64_t y = oy; y < oy + rows; ++y) {
            accel_nchwc_affine_row_avx512(xr + y * xv.cols * B, st->bn_coef + u * 3 * B, yr + y * yv.cols * B, g->ow,
                                          st->lo, st->hi);
        }
    } else {
        int64_t ob = u * 2;
        accel_nchwc_conv_rows_passes_avx512(g, &xv, r->w, r->bias, &yv, &epi, ob, g->ocb - ob >= 2 ? 2 : 1, oy, rows,
                                            st->pass_blocks);
    }
    if (st->post_act) { /* the rows just written, still in the caches */
        for (int64_t b = b0; b < b1; ++b) {
            for (int64_t y = oy; y < oy + rows; ++y) {
                float* row = yv.data + (b * yv.rows + y) * yv.cols * B;
                if (st->act.kind == PN_ACTIVATION_SWISH && st->act.alpha == 1.0f) {
                    accel_nchwc_silu_avx512(row, g->ow * B); /* SiLU: EfficientNet's every layer */
                } else {
                    accel_apply_activation(r->s->env.isa, &st->act, row, g->ow * B);
                }
                if (st->rezero && b == g->ocb - 1) { /* act(0) != 0: the lanes past the last channel */
                    accel_nchwc_zero_tail_avx512(row, g->ow, g->oc_last);
                }
            }
        }
    }
}

/* Jobs [begin, end) of a step. By output blocks: job = (image, unit, row group). Rows first:
 * job = (image, row group, unit), so a range is a band of rows across the units, run unit by
 * unit over the range's row groups (one call each: the unit's weights stay in the caches
 * across the band). */
static void step_range(void* vctx, int64_t begin, int64_t end) {
    const step_run* r = (const step_run*)vctx;
    const packed_step* st = r->st;
    const int64_t units = step_units(st), rpj = st->rpj, oh = st->g.oh;
    const int64_t groups = (oh + rpj - 1) / rpj, per_image = groups * units;
    if (!st->rows_first) {
        for (int64_t job = begin; job < end; ++job) {
            int64_t oy = (job % groups) * rpj, u = (job / groups) % units, n = job / per_image;
            step_block(r, n, u, oy, oh - oy < rpj ? oh - oy : rpj);
        }
        return;
    }
    for (int64_t n = begin / per_image; n * per_image < end; ++n) {
        int64_t lo = begin - n * per_image > 0 ? begin - n * per_image : 0;
        int64_t hi = end - n * per_image < per_image ? end - n * per_image : per_image;
        for (int64_t u = 0; u < units; ++u) {
            int64_t g0 = lo <= u ? 0 : (lo - u + units - 1) / units; /* first g: g * units + u >= lo */
            int64_t g1 = hi - 1 < u ? -1 : (hi - 1 - u) / units;       /* last g: g * units + u < hi */
            if (g0 <= g1) {
                int64_t oy = g0 * rpj, last = (g1 + 1) * rpj < oh ? (g1 + 1) * rpj : oh;
                step_block(r, n, u, oy, last - oy);
            }
        }
    }
}

/* How a step's jobs are run on the pool. A rows-first step gives each thread its own band:
 * the row groups up to the boundary nearest to t * oh / T (whole images when the batch has one
 * per thread), so the band lines up with the one the thread wrote in the step before, whatever
 * the two steps' row groups: cuts[0..T] and 1. A step by output blocks, or with fewer row
 * groups (and images) than threads, is split first come: 0. */
static int step_cuts(const chain_state* s, const packed_step* st, int threads, int64_t* cuts) {
    const int64_t n = s->storage[st->y].n, jobs = step_jobs(st, n), per_image = jobs / n;
    const int64_t rpj = st->rpj, groups = (st->g.oh + rpj - 1) / rpj;
    if (!st->rows_first || threads < 2 || threads > ACCEL_MAX_THREADS ||
        (n < threads && (n > 1 || groups < threads))) {
        return 0;
    }
    cuts[0] = 0;
    for (int t = 1; t < threads; ++t) {
        if (n >= threads) {
            cuts[t] = (t * n + threads / 2) / threads * per_image;
        } else { /* the group boundary nearest to row t * oh / threads */
            int64_t g = (2 * t * st->g.oh + threads * rpj) / (2 * threads * rpj);
            cuts[t] = g * step_units(st);
        }
    }
    cuts[threads] = jobs;
    return 1;
}

/* Runs a step's jobs on the pool (step_cuts). */
static void step_parallel(const chain_state* s, const packed_step* st, step_run* r) {
    const int threads = accel_threads_count(s->env.threads);
    int64_t cuts[ACCEL_MAX_THREADS + 1];
    if (!step_cuts(s, st, threads, cuts)) {
        accel_parallel_for_grain(s->env.threads, step_jobs(st, s->storage[st->y].n), step_grain(st), step_range, r);
        return;
    }
    accel_parallel_for_owned(s->env.threads, cuts[threads], step_grain(st), cuts, step_range, r);
}

/* The steps of one group run as one parallel loop (chain_schedule): thread t's share is its
 * part of every step of the group, one after the other (a segment each). */
#define GROUP_MAX 32
#define GROUP_SEGMENTS 256
typedef struct group_run {
    uint32_t count, num_segments;
    step_run runs[GROUP_MAX];
    struct {
        uint32_t step;
        int64_t first, local, len; /* jobs [first, first + len) of the loop: the step's [local, ...) */
    } seg[GROUP_SEGMENTS];
} group_run;

static void group_range(void* vctx, int64_t begin, int64_t end) {
    const group_run* gr = (const group_run*)vctx;
    uint32_t k = 0;
    while (k + 1 < gr->num_segments && gr->seg[k + 1].first <= begin) ++k;
    for (; k < gr->num_segments && gr->seg[k].first < end; ++k) {
        const int64_t f = gr->seg[k].first;
        const int64_t b = begin > f ? begin : f, e = end < f + gr->seg[k].len ? end : f + gr->seg[k].len;
        if (b < e) step_range((void*)&gr->runs[gr->seg[k].step], gr->seg[k].local + b - f, gr->seg[k].local + e - f);
    }
}

/* Runs independent steps as one loop: one barrier for the group instead of one per step, and
 * the small steps (GoogLeNet's 16-channel reductions and pooling branches on 14 x 14), which
 * alone would run on one thread while the other waits, share the threads with the large ones.
 * Each step is cut as step_parallel cuts it (a rows-first step in the bands its input was
 * written in, any other evenly by jobs), and thread t owns its part of every step; what a
 * thread has left the others take from the back. */
static void group_parallel(const chain_state* s, group_run* gr) {
    const int threads = accel_threads_count(s->env.threads);
    int64_t total = 0, jobs = 0;
    for (uint32_t k = 0; k < gr->count; ++k) {
        const packed_step* st = gr->runs[k].st;
        total += step_job_flops(st) * step_jobs(st, s->storage[st->y].n);
    }
    if (threads < 2 || (uint32_t)threads * gr->count > GROUP_SEGMENTS || total < 2 * ACCEL_NCHWC_MIN_PART_FLOPS) {
        for (uint32_t k = 0; k < gr->count; ++k) step_parallel(s, gr->runs[k].st, &gr->runs[k]);
        return;
    }
    int64_t cuts[ACCEL_MAX_THREADS + 1], owned[ACCEL_MAX_THREADS + 1];
    gr->num_segments = 0;
    for (int t = 0; t < threads; ++t) {
        owned[t] = jobs;
        for (uint32_t k = 0; k < gr->count; ++k) {
            const packed_step* st = gr->runs[k].st;
            const int64_t sj = step_jobs(st, s->storage[st->y].n);
            if (!step_cuts(s, st, threads, cuts)) {
                cuts[t] = sj * t / threads;
                cuts[t + 1] = sj * (t + 1) / threads;
            }
            if (cuts[t + 1] > cuts[t]) {
                gr->seg[gr->num_segments].step = k;
                gr->seg[gr->num_segments].first = jobs;
                gr->seg[gr->num_segments].local = cuts[t];
                gr->seg[gr->num_segments].len = cuts[t + 1] - cuts[t];
                jobs += cuts[t + 1] - cuts[t];
                gr->num_segments += 1;
            }
        }
    }
    owned[threads] = jobs;
    accel_parallel_for_owned(s->env.threads, jobs, 1, owned, group_range, gr);
}

/* The order the steps run in and their groups. On one thread, and in a chain where no level
 * (below) has three or more steps that run, the chain's order, each step a group. Else each
 * step's level (0 for a step reading only the chain's inputs, else one
 * more than the latest level whose step writes what it reads; a step that runs nothing, a view
 * or a concatenation written in place, passes its level on as it is), the steps sorted by
 * level (stable), each level a group: its steps read nothing another of them writes
 * (GoogLeNet's four branches: the three 1x1 convolutions and the pooling, then the 3x3 and
 * 5x5 and the pooling's 1x1). The storage plan (plan_storage) keeps every tensor a group
 * reads or writes apart from the others it writes. Returns the number of groups, 0 when out
 * of memory. */
static uint32_t chain_schedule(const accel_chain* ch, int threads, uint32_t* exec, uint32_t* time_of,
                               uint32_t* group_first) {
    const uint32_t ns = ch->num_steps;
    if (threads < 2) {
        for (uint32_t k = 0; k <= ns; ++k) {
            if (k < ns) exec[k] = time_of[k] = k;
            group_first[k] = k;
        }
        return ns;
    }
    uint32_t* avail = (uint32_t*)calloc(ch->num_tensors + 1, sizeof(uint32_t));
    if (avail == NULL) {
        return 0;
    }
    uint32_t levels = 0;
    for (uint32_t k = 0; k < ns; ++k) {
        const packed_step* st = &ch->steps[k];
        uint32_t lvl = avail[st->x];
        if (st->addend >= 0 && avail[st->addend] > lvl) lvl = avail[st->addend];
        if (st->scale >= 0 && avail[st->scale] > lvl) lvl = avail[st->scale];
        for (uint32_t q = 0; q < st->num_parts; ++q) lvl = avail[st->part[q]] > lvl ? avail[st->part[q]] : lvl;
        time_of[k] = lvl;
        avail[st->y] = st->in_place ? lvl : lvl + 1;
        levels = lvl + 1 > levels ? lvl + 1 : levels;
    }
    free(avail);
    uint32_t widest = 0; /* the most steps that run at one level */
    for (uint32_t g = 0; g < levels; ++g) {
        uint32_t count = 0;
        for (uint32_t k = 0; k < ns; ++k) count += time_of[k] == g && !ch->steps[k].in_place;
        widest = count > widest ? count : widest;
    }
    if (widest < 3) { /* two branches at most (a residual's projection, a fire module's two
                         expansions): the chain's order, each step its own loop (grouped, they
                         ran 1-2 % slower: SqueezeNet 1.1, YOLO) */
        return chain_schedule(ch, 1, exec, time_of, group_first);
    }
    uint32_t at = 0;
    for (uint32_t g = 0; g < levels; ++g) { /* counting sort, stable */
        group_first[g] = at;
        for (uint32_t k = 0; k < ns; ++k) {
            if (time_of[k] == g) exec[at++] = k;
        }
    }
    group_first[levels] = at;
    return levels;
}


static pn_status chain_execute(void* vs, const pn_execute_args* args, pn_string_out* msg) {
    const chain_state* s = (const chain_state*)vs;
    const accel_chain* ch = s->ch;
    if (args == NULL || args->num_inputs != ch->num_inputs + ch->num_consts || args->num_outputs != ch->num_outputs) {
        return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: the blocked chain expects %u inputs and %u outputs",
                       ch->num_inputs + ch->num_consts, ch->num_outputs);
    }
    for (uint32_t i = 0; i < ch->num_inputs; ++i) {
        if (args->inputs[i].data == NULL) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: blocked chain input %u has no data", i);
        }
    }
    for (uint32_t i = 0; i < ch->num_outputs; ++i) {
        if (args->outputs[i].data == NULL) {
            return pn_fail(msg, PN_ERR_INVALID_ARGUMENT, "CpuAcc execute: blocked chain output %u has no data", i);
        }
    }
    for (uint32_t i = 0; i < ch->num_inputs; ++i) {
        accel_nchwc_pack(s->env.threads, (const float*)args->inputs[i].data, &s->storage[ch->inputs[i]]);
    }
    for (uint32_t g = 0; g < s->num_groups; ++g) {
        group_run gr; /* about 9 KiB */
        gr.count = 0;
        for (uint32_t q = s->group_first[g]; q < s->group_first[g + 1]; ++q) {
            const uint32_t i = s->exec[q];
            const packed_step* st = &ch->steps[i];
            if (!st->in_place) { /* a view, or a concatenation its parts were written into: nothing to do */
                step_run r = {s, st, s->w[i], s->bias[i]};
                gr.runs[gr.count++] = r;
            }
            if (gr.count == GROUP_MAX || (q + 1 == s->group_first[g + 1] && gr.count > 0)) {
                if (gr.count == 1) {
                    step_parallel(s, gr.runs[0].st, &gr.runs[0]);
                } else {
                    group_parallel(s, &gr);
                }
                gr.count = 0;
            }
        }
    }
    for (uint32_t i = 0; i < ch->num_outputs; ++i) {
        accel_nchwc_unpack(s->env.threads, s->env.isa, &s->storage[ch->outputs[i]], (float*)args->outputs[i].data,
                           NULL, NULL);
    }
    return PN_OK;
}

static int same_info(const pn_tensor_info* a, const pn_tensor_info* b) {
    return a->dtype == b->dtype && pn_same_dims(a, b);
}

/* 1 when two tensors have the same storage geometry (the halo one leaves zero is the other's). */
static int same_storage(const nchwc_tensor* a, const nchwc_tensor* b) {
    return a->n == b->n && a->ib == b->ib && a->cb == b->cb && a->rows == b->rows && a->cols == b->cols &&
           a->ht == b->ht && a->hl == b->hl && a->h == b->h && a->w == b->w;
}

static size_t storage_floats(const nchwc_tensor* t) {
    return ((size_t)t->n * t->image_floats + B - 1) / B * B;
}

/* How recently the memory [off, off + size) was used, for tensor t about to take it: the
 * bytes of it earlier tensors (dead by t's step) used, each weighted by 1 / (steps since its
 * last reader). Memory a step just read is still in cache; writing there costs no read of
 * the lines from memory. */
static double region_heat(const uint32_t* order, uint32_t placed, const int64_t* first, const int64_t* last,
                          const size_t* offsets, const nchwc_tensor* st, uint32_t t, size_t off, size_t size) {
    double heat = 0.0;
    for (uint32_t q = 0; q < placed; ++q) {
        uint32_t o = order[q];
        if (last[o] >= first[t]) continue; /* alive with t: elsewhere */
        size_t lo = offsets[o] > off ? offsets[o] : off;
        size_t end_o = offsets[o] + storage_floats(&st[o]), hi = end_o < off + size ? end_o : off + size;
        if (hi > lo) heat += (double)(hi - lo) / (double)(first[t] - last[o]);
    }
    return heat;
}

/* Places the chain's tensors in one arena (offsets in floats, 16-float aligned) and returns its
 * size, or 0 when out of memory. A tensor lives from the step that writes it (an input of the
 * chain: from the start) to the last step that reads it (an output of the chain: to the end).
 * In step order, each tensor takes a place between the regions of the tensors whose lives
 * overlap its own, at either end of a gap that fits it: the one whose memory the latest steps
 * used (region_heat), then the smallest gap. So a step writes memory still in cache instead of
 * a fresh region (which costs a read from memory for every line written), and the arena is
 * about the largest set of live tensors. dirty[i] = 1 when tensor i's region overlaps that of
 * a tensor of another geometry or offset: its halo is not left zero by the others, so the step
 * writing it zeros it (zero_halo). */
static size_t plan_storage(const accel_chain* ch, const chain_state* cs, const nchwc_tensor* st, size_t* offsets,
                           unsigned char* dirty) {
    const uint32_t nt = ch->num_tensors, ns = ch->num_steps;
    int64_t* first = (int64_t*)malloc((nt + 1) * sizeof(int64_t));
    int64_t* last = (int64_t*)malloc((nt + 1) * sizeof(int64_t));
    uint32_t* order = (uint32_t*)malloc((nt + 1) * sizeof(uint32_t)); /* placement order */
    uint32_t* near = (uint32_t*)malloc((nt + 1) * sizeof(uint32_t));  /* placed, overlapping lives */
    size_t total = 0;
    if (first == NULL || last == NULL || order == NULL || near == NULL) {
        free(first);
        free(last);
        free(order);
        free(near);
        return 0;
    }
    /* Only roots are placed (a tensor inside a concatenation's storage, alias_concats, lives as
     * long as any tensor of its group, at its block of the root's place). */
#define ROOT(i) (ch->tensors[i].alias_of >= 0 ? (uint32_t)ch->tensors[i].alias_of : (uint32_t)(i))
    uint32_t placed = 0;
    for (uint32_t i = 0; i < nt; ++i) first[i] = INT64_MAX;
    for (uint32_t k = 0; k < ch->num_inputs; ++k) {
        first[ch->inputs[k]] = -1;
        order[placed++] = ch->inputs[k];
    }
    /* times: the groups the steps run in (chain_schedule), in the order they run */
    for (uint32_t q = 0; q < ns; ++q) {
        const uint32_t k = cs->exec[q];
        const int64_t time = (int64_t)cs->time_of[k];
        const uint32_t r = ROOT(ch->steps[k].y);
        if (first[r] == INT64_MAX) order[placed++] = r;
        first[r] = first[r] < time ? first[r] : time;
    }
    for (uint32_t i = 0; i < nt; ++i) last[i] = first[i];
#define READ_AT(i, time) last[ROOT(i)] = last[ROOT(i)] > (time) ? last[ROOT(i)] : (time)
    for (uint32_t k = 0; k < ns; ++k) {
        const int64_t time = (int64_t)cs->time_of[k];
        READ_AT(ch->steps[k].x, time);
        if (ch->steps[k].addend >= 0) READ_AT(ch->steps[k].addend, time);
        if (ch->steps[k].scale >= 0) READ_AT(ch->steps[k].scale, time);
        for (uint32_t q = 0; q < ch->steps[k].num_parts; ++q) READ_AT(ch->steps[k].part[q], time);
    }
#undef READ_AT
    for (uint32_t o = 0; o < ch->num_outputs; ++o) last[ROOT(ch->outputs[o])] = (int64_t)cs->num_groups;
    for (uint32_t p = 0; p < placed; ++p) {
        const uint32_t t = order[p];
        const size_t size = storage_floats(&st[t]);
        uint32_t count = 0;
        for (uint32_t q = 0; q < p; ++q) { /* earlier tensors alive with t, by offset */
            uint32_t o = order[q];
            if (first[o] <= last[t] && first[t] <= last[o]) {
                uint32_t at = count++;
                while (at > 0 && offsets[near[at - 1]] > offsets[o]) {
                    near[at] = near[at - 1];
                    --at;
                }
                near[at] = o;
            }
        }
        /* candidates: both ends of every gap that fits, and the end of the arena */
        size_t best = SIZE_MAX, best_gap = SIZE_MAX, free_from = 0;
        double best_heat = -1.0;
        for (uint32_t q = 0; q <= count; ++q) {
            size_t gap_end = q < count ? offsets[near[q]] : SIZE_MAX;
            if (gap_end >= free_from + size) {
                size_t cand[2] = {free_from, gap_end != SIZE_MAX ? gap_end - size : free_from};
                for (int c = 0; c < (gap_end != SIZE_MAX ? 2 : 1); ++c) { /* the arena's end: one place */
                    double heat = region_heat(order, p, first, last, offsets, st, t, cand[c], size);
                    size_t gap = gap_end - free_from;
                    if (heat > best_heat || (heat == best_heat && gap < best_gap)) {
                        best = cand[c];
                        best_gap = gap;
                        best_heat = heat;
                    }
                }
            }
            if (q < count) {
                size_t end = offsets[near[q]] + storage_floats(&st[near[q]]);
                free_from = end > free_from ? end : free_from;
            }
        }
        offsets[t] = best;
        total = offsets[t] + size > total ? offsets[t] + size : total;
    }
    for (uint32_t i = 0; i < nt; ++i) {
        dirty[i] = 0;
        for (uint32_t j = 0; j < nt && ch->tensors[i].alias_of < 0; ++j) {
            int overlap = i != j && ch->tensors[j].alias_of < 0 && offsets[i] < offsets[j] + storage_floats(&st[j]) &&
                          offsets[j] < offsets[i] + storage_floats(&st[i]);
            if (overlap && !(offsets[i] == offsets[j] && same_storage(&st[i], &st[j]))) dirty[i] = 1;
        }
    }
    for (uint32_t i = 0; i < nt; ++i) { /* a member: its root's place and halo state */
        if (ch->tensors[i].alias_of >= 0) {
            const uint32_t r = ROOT(i);
            offsets[i] = offsets[r] + (size_t)(ch->tensors[i].alias_block * st[r].rows * st[r].cols * B);
            dirty[i] = dirty[r];
        }
    }
#undef ROOT
    free(first);
    free(last);
    free(order);
    free(near);
    return total;
}

static pn_status chain_build(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                             pn_workload** workload_out, pn_string_out* message_out) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const accel_chain* ch = d != NULL ? (const accel_chain*)d->payload : NULL;
    if (ch == NULL || ch->magic != CHAIN_MAGIC) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled layer '%s' was not made by this CpuAcc build", layer->name);
    }
    if (env->isa != ACCEL_ISA_AVX512) {
        return pn_fail(message_out, PN_ERR_UNSUPPORTED,
                       "CpuAcc: precompiled layer '%s' needs the avx512 kernels, option isa is %s",
                       layer->name, accel_isa_name(env->isa));
    }
    if (layer->num_inputs != ch->num_inputs + ch->num_consts || layer->num_outputs != ch->num_outputs) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc: precompiled layer '%s' has %u inputs and %u outputs, its chain %u and %u",
                       layer->name, layer->num_inputs, layer->num_outputs, ch->num_inputs + ch->num_consts,
                       ch->num_outputs);
    }
    for (uint32_t i = 0; i < ch->num_inputs + ch->num_consts; ++i) {
        const pn_tensor_info* want = i < ch->num_inputs ? &ch->tensors[ch->inputs[i]].info
                                                        : &ch->const_infos[i - ch->num_inputs];
        if (!same_info(&layer->inputs[i], want)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled layer '%s' input %u does not have its chain's shape", layer->name, i);
        }
        if (i >= ch->num_inputs && (layer->constant_data == NULL || layer->constant_data[i] == NULL)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled layer '%s' input %u (weights of its chain) is not a constant",
                           layer->name, i);
        }
    }
    for (uint32_t i = 0; i < ch->num_outputs; ++i) {
        if (!same_info(&layer->outputs[i], &ch->tensors[ch->outputs[i]].info)) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           "CpuAcc: precompiled layer '%s' output %u does not have its chain's shape", layer->name, i);
        }
    }
    chain_state* s = (chain_state*)calloc(1, sizeof(*s));
    if (s != NULL) {
        s->storage = (nchwc_tensor*)calloc(ch->num_tensors, sizeof(nchwc_tensor));
        s->dirty = (unsigned char*)calloc(ch->num_tensors + 1, 1);
        s->w = (const float**)calloc(ch->num_steps + 1, sizeof(float*));
        s->bias = (const float**)calloc(ch->num_steps + 1, sizeof(float*));
    }
    if (s == NULL || s->storage == NULL || s->dirty == NULL || s->w == NULL || s->bias == NULL) {
        chain_state_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    s->env = *env;
    s->ch = ch;
    for (uint32_t i = 0; i < ch->num_steps; ++i) {
        const packed_step* st = &ch->steps[i];
        if (step_weightless(st)) {
            continue;
        }
        const nchwc_geom* g = &st->g;
        const float* bsrc = st->b_in >= 0 ? (const float*)layer->constant_data[st->b_in] : NULL;
        if (st->deconv) {
            s->w[i] = accel_nchwc_packed_deconv(packs, (const float*)layer->constant_data[st->w_in], bsrc, st->c, st->o,
                                                g->kh, g->kw);
            if (s->w[i] == NULL) {
                chain_state_release(s);
                return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing the weights of '%s'",
                               layer->name);
            }
            s->bias[i] = s->w[i] + (size_t)(g->ocb * g->kh * g->cb * B * g->kw * B);
            continue;
        }
        if (st->grouped) {
            s->w[i] = accel_nchwc_packed_grouped(packs, env->threads, (const float*)layer->constant_data[st->w_in], bsrc,
                                                 st->o, st->c, st->groups, &st->win);
        } else {
            s->w[i] = accel_nchwc_packed(packs, env->threads, (const float*)layer->constant_data[st->w_in], bsrc, st->o,
                                         st->c, &st->win, g->ib, st->depthwise);
        }
        if (s->w[i] == NULL) {
            chain_state_release(s);
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory packing the weights of '%s'",
                           layer->name);
        }
        s->bias[i] = s->w[i] + (st->depthwise ? (size_t)(g->cb * g->kh * g->kw * B)
                                              : (size_t)(g->ocb * g->cb * g->kh * g->kw * g->ib * B));
    }
    for (uint32_t i = 0; i < ch->num_tensors; ++i) {
        const chain_tensor* t = &ch->tensors[i];
        nchwc_tensor* nt = &s->storage[i];
        nt->n = t->info.dims[0];
        nt->c = t->info.dims[1];
        nt->h = t->info.dims[2];
        nt->w = t->info.dims[3];
        nt->ib = t->ib;
        nt->cb = (nt->c + t->ib - 1) / t->ib;
        nt->ht = t->ht;
        nt->hl = t->hl;
        nt->rows = t->ht + nt->h + t->hb;
        nt->cols = t->hl + nt->w + t->hr;
        nt->image_floats = (size_t)(nt->cb * nt->rows * nt->cols * nt->ib);
    }
    for (uint32_t i = 0; i < ch->num_tensors; ++i) { /* inside a concatenation: its image stride */
        if (ch->tensors[i].alias_of >= 0) {
            s->storage[i].image_floats = s->storage[ch->tensors[i].alias_of].image_floats;
        }
    }
    s->exec = (uint32_t*)calloc((size_t)ch->num_steps + 1, sizeof(uint32_t));
    s->time_of = (uint32_t*)calloc((size_t)ch->num_steps + 1, sizeof(uint32_t));
    s->group_first = (uint32_t*)calloc((size_t)ch->num_steps + 2, sizeof(uint32_t));
    s->num_groups = s->exec != NULL && s->time_of != NULL && s->group_first != NULL
                        ? chain_schedule(ch, accel_threads_count(env->threads), s->exec, s->time_of, s->group_first)
                        : 0;
    size_t* offsets = (size_t*)malloc((size_t)(ch->num_tensors + 1) * sizeof(size_t));
    size_t total = offsets != NULL && (s->num_groups > 0 || ch->num_steps == 0)
                       ? plan_storage(ch, s, s->storage, offsets, s->dirty)
                       : 0;
    s->raw = total > 0 ? (float*)calloc(total + 16, sizeof(float)) : NULL; /* zero halos */
    if (s->raw == NULL) {
        free(offsets);
        chain_state_release(s);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory for the blocked chain of '%s'",
                       layer->name);
    }
    for (uint32_t i = 0; i < ch->num_tensors; ++i) {
        s->storage[i].data = align64(s->raw) + offsets[i];
    }
    free(offsets);
    pn_workload* wl = pn_workload_new(s, chain_execute, chain_state_release, 0);
    if (wl == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_chain_create(void* context, const pn_layer* layer,
                             pn_workload** workload_out, pn_string_out* message_out) {
    return accel_reshapable_new((const accel_env*)context, layer, chain_build, workload_out, message_out);
}

#else

pn_status accel_chain_create(void* context, const pn_layer* layer,
                             pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    (void)workload_out;
    return pn_fail(message_out, PN_ERR_UNSUPPORTED, "CpuAcc: precompiled layer '%s' needs the avx512 kernels",
                   layer->name);
}

#endif
