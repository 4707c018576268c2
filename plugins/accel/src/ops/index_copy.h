/*
 * CpuAcc's fused reshape-transpose (ops/data_movement.c): a Transpose together with the Reshape
 * that feeds it and / or the Reshape that follows it, as one PRECOMPILED layer that
 * opt/patterns.c makes, so the tensor moves once instead of two or three times. A Reshape
 * does not move elements in memory order, so the whole chain is the Transpose of x seen at the
 * first Reshape's shape, written in memory order into the last tensor: one strided region copy
 * (the output dims of the Transpose, read at the first shape's strides permuted). ShuffleNet's
 * channel shuffle (Reshape [N, g, C/g, H, W], Transpose (0, 2, 1, 3, 4), Reshape [N, C, H, W])
 * and Swin's window partition and reverse are such chains. Only chains whose innermost output
 * run is contiguous in x are taken (others keep the Transpose layer's block transposes).
 */
#ifndef ACCEL_INDEX_COPY_H
#define ACCEL_INDEX_COPY_H

#include "accel.h"

#include <stdint.h>

#define ACCEL_INDEX_COPY_MAGIC 0x59504f43u /* "COPY" */
#define ACCEL_INDEX_COPY_LABEL_MAX 96

/* The PRECOMPILED payload. */
typedef struct accel_index_copy {
    uint32_t magic;              /* ACCEL_INDEX_COPY_MAGIC (first: accel_precompiled_create dispatches on it) */
    pn_tensor_info input;        /* x, the first layer's input */
    pn_tensor_info output;       /* the last layer's output (as many elements, same type) */
    uint32_t rank;               /* the Transpose's rank */
    int64_t dims[PN_MAX_DIMS];   /* the Transpose's output dims */
    int64_t xs[PN_MAX_DIMS];     /* x's element strides for them (the first shape's, permuted) */
    char label[ACCEL_INDEX_COPY_LABEL_MAX];
} accel_index_copy;

/* pn_precompiled_desc.release_payload of an accel_index_copy (NULL: nothing). */
void accel_index_copy_release(void* payload);

/* The workload of a PRECOMPILED layer whose payload is an accel_index_copy (checked against
 * the layer's tensors); context is the factory's accel_env. */
pn_status accel_index_copy_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                  pn_string_out* message_out);

#endif /* ACCEL_INDEX_COPY_H */
