"""Whole models as onnxruntime's quantizer writes them: a small seeded float CNN and an MLP built
with onnx.helper, quantized at test time by `onnxruntime.quantization` (quantize_static in the
QOperator and QDQ formats, calibrated on seeded random inputs; quantize_dynamic), each file run on
plugnn and onnxruntime with the same inputs. Differences are counted in quantization steps of
the output (its last DequantizeLinear's scale).

- QOperator: at most one step on at most 1 % of the elements (a float result on a rounding
  boundary of a requantization rounds either way where onnxruntime fuses a multiply-add or sums
  in another order; measured: 0 steps over 20 seeds, every recipe).
- QDQ: plugnn rewrites DQ -> op -> Q groups into integer operators (plugnn.onnx.qdq), as
  onnxruntime's optimizer does: at most one step against onnxruntime optimized (measured: on 10
  to 12.5 % of the 10 softmax outputs over 20 seeds: onnxruntime also rewrites the Softmax into
  its table-driven QLinearSoftmax, plugnn keeps it in float32; every other value equal). With the session config entry "session.disable_quant_qdq" = "1" plugnn
  computes the graph as written (DequantizeLinear, the float op, QuantizeLinear), which is what
  onnxruntime computes with its graph optimizations off: 0 steps.
- dynamic: float outputs of the same integer sums, rtol 1e-5.

See docs/onnx.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization as oq

import plugnn
from plugnn.onnx.importer import read_model
from ort_int8 import REDUCE_RANGE

F32 = TensorProto.FLOAT


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def cnn() -> onnx.ModelProto:
    """Conv-Relu, a residual Add, LeakyRelu, a Sigmoid gate (Mul), AveragePool, a Concat of two
    branches, GlobalAveragePool, Gemm and Softmax: the ops the QOperator format writes as
    com.microsoft nodes."""
    rng = np.random.default_rng(2024)
    inits = {"w1": _weights(rng, 8, 3, 3, 3), "b1": _weights(rng, 8), "w2": _weights(rng, 8, 8, 3, 3),
             "b2": _weights(rng, 8), "w3": _weights(rng, 4, 8, 1, 1), "b3": _weights(rng, 4),
             "wg": _weights(rng, 10, 12), "bg": _weights(rng, 10), "shape": np.asarray([0, -1], np.int64)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["res"], name="residual"),
        helper.make_node("LeakyRelu", ["res"], ["lr"], alpha=0.1, name="leaky"),
        helper.make_node("Sigmoid", ["lr"], ["gate"], name="sigmoid"),
        helper.make_node("Mul", ["lr", "gate"], ["gated"], name="gate_mul"),
        helper.make_node("AveragePool", ["gated"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2], name="avgpool"),
        helper.make_node("Conv", ["pooled", "w3", "b3"], ["c3"], name="conv3"),
        helper.make_node("Concat", ["pooled", "c3"], ["cat"], axis=1, name="concat"),
        helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="gap"),
        helper.make_node("Reshape", ["gap", "shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wg", "bg"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1, name="softmax"),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", F32, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", F32, [1, 10])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def mlp() -> onnx.ModelProto:
    """MatMul + Add, Relu, Gemm: what quantize_dynamic rewrites for transformers' projections."""
    rng = np.random.default_rng(7)
    inits = {"w1": _weights(rng, 32, 48), "b1": _weights(rng, 48), "w2": _weights(rng, 16, 48), "b2": _weights(rng, 16)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="proj"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="proj_bias"),
             helper.make_node("Relu", ["hb"], ["a"], name="relu"),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["y"], transB=1, name="out")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F32, [6, 32])],
                              [helper.make_tensor_value_info("y", F32, [6, 16])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


class _Calibration(oq.CalibrationDataReader):
    def __init__(self, shape: tuple[int, ...], count: int = 4) -> None:
        rng = np.random.default_rng(99)
        self._feeds = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def _output_scale(path: Path) -> float:
    """The scale of the DequantizeLinear that produces the model's quantized result."""
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    scales = [float(inits[n.input[1]].reshape(-1)[0]) for n in m.graph.node
              if n.op_type == "DequantizeLinear" and n.input[1] in inits and n.input[0] not in inits]
    return scales[-1]


def _compare(path: Path, shape: tuple[int, ...], step: float, optimized: bool = True, seeds: range = range(3)
             ) -> tuple[float, float]:
    """(the largest difference in steps, the fraction of elements that differ) over seeded inputs,
    against onnxruntime with its graph optimizations on, or, when not `optimized`, onnxruntime
    with them off and plugnn with its QDQ rewrite off (both compute the graph as written)."""
    data = path.read_bytes()
    options = ort.SessionOptions()
    ours = plugnn.SessionOptions()
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        ours.add_session_config_entry("session.disable_quant_qdq", "1")
    reference = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data, ours)
    worst, differing, total = 0.0, 0, 0
    for seed in seeds:
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        want = reference.run(None, {"x": x})[0]
        got = session.run(None, {"x": x})[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
        worst = max(worst, float(diff.max()))
        differing += int((diff > 1e-3).sum())
        total += diff.size
    return worst, differing / total


@pytest.mark.parametrize("quant_format", [oq.QuantFormat.QOperator, oq.QuantFormat.QDQ])
@pytest.mark.parametrize("activation, weight, per_channel", [(oq.QuantType.QUInt8, oq.QuantType.QInt8, False),
                                                             (oq.QuantType.QInt8, oq.QuantType.QInt8, True),
                                                             (oq.QuantType.QUInt8, oq.QuantType.QUInt8, True)])
def test_static_cnn(tmp_path: Path, quant_format: Any, activation: Any, weight: Any, per_channel: bool) -> None:
    source, target = tmp_path / "cnn.onnx", tmp_path / "cnn.int8.onnx"
    onnx.save(cnn(), str(source))
    oq.quantize_static(str(source), str(target), _Calibration((1, 3, 16, 16)), quant_format=quant_format,
                       activation_type=activation, weight_type=weight, per_channel=per_channel, reduce_range=REDUCE_RANGE)
    ops = {(n.domain, n.op_type) for n in onnx.load(str(target)).graph.node}
    if quant_format == oq.QuantFormat.QOperator:
        # The contrib operators this test exists for are in the file.
        assert {("com.microsoft", op) for op in ("QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
                                                  "QLinearAveragePool", "QLinearConcat", "QLinearGlobalAveragePool",
                                                  "QGemm", "QLinearSoftmax")} <= ops
    step = _output_scale(target)
    worst, fraction = _compare(target, (1, 3, 16, 16), step)
    if quant_format == oq.QuantFormat.QOperator:
        assert worst <= 1.0 + 1e-3 and fraction <= 0.01, (worst, fraction)
    else:
        assert worst <= 1.0 + 1e-3, worst
        assert _compare(target, (1, 3, 16, 16), step, optimized=False)[0] <= 1e-3
        rewritten, _ = read_model(str(target))
        ops = {node.op_type for node in rewritten.graph.node}
        # Every Conv, the residual Add and the Gemm compute on 8-bit tensors.
        assert {"QLinearConv", "QLinearAdd", "QGemm"} <= ops and not ops & {"Conv", "Add", "Gemm"}, ops


@pytest.mark.parametrize("weight, per_channel", [(oq.QuantType.QInt8, False), (oq.QuantType.QUInt8, True)])
def test_dynamic_mlp(tmp_path: Path, weight: Any, per_channel: bool) -> None:
    source, target = tmp_path / "mlp.onnx", tmp_path / "mlp.dyn.onnx"
    onnx.save(mlp(), str(source))
    oq.quantize_dynamic(str(source), str(target), weight_type=weight, per_channel=per_channel, reduce_range=REDUCE_RANGE)
    data = target.read_bytes()
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((6, 32)).astype(np.float32)
        want, got = reference.run(None, {"x": x})[0], session.run(None, {"x": x})[0]
        # Float outputs of the same integer sums: float32 rounding of the scaling and bias only.
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize("activation", [oq.QuantType.QUInt8, oq.QuantType.QInt16])
def test_static_cnn_contrib_qdq(tmp_path: Path, activation: Any) -> None:
    """QDQ written with com.microsoft QuantizeLinear / DequantizeLinear (UseQDQContribOps; the
    16-bit activations onnxruntime's quantizer writes that way). At 16 bits a one-ulp difference
    of a float op (Softmax, Sigmoid) can show as one step even against the unoptimized graph."""
    source, target = tmp_path / "cnn.onnx", tmp_path / "cnn.qdq.onnx"
    onnx.save(cnn(), str(source))
    oq.quantize_static(str(source), str(target), _Calibration((1, 3, 16, 16)), quant_format=oq.QuantFormat.QDQ,
                       activation_type=activation, weight_type=oq.QuantType.QInt8,
                       extra_options={"UseQDQContribOps": True}, reduce_range=REDUCE_RANGE)
    model = onnx.load(str(target))
    assert {n.domain for n in model.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")} == \
        {"com.microsoft"}
    step = _output_scale(target)
    exact = activation == oq.QuantType.QUInt8
    assert _compare(target, (1, 3, 16, 16), step, optimized=False)[0] <= (1e-3 if exact else 1.0 + 1e-3)
    assert _compare(target, (1, 3, 16, 16), step)[0] <= 1.0 + 1e-3


def attention_block() -> onnx.ModelProto:
    """com.microsoft Attention (what onnxruntime's transformer optimizer writes for BERT) and a
    MatMul: quantize_dynamic turns the Attention into QAttention."""
    rng = np.random.default_rng(31)
    inits = {"w": _weights(rng, 16, 48), "b": _weights(rng, 48), "wo": _weights(rng, 16, 16),
             "mask": np.asarray([6, 4], np.int32)}
    nodes = [helper.make_node("Attention", ["x", "w", "b", "mask"], ["a"], domain="com.microsoft", num_heads=4,
                              name="attention"),
             helper.make_node("MatMul", ["a", "wo"], ["y"], name="out")]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", F32, [2, 6, 16])],
                              [helper.make_tensor_value_info("y", F32, [2, 6, 16])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def test_dynamic_attention(tmp_path: Path) -> None:
    source, target = tmp_path / "block.onnx", tmp_path / "block.dyn.onnx"
    onnx.save(attention_block(), str(source))
    oq.quantize_dynamic(str(source), str(target), weight_type=oq.QuantType.QInt8, reduce_range=REDUCE_RANGE)
    assert "QAttention" in {n.op_type for n in onnx.load(str(target)).graph.node}
    data = target.read_bytes()
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((2, 6, 16)).astype(np.float32)
        want, got = reference.run(None, {"x": x})[0], session.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def lstm(direction: str) -> onnx.ModelProto:
    """ONNX LSTM (seq 7, batch 2, input 6, hidden 5): quantize_dynamic writes DynamicQuantizeLSTM."""
    rng = np.random.default_rng(41)
    d = 2 if direction == "bidirectional" else 1
    inits = {"W": _weights(rng, d, 20, 6), "R": _weights(rng, d, 20, 5), "B": _weights(rng, d, 40)}
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y", "y_h", "y_c"], hidden_size=5, direction=direction,
                              name="lstm")]
    graph = helper.make_graph(nodes, "lstm", [helper.make_tensor_value_info("x", F32, [7, 2, 6])],
                              [helper.make_tensor_value_info(n, F32, None) for n in ("y", "y_h", "y_c")],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_lstm(tmp_path: Path, direction: str, per_channel: bool) -> None:
    """plugnn runs ONNX LSTM on the dequantized weights; onnxruntime also quantizes X and each
    hidden state to uint8 for its integer products, so the outputs differ by that error (measured:
    at most 0.3 % of the outputs' range, less than either differs from the float model)."""
    source, target = tmp_path / "lstm.onnx", tmp_path / "lstm.dyn.onnx"
    onnx.save(lstm(direction), str(source))
    oq.quantize_dynamic(str(source), str(target), weight_type=oq.QuantType.QInt8, per_channel=per_channel, reduce_range=REDUCE_RANGE)
    assert [n.op_type for n in onnx.load(str(target)).graph.node] == ["DynamicQuantizeLSTM"]
    data = target.read_bytes()
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data)
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal((7, 2, 6)).astype(np.float32)
        for got, want in zip(session.run(None, {"x": x}), reference.run(None, {"x": x})):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=0.01 * float(np.abs(want).max()))


def glue() -> onnx.ModelProto:
    """The default-domain ops the QOperator format leaves on 8-bit tensors (MaxPool, Resize, Pad,
    Split, Transpose, Reshape, ArgMax) around QLinearConv, QLinearAdd and QLinearMatMul."""
    rng = np.random.default_rng(5)
    inits = {"w1": _weights(rng, 8, 3, 3, 3), "b1": _weights(rng, 8), "scales": np.asarray([1, 1, 2, 2], np.float32),
             "pads": np.asarray([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "split": np.asarray([4, 4], np.int64),
             "wm": _weights(rng, 8, 6), "shape": np.asarray([1, 8, -1], np.int64)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Resize", ["p1", "", "scales"], ["u"], mode="nearest"),
             helper.make_node("Pad", ["u", "pads"], ["pd"]),
             helper.make_node("Split", ["pd", "split"], ["s1", "s2"], axis=1),
             helper.make_node("Add", ["s1", "s2"], ["ad"]),
             helper.make_node("Transpose", ["ad"], ["t"], perm=[0, 1, 3, 2]),
             helper.make_node("Reshape", ["pd", "shape"], ["rs"]),
             helper.make_node("Transpose", ["rs"], ["rt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["rt", "wm"], ["mm"]),
             helper.make_node("ArgMax", ["mm"], ["am"], axis=2)]
    outputs = [helper.make_tensor_value_info("mm", F32, None), helper.make_tensor_value_info("t", F32, None),
               helper.make_tensor_value_info("am", TensorProto.INT64, None)]
    graph = helper.make_graph(nodes, "glue", [helper.make_tensor_value_info("x", F32, [1, 3, 16, 16])], outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("quant_format", [oq.QuantFormat.QOperator, oq.QuantFormat.QDQ])
@pytest.mark.parametrize("activation", [oq.QuantType.QUInt8, oq.QuantType.QInt8])
def test_static_glue(tmp_path: Path, quant_format: Any, activation: Any) -> None:
    """Measured: every output equal to onnxruntime's (both formats, u8 and s8)."""
    source, target = tmp_path / "glue.onnx", tmp_path / "glue.int8.onnx"
    onnx.save(glue(), str(source))
    oq.quantize_static(str(source), str(target), _Calibration((1, 3, 16, 16)), quant_format=quant_format,
                       activation_type=activation, weight_type=oq.QuantType.QInt8, reduce_range=REDUCE_RANGE)
    model = onnx.load(str(target))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    data = target.read_bytes()
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data)
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    for out, got, want in zip(model.graph.output, session.run(None, {"x": x}), reference.run(None, {"x": x})):
        assert got.shape == want.shape and got.dtype == want.dtype
        if got.dtype == np.int64:  # ArgMax: exact, or another index of an equal maximum
            assert (got == want).mean() >= 0.99
            continue
        step = float(inits[producers[out.name].input[1]].reshape(-1)[0])
        assert float(np.abs(got - want).max()) <= step * (1 + 1e-3)
