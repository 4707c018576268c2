/* The layer kind table (pn_kinds.h) and the kind names read from it. */
#include "plugnn/pn_kinds.h"

#include "pn_validate_internal.h"

/* Indexed by pn_layer_kind; an entry without a name is a value that is no kind. */
static const pn_kind_info kinds[] = {
    [PN_LAYER_CONVOLUTION_2D] = {"Convolution2d", PNV_END(pn_convolution_2d_desc, fused_activation),
                                 pn_validate_convolution_2d},
    [PN_LAYER_POOLING_2D] = {"Pooling2d", PNV_END(pn_pooling_2d_desc, p), pn_validate_pooling_2d},
    [PN_LAYER_ELEMENTWISE_BINARY] = {"ElementwiseBinary",
                                     PNV_END(pn_elementwise_binary_desc, fused_activation),
                                     pn_validate_elementwise_binary},
    [PN_LAYER_ELEMENTWISE_VARIADIC] = {"ElementwiseVariadic",
                                       PNV_END(pn_elementwise_variadic_desc, op),
                                       pn_validate_elementwise_variadic},
    [PN_LAYER_ACTIVATION] = {"Activation", PNV_END(pn_activation_desc, beta),
                             pn_validate_activation},
    [PN_LAYER_FULLY_CONNECTED] = {"FullyConnected",
                                  PNV_END(pn_fully_connected_desc, fused_activation),
                                  pn_validate_fully_connected},
    [PN_LAYER_MATMUL] = {"MatMul", 0, pn_validate_matmul},
    [PN_LAYER_SOFTMAX] = {"Softmax", PNV_END(pn_softmax_desc, axis), pn_validate_softmax},
    [PN_LAYER_BATCH_NORMALIZATION] = {"BatchNormalization",
                                      PNV_END(pn_batch_normalization_desc, epsilon),
                                      pn_validate_batch_normalization},
    [PN_LAYER_LOCAL_RESPONSE_NORMALIZATION] = {"LocalResponseNormalization",
                                               PNV_END(pn_lrn_desc, bias), pn_validate_lrn},
    [PN_LAYER_CONCAT] = {"Concat", PNV_END(pn_concat_desc, axis), pn_validate_concat},
    [PN_LAYER_RESHAPE] = {"Reshape", 0, pn_validate_reshape},
    [PN_LAYER_TRANSPOSE] = {"Transpose", PNV_END(pn_transpose_desc, perm), pn_validate_transpose},
    [PN_LAYER_COPY] = {"Copy", 0, pn_validate_copy},
    [PN_LAYER_PRECOMPILED] = {"Precompiled", PNV_END(pn_precompiled_desc, label),
                              pn_validate_precompiled},
    [PN_LAYER_RECURRENT] = {"Recurrent", PNV_END(pn_recurrent_desc, activation_beta),
                            pn_validate_recurrent},
    [PN_LAYER_GATHER] = {"Gather", PNV_END(pn_gather_desc, batch_dims), pn_validate_gather},
    [PN_LAYER_SCATTER] = {"Scatter", PNV_END(pn_scatter_desc, axis), pn_validate_scatter},
    [PN_LAYER_SLICE] = {"Slice", PNV_END(pn_slice_desc, steps), pn_validate_slice},
    [PN_LAYER_SPLIT] = {"Split", PNV_END(pn_split_desc, axis), pn_validate_split},
    [PN_LAYER_PAD] = {"Pad", PNV_END(pn_pad_desc, pads_end), pn_validate_pad},
    [PN_LAYER_EXPAND] = {"Expand", 0, pn_validate_expand},
    [PN_LAYER_ONE_HOT] = {"OneHot", PNV_END(pn_one_hot_desc, axis), pn_validate_one_hot},
    [PN_LAYER_TRIANGULAR] = {"Triangular", PNV_END(pn_triangular_desc, k), pn_validate_triangular},
    [PN_LAYER_CONVOLUTION] = {"Convolution", PNV_END(pn_convolution_desc, fused_activation),
                              pn_validate_convolution},
    [PN_LAYER_POOLING] = {"Pooling", PNV_END(pn_pooling_desc, p), pn_validate_pooling},
    [PN_LAYER_RESIZE] = {"Resize", PNV_END(pn_resize_desc, roi_end), pn_validate_resize},
    [PN_LAYER_REDUCE] = {"Reduce", PNV_END(pn_reduce_desc, select_last_index), pn_validate_reduce},
    [PN_LAYER_NORMALIZATION] = {"Normalization", PNV_END(pn_normalization_desc, flags),
                                pn_validate_normalization},
    [PN_LAYER_TOP_K] = {"TopK", PNV_END(pn_top_k_desc, sorted), pn_validate_top_k},
    [PN_LAYER_CUMULATIVE] = {"Cumulative", PNV_END(pn_cumulative_desc, reverse),
                             pn_validate_cumulative},
    [PN_LAYER_ELEMENTWISE_UNARY] = {"ElementwiseUnary", PNV_END(pn_elementwise_unary_desc, op),
                                    pn_validate_elementwise_unary},
    [PN_LAYER_SELECT] = {"Select", 0, pn_validate_select},
    [PN_LAYER_CAST] = {"Cast", PNV_END(pn_cast_desc, saturate), pn_validate_cast},
    [PN_LAYER_QUANTIZATION] = {"Quantization", PNV_END(pn_quantization_desc, precision),
                               pn_validate_quantization},
    [PN_LAYER_QUANTIZED_CONVOLUTION] = {"QuantizedConvolution",
                                        PNV_END(pn_quantized_convolution_desc, flags),
                                        pn_validate_quantized_convolution},
    [PN_LAYER_QUANTIZED_MATMUL] = {"QuantizedMatMul", PNV_END(pn_quantized_matmul_desc, op),
                                   pn_validate_quantized_matmul},
    [PN_LAYER_GRID_SAMPLE] = {"GridSample", PNV_END(pn_grid_sample_desc, align_corners),
                              pn_validate_grid_sample},
    [PN_LAYER_ROI_ALIGN] = {"RoiAlign", PNV_END(pn_roi_align_desc, half_pixel),
                            pn_validate_roi_align},
    [PN_LAYER_DEFORMABLE_CONVOLUTION] = {"DeformableConvolution",
                                         PNV_END(pn_deformable_convolution_desc, flags),
                                         pn_validate_deformable_convolution},
    [PN_LAYER_SPECTRAL] = {"Spectral", PNV_END(pn_spectral_desc, flags), pn_validate_spectral},
    [PN_LAYER_LINEAR_ALGEBRA] = {"LinearAlgebra", PNV_END(pn_linear_algebra_desc, op),
                                 pn_validate_linear_algebra},
    [PN_LAYER_BITCAST] = {"Bitcast", 0, pn_validate_bitcast},
    [PN_LAYER_RANDOM] = {"Random", PNV_END(pn_random_desc, b), pn_validate_random},
    [PN_LAYER_DATA_DEPENDENT] = {"DataDependent", PNV_END(pn_data_dependent_desc, center_point_box),
                                 pn_validate_data_dependent},
    [PN_LAYER_TREE_ENSEMBLE] = {"TreeEnsemble", PNV_END(pn_tree_ensemble_desc, post_transform),
                                pn_validate_tree_ensemble},
};

const pn_kind_info* pn_kind_info_of(pn_layer_kind kind) {
    if ((int)kind < 0 || (size_t)kind >= sizeof(kinds) / sizeof(kinds[0]) ||
        kinds[kind].name == NULL) {
        return NULL;
    }
    return &kinds[kind];
}

const char* pn_layer_kind_name(pn_layer_kind kind) {
    const pn_kind_info* info = pn_kind_info_of(kind);
    return info != NULL ? info->name : "Invalid";
}
