"""SELECT (ONNX Where) on every element type with broadcasting, and CAST between every pair of
element types (backend_api.h, pn_cast_desc), then every malformed layer refused, and CpuRef's
refusal of quantized tensors in the kinds that compute values.

Select's oracle is np.where (elements are copied, so compared exactly). Cast's oracle is exact:
integers with Python ints, float targets by rounding the exact source value (a Fraction) to the
target's precision once, ties to even; results are compared bit for bit (NaN with NaN).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from plugnn.descriptors import CastDescriptor, LayerKind
from plugnn.tensor import DataType

from . import elementtypes as et
from .conftest import assert_refused, layer_spec, run_layer, shape_id

T = DataType

# ---- SELECT ------------------------------------------------------------------------------------

SELECT_SHAPES = [
    ((), (), ()),
    ((4,), (4,), (4,)),
    ((2, 3), (3,), ()),
    ((2, 1), (1, 3), (2, 3)),
    ((), (2, 3), (2, 1)),
    ((1, 4, 1), (3, 1, 2), (1, 1)),
    ((2, 1, 1, 1, 1, 1, 1, 3), (4, 1), ()),
    ((0, 3), (1, 3), (3,)),
    ((2,), (0, 2), (2,)),
]


@pytest.mark.parametrize("dtype", et.ALL_TYPES, ids=et.type_id)
def test_select_every_type(backend, dtype: DataType) -> None:
    rng = np.random.default_rng(501)
    condition = et.random(T.BOOL, (2, 3, 4), rng)
    a, b = et.random(dtype, (3, 1), rng), et.random(dtype, (2, 1, 4), rng)
    spec = layer_spec(LayerKind.SELECT, None, [condition, a, b], (2, 3, 4), dtypes=[T.BOOL, dtype, dtype],
                      output_dtype=dtype, name=f"select_{dtype.numpy_name}")
    (y,) = run_layer(backend, spec, [condition, a, b])
    np.testing.assert_array_equal(y, np.where(condition, a, b), err_msg=str(spec))


@pytest.mark.parametrize("shapes", SELECT_SHAPES, ids=lambda s: "+".join(shape_id(x) for x in s))
def test_select_broadcasting(backend, shapes) -> None:
    rng = np.random.default_rng(502)
    condition = et.random(T.BOOL, shapes[0], rng)
    a, b = et.random(T.FLOAT32, shapes[1], rng), et.random(T.FLOAT32, shapes[2], rng)
    out = np.broadcast_shapes(*shapes)
    spec = layer_spec(LayerKind.SELECT, None, [condition, a, b], out, dtypes=[T.BOOL, T.FLOAT32, T.FLOAT32])
    (y,) = run_layer(backend, spec, [condition, a, b])
    np.testing.assert_array_equal(y, np.where(condition, a, b), err_msg=str(spec))


def test_select_keeps_nan_payloads_and_signed_zeros(backend) -> None:
    condition = np.array([True, False, True, False])
    a = np.array([np.nan, 1.0, -0.0, 2.0], np.float32)
    b = np.array([3.0, -0.0, 4.0, np.inf], np.float32)
    spec = layer_spec(LayerKind.SELECT, None, [condition, a, b], (4,), dtypes=[T.BOOL, T.FLOAT32, T.FLOAT32])
    (y,) = run_layer(backend, spec, [condition, a, b])
    np.testing.assert_array_equal(y.view(np.uint32), np.where(condition, a, b).view(np.uint32))


@pytest.mark.parametrize("inputs, dtypes, output, output_dtype, reason", [
    pytest.param([(4,), (4,), (4,)], [T.INT8, T.FLOAT32, T.FLOAT32], (4,), T.FLOAT32, "condition",
                 id="int8 condition"),
    pytest.param([(4,), (4,), (4,)], [T.FLOAT32] * 3, (4,), T.FLOAT32, "condition", id="float condition"),
    pytest.param([(4,), (4,), (4,)], [T.BOOL, T.FLOAT32, T.FLOAT16], (4,), T.FLOAT32, "input 2 is float16",
                 id="a and b of two types"),
    pytest.param([(4,), (4,), (4,)], [T.BOOL, T.INT32, T.INT32], (4,), T.INT64, "output 0 is int64",
                 id="output of another type"),
    pytest.param([(4,), (3,), (4,)], [T.BOOL, T.FLOAT32, T.FLOAT32], (4,), T.FLOAT32, "broadcast",
                 id="shapes do not broadcast"),
    pytest.param([(4,), (4,), (4,)], [T.BOOL, T.FLOAT32, T.FLOAT32], (1, 4), T.FLOAT32, "output",
                 id="output is not the broadcast"),
    pytest.param([(4,), (4,)], [T.BOOL, T.FLOAT32], (4,), T.FLOAT32, "takes 3 input", id="two inputs"),
])
def test_malformed_select_is_refused(backend, inputs, dtypes, output, output_dtype, reason: str) -> None:
    spec = layer_spec(LayerKind.SELECT, None, inputs, output, dtypes=dtypes, output_dtype=output_dtype)
    assert_refused(backend, spec, reason)


# ---- CAST --------------------------------------------------------------------------------------

# (significand bits, lowest normal exponent, highest exponent) of each float type
FORMATS = {T.FLOAT16: (11, -14, 15), T.BFLOAT16: (8, -126, 127), T.FLOAT32: (24, -126, 127),
           T.FLOAT64: (53, -1022, 1023)}


def largest_finite(dtype: DataType) -> float:
    p, _, emax = FORMATS[dtype]
    return float((2 - Fraction(1, 2 ** (p - 1))) * Fraction(2) ** emax)


def round_to(value: Fraction, dtype: DataType, saturate: bool = False) -> float:
    """The float of `dtype` nearest to `value` (ties to even), an infinity beyond the range (or
    with `saturate` the largest finite value of that sign)."""
    if value == 0:
        return 0.0
    p, emin, emax = FORMATS[dtype]
    sign, q = (-1.0 if value < 0 else 1.0), abs(value)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    rounded = round(q / ulp) * ulp  # Fraction rounding: ties to even
    if rounded >= Fraction(2) ** (emax + 1):
        return sign * (largest_finite(dtype) if saturate else math.inf)
    return sign * float(rounded)


def cast_reference(x: np.ndarray, source: DataType, target: DataType, saturate: bool = False) -> np.ndarray:
    """ONNX Cast of every element, exactly (float to integer: truncation of in-range values)."""
    results = []
    for v in x.reshape(-1).tolist() if source is not T.BFLOAT16 else et.float64(x).reshape(-1).tolist():
        if target is T.BOOL:
            results.append(v != 0)  # NaN is non-zero
        elif isinstance(v, float) and (not math.isfinite(v) or v == 0):
            results.append(v)  # infinities, NaN and signed zeros stay (to float targets)
        elif target.is_float:
            results.append(round_to(Fraction(v), target, saturate))
        else:
            results.append(et.wrap(int(v), target))  # int() truncates toward zero
    return np.array(results, dtype=object).astype(target.numpy_dtype).reshape(x.shape)


def cast_input(source: DataType, target: DataType, rng: np.random.Generator) -> np.ndarray:
    """Values of `source` that `target` defines: floats with fractions, within the integer
    target's range (ONNX leaves the rest unspecified); integers over their whole range."""
    if source is T.BOOL:
        return et.random(T.BOOL, (24,), rng)
    if source.is_float and target.is_integer:
        low, high = et.limits(target)
        bound = min(high, 60000)
        x = rng.uniform(max(low, -bound), bound, 24)
        return np.concatenate([x, [0.0, -0.0, 0.5, -0.5, 0.99, -0.99]]).astype(source.numpy_dtype)
    if source.is_float:
        x = np.concatenate([rng.standard_normal(16) * 3, rng.standard_normal(4) * 1e4, [0.0, -0.0, 1e-6, 70000.0]])
        with np.errstate(over="ignore"):  # 70000 is infinite in float16
            return x.astype(source.numpy_dtype)
    return np.concatenate([et.random(source, (20,), rng), np.array(et.limits(source) + (0, 1), dtype=object)
                           .astype(source.numpy_dtype)])


def _cast_spec(x: np.ndarray, source: DataType, target: DataType, saturate: bool = False) -> object:
    return layer_spec(LayerKind.CAST, CastDescriptor(saturate), [x], x.shape, dtypes=[source], output_dtype=target,
                      name=f"cast_{source.numpy_name}_to_{target.numpy_name}")


def assert_same(y: np.ndarray, expected: np.ndarray, spec: object) -> None:
    """Equal element for element; NaN matches NaN; a zero's sign counts."""
    assert y.dtype == expected.dtype, f"{spec}: type {y.dtype}, expected {expected.dtype}"
    if y.dtype.kind == "f" or y.dtype.name == "bfloat16":
        y64, e64 = et.float64(y), et.float64(expected)
        same = (y64 == e64) & (np.signbit(y64) == np.signbit(e64)) | (np.isnan(y64) & np.isnan(e64))
        assert same.all(), f"{spec}: at {np.flatnonzero(~same)[:5]} got {y64[~same][:5]}, expected {e64[~same][:5]}"
    else:
        np.testing.assert_array_equal(y, expected, err_msg=str(spec))


@pytest.mark.parametrize("target", et.ALL_TYPES, ids=et.type_id)
@pytest.mark.parametrize("source", et.ALL_TYPES, ids=et.type_id)
def test_cast_every_pair(backend, source: DataType, target: DataType) -> None:
    x = cast_input(source, target, np.random.default_rng(503))
    spec = _cast_spec(x, source, target)
    (y,) = run_layer(backend, spec, [x])
    assert_same(y, cast_reference(x, source, target), spec)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1, 2, 3, 4, 1, 1, 1, 2)], ids=shape_id)
def test_cast_shapes(backend, shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(504).standard_normal(shape).astype(np.float32)
    spec = _cast_spec(x, T.FLOAT32, T.FLOAT16)
    (y,) = run_layer(backend, spec, [x])
    assert_same(y, cast_reference(x, T.FLOAT32, T.FLOAT16), spec)


# Values whose conversion through a rounded intermediate would differ from rounding once.
ROUND_ONCE = [
    (T.FLOAT64, T.FLOAT16, [1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40), 2048 + 1 + 2**-30]),
    (T.FLOAT64, T.BFLOAT16, [1 + 2**-8 + 2**-40, 3 * 2**100 + 2**93 + 2**60]),
    (T.INT64, T.BFLOAT16, [2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), 2**62 - 1]),
    (T.UINT64, T.FLOAT32, [2**64 - 1, 2**63 + 2**39 + 1, 2**40 + 2**16 + 1]),
    (T.INT64, T.FLOAT16, [65519, 65520, -65520, 2**62, 2049]),
    (T.FLOAT32, T.FLOAT16, [65519.0, 65520.0, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, -6.1035156e-05]),
]


@pytest.mark.parametrize("source, target, values", ROUND_ONCE,
                         ids=[f"{s.numpy_name}-{t.numpy_name}" for s, t, _ in ROUND_ONCE])
def test_cast_rounds_once(backend, source: DataType, target: DataType, values: list) -> None:
    x = np.array(values, dtype=object).astype(source.numpy_dtype)
    spec = _cast_spec(x, source, target)
    (y,) = run_layer(backend, spec, [x])
    assert_same(y, cast_reference(x, source, target), spec)


SATURATE_CASES = [
    (T.FLOAT32, T.FLOAT16, [70000.0, -1e5, 65519.0, 65520.0, 1.0, np.inf, -np.inf, np.nan]),
    (T.FLOAT64, T.FLOAT32, [1e300, -1e300, 3.4028235e38, 1.0, np.inf, np.nan]),
    (T.FLOAT64, T.BFLOAT16, [3.5e38, -1e39, 3.3e38, np.inf]),
    (T.INT32, T.FLOAT16, [100000, -70000, 65504, 7]),
    (T.FLOAT32, T.INT8, [3.7, -3.7, 100.0, -128.0]),
]


@pytest.mark.parametrize("saturate", [False, True], ids=["plain", "saturate"])
@pytest.mark.parametrize("source, target, values", SATURATE_CASES,
                         ids=[f"{s.numpy_name}-{t.numpy_name}" for s, t, _ in SATURATE_CASES])
def test_cast_saturate(backend, source: DataType, target: DataType, values: list, saturate: bool) -> None:
    x = np.array(values).astype(source.numpy_dtype)
    spec = _cast_spec(x, source, target, saturate)
    (y,) = run_layer(backend, spec, [x])
    assert_same(y, cast_reference(x, source, target, saturate), spec)


def test_cast_to_bool_and_back(backend) -> None:
    x = np.array([0.0, -0.0, np.nan, np.inf, 1e-40, -2.0], np.float32)
    (y,) = run_layer(backend, _cast_spec(x, T.FLOAT32, T.BOOL), [x])
    np.testing.assert_array_equal(y, [False, False, True, True, True, True])
    (z,) = run_layer(backend, _cast_spec(y, T.BOOL, T.FLOAT16), [y])
    np.testing.assert_array_equal(z, np.array([0, 0, 1, 1, 1, 1], np.float16))


@pytest.mark.parametrize("desc, inputs, output, reason", [
    pytest.param(CastDescriptor(), [(2, 3)], (3, 2), "output has shape", id="output shape differs"),
    pytest.param(CastDescriptor(), [(2, 3), (2, 3)], (2, 3), "takes 1 input", id="two inputs"),
    pytest.param(CastDescriptor(), [], (2, 3), "takes 1 input", id="no input"),
    pytest.param(et.broken(CastDescriptor(), saturate=2), [(2, 3)], (2, 3), "saturate must be 0 or 1",
                 id="saturate 2"),
])
def test_malformed_cast_is_refused(backend, desc: CastDescriptor, inputs, output, reason: str) -> None:
    spec = layer_spec(LayerKind.CAST, desc, inputs, output, output_dtype=T.INT32)
    assert_refused(backend, spec, reason)
