/*
 * CpuAcc fused linear layer (ops/fused_linear.c): y = act(alpha * a @ b + beta * bias + addend) as one
 * PRECOMPILED layer, which opt/linear_fusion.c makes from a MatMul (or a FullyConnected layer, ONNX
 * Gemm) with a constant b and the layers that alone consume its output: the Add of a constant
 * bias broadcast along the last axis, the Add of a residual of the output's shape, an
 * activation (the GELU, SiLU and hard swish decompositions opt/patterns.c recognizes
 * included), a LayerNorm or RMSNorm over the last axis after them (BERT's residual block), and
 * the Reshapes before a and after the product that keep the rows (transformers' Conv1D exports
 * as Reshape, Gemm, Reshape). The bias, the residual and the activation run in the GEMM's
 * epilogue on each finished block of the output while it is in cache, in the order the unfused
 * layers apply them, with the kernels they use, so the fused layer gives the bits of the
 * unfused ones. The normalization needs whole rows: on one thread (when the N block holds the
 * whole row) it runs in the epilogue too, else over the rows after the GEMM (split over the
 * threads); either way by the Normalization layer's row kernel (kernels/row_kernels.h norm_rows), whose rows are
 * independent, so the bits are the same.
 *
 * The layer's tensors (all float32):
 *   input 0  a, any rank >= 1, [..., K]: read as the [M, K] matrix of its rows, M = its
 *            elements / K (a's leading dims folded into the rows, as MatMul folds them);
 *   input 1  b, constant: [K, N] (or [N, K] with transpose_b), with any leading dims of 1;
 *   input 2  (has_bias) the bias, constant, N elements: [N] or [1, ..., 1, N];
 *   next     (has_addend) the residual, any shape of M * N elements, read as [M, N];
 *   next     (has_norm) the normalization's scale, constant, N elements as the bias;
 *   next     (has_norm_bias) the normalization's bias, constant, N elements as the bias;
 *   output   any shape of M * N elements, written as the row-major [M, N]; or, when a Split
 *            along the last axis alone reads the result (GPT-2's c_attn into query, key and
 *            value), its pieces: output q any shape of M * split_n[q] elements, written as the
 *            row-major [M, split_n[q]] (stored straight into the pieces when their widths are
 *            whole GEMM panels, else through the workspace).
 * The payload holds no shape, so `reshape` (ops/shared_weights.h) re-sizes the workload for other
 * rows M and shares the packed b.
 */
#ifndef ACCEL_LINEAR_H
#define ACCEL_LINEAR_H

#include "accel.h"

#include <stdint.h>

#define ACCEL_LINEAR_MAGIC 0x524e494cu /* "LINR" */
#define ACCEL_LINEAR_LABEL_MAX 128

/* The PRECOMPILED payload (made by opt/linear_fusion.c; malloc'd, freed by accel_linear_release). */
typedef struct accel_linear {
    uint32_t magic;          /* ACCEL_LINEAR_MAGIC (first: accel_precompiled_create dispatches on it) */
    uint32_t num_inputs;     /* 2 + has_bias + has_addend + has_norm + has_norm_bias */
    int32_t transpose_b;     /* b is [N, K] (a FullyConnected layer's transpose_b) */
    int32_t has_bias, has_addend, has_act;
    float alpha, beta;       /* a FullyConnected layer's (1 and 1 for a MatMul) */
    pn_activation_desc act;  /* with has_act */
    int32_t has_norm;        /* a normalization over each row of N after the activation */
    int32_t norm_rms;        /* with has_norm: RMS (1) or LAYER (0) */
    int32_t has_norm_bias;   /* with has_norm: its bias input is present */
    float norm_eps;          /* with has_norm: its epsilon */
    uint32_t num_outputs;    /* 1, or (a Split of the result along its last axis, no norm) its
                                2 .. ACCEL_LINEAR_GROUP_MAX pieces */
    int64_t split_n[4];      /* with num_outputs > 1: the pieces' widths (their sum N) */
    char label[ACCEL_LINEAR_LABEL_MAX]; /* e.g. "matmul [*, 64] x [64, 256] + bias + gelu" */
} accel_linear;

/* Sibling projections (opt/linear_fusion.c): G products of one a [..., K] with constant b_g [K, N_g]
 * (MatMuls, leading dims of 1 allowed), each with or without the Add of a constant bias [N_g]
 * (or [1, ..., 1, N_g]) and Reshapes after, as BERT's query, key and value projections are: one
 * GEMM over a's rows with the b_g side by side ([K, N_1 + ... + N_G], packed once), whose
 * epilogue adds each output's bias to its columns of every finished block (in cache) and
 * stores them into that output, so each output has the bits of its own MatMul and Add.
 *   input 0              a, read as [M, K];
 *   inputs 1 .. G        b_1 .. b_G, constant;
 *   then                 the biases of the outputs that have one (has_bias[g]), in order;
 *   outputs 0 .. G - 1   any shape of M * N_g elements, written as row-major [M, N_g]. */
#define ACCEL_LINEAR_GROUP_MAGIC 0x4d4e494cu /* "LINM" */
#define ACCEL_LINEAR_GROUP_MAX 4

typedef struct accel_linear_group {
    uint32_t magic;          /* ACCEL_LINEAR_GROUP_MAGIC */
    uint32_t num_outputs;    /* G, 2 .. ACCEL_LINEAR_GROUP_MAX */
    uint32_t num_inputs;     /* 1 + G + the biases */
    int32_t has_bias[ACCEL_LINEAR_GROUP_MAX];
    char label[ACCEL_LINEAR_LABEL_MAX]; /* e.g. "matmul [*, 64] x [64, 64 | 64 | 64] + bias" */
} accel_linear_group;

/* pn_precompiled_desc.release_payload of a fused linear layer. */
void accel_linear_release(void* payload);

/* The workload of a PRECOMPILED layer whose payload is an accel_linear (its tensors checked
 * against the rules above); context is the factory's accel_env. Reshapable. */
pn_status accel_linear_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out);

/* The workload of a PRECOMPILED layer whose payload is an accel_linear_group (its tensors
 * checked against the rules above). Reshapable; the packed b is shared with the source. */
pn_status accel_linear_group_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out);

#endif /* ACCEL_LINEAR_H */
