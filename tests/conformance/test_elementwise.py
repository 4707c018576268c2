"""ELEMENTWISE_BINARY and ELEMENTWISE_VARIADIC: NumPy broadcasting of every operation, on every
element type each operation takes (backend_api.h, pn_binary_op / pn_variadic_op).

Float oracles are NumPy in float64 on the values the typed inputs hold (np.broadcast_shapes
gives the output shape, the ufuncs the values), compared at the tolerance of one rounding of
the output type. Integer oracles are Python integers, exact, wrapped to the type's width, and
compared exactly; so are comparisons, logic and bitwise results.
"""

from __future__ import annotations

import numpy as np
import pytest

from plugnn import BackendError
from plugnn.descriptors import (
    ActivationDescriptor,
    BinaryOp,
    ElementwiseBinaryDescriptor,
    ElementwiseVariadicDescriptor,
    LayerKind,
    VariadicOp,
)
from plugnn.tensor import DataType

from . import elementtypes as et
from .conftest import ATOL, RTOL, assert_close, assert_refused, layer_spec, run_layer, shape_id
from .test_activation import activation_reference

B = BinaryOp
BINARY_REFERENCE = {
    B.ADD: np.add,
    B.SUB: np.subtract,
    B.MUL: np.multiply,
    B.DIV: np.divide,
    B.MAXIMUM: np.maximum,
    B.MINIMUM: np.minimum,
    B.POWER: np.power,
    B.PRELU: lambda a, b: np.where(a >= 0, a, a * b),
    B.MOD: np.mod,
    B.FMOD: np.fmod,
    B.EQUAL: np.equal,
    B.LESS: np.less,
    B.LESS_EQUAL: np.less_equal,
    B.GREATER: np.greater,
    B.GREATER_EQUAL: np.greater_equal,
}

VARIADIC_REFERENCE = {
    VariadicOp.SUM: lambda xs: np.sum(xs, axis=0),
    VariadicOp.MAXIMUM: lambda xs: np.max(xs, axis=0),
    VariadicOp.MINIMUM: lambda xs: np.min(xs, axis=0),
    VariadicOp.MEAN: lambda xs: np.mean(xs, axis=0),
}


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _shift(op: BinaryOp, width: int) -> object:
    def shift(a: int, b: int) -> int:
        if b < 0 or b >= width:
            return -1 if op is B.SHIFT_RIGHT and a < 0 else 0
        return a << b if op is B.SHIFT_LEFT else a >> b  # Python's >> is arithmetic

    return shift


def integer_reference(op: BinaryOp, dtype: DataType) -> object:
    """The header's integer semantics on Python ints (before wrapping)."""
    width = et.bits(dtype)
    return {
        B.ADD: lambda a, b: a + b,
        B.SUB: lambda a, b: a - b,
        B.MUL: lambda a, b: a * b,
        B.DIV: _trunc_div,
        B.MAXIMUM: max,
        B.MINIMUM: min,
        B.POWER: lambda a, b: pow(a, b, 1 << width),
        B.MOD: lambda a, b: a % b,  # Python's %: the sign of b
        B.FMOD: lambda a, b: a - _trunc_div(a, b) * b,
        B.EQUAL: lambda a, b: a == b,
        B.LESS: lambda a, b: a < b,
        B.LESS_EQUAL: lambda a, b: a <= b,
        B.GREATER: lambda a, b: a > b,
        B.GREATER_EQUAL: lambda a, b: a >= b,
        B.LOGICAL_AND: lambda a, b: bool(a) and bool(b),
        B.LOGICAL_OR: lambda a, b: bool(a) or bool(b),
        B.LOGICAL_XOR: lambda a, b: bool(a) != bool(b),
        B.BITWISE_AND: lambda a, b: a & b,
        B.BITWISE_OR: lambda a, b: a | b,
        B.BITWISE_XOR: lambda a, b: a ^ b,
        B.SHIFT_LEFT: _shift(B.SHIFT_LEFT, width),
        B.SHIFT_RIGHT: _shift(B.SHIFT_RIGHT, width),
    }[op]


COMPARISONS = (B.EQUAL, B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL)
ARITHMETIC = (B.ADD, B.SUB, B.MUL, B.DIV, B.MAXIMUM, B.MINIMUM, B.POWER, B.MOD, B.FMOD)


def binary_types(op: BinaryOp) -> tuple[DataType, ...]:
    """The element types of a and b the header gives `op`."""
    if op is B.PRELU:
        return et.FLOATS
    if op is B.EQUAL:
        return et.ALL_TYPES
    if op in (B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_XOR):
        return (DataType.BOOL,)
    if op in (B.BITWISE_AND, B.BITWISE_OR, B.BITWISE_XOR, B.SHIFT_LEFT, B.SHIFT_RIGHT):
        return et.INTEGERS
    return et.NUMERIC


def binary_out_type(op: BinaryOp, dtype: DataType) -> DataType:
    return DataType.BOOL if op in COMPARISONS else dtype


# (a shape, b shape): equal shapes, size-1 dims, missing leading dims, rank 0, empty dims.
SHAPE_PAIRS = [
    ((), ()),
    ((3,), ()),
    ((), (2, 3)),
    ((1,), (1,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 3), (2, 1)),
    ((1, 3), (2, 1)),
    ((2, 1, 4), (3, 1)),
    ((1,), (5, 1, 2)),
    ((4, 1, 3, 1), (2, 1, 5)),
    ((2, 1, 1, 1, 1, 1, 1, 3), (4, 1)),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
    ((0,), ()),
]


def binary_inputs(op: BinaryOp, shape_a: tuple[int, ...], shape_b: tuple[int, ...],
                  dtype: DataType = DataType.FLOAT32, seed: int = 301) -> tuple[np.ndarray, np.ndarray]:
    """Inputs that exercise `op` on `dtype` where it is defined: positive float bases for POWER,
    no zero integer divisors, exponents >= 0 for integer POWER, shift amounts around the width."""
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        a = et.random(dtype, shape_a, rng)
        b = et.random(dtype, shape_b, rng)
        if op is B.POWER:
            a = (np.abs(a.astype(np.float64)) + 0.1).astype(dtype.numpy_dtype)  # real powers of positive bases
            b = et.random(dtype, shape_b, rng, -3.0, 3.0)
        if op in (B.DIV, B.MOD, B.FMOD):  # no near-zero divisors
            b64 = b.astype(np.float64)
            b = np.where(np.abs(b64) < 0.1, 0.5, b64).astype(dtype.numpy_dtype)
        return a, b
    if dtype is DataType.BOOL:
        return et.random(dtype, shape_a, rng), et.random(dtype, shape_b, rng)
    a = et.random(dtype, shape_a, rng)
    b = et.random(dtype, shape_b, rng)
    if op is B.POWER:
        a = et.random(dtype, shape_a, rng, -6, 6)
        b = et.random(dtype, shape_b, rng, 0, 2 * et.bits(dtype))  # large enough to wrap
    elif op in (B.SHIFT_LEFT, B.SHIFT_RIGHT):
        b = et.random(dtype, shape_b, rng, -3, et.bits(dtype) + 3)
    elif op in (B.DIV, B.MOD, B.FMOD):  # small divisors (every other one) and large ones, never 0
        small = et.random(dtype, shape_b, rng, -9, 9)
        b = np.where(np.arange(b.size).reshape(b.shape) % 2 == 0, small, b)
        b = np.where(b == 0, 3, b).astype(dtype.numpy_dtype)
    return a, b


def binary_reference(desc: ElementwiseBinaryDescriptor, a: np.ndarray, b: np.ndarray,
                     dtype: DataType = DataType.FLOAT32) -> np.ndarray:
    if not dtype.is_float:
        return et.integer_oracle(integer_reference(desc.op, dtype), [a, b], dtype, binary_out_type(desc.op, dtype))
    with np.errstate(all="ignore"):
        out = BINARY_REFERENCE[desc.op](et.float64(a), et.float64(b))
    if desc.op in COMPARISONS:
        return out
    return activation_reference(desc.fused_activation, out)


def check_binary(y: np.ndarray, expected: np.ndarray, dtype: DataType, spec: object) -> None:
    if y.dtype == bool or not dtype.is_float:
        assert y.dtype == expected.dtype, f"{spec}: output type {y.dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(y, expected, err_msg=str(spec))
    else:
        assert_close(y, expected, *et.tolerance(dtype), spec)


FLOAT_OPS = [op for op in BinaryOp if DataType.FLOAT32 in binary_types(op)]


@pytest.mark.parametrize("shape_a, shape_b", SHAPE_PAIRS, ids=shape_id)
@pytest.mark.parametrize("op", FLOAT_OPS, ids=lambda op: op.name.lower())
def test_binary(backend, op: BinaryOp, shape_a, shape_b) -> None:
    a, b = binary_inputs(op, shape_a, shape_b)
    desc = ElementwiseBinaryDescriptor(op)
    out_shape = np.broadcast_shapes(shape_a, shape_b)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], out_shape,
                      name=f"{op.name.lower()}{list(shape_a)}{list(shape_b)}",
                      output_dtype=binary_out_type(op, DataType.FLOAT32))
    (y,) = run_layer(backend, spec, [a, b])
    check_binary(y, binary_reference(desc, a, b), DataType.FLOAT32, spec)


TYPED_SHAPES = [((2, 3, 4), (3, 1)), ((), (5,)), ((4, 1), (1, 3))]


@pytest.mark.parametrize("shape_a, shape_b", TYPED_SHAPES, ids=shape_id)
@pytest.mark.parametrize("op, dtype", [(op, t) for op in BinaryOp for t in binary_types(op)],
                         ids=lambda v: v.name.lower() if isinstance(v, BinaryOp) else et.type_id(v))
def test_binary_types(backend, op: BinaryOp, dtype: DataType, shape_a, shape_b) -> None:
    a, b = binary_inputs(op, shape_a, shape_b, dtype, seed=311)
    desc = ElementwiseBinaryDescriptor(op)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], np.broadcast_shapes(shape_a, shape_b),
                      name=f"{op.name.lower()}_{dtype.numpy_name}", dtypes=[dtype, dtype],
                      output_dtype=binary_out_type(op, dtype))
    (y,) = run_layer(backend, spec, [a, b])
    check_binary(y, binary_reference(desc, a, b, dtype), dtype, spec)


@pytest.mark.parametrize("shape_a, shape_b", SHAPE_PAIRS, ids=shape_id)
@pytest.mark.parametrize("op, dtype", [(B.MUL, DataType.INT32), (B.SHIFT_RIGHT, DataType.INT16),
                                       (B.LOGICAL_XOR, DataType.BOOL), (B.LESS, DataType.UINT8)],
                         ids=lambda v: v.name.lower() if isinstance(v, BinaryOp) else et.type_id(v))
def test_binary_broadcasting_of_other_types(backend, op: BinaryOp, dtype: DataType, shape_a, shape_b) -> None:
    a, b = binary_inputs(op, shape_a, shape_b, dtype, seed=312)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [a, b],
                      np.broadcast_shapes(shape_a, shape_b), dtypes=[dtype, dtype],
                      output_dtype=binary_out_type(op, dtype))
    (y,) = run_layer(backend, spec, [a, b])
    check_binary(y, binary_reference(spec.descriptor, a, b, dtype), dtype, spec)


def _run_pair(backend, op: BinaryOp, dtype: DataType, a: list, b: list) -> tuple[np.ndarray, np.ndarray]:
    a_array = np.array(a, dtype=object).astype(dtype.numpy_dtype)
    b_array = np.array(b, dtype=object).astype(dtype.numpy_dtype)
    desc = ElementwiseBinaryDescriptor(op)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a_array, b_array], a_array.shape,
                      name=f"{op.name.lower()}_{dtype.numpy_name}_edges", dtypes=[dtype, dtype],
                      output_dtype=binary_out_type(op, dtype))
    (y,) = run_layer(backend, spec, [a_array, b_array])
    return y, binary_reference(desc, a_array, b_array, dtype)


@pytest.mark.parametrize("dtype", et.SIGNED, ids=et.type_id)
@pytest.mark.parametrize("op", [B.DIV, B.MOD, B.FMOD, B.MUL, B.ADD, B.SUB], ids=lambda op: op.name.lower())
def test_signed_integer_edges_wrap(backend, op: BinaryOp, dtype: DataType) -> None:
    """The lowest value divided by -1 gives itself (its MOD/FMOD 0); signs of MOD and FMOD;
    overflow wraps."""
    low, high = et.limits(dtype)
    a = [low, low, high, -7, 7, -7, 7, low, high, -1]
    b = [-1, 1, -1, 2, -2, -2, 2, low, high, low]
    y, expected = _run_pair(backend, op, dtype, a, b)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", et.INTEGERS, ids=et.type_id)
@pytest.mark.parametrize("op", [B.SHIFT_LEFT, B.SHIFT_RIGHT], ids=lambda op: op.name.lower())
def test_shifts_by_the_width_or_more(backend, op: BinaryOp, dtype: DataType) -> None:
    low, high = et.limits(dtype)
    width = et.bits(dtype)
    a = [1, high, low, low, -1 if et.is_signed(dtype) else high, 5, 5, high]
    b = [width - 1, width, width, 1, width + 7, 0, -1 if et.is_signed(dtype) else width * 3, 1]
    y, expected = _run_pair(backend, op, dtype, a, b)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", et.INTEGERS, ids=et.type_id)
@pytest.mark.parametrize("op", [B.DIV, B.MOD, B.FMOD], ids=lambda op: op.name.lower())
def test_integer_division_by_zero_fails_at_execute(backend, op: BinaryOp, dtype: DataType) -> None:
    a = np.array([4, 5, 6], dtype=dtype.numpy_dtype)
    b = np.array([2, 0, 3], dtype=dtype.numpy_dtype)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [a, b], (3,),
                      dtypes=[dtype, dtype], output_dtype=dtype)
    with pytest.raises(BackendError, match=r"ElementwiseBinary: .*division by zero.* element 1"):
        run_layer(backend, spec, [a, b])


@pytest.mark.parametrize("dtype", et.SIGNED, ids=et.type_id)
def test_negative_integer_exponent_fails_at_execute(backend, dtype: DataType) -> None:
    a = np.array([2, 3], dtype=dtype.numpy_dtype)
    b = np.array([1, -2], dtype=dtype.numpy_dtype)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor("power"), [a, b], (2,),
                      dtypes=[dtype, dtype], output_dtype=dtype)
    with pytest.raises(BackendError, match=r"ElementwiseBinary: .*POWER with a negative exponent"):
        run_layer(backend, spec, [a, b])


@pytest.mark.parametrize("dtype", et.FLOATS, ids=et.type_id)
@pytest.mark.parametrize("op", [B.MOD, B.FMOD], ids=lambda op: op.name.lower())
def test_float_remainder_edge_cases(backend, op: BinaryOp, dtype: DataType) -> None:
    """ONNX Mod's special cases: signed zeros, infinities, NaN, zero divisors (NumPy's mod/fmod)."""
    inf, nan = np.inf, np.nan
    a = [0.0, -0.0, 0.0, -0.0, inf, -inf, 3.0, -3.0, 3.0, -3.0, nan, 3.0, 5.5, -5.5, 5.5, -5.5, 2.0]
    b = [2.0, 2.0, -2.0, -2.0, 2.0, 2.0, inf, inf, -inf, -inf, 2.0, nan, 2.0, 2.0, -2.0, -2.0, 0.0]
    y, expected = _run_pair(backend, op, dtype, a, b)
    assert_close(y, expected, 0.0, 0.0, f"{op.name} on {dtype.numpy_name}")
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(y.astype(np.float64))[zeros], np.signbit(expected)[zeros],
                                  err_msg="signs of zero results")


@pytest.mark.parametrize("dtype", et.FLOATS, ids=et.type_id)
@pytest.mark.parametrize("op", COMPARISONS, ids=lambda op: op.name.lower())
def test_comparisons_with_nan_and_infinities(backend, op: BinaryOp, dtype: DataType) -> None:
    inf, nan = np.inf, np.nan
    a = [nan, nan, 1.0, inf, -inf, inf, 0.0, -0.0]
    b = [nan, 1.0, nan, inf, inf, 1.0, -0.0, 0.0]
    y, expected = _run_pair(backend, op, dtype, a, b)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", et.FLOATS, ids=et.type_id)
@pytest.mark.parametrize("op", [B.DIV, B.POWER, B.SUB, B.MAXIMUM], ids=lambda op: op.name.lower())
def test_float_infinities_and_nan(backend, op: BinaryOp, dtype: DataType) -> None:
    inf, nan = np.inf, np.nan
    a = [1.0, -1.0, 0.0, inf, inf, nan, 2.0, 0.0, -8.0]
    b = [0.0, 0.0, 0.0, inf, 2.0, 1.0, nan, -1.0, 1.0 / 3.0]
    y, expected = _run_pair(backend, op, dtype, a, b)
    assert_close(y, expected, *et.tolerance(dtype), f"{op.name} on {dtype.numpy_name}")


FUSED = [
    ActivationDescriptor("relu"),
    ActivationDescriptor("bounded_relu", alpha=-0.5, beta=0.5),
    ActivationDescriptor("sigmoid"),
    ActivationDescriptor("linear", alpha=2.0, beta=1.0),
]


@pytest.mark.parametrize("act", FUSED, ids=lambda act: act.kind.name.lower())
@pytest.mark.parametrize("op", [BinaryOp.ADD, BinaryOp.MUL, BinaryOp.SUB, BinaryOp.PRELU],
                         ids=lambda op: op.name.lower())
def test_binary_with_fused_activation(backend, op: BinaryOp, act: ActivationDescriptor) -> None:
    a, b = binary_inputs(op, (2, 3, 4), (3, 1))
    desc = ElementwiseBinaryDescriptor(op, fused_activation=act)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], (2, 3, 4), name=f"{op.name.lower()}+act")
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, binary_reference(desc, a, b), RTOL, ATOL, spec)


@pytest.mark.parametrize("op", [BinaryOp.MAXIMUM, BinaryOp.MINIMUM, BinaryOp.ADD],
                         ids=lambda op: op.name.lower())
def test_binary_propagates_nan(backend, op: BinaryOp) -> None:
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([0.0, np.nan, 1.0, np.nan], np.float32)
    desc = ElementwiseBinaryDescriptor(op)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], (4,), name=f"{op.name.lower()}_nan")
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, binary_reference(desc, a, b), RTOL, ATOL, spec)


@pytest.mark.parametrize("dtype", et.FLOATS, ids=et.type_id)
def test_fused_activation_on_every_float_type(backend, dtype: DataType) -> None:
    a, b = binary_inputs(B.ADD, (2, 3, 4), (4,), dtype, seed=313)
    desc = ElementwiseBinaryDescriptor("add", fused_activation=ActivationDescriptor("gelu"))
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], (2, 3, 4), dtypes=[dtype, dtype],
                      output_dtype=dtype)
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, binary_reference(desc, a, b, dtype), *et.tolerance(dtype), spec)


def test_prelu_with_per_channel_slope(backend) -> None:
    rng = np.random.default_rng(302)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1, 1)
    desc = ElementwiseBinaryDescriptor("prelu")
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [x, slope], x.shape, name="prelu_channels", constants=[1])
    (y,) = run_layer(backend, spec, [x, slope])
    assert_close(y, binary_reference(desc, x, slope), RTOL, ATOL, spec)


VARIADIC_SHAPES = [
    [(3,)],
    [(2, 3)],
    [(2, 3), (3,)],
    [(), ()],
    [(2, 1, 4), (3, 1), ()],
    [(2, 1, 4), (3, 1), (), (1, 3, 4)],
    [(2, 2)] * 4,
    [(0, 2), (1, 2)],
    [(1,), (4, 1), (1, 5)],
]


@pytest.mark.parametrize("shapes", VARIADIC_SHAPES, ids=shape_id)
@pytest.mark.parametrize("op", list(VariadicOp), ids=lambda op: op.name.lower())
def test_variadic(backend, op: VariadicOp, shapes) -> None:
    rng = np.random.default_rng(303)
    xs = [np.asarray(rng.standard_normal(shape), np.float32) for shape in shapes]
    out_shape = np.broadcast_shapes(*shapes)
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), xs, out_shape,
                      name=f"{op.name.lower()}x{len(xs)}")
    (y,) = run_layer(backend, spec, xs)
    expected = VARIADIC_REFERENCE[op](np.broadcast_arrays(*[x.astype(np.float64) for x in xs]))
    assert_close(y, expected, RTOL, ATOL, spec)


def variadic_integer_reference(op: VariadicOp) -> object:
    return {VariadicOp.SUM: lambda *v: sum(v), VariadicOp.MAXIMUM: max, VariadicOp.MINIMUM: min}[op]


@pytest.mark.parametrize("op, dtype", [(op, t) for op in VariadicOp for t in et.NUMERIC
                                       if t.is_float or op is not VariadicOp.MEAN],  # MEAN: floats
                         ids=lambda v: v.name.lower() if isinstance(v, VariadicOp) else et.type_id(v))
def test_variadic_types(backend, op: VariadicOp, dtype: DataType) -> None:
    rng = np.random.default_rng(304)
    shapes = [(2, 1, 4), (3, 1), (), (1, 3, 4)]
    xs = [et.random(dtype, shape, rng) for shape in shapes]
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), xs, (2, 3, 4),
                      name=f"{op.name.lower()}_{dtype.numpy_name}", dtypes=[dtype] * len(xs), output_dtype=dtype)
    (y,) = run_layer(backend, spec, xs)
    if dtype.is_float:
        expected = VARIADIC_REFERENCE[op](np.broadcast_arrays(*[et.float64(x) for x in xs]))
        assert_close(y, expected, *et.tolerance(dtype), spec)
    else:  # SUM wraps
        np.testing.assert_array_equal(y, et.integer_oracle(variadic_integer_reference(op), xs, dtype))


@pytest.mark.parametrize("op", [VariadicOp.MAXIMUM, VariadicOp.MINIMUM, VariadicOp.SUM],
                         ids=lambda op: op.name.lower())
def test_variadic_propagates_nan(backend, op: VariadicOp) -> None:
    xs = [np.array([np.nan, 1.0, 2.0], np.float32), np.array([0.0, np.nan, 1.0], np.float32),
          np.array([0.0, 3.0, np.nan], np.float32)]
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), xs, (3,),
                      name=f"{op.name.lower()}_nan")
    (y,) = run_layer(backend, spec, xs)
    assert np.isnan(y).all(), f"{op.name} of NaN-holding columns gave {y}"


# ---- malformed layers -----------------------------------------------------------------

ADD = ElementwiseBinaryDescriptor("add")
SUM = ElementwiseVariadicDescriptor("sum")


@pytest.mark.parametrize("inputs, output, dtypes, reason", [
    pytest.param([(2, 3), (4,)], (2, 3), None, "broadcast", id="shapes do not broadcast"),
    pytest.param([(2, 3), (3,)], (3, 3), None, "output", id="output is not the broadcast"),
    pytest.param([(2, 3), (3,)], (1, 2, 3), None, "output", id="output has an extra dim"),
    pytest.param([(2, 3)], (2, 3), None, "input", id="one input"),
    pytest.param([(2, 3), (2, 3), (2, 3)], (2, 3), None, "input", id="three inputs"),
    pytest.param([(2, 3), (2, 3)], (2, 3), [DataType.FLOAT32, DataType.INT64], "int64", id="int64 b"),
    pytest.param([(2, 3), (2, 3)], (2, 3), [DataType.BOOL, DataType.BOOL], "bool", id="bool add"),
])
def test_malformed_binary_is_refused(backend, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.ELEMENTWISE_BINARY, ADD, inputs, output, dtypes=dtypes), reason)


T = DataType


@pytest.mark.parametrize("op, dtype, output_dtype, reason", [
    pytest.param(B.SHIFT_LEFT, T.FLOAT32, T.FLOAT32, "integer", id="shift of floats"),
    pytest.param(B.BITWISE_AND, T.FLOAT64, T.FLOAT64, "integer", id="bitwise and of floats"),
    pytest.param(B.BITWISE_OR, T.BOOL, T.BOOL, "integer", id="bitwise or of bools"),
    pytest.param(B.LOGICAL_AND, T.INT32, T.INT32, "bool", id="logical and of integers"),
    pytest.param(B.LOGICAL_XOR, T.FLOAT32, T.BOOL, "bool", id="logical xor of floats"),
    pytest.param(B.PRELU, T.INT32, T.INT32, "float", id="prelu of integers"),
    pytest.param(B.LESS, T.FLOAT32, T.FLOAT32, "bool", id="comparison with a float output"),
    pytest.param(B.EQUAL, T.INT8, T.INT8, "bool", id="equal with an int8 output"),
    pytest.param(B.LESS, T.BOOL, T.BOOL, "numeric", id="less of bools"),
    pytest.param(B.DIV, T.INT32, T.INT64, "output 0 is int64", id="output of another type"),
    pytest.param(B.MOD, T.BOOL, T.BOOL, "numeric", id="mod of bools"),
])
def test_binary_of_the_wrong_types_is_refused(backend, op: BinaryOp, dtype: DataType, output_dtype: DataType,
                                              reason: str) -> None:
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [(2, 3), (3,)], (2, 3),
                      dtypes=[dtype, dtype], output_dtype=output_dtype)
    assert_refused(backend, spec, reason)


def test_fused_activation_on_an_integer_output_is_refused(backend) -> None:
    desc = ElementwiseBinaryDescriptor("add", fused_activation=ActivationDescriptor("relu"))
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [(4,), (4,)], (4,), dtypes=[T.INT32, T.INT32],
                      output_dtype=T.INT32)
    assert_refused(backend, spec, "fused activation must be a float type")


@pytest.mark.parametrize("value", [0, 24, 99])
def test_unknown_binary_operation_is_refused(backend, value: int) -> None:
    desc = et.broken(ElementwiseBinaryDescriptor("add"), op=value)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [(4,), (4,)], (4,))
    assert_refused(backend, spec, f"unknown operation {value}")


@pytest.mark.parametrize("value", [0, 5])
def test_unknown_variadic_operation_is_refused(backend, value: int) -> None:
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, et.broken(SUM, op=value), [(4,), (4,)], (4,))
    assert_refused(backend, spec, f"unknown operation {value}")


@pytest.mark.parametrize("inputs, output, dtypes, reason", [
    pytest.param([], (2, 3), [], "input", id="no inputs"),
    pytest.param([(2, 3), (3,), (2,)], (2, 3), None, "broadcast", id="third input does not broadcast"),
    pytest.param([(2, 3), (3,)], (2, 1), None, "output", id="output is not the broadcast"),
    pytest.param([(2,), (2,)], (2,), [DataType.FLOAT32, DataType.BOOL], "bool", id="bool input"),
    pytest.param([(2,), (2,)], (2,), [DataType.BOOL, DataType.BOOL], "numeric", id="bool inputs"),
    pytest.param([(2,), (2,)], (2,), [DataType.INT32, DataType.INT64], "int64", id="mixed integer types"),
])
def test_malformed_variadic_is_refused(backend, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.ELEMENTWISE_VARIADIC, SUM, inputs, output, dtypes=dtypes), reason)


def test_mean_of_integers_is_refused(backend) -> None:
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor("mean"), [(2,), (2,)], (2,),
                      dtypes=[T.INT32, T.INT32], output_dtype=T.INT32)
    assert_refused(backend, spec, "float")


def test_variadic_output_of_another_type_is_refused(backend) -> None:
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, SUM, [(2,), (2,)], (2,), dtypes=[T.INT16, T.INT16],
                      output_dtype=T.INT32)
    assert_refused(backend, spec, "output 0 is int32")
