/*
 * What CpuAcc's optimization passes share (the driver is opt/optimize.h; no pass includes it):
 * the result they fill together (accel_optimization: substitutions, the storage behind them,
 * failed and untouched layers), the state of each layer as the passes claim it, the name a
 * fused layer gets, and the table of who produces and uses each tensor.
 */
#ifndef ACCEL_OPT_PASS_H
#define ACCEL_OPT_PASS_H

#include "accel.h"
#include "chain/chain.h"
#include "plugnn/pn_plugin.h"

#define FUSION_MAX_INPUTS 4  /* the head's inputs (at most 3) plus the addend */
#define FUSION_MAX_LINKS 3   /* head, ADD, activation */
#define FUSION_REASON_MAX 256

/* The layers one fusion joins: indices into the subgraph's layers, -1 for a missing link. */
typedef struct fusion_links {
    int64_t head;
    int64_t add;
    uint32_t addend_slot; /* the ADD input that is the addend */
    int64_t act;
} fusion_links;

/* Storage behind one substitution: everything its replacement layer points to. */
typedef struct fusion_item {
    uint32_t replaced[FUSION_MAX_LINKS];
    union {
        pn_convolution_2d_desc conv;
        pn_convolution_desc conv_nd; /* CONVOLUTION (1.1, N-D): an activation only, no addend */
        pn_fully_connected_desc fc;
        pn_elementwise_binary_desc binary;
        pn_precompiled_desc pre;   /* a fused linear layer (opt/linear_fusion.h) */
    } desc;
    pn_activation_desc act;
    pn_tensor_info inputs[FUSION_MAX_INPUTS];
    uint32_t input_ids[FUSION_MAX_INPUTS];
    pn_tensor_info output;
    uint32_t output_id;
    char* name; /* malloc'd, set once the links are final */
    fusion_links links;     /* the fused layers' indices in the subgraph */
} fusion_item;

/* Storage behind one blocked-chain substitution (chain/chain.h). */
typedef struct chain_item {
    uint32_t* replaced;        /* layer ids, in layer order */
    uint32_t num_replaced;
    pn_tensor_info* infos;     /* inputs then outputs */
    uint32_t* ids;             /* input then output tensor ids */
    pn_precompiled_desc desc;
    char* name;
    accel_chain* payload;      /* the runtime's once the result is returned */
} chain_item;

struct accel_patterns; /* opt/patterns.h */
struct accel_linear_fusions; /* opt/linear_fusion.h */

/* What accel_optimize_subgraph returns; every array has one slot per subgraph layer. */
typedef struct accel_optimization {
    pn_optimization base; /* first: accel_release_optimization casts back */
    pn_substitution* substitutions;
    fusion_item* items;
    uint32_t num_items;        /* fusion items made (some may be replaced by a chain) */
    chain_item* chains;
    uint32_t num_chains;
    int owns_payloads;         /* 1 until the result reaches the runtime */
    pn_failed_layer* failed;
    char (*reasons)[FUSION_REASON_MAX];
    uint32_t* untouched;
    struct accel_patterns* patterns; /* the pattern pass's matches (opt/patterns.h), or NULL */
    struct accel_linear_fusions* linear; /* the linear fusions' storage (opt/linear_fusion.h), or NULL */
} accel_optimization;

/* What optimize_subgraph makes of each layer (one state per subgraph layer). */
enum { LAYER_FAILED = 0, LAYER_KEPT = 1, LAYER_CANDIDATE = 2, LAYER_CLAIMED = 3 };

/* The name of a layer that replaces layers[0..count) of sg (indices; negative ones skipped):
 * their names joined with '+' in that order, each after the first without the dotted or
 * slashed prefix it shares with the first ("layer1.0.conv2" + "layer1.0.add" ->
 * "layer1.0.conv2+add"). malloc'd; NULL when out of memory. */
char* accel_fused_name(const pn_subgraph* sg, const int64_t* layers, uint32_t count);

/* Tensor ids at or above this are refused by the fusion passes (their tables are indexed by id). */
#define ACCEL_MAX_TENSOR_ID (1u << 24)

/* Per tensor id of a subgraph (ids 0..max_id): the layer that produces it (-1: none, a subgraph
 * input or constant), how many times layers read it, and whether it is one of the subgraph's
 * output_ids. The fusion passes' view of who uses what. */
typedef struct accel_tensor_table {
    uint32_t max_id;
    int64_t* producer;
    uint32_t* uses;
    unsigned char* is_output;
} accel_tensor_table;

/* Fills `t` for `sg`: 1, or 0 when out of memory or when some id is >= ACCEL_MAX_TENSOR_ID
 * (t->max_id then says so); free it with accel_tensor_table_free either way. */
int accel_tensor_table_build(const pn_subgraph* sg, accel_tensor_table* t);
void accel_tensor_table_free(accel_tensor_table* t);

#endif /* ACCEL_OPT_PASS_H */
