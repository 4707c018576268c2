/*
 * plugnn layer validation: the descriptor, shape and element-type rules of
 * backend_api.h, checked once here so every backend refuses malformed layers
 * the same way.
 *
 * Part of plugnn::plugin_common (not of the ABI). Every function returns
 * PN_OK when the layer is well formed, else PN_ERR_INVALID_ARGUMENT with a
 * human-readable reason in `reason` (may be NULL). Element types are checked
 * against what each kind allows (float, numeric, ...); which of those a
 * backend runs is its own decision (its pn_plugin check).
 */
#ifndef PLUGNN_PN_VALIDATE_H
#define PLUGNN_PN_VALIDATE_H

#include "plugnn/backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The whole check of a layer: pn_validate_common, then the validator of the
 * layer's kind from the kind table (pn_kinds.h). One exception to the
 * PN_ERR_INVALID_ARGUMENT rule: a kind the table does not know (added by a
 * newer backend_api.h) is PN_ERR_UNSUPPORTED, a valid request this plugin
 * cannot serve. The plugin skeleton (pn_plugin.h) runs this first. */
pn_status pn_validate_layer(const pn_layer* layer, pn_string_out* reason);

/* The common checks only: layer non-NULL with a large enough struct_size, a
 * kind other than PN_LAYER_INVALID, input/output arrays present, every tensor
 * info readable with a known dtype, rank <= PN_MAX_DIMS, dims >= 0 and a byte
 * size that fits in size_t, and, for a kind of the kind table that takes a
 * descriptor, a descriptor of at least its struct size. */
pn_status pn_validate_common(const pn_layer* layer, pn_string_out* reason);

/* One kind's checks (counts, descriptor values, shapes); each assumes
 * pn_validate_common passed. The kind table (pn_kinds.h) holds each one. */
pn_status pn_validate_convolution_2d(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_pooling_2d(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_elementwise_binary(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_elementwise_variadic(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_activation(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_fully_connected(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_matmul(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_softmax(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_batch_normalization(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_lrn(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_concat(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_reshape(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_transpose(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_copy(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_precompiled(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_recurrent(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_gather(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_scatter(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_one_hot(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_slice(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_split(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_pad(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_expand(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_triangular(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_convolution(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_pooling(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_resize(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_reduce(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_normalization(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_top_k(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_cumulative(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_elementwise_unary(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_select(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_cast(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_data_dependent(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_tree_ensemble(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_quantization(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_quantized_convolution(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_quantized_matmul(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_grid_sample(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_roi_align(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_deformable_convolution(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_spectral(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_linear_algebra(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_bitcast(const pn_layer* layer, pn_string_out* reason);
pn_status pn_validate_random(const pn_layer* layer, pn_string_out* reason);

/* 1 for the unary operations whose output is BOOL (IS_NAN .. IS_NEG_INF). */
int pn_unary_op_gives_bool(pn_unary_op op);

/* A fused activation (NULL is valid: none). `what` names its owner in messages. */
pn_status pn_validate_fused_activation(const pn_activation_desc* act, const char* what,
                                       pn_string_out* reason);

/* 1 for the comparisons (EQUAL .. GREATER_EQUAL), whose output is BOOL. */
int pn_binary_op_is_comparison(pn_binary_op op);

/* Writes "[d0, d1, ...]" into buf (always NUL-terminated); returns buf. */
const char* pn_format_shape(const pn_tensor_info* info, char* buf, size_t capacity);

/* Checks the arguments of one execute() against the infos the workload was created with:
 * struct sizes, counts, non-NULL arrays, matching dtype and dims where an info is given, and
 * non-NULL data for non-empty tensors. Messages start with "<backend> execute: ". */
pn_status pn_check_execute_args(const pn_execute_args* args, uint32_t num_inputs,
                                const pn_tensor_info* inputs, uint32_t num_outputs,
                                const pn_tensor_info* outputs, const char* backend,
                                pn_string_out* message_out);

/* The NumPy broadcast shape of `a` and `b` into *out (dims and rank only).
 * Returns 0, or -1 when they do not broadcast. */
int pn_broadcast_shape(const pn_tensor_info* a, const pn_tensor_info* b, pn_tensor_info* out);

/* The [N, C, H, W] sizes of a rank-4 tensor stored in `layout` (NCHW or NHWC). */
void pn_layout_nchw(const pn_tensor_info* info, pn_data_layout layout, int64_t nchw_out[4]);

/* The rank-4 shape in `layout` of sizes n, c, h, w into out->rank/dims. */
void pn_layout_shape(pn_data_layout layout, int64_t n, int64_t c, int64_t h, int64_t w,
                     pn_tensor_info* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PN_VALIDATE_H */
