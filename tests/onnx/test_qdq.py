"""QDQ groups as integer operators (plugnn.onnx.qdq), on small graphs built here with onnx.helper
(seeded weights and inputs): which groups are rewritten into which operator, which stay as
written (and why), and what the rewritten graph computes.

Oracles: onnxruntime with its graph optimizations on (it rewrites the same groups into its
integer kernels) and plugnn with the rewrite off (session config "session.disable_quant_qdq" =
"1": the graph as written). The integer form requantizes an exact sum once, where the graph as
written rounds each float op's result, so the two may differ by one quantization step on an
element that lies on a rounding boundary: at most one step, on at most 5 % of the elements
(or one element of a small output)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.onnx.importer import read_model

F32, U8, I8 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8


@dataclass
class Graph:
    """A QDQ graph under construction: nodes, initializers, and the scale of what it outputs."""

    nodes: list[Any] = field(default_factory=list)
    inits: list[Any] = field(default_factory=list)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(5))

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def qdq(self, x: str, scale: float, zero: int, dtype: Any = np.uint8, *, tag: str | None = None) -> str:
        """x -> QuantizeLinear -> DequantizeLinear, per tensor."""
        tag = tag or x
        s = self.const(f"{tag}_s", np.float32(scale))
        z = self.const(f"{tag}_z", np.asarray(zero, dtype))
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [f"{tag}_q"], name=f"{tag}_Q"))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{tag}_q", s, z], [f"{tag}_dq"], name=f"{tag}_DQ"))
        return f"{tag}_dq"

    def weight(self, name: str, shape: tuple[int, ...], axis: int | None = None, dtype: Any = np.int8) -> str:
        """A constant int8 weight and its DequantizeLinear (per tensor, or per `axis`)."""
        q = self.rng.integers(-100, 100, shape).astype(dtype) if dtype == np.int8 else \
            self.rng.integers(28, 228, shape).astype(dtype)
        count = shape[axis] if axis is not None else 1
        scale = (0.002 + 0.002 * self.rng.random(count)).astype(np.float32)
        zero = np.zeros(count, dtype) if dtype == np.int8 else np.full(count, 128, dtype)
        if axis is None:
            scale, zero = scale.reshape(()), zero.reshape(())
        self.const(f"{name}_q", q)
        self.const(f"{name}_s", scale)
        self.const(f"{name}_z", zero)
        attrs = {"axis": axis} if axis is not None else {}
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name],
                                           name=f"{name}_DQ", **attrs))
        return name

    def bias(self, name: str, x_scale: float, weight: str, count: int, factor: float = 1.0) -> str:
        """An int32 bias dequantized with scale x_scale * w_scale (times `factor`)."""
        w_scale = numpy_helper.to_array(next(t for t in self.inits if t.name == f"{weight}_s"))
        scale = (np.float32(x_scale) * w_scale.reshape(-1) * np.float32(factor)).astype(np.float32)
        scale = np.broadcast_to(scale, (count,)).copy() if scale.size > 1 else scale.reshape(())
        self.const(f"{name}_q", self.rng.integers(-500, 500, count).astype(np.int32))
        self.const(f"{name}_s", scale)
        self.const(f"{name}_z", np.zeros(scale.shape, np.int32))
        self.nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name],
                                           name=f"{name}_DQ", axis=0))
        return name

    def model(self, inputs: dict[str, list[int]], outputs: dict[str, list[int]], opset: int = 17) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "qdq", [helper.make_tensor_value_info(n, F32, s) for n, s in inputs.items()],
                                  [helper.make_tensor_value_info(n, F32, s) for n, s in outputs.items()], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
        onnx.checker.check_model(model)
        return model


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in read_model(model)[0].graph.node]


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *, as_written: bool = False) -> list[np.ndarray]:
    options = plugnn.SessionOptions()
    if as_written:
        options.add_session_config_entry("session.disable_quant_qdq", "1")
    return plugnn.InferenceSession(model.SerializeToString(), options).run(None, feeds)


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], step: float) -> None:
    """plugnn against onnxruntime optimized and against the graph as written: at most one step,
    on at most 5 % of the elements (or one)."""
    got = _run(model, feeds)
    written = _run(model, feeds, as_written=True)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w, a in zip(got, want, written):
        assert g.shape == w.shape and g.dtype == w.dtype
        for other in (w, a):
            steps = np.abs(g.astype(np.float64) - other.astype(np.float64)) / step
            differing = int((steps > 1e-3).sum())
            assert steps.max() <= 1.0 + 1e-3 and differing <= max(1, 0.05 * steps.size), (steps.max(), differing)


def _image(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ---- what is rewritten ----------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv(axis: int | None, with_bias: bool) -> None:
    g = Graph()
    x = g.qdq("x", 1 / 127, 128)
    w = g.weight("w", (6, 3, 3, 3), axis)
    inputs = [x, w] + ([g.bias("b", 1 / 127, "w", 6)] if with_bias else [])
    g.nodes.append(helper.make_node("Conv", inputs, ["c"], pads=[1, 1, 1, 1], name="conv"))
    y = g.qdq("c", 0.02, 128, tag="y")
    g.nodes.append(helper.make_node("Identity", [y], ["out"]))
    model = g.model({"x": [1, 3, 8, 8]}, {"out": [1, 6, 8, 8]})
    ops = _ops(model)
    assert "QLinearConv" in ops and "Conv" not in ops, ops
    assert ops.count("DequantizeLinear") == 1 and ops.count("QuantizeLinear") == 1, ops  # at the graph's ends
    _check(model, {"x": _image((1, 3, 8, 8))}, 0.02)


def test_conv_relu_int8_activations() -> None:
    """int8 activations (QInt8 recipes), a Relu after the requantization left in float."""
    g = Graph()
    x = g.qdq("x", 1 / 100, 0, np.int8)
    w = g.weight("w", (4, 3, 1, 1), 0)
    g.nodes.append(helper.make_node("Conv", [x, w, g.bias("b", 1 / 100, "w", 4)], ["c"], name="conv"))
    y = g.qdq("c", 0.01, 0, np.int8, tag="y")
    g.nodes.append(helper.make_node("Relu", [y], ["out"]))
    model = g.model({"x": [2, 3, 5, 5]}, {"out": [2, 4, 5, 5]})
    assert "QLinearConv" in _ops(model)
    _check(model, {"x": _image((2, 3, 5, 5))}, 0.01)


@pytest.mark.parametrize("axis", [None, 1])
def test_matmul(axis: int | None) -> None:
    g = Graph()
    a = g.qdq("a", 1 / 127, 128)
    b = g.weight("b", (16, 12), axis)
    g.nodes.append(helper.make_node("MatMul", [a, b], ["m"], name="matmul"))
    g.qdq("m", 0.01, 128, tag="y")
    g.nodes.append(helper.make_node("Identity", ["y_dq"], ["out"]))
    model = g.model({"a": [2, 5, 16]}, {"out": [2, 5, 12]})
    ops = _ops(model)
    assert "QLinearMatMul" in ops and "MatMul" not in ops, ops
    _check(model, {"a": _image((2, 5, 16))}, 0.01)


@pytest.mark.parametrize("quantized_output", [True, False])
def test_gemm(quantized_output: bool) -> None:
    """Gemm with a bias: com.microsoft QGemm, with an 8-bit output, or a float one when nothing
    quantizes it (a classifier's logits)."""
    g = Graph()
    a = g.qdq("a", 1 / 127, 128)
    b = g.weight("b", (10, 16), 0)
    c = g.bias("c", 1 / 127, "b", 10)
    g.nodes.append(helper.make_node("Gemm", [a, b, c], ["m" if quantized_output else "out"], transB=1, name="fc"))
    if quantized_output:
        g.qdq("m", 0.01, 128, tag="y")
        g.nodes.append(helper.make_node("Identity", ["y_dq"], ["out"]))
    model = g.model({"a": [3, 16]}, {"out": [3, 10]})
    ops = _ops(model)
    assert "QGemm" in ops and "Gemm" not in ops, ops
    feeds = {"a": _image((3, 16))}
    if quantized_output:
        _check(model, feeds, 0.01)
    else:
        # A float result of the same integer sums: float32 rounding of the scaling only.
        got, written = _run(model, feeds)[0], _run(model, feeds, as_written=True)[0]
        np.testing.assert_allclose(got, written, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op, contrib", [("Add", "QLinearAdd"), ("Mul", "QLinearMul")])
def test_binary(op: str, contrib: str) -> None:
    g = Graph()
    a, b = g.qdq("a", 1 / 100, 128), g.qdq("b", 1 / 50, 100)
    g.nodes.append(helper.make_node(op, [a, b], ["s"], name="binary"))
    g.qdq("s", 0.03, 128, tag="y")
    g.nodes.append(helper.make_node("Identity", ["y_dq"], ["out"]))
    model = g.model({"a": [2, 4, 3], "b": [4, 3]}, {"out": [2, 4, 3]})
    assert contrib in _ops(model) and op not in _ops(model)
    _check(model, {"a": _image((2, 4, 3)), "b": _image((4, 3), 1)}, 0.03)


@pytest.mark.parametrize("op, attrs, contrib", [
    ("GlobalAveragePool", {}, "QLinearGlobalAveragePool"),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}, "QLinearAveragePool"),
    ("Sigmoid", {}, "QLinearSigmoid"),
    ("LeakyRelu", {"alpha": 0.2}, "QLinearLeakyRelu")])
def test_unary(op: str, attrs: dict[str, Any], contrib: str) -> None:
    g = Graph()
    x = g.qdq("x", 1 / 60, 120)
    g.nodes.append(helper.make_node(op, [x], ["u"], name="unary", **attrs))
    g.qdq("u", 1 / 200, 100, tag="y")
    g.nodes.append(helper.make_node("Identity", ["y_dq"], ["out"]))
    out = [1, 3, 1, 1] if op == "GlobalAveragePool" else [1, 3, 2, 2] if op == "AveragePool" else [1, 3, 4, 4]
    model = g.model({"x": [1, 3, 4, 4]}, {"out": out})
    assert contrib in _ops(model) and op not in _ops(model)
    _check(model, {"x": _image((1, 3, 4, 4))}, 1 / 200)


def test_concat() -> None:
    g = Graph()
    a, b = g.qdq("a", 1 / 100, 128), g.qdq("b", 1 / 30, 128)
    g.nodes.append(helper.make_node("Concat", [a, b], ["cat"], axis=1, name="concat"))
    g.qdq("cat", 1 / 30, 128, tag="y")
    g.nodes.append(helper.make_node("Identity", ["y_dq"], ["out"]))
    model = g.model({"a": [1, 2, 3], "b": [1, 4, 3]}, {"out": [1, 6, 3]})
    assert "QLinearConcat" in _ops(model)
    _check(model, {"a": _image((1, 2, 3)), "b": _image((1, 4, 3), 1)}, 1 / 30)


@pytest.mark.parametrize("op, extra, attrs, out", [
    ("MaxPool", [], {"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 2, 2, 2]),
    ("Reshape", [np.asarray([1, -1], np.int64)], {}, [1, 32]),
    ("Transpose", [], {"perm": [0, 2, 3, 1]}, [1, 4, 4, 2]),
    ("Flatten", [], {"axis": 1}, [1, 32]),
    ("Slice", [np.asarray([1], np.int64), np.asarray([3], np.int64), np.asarray([2], np.int64)], {}, [1, 2, 2, 4]),
    ("Gather", [np.asarray([1, 0], np.int64)], {"axis": 1}, [1, 2, 4, 4]),
    ("Unsqueeze", [np.asarray([0], np.int64)], {}, [1, 1, 2, 4, 4]),
])
def test_data_movement_exact(op: str, extra: list[np.ndarray], attrs: dict[str, Any], out: list[int]) -> None:
    """Between a DequantizeLinear and a QuantizeLinear of the same scale and zero point, the op
    runs on the 8-bit tensor: the result is the graph as written's, exactly."""
    g = Graph()
    x = g.qdq("x", 1 / 90, 128)
    names = [g.const(f"arg{k}", v) for k, v in enumerate(extra)]
    g.nodes.append(helper.make_node(op, [x] + names, ["moved"], name="move", **attrs))
    g.nodes += [helper.make_node("QuantizeLinear", ["moved", "x_s", "x_z"], ["y_q"], name="y_Q"),
                helper.make_node("DequantizeLinear", ["y_q", "x_s", "x_z"], ["out"], name="y_DQ")]
    model = g.model({"x": [1, 2, 4, 4]}, {"out": out})
    ops = _ops(model)
    assert ops == ["QuantizeLinear", op, "DequantizeLinear"], ops
    feeds = {"x": _image((1, 2, 4, 4))}
    np.testing.assert_array_equal(_run(model, feeds)[0], _run(model, feeds, as_written=True)[0])


def test_missing_zero_points_and_late_constants() -> None:
    """QuantizeLinear / DequantizeLinear without zero points (uint8, zero 0) and the output's
    scale a Constant node placed after the Conv: the rewrite makes the zero points and keeps the
    graph in order."""
    g = Graph()
    g.const("x_s", np.float32(1 / 200))
    g.nodes += [helper.make_node("QuantizeLinear", ["x", "x_s"], ["x_q"], name="x_Q"),
                helper.make_node("DequantizeLinear", ["x_q", "x_s"], ["x_dq"], name="x_DQ")]
    w = g.weight("w", (2, 3, 1, 1))
    g.nodes.append(helper.make_node("Conv", ["x_dq", w], ["c"], name="conv"))
    g.nodes.append(helper.make_node("Constant", [], ["y_s"], value=numpy_helper.from_array(np.float32(0.004))))
    g.nodes += [helper.make_node("QuantizeLinear", ["c", "y_s"], ["y_q"], name="y_Q"),
                helper.make_node("DequantizeLinear", ["y_q", "y_s"], ["out"], name="y_DQ")]
    model = g.model({"x": [1, 3, 4, 4]}, {"out": [1, 2, 4, 4]})
    rewritten = read_model(model)[0]
    ops = [n.op_type for n in rewritten.graph.node]
    assert "QLinearConv" in ops and ops.index("Constant") < ops.index("QLinearConv"), ops
    conv = next(n for n in rewritten.graph.node if n.op_type == "QLinearConv")
    assert all(conv.input), list(conv.input)  # zero points made, none left empty
    feeds = {"x": np.abs(_image((1, 3, 4, 4)))}
    _check(model, feeds, 0.004)


# ---- what stays as written -------------------------------------------------------------------


def _conv_graph(*, bias_factor: float = 1.0, float_bias: bool = False, second_reader: bool = False,
                output_too: bool = False, per_channel_x: bool = False) -> onnx.ModelProto:
    g = Graph()
    if per_channel_x:
        g.const("x_s", np.asarray([0.01, 0.02, 0.03], np.float32))
        g.const("x_z", np.asarray([128, 128, 128], np.uint8))
        g.nodes += [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["x_q"], axis=1),
                    helper.make_node("DequantizeLinear", ["x_q", "x_s", "x_z"], ["x_dq"], axis=1)]
        x = "x_dq"
    else:
        x = g.qdq("x", 1 / 127, 128)
    w = g.weight("w", (4, 3, 3, 3), 0)
    b = g.const("b", np.linspace(-1, 1, 4).astype(np.float32)) if float_bias else \
        g.bias("b", 1 / 127, "w", 4, bias_factor)
    g.nodes.append(helper.make_node("Conv", [x, w, b], ["c"], name="conv"))
    g.qdq("c", 0.05, 128, tag="y")
    outputs = {"y_dq": [1, 4, 4, 4]}
    if second_reader:
        g.nodes.append(helper.make_node("Relu", ["c"], ["also"]))
        outputs["also"] = [1, 4, 4, 4]
    if output_too:
        outputs["c"] = [1, 4, 4, 4]
    return g.model({"x": [1, 3, 6, 6]}, outputs)


@pytest.mark.parametrize("why", ["bias scale not x_scale * w_scale", "float bias", "conv output read twice",
                                 "conv output is a graph output", "per-channel activations"])
def test_conv_refused(why: str) -> None:
    """A group that does not qualify stays in float32, correct, and the rest of the model loads."""
    kwargs = {"bias scale not x_scale * w_scale": {"bias_factor": 1.5}, "float bias": {"float_bias": True},
              "conv output read twice": {"second_reader": True}, "conv output is a graph output": {"output_too": True},
              "per-channel activations": {"per_channel_x": True}}[why]
    model = _conv_graph(**kwargs)
    ops = _ops(model)
    assert "Conv" in ops and "QLinearConv" not in ops, ops
    feeds = {"x": _image((1, 3, 6, 6))}
    for got, want in zip(_run(model, feeds), _run(model, feeds, as_written=True)):
        np.testing.assert_array_equal(got, want)


def test_block_quantized_weights_stay() -> None:
    """A blocked DequantizeLinear (opset 21's block_size) is not a form the integer operators take."""
    g = Graph()
    x = g.qdq("x", 1 / 127, 128)
    g.const("b_q", np.random.default_rng(1).integers(-100, 100, (8, 4)).astype(np.int8))
    g.const("b_s", np.full((2, 4), 0.003, np.float32))
    g.const("b_z", np.zeros((2, 4), np.int8))
    g.nodes.append(helper.make_node("DequantizeLinear", ["b_q", "b_s", "b_z"], ["b"], axis=0, block_size=4))
    g.nodes.append(helper.make_node("MatMul", [x, "b"], ["m"]))
    g.qdq("m", 0.01, 128, tag="y")
    model = g.model({"x": [2, 8]}, {"y_dq": [2, 4]}, opset=21)
    assert "MatMul" in _ops(model) and "QLinearMatMul" not in _ops(model)


def test_movement_with_other_parameters_stays() -> None:
    g = Graph()
    x = g.qdq("x", 1 / 90, 128)
    g.nodes.append(helper.make_node("Transpose", [x], ["t"], perm=[1, 0]))
    g.qdq("t", 1 / 50, 128, tag="y")
    model = g.model({"x": [3, 4]}, {"y_dq": [4, 3]})
    assert "Transpose" in _ops(model) and _ops(model).count("QuantizeLinear") == 2


def test_dequantize_read_by_a_subgraph_stays() -> None:
    """A DequantizeLinear whose output an If branch also reads is kept for it."""
    g = Graph()
    x = g.qdq("x", 1 / 127, 128)
    w = g.weight("w", (2, 3, 1, 1))
    g.nodes.append(helper.make_node("Conv", [x, w], ["c"], name="conv"))
    g.qdq("c", 0.02, 128, tag="y")
    branch = helper.make_graph([helper.make_node("ReduceSum", ["x_dq"], ["s"], keepdims=0)], "then", [],
                               [helper.make_tensor_value_info("s", F32, [])])
    other = helper.make_graph([helper.make_node("Constant", [], ["z"], value=numpy_helper.from_array(np.float32(0)))],
                              "else", [], [helper.make_tensor_value_info("z", F32, [])])
    g.nodes.append(helper.make_node("If", ["flag"], ["total"], then_branch=branch, else_branch=other))
    graph = helper.make_graph(g.nodes, "qdq", [helper.make_tensor_value_info("x", F32, [1, 3, 2, 2]),
                                               helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y_dq", F32, [1, 2, 2, 2]),
                               helper.make_tensor_value_info("total", F32, [])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    rewritten = read_model(model)[0]
    ops = [n.op_type for n in rewritten.graph.node]
    assert "QLinearConv" in ops and "x_dq" in {o for n in rewritten.graph.node for o in n.output}, ops
    feeds = {"x": _image((1, 3, 2, 2)), "flag": np.asarray(True)}
    got = _run(model, feeds)
    want = _run(model, feeds, as_written=True)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_callers_model_is_not_changed() -> None:
    model = _conv_graph()
    before = model.SerializeToString()
    assert "QLinearConv" in _ops(model)
    plugnn.onnx.load(model)
    assert model.SerializeToString() == before


def test_load_as_written() -> None:
    """plugnn.onnx.load(..., integer_qdq=False): the float convolution between its quantize and
    dequantize layers; by default the integer one."""
    kinds = {flag: {layer.kind.name for layer in plugnn.onnx.load(_conv_graph(), integer_qdq=flag).layers}
             for flag in (True, False)}
    assert "QUANTIZED_CONVOLUTION" in kinds[True] and "CONVOLUTION_2D" not in kinds[True], kinds
    assert "CONVOLUTION_2D" in kinds[False] and "QUANTIZED_CONVOLUTION" not in kinds[False], kinds


def test_model_without_quantize_is_returned_as_it_is() -> None:
    g = Graph()
    w = g.weight("w", (2, 3, 1, 1))
    g.nodes.append(helper.make_node("Conv", ["x", w], ["out"]))
    model = g.model({"x": [1, 3, 2, 2]}, {"out": [1, 2, 2, 2]})
    assert _ops(model) == ["DequantizeLinear", "Conv"]
