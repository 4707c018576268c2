"""ELEMENTWISE_BINARY's integer arithmetic and comparisons, ELEMENTWISE_VARIADIC's integer SUM, MAXIMUM and
MINIMUM, and ABS, NEG and SIGN on integers, on CpuAcc (plugins/accel/src/ops/
elementwise.c, accel_binary_typed): int32 and int64 ADD, SUB, MUL (wrapping in two's
complement), MAXIMUM, MINIMUM, bitwise AND / OR / XOR, and the comparisons of those and of
float32 (NaN compares false), with every kind of broadcasting, on every kernel set at 1, 2, 3 and
7 threads, against NumPy (exact). What stays CpuRef's (integer DIV, MOD, FMOD, POWER, the
shifts, other integer types) is refused with a reason that says what CpuAcc runs."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import (ElementwiseBinaryDescriptor, ElementwiseUnaryDescriptor, ElementwiseVariadicDescriptor,
                                LayerKind)
from plugnn.tensor import DataType

from .common import HAVE_CPUACC
from .test_transformer_kinds import every_config, spec

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(77)
SHAPES = [  # output, a, b
    ((1, 1, 1, 41), (1, 1, 1, 41), (1, 1, 1, 1)),  # T5's position bias: a row against a scalar
    ((2, 3, 300), (2, 1, 300), (3, 1)),
    ((41, 41), (1, 41), (41, 1)),                  # relative positions: memory - context
    ((300, 257), (300, 257), (300, 257)),          # enough rows for the pool to split
    ((0, 5), (0, 5), (5,)),
    ((), (), ()),
]
ARITHMETIC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
              "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
COMPARISONS = {"equal": np.equal, "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
               "greater_equal": np.greater_equal}


def operand(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Values near both ends of the type (so ADD, SUB and MUL wrap) and small ones (so they are equal)."""
    info = np.iinfo(dtype)
    pick = RNG.integers(0, 3, shape)
    big = RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    small = RNG.integers(-3, 4, shape).astype(dtype)
    return np.where(pick == 0, big, small).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", sorted(ARITHMETIC))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_integer_arithmetic(runtimes, dtype: type, op: str, shapes) -> None:  # type: ignore[no-untyped-def]
    out, a_shape, b_shape = shapes
    a, b = operand(a_shape, dtype), operand(b_shape, dtype)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [a, b], out,
                 out_dtype=DataType.from_any(np.dtype(dtype)))
    with np.errstate(over="ignore"):
        expected = ARITHMETIC[op](a, b).astype(dtype)  # NumPy wraps as the ABI asks
    for y in every_config(runtimes, layer, [a, b]).values():
        np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
@pytest.mark.parametrize("op", sorted(COMPARISONS))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_comparisons(runtimes, dtype: type, op: str, shapes) -> None:  # type: ignore[no-untyped-def]
    out, a_shape, b_shape = shapes
    if dtype is np.float32:
        a = RNG.integers(-2, 3, a_shape).astype(np.float32)
        b = RNG.integers(-2, 3, b_shape).astype(np.float32)
        a.reshape(-1)[::7] = np.nan  # NaN compares false, equal to nothing
    else:
        a, b = operand(a_shape, dtype), operand(b_shape, dtype)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [a, b], out,
                 out_dtype=DataType.BOOL)
    for y in every_config(runtimes, layer, [a, b]).values():
        np.testing.assert_array_equal(y, COMPARISONS[op](a, b))


@pytest.mark.parametrize("op", ["div", "mod", "fmod", "pow", "bitshift_right"])
def test_integer_operations_that_can_fail_stay_refused(op: str) -> None:
    a = np.ones((4,), np.int64)
    names = {"pow": "power", "bitshift_right": "shift_right"}
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(names.get(op, op)), [a, a], (4,),
                 out_dtype=DataType.INT64)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported
    assert answer.reason.startswith("CpuAcc runs ElementwiseBinary on int64 for ADD, SUB, MUL, MAXIMUM, MINIMUM, "
                                    "the bitwise operations and the comparisons only, not operation ")


def test_other_integer_types_stay_refused() -> None:
    a = np.ones((4,), np.int16)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor("add"), [a, a], (4,),
                 out_dtype=DataType.INT16)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and answer.reason == "CpuAcc runs ElementwiseBinary on float32 only; input 0 is int16"


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op, fn", [("abs", np.abs), ("neg", np.negative), ("sign", np.sign)])
@pytest.mark.parametrize("shape", [(41,), (300, 257), (0, 3), ()], ids=str)
def test_integer_unary(runtimes, dtype: type, op: str, fn, shape: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
    """ABS, NEG and SIGN on int32 / int64 in two's complement: the lowest value's ABS and NEG
    wrap to itself (NumPy's result too)."""
    x = operand(shape, dtype)
    if x.size:
        x.reshape(-1)[0] = np.iinfo(dtype).min
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [x], shape,
                 out_dtype=DataType.from_any(np.dtype(dtype)))
    with np.errstate(over="ignore"):
        expected = fn(x).astype(dtype)
    for y in every_config(runtimes, layer, [x]).values():
        np.testing.assert_array_equal(y, expected)


def test_other_integer_unary_operations_stay_refused() -> None:
    x = np.zeros((4,), np.int64)
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor("bitwise_not"), [x], (4,),
                 out_dtype=DataType.INT64)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and "no ElementwiseUnary kernel for BITWISE_NOT (it runs ABS, NEG, SIGN on float32, " \
        "int32 and int64" in answer.reason


VARIADIC = {"sum": np.add, "maximum": np.maximum, "minimum": np.minimum}
VARIADIC_SHAPES = [  # output, inputs
    ((41, 41), [(41, 41)]),                          # one input: a copy
    ((41, 41), [(41, 41), ()]),                      # T5's Min(bucket, num_buckets - 1)
    ((2, 3, 300), [(2, 1, 300), (3, 1), (1,)]),
    ((300, 257), [(300, 257), (300, 1), (257,), (300, 257)]),
    ((0, 5), [(0, 5), (5,)]),
    ((), [(), ()]),
]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", sorted(VARIADIC))
@pytest.mark.parametrize("shapes", VARIADIC_SHAPES, ids=str)
def test_integer_variadic(runtimes, dtype: type, op: str, shapes) -> None:  # type: ignore[no-untyped-def]
    """A left fold of the binary step (SUM wraps in two's complement, as the ABI asks)."""
    out, input_shapes = shapes
    xs = [operand(shape, dtype) for shape in input_shapes]
    layer = spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), xs, out,
                 out_dtype=DataType.from_any(np.dtype(dtype)))
    expected = np.broadcast_to(xs[0], out).astype(dtype)
    with np.errstate(over="ignore"):
        for x in xs[1:]:
            expected = VARIADIC[op](expected, x).astype(dtype)
    for y in every_config(runtimes, layer, xs).values():
        np.testing.assert_array_equal(y, expected)


def test_variadic_on_other_integer_types_stays_refused() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        a = np.ones((4,), np.int16)
        layer = spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor("sum"), [a, a], (4,),
                     out_dtype=DataType.INT16)
        answer = backend.is_layer_supported(layer)
        assert not answer.supported and answer.reason == \
            "CpuAcc runs ElementwiseVariadic on float32 only; input 0 is int16"
