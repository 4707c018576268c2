/*
 * CpuAcc blocked chains, the running side (chain/chain.c): consecutive steps of one subgraph
 * (convolutions, and pooling layers between them) that run as one PN_LAYER_PRECOMPILED layer,
 * keeping every tensor between them in the blocked layout NCHW16c (ops/conv_nchwc.h). Only the
 * chain's inputs are converted from NCHW (once, on entry) and only the tensors used outside
 * it are converted back (once, on exit).
 *
 * Chain planning (opt/chain_plan.h) resolves each convolution with what fusion gave it (a
 * following activation, a residual add) into an accel_chain_step, asks accel_chain_step_fit
 * which steps the blocked kernels run, and hands runs of two or more to accel_chain_new. The
 * chain (the payload of the PRECOMPILED layer) holds the geometry only: the replacement layer's
 * inputs are the activations the chain reads from outside, then the convolutions' weights and
 * biases as constants, which the workload packs (create_workload) into blocks shared with the
 * workloads reshaped from it (ops/shared_weights.h), so a session's specializations of one model,
 * each planned by its own optimize_subgraph, share one packed copy.
 */
#ifndef ACCEL_CHAIN_RUN_H
#define ACCEL_CHAIN_RUN_H

#include "accel.h"

#include <stdint.h>

/* The most original layers one step reports its time under (a convolution, its ADD and an
 * activation matched from up to a dozen layers); a step made from more lists the first ones. */
#define ACCEL_CHAIN_MAX_NAMES 32

/* One step of a chain: a convolution as fusion resolved it, a pooling layer, a channel scale,
 * a channel concatenation (a CONCAT layer: its parts are the layer's inputs, x_id the first),
 * a transposed convolution or a resize (chain/upsample.h), a batch normalization with its
 * activation (the PRECOMPILED layer of ops/batch_norm.h that the pattern pass made), a channel view
 * (a SLICE layer, or one output of a SPLIT layer: y_id names which) or a sum (an
 * ELEMENTWISE_BINARY ADD of two tensors of the output's shape: x_id input 0, addend_id input 1).
 * Pointers are borrowed for the call. */
typedef struct accel_chain_step {
    const pn_layer* layer;           /* a CONVOLUTION_2D layer with constant weights (and bias),
                                        a POOLING_2D layer, an ELEMENTWISE_BINARY MUL (scale_id),
                                        a CONCAT layer, a PRECOMPILED ops/batch_norm.h layer, a
                                        transposed CONVOLUTION layer, a RESIZE layer, a SLICE
                                        or SPLIT layer, or an ELEMENTWISE_BINARY ADD */
    uint32_t x_id, y_id;             /* its input and its (fused) output tensor ids */
    const pn_tensor_info* y_info;    /* the fused output's info */
    uint32_t addend_id;              /* a residual added before the activation, 0: none */
    const pn_activation_desc* act;   /* a fused activation, NULL: none */
    uint32_t scale_id;               /* a channel scale step (an ElementwiseBinary MUL layer x * s,
                                        s of shape [N, C, 1, 1]: squeeze-and-excitation): s's id,
                                        x's is x_id; 0 for every other step */
    /* The subgraph's layers the step was made from (its layer, the fused ADD and activation,
     * each pattern match as the layers it replaced), in that order; the chain copies them and
     * reports its profile under them. */
    uint32_t num_names;
    const char* names[ACCEL_CHAIN_MAX_NAMES];
} accel_chain_step;

/* Whether the blocked kernels run a step inside a chain on `isa`. */
typedef enum accel_chain_fit {
    ACCEL_CHAIN_NO = 0,
    ACCEL_CHAIN_YES = 1,   /* anywhere in a chain */
    ACCEL_CHAIN_FIRST = 2  /* only as the first step, reading a tensor from outside that no
                              other step reads (a dense convolution of 1..64 input channels
                              too few for 16-channel blocks: its input becomes one block) */
} accel_chain_fit;

/* Pooling: AVX-512, NCHW, MAX or AVERAGE, channels as for convolutions. Convolutions:
 * AVX-512, NCHW, constant weights and bias, groups 1, depthwise (one output channel per input
 * channel, any kernel, stride, dilation), or grouped where accel_nchwc_group_blocks accepts them
 * (groups of 4+ input channels: ops/conv_nchwc.h), at least 8 output channels (and input channels,
 * but for ACCEL_CHAIN_FIRST) filling at least half of their 16-channel blocks (a 1x1
 * convolution of a 1 x 1 map: any channel count, squeeze-and-excitation's fully connected
 * layers; a 1x1 convolution at stride 1 without padding to fewer than 8 output channels, from
 * an input whose blocks pay: a segmentation head), any activation: relu and bounded relu with
 * alpha <= 0 <= beta run as a clamp inside the kernels, every other kind on each job's output
 * rows right after the kernel wrote them, and where the kind does not map 0 to 0 (sigmoid,
 * hard sigmoid: squeeze-and-excitation's gates; softplus, ...) the lanes of the channels past the
 * last one (in the last 16-channel block) are zeroed again, as the blocked layout requires. Channel scales (scale_id != 0):
 * AVX-512, an ElementwiseBinary MUL without a fused activation on float32, x (x_id) of the
 * output's shape [N, C, H, W], s (scale_id) [N, C, 1, 1], C as for convolutions. Concatenations:
 * AVX-512, float32, rank 4 along the channels (axis 1 or -3), 1 to ACCEL_CHAIN_MAX_PARTS parts
 * of the output's N, H, W, every part but the last of a multiple of 16 channels (so each part
 * is whole 16-channel blocks of the output, copied block row by block row; the planner takes
 * one into a chain only when the chain's earlier steps write every part). Batch normalization
 * with its activation: AVX-512, NCHW rank 4 float32, channels as for convolutions, any
 * activation (relu and bounded relu as a clamp, others after it on the rows, as for
 * convolutions); the chain keeps a copy of its coefficients. Transposed convolutions (a
 * CONVOLUTION layer, TRANSPOSED, 2-D, groups 1): AVX-512, float32, kernel = stride (kernel width
 * 1 to ACCEL_DECONV_MAX_KW), no padding, output_padding or dilation, constant weights and bias,
 * channels in and out as for convolutions, any activation (as for convolutions). Resizes (a
 * RESIZE layer): AVX-512, float32, rank 4, N and C left as they are, NEAREST or LINEAR with two
 * taps per axis (LINEAR: H and W both resized), no output extrapolated or zeroed, no activation
 * (chain/upsample.h). Channel views: AVX-512, float32, rank 4, a SLICE along the channels only
 * (step 1) or a SPLIT along axis 1 (or -3), the view starting on a 16-channel block and ending
 * on one or at the last channel (so it is whole blocks of x: y's storage is x's, nothing is
 * copied), x's channels as for convolutions. Sums:
 * AVX-512, float32, rank 4, x, the addend and y of one shape, channels as for convolutions, any
 * activation (as for batch normalization). The planner takes views and sums only when the
 * chain's earlier steps write their inputs. */
accel_chain_fit accel_chain_step_fit(accel_isa isa, const accel_chain_step* step);

/* The most parts of a concatenation step (GoogLeNet's inception modules have 4, the last
 * layer of DenseNet-121's third block 25). */
#define ACCEL_CHAIN_MAX_PARTS 32

typedef struct accel_chain accel_chain;

/* A chain of `count` steps that fit, in execution order. `export_ids` are the tensors
 * produced by the chain that are used after it. The replacement layer's inputs are
 * accel_chain_num_inputs tensors (ids and infos by accel_chain_input: the activations, then the
 * weights and biases, each tensor once), its outputs accel_chain_num_outputs
 * (accel_chain_output). NULL when out of memory. */
accel_chain* accel_chain_new(const accel_chain_step* steps, uint32_t count, const uint32_t* export_ids,
                             uint32_t num_export);
uint32_t accel_chain_num_inputs(const accel_chain* chain);
uint32_t accel_chain_num_outputs(const accel_chain* chain);
void accel_chain_input(const accel_chain* chain, uint32_t i, uint32_t* id, pn_tensor_info* info);
void accel_chain_output(const accel_chain* chain, uint32_t i, uint32_t* id, pn_tensor_info* info);
const char* accel_chain_label(const accel_chain* chain); /* e.g. "blocked chain of 19 convolutions" */

/* pn_precompiled_desc.release_payload of a chain. */
void accel_chain_release(void* payload);

/* The workload of a PRECOMPILED layer whose payload is a chain made by this build (anything
 * else is refused with PN_ERR_INVALID_ARGUMENT, and so are weights that are not constants):
 * the create_precompiled of CpuAcc's pn_plugin, whose context is the factory's accel_env. The
 * workload is reshapable (ops/shared_weights.h): a chain planned for other shapes with the same
 * constants reuses its packed weights. */
pn_status accel_chain_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out);

#endif /* ACCEL_CHAIN_RUN_H */
