"""plugnn.onnx.load: every operator and attribute form against onnxruntime, and every error.

Tolerances: rtol 1e-5, atol 1e-5 (float32 kernels with a different summation order);
LRN, Pow and LpPool use rtol 1e-4 (pow/exp chains).
"""

from __future__ import annotations

import logging

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_model, random_feeds, run_ort, run_plugnn
from onnx import TensorProto, helper, numpy_helper

import plugnn
import plugnn.onnx
from plugnn.errors import ModelError

RNG = np.random.default_rng(3)
N = helper.make_node


def w(*shape: int, positive: bool = False) -> np.ndarray:
    a = RNG.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.1 if positive else a


def case(id: str, nodes: list[Any], inputs: dict[str, Any], inits: dict[str, np.ndarray] | None = None,
         opset: int = 17, outputs: tuple[str, ...] = ("y",), rtol: float = 1e-5) -> Any:
    return pytest.param(nodes, inputs, inits or {}, opset, outputs, rtol, id=id)


X4 = {"x": [2, 4, 7, 7]}
CASES = [
    # -- Conv ------------------------------------------------------------------------------------
    case("conv-pads", [N("Conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1])], X4, {"W": w(6, 4, 3, 3), "B": w(6)}),
    case("conv-no-bias-kernel_shape", [N("Conv", ["x", "W"], ["y"], kernel_shape=[3, 2])], X4, {"W": w(5, 4, 3, 2)}),
    case("conv-strides-dilations-asym-pads", [N("Conv", ["x", "W"], ["y"], strides=[2, 1], dilations=[2, 1],
                                                 pads=[0, 1, 2, 0])], X4, {"W": w(3, 4, 3, 3)}),
    case("conv-group", [N("Conv", ["x", "W", "B"], ["y"], group=2)], X4, {"W": w(6, 2, 3, 3), "B": w(6)}),
    case("conv-depthwise", [N("Conv", ["x", "W"], ["y"], group=4, pads=[1, 1, 1, 1])], X4, {"W": w(4, 1, 3, 3)}),
    case("conv-same-upper", [N("Conv", ["x", "W"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], X4,
         {"W": w(3, 4, 4, 4)}),
    case("conv-same-lower", [N("Conv", ["x", "W"], ["y"], auto_pad="SAME_LOWER", strides=[2, 2])], X4,
         {"W": w(3, 4, 4, 4)}),
    case("conv-valid", [N("Conv", ["x", "W"], ["y"], auto_pad="VALID", strides=[2, 2])], X4, {"W": w(3, 4, 3, 3)}),
    case("conv-1d", [N("Conv", ["x", "W", "B"], ["y"], pads=[2, 1], strides=[2], dilations=[2])],
         {"x": [2, 3, 11]}, {"W": w(4, 3, 3), "B": w(4)}),
    case("conv-weights-input", [N("Conv", ["x", "W"], ["y"])], {"x": [1, 2, 5, 5], "W": [3, 2, 3, 3]}),
    case("conv-opset7", [N("Conv", ["x", "W"], ["y"], pads=[1, 0, 1, 0])], X4, {"W": w(3, 4, 3, 3)}, opset=7),
    # -- pooling ---------------------------------------------------------------------------------
    case("maxpool-default", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])], X4),
    case("maxpool-pads-strides", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1])], X4),
    case("maxpool-ceil", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)], X4),
    case("maxpool-dilations", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])], X4, opset=12),
    case("maxpool-same-upper", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                  auto_pad="SAME_UPPER")], X4),
    case("maxpool-same-lower", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_LOWER")], X4),
    case("maxpool-1d", [N("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2])], {"x": [2, 3, 9]}),
    case("maxpool-storage-order-0-unused-indices", [N("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2],
                                                      storage_order=0)], X4, opset=8),
    case("avgpool-exclude-pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], X4),
    case("avgpool-include-pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                   count_include_pad=1)], X4),
    case("avgpool-ceil-include-pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                        pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)], {"x": [1, 2, 8, 8]}),
    case("avgpool-dilations", [N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])], X4, opset=19),
    case("avgpool-same-lower", [N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_LOWER")], X4),
    case("avgpool-1d-opset7", [N("AveragePool", ["x"], ["y"], kernel_shape=[2])], {"x": [1, 3, 8]}, opset=7),
    case("lppool-p2", [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2])], X4, rtol=1e-4),
    case("lppool-p1-strides-pads", [N("LpPool", ["x"], ["y"], kernel_shape=[3, 3], p=1, strides=[2, 2],
                                      pads=[1, 1, 1, 1])], X4, rtol=1e-4),
    case("lppool-p3-dilations-ceil", [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=3, dilations=[2, 1],
                                        strides=[2, 2], ceil_mode=1)], X4, opset=18, rtol=1e-4),
    case("globalavgpool", [N("GlobalAveragePool", ["x"], ["y"])], X4),
    case("globalmaxpool", [N("GlobalMaxPool", ["x"], ["y"])], X4),
    case("globalavgpool-1d", [N("GlobalAveragePool", ["x"], ["y"])], {"x": [2, 3, 9]}),
    case("globalmaxpool-3d", [N("GlobalMaxPool", ["x"], ["y"])], {"x": [2, 3, 3, 4, 5]}),
    # -- elementwise ------------------------------------------------------------------------------
    case("add-bcast", [N("Add", ["x", "b"], ["y"])], {"x": [2, 3, 4], "b": [4]}),
    case("sub-const", [N("Sub", ["c", "x"], ["y"])], {"x": [2, 3]}, {"c": w(1, 3)}),
    case("mul-bcast", [N("Mul", ["x", "b"], ["y"])], {"x": [2, 3, 4], "b": [3, 1]}),
    case("div", [N("Div", ["x", "c"], ["y"])], {"x": [2, 3]}, {"c": w(2, 3, positive=True)}),
    case("pow", [N("Pow", ["c", "x"], ["y"])], {"x": [2, 3]}, {"c": w(2, 3, positive=True)}, rtol=1e-4),
    case("max-3", [N("Max", ["a", "b", "c"], ["y"])], {"a": [2, 3], "b": [3], "c": [2, 1]}),
    case("min-1", [N("Min", ["a"], ["y"])], {"a": [2, 3]}),
    case("sum-3", [N("Sum", ["a", "b", "c"], ["y"])], {"a": [2, 3], "b": [3], "c": [2, 3]}),
    case("mean-2", [N("Mean", ["a", "b"], ["y"])], {"a": [2, 3], "b": [2, 3]}),
    case("prelu-channel-slope", [N("PRelu", ["x", "s"], ["y"])], X4, {"s": w(4, 1, 1)}),
    case("prelu-scalar-slope", [N("PRelu", ["x", "s"], ["y"])], {"x": [3, 5]}, {"s": w(1)}),
    # -- activations --------------------------------------------------------------------------------
    case("relu", [N("Relu", ["x"], ["y"])], {"x": [3, 4]}),
    case("leakyrelu-default", [N("LeakyRelu", ["x"], ["y"])], {"x": [3, 4]}),
    case("leakyrelu-alpha", [N("LeakyRelu", ["x"], ["y"], alpha=0.3)], {"x": [3, 4]}),
    case("sigmoid", [N("Sigmoid", ["x"], ["y"])], {"x": [3, 4]}),
    case("hardsigmoid-default", [N("HardSigmoid", ["x"], ["y"])], {"x": [3, 4]}),
    case("hardsigmoid-alpha-beta", [N("HardSigmoid", ["x"], ["y"], alpha=0.5, beta=0.25)], {"x": [3, 4]}),
    case("hardswish", [N("HardSwish", ["x"], ["y"])], {"x": [3, 4]}),
    case("tanh", [N("Tanh", ["x"], ["y"])], {"x": [3, 4]}),
    case("elu-default", [N("Elu", ["x"], ["y"])], {"x": [3, 4]}),
    case("elu-alpha", [N("Elu", ["x"], ["y"], alpha=0.5)], {"x": [3, 4]}),
    case("clip-opset7-attrs", [N("Clip", ["x"], ["y"], min=-0.5, max=0.7)], {"x": [3, 4]}, opset=7),
    case("clip-opset7-defaults", [N("Clip", ["x"], ["y"])], {"x": [3, 4]}, opset=7),
    case("clip-opset11-min-only", [N("Clip", ["x", "lo"], ["y"])], {"x": [3, 4]}, {"lo": np.float32(-0.2)}, opset=11),
    case("clip-opset13-max-only", [N("Clip", ["x", "", "hi"], ["y"])], {"x": [3, 4]}, {"hi": np.float32(0.3)},
         opset=13),
    case("clip-opset13-both", [N("Clip", ["x", "lo", "hi"], ["y"])], {"x": [3, 4]},
         {"lo": np.float32(-0.2), "hi": np.float32(0.3)}, opset=13),
    case("clip-opset13-none", [N("Clip", ["x"], ["y"])], {"x": [3, 4]}, opset=13),
    # -- Softmax, Gemm, MatMul ------------------------------------------------------------------------
    case("softmax-opset11-default-axis-coerced", [N("Softmax", ["x"], ["y"])], {"x": [2, 3, 4]}, opset=11),
    case("softmax-opset11-axis0", [N("Softmax", ["x"], ["y"], axis=0)], {"x": [2, 3, 4]}, opset=11),
    case("softmax-opset11-last-axis", [N("Softmax", ["x"], ["y"], axis=-1)], {"x": [2, 3, 4]}, opset=11),
    case("softmax-opset13-default", [N("Softmax", ["x"], ["y"])], {"x": [2, 3, 4]}, opset=13),
    case("softmax-opset13-axis1", [N("Softmax", ["x"], ["y"], axis=1)], {"x": [2, 3, 4]}, opset=13),
    case("gemm-all-attrs", [N("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1, transB=1)],
         {"a": [4, 3]}, {"b": w(5, 4), "c": w(5)}),
    case("gemm-matrix-c", [N("Gemm", ["a", "b", "c"], ["y"])], {"a": [3, 4], "b": [4, 5]}, {"c": w(3, 5)}),
    case("gemm-scalar-c", [N("Gemm", ["a", "b", "c"], ["y"])], {"a": [3, 4]}, {"b": w(4, 5), "c": w()}),
    case("gemm-no-c", [N("Gemm", ["a", "b"], ["y"], transB=1)], {"a": [3, 4]}, {"b": w(5, 4)}, opset=11),
    case("gemm-opset7", [N("Gemm", ["a", "b", "c"], ["y"], beta=0.5)], {"a": [3, 4]}, {"b": w(4, 2), "c": w(2)},
         opset=7),
    case("matmul-2d", [N("MatMul", ["a", "b"], ["y"])], {"a": [3, 4]}, {"b": w(4, 5)}),
    case("matmul-batch-bcast", [N("MatMul", ["a", "b"], ["y"])], {"a": [2, 1, 3, 4], "b": [3, 4, 2]}),
    case("matmul-1d", [N("MatMul", ["a", "b"], ["y"])], {"a": [4], "b": [2, 4, 3]}),
    # -- normalization ------------------------------------------------------------------------------
    case("batchnorm-opset15", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)], X4,
         {"s": w(4), "b": w(4), "m": w(4), "v": w(4, positive=True)}, opset=15),
    case("batchnorm-opset9-rank2", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], momentum=0.8)],
         {"x": [3, 4]}, {"s": w(4), "b": w(4), "m": w(4), "v": w(4, positive=True)}, opset=9),
    case("batchnorm-opset7-spatial", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=1)],
         X4, {"s": w(4), "b": w(4), "m": w(4), "v": w(4, positive=True)}, opset=7),
    case("conv-batchnorm-folded", [N("Conv", ["x", "W"], ["c"]),
                                   N("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])], X4,
         {"W": w(3, 4, 3, 3), "s": w(3), "b": w(3), "m": w(3), "v": w(3, positive=True)}),
    case("lrn-default", [N("LRN", ["x"], ["y"], size=3)], X4, rtol=1e-4),
    case("lrn-attrs", [N("LRN", ["x"], ["y"], size=5, alpha=0.01, beta=0.5, bias=2.0)], X4, rtol=1e-4),
    # -- shape and data movement ---------------------------------------------------------------------
    case("flatten-default", [N("Flatten", ["x"], ["y"])], X4),
    case("flatten-axis0", [N("Flatten", ["x"], ["y"], axis=0)], X4),
    case("flatten-axis-neg1", [N("Flatten", ["x"], ["y"], axis=-1)], X4),
    case("reshape-zero-minus-one", [N("Reshape", ["x", "s"], ["y"])], X4, {"s": np.array([0, -1, 7], np.int64)}),
    case("reshape-allowzero", [N("Reshape", ["x", "s"], ["y"], allowzero=1)], X4,
         {"s": np.array([8, 49], np.int64)}, opset=14),
    case("transpose-default", [N("Transpose", ["x"], ["y"])], {"x": [2, 3, 4]}),
    case("transpose-perm", [N("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], X4),
    case("concat-const", [N("Concat", ["x", "c"], ["y"], axis=-1)], {"x": [2, 3]}, {"c": w(2, 2)}),
    case("dropout-opset7", [N("Dropout", ["x"], ["y"], ratio=0.3)], {"x": [3, 4]}, opset=7),
    case("dropout-opset12-inputs", [N("Dropout", ["x", "r", "t"], ["y", "mask"])], {"x": [3, 4]},
         {"r": np.float32(0.5), "t": np.bool_(False)}, opset=12),
    case("identity", [N("Identity", ["x"], ["y"])], {"x": [3, 4]}),
    case("identity-then-relu", [N("Identity", ["x"], ["i"]), N("Relu", ["i"], ["y"])], {"x": [3, 4]}),
    case("unsqueeze-opset11-attr", [N("Unsqueeze", ["x"], ["y"], axes=[0, -1])], {"x": [3, 4]}, opset=11),
    case("unsqueeze-opset13-input", [N("Unsqueeze", ["x", "a"], ["y"])], {"x": [3, 4]},
         {"a": np.array([1], np.int64)}, opset=13),
    case("squeeze-opset11-attr", [N("Squeeze", ["x"], ["y"], axes=[1])], {"x": [3, 1, 4, 1]}, opset=11),
    case("squeeze-opset13-no-axes", [N("Squeeze", ["x"], ["y"])], {"x": [3, 1, 4, 1]}, opset=13),
    case("squeeze-opset13-input", [N("Squeeze", ["x", "a"], ["y"])], {"x": [3, 1, 4, 1]},
         {"a": np.array([-1], np.int64)}, opset=13),
    # -- folded metadata chains ----------------------------------------------------------------------
    case("pytorch-flatten-chain", [
        N("Shape", ["x"], ["s"]), N("Gather", ["s", "i0"], ["n"], axis=0), N("Unsqueeze", ["n", "a0"], ["nu"]),
        N("Concat", ["nu", "m1"], ["shape"], axis=0), N("Reshape", ["x", "shape"], ["y"])], X4,
         {"i0": np.array(0, np.int64), "a0": np.array([0], np.int64), "m1": np.array([-1], np.int64)}),
    case("shape-start-end-slice-mul", [
        N("Shape", ["x"], ["s"], start=1, end=-1), N("Slice", ["s", "st", "en"], ["hw"]),
        N("Mul", ["hw", "two"], ["hw2"]),
        N("Concat", ["one", "hw2"], ["shape"], axis=0), N("Reshape", ["x", "shape"], ["y"])],
         {"x": [2, 4, 3, 1]}, {"st": np.array([0], np.int64), "en": np.array([1], np.int64),
                               "two": np.array([2], np.int64), "one": np.array([-1], np.int64)}, opset=15),
    case("constant-forms", [
        N("Constant", [], ["c1"], value=numpy_helper.from_array(w(3, 4), "v")),
        N("Constant", [], ["c2"], value_float=0.5), N("Constant", [], ["c3"], value_floats=[1.0, 2.0, 3.0, 4.0]),
        N("Constant", [], ["ax"], value_ints=[0]), N("Constant", [], ["i"], value_int=2),
        N("Add", ["x", "c1"], ["t1"]), N("Mul", ["t1", "c2"], ["t2"]), N("Sub", ["t2", "c3"], ["t3"]),
        N("Unsqueeze", ["t3", "ax"], ["y"])], {"x": [3, 4]}, opset=13),
    case("constantofshape-cast-castlike", [
        N("Shape", ["x"], ["s"]), N("ConstantOfShape", ["s"], ["ones"],
                                    value=numpy_helper.from_array(np.array([1.5], np.float32), "v")),
        N("Shape", ["x"], ["s1"], start=1), N("Cast", ["s1"], ["sf"], to=TensorProto.FLOAT),
        N("Add", ["x", "ones"], ["t"]),
        N("Constant", [], ["d"], value=numpy_helper.from_array(np.array(2.0, np.float64), "d")),
        N("CastLike", ["d", "x"], ["df"]), N("Mul", ["t", "df"], ["t2"]),
        N("Div", ["t2", "sf"], ["y"])], {"x": [3, 4]}, opset=15),
    case("initializer-shadowing-input", [N("Add", ["x", "k"], ["y"])], {"x": [2, 2], "k": [2, 2]},
         {"k": w(2, 2)}),
    case("two-outputs", [N("Relu", ["x"], ["y"]), N("Sigmoid", ["y"], ["z"])], {"x": [3]}, outputs=("y", "z")),
]


@pytest.mark.parametrize("nodes, inputs, inits, opset, outputs, rtol", CASES)
def test_operator_matches_onnxruntime(runtime: Any, nodes, inputs, inits, opset, outputs, rtol) -> None:  # type: ignore[no-untyped-def]
    model = make_model(nodes, inputs, outputs, inits, opset=opset)
    feeds = {k: v for k, v in random_feeds(model).items() if k not in inits}
    expected = run_ort(model, feeds)
    got = run_plugnn(runtime, model, feeds)
    assert set(got) == set(outputs)
    for name in outputs:
        assert got[name].shape == expected[name].shape, name
        np.testing.assert_allclose(got[name], expected[name], rtol=rtol, atol=1e-5, err_msg=name)


# ---- structure: names, inputs, constants ----------------------------------------------------------


def test_layer_names_follow_onnx_node_names() -> None:
    model = make_model([N("Conv", ["x", "W"], ["c"], name="conv1"), N("Relu", ["c"], ["r"], name="dup"),
                        N("Relu", ["r"], ["r2"], name="dup"), N("Relu", ["r2"], ["y"], name="x"),
                        N("Sigmoid", ["y"], ["z"], name="z")],
                       {"x": [1, 2, 5, 5]}, ["z"], {"W": w(3, 2, 3, 3)})
    names = [layer.name for layer in plugnn.onnx.load(model, name="named")]
    assert names[:3] == ["x", "W", "conv1"]
    # duplicate names and names of graph inputs/outputs are replaced by op_type + output name
    assert "Relu_r" in names and "Relu_r2" in names and "Relu_y" in names and "Sigmoid_z" in names
    assert names[-1] == "z"


def test_graph_input_with_initializer_is_a_constant() -> None:
    model = make_model([N("Add", ["x", "k"], ["y"])], {"x": [2], "k": [2]}, ["y"], {"k": w(2)})
    network = plugnn.onnx.load(model)
    assert [layer.name for layer in network.inputs] == ["x"]


def test_path_bytes_and_proto_give_the_same_network(tmp_path: Path, runtime: Any) -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2, 3]}, ["y"])
    path = tmp_path / "relu.onnx"
    path.write_bytes(model.SerializeToString())
    x = w(2, 3)
    for source in (str(path), path, model.SerializeToString(), model):
        np.testing.assert_array_equal(run_plugnn(runtime, model if source is model else source, {"x": x})["y"],
                                      np.maximum(x, 0))
    assert plugnn.onnx.load(path).name == "test"


def test_input_shapes_fix_dynamic_dims(runtime: Any) -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": ["batch", 3]}, ["y"])
    x = w(5, 3)
    np.testing.assert_array_equal(run_plugnn(runtime, model, {"x": x}, input_shapes={"x": (5, 3)})["y"],
                                  np.maximum(x, 0))
    assert plugnn.onnx.load(model, input_shapes={"x": (5, 3)}).inputs[0].outputs[0].shape == (5, 3)


def test_dynamic_dims_stay_symbols_and_one_network_runs_every_shape(runtime: Any) -> None:
    """x [batch, 3] -> Reshape to [batch * 3] via Shape/Gather/Mul -> y: the target is an
    expression of the symbol, and the loaded network runs every batch."""
    model = make_model([N("Shape", ["x"], ["s"]), N("Gather", ["s", "zero"], ["b"], axis=0),
                        N("Mul", ["b", "three"], ["n"]), N("Unsqueeze", ["n", "axes"], ["t"]),
                        N("Reshape", ["x", "t"], ["y"])], {"x": ["batch", 3]}, ["y"],
                       initializers={"zero": np.array(0, np.int64), "three": np.array(3, np.int64),
                                     "axes": np.array([0], np.int64)})
    network = plugnn.onnx.load(model)
    shape = network.inputs[0].outputs[0].shape
    assert str(shape[0]) == "batch" and shape[0].hint == 1 and shape[1] == 3
    assert str(network.outputs[0].outputs[0].shape[0]) == "3*batch"
    loaded = runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"]))
    try:
        for batch in (1, 4, 2):
            x = w(batch, 3)
            np.testing.assert_array_equal(loaded.run({"x": x})["y"], x.reshape(-1))
        # three new shapes, each run once: one instance, re-sized in place at each
        assert len(loaded.instances()) == 1 and loaded.instances_made == 1 and loaded.instances_resized == 2
    finally:
        loaded.unload()
    hinted = plugnn.onnx.load(model, hints={"batch": 8})
    assert hinted.inputs[0].outputs[0].shape[0].hint == 8
    with pytest.raises(ModelError, match="hints name 'height', which are no dynamic dims"):
        plugnn.onnx.load(model, hints={"height": 8})
    with pytest.raises(ModelError, match="hints must be integers >= 1"):
        plugnn.onnx.load(model, hints={"batch": 0})


def test_an_input_without_a_declared_shape_needs_input_shapes() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(ModelError, match="input 'x' has no shape in the model; pass input_shapes="):
        plugnn.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


@pytest.mark.parametrize("shapes, message", [
    ({"nope": (1, 3)}, "input_shapes names ['nope'], which are not graph inputs; the inputs are ['x']"),
    ({"x": (2,)}, "input_shapes gives 'x' rank 1 (2,), the model declares rank 2"),
    ({"x": (2, 4)}, "input_shapes gives 'x' dim 1 = 4, the model fixes it to 3"),
])
def test_bad_input_shapes(shapes: dict[str, Any], message: str) -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": ["batch", 3]}, ["y"])
    with pytest.raises(ModelError, match=_re(message)):
        plugnn.onnx.load(model, input_shapes=shapes)


def test_shape_output_is_a_constant(runtime: Any) -> None:
    model = make_model([N("Shape", ["x"], ["y"])], {"x": [2, 3, 4]}, ["y"])
    assert run_plugnn(runtime, model, {"x": w(2, 3, 4)})["y"].tolist() == [2, 3, 4]


# ---- external data ------------------------------------------------------------------------------------


def _external_model(tmp_path: Path) -> tuple[Path, np.ndarray]:
    import onnx

    weights = w(64, 32)
    model = make_model([N("MatMul", ["x", "W"], ["y"])], {"x": [2, 64]}, ["y"], {"W": weights})
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.weights", size_threshold=0)
    return path, weights


def test_external_data_from_path_and_base_dir(tmp_path: Path, runtime: Any) -> None:
    path, weights = _external_model(tmp_path)
    x = w(2, 64)
    np.testing.assert_allclose(run_plugnn(runtime, path, {"x": x})["y"], x @ weights, rtol=1e-5, atol=1e-5)
    data = path.read_bytes()
    np.testing.assert_allclose(run_plugnn(runtime, data, {"x": x}, base_dir=tmp_path)["y"], x @ weights,
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ModelError, match="<bytes>: tensor\\(s\\) 'W' keep their data in external files, and the "
                                         "directory holding them is unknown"):
        plugnn.onnx.load(data)


def test_external_data_missing_or_short(tmp_path: Path) -> None:
    path, _ = _external_model(tmp_path)
    weights_file = tmp_path / "ext.weights"
    weights_file.write_bytes(weights_file.read_bytes()[:100])
    with pytest.raises(ModelError, match="tensor 'W': external file .*ext.weights' holds 100 bytes"):
        plugnn.onnx.load(path)
    weights_file.unlink()
    with pytest.raises(ModelError, match="tensor 'W' keeps its data in external file .*ext.weights', which does "
                                         "not exist"):
        plugnn.onnx.load(path)


# ---- errors -----------------------------------------------------------------------------------------


def _re(text: str) -> str:
    import re

    return re.escape(text)


def _load_error(nodes: list[Any], inputs: dict[str, Any], inits: dict[str, Any] | None = None, opset: int = 17) -> str:
    consumed = {i for node in nodes for i in node.input}
    outputs = [o for node in nodes for o in node.output if o and o not in consumed]  # every dangling output is used
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(make_model(nodes, inputs, outputs, inits, opset=opset))
    return str(info.value)


@pytest.mark.parametrize("nodes, inputs, inits, opset, message", [
    ([N("Frobnicate", ["x"], ["y"], name="frob1")], {"x": [2]}, {}, 17,
     "node 'frob1' (#0, Frobnicate): operator 'Frobnicate' is not supported; plugnn imports "),
    ([N("Relu", ["x"], ["y"], domain="com.example")], {"x": [2]}, {}, 17,
     "node #0 (Relu, unnamed, output 'y'): operator domain 'com.example' is not supported"),
    ([N("Relu", ["x"], ["y"], foo=1)], {"x": [2]}, {}, 17,
     "attribute 'foo' is not supported by plugnn's Relu import; supported attributes: none"),
    ([N("Conv", ["x", "W"], ["y"], auto_pad="FOO")], {"x": [1, 1, 4, 4]}, {"W": w(1, 1, 3, 3)}, 17,
     "attribute 'auto_pad' = 'FOO' is not supported; supported: NOTSET, SAME_UPPER, SAME_LOWER, VALID"),
    ([N("Conv", ["x", "W"], ["y"], kernel_shape=[2, 2])], {"x": [1, 1, 4, 4]}, {"W": w(1, 1, 3, 3)}, 17,
     "attribute 'kernel_shape' = [2, 2] is not supported; supported: the weights' spatial shape [3, 3]"),
    ([N("Conv", ["x", "W"], ["y"], pads=[1, 1])], {"x": [1, 1, 4, 4]}, {"W": w(1, 1, 3, 3)}, 17,
     "attribute 'pads' = [1, 1] is not supported; supported: 4 integers >= 0 (begins, then ends)"),
    ([N("Conv", ["x", "W"], ["y"], strides=[0, 1])], {"x": [1, 1, 4, 4]}, {"W": w(1, 1, 3, 3)}, 17,
     "attribute 'strides' = [0, 1] is not supported; supported: 2 integers >= 1"),
    ([N("Conv", ["x", "W"], ["y"], group=3)], {"x": [1, 2, 4, 4]}, {"W": w(3, 1, 3, 3)}, 17,
     "groups=3 must divide input channels 2"),
    ([N("Conv", ["x", "W"], ["y"])], {"x": [1, 1, 4, 4, 4, 4]}, {"W": w(1, 1, 3, 3, 3, 3)}, 17,
     "X input has rank 6; plugnn imports 1-D, 2-D and 3-D Conv"),
    ([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], storage_order=2)], {"x": [1, 1, 4, 4]}, {}, 17,
     "attribute 'storage_order' = 2 is not supported; supported: 0 (row major), 1 (column major)"),
    ([N("MaxPool", ["x"], ["y"])], {"x": [1, 1, 4, 4]}, {}, 17, "attribute 'kernel_shape' is required"),
    ([N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=2)], {"x": [1, 1, 4, 4]}, {}, 17,
     "attribute 'ceil_mode' = 2 is not supported; supported: 0, 1"),
    ([N("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=0)], {"x": [1, 1, 4, 4]}, {}, 17,
     "attribute 'p' = 0 is not supported; supported: a number > 0"),
    ([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], training_mode=3)], {"x": [1, 2, 3, 3]},
     {"s": w(2), "b": w(2), "m": w(2), "v": w(2)}, 15, "attribute 'training_mode' = 3 is not supported; supported: 0 "
     "(inference), 1 (training: batch statistics)"),
    ([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv", "sm"], training_mode=1)],
     {"x": [1, 2, 3, 3]}, {"s": w(2), "b": w(2), "m": w(2), "v": w(2)}, 15,
     "output 3 (saved mean) is used; ONNX's BatchNormalization has no such output from opset 14"),
    ([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0)], {"x": [1, 2, 3, 3]},
     {"s": w(2), "b": w(2), "m": w(2), "v": w(2)}, 8, "attribute 'spatial' = 0 is not supported; supported: 1"),
    ([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm"])], {"x": [1, 2, 3, 3]},
     {"s": w(2), "b": w(2), "m": w(2), "v": w(2)}, 9, "output 1 (running mean) is used"),
    ([N("Gemm", ["a", "b"], ["y"], transA=2)], {"a": [2, 2]}, {"b": w(2, 2)}, 13,
     "attribute 'transA' = 2 is not supported; supported: 0, 1"),
    ([N("LRN", ["x"], ["y"])], {"x": [1, 2, 3, 3]}, {}, 13, "attribute 'size' is required"),
    ([N("Softmax", ["x"], ["y"], axis=3)], {"x": [2, 3]}, {}, 13, "axis 3 is out of range for rank 2"),
    ([N("Transpose", ["x"], ["y"], perm=[0, 0])], {"x": [2, 3]}, {}, 13,
     "attribute 'perm' = [0, 0] is not supported; supported: a permutation of 0..1"),
    ([N("Reshape", ["x", "s"], ["y"])], {"x": [2, 3]}, {"s": np.array([4, -1, -1], np.int64)}, 13,
     "cannot reshape [2, 3] to [4, -1, -1]: at most one -1"),
    ([N("Reshape", ["x", "s"], ["y"])], {"x": [2, 3]}, {"s": np.array([4, 2], np.int64)}, 13,
     "cannot reshape [2, 3] to [4, 2]"),
    ([N("Squeeze", ["x", "a"], ["y"])], {"x": [2, 3]}, {"a": np.array([0], np.int64)}, 13,
     "cannot squeeze axis 0 of shape [2, 3]: its size is 2, not 1"),
    ([N("Unsqueeze", ["x"], ["y"])], {"x": [2, 3]}, {}, 13, "axes are required"),
    ([N("Concat", ["x", "x"], ["y"])], {"x": [2, 3]}, {}, 13, "attribute 'axis' is required"),
    ([N("Constant", [], ["y"], value_string="hi")], {}, {}, 13, "graph output 'y' is a string tensor, a run-time "
     "value of plugnn's dynamic path"),
    ([N("Constant", [], ["y"], sparse_value=helper.make_sparse_tensor(
        helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]), helper.make_tensor("i", TensorProto.INT64, [1], [0]),
        [2]))], {}, {}, 13, "attribute 'sparse_value' = '...' is not supported"),
    ([N("Relu", ["nope"], ["y"])], {"x": [2]}, {}, 13,
     "input 0 'nope' is produced by no earlier node, initializer or graph input"),
    ([N("Add", ["x", "i"], ["y"])], {"x": [2], "i": ([2], TensorProto.INT64)}, {}, 13,
     "node #0 (Add, unnamed, output 'y'): input 1 (B) is int64 but input 0 (A) is float32; Add takes one element "
     "type for them"),
    ([N("Conv", ["x", "W"], ["y"])], {"x": [1, 1, 4, 4]}, {"W": w(1, 1, 3, 3).astype(np.float64)}, 13,
     "layer 'Conv_y' (Convolution2d) with inputs (float32[1, 1, 4, 4], float64[1, 1, 3, 3]): input 1 is float64 "
     "but input 0 is float32"),
    ([N("Reshape", ["x", "s"], ["y"])], {"x": [2, 3], "s": ([2], TensorProto.INT64)}, {}, 13,
     "input 1 (shape) 's' must be known at import time, but it is a graph input; make it an initializer"),
    ([N("Relu", ["x"], ["r"]), N("Reshape", ["x", "r"], ["y"])], {"x": [2]}, {}, 13,
     "input 1 (shape) 'r' must be known at import time (a constant, or computed from constants and static shapes), "
     "but it is computed at run time; it is computed from graph input(s) 'x': make them initializers (constants)"),
    ([N("Conv", ["c", "W"], ["r"]), N("Reshape", ["x", "r"], ["y"])], {"x": [2]},
     {"c": w(1, 1, 1, 1), "W": w(1, 1, 1, 1)}, 13,
     "input 1 (shape) 'r' must be known at import time (a constant, or computed from constants and static shapes), "
     "but it is computed at run time"),
    ([N("Gather", ["x", "i"], ["y"])], {"x": [3, 2]}, {"i": np.array([0.0], np.float32)}, 13,
     "input 1 (indices) has element type float32; int32 or int64 expected"),
    ([N("Gather", ["s", "i"], ["y"])], {"x": [3]}, {"s": np.array([1, 2], np.int64), "i": np.array([5], np.int64)}, 13,
     "indices 5 is out of range for axis 0 of size 2"),
    ([N("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN)], {"x": [2]}, {}, 19,
     "node #0 (Cast, unnamed, output 'y'): attribute 'to' = 17 is float8e4m3fn: the 8-, 6- and 4-bit float types "
     "are out of plugnn's scope"),
])
def test_errors_name_node_operator_and_attribute(nodes, inputs, inits, opset, message) -> None:  # type: ignore[no-untyped-def]
    assert message in _load_error(nodes, inputs, inits, opset)


def test_an_unknown_operator_gets_the_count_and_the_nearest_names() -> None:
    message = _load_error([N("Reshap", ["x", "s"], ["y"], name="typo")], {"x": [2]},
                          {"s": np.array([2], np.int64)}, 17)
    count = len(plugnn.onnx.OPERATORS)
    assert message.endswith(f"operator 'Reshap' is not supported; plugnn imports {count} operators of the default "
                            "domain (plugnn.onnx.OPERATORS, docs/onnx.md); nearest: Reshape"), message
    assert "nearest" not in _load_error([N("Qqq", ["x"], ["y"])], {"x": [2]}, {}, 17)


def test_opset_newer_than_onnx_knows() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2]}, ["y"])
    model.opset_import[0].version = 999
    with pytest.raises(ModelError, match="opset 999 is newer than the installed onnx"):
        plugnn.onnx.load(model)


def test_output_declared_shape_mismatch_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """onnxruntime warns and trusts the computed shape; so does plugnn."""
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2, 3]}, {"y": [3, 2]})
    with caplog.at_level(logging.WARNING, logger="plugnn"):
        network = plugnn.onnx.load(model)
    assert network.outputs[0].inputs[0].info.shape == (2, 3)
    assert "graph output 'y' is declared with shape [3, 2], plugnn computes [2, 3]" in caplog.text


def test_non_tensor_input() -> None:
    model = make_model([N("Identity", ["x"], ["y"])], {}, ["y"])
    model.graph.input.append(helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2]))
    with pytest.raises(ModelError, match="input 'x' is not a tensor \\(sequence_type\\)"):
        plugnn.onnx.load(model)


@pytest.mark.parametrize("source, message", [
    ("missing.onnx", "missing.onnx: no such file"),
    ("dir", "is a directory, not an ONNX model file"),
    ("text.onnx", "text.onnx: not an ONNX model"),
    (b"", "<bytes>: not an ONNX model (no ir_version or no graph)"),
    (b"\xff\xff\xff\xff garbage", "<bytes>: not an ONNX model"),
    ("truncated", "<bytes>: not an ONNX model (protobuf"),
    (42, "plugnn.onnx.load takes a path, bytes or an onnx.ModelProto, got int"),
])
def test_unreadable_models(tmp_path: Path, source: Any, message: str) -> None:
    if source == "dir":
        source = tmp_path
    elif source == "text.onnx":
        source = tmp_path / "text.onnx"
        source.write_text("this is not protobuf\n" * 10)
    elif source == "missing.onnx":
        source = tmp_path / "missing.onnx"
    elif source == "truncated":
        model = make_model([N("Conv", ["x", "W"], ["y"])], {"x": [1, 2, 5, 5]}, ["y"], {"W": w(3, 2, 3, 3)})
        source = model.SerializeToString()[:-40]
    with pytest.raises(ModelError, match=_re(message)):
        plugnn.onnx.load(source)


def test_missing_onnx_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ModelError, match="pip install onnx"):
        plugnn.onnx.load(b"whatever")


def test_operator_list() -> None:
    ops = plugnn.onnx.OPERATORS
    assert {"Conv", "Gemm", "Softmax", "Reshape", "Shape", "Gather", "ConstantOfShape", "LRN"} <= set(ops)
