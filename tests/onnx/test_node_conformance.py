"""ONNX's own node tests (onnx.backend.test) for every operator plugnn imports, run on CpuRef.

Each included case imports the test's model with plugnn.onnx.backend, runs it on CpuRef and
compares with ONNX's expected outputs at the test's own tolerances. Every exclusion below has
its reason, and docs/conformance.md lists them all. The *_cuda variants are skipped (CPU only).
"""

from __future__ import annotations

import re
import warnings

import onnx.backend.test

from plugnn.onnx import backend as plugnn_backend

# One pattern per imported operator (test names end in _cpu / _cuda).
INCLUDED = {
    "Conv": r"^test_(basic_conv_|conv_with_)",
    "MaxPool": r"^test_maxpool_",
    "AveragePool": r"^test_averagepool_",
    "GlobalAveragePool": r"^test_globalaveragepool_",
    "GlobalMaxPool": r"^test_globalmaxpool_",
    "LpPool": r"^test_lppool_",
    "Add": r"^test_add_",
    "Sub": r"^test_sub_",
    "Mul": r"^test_mul_",
    "Div": r"^test_div_",
    "Pow": r"^test_pow_",
    "Max": r"^test_max_",
    "Min": r"^test_min_",
    "Sum": r"^test_sum_",
    "Mean": r"^test_mean_",
    "Relu": r"^test_relu_",
    "LeakyRelu": r"^test_leakyrelu_",
    "PRelu": r"^test_prelu_",
    "Clip": r"^test_clip_",
    "Sigmoid": r"^test_sigmoid_",
    "HardSigmoid": r"^test_hardsigmoid_",
    "HardSwish": r"^test_hardswish_",
    "Tanh": r"^test_tanh_",
    "Elu": r"^test_elu_",
    "Softmax": r"^test_softmax_",
    "Gemm": r"^test_gemm_",
    "MatMul": r"^test_matmul_",
    "Flatten": r"^test_flatten_",
    "Reshape": r"^test_reshape_",
    "Transpose": r"^test_transpose_",
    "Concat": r"^test_concat_",
    "BatchNormalization": r"^test_batchnorm_",
    "LRN": r"^test_lrn_",
    "Dropout": r"^test_dropout_",
    "Identity": r"^test_identity_",
    "Constant": r"^test_constant_(cpu|cuda)$",
    "ConstantOfShape": r"^test_constantofshape_",
    "Unsqueeze": r"^test_unsqueeze_",
    "Squeeze": r"^test_squeeze_",
    "Shape": r"^test_shape_",
    "Gather": r"^test_gather_(0|1|2d_indices|negative_indices)_",
    "Cast": r"^test_cast_",
    "CastLike": r"^test_castlike_",
    "Slice": r"^test_slice_",
    "RNN": r"^test_(simple_rnn|rnn_seq_length)_",
    "GRU": r"^test_gru_",
    "LSTM": r"^test_lstm_",
    "GatherElements": r"^test_gather_elements_",
    "GatherND": r"^test_gathernd_",
    "ScatterElements": r"^test_scatter_elements_",
    "Scatter": r"^test_scatter_(with|without)_axis_",
    "ScatterND": r"^test_scatternd_",
    "Split": r"^test_split_",
    "Pad": r"^test_(constant|edge|reflect|wrap)_pad_",
    "Expand": r"^test_expand_",
    "Tile": r"^test_tile_",
    "DepthToSpace": r"^test_depthtospace_",
    "SpaceToDepth": r"^test_spacetodepth_",
    "Trilu": r"^test_tri[lu]_",
    "OneHot": r"^test_onehot_",
    "Range": r"^test_range_",
    "Size": r"^test_size_",
    "EyeLike": r"^test_eyelike_",
    "NonZero": r"^test_nonzero_",
    "ConvTranspose": r"^test_convtranspose",
    "Resize": r"^test_resize_",
    "Upsample": r"^test_upsample_",
    "ReduceSum": r"^test_reduce_sum_(?!square)",
    "ReduceMean": r"^test_reduce_mean_",
    "ReduceMax": r"^test_reduce_max_",
    "ReduceMin": r"^test_reduce_min_",
    "ReduceProd": r"^test_reduce_prod_",
    "ReduceL1": r"^test_reduce_l1_",
    "ReduceL2": r"^test_reduce_l2_",
    "ReduceLogSum": r"^test_reduce_log_sum_(?!exp)",
    "ReduceLogSumExp": r"^test_reduce_log_sum_exp_",
    "ReduceSumSquare": r"^test_reduce_sum_square_",
    "ArgMax": r"^test_argmax_",
    "ArgMin": r"^test_argmin_",
    "LayerNormalization": r"^test_layer_normalization_",
    "GroupNormalization": r"^test_group_normalization_",
    "InstanceNormalization": r"^test_instancenorm_",
    "LpNormalization": r"^test_(l1normalization|l2normalization|lpnormalization)_",
    "MeanVarianceNormalization": r"^test_mvn",
    "RMSNormalization": r"^test_rms_normalization_",
    "TopK": r"^test_top_k",
    "CumSum": r"^test_cumsum_",
    "CumProd": r"^test_cumprod_",
    "LogSoftmax": r"^test_logsoftmax_",
    "Hardmax": r"^test_hardmax_",
}

# (pattern, reason): every case left out, and why. docs/conformance.md mirrors this list.
EXCLUDED = [
    (r"^test_(add|sub|mul|div|max|min|clip_default)_.*(u?int(8|16|32|64)|float16|float64)",
     "non-float32 element types (integers, float16, float64): plugnn computes in float32 only "
     "(other types until quantized support exists)"),
    (r"^test_pow_types_", "mixed or integer element types: float32 only"),
    (r"^test_maxpool_with_argmax_", "MaxPool's Indices output is used: plugnn does not produce indices"),
    (r"^test_batchnorm_.*_training_mode", "training_mode=1: inference only"),
    (r"^test_dropout_default_mask", "Dropout's mask output is used: inference only, no mask"),
    (r"^test_identity_(sequence|opt)", "sequence / optional inputs: plugnn imports tensors only"),
    (r"^test_(cast|castlike)_", "Cast/CastLike of run-time data to another type: plugnn folds casts of values known "
     "at import time and imports float32 -> float32 as identity; every node test casts run-time data between "
     "other types"),
    (r"^test_(clip_(?!default_inbounds_)|elu_|leakyrelu_|prelu_).*expanded", "the function-expanded form uses Less/Where/Exp, which plugnn "
     "does not import (the plain operator passes)"),
    (r"^test_range_.*_expanded", "the function-expanded form uses Loop, which plugnn does not import (the plain "
     "operator passes)"),
    (r"^test_split_to_sequence_", "SplitToSequence produces a sequence: plugnn imports tensors only"),
]

# the function-expanded forms that do pass (they use only imported operators):
# test_clip_default_inbounds_expanded (Identity), test_hardswish_expanded (HardSigmoid, Mul),
# test_relu_expanded_ver18 and test_hardsigmoid_*_expanded_ver18 (Constant, CastLike, Mul, Add, Max, Min).

with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # ONNX's test generators overflow casts on purpose
    backend_test = onnx.backend.test.BackendTest(plugnn_backend, __name__, test_kwargs={"backends": ["CpuRef"]})

for pattern in INCLUDED.values():
    backend_test.include(pattern)
for pattern, _reason in EXCLUDED:
    backend_test.exclude(pattern)

# Collect the node tests of the included operators only (ONNX's runner would list every other test of
# its suite as skipped), on CPU (the _cuda twins would be skipped: plugnn's backend is CPU only).
NodeTests = backend_test.test_cases["OnnxBackendNodeModelTest"]
for _name in [n for n in vars(NodeTests) if n.startswith("test_")]:
    if _name.endswith("_cuda") or not any(re.search(p, _name) for p in INCLUDED.values()):
        delattr(NodeTests, _name)
globals()["OnnxBackendNodeModelTest"] = NodeTests
del NodeTests
