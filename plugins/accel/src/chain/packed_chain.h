/*
 * What the files of CpuAcc's blocked chains share (chain/chain.h is what the rest of CpuAcc sees):
 * the payload's layout (chain tensors, packed steps, accel_chain), the workload's state, and
 * the functions one stage of the chain gives the next:
 *   chain/admission.c        what a chain admits (accel_chain_step_fit)
 *   chain/payload.c          the payload (accel_chain_new) and its release
 *   chain/payload_rewrites.c the payload's rewrites (in-place concatenations, resizes, views)
 *   chain/schedule.c         the jobs, their split over the threads, the levels, one run
 *   chain/arena.c            the storage plan of the chain tensors
 *   chain/workload.c         the PRECOMPILED layer's workload
 */
#ifndef ACCEL_PACKED_CHAIN_H
#define ACCEL_PACKED_CHAIN_H

#include "accel.h"
#include "chain/chain.h"
#include "chain/upsample.h"
#include "kernels/nchwc_kernels.h"
#include "kernels/vector_kernels.h"
#include "ops/batch_norm.h"
#include "ops/conv_nchwc.h"
#include "ops/shared_weights.h"

#include <math.h>
#include <stdint.h>

#define B NCHWC_BLOCK
#define CHAIN_MAGIC 0x314e4843u /* "CHN1" */

typedef struct chain_tensor {
    uint32_t id;
    pn_tensor_info info;     /* NCHW float32 */
    int64_t ib;              /* channels per block: 16, or all of a narrow input's */
    int64_t ht, hl, hb, hr;  /* halo the consuming convolutions read (their padding) */
    int produced;            /* written by a step (else an input of the chain) */
    int32_t alias_of;        /* -1, or the concatenation whose blocks [alias_block, ...) hold this
                                tensor (a part, or a concatenation of its first parts: chain_alias_concats) */
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
                                blocks from accel_nchwc_group_first (ops/conv_nchwc.h) */
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
    int view;                /* a channel view: y is x's blocks [view_block, ...) (chain_alias_views) */
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
    int deconv;              /* a transposed convolution with kernel = stride (chain/upsample.h):
                                g.kh x g.kw the kernel, g.cb / g.ic_last its input blocks */
    int resize;              /* a resize along H and W: 1 LINEAR, 2 NEAREST (chain/upsample.h) */
    int32_t* rs_idx;         /* (resize) per output row its 2 input rows, then per output column its
                                2 input columns (owned) */
    float* rs_w;             /* (resize) their weights, the same layout (owned) */
    /* The original layers it was made from: indices into the chain's layer_names (the first
     * carries the step's time). */
    uint32_t num_names;
    uint32_t name_of[ACCEL_CHAIN_MAX_NAMES];
} packed_step;

/* The chain's convolutions' weights and biases are inputs of the replacement layer (after the
 * activations it reads), so the runtime keeps them alive and gives them to create_workload and
 * reshape as constants: the workload packs them (ops/shared_weights.h), not optimize_subgraph, and
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
    char** layer_names;      /* the original layers of the steps, each once, in step order (owned) */
    uint32_t num_layer_names;
};

static inline int64_t chain_blocks(int64_t v) { return (v + B - 1) / B; }

/* The geometry of a step that reads its input only inside the image at its own positions (a
 * Concat, a squeeze-excitation scale): 1x1, every block of the output `y`'s channels, no clamp. */
static inline void pointwise_geometry(packed_step* st, const pn_tensor_info* y) {
    st->g.ib = B;
    st->g.cb = st->g.ocb = chain_blocks(y->dims[1]);
    st->g.oh = y->dims[2];
    st->g.ow = y->dims[3];
    st->g.kh = st->g.kw = 1;
    st->lo = -INFINITY;
    st->hi = INFINITY;
}

static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Steps with no weights of their own to pack: pooling, channel scales, concatenations, batch
 * normalizations (the chain keeps a copy of their coefficients), resizes, sums and views. */
static inline int chain_step_weightless(const packed_step* st) {
    return st->pooling || st->scale_step || st->concat || st->bn_step || st->resize || st->sum_step || st->view;
}

/* Steps whose units of work are one output block each (dense convolutions take a pair). */
static inline int chain_step_single_blocks(const packed_step* st) {
    return chain_step_weightless(st) || st->depthwise || st->grouped || st->deconv;
}

/* Output blocks per job: one for depthwise and pooling steps, a pair for dense ones. */
static inline int64_t chain_step_units(const packed_step* st) {
    return chain_step_single_blocks(st) ? st->g.ocb
                                                                                       : (st->g.ocb + 1) / 2;
}

/* One chain workload's state (chain/workload.c): packed weights, the arena, the schedule. */
typedef struct chain_state {
    accel_env env;
    const accel_chain* ch;   /* the payload: lives until every workload made from it is gone */
    const float** w;         /* per step: its packed weights (accel_nchwc_packed), or NULL */
    const float** bias;      /* per step: its bias, 16-channel blocks (inside the same block) */
    nchwc_tensor* storage;   /* one per chain tensor */
    unsigned char* dirty;    /* per tensor: its step zeros its halo every run (chain_plan_storage) */
    float* raw;
    uint32_t* exec;          /* the steps in the order they run (chain_schedule) */
    uint32_t* time_of;       /* per step: its group, the steps of a group run as one parallel loop */
    uint32_t* group_first;   /* group g is exec[group_first[g], group_first[g + 1]) */
    uint32_t num_groups;
    uint64_t* layer_ns;      /* per chain layer name: its time in the last profiled execute */
    int profiled;            /* the last execute was profiled and succeeded (layer_ns holds it) */
} chain_state;


/* ---- chain/admission.c ---- */

/* The activation of a step as a clamp; 0 when it is not one that keeps zero at zero. */
int chain_clamp_of(const pn_activation_desc* act, float* lo, float* hi);

const pn_activation_desc* chain_step_act(const accel_chain_step* cs);

/* Whether a step's activation keeps the zero lanes of its output zero (accel_chain_step_fit):
 * a clamp that does, or a kind whose kernel (the one the chain runs it with) maps 0 to +-0. */
int chain_keeps_zero(accel_isa isa, const pn_activation_desc* act);

/* Inside a chain no conversion has to be paid for, so a tensor may fill as little as half of
 * its 16-channel blocks (8 channels in 16 lanes, 24 in 32): the dense kernel skips the zero
 * input channels, only output lanes are wasted. */
int chain_blocks_pay(int64_t channels);

/* A 1x1 convolution of a 1 x 1 map (squeeze-and-excitation's fully connected layers): its
 * input and output are a few blocks whatever their channel counts, so it runs in a chain with
 * any of them (4 or 6 channels included), on 16-lane blocks. */
int chain_tiny_map(const pn_layer* l);

/* The payload of a PRECOMPILED batch normalization + activation layer (ops/batch_norm.h) in NCHW
 * of rank 4, else NULL. */
const accel_bn_act* chain_bn_act_of(const pn_layer* l);

/* The first channel and the channel count of a view step's y in its x (view_fit), or 0 when
 * the layer is not a channel view. */
int chain_view_range(const accel_chain_step* cs, int64_t* start, int64_t* count);

/* ---- chain/payload_rewrites.c ---- */

/* Concatenations written in place: the parts of a concatenation R (the root) live inside R's
 * storage at their blocks, and so does every concatenation of R's first parts (DenseNet's:
 * each dense layer concatenates every feature so far, a prefix of the block's last
 * concatenation), so no part is ever copied; those concatenation steps run nothing. A root
 * takes its parts when each is written by a step of the chain other than a concatenation,
 * appears in R once, and is a part of no concatenation but R and R's prefixes; else its steps
 * copy, as without this. The members' halos become the widest of the group (one storage
 * geometry). */
void chain_alias_concats(accel_chain* ch);

/* A 1x1 convolution (stride 1, no padding, groups 1, no activation, no addend) of a resized
 * tensor r that nothing else reads: conv(resize(x)) = resize(conv(x)), since each resized value
 * is a weighted sum of input values whose weights sum to 1 (LINEAR) or one input value (NEAREST),
 * so the convolution runs on the smaller input and the resize on its output (a U-Net's bilinear
 * decoder: Resize 2x then a 1x1 convolution halving the channels; the products drop to a quarter
 * and the resize moves half the channels). r's entry becomes the convolution's output at the input's
 * size; the two steps swap places. The sums differ from the unswapped ones by the rounding of
 * the weights' sum (and the bias is multiplied by it). */
void chain_commute_resizes(accel_chain* ch, const uint32_t* export_ids, uint32_t num_export);

/* A concatenation's consecutive parts that are views of one tensor x, in order, covering every
 * block of x (C2f's Concat(Slice(x, 0:h), Slice(x, h:2h), ...)), become the one part x: x is then
 * written into the concatenation in place (alias_concats) and the views alias it there
 * (alias_views), so nothing is copied. */
void chain_merge_view_parts(accel_chain* ch);

/* Views alias their x: y is x's blocks [view_block, ...) in x's storage (or in the storage of
 * the concatenation x was placed in), with x's halo, which is widened beforehand (views_halo)
 * to cover what y's readers need. Nothing runs for a view. */
void chain_views_halo(accel_chain* ch);

void chain_alias_views(accel_chain* ch);

/* ---- chain/schedule.c ---- */

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
uint32_t chain_schedule(const accel_chain* ch, int threads, uint32_t* exec, uint32_t* time_of,
                               uint32_t* group_first);

pn_status chain_execute(void* vs, const pn_execute_args* args, pn_string_out* msg);

/* pn_workload.read_profile of a chain workload: its layer_names with layer_ns. */
pn_status chain_read_profile(void* vs, pn_profile_entry* entries, uint32_t capacity, uint32_t* count_out,
                             pn_string_out* msg);

/* ---- chain/arena.c ---- */

int chain_same_info(const pn_tensor_info* a, const pn_tensor_info* b);

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
size_t chain_plan_storage(const accel_chain* ch, const chain_state* cs, const nchwc_tensor* st, size_t* offsets,
                           unsigned char* dirty);

#endif /* ACCEL_PACKED_CHAIN_H */
