"""Models of opsets 1 to 6 (plugnn.onnx.legacy): every old operator form, against an oracle, and
every refusal.

Oracles: onnxruntime for the operators it still runs at those opsets, ONNX's reference evaluator
for the old versions it implements (Gemm-6, BatchNormalization-6, Pad-1, LpPool-1),
and NumPy in float64 written from the old operator's definition for the rest (the broadcast
forms of Add-6 and friends, which neither runs). Tolerances: rtol 1e-5, atol 1e-6 (float32
kernels), rtol 1e-6 for Selu-1 (its old defaults differ from Selu-6's by 4e-5 relative).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import run_ort, run_plugnn
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn.errors import ModelError
from plugnn.onnx.context import NeedsConstantError

N = helper.make_node
RNG = np.random.default_rng(7)
F32 = TensorProto.FLOAT


def model(nodes: list[Any], inputs: dict[str, Any], outputs: list[str], opset: int,
          inits: dict[str, np.ndarray] | None = None) -> Any:
    """inputs: name -> shape (float32) or (shape, element type)."""
    def info(name: str, spec: Any) -> Any:
        shape, elem = (spec, F32) if not (isinstance(spec, tuple) and isinstance(spec[1], int)) else spec
        return helper.make_tensor_value_info(name, elem, shape)

    graph = helper.make_graph(nodes, "legacy", [info(n, s) for n, s in inputs.items()],
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)


def feeds_for(m: Any, positive: bool = False) -> dict[str, np.ndarray]:
    known = {t.name for t in m.graph.initializer}
    feeds = {}
    for value in m.graph.input:
        if value.name in known:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        elem = value.type.tensor_type.elem_type
        if elem == TensorProto.BOOL:
            feeds[value.name] = RNG.random(shape) < 0.5
        elif elem in (TensorProto.INT32, TensorProto.INT64):
            feeds[value.name] = RNG.integers(-5, 6, shape).astype(helper.tensor_dtype_to_np_dtype(elem))
        else:
            a = RNG.standard_normal(shape)
            feeds[value.name] = (np.abs(a) + 0.5 if positive else a).astype(helper.tensor_dtype_to_np_dtype(elem))
    return feeds


def w(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


Oracle = Callable[..., Any]  # f(**feeds and initializers as float64 arrays) -> the output(s)


def case(id: str, nodes: list[Any], inputs: dict[str, Any], opset: int, oracle: Oracle | str,
         inits: dict[str, np.ndarray] | None = None, outputs: tuple[str, ...] = ("y",), rtol: float = 1e-5,
         positive: bool = False) -> Any:
    return pytest.param(nodes, inputs, opset, oracle, inits or {}, outputs, rtol, positive, id=id)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def bn(x: np.ndarray, s: np.ndarray, b: np.ndarray, m: np.ndarray, v: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * s.reshape(shape) + b.reshape(shape)


def avgpool_3x3_exclude_pad(x: np.ndarray) -> np.ndarray:
    """AveragePool-1 (kernel 3x3, pads 1, stride 1): each window's sum over the elements it covers
    of the input (ONNX: "divided by the number of elements exclude pad"; ONNX's reference
    evaluator divides AveragePool-1 by the whole window)."""
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    ones = np.pad(np.ones_like(x), [(0, 0), (0, 0), (1, 1), (1, 1)])
    h, w_ = x.shape[2:]
    total = sum(padded[:, :, i:i + h, j:j + w_] for i in range(3) for j in range(3))
    count = sum(ones[:, :, i:i + h, j:j + w_] for i in range(3) for j in range(3))
    return total / count


def upsample_nearest(x: np.ndarray, h: int, w_: int) -> np.ndarray:
    return np.repeat(np.repeat(x, h, axis=2), w_, axis=3)


BN_INITS = {"s": w(3), "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.5}
X4 = {"x": [2, 3, 4, 5]}
CASES = [
    # -- consumed_inputs (version 1), unchanged semantics ----------------------------------------------
    case("relu-1", [N("Relu", ["x"], ["y"], consumed_inputs=[0])], {"x": [3, 4]}, 1, relu),
    case("sigmoid-1", [N("Sigmoid", ["x"], ["y"], consumed_inputs=[0])], {"x": [3, 4]}, 2, sigmoid),
    case("abs-neg-1", [N("Abs", ["x"], ["a"], consumed_inputs=[0]), N("Neg", ["a"], ["y"], consumed_inputs=[0])],
         {"x": [3, 4]}, 5, lambda x: -np.abs(x)),
    case("exp-log-sqrt-reciprocal-1", [N("Log", ["x"], ["l"], consumed_inputs=[0]), N("Exp", ["l"], ["e"]),
                                       N("Sqrt", ["e"], ["s"]), N("Reciprocal", ["s"], ["y"])],
         {"x": [3, 4]}, 1, lambda x: 1 / np.sqrt(x), positive=True),
    case("floor-ceil-tanh-1", [N("Floor", ["x"], ["f"], consumed_inputs=[0]), N("Ceil", ["x"], ["c"]),
                               N("Add", ["f", "c"], ["s"]), N("Tanh", ["s"], ["y"], consumed_inputs=[0])],
         {"x": [3, 4]}, 1, lambda x: np.tanh(np.floor(x) + np.ceil(x))),
    case("elu-leakyrelu-hardsigmoid-1-defaults",
         [N("Elu", ["x"], ["e"], consumed_inputs=[0]), N("LeakyRelu", ["e"], ["l"], consumed_inputs=[0]),
          N("HardSigmoid", ["l"], ["y"], consumed_inputs=[0])], {"x": [3, 4]}, 1,
         lambda x: np.clip(0.2 * np.where((e := np.where(x > 0, x, np.exp(x) - 1)) >= 0, e, 0.01 * e) + 0.5, 0, 1)),
    case("sum-max-min-mean-1", [N("Sum", ["a", "b", "c"], ["s"], consumed_inputs=[0, 0, 0]),
                                N("Max", ["a", "b"], ["mx"], consumed_inputs=[0, 0]),
                                N("Min", ["s", "mx"], ["mn"], consumed_inputs=[0, 0]),
                                N("Mean", ["mn", "c"], ["y"], consumed_inputs=[0, 0])],
         {"a": [2, 3], "b": [2, 3], "c": [2, 3]}, 5,
         lambda a, b, c: (np.minimum(a + b + c, np.maximum(a, b)) + c) / 2),
    case("instancenorm-1", [N("InstanceNormalization", ["x", "s", "b"], ["y"], consumed_inputs=[0, 0, 0],
                              epsilon=1e-3)], {"x": [2, 3, 5]}, 1,
         lambda x, s, b: (x - x.mean(2, keepdims=True)) / np.sqrt(x.var(2, keepdims=True) + 1e-3)
         * s.reshape(1, 3, 1) + b.reshape(1, 3, 1), inits={"s": w(3), "b": w(3)}),
    case("selu-1-old-defaults", [N("Selu", ["x"], ["y"], consumed_inputs=[0])], {"x": [3, 4]}, 5,
         lambda x: np.float64(np.float32(1.0507)) * np.where(x > 0, x,
                                                             np.float64(np.float32(1.6732)) * (np.exp(x) - 1)),
         rtol=1e-6),
    case("selu-6-new-defaults", [N("Selu", ["x"], ["y"])], {"x": [3, 4]}, 6,
         lambda x: np.float64(np.float32(1.0507010221481323)) * np.where(
             x > 0, x, np.float64(np.float32(1.6732631921768188)) * (np.exp(x) - 1)), rtol=1e-6),
    # -- broadcast / axis (Add, Sub, Mul, Div 1 and 6; Pow and the comparisons and logic 1) -------------
    case("add-6-axis1", [N("Add", ["x", "b"], ["y"], broadcast=1, axis=1)], X4, 6,
         lambda x, b: x + b.reshape(3, 4, 1), inits={"b": w(3, 4)}),
    case("add-6-suffix", [N("Add", ["x", "b"], ["y"], broadcast=1)], X4, 6, lambda x, b: x + b,
         inits={"b": w(4, 5)}),
    case("add-6-scalar", [N("Add", ["x", "b"], ["y"], broadcast=1)], X4, 6, lambda x, b: x + b,
         inits={"b": np.float32(1.5)}),
    case("add-6-one-element", [N("Add", ["x", "b"], ["y"], broadcast=1, axis=2)], X4, 6, lambda x, b: x + b[0, 0],
         inits={"b": w(1, 1)}),
    case("add-6-size1-dims", [N("Add", ["x", "b"], ["y"], broadcast=1, axis=0)], {"x": [2, 3], "b": [2, 1]}, 6,
         lambda x, b: x + b),
    case("add-6-no-broadcast", [N("Add", ["x", "b"], ["y"])], {"x": [2, 3], "b": [2, 3]}, 6, lambda x, b: x + b),
    case("add-1-consumed-negative-axis", [N("Add", ["x", "b"], ["y"], broadcast=1, axis=-3, consumed_inputs=[0])],
         X4, 1, lambda x, b: x + b.reshape(3, 1, 1), inits={"b": w(3)}),
    case("sub-1-axis0-runtime-b", [N("Sub", ["x", "b"], ["y"], broadcast=1, axis=0)], {"x": [2, 3, 4], "b": [2]}, 1,
         lambda x, b: x - b.reshape(2, 1, 1)),
    case("mul-6-axis1", [N("Mul", ["x", "b"], ["y"], broadcast=1, axis=1)], X4, 6,
         lambda x, b: x * b.reshape(3, 1, 1), inits={"b": w(3)}),
    case("div-6-axis2", [N("Div", ["x", "b"], ["y"], broadcast=1, axis=2)], X4, 6,
         lambda x, b: x / b, inits={"b": np.abs(w(4, 5)) + 0.5}),
    case("pow-1-broadcast", [N("Pow", ["x", "b"], ["y"], broadcast=1, axis=1)], {"x": [2, 3, 4]}, 1,
         lambda x, b: x ** b.reshape(3, 1), inits={"b": np.array([1.0, 2.0, 0.5], np.float32)}, positive=True),
    case("and-or-xor-1-axis", [N("And", ["a", "b"], ["t"], broadcast=1, axis=1),
                               N("Or", ["t", "b"], ["u"], broadcast=1, axis=1),
                               N("Xor", ["u", "a"], ["y"])],
         {"a": ([2, 3, 4], TensorProto.BOOL), "b": ([3], TensorProto.BOOL)}, 1,
         lambda a, b: np.logical_xor(np.logical_or(np.logical_and(a, b.reshape(3, 1)), b.reshape(3, 1)), a)),
    case("equal-greater-less-1", [N("Equal", ["a", "b"], ["e"], broadcast=1, axis=0),
                                  N("Greater", ["x", "c"], ["g"], broadcast=1),
                                  N("Less", ["x", "c"], ["l"], broadcast=1)],
         {"a": ([2, 3], TensorProto.INT32), "b": ([2], TensorProto.INT32), "x": [2, 3], "c": [3]}, 1,
         lambda a, b, x, c: (a == b.reshape(2, 1), x > c, x < c), outputs=("e", "g", "l")),
    # -- Gemm, PRelu --------------------------------------------------------------------------------------
    case("gemm-6-broadcast-c", [N("Gemm", ["a", "b", "c"], ["y"], broadcast=1, transB=1, alpha=0.5, beta=2.0)],
         {"a": [3, 4]}, 6, "reference", inits={"b": w(5, 4), "c": w(5)}),
    case("gemm-1-full-c", [N("Gemm", ["a", "b", "c"], ["y"], transA=1)], {"a": [4, 3], "b": [4, 5], "c": [3, 5]}, 1,
         lambda a, b, c: a.T @ b + c),
    case("prelu-6-per-channel-4d", [N("PRelu", ["x", "s"], ["y"])], X4, 6,
         lambda x, s: np.where(x >= 0, x, x * s.reshape(3, 1, 1)), inits={"s": w(3)}),
    case("prelu-6-per-channel-3d-runtime-slope", [N("PRelu", ["x", "s"], ["y"])], {"x": [2, 3, 4], "s": [3]}, 6,
         lambda x, s: np.where(x >= 0, x, x * s.reshape(3, 1))),
    case("prelu-1-per-channel-2d", [N("PRelu", ["x", "s"], ["y"], consumed_inputs=[0, 0])], {"x": [2, 3]}, 1,
         lambda x, s: np.where(x >= 0, x, x * s), inits={"s": w(3)}),
    case("prelu-6-shared", [N("PRelu", ["x", "s"], ["y"])], X4, 6, lambda x, s: np.where(x >= 0, x, x * s[0]),
         inits={"s": w(1)}),
    case("prelu-6-full-shape", [N("PRelu", ["x", "s"], ["y"])], {"x": [2, 3]}, 6,
         lambda x, s: np.where(x >= 0, x, x * s), inits={"s": w(2, 3)}),
    # -- BatchNormalization, Dropout (is_test), InstanceNormalization ------------------------------------
    case("batchnorm-6-is_test", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1, epsilon=1e-3)],
         X4, 6, "reference", inits=BN_INITS),
    case("batchnorm-1-consumed-is_test", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1,
                                            consumed_inputs=[0, 0, 0, 1, 1])], {"x": [2, 3, 4]}, 1,
         lambda x, s, b, m, v: bn(x, s, b, m, v), inits=BN_INITS),
    case("batchnorm-6-rank5", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1)],
         {"x": [2, 3, 2, 3, 4]}, 6, lambda x, s, b, m, v: bn(x, s, b, m, v), inits=BN_INITS),
    case("dropout-6-is_test", [N("Dropout", ["x"], ["y"], is_test=1, ratio=0.3)], {"x": [3, 4]}, 6, lambda x: x),
    case("dropout-1-consumed", [N("Dropout", ["x"], ["d"], is_test=1, consumed_inputs=[0]), N("Relu", ["d"], ["y"])],
         {"x": [3, 4]}, 1, relu),
    # -- Cast, Clip --------------------------------------------------------------------------------------
    case("cast-1-string-to", [N("Cast", ["x"], ["i"], to="INT32"), N("Cast", ["i"], ["y"], to="double")],
         {"x": [3, 4]}, 1, lambda x: np.trunc(x).astype(np.int32).astype(np.float64)),
    case("cast-5-float16", [N("Cast", ["x"], ["y"], to="FLOAT16")], {"x": [3, 4]}, 5,
         lambda x: x.astype(np.float32).astype(np.float16)),
    case("clip-1-min-only", [N("Clip", ["x"], ["y"], min=-0.3, consumed_inputs=[0])], {"x": [3, 4]}, 1,
         lambda x: np.maximum(x, np.float32(-0.3))),
    case("clip-1-max-only", [N("Clip", ["x"], ["y"], max=0.2)], {"x": [3, 4]}, 5,
         lambda x: np.minimum(x, np.float32(0.2))),
    case("clip-1-both", [N("Clip", ["x"], ["y"], min=-0.3, max=0.2)], {"x": [3, 4]}, 5,
         lambda x: np.clip(x, np.float32(-0.3), np.float32(0.2))),
    # -- Concat, Reshape, Pad, Split, Tile, Upsample ---------------------------------------------------------
    case("concat-1-default-axis", [N("Concat", ["a", "b", "c"], ["y"])], {"a": [2, 1, 3], "b": [2, 2, 3]}, 1,
         lambda a, b, c: np.concatenate([a, b, c], axis=1), inits={"c": w(2, 3, 3)}),
    case("concat-3-axis0", [N("Concat", ["a", "b"], ["y"], axis=0)], {"a": [1, 3], "b": [2, 3]}, 3,
         lambda a, b: np.concatenate([a, b])),
    case("reshape-1-attribute", [N("Reshape", ["x"], ["y"], shape=[0, -1], consumed_inputs=[0])], X4, 1,
         lambda x: x.reshape(2, -1)),
    case("reshape-4-attribute-ort", [N("Reshape", ["x"], ["y"], shape=[4, 0, -1])], {"x": [2, 3, 4]}, 4, "ort"),
    case("pad-1-constant", [N("Pad", ["x"], ["y"], paddings=[0, 1, 2, 0, 3, 1], value=1.5)], {"x": [2, 3, 4]}, 1,
         "reference"),
    case("pad-1-reflect", [N("Pad", ["x"], ["y"], paddings=[0, 2, 0, 1], mode="reflect")], {"x": [3, 4]}, 1,
         lambda x: np.pad(x, [(0, 0), (2, 1)], mode="reflect")),
    case("pad-1-edge", [N("Pad", ["x"], ["y"], paddings=[1, 0, 0, 2], mode="edge")], {"x": [3, 4]}, 1,
         lambda x: np.pad(x, [(1, 0), (0, 2)], mode="edge")),
    case("split-1-attribute", [N("Split", ["x"], ["a", "b"], axis=1, split=[1, 3])], {"x": [2, 4]}, 1,
         lambda x: (x[:, :1], x[:, 1:]), outputs=("a", "b")),
    case("split-1-input", [N("Split", ["x", "s"], ["a", "b", "c"], axis=0)], {"x": [6, 2]}, 1,
         lambda x, s: (x[:1], x[1:3], x[3:]), inits={"s": np.array([1.0, 2.0, 3.0], np.float32)},
         outputs=("a", "b", "c")),
    case("split-1-equal", [N("Split", ["x"], ["a", "b"], axis=-1)], {"x": [2, 6]}, 1,
         lambda x: (x[:, :3], x[:, 3:]), outputs=("a", "b")),
    case("tile-1", [N("Tile", ["x", "t", "a"], ["y"])], {"x": [2, 3]}, 1, lambda x, t, a: np.tile(x, (1, 3)),
         inits={"t": np.array(3.0, np.float32), "a": np.array(1.0, np.float32)}),
    case("tile-5-negative-axis", [N("Tile", ["x", "t", "a"], ["y"])], {"x": [2, 3]}, 5,
         lambda x, t, a: np.tile(x, (2, 1)), inits={"t": np.array([2], np.int64), "a": np.array([-2], np.int64)}),
    case("upsample-1-nearest", [N("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=3.0)],
         {"x": [1, 2, 3, 4]}, 6, lambda x: upsample_nearest(x, 2, 3)),
    # -- pooling ----------------------------------------------------------------------------------------------
    case("avgpool-1-pads-exclude-pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
         X4, 1, lambda x: avgpool_3x3_exclude_pad(x)),
    case("lppool-1-float-p", [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=3.0, strides=[2, 2])], X4, 1,
         "reference"),
    case("globallppool-1-float-p", [N("GlobalLpPool", ["x"], ["y"], p=3.0)], X4, 1,
         lambda x: (np.abs(x) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3)),
    # -- operators unchanged since opset 1 (read as at opset 7) ------------------------------------------------
    case("conv-maxpool-1", [N("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
                            N("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
         X4, 1, "ort", inits={"W": w(4, 3, 3, 3), "B": w(4)}),
    case("softmax-1-coerced", [N("Softmax", ["x"], ["y"])], {"x": [2, 3, 4]}, 1, "ort"),
    case("logsoftmax-hardmax-1", [N("LogSoftmax", ["x"], ["l"], axis=2), N("Hardmax", ["x"], ["h"], axis=1)],
         {"x": [2, 3, 4]}, 1, "ort", outputs=("l", "h")),
    case("flatten-transpose-lrn-1", [N("LRN", ["x"], ["l"], size=3), N("Transpose", ["l"], ["t"], perm=[0, 2, 3, 1]),
                                     N("Flatten", ["t"], ["y"], axis=2)], X4, 1, "ort", rtol=1e-4),
    case("squeeze-unsqueeze-slice-1", [N("Unsqueeze", ["x"], ["u"], axes=[0]), N("Squeeze", ["u"], ["s"], axes=[0]),
                                       N("Slice", ["s"], ["y"], starts=[1, 0], ends=[3, 2], axes=[0, 2])],
         {"x": [3, 4, 5]}, 1, "ort"),
    case("gather-matmul-1", [N("Gather", ["x", "i"], ["g"], axis=1), N("MatMul", ["g", "m"], ["y"])],
         {"x": [2, 3, 4]}, 1, "ort", inits={"i": np.array([2, 0], np.int64), "m": w(4, 3)}),
    case("not-1", [N("Not", ["x"], ["y"])], {"x": ([3, 4], TensorProto.BOOL)}, 1, "ort"),
]


def _expected(m: Any, oracle: Oracle | str, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
              outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
    if oracle == "ort":
        return run_ort(m, feeds)
    if oracle == "reference":
        results = ReferenceEvaluator(m).run(None, feeds)
        return dict(zip(outputs, results))
    assert callable(oracle)
    values = {**feeds, **inits}
    results = oracle(**{k: np.asarray(v).astype(np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v)
                        for k, v in values.items()})
    results = results if isinstance(results, tuple) else (results,)
    return dict(zip(outputs, results))


@pytest.mark.parametrize("nodes, inputs, opset, oracle, inits, outputs, rtol, positive", CASES)
def test_old_operator_forms(runtime: Any, nodes, inputs, opset, oracle, inits, outputs, rtol, positive) -> None:  # type: ignore[no-untyped-def]
    m = model(nodes, inputs, list(outputs), opset, inits)
    feeds = feeds_for(m, positive)
    expected = _expected(m, oracle, feeds, inits, outputs)
    got = run_plugnn(runtime, m, feeds)
    for name in outputs:
        want = np.asarray(expected[name])
        assert got[name].shape == want.shape, name
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got[name], want, err_msg=name)
        else:
            np.testing.assert_allclose(got[name].astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-6,
                                       err_msg=name)


def test_clip_1_without_bounds_keeps_the_input_types_range(runtime: Any) -> None:
    """Clip-1's absent bounds are the element type's own limits: float64 values beyond float32's
    range pass unclipped (Clip-6's defaults, +-3.4e38, would clip them)."""
    m = model([N("Clip", ["x"], ["y"])], {"x": ([4], TensorProto.DOUBLE)}, ["y"], 5)
    x = np.array([1e300, -1e300, 2.5, -np.inf])
    np.testing.assert_array_equal(run_plugnn(runtime, m, {"x": x})["y"], [1e300, -1e300, 2.5, np.finfo(np.float64).min])
    m6 = model([N("Clip", ["x"], ["y"])], {"x": ([4], TensorProto.DOUBLE)}, ["y"], 6)
    assert run_plugnn(runtime, m6, {"x": x})["y"][0] == np.float64(np.finfo(np.float32).max)


@pytest.mark.parametrize("opset", [1, 3, 5, 6])
def test_upsample_1_bilinear_is_upsample_7_linear(runtime: Any, opset: int) -> None:
    x = w(1, 2, 3, 4)
    m = model([N("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=1.5, mode="bilinear")], {"x": [1, 2, 3, 4]},
              ["y"], opset)
    m7 = model([N("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 1.5], mode="linear")], {"x": [1, 2, 3, 4]},
               ["y"], 7)
    np.testing.assert_allclose(run_plugnn(runtime, m, {"x": x})["y"], run_ort(m7, {"x": x})["y"], rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_recurrent_output_sequence_is_dropped(runtime: Any, op: str) -> None:
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    inits = {"W": w(1, gates * 5, 3), "R": w(1, gates * 5, 5)}
    nodes = [N(op, ["x", "W", "R"], ["y", "h"], hidden_size=5, output_sequence=1)]
    m = model(nodes, {"x": [4, 2, 3]}, ["y", "h"], 1, inits)
    m7 = model([N(op, ["x", "W", "R"], ["y", "h"], hidden_size=5)], {"x": [4, 2, 3]}, ["y", "h"], 7, inits)
    x = w(4, 2, 3)
    got, want = run_plugnn(runtime, m, {"x": x}), run_ort(m7, {"x": x})
    for name in ("y", "h"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_layer_names_and_helper_layers(runtime: Any) -> None:
    """A rewritten node keeps its layer name; a helper node is named under it."""
    m = model([N("Add", ["x", "b"], ["y"], broadcast=1, axis=1, name="add1")], {"x": [2, 3, 4], "b": [3]}, ["y"], 6)
    names = [layer.name for layer in plugnn.onnx.load(m)]
    assert "add1" in names and "add1/B_broadcast" in names


def test_pytorch_era_model_runs_end_to_end(runtime: Any) -> None:
    """An opset-6 network the way PyTorch exported one: Conv, BatchNormalization (is_test), PRelu
    per channel, Add with broadcast, Gemm with broadcast, Softmax."""
    inits = {"W": w(4, 3, 3, 3), **{k: np.resize(v, 4) for k, v in BN_INITS.items()}, "p": w(4),
             "G": w(10, 64), "c": w(10), "k": np.float32(0.25)}
    inits["v"] = np.abs(inits["v"]) + 0.5
    nodes = [N("Conv", ["x", "W"], ["c1"], pads=[1, 1, 1, 1]),
             N("BatchNormalization", ["c1", "s", "b", "m", "v"], ["b1"], is_test=1),
             N("PRelu", ["b1", "p"], ["p1"]), N("Add", ["p1", "k"], ["a1"], broadcast=1),
             N("MaxPool", ["a1"], ["m1"], kernel_shape=[2, 2], strides=[2, 2]),
             N("Reshape", ["m1"], ["f"], shape=[2, -1]),
             N("Gemm", ["f", "G", "c"], ["g"], transB=1, broadcast=1), N("Softmax", ["g"], ["y"])]
    m = model(nodes, {"x": [2, 3, 8, 8]}, ["y"], 4, inits)
    x = w(2, 3, 8, 8)
    f = {k: v.astype(np.float64) for k, v in inits.items()}
    c1 = ReferenceEvaluator(model([N("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])], {"x": [2, 3, 8, 8]}, ["y"], 7,
                                  {"W": inits["W"]})).run(None, {"x": x})[0].astype(np.float64)
    b1 = bn(c1, f["s"], f["b"], f["m"], f["v"])
    p1 = np.where(b1 >= 0, b1, b1 * f["p"].reshape(4, 1, 1)) + 0.25
    m1 = p1.reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5))
    g = m1.reshape(2, -1) @ f["G"].T + f["c"]
    want = np.exp(g - g.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(run_plugnn(runtime, m, {"x": x})["y"], want, rtol=1e-4, atol=1e-6)


# ---- refusals -----------------------------------------------------------------------------------------


def _error(nodes: list[Any], inputs: dict[str, Any], opset: int, inits: dict[str, Any] | None = None,
           outputs: list[str] | None = None, kind: type[Exception] = ModelError) -> str:
    with pytest.raises(kind) as info:
        plugnn.onnx.load(model(nodes, inputs, outputs or ["y"], opset, inits))
    return str(info.value)


BN = ["x", "s", "b", "m", "v"]


@pytest.mark.parametrize("nodes, inputs, opset, inits, message", [
    ([N("BatchNormalization", BN, ["y"], name="bn")], {"x": [2, 3, 4]}, 6, BN_INITS,
     "node 'bn' (#0, BatchNormalization, opset 6): attribute 'is_test' = 0 (its default) asks for training mode, "
     "which normalizes with the batch's own statistics; plugnn imports inference, is_test = 1 "
     "(BatchNormalization-6)"),
    ([N("BatchNormalization", BN, ["y"], consumed_inputs=[0, 0, 0, 1, 1], is_test=0)], {"x": [2, 3, 4]}, 3,
     BN_INITS, "attribute 'is_test' = 0 (its default) asks for training mode, which normalizes with the batch's "
     "own statistics; plugnn imports inference, is_test = 1 (BatchNormalization-1)"),
    ([N("Dropout", ["x"], ["y"])], {"x": [3]}, 6, None,
     "attribute 'is_test' = 0 (its default) asks for training mode, which drops elements at random; plugnn "
     "imports inference, is_test = 1 (Dropout-6)"),
    ([N("Add", ["x", "b"], ["y"])], {"x": [2, 3], "b": [3]}, 6, None,
     "inputs A [2, 3] and B [3] differ in shape and attribute 'broadcast' is 0: without broadcast = 1 they must "
     "have one shape (Add-6)"),
    ([N("Mul", ["x", "b"], ["y"], broadcast=1, axis=1)], {"x": [2, 3, 4], "b": [4]}, 6, None,
     "with broadcast = 1, B [4] must have one element or match the dims of A from attribute 'axis' = 1, each dim "
     "equal or 1 (A is [2, 3, 4]; the result has A's shape) (Mul-6)"),
    ([N("Sub", ["x", "b"], ["y"], broadcast=1)], {"x": [3], "b": [2, 3]}, 1, None,
     "with broadcast = 1, B [2, 3] must have one element or match A's trailing dims"),
    ([N("Div", ["x", "b"], ["y"], broadcast=2)], {"x": [3], "b": [3]}, 6, None,
     "attribute 'broadcast' = 2 is not supported; supported: 0, 1 (Div-6)"),
    ([N("Gemm", ["a", "b", "c"], ["y"])], {"a": [2, 3], "b": [3, 4], "c": [4]}, 6, None,
     "input C has shape [4] and attribute 'broadcast' is 0: C must be [M, N] = [2, 4] (Gemm-6)"),
    ([N("PRelu", ["x", "s"], ["y"])], {"x": [2, 3, 4], "s": [4]}, 6, None,
     "slope [4] for X [2, 3, 4]: the slope has one element, one per channel (X.shape[1] elements) or X's shape "
     "(PRelu-6)"),
    ([N("Cast", ["x"], ["y"], to="FLOAT42")], {"x": [3]}, 5, None,
     "attribute 'to' = 'FLOAT42' names no TensorProto data type (e.g. 'FLOAT', 'INT64') (Cast-1)"),
    ([N("Reshape", ["x"], ["y"])], {"x": [3]}, 4, None,
     "attribute 'shape' is required (the new shape) (Reshape-1)"),
    ([N("Split", ["x"], ["y", "z"])], {"x": [4]}, 1, None,
     "attribute 'axis' is missing, and Split-1 gives it no default (Split-1)"),
    ([N("Split", ["x", "s"], ["y", "z"], axis=0, split=[1, 3])], {"x": [4]}, 1, {"s": np.array([2.0, 2.0], np.float32)},
     "attribute 'split' = [1, 3] and input 1 (split) = [2, 2] disagree (Split-1)"),
    ([N("Split", ["x", "s"], ["y", "z"], axis=0)], {"x": [4]}, 1, {"s": np.array([1.5, 2.5], np.float32)},
     "input 1 (split) values [1.5, 2.5] are not whole numbers (Split-1)"),
    ([N("Tile", ["x", "t", "a"], ["y"])], {"x": [2, 3]}, 5,
     {"t": np.array(2.0, np.float32), "a": np.array(2.0, np.float32)},
     "input 2 (axis) = 2 is out of range for rank 2 (Tile-1)"),
    ([N("Tile", ["x", "t", "a"], ["y"])], {"x": [2, 3]}, 5,
     {"t": np.array([2, 3], np.int64), "a": np.array(0, np.int64)},
     "input 1 (tiles) has 2 values; one expected (Tile-1)"),
    ([N("Tile", ["x", "t"], ["y"])], {"x": [2, 3]}, 5, {"t": np.array(2, np.int64)},
     "the node has 2 inputs; Tile-1 takes 3 (Tile-1)"),
    ([N("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=2.0)], {"x": [1, 2, 3]}, 6, None,
     "input X has rank 3; Upsample-1 takes a 4-D [N, C, H, W] tensor (Upsample-1)"),
    ([N("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=2.0, mode="cubic")], {"x": [1, 1, 2, 2]}, 6, None,
     "attribute 'mode' = 'cubic' is not supported; supported: 'nearest', 'bilinear' (Upsample-1)"),
    ([N("Upsample", ["x"], ["y"], height_scale=2.0)], {"x": [1, 1, 2, 2]}, 6, None,
     "attribute 'width_scale' is required (Upsample-1)"),
    ([N("Acos", ["x"], ["y"])], {"x": [3]}, 6, None,
     "node #0 (Acos, unnamed, output 'y', opset 6): operator 'Acos' is not defined at opset 6 (ONNX defines it from "
     "opset 7)"),
    ([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=1)], {"x": [1, 1, 4, 4]}, 6, None,
     "attribute 'ceil_mode' is not one of MaxPool-1's (they are: auto_pad, kernel_shape, pads, strides) "
     "(MaxPool-1)"),
    ([N("Relu", ["x", "x"], ["y"])], {"x": [3]}, 6, None, "the node has 2 inputs; Relu-6 takes 1 (Relu-6)"),
    ([N("LpPool", ["x"], ["y"], p=2.0)], {"x": [1, 1, 4, 4]}, 1, None, "attribute 'kernel_shape' is required"),
])
def test_refusals_name_node_attribute_version_and_opset(nodes, inputs, opset, inits, message) -> None:  # type: ignore[no-untyped-def]
    assert message in _error(nodes, inputs, opset, inits)


def test_split_1_input_must_be_known_at_import() -> None:
    message = _error([N("Split", ["x", "s"], ["y", "z"], axis=0)], {"x": [4], "s": [2]}, 1, kind=NeedsConstantError)
    assert "input 1 (split) 's' must be known at import time, but it is a graph input" in message


def test_tile_1_tiles_computed_at_run_time() -> None:
    message = _error([N("Relu", ["t0"], ["t"]), N("Tile", ["x", "t", "a"], ["y"])], {"x": [2, 3], "t0": []}, 5,
                     {"a": np.array(0.0, np.float32)}, kind=NeedsConstantError)
    assert "input 1 (tiles) 't' must be known at import time" in message
    assert "it is computed from graph input(s) 't0': make them initializers (constants)" in message


def test_opset_zero_is_not_an_opset() -> None:
    m = model([N("Relu", ["x"], ["y"])], {"x": [3]}, ["y"], 1)
    m.opset_import[0].version = 0
    with pytest.raises(ModelError, match="the default-domain opset is 0; ONNX's opsets start at 1"):
        plugnn.onnx.load(m)


def test_onnx_backend_binds_tile_1_inputs() -> None:
    """Through the ONNX backend, Tile-1's tiles and axis given as graph inputs are bound at run time."""
    from plugnn.onnx import backend

    m = model([N("Tile", ["x", "t", "a"], ["y"])], {"x": [2, 3], "t": ([], TensorProto.INT64),
                                                    "a": ([], TensorProto.INT64)}, ["y"], 5)
    x = w(2, 3)
    rep = backend.prepare(m, backends=["CpuRef"])
    (y,) = rep.run([x, np.array(2, np.int64), np.array(0, np.int64)])
    np.testing.assert_array_equal(y, np.tile(x, (2, 1)))
    (y,) = rep.run([x, np.array(3, np.int64), np.array(1, np.int64)])
    np.testing.assert_array_equal(y, np.tile(x, (1, 3)))
