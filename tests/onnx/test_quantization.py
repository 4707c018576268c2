"""ONNX quantization operators: QuantizeLinear and DequantizeLinear at every opset that changed them
(10, 13, 19, 21, 23, 25), DynamicQuantizeLinear, QLinearConv, ConvInteger, QLinearMatMul and
MatMulInteger, run on CpuRef and compared bit for bit with ONNX's reference (onnx.reference) and
with onnxruntime where it runs the case; the folds of known inputs; the import errors, which name
node, operator, input or attribute."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
from ort_int8 import REDUCE_RANGE
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import plugnn.onnx
from plugnn.descriptors import LayerKind
from plugnn.errors import ModelError

TP = TensorProto
NP = {TP.FLOAT: np.float32, TP.FLOAT16: np.float16, TP.INT8: np.int8, TP.UINT8: np.uint8, TP.INT16: np.int16,
      TP.UINT16: np.uint16, TP.INT32: np.int32}


def node_model(op: str, inputs: dict[str, np.ndarray], opset: int, constant: tuple[str, ...] = (),
               outputs: tuple[str, ...] = ("y",), **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """One node whose inputs are graph inputs (or initializers for the names in `constant`; an
    empty name leaves an optional input out); returns the model and its feeds."""
    names = list(inputs)
    graph_inputs = {n: (list(v.shape), helper.np_dtype_to_tensor_dtype(v.dtype)) for n, v in inputs.items()
                    if n and n not in constant}
    inits = {n: v for n, v in inputs.items() if n in constant}
    node = helper.make_node(op, names, list(outputs), name=f"{op.lower()}_node", **attrs)
    model = make_model([node], graph_inputs, list(outputs), inits, opset=opset)
    return model, {n: v for n, v in inputs.items() if n and n not in constant}


def run_reference(model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in model.graph.output]
    return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))


def assert_bits(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], what: str) -> None:
    assert set(got) == set(expected), what
    for name, value in expected.items():
        value = np.asarray(value)
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, (
            f"{what}: {name} is {got[name].dtype}{got[name].shape}, expected {value.dtype}{value.shape}")
        if got[name].tobytes() != value.tobytes():
            np.testing.assert_array_equal(got[name], value, err_msg=f"{what}: {name}")
            raise AssertionError(f"{what}: {name}: the same values in other bits (-0.0 or NaN payloads)")


def check(runtime: Any, model: Any, feeds: dict[str, np.ndarray], ort: bool = True,
          reference: bool = True) -> dict[str, np.ndarray]:
    """plugnn (CpuRef) against ONNX's reference bit for bit (when `reference`: it implements
    DequantizeLinear from opset 19 on), and against onnxruntime (bit for bit too) when `ort`."""
    got = run_plugnn(runtime, model, feeds)
    if reference:
        assert_bits(got, run_reference(model, feeds), "ONNX reference")
    if ort:
        assert_bits(got, run_ort(model, feeds), "onnxruntime")
    return got


def floats(shape: tuple[int, ...], seed: int, spread: float = 100.0, dtype: Any = np.float32) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * spread).astype(np.float32).astype(dtype)


def ints(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, int(info.max) + 1, shape).astype(dtype)


def weight_ints(shape: tuple[int, ...], dtype: Any, seed: int, x_type: Any) -> np.ndarray:
    """ints(), but int8 weights beside uint8 activations keep to 7 bits on a CPU where
    onnxruntime's u8 x s8 kernel saturates (tests/ort_int8.py)."""
    if REDUCE_RANGE and dtype is np.int8 and x_type is np.uint8:
        return np.random.default_rng(seed).integers(-64, 64, shape).astype(dtype)
    return ints(shape, dtype, seed)


def positive(shape: tuple[int, ...], seed: int, dtype: Any = np.float32, low: float = 0.05,
             high: float = 3.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32).astype(dtype)


def kinds(model: Any) -> list[LayerKind]:
    return [layer.kind for layer in plugnn.onnx.load(model) if isinstance(layer.kind, LayerKind)]


# ---- QuantizeLinear -------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [10, 13, 19, 21, 23, 25])
@pytest.mark.parametrize("zero", [np.uint8, np.int8, None])
def test_quantize_per_tensor_at_every_opset(runtime, opset: int, zero: Any) -> None:
    x = floats((3, 4, 5), 1)
    x.reshape(-1)[:6] = [0.5, 1.5, -2.5, 1000.0, -1000.0, 3.0]  # halves to even, saturation
    inputs = {"x": x, "y_scale": np.array(0.5, np.float32)}
    if zero is not None:
        inputs["y_zero_point"] = np.array(3, zero)
    check(runtime, *node_model("QuantizeLinear", inputs, opset))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_quantize_per_axis(runtime, axis: int) -> None:
    x = floats((2, 3, 4), 2)
    n = x.shape[axis]
    inputs = {"x": x, "y_scale": positive((n,), 3), "y_zero_point": ints((n,), np.int8, 4) // 2}
    check(runtime, *node_model("QuantizeLinear", inputs, 13, axis=axis))


@pytest.mark.parametrize("zero", [np.int16, np.uint16])
def test_quantize_16_bit(runtime, zero: Any) -> None:
    inputs = {"x": floats((4, 6), 5, 30000.0), "y_scale": np.array(1.5, np.float32),
              "y_zero_point": np.array(100, zero)}
    check(runtime, *node_model("QuantizeLinear", inputs, 21))


@pytest.mark.parametrize("shape, axis, block_size", [((3, 4), 1, 2), ((3, 5), 1, 2), ((6, 3), 0, 4), ((2, 7, 3), -2, 3)])
def test_quantize_blocked(runtime, shape: tuple[int, ...], axis: int, block_size: int) -> None:
    x = floats(shape, 6, 50.0)
    scale_shape = list(shape)
    scale_shape[axis] = -(-shape[axis] // block_size)
    inputs = {"x": x, "y_scale": positive(tuple(scale_shape), 7),
              "y_zero_point": ints(tuple(scale_shape), np.uint8, 8) // 2}
    check(runtime, *node_model("QuantizeLinear", inputs, 21, axis=axis, block_size=block_size))


@pytest.mark.parametrize("output_dtype", [TP.INT8, TP.UINT8, TP.INT16, TP.UINT16])
def test_quantize_output_dtype_without_zero_point(runtime, output_dtype: int) -> None:
    inputs = {"x": floats((3, 4), 9, 40000.0), "y_scale": positive((3, 2), 10, high=400.0)}
    model, feeds = node_model("QuantizeLinear", inputs, 21, axis=1, block_size=2, output_dtype=output_dtype)
    got = check(runtime, model, feeds)
    assert got["y"].dtype == NP[output_dtype]


@pytest.mark.parametrize("x_type, scale_type, opset", [
    (np.float16, np.float16, 19), (np.int32, np.float32, 13), (np.float16, np.float32, 23),
    (np.float32, np.float16, 23), (np.int32, np.int32, 23)])
def test_quantize_x_and_scale_types(runtime, x_type: Any, scale_type: Any, opset: int) -> None:
    """The division is done in NumPy's promotion of x's and y_scale's types, as ONNX's reference
    does (float64 with an int32). onnxruntime divides float16 in float32 (a quotient near a half
    rounds otherwise), takes one type for x and y_scale and has no int32 x: not compared."""
    x = ints((4, 5), np.int16, 11).astype(np.int32) if x_type is np.int32 else floats((4, 5), 11, 30.0, x_type)
    scale = np.array(3, np.int32) if scale_type is np.int32 else positive((), 12, scale_type)
    inputs = {"x": x, "y_scale": scale, "y_zero_point": np.array(-7, np.int8)}
    check(runtime, *node_model("QuantizeLinear", inputs, opset), ort=False)


@pytest.mark.parametrize("precision, scale", [(TP.FLOAT16, 0.1), (TP.FLOAT, 0.1), (TP.FLOAT16, 2.7),
                                              (TP.FLOAT, 2.7), (TP.INT32, 2.7)])
def test_quantize_precision(runtime, precision: int, scale: float) -> None:
    """precision (opset 23): x and y_scale are converted to it before they are divided (int32:
    truncated, as the reference's astype; not with a scale that truncates to 0: x / 0 is infinite,
    which plugnn saturates and the reference's int32 cast does not, see the conformance tests)."""
    x = np.array([7.05, 2.75, -4.65, 2.65, 0.85, 12.5, -31.7, 100.2], np.float32)
    inputs = {"x": x, "y_scale": np.array(scale, np.float32), "y_zero_point": np.array(0, np.int16)}
    check(runtime, *node_model("QuantizeLinear", inputs, 23, precision=precision), ort=False)


def test_quantize_attributes_saturate_and_axis_of_a_per_tensor_scale(runtime) -> None:
    inputs = {"x": floats((2, 3), 13), "y_scale": np.array([0.25], np.float32), "y_zero_point": np.array([9], np.uint8)}
    for saturate in (0, 1):
        check(runtime, *node_model("QuantizeLinear", inputs, 21, saturate=saturate, axis=5))


# ---- DequantizeLinear ------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [10, 13, 19, 21, 23, 25])
@pytest.mark.parametrize("x_type", [np.uint8, np.int8, np.int32])
def test_dequantize_per_tensor_at_every_opset(runtime, opset: int, x_type: Any) -> None:
    x = ints((3, 4), x_type, 14) // (1 if x_type is not np.int32 else 1000)
    inputs = {"x": x, "x_scale": np.array(0.0625, np.float32)}
    if x_type is not np.int32:
        inputs["x_zero_point"] = np.array(-3 if x_type is np.int8 else 200, x_type)
    check(runtime, *node_model("DequantizeLinear", inputs, opset), reference=opset >= 19)


@pytest.mark.parametrize("x_type", [np.int16, np.uint16])
def test_dequantize_16_bit_per_axis(runtime, x_type: Any) -> None:
    inputs = {"x": ints((2, 3, 4), x_type, 15), "x_scale": positive((3,), 16),
              "x_zero_point": ints((3,), x_type, 17) // 2}
    check(runtime, *node_model("DequantizeLinear", inputs, 21, axis=1))


@pytest.mark.parametrize("shape, axis, block_size", [((1, 4, 3, 2), 1, 2), ((3, 7), 1, 3), ((5, 2), 0, 5)])
def test_dequantize_blocked(runtime, shape: tuple[int, ...], axis: int, block_size: int) -> None:
    scale_shape = list(shape)
    scale_shape[axis] = -(-shape[axis] // block_size)
    inputs = {"x": ints(shape, np.uint8, 18), "x_scale": positive(tuple(scale_shape), 19),
              "x_zero_point": ints(tuple(scale_shape), np.uint8, 20)}
    check(runtime, *node_model("DequantizeLinear", inputs, 21, axis=axis, block_size=block_size))


@pytest.mark.parametrize("scale_type, output_dtype, opset", [
    (np.float16, None, 19), (np.float32, TP.FLOAT16, 23), (np.float16, TP.FLOAT, 23), (np.float32, TP.BFLOAT16, 25)])
def test_dequantize_scale_and_output_types(runtime, scale_type: Any, output_dtype: int | None, opset: int) -> None:
    inputs = {"x": ints((4, 5), np.int8, 21), "x_scale": positive((), 22, scale_type, high=300.0),
              "x_zero_point": np.array(5, np.int8)}
    attrs = {"output_dtype": output_dtype} if output_dtype is not None else {}
    check(runtime, *node_model("DequantizeLinear", inputs, opset, **attrs), ort=output_dtype != TP.BFLOAT16)


# ---- DynamicQuantizeLinear --------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["random", "positive", "negative", "zeros", "large"])
def test_dynamic_quantize(runtime, case: str) -> None:
    x = {"random": floats((3, 7), 23, 2.0), "positive": np.abs(floats((5,), 24)),
         "negative": -np.abs(floats((2, 3, 2), 25)), "zeros": np.zeros((4,), np.float32),
         "large": floats((6,), 26, 1e6)}[case]
    model, feeds = node_model("DynamicQuantizeLinear", {"x": x}, 11, outputs=("y", "y_scale", "y_zero_point"))
    # all zeros: onnxruntime's scale is 1, ONNX's reference's (and plugnn's) 1 / 255
    check(runtime, model, feeds, ort=case != "zeros")


# ---- QLinearConv, ConvInteger ------------------------------------------------------------------------


def qlinear_conv_inputs(x_shape: tuple[int, ...], w_shape: tuple[int, ...], x_type: Any, w_type: Any, y_type: Any,
                        per_channel: bool, bias: bool, seed: int) -> dict[str, np.ndarray]:
    o = w_shape[0]
    n = o if per_channel else 1
    inputs = {"x": ints(x_shape, x_type, seed), "x_scale": np.array(0.0037, np.float32),
              "x_zero_point": np.array(132 if x_type is np.uint8 else -5, x_type), "w": weight_ints(w_shape, w_type, seed + 1, x_type),
              "w_scale": positive((n,), seed + 2, low=0.001, high=0.004),
              "w_zero_point": np.zeros((n,), w_type) if w_type is np.int8 else ints((n,), w_type, seed + 3),
              "y_scale": np.array(0.06, np.float32), "y_zero_point": np.array(10 if y_type is np.uint8 else -3, y_type)}
    if bias:
        inputs["B"] = np.random.default_rng(seed + 4).integers(-20000, 20000, (o,)).astype(np.int32)
    return inputs


@pytest.mark.parametrize("x_type, w_type, y_type", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                                    (np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.uint8)])
@pytest.mark.parametrize("per_channel, bias", [(False, False), (True, True)])
def test_qlinear_conv(runtime, x_type: Any, w_type: Any, y_type: Any, per_channel: bool, bias: bool) -> None:
    inputs = qlinear_conv_inputs((2, 4, 7, 6), (6, 2, 3, 3), x_type, w_type, y_type, per_channel, bias, 30)
    model, feeds = node_model("QLinearConv", inputs, 10, pads=[1, 0, 1, 2], strides=[1, 2], group=2,
                              dilations=[2, 1], kernel_shape=[3, 3])
    # onnxruntime has no int8 x with uint8 w
    check(runtime, model, feeds, ort=not (x_type is np.int8 and w_type is np.uint8))


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((1, 3, 10), (4, 3, 3), {"strides": [2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), {"pads": [0, 1, 1, 1, 0, 0]}),
    ((1, 3, 5, 5), (2, 3, 2, 2), {"auto_pad": "VALID"}),
])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_1d_3d_and_auto_pad(runtime, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                         attrs: dict[str, Any], per_channel: bool) -> None:
    """ONNX's reference expands a per-channel w_scale for 2-D only (it broadcasts wrongly or
    fails for 1-D and 3-D): those are compared with onnxruntime alone."""
    inputs = qlinear_conv_inputs(x_shape, w_shape, np.uint8, np.int8, np.uint8, per_channel, True, 40)
    check(runtime, *node_model("QLinearConv", inputs, 10, **attrs), reference=not per_channel or len(x_shape) == 4)


@pytest.mark.parametrize("zero_points", ["none", "x", "both", "per channel"])
def test_conv_integer(runtime, zero_points: str) -> None:
    inputs = {"x": ints((1, 3, 6, 6), np.uint8, 50), "w": ints((4, 3, 3, 3), np.uint8, 51)}
    if zero_points != "none":
        inputs["x_zero_point"] = np.array(128, np.uint8)
    if zero_points == "both":
        inputs["w_zero_point"] = np.array(100, np.uint8)
    if zero_points == "per channel":
        inputs["w_zero_point"] = ints((4,), np.uint8, 52)
    model, feeds = node_model("ConvInteger", inputs, 10, pads=[1, 1, 0, 0], strides=[1, 2])
    check(runtime, model, feeds, ort=zero_points != "per channel")  # onnxruntime: per-tensor w_zero_point only


def test_conv_integer_int8(runtime) -> None:
    inputs = {"x": ints((2, 2, 5), np.int8, 53), "w": ints((3, 2, 2), np.int8, 54),
              "x_zero_point": np.array(-4, np.int8), "w_zero_point": np.array(2, np.int8)}
    check(runtime, *node_model("ConvInteger", inputs, 10, dilations=[2]))


# ---- QLinearMatMul, MatMulInteger --------------------------------------------------------------------


@pytest.mark.parametrize("a_shape, b_shape, b_param", [((2, 4), (4, 3), (1,)), ((2, 2, 4), (2, 4, 3), (1,)),
                                                       ((3, 4), (4, 5), (5,)), ((2, 3, 4), (4, 5), (1, 5))])
@pytest.mark.parametrize("scale_type, opset", [(np.float32, 10), (np.float16, 21)])
@pytest.mark.parametrize("types", [(np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8),
                                   (np.uint8, np.int8, np.int8)])
def test_qlinear_matmul(runtime, a_shape: tuple[int, ...], b_shape: tuple[int, ...], b_param: tuple[int, ...],
                        scale_type: Any, opset: int, types: tuple[Any, Any, Any]) -> None:
    a_type, b_type, y_type = types
    inputs = {"a": ints(a_shape, a_type, 60), "a_scale": np.array([0.0066], scale_type),
              "a_zero_point": np.array([7], a_type), "b": ints(b_shape, b_type, 61),
              "b_scale": positive(b_param, 62, scale_type, 0.004, 0.009),
              "b_zero_point": np.zeros(b_param, b_type) if b_type is np.int8 else ints(b_param, b_type, 63) // 2,
              "y_scale": np.array([0.0107], scale_type), "y_zero_point": np.array([3], y_type)}
    # onnxruntime: one type for a, b and y; per-column b parameters only for int8 b with zero zero
    # points and float32 scales
    ort = a_type is b_type is y_type and (b_param == (1,) or (b_type is np.int8 and scale_type is np.float32))
    check(runtime, *node_model("QLinearMatMul", inputs, opset), ort=ort)


def test_qlinear_matmul_per_row_a(runtime) -> None:
    """ONNX's per-row form of a 2-D a ([M] vectors) gives what the [M, 1] form gives (which ONNX's
    reference computes; it broadcasts an [M] vector along K instead)."""
    a, b = ints((3, 4), np.uint8, 64), ints((4, 2), np.int8, 65)
    inputs = {"a": a, "a_scale": positive((3,), 66, low=0.002, high=0.01), "a_zero_point": ints((3,), np.uint8, 67),
              "b": b, "b_scale": np.array(0.006, np.float32), "b_zero_point": np.array(1, np.int8),
              "y_scale": np.array(0.02, np.float32), "y_zero_point": np.array(100, np.uint8)}
    model, feeds = node_model("QLinearMatMul", inputs, 10)
    got = run_plugnn(runtime, model, feeds)
    column = {**inputs, "a_scale": inputs["a_scale"].reshape(3, 1), "a_zero_point": inputs["a_zero_point"].reshape(3, 1)}
    assert_bits(got, run_reference(*node_model("QLinearMatMul", column, 10)), "the [M, 1] form")


@pytest.mark.parametrize("a_shape, b_shape, a_param, b_param", [
    ((4, 3), (3, 2), (), ()), ((4, 3), (3, 2), (1,), (2,)), ((2, 4, 3), (2, 3, 5), (2, 4, 1), (2, 1, 5)),
    ((3,), (3, 4), (), (4,)), ((2, 3), (3,), (2, 1), ())])
@pytest.mark.parametrize("types", [(np.uint8, np.uint8), (np.int8, np.uint8), (np.uint8, np.int8)])
def test_matmul_integer(runtime, a_shape: tuple[int, ...], b_shape: tuple[int, ...], a_param: tuple[int, ...],
                        b_param: tuple[int, ...], types: tuple[Any, Any]) -> None:
    a_type, b_type = types
    inputs = {"A": ints(a_shape, a_type, 70), "B": ints(b_shape, b_type, 71), "a_zero_point": ints(a_param, a_type, 72),
              "b_zero_point": ints(b_param, b_type, 73)}
    # onnxruntime: a scalar a_zero_point only
    check(runtime, *node_model("MatMulInteger", inputs, 10), ort=int(np.prod(a_param)) == 1)


def test_matmul_integer_without_zero_points_and_per_row(runtime) -> None:
    a, b = ints((3, 4), np.uint8, 74), ints((4, 2), np.uint8, 75)
    check(runtime, *node_model("MatMulInteger", {"A": a, "B": b}, 10))
    row = ints((3,), np.uint8, 76)
    got = run_plugnn(runtime, *node_model("MatMulInteger", {"A": a, "B": b, "a_zero_point": row}, 10))
    expected = (a.astype(np.int32) - row.reshape(3, 1)) @ b.astype(np.int32)
    np.testing.assert_array_equal(got["y"], expected)


# ---- folds --------------------------------------------------------------------------------------------


FOLDED = [
    ("QuantizeLinear", {"x": floats((3, 4), 80), "y_scale": positive((4,), 81), "y_zero_point": ints((4,), np.int8, 82)},
     {"axis": 1}, 13, ("y",)),
    ("QuantizeLinear", {"x": floats((3, 4), 83), "y_scale": positive((3, 2), 84)},
     {"axis": 1, "block_size": 2, "output_dtype": TP.INT16}, 21, ("y",)),
    ("QuantizeLinear", {"x": floats((5,), 85, dtype=np.float16), "y_scale": np.array(0.3, np.float16)}, {}, 19, ("y",)),
    ("QuantizeLinear", {"x": np.array([7.05, 2.75, -4.65], np.float32), "y_scale": np.array(0.1, np.float32)},
     {"precision": TP.INT32}, 23, ("y",)),
    ("DequantizeLinear", {"x": ints((2, 6), np.uint8, 86), "x_scale": positive((2, 2), 87),
                          "x_zero_point": ints((2, 2), np.uint8, 88)}, {"axis": 1, "block_size": 3}, 21, ("y",)),
    ("DequantizeLinear", {"x": ints((4,), np.int32, 89) // 7, "x_scale": np.array(0.001, np.float32)}, {}, 13, ("y",)),
    ("DequantizeLinear", {"x": ints((4,), np.int16, 90), "x_scale": np.array(0.5, np.float16)},
     {"output_dtype": TP.FLOAT}, 23, ("y",)),
    ("DynamicQuantizeLinear", {"x": floats((2, 5), 91, 3.0)}, {}, 11, ("y", "y_scale", "y_zero_point")),
    ("ConvInteger", {"x": ints((1, 2, 4, 4), np.uint8, 92), "w": ints((3, 2, 2, 2), np.uint8, 93),
                     "x_zero_point": np.array(9, np.uint8), "w_zero_point": ints((3,), np.uint8, 94)},
     {"pads": [1, 0, 0, 1], "group": 1}, 10, ("y",)),
    ("QLinearConv", qlinear_conv_inputs((1, 4, 5, 5), (6, 2, 3, 3), np.uint8, np.int8, np.uint8, True, True, 95),
     {"group": 2, "strides": [2, 1]}, 10, ("y",)),
    ("MatMulInteger", {"A": ints((2, 3, 4), np.int8, 96), "B": ints((4, 2), np.uint8, 97),
                       "a_zero_point": ints((2, 3, 1), np.int8, 98), "b_zero_point": ints((2,), np.uint8, 99)},
     {}, 10, ("y",)),
    ("QLinearMatMul", {"a": ints((2, 3), np.uint8, 100), "a_scale": positive((2,), 101, np.float16, 0.002, 0.01),
                       "a_zero_point": ints((2,), np.uint8, 102), "b": ints((3, 4), np.int8, 103),
                       "b_scale": positive((4,), 104, np.float16, 0.002, 0.01), "b_zero_point": ints((4,), np.int8, 105),
                       "y_scale": np.array(0.01, np.float16), "y_zero_point": np.array(128, np.uint8)}, {}, 21,
     ("y",)),
]


@pytest.mark.parametrize("op, inputs, attrs, opset, outputs", FOLDED, ids=[f"{f[0]}-{i}" for i, f in enumerate(FOLDED)])
def test_known_inputs_are_folded(runtime, op: str, inputs: dict[str, np.ndarray], attrs: dict[str, Any], opset: int,
                                 outputs: tuple[str, ...]) -> None:
    """Every input an initializer: the node is a constant of the network (no layer), with the
    values the layer computes from the same inputs given at run time."""
    layer_model, feeds = node_model(op, inputs, opset, outputs=outputs, **attrs)
    as_layer = run_plugnn(runtime, layer_model, feeds)
    folded_model, _ = node_model(op, inputs, opset, constant=tuple(inputs), outputs=outputs, **attrs)
    assert kinds(folded_model) == []
    assert_bits(run_plugnn(runtime, folded_model, {}), as_layer, "folded")


# ---- import errors --------------------------------------------------------------------------------------


def error_of(model: Any) -> str:
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(model)
    return str(info.value)


def test_float8_and_4_bit_types_are_refused_naming_them() -> None:
    from onnx import numpy_helper

    x = helper.make_tensor_value_info("x", TP.FLOAT, [4])
    zero = helper.make_tensor("z", TP.FLOAT8E4M3FN, [], [0.0])
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q8")
    graph = helper.make_graph([node], "g", [x], [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(np.array(1.0, np.float32), "s"), zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    assert "node 'q8' (#0, QuantizeLinear): input 2 (y_zero_point) 'z' is float8_e4m3fn: the 8-, 6- and 4-bit " \
           "float types are out of plugnn's scope" in error_of(model)
    x4 = helper.make_tensor_value_info("x", TP.INT4, [4])
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq4")
    graph = helper.make_graph([node], "g", [x4], [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(np.array(1.0, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    assert "input 0 (x) 'x' is int4: 4- and 2-bit integers are out of plugnn's scope" in error_of(model)
    model, _ = node_model("QuantizeLinear", {"x": floats((2,), 1), "y_scale": np.array(1.0, np.float32)}, 21,
                          output_dtype=TP.FLOAT8E5M2)
    assert "attribute 'output_dtype' = 19 is float8e5m2: the 8-, 6- and 4-bit float types" in error_of(model)


@pytest.mark.parametrize("op, inputs, opset, attrs, message", [
    ("QuantizeLinear", {"x": np.zeros((2, 3), np.float32), "y_scale": np.array([1.0, 2.0], np.float32),
                        "y_zero_point": np.array([0, 0], np.uint8)}, 13, {"axis": 1},
     "per axis 1 it is \\(3,\\)"),
    ("QuantizeLinear", {"x": np.zeros((2, 3), np.float32), "y_scale": np.array(1.0, np.float32)}, 10, {"axis": 1},
     "attribute 'axis' is QuantizeLinear's from opset 13; the model's opset is 10"),
    ("QuantizeLinear", {"x": np.zeros((2, 4), np.float32), "y_scale": np.ones((2, 2), np.float32)}, 19,
     {"block_size": 2}, "attribute 'block_size' is QuantizeLinear's from opset 21"),
    ("QuantizeLinear", {"x": np.zeros((2,), np.float32), "y_scale": np.array(1.0, np.float32)}, 21,
     {"precision": TP.FLOAT16}, "attribute 'precision' is QuantizeLinear's from opset 23"),
    ("QuantizeLinear", {"x": np.zeros((2, 4), np.float32), "y_scale": np.ones((2, 2), np.float32)}, 21,
     {"block_size": -1}, "attribute 'block_size' = -1 is not supported"),
    ("QuantizeLinear", {"x": np.zeros((2,), np.float32), "y_scale": np.array(1.0, np.float32),
                        "y_zero_point": np.array(0, np.uint8)}, 21, {"output_dtype": TP.INT8},
     "attribute 'output_dtype' is int8 but y_zero_point is uint8"),
    ("QuantizeLinear", {"x": np.zeros((2,), np.float32), "y_scale": np.array(1.0, np.float32)}, 21, {"saturate": 2},
     "attribute 'saturate' = 2 is not supported"),
    ("QuantizeLinear", {"x": np.zeros((2,), np.float32), "y_scale": np.array(1.0, np.float32),
                        "y_zero_point": np.array(0, np.int16)}, 19, {}, "int16, which QuantizeLinear takes from opset 21"),
    ("QuantizeLinear", {"x": np.zeros((2,), np.float64), "y_scale": np.array(1.0, np.float32)}, 21, {},
     "input 0 \\(x\\) is float64; QuantizeLinear takes float16, bfloat16, float32, int32"),
    ("QuantizeLinear", {"x": np.zeros((2,), np.float32), "y_scale": np.array(1.0, np.float32)}, 23,
     {"precision": TP.INT8}, "attribute 'precision' = '3 \\(int8\\)' is not supported"),
    ("DequantizeLinear", {"x": np.zeros((2,), np.uint8), "x_scale": np.array(1.0, np.float32),
                          "x_zero_point": np.array(0, np.int8)}, 13, {}, "x_zero_point\\) is int8 but x is uint8"),
    ("DequantizeLinear", {"x": np.zeros((2,), np.uint8), "x_scale": np.array(1.0, np.int32)}, 21, {},
     "input 1 \\(x_scale\\) is int32; DequantizeLinear takes float16, bfloat16, float32"),
    ("DequantizeLinear", {"x": np.zeros((2, 4), np.uint8), "x_scale": np.ones((2, 3), np.float32)}, 21,
     {"axis": 1, "block_size": 2}, "a scale blocked along axis 1 by 2 has shape"),
    ("DynamicQuantizeLinear", {"x": np.zeros((2,), np.float16)}, 11, {}, "input 0 \\(x\\) is float16"),
    ("QLinearConv", {"x": np.zeros((1, 1, 3, 3), np.uint8), "x_scale": np.array(1.0, np.float32),
                     "x_zero_point": np.array(0, np.uint8), "w": np.zeros((1, 1, 2, 2), np.uint8),
                     "w_scale": np.array(1.0, np.float32), "w_zero_point": np.array(0, np.uint8),
                     "y_scale": np.array(1.0, np.float32)}, 10, {}, "QLinearConv takes 8 inputs"),
    ("QLinearConv", qlinear_conv_inputs((1, 2, 3, 3), (2, 2, 2, 2), np.uint8, np.int8, np.uint8, False, False, 1), 10,
     {"kernel_shape": [3, 3]}, "attribute 'kernel_shape' = \\[3, 3\\] is not supported"),
    ("QLinearConv", {**qlinear_conv_inputs((1, 2, 3, 3), (2, 2, 2, 2), np.uint8, np.int8, np.uint8, False, False, 1),
                     "y_scale": np.array(1.0, np.float16)}, 10, {}, "y_scale\\) is float16; QLinearConv takes float32"),
    ("ConvInteger", {"x": np.zeros((1, 1, 3, 3), np.uint8), "w": np.zeros((1, 1, 2, 2), np.float32)}, 10, {},
     "input 1 \\(w\\) is float32; ConvInteger takes int8, uint8"),
    ("ConvInteger", {"x": np.zeros((1, 1, 3, 3), np.uint8), "w": np.zeros((2, 1, 2, 2), np.uint8),
                     "x_zero_point": np.array(0, np.uint8), "w_zero_point": np.zeros((3,), np.uint8)}, 10, {},
     "w_zero_point must hold one element or be \\(2,\\), got \\(3,\\)"),
    ("QLinearMatMul", {"a": np.zeros((2, 3), np.uint8), "a_scale": np.array(1.0, np.float32),
                       "a_zero_point": np.array(0, np.uint8), "b": np.zeros((3, 2), np.uint8),
                       "b_scale": np.array(1.0, np.float16), "b_zero_point": np.array(0, np.uint8),
                       "y_scale": np.array(1.0, np.float32), "y_zero_point": np.array(0, np.uint8)}, 21, {},
     "b_scale\\) is float16 but input 1 \\(a_scale\\) is float32; the scales have one type"),
    ("QLinearMatMul", {"a": np.zeros((2, 3), np.uint8), "a_scale": np.array(1.0, np.float16),
                       "a_zero_point": np.array(0, np.uint8), "b": np.zeros((3, 2), np.uint8),
                       "b_scale": np.array(1.0, np.float16), "b_zero_point": np.array(0, np.uint8),
                       "y_scale": np.array(1.0, np.float16), "y_zero_point": np.array(0, np.uint8)}, 10, {},
     "float16, which QLinearMatMul takes from opset 21"),
    ("MatMulInteger", {"A": np.zeros((2, 3), np.uint8), "B": np.zeros((4, 2), np.uint8)}, 10, {},
     "inner dimensions differ"),
    ("MatMulInteger", {"A": np.zeros((2, 3), np.uint8), "B": np.zeros((3, 2), np.uint8),
                       "a_zero_point": np.zeros((3, 3), np.uint8)}, 10, {},
     "a_zero_point \\(3, 3\\) must broadcast to a's \\(2, 3\\)"),
])
def test_import_errors_name_the_node_and_the_fault(op: str, inputs: dict[str, np.ndarray], opset: int,
                                                   attrs: dict[str, Any], message: str) -> None:
    import re

    model, _ = node_model(op, inputs, opset, **attrs)
    text = error_of(model)
    assert f"node '{op.lower()}_node'" in text and op in text, text
    assert re.search(message, text), text
