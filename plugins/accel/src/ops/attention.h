/*
 * CpuAcc fused attention (ops/attention.c): softmax(scale * Q K^T + mask) V as one PRECOMPILED
 * layer, which opt/patterns.c makes from the layers torch and transformers export
 * (MatMul, Mul or Div by a constant, Add of a mask, Softmax over the last axis, MatMul, with
 * the Transposes around them), so the score matrix is never written to memory: per batch
 * (batch dims, heads) and block of ACCEL_ROW_MR query rows, the scores of the block (a few KiB)
 * go through the softmax and straight into the product with V (kernels/row_kernels_body.h's attn_scores,
 * attn_softmax_rows, attn_pv).
 *
 * Every operand is read through strides, so Transposes of Q, K, V and of the output are
 * absorbed: Q(b, i, p), K^T(b, p, j), V(b, j, c), mask(b, i, j), out(b, i, c) are each an
 * element offset sum over the batch dims plus the two matrix strides (0 where an operand is
 * broadcast). The units of work (a batch and a range of rows) are cut into at most four runs
 * per thread, each with a slot of the workspace of its own (so no two threads ever share one);
 * a run packs each batch's K^T into rows of keys (padded with zeros to a multiple of 2 vectors)
 * and, unless V can be read in place (its columns contiguous and a multiple of the vector
 * width), V into padded rows, once per batch it meets.
 *
 * Numerics: each score is a float32 dot product over p in order (one fused multiply-add
 * chain), times the scale, plus the mask; the softmax subtracts the row's largest score and
 * divides the product with V by the row's sum of exponentials, instead of dividing each
 * probability (the unfused layers do the latter): the two differ by a few float32 roundings.
 * Results do not depend on the thread count.
 */
#ifndef ACCEL_ATTENTION_H
#define ACCEL_ATTENTION_H

#include "accel.h"

#include <stdint.h>

#define ACCEL_ATTN_LABEL_MAX 160

/* What the fused layer computes, resolved by the pattern match: the PRECOMPILED payload. */
typedef struct accel_attention {
    uint32_t magic;          /* ACCEL_ATTN_MAGIC (first: accel_precompiled_create dispatches on it) */
    uint32_t num_inputs;     /* 3 (q, k, v) or 4 (and the mask) */
    pn_tensor_info inputs[4];
    pn_tensor_info output;
    uint32_t batch_rank;     /* batch dims of the products, 0..PN_MAX_DIMS - 2 */
    int64_t bdims[PN_MAX_DIMS];
    /* batch strides of each operand (elements; 0: broadcast) */
    int64_t qb[PN_MAX_DIMS], kb[PN_MAX_DIMS], vb[PN_MAX_DIMS], mb[PN_MAX_DIMS], ob[PN_MAX_DIMS];
    int64_t sq, sk, d, dv;   /* query rows, keys, depth of Q K^T, depth of V */
    int64_t q_rs, q_cs;      /* Q(i, p) = q[i * q_rs + p * q_cs] */
    int64_t k_ps, k_js;      /* K^T(p, j) = k[p * k_ps + j * k_js] */
    int64_t v_js, v_cs;      /* V(j, c) = v[j * v_js + c * v_cs] */
    int64_t m_rs, m_cs;      /* mask(i, j) = m[i * m_rs + j * m_cs] */
    int64_t o_rs, o_cs;      /* out(i, c) = o[i * o_rs + c * o_cs] */
    float scale;             /* applied to Q K^T before the mask is added */
    float* own_mask;         /* NULL, or (with 3 inputs) the sum of the constant masks the pattern
                                added (Reshapes between them), of the scores' shape: read
                                through mb, m_rs, m_cs like a mask input; owned (malloc) */
    char label[ACCEL_ATTN_LABEL_MAX];
    /* The recipe for other dims (accel_attention_create at dims other than these): q, k and v
     * (i = 0, 1, 2) as the products read them, of rank op_rank[i], dims op_dims[i] and element
     * strides op_strides[i] in the tensor read (input i); axis j of a permuted operand is axis
     * perm[i][j] of that tensor, read contiguously; a reshaped one (a Reshape between) reads
     * the Reshape's output, whose dims follow the tensor read's by the Reshape's grouping of
     * axes rs[i] (plugin_common.h, which the runtime guarantees at other dims) where rs_known[i],
     * else keeps its input's dims (a fixed input). The output: the product's axis perm_out[j] is axis j of a Transpose's
     * output (out_permuted), which may be reshaped into the layer's output (out_reshaped). */
    uint32_t op_rank[3];
    int64_t op_dims[3][PN_MAX_DIMS];
    int64_t op_strides[3][PN_MAX_DIMS];
    uint32_t perm[3][PN_MAX_DIMS];
    unsigned char permuted[3], reshaped[3], rs_known[3];
    pn_reshape_groups rs[3];
    uint32_t perm_out[PN_MAX_DIMS];
    unsigned char out_permuted, out_reshaped;
} accel_attention;

/* Batch strides (elements) of an operand of rank `rank`, dims and strides, broadcast to the batch
 * dims bd[0..nb) into out[0..nb): 1, or 0 when it does not broadcast to them. */
int accel_attention_batch_strides(uint32_t rank, const int64_t* dims, const int64_t* strides, uint32_t nb,
                                  const int64_t* bd, int64_t* out);

#define ACCEL_ATTN_MAGIC 0x4e545441u /* "ATTN" */

/* pn_precompiled_desc.release_payload of an attention (frees it and its own mask). */
void accel_attention_release(void* payload);

/* The workload of a PRECOMPILED layer whose payload is an accel_attention; context is the
 * factory's accel_env. The layer's tensors are the payload's, or the same at other dims that
 * its recipe derives everything from (a KV cache one token longer, another batch): the
 * operands' dims and strides, the batch, the mask's broadcast and the output's layout are
 * worked out again at them; other dims are refused (PN_ERR_INVALID_ARGUMENT: the runtime then
 * fuses the layers again). */
pn_status accel_attention_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out);

/* pn_plugin.precompiled_at_execute: 1 for a fused attention that works its operands out again
 * at other dims (no summed constant mask, which is made for its dims), the inputs read through a
 * Reshape whose grouping of axes it does not know in *fixed_inputs (they keep their dims); 0 for
 * any other PRECOMPILED layer. */
int accel_attention_at_execute(const pn_layer* layer, uint32_t* fixed_inputs);

#endif /* ACCEL_ATTENTION_H */
