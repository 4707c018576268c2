/*
 * CpuAcc shared prepacked weights and the reshapable workload (pn_workload.reshape, ABI 1.1).
 *
 * A session (docs/session.md) loads a model again for every new combination of input shapes
 * and asks each workload of the earlier specialization to re-size itself (reshape) instead of
 * creating a new one. The weight-heavy workloads (convolutions on the GEMM and blocked paths,
 * transposed convolutions, fully connected, MatMul with a constant b, blocked chains) keep
 * their prepacked weights in reference-counted blocks (pn_shared) named by an accel_pack_key:
 * the layout, the kernel set, the constant buffers packed and the layout's parameters. A
 * workload made by reshape receives its source's blocks as a donor: every block it needs
 * whose key equals one of the donor's is shared (one more reference), anything else is packed
 * anew. Nothing shape-dependent is shared (im2col tables, workspaces, chain arenas are
 * recomputed), so the two workloads never share anything execute() writes.
 *
 * Why the key holds the constant buffer's address: backend_api.h guarantees that the layer
 * given to reshape reads the very bytes its source was given, kept alive and unchanged while
 * any workload made from them exists; accel_reshapable checks that the new layer names the
 * same constant buffers as the source before it offers the donor, so equal keys mean equal
 * packed data.
 *
 * Threads: the reference counts are plain (pn_shared); backend_api.h never lets reshape and
 * destroy of workloads that share state run on two threads at once. reshape reads only the
 * source's immutable fields, so the source may be executing meanwhile.
 */
#ifndef ACCEL_SHARED_WEIGHTS_H
#define ACCEL_SHARED_WEIGHTS_H

#include "accel.h"

#include <stddef.h>
#include <stdint.h>

/* The layouts of packed weights (what accel_pack_key.layout names). */
typedef enum accel_pack_layout {
    ACCEL_PACK_GEMM_A = 1,      /* gemm_pack_a_full per group (ops/convolution_2d.c, OC rows) */
    ACCEL_PACK_GEMM_B = 2,      /* gemm_pack_b_full per group / matrix (ops/convolution_2d.c, ops/fully_connected.c, ops/matmul.c) */
    ACCEL_PACK_NCHWC = 3,       /* accel_nchwc_pack_weights + bias (ops/conv_nchwc.c, chains) */
    ACCEL_PACK_NCHWC_DW = 4,    /* accel_nchwc_pack_dw_weights + bias (chains) */
    ACCEL_PACK_DECONV = 5,      /* a transposed convolution's W^T per group (deconv.c) */
    ACCEL_PACK_GEMM_B_SIDE = 6, /* GEMM B operands side by side as one (ops/fused_linear.c's sibling projections) */
    ACCEL_PACK_TREES = 7        /* a packed forest: tree records, leaves, base values (ops/tree_ensemble.c) */
} accel_pack_layout;

#define ACCEL_PACK_PARAMS 8

/* What a packed block holds. Make one with accel_pack_key_init (it zeroes the padding, so keys
 * compare with memcmp). */
typedef struct accel_pack_key {
    int32_t layout;                     /* accel_pack_layout */
    int32_t isa;                        /* accel_isa of the kernels the layout is for */
    const void* source;                 /* the constant buffer packed */
    const void* source2;                /* a second one packed with it (a bias), or NULL */
    int64_t params[ACCEL_PACK_PARAMS];  /* the layout's parameters (dims, groups, transposes) */
} accel_pack_key;

void accel_pack_key_init(accel_pack_key* key, accel_pack_layout layout, accel_isa isa,
                         const void* source, const void* source2);

/* The packed blocks one workload uses, and while it is being made by reshape, its source's. */
typedef struct accel_packs {
    const struct accel_packs* donor; /* reshape: the source's blocks, offered by key; else NULL */
    struct accel_pack_counter* counter; /* the backend's (accel_env.packed), or NULL */
    uint32_t count, capacity;
    pn_shared** blocks;
    uint32_t shared;                 /* how many of `blocks` came from the donor (tests, docs) */
} accel_packs;

/* A block of `floats` floats (64-byte aligned) for `key`, referenced by `packs` from now on:
 * the donor's when it has one with an equal key (*fresh = 0: already filled), else a new one
 * (*fresh = 1: the caller fills it). NULL when out of memory. */
float* accel_packs_get(accel_packs* packs, const accel_pack_key* key, size_t floats, int* fresh);

/* 1 when the donor of `packs` has a block with `key` (to choose a layout it already has). */
int accel_packs_offered(const accel_packs* packs, const accel_pack_key* key);

/* `count` matrices src + i * stride, each [rows, cols] with element (i, j) at i * rs + j * cs,
 * packed as GEMM A operands (is_a: gemm_pack_a_full) or B operands (gemm_pack_b_full) of
 * isa's gemm_arch, one after another, *each_out floats apart: a block of packs (the donor's
 * when it has this one). NULL when out of memory. */
const float* accel_pack_gemm(accel_packs* packs, accel_isa isa, int is_a, const float* src, int64_t rows,
                             int64_t cols, int64_t rs, int64_t cs, int64_t count, int64_t stride,
                             size_t* each_out);

/* The key accel_pack_gemm uses (for accel_packs_offered). */
void accel_pack_gemm_key(accel_pack_key* key, accel_isa isa, int is_a, const float* src, int64_t rows,
                         int64_t cols, int64_t rs, int64_t cs, int64_t count, int64_t stride);

/* Drops every reference of `packs` (the blocks go with their last reference). */
void accel_packs_release(accel_packs* packs);

/* Builds the inner workload of a reshapable one: as a create function would, taking every
 * packed block through accel_packs_get(packs, ...). Its state may point into the blocks: they
 * live as long as the reshapable workload around it. */
typedef pn_status (*accel_build_fn)(const accel_env* env, const pn_layer* layer, accel_packs* packs,
                                    pn_workload** inner_out, pn_string_out* message_out);

/* A workload running build()'s inner workload, with pn_workload.reshape: reshape judges the
 * new layer as create_workload would (env->plugin's check; pn_validate_layer for PRECOMPILED),
 * checks that it is this layer at other shapes (kind, descriptor, fused activation, element
 * types, the same constant buffers of the same shapes; a PRECOMPILED layer's label instead of
 * its descriptor; else PN_ERR_INVALID_ARGUMENT), and builds a new one with this workload's
 * blocks as the donor and this workload's env (its thread pool and kernel set). */
pn_status accel_reshapable_new(const accel_env* env, const pn_layer* layer, accel_build_fn build,
                               pn_workload** workload_out, pn_string_out* message_out);

/* The bytes of packed blocks alive in one backend's workloads (each block counted once,
 * however many workloads share it): option packed_weight_bytes. Made by the backend
 * (accel_env.packed points at it); atomic, since workloads of different loaded networks may
 * be made and destroyed on different threads. */
typedef struct accel_pack_counter accel_pack_counter;
accel_pack_counter* accel_pack_counter_new(void);
void accel_pack_counter_free(accel_pack_counter* counter);
int64_t accel_pack_counter_bytes(const accel_pack_counter* counter);

#endif /* ACCEL_SHARED_WEIGHTS_H */
