"""ONNX elementwise operators (unary, binary, comparisons, logic, bitwise, Where, Cast, the
activations, MatMul) on every element type ONNX allows, at the opsets where their attributes and
types changed: run on CpuRef against onnxruntime (or, where onnxruntime has no kernel for the
type or opset, onnx.reference.ReferenceEvaluator); the same nodes with every input known at
import folded with NumPy (no layer computes them) and compared the same way; shape chains
folded; and every import error, naming node, operator and attribute.

Tolerances: integers and bools exactly; float32 rtol 1e-5 / atol 1e-6 (onnxruntime computes
float32 functions in float32), float16 and bfloat16 rtol 4e-3 / 8e-3 (one rounding plus
onnxruntime's own), float64 rtol 1e-10.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn import BackendError
from plugnn.descriptors import LayerKind
from plugnn.errors import ModelError
from plugnn.network import GraphKind

N = helper.make_node
R = np.random.default_rng(17)
BF16 = np.dtype(ml_dtypes.bfloat16)


def floats(*shape: int, lo: float = -3.0, hi: float = 3.0, dtype: Any = np.float32) -> np.ndarray:
    return R.uniform(lo, hi, shape).astype(dtype)


def ints(dtype: Any, *shape: int, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return R.integers(lo, hi, shape, dtype=np.int64 if dtype != np.uint64 else np.uint64, endpoint=True).astype(dtype)


def bools(*shape: int) -> np.ndarray:
    return R.integers(0, 2, shape).astype(bool)


def specials(dtype: Any = np.float32) -> np.ndarray:
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 0.5, 3.0], dtype)


def case(id: str, op: str, arrays: list[np.ndarray], opset: int = 17, **attrs: Any) -> Any:
    return pytest.param(op, arrays, opset, attrs, id=id)


# Cases whose oracle is ONNX's reference implementation instead of onnxruntime: onnxruntime computes
# integer Pow through double (overflow saturates); ONNX's reference wraps, as NumPy and backend_api.h.
REFERENCE_ORACLE = {("Pow", np.dtype(np.int64))}


CASES = [
    # -- unary: floats ------------------------------------------------------------------------------
    *[case(f"{op.lower()}-float32", op, [floats(3, 4, lo=lo, hi=hi)], 13) for op, lo, hi in [
        ("Sqrt", 0.0, 9.0), ("Exp", -5.0, 5.0), ("Log", 0.05, 9.0), ("Reciprocal", 0.2, 5.0), ("Sin", -4.0, 4.0),
        ("Cos", -4.0, 4.0), ("Tan", -1.4, 1.4), ("Asin", -0.99, 0.99), ("Acos", -0.99, 0.99), ("Atan", -9.0, 9.0),
        ("Sinh", -4.0, 4.0), ("Cosh", -4.0, 4.0), ("Asinh", -9.0, 9.0), ("Acosh", 1.0, 9.0), ("Atanh", -0.95, 0.95),
        ("Floor", -9.0, 9.0), ("Ceil", -9.0, 9.0), ("Erf", -3.0, 3.0), ("Abs", -9.0, 9.0), ("Neg", -9.0, 9.0),
        ("Sign", -2.0, 2.0)]],
    case("round-halves-to-even", "Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 7.0], np.float32)], 11),
    case("sqrt-float16", "Sqrt", [floats(2, 5, lo=0.0, hi=100.0, dtype=np.float16)], 13),
    case("exp-float64", "Exp", [floats(2, 5, lo=-20.0, hi=20.0, dtype=np.float64)], 13),
    case("cos-bfloat16", "Cos", [floats(2, 5, dtype=BF16)], 13),
    case("erf-int32-opset9", "Erf", [ints(np.int32, 6, lo=-3, hi=3)], 9),
    case("log-specials", "Log", [specials()], 13),
    case("floor-specials-float16", "Floor", [specials(np.float16)], 13),
    # -- unary: integers and bool -----------------------------------------------------------------
    case("abs-int8", "Abs", [np.array([-128, -1, 0, 5, 127], np.int8)], 13),
    case("abs-uint16", "Abs", [ints(np.uint16, 6)], 13),
    case("neg-int64", "Neg", [ints(np.int64, 2, 3)], 13),
    case("sign-int16", "Sign", [ints(np.int16, 8)], 13),
    case("sign-uint8", "Sign", [ints(np.uint8, 8, lo=0, hi=3)], 13),
    case("bitwisenot-uint16", "BitwiseNot", [ints(np.uint16, 2, 3)], 18),
    case("bitwisenot-int32", "BitwiseNot", [ints(np.int32, 2, 3)], 18),
    case("not-opset7", "Not", [bools(3, 4)], 7),
    case("not-opset13", "Not", [bools(2, 3, 1)], 13),
    case("isnan", "IsNaN", [specials()], 13),
    case("isnan-float16", "IsNaN", [specials(np.float16)], 20),
    case("isinf", "IsInf", [specials()], 10),
    case("isinf-positive-only", "IsInf", [specials(np.float64)], 10, detect_negative=0),
    case("isinf-negative-only", "IsInf", [specials()], 20, detect_positive=0),
    case("isinf-neither", "IsInf", [specials()], 20, detect_positive=0, detect_negative=0),
    # -- binary arithmetic --------------------------------------------------------------------------
    case("add-int8-wraps", "Add", [ints(np.int8, 2, 3), ints(np.int8, 3)], 14),
    case("sub-uint16-wraps", "Sub", [ints(np.uint16, 4), ints(np.uint16, 4)], 14),
    case("mul-int64", "Mul", [ints(np.int64, 3, 1, lo=-1000, hi=1000), ints(np.int64, 4, lo=-1000, hi=1000)], 13),
    case("div-int32-truncates", "Div", [np.array([7, -7, 7, -7, 0, 100], np.int32),
                                        np.array([2, 2, -2, -2, 5, 7], np.int32)], 13),
    case("div-uint8", "Div", [ints(np.uint8, 6), ints(np.uint8, 6, lo=1)], 14),
    case("div-float16", "Div", [floats(2, 3, dtype=np.float16), floats(3, lo=0.5, hi=2.0, dtype=np.float16)], 13),
    case("add-float64", "Add", [floats(2, 3, dtype=np.float64), floats(1, dtype=np.float64)], 13),
    case("mul-bfloat16", "Mul", [floats(4, dtype=BF16), floats(4, dtype=BF16)], 13),
    case("add-opset7", "Add", [floats(2, 3), floats(3)], 7),
    case("pow-float32", "Pow", [floats(5, lo=0.1, hi=3.0), floats(5, lo=-2.0, hi=2.0)], 13),
    case("pow-int32", "Pow", [ints(np.int32, 6, lo=-5, hi=5), ints(np.int32, 6, lo=0, hi=9)], 13),
    case("pow-int64-wraps", "Pow", [np.array([3, -3, 7], np.int64), np.array([41, 41, 23], np.int64)], 13),
    case("pow-float32-int64", "Pow", [floats(5, lo=0.1, hi=3.0), ints(np.int64, 5, lo=-3, hi=3)], 15),
    case("pow-int64-float32", "Pow", [ints(np.int64, 5, lo=1, hi=6), floats(5, lo=0.0, hi=3.0)], 15),
    case("pow-int32-int64", "Pow", [ints(np.int32, 5, lo=-4, hi=4), ints(np.int64, 5, lo=0, hi=7)], 15),
    case("pow-float16-float32", "Pow", [floats(4, lo=0.5, hi=2.0, dtype=np.float16), floats(4, lo=-2.0, hi=2.0)], 15),
    case("max-int8", "Max", [ints(np.int8, 2, 3), ints(np.int8, 3), ints(np.int8, 1)], 13),
    case("min-uint32", "Min", [ints(np.uint32, 4), ints(np.uint32, 4)], 13),
    case("max-one-input", "Max", [floats(3)], 13),
    case("sum-float64", "Sum", [floats(2, 3, dtype=np.float64), floats(3, dtype=np.float64)], 13),
    case("sum-opset7", "Sum", [floats(2, 3), floats(2, 3), floats(2, 3)], 7),
    case("mean-float16", "Mean", [floats(2, 3, dtype=np.float16), floats(2, 1, dtype=np.float16)], 13),
    case("prelu-int32", "PRelu", [ints(np.int32, 2, 3, lo=-100, hi=100), ints(np.int32, 3, lo=-5, hi=5)], 16),
    case("prelu-uint64", "PRelu", [ints(np.uint64, 4), ints(np.uint64, 4)], 16),
    case("prelu-float64", "PRelu", [floats(2, 3, dtype=np.float64), floats(3, dtype=np.float64)], 16),
    case("relu-int8", "Relu", [ints(np.int8, 2, 4)], 14),
    case("relu-float64", "Relu", [floats(2, 4, dtype=np.float64)], 14),
    case("matmul-int32", "MatMul", [ints(np.int32, 2, 3, 4, lo=-50, hi=50), ints(np.int32, 4, 5, lo=-50, hi=50)], 13),
    case("matmul-int64-wraps", "MatMul", [ints(np.int64, 3, 4), ints(np.int64, 4)], 13),
    case("matmul-uint32", "MatMul", [ints(np.uint32, 4), ints(np.uint32, 4, 2)], 13),
    case("matmul-float64", "MatMul", [floats(2, 3, 4, dtype=np.float64), floats(1, 4, 2, dtype=np.float64)], 13),
    case("matmul-float16", "MatMul", [floats(3, 8, dtype=np.float16), floats(8, 2, dtype=np.float16)], 13),
    # -- Clip ---------------------------------------------------------------------------------------
    case("clip-opset7-attrs", "Clip", [floats(3, 4)], 7, min=-0.5, max=0.7),
    case("clip-int32", "Clip", [ints(np.int32, 3, 4, lo=-20, hi=20), np.array(-5, np.int32), np.array(6, np.int32)],
         13),
    case("clip-uint8-min-only", "Clip", [ints(np.uint8, 6), np.array(100, np.uint8)], 12),
    case("clip-float64", "Clip", [floats(6, dtype=np.float64), np.array(-0.1, np.float64),
                                  np.array(0.3, np.float64)], 13),
    case("clip-float16", "Clip", [floats(6, dtype=np.float16), np.array(-1, np.float16),
                                  np.array(1.5, np.float16)], 13),
    # -- comparisons, logic, bitwise ---------------------------------------------------------------------
    case("equal-bool", "Equal", [bools(2, 3), bools(3)], 13),
    case("equal-int64", "Equal", [ints(np.int64, 6, lo=0, hi=3), ints(np.int64, 6, lo=0, hi=3)], 13),
    case("equal-float32-nan", "Equal", [specials(), specials()[::-1].copy()], 13),
    case("less-uint8", "Less", [ints(np.uint8, 2, 4), ints(np.uint8, 4)], 13),
    case("less-opset7", "Less", [floats(2, 3), floats(3)], 7),
    case("lessorequal-float32", "LessOrEqual", [np.array([1, 2, 3, np.nan], np.float32),
                                                 np.array([2, 2, 2, 1], np.float32)], 12),
    case("greater-float16", "Greater", [floats(3, 1, dtype=np.float16), floats(4, dtype=np.float16)], 13),
    case("greaterorequal-int16", "GreaterOrEqual", [ints(np.int16, 5, lo=-3, hi=3), ints(np.int16, 5, lo=-3, hi=3)],
         16),
    case("and", "And", [bools(2, 3, 4), bools(3, 4)], 7),
    case("or", "Or", [bools(2, 1), bools(1, 5)], 7),
    case("xor", "Xor", [bools(4), bools(4)], 7),
    case("bitwiseand-int32", "BitwiseAnd", [ints(np.int32, 2, 3), ints(np.int32, 3)], 18),
    case("bitwiseor-uint8", "BitwiseOr", [ints(np.uint8, 4), ints(np.uint8, 4)], 18),
    case("bitwisexor-int64", "BitwiseXor", [ints(np.int64, 4), ints(np.int64, 1)], 18),
    case("bitshift-left-uint8", "BitShift", [ints(np.uint8, 6), ints(np.uint8, 6, lo=0, hi=9)], 11, direction="LEFT"),
    case("bitshift-right-uint32", "BitShift", [ints(np.uint32, 6), ints(np.uint32, 6, lo=0, hi=35)], 11,
         direction="RIGHT"),
    case("bitshift-right-int8-opset28", "BitShift", [np.array([-128, -7, 7, 100, -1, 5], np.int8),
                                                     np.array([1, 2, 9, -1, 3, 8], np.int8)], 28, direction="RIGHT"),
    case("bitshift-left-int16-opset28", "BitShift", [ints(np.int16, 6), ints(np.int16, 6, lo=-2, hi=18)], 28,
         direction="LEFT"),
    case("mod-int32", "Mod", [np.array([7, -7, 7, -7, 0], np.int32), np.array([3, 3, -3, -3, 4], np.int32)], 13),
    case("mod-int64-fmod", "Mod", [np.array([7, -7, 7, -7], np.int64), np.array([3, 3, -3, -3], np.int64)], 13, fmod=1),
    case("mod-float32-fmod", "Mod", [floats(6), floats(6, lo=0.5, hi=2.0)], 13, fmod=1),
    case("mod-float64-opset28", "Mod", [np.array([5.5, -5.5, 0.0, -0.0, 3.0, np.inf], np.float64),
                                        np.array([2.0, 2.0, -2.0, 2.0, np.inf, 2.0], np.float64)], 28),
    case("mod-uint16-opset10", "Mod", [ints(np.uint16, 5), ints(np.uint16, 5, lo=1)], 10),
    case("where-float32", "Where", [bools(2, 3), floats(3), floats(2, 1)], 9),
    case("where-int64", "Where", [bools(4), ints(np.int64, 4), ints(np.int64, 1)], 16),
    case("where-bool", "Where", [bools(3), bools(3), bools(3)], 16),
    # -- Cast, CastLike -------------------------------------------------------------------------------------
    case("cast-float32-int32", "Cast", [floats(8, lo=-100, hi=100)], 13, to=TensorProto.INT32),
    case("cast-float64-float16", "Cast", [floats(8, lo=-100, hi=100, dtype=np.float64)], 13, to=TensorProto.FLOAT16),
    case("cast-int64-float32", "Cast", [ints(np.int64, 8)], 13, to=TensorProto.FLOAT),
    case("cast-float32-bool", "Cast", [np.array([0.0, -0.0, 1.5, np.nan], np.float32)], 13, to=TensorProto.BOOL),
    case("cast-bool-float32", "Cast", [bools(5)], 13, to=TensorProto.FLOAT),
    case("cast-uint8-int8-wraps", "Cast", [ints(np.uint8, 8)], 13, to=TensorProto.INT8),
    case("cast-int32-uint64", "Cast", [ints(np.int32, 8)], 13, to=TensorProto.UINT64),
    case("cast-float32-bfloat16", "Cast", [floats(8)], 13, to=TensorProto.BFLOAT16),
    case("cast-same-type", "Cast", [floats(3)], 21, to=TensorProto.FLOAT),
    case("cast-saturate-attribute", "Cast", [floats(3, lo=-6e4, hi=6e4)], 21, to=TensorProto.FLOAT16, saturate=0),
    case("castlike-int32-float16", "CastLike", [ints(np.int32, 5, lo=-999, hi=999), np.zeros(1, np.float16)], 15),
    case("castlike-float64-uint8", "CastLike", [floats(5, lo=0, hi=200, dtype=np.float64), np.zeros(2, np.uint8)], 19),
    # -- activations ------------------------------------------------------------------------------------------
    case("gelu", "Gelu", [floats(3, 5)], 20),
    case("gelu-tanh", "Gelu", [floats(3, 5)], 20, approximate="tanh"),
    case("gelu-float16", "Gelu", [floats(6, dtype=np.float16)], 20),
    case("softplus", "Softplus", [floats(3, 4, lo=-30, hi=30)], 13),
    case("softplus-float64", "Softplus", [floats(4, dtype=np.float64)], 22),
    case("softsign", "Softsign", [floats(3, 4)], 13),
    case("mish", "Mish", [floats(3, 4)], 18),
    case("selu", "Selu", [floats(3, 4)], 13),
    case("selu-attributes", "Selu", [floats(3, 4)], 7, alpha=2.0, gamma=3.0),
    case("celu", "Celu", [floats(3, 4)], 12, alpha=2.0),
    case("celu-float64-opset28", "Celu", [floats(3, 4, dtype=np.float64)], 28),
    case("thresholdedrelu", "ThresholdedRelu", [floats(3, 4)], 10, alpha=0.5),
    case("shrink", "Shrink", [floats(3, 4)], 9, lambd=1.0, bias=0.5),
    case("shrink-int32", "Shrink", [ints(np.int32, 8, lo=-5, hi=5)], 9, lambd=1.5, bias=1.0),
    case("hardswish-float16", "HardSwish", [floats(6, lo=-5, hi=5, dtype=np.float16)], 14),
    case("leakyrelu-float64", "LeakyRelu", [floats(6, dtype=np.float64)], 16, alpha=0.3),
    case("elu-float16", "Elu", [floats(6, dtype=np.float16)], 13, alpha=0.5),
    case("sigmoid-float64", "Sigmoid", [floats(6, dtype=np.float64)], 13),
    case("tanh-float16", "Tanh", [floats(6, dtype=np.float16)], 13),
    case("hardsigmoid-float64", "HardSigmoid", [floats(6, dtype=np.float64)], 13, alpha=0.3, beta=0.4),
    case("identity-int8", "Identity", [ints(np.int8, 4)], 13),
    case("identity-bool", "Identity", [bools(4)], 13),
]


def node_model(op: str, arrays: list[np.ndarray], opset: int, attrs: dict[str, Any],
               as_initializers: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    names = [f"in{i}" for i in range(len(arrays))]
    node = N(op, names, ["y"], name=f"{op.lower()}_node", **attrs)
    if as_initializers:
        return make_model([node], {}, ["y"], dict(zip(names, arrays)), opset=opset), {}
    inputs = {n: (list(a.shape), helper.np_dtype_to_tensor_dtype(a.dtype)) for n, a in zip(names, arrays)}
    return make_model([node], inputs, ["y"], opset=opset), dict(zip(names, arrays))


def expected_outputs(model: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """onnxruntime's answer, or ONNX's reference implementation's where onnxruntime has no kernel
    for the node's type or opset (or REFERENCE_ORACLE says so)."""
    node = model.graph.node[0]
    first = np.asarray(next(iter(feeds.values())))
    if (node.op_type, first.dtype) in REFERENCE_ORACLE:
        return ReferenceEvaluator(model).run(None, feeds)[0]
    try:
        return run_ort(model, feeds)["y"]
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
        if not any(word in str(exc) for word in ("NOT_IMPLEMENTED", "not implemented", "opset", "Opset",
                                                  "INVALID_GRAPH", "type")):
            raise
    return ReferenceEvaluator(model).run(None, feeds)[0]


def assert_matches(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: type {got.dtype}, expected {expected.dtype}"
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    rtol = {np.dtype(np.float16): 4e-3, BF16: 8e-3, np.dtype(np.float64): 1e-10}.get(expected.dtype, 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                               atol=1e-6 if expected.dtype != np.float64 else 1e-12, err_msg=what)


@pytest.mark.parametrize("op, arrays, opset, attrs", CASES)
def test_operator_at_run_time(runtime: Any, op: str, arrays: list[np.ndarray], opset: int, attrs: dict) -> None:
    model, feeds = node_model(op, arrays, opset, attrs)
    expected = expected_outputs(model, feeds)
    assert_matches(run_plugnn(runtime, model, feeds)["y"], expected, f"{op} opset {opset}")


@pytest.mark.parametrize("op, arrays, opset, attrs", CASES)
def test_operator_of_known_values_folds(runtime: Any, op: str, arrays: list[np.ndarray], opset: int,
                                        attrs: dict) -> None:
    model, _ = node_model(op, arrays, opset, attrs, as_initializers=True)
    network = plugnn.onnx.load(model)
    computing = [layer.name for layer in network if layer.kind not in (GraphKind.CONSTANT, GraphKind.OUTPUT)]
    assert computing == [], f"{op} of constants was not folded: layers {computing}"
    expected = expected_outputs(*node_model(op, arrays, opset, attrs))
    assert_matches(run_plugnn(runtime, model, {})["y"], expected, f"{op} opset {opset} folded")


def test_erf_of_float64_has_double_precision(runtime: Any) -> None:
    """onnxruntime and ONNX's reference compute float64 Erf in float32 precision; the oracle here is
    Python's math.erf (double precision), at run time and folded."""
    x = floats(9, lo=-4.0, hi=4.0, dtype=np.float64)
    expected = np.array([math.erf(v) for v in x])
    for as_initializers in (False, True):
        model, feeds = node_model("Erf", [x], 13, {}, as_initializers)
        np.testing.assert_allclose(run_plugnn(runtime, model, feeds)["y"], expected, rtol=1e-14, atol=1e-15)


def test_shape_chain_folds_at_import(runtime: Any) -> None:
    """Shape -> Equal -> Where -> Reshape, as BERT/GPT-2 exports build a target shape: the chain
    becomes a constant, and only the Reshape is a layer."""
    nodes = [N("Shape", ["x"], ["s"]), N("Equal", ["pattern", "minus1"], ["is_minus1"]),
             N("Where", ["is_minus1", "s", "pattern"], ["target"]),
             N("Cast", ["target"], ["target_f"], to=TensorProto.FLOAT),
             N("Cast", ["target_f"], ["target_i"], to=TensorProto.INT64), N("Reshape", ["x", "target_i"], ["y"])]
    inits = {"pattern": np.array([-1, 4, 3], np.int64), "minus1": np.array(-1, np.int64)}
    model = make_model(nodes, {"x": [2, 3, 4]}, ["y"], inits, opset=17)
    network = plugnn.onnx.load(model)
    kinds = [layer.kind for layer in network if layer.kind is not GraphKind.CONSTANT]
    assert kinds == [GraphKind.INPUT, LayerKind.RESHAPE, GraphKind.OUTPUT]
    feeds = {"x": R.standard_normal((2, 3, 4)).astype(np.float32)}
    np.testing.assert_array_equal(run_plugnn(runtime, model, feeds)["y"], run_ort(model, feeds)["y"])


def test_integer_division_by_zero_fails_at_run_time(runtime: Any) -> None:
    model, _ = node_model("Div", [np.zeros(3, np.int32), np.zeros(3, np.int32)], 13, {})
    network = plugnn.onnx.load(model)
    with runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"])) as loaded:
        with pytest.raises(BackendError, match=r"div_node.*ElementwiseBinary: int32 integer division by zero "
                                               r"\(7 DIV 0\) at output element 1"):
            loaded.run({"in0": np.array([6, 7, 8], np.int32), "in1": np.array([2, 0, 1], np.int32)})


def test_clip_bounds_of_the_right_layers(runtime: Any) -> None:
    """Float bounds known at import give one BOUNDED_RELU; run-time bounds and integers MAXIMUM and
    MINIMUM layers."""
    def kinds(arrays: list, inputs: int) -> list:
        names = [f"in{i}" for i in range(len(arrays))]
        info = {n: (list(a.shape), helper.np_dtype_to_tensor_dtype(a.dtype)) for n, a in zip(names[:inputs], arrays)}
        inits = dict(zip(names[inputs:], arrays[inputs:]))
        model = make_model([N("Clip", names, ["y"])], info, ["y"], inits, opset=13)
        return [layer.kind for layer in plugnn.onnx.load(model) if isinstance(layer.kind, LayerKind)]

    bound = [floats(4), np.array(-1, np.float32), np.array(1, np.float32)]
    assert kinds(bound, 1) == [LayerKind.ACTIVATION]
    assert kinds(bound, 2) == [LayerKind.ELEMENTWISE_BINARY, LayerKind.ELEMENTWISE_BINARY]
    assert kinds([ints(np.int16, 4), np.array(-1, np.int16)], 1) == [LayerKind.ELEMENTWISE_BINARY]


# ---- errors ---------------------------------------------------------------------------------------------


def _load_error(nodes: list[Any], inputs: dict[str, Any], inits: dict[str, Any] | None = None,
                opset: int = 17) -> str:
    consumed = {i for node in nodes for i in node.input}
    outputs = [o for node in nodes for o in node.output if o and o not in consumed]
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(make_model(nodes, inputs, outputs, inits, opset=opset))
    return str(info.value)


I32, I64, F32, U8, BOOL = TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT, TensorProto.UINT8, TensorProto.BOOL
FLOAT_TYPES = "float16, bfloat16, float32, float64"


@pytest.mark.parametrize("nodes, inputs, inits, opset, message", [
    ([N("Sqrt", ["x"], ["y"], name="root")], {"x": ([2], I32)}, {}, 13,
     f"node 'root' (#0, Sqrt): input 0 (X) is int32; Sqrt takes {FLOAT_TYPES}"),
    ([N("Equal", ["x", "i"], ["y"])], {"x": [2], "i": ([2], I64)}, {}, 13,
     "node #0 (Equal, unnamed, output 'y'): input 1 (B) is int64 but input 0 (A) is float32; Equal takes one "
     "element type for them"),
    ([N("Less", ["b", "b"], ["y"])], {"b": ([2], BOOL)}, {}, 13, "input 0 (A) is bool; Less takes float16"),
    ([N("BitShift", ["u", "u"], ["y"])], {"u": ([2], U8)}, {}, 11, "attribute 'direction' is required"),
    ([N("BitShift", ["u", "u"], ["y"], direction="UP")], {"u": ([2], U8)}, {}, 11,
     "attribute 'direction' = 'UP' is not supported; supported: 'LEFT', 'RIGHT'"),
    ([N("BitShift", ["x", "x"], ["y"], direction="LEFT")], {"x": [2]}, {}, 11,
     "input 0 (X) is float32; BitShift takes int8, int16, int32, int64, uint8, uint16, uint32, uint64"),
    ([N("Mod", ["i", "i"], ["y"], fmod=2)], {"i": ([2], I32)}, {}, 13,
     "attribute 'fmod' = 2 is not supported; supported: 0 (the sign of the divisor), 1 (the sign of the dividend)"),
    ([N("Gelu", ["x"], ["y"], approximate="fast")], {"x": [2]}, {}, 20,
     "attribute 'approximate' = 'fast' is not supported; supported: 'none', 'tanh'"),
    ([N("Gelu", ["i"], ["y"])], {"i": ([2], I32)}, {}, 20, f"input 0 (X) is int32; Gelu takes {FLOAT_TYPES}"),
    ([N("Celu", ["x"], ["y"], alpha=0.0)], {"x": [2]}, {}, 12,
     "attribute 'alpha' = 0.0 is not supported; supported: a non-zero number (Celu divides by alpha)"),
    ([N("IsInf", ["x"], ["y"], detect_positive=2)], {"x": [2]}, {}, 10,
     "attribute 'detect_positive' = 2 is not supported; supported: 0, 1"),
    ([N("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E5M2)], {"x": [2]}, {}, 19,
     "attribute 'to' = 19 is float8e5m2: the 8-, 6- and 4-bit float types are out of plugnn's scope"),
    ([N("Cast", ["x"], ["y"], to=TensorProto.INT4)], {"x": [2]}, {}, 21,
     "attribute 'to' = 22 is int4: 4- and 2-bit integers are out of plugnn's scope"),
    ([N("Cast", ["x"], ["y"], to=TensorProto.STRING)], {"x": [2]}, {}, 13,
     "attribute 'to' = 8 is string; string tensors are run-time values, and the runtime casts to and from them; "
     "the runtime runs it (plugnn.dynamic)"),
    ([N("Cast", ["x"], ["y"])], {"x": [2]}, {}, 13, "attribute 'to' is required"),
    ([N("Cast", ["x"], ["y"], to=TensorProto.INT8, saturate=3)], {"x": [2]}, {}, 19,
     "attribute 'saturate' = 3 is not supported; supported: 0, 1"),
    ([N("Cast", ["x"], ["y"], to=TensorProto.INT8, round_mode="sideways")], {"x": [2]}, {}, 25,
     "attribute 'round_mode' = 'sideways' is not supported; supported: 'up', 'down', 'nearest'"),
    ([N("CastLike", ["x", "s"], ["y"])], {"x": [2], "s": ([1], TensorProto.STRING)}, {}, 15,
     "input 's' is a string tensor; string tensors are run-time values of plugnn's dynamic path"),
    ([N("Clip", ["x", "lo"], ["y"])], {"x": [3]}, {"lo": np.array([0.0, 1.0], np.float32)}, 13,
     "input 1 (min) must be a scalar, got shape [2]"),
    ([N("Clip", ["x", "lo"], ["y"])], {"x": [3]}, {"lo": np.array(0, np.int64)}, 13,
     "input 1 (min) is int64 but input 0 (input) is float32; Clip takes one element type for them"),
    ([N("Div", ["a", "b"], ["y"])], {}, {"a": np.array([4, 5], np.int32), "b": np.array([2, 0], np.int32)}, 13,
     "integer division by zero in a computation of values known at import time (Div of int32 [4, 5] by [2, 0])"),
    ([N("Pow", ["a", "b"], ["y"])], {}, {"a": np.array([4], np.int64), "b": np.array([-1], np.int64)}, 13,
     "integer power with a negative exponent in a computation of values known at import time"),
    ([N("Where", ["x", "x", "x"], ["y"])], {"x": [2]}, {}, 16, "input 0 (condition) is float32; Where takes bool"),
    ([N("Where", ["c", "x", "i"], ["y"])], {"c": ([2], BOOL), "x": [2], "i": ([2], I32)}, {}, 16,
     "input 2 (Y) is int32 but input 1 (X) is float32; Where takes one element type for them"),
    ([N("Not", ["x"], ["y"])], {"x": [2]}, {}, 13, "input 0 (X) is float32; Not takes bool"),
    ([N("Mean", ["i", "i"], ["y"])], {"i": ([2], I32)}, {}, 13, f"input 0 (data_0) is int32; Mean takes {FLOAT_TYPES}"),
    ([N("Relu", ["u"], ["y"])], {"u": ([2], U8)}, {}, 14,
     f"input 0 (X) is uint8; Relu takes {FLOAT_TYPES}, int8, int16, int32, int64"),
    ([N("Neg", ["u"], ["y"])], {"u": ([2], U8)}, {}, 13, "input 0 (X) is uint8; Neg takes"),
    ([N("MatMul", ["i", "x"], ["y"])], {"i": ([2, 2], I32), "x": [2, 2]}, {}, 13,
     "input 1 (B) is float32 but input 0 (A) is int32; MatMul takes one element type for them"),
    ([N("Shrink", ["x"], ["y"], lambda_=1.0)], {"x": [2]}, {}, 9,
     "attribute 'lambda_' is not supported by plugnn's Shrink import; supported attributes: bias, lambd"),
    ([N("Abs", ["b"], ["y"])], {"b": ([2], BOOL)}, {}, 13, "input 0 (X) is bool; Abs takes"),
])
def test_errors_name_node_operator_and_attribute(nodes, inputs, inits, opset, message) -> None:  # type: ignore[no-untyped-def]
    assert message in _load_error(nodes, inputs, inits, opset)


def test_every_operator_of_this_family_is_listed() -> None:
    family = {"Abs", "Neg", "Sign", "Reciprocal", "Sqrt", "Exp", "Log", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos",
              "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Floor", "Ceil", "Round", "IsNaN", "IsInf", "Not",
              "BitwiseNot", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
              "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift", "Mod", "Where", "Cast", "CastLike", "Gelu",
              "Softplus", "Softsign", "Mish", "Selu", "Celu", "ThresholdedRelu", "Shrink", "Add", "Sub", "Mul", "Div",
              "Pow", "Max", "Min", "Sum", "Mean", "PRelu", "Relu", "Sigmoid", "Tanh", "Elu", "LeakyRelu", "HardSigmoid",
              "HardSwish", "Clip", "Identity", "MatMul"}
    assert family <= set(plugnn.onnx.OPERATORS)


def test_cast_of_a_bfloat16_initializer(runtime: Any) -> None:
    """A bfloat16 initializer (ml_dtypes' type in NumPy) cast at run time and folded."""
    x = np.array([1.5, -2.25, 3e38, 0.1], BF16)
    tensor = numpy_helper.from_array(x, "b")
    model = make_model([N("Cast", ["b"], ["f"], to=TensorProto.FLOAT), N("Add", ["f", "x"], ["y"])], {"x": [4]},
                       ["y"])
    model.graph.initializer.append(tensor)
    feeds = {"x": np.ones(4, np.float32)}
    np.testing.assert_array_equal(run_plugnn(runtime, model, feeds)["y"], x.astype(np.float32) + 1)
