/*
 * CpuAcc batch normalization with the activation after it (ops/batch_norm.c) as one PRECOMPILED
 * layer, which opt/patterns.c makes from a BATCH_NORMALIZATION whose four operands are
 * constant and the ACTIVATION that alone reads its output (DenseNet's BN-ReLU after each
 * Concat, which the optimizer cannot fold into a convolution): each channel row is scaled,
 * shifted and activated while in cache, one pass over the tensor instead of two.
 */
#ifndef ACCEL_BATCH_NORM_H
#define ACCEL_BATCH_NORM_H

#include "accel.h"

#include <stdint.h>

#define ACCEL_BN_ACT_MAGIC 0x54434e42u /* "BNCT" */
#define ACCEL_BN_ACT_LABEL_MAX 96

/* The PRECOMPILED payload. */
typedef struct accel_bn_act {
    uint32_t magic;              /* ACCEL_BN_ACT_MAGIC (first: accel_precompiled_create dispatches on it) */
    pn_tensor_info input;        /* x */
    pn_tensor_info output;       /* the activation's output (x's shape and type) */
    pn_data_layout layout;       /* the batch normalization's */
    pn_activation_desc act;
    int64_t channels;
    float* coef;                 /* a = scale / sqrt(var + eps), mean, bias: 3 * channels floats (owned) */
    char label[ACCEL_BN_ACT_LABEL_MAX];
} accel_bn_act;

/* The payload of batch normalization `bn` (its operands 1..4 constant: constant_data) followed
 * by activation `act` (NULL when out of memory). */
accel_bn_act* accel_bn_act_new(const pn_layer* bn, const pn_activation_desc* act);

/* pn_precompiled_desc.release_payload of an accel_bn_act (NULL: nothing). */
void accel_bn_act_release(void* payload);

/* The workload of a PRECOMPILED layer whose payload is an accel_bn_act (checked against the
 * layer's tensors); context is the factory's accel_env. */
pn_status accel_bn_act_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out);

#endif /* ACCEL_BATCH_NORM_H */
