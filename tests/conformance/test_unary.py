"""ELEMENTWISE_UNARY: every pn_unary_op on every element type it takes, its special values, and
every malformed layer refused.

Float oracles are NumPy in float64 on the values the typed inputs hold (one rounding of the
output allowed); integer oracles are Python integers wrapped to the type's width (exact);
IS_* tests and LOGICAL_NOT are compared exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from plugnn.descriptors import ElementwiseUnaryDescriptor, LayerKind, UnaryOp
from plugnn.tensor import DataType

from . import elementtypes as et
from .conftest import assert_close, assert_refused, layer_spec, run_layer, shape_id

U = UnaryOp
T = DataType
_erf = np.vectorize(math.erf, otypes=[np.float64])

FLOAT_REFERENCE = {
    U.ABS: np.abs,
    U.NEG: np.negative,
    U.SIGN: np.sign,
    U.RECIPROCAL: lambda x: 1.0 / x,
    U.SQRT: np.sqrt,
    U.RSQRT: lambda x: 1.0 / np.sqrt(x),
    U.EXP: np.exp,
    U.LOG: np.log,
    U.ERF: _erf,
    U.SIN: np.sin,
    U.COS: np.cos,
    U.TAN: np.tan,
    U.ASIN: np.arcsin,
    U.ACOS: np.arccos,
    U.ATAN: np.arctan,
    U.SINH: np.sinh,
    U.COSH: np.cosh,
    U.ASINH: np.arcsinh,
    U.ACOSH: np.arccosh,
    U.ATANH: np.arctanh,
    U.FLOOR: np.floor,
    U.CEIL: np.ceil,
    U.ROUND: np.rint,  # halves to even
    U.IS_NAN: np.isnan,
    U.IS_INF: np.isinf,
    U.IS_POS_INF: np.isposinf,
    U.IS_NEG_INF: np.isneginf,
}

TO_BOOL = (U.IS_NAN, U.IS_INF, U.IS_POS_INF, U.IS_NEG_INF)


def integer_reference(op: UnaryOp) -> object:
    return {
        U.ABS: abs,
        U.NEG: lambda a: -a,
        U.SIGN: lambda a: (a > 0) - (a < 0),
        U.BITWISE_NOT: lambda a: ~a,
        U.LOGICAL_NOT: lambda a: not a,
    }[op]


def unary_types(op: UnaryOp) -> tuple[DataType, ...]:
    """The element types of x the header gives `op`."""
    if op in (U.ABS, U.SIGN):
        return et.NUMERIC
    if op is U.NEG:
        return et.FLOATS + et.SIGNED
    if op is U.LOGICAL_NOT:
        return (T.BOOL,)
    if op is U.BITWISE_NOT:
        return et.INTEGERS
    return et.FLOATS


def out_type(op: UnaryOp, dtype: DataType) -> DataType:
    return T.BOOL if op in TO_BOOL else dtype


# The open interval (or half line) where each float op is defined and well conditioned.
DOMAINS = {
    U.SQRT: (0.0, 9.0), U.RSQRT: (0.01, 9.0), U.LOG: (0.01, 9.0), U.RECIPROCAL: (0.1, 9.0),
    U.ASIN: (-0.99, 0.99), U.ACOS: (-0.99, 0.99), U.ATANH: (-0.95, 0.95), U.ACOSH: (1.0, 9.0),
    U.TAN: (-1.4, 1.4), U.SINH: (-8.0, 8.0), U.COSH: (-8.0, 8.0), U.EXP: (-8.0, 8.0),
}


def unary_input(op: UnaryOp, dtype: DataType, shape: tuple[int, ...], seed: int = 401) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.is_float and op in DOMAINS:
        low, high = DOMAINS[op]
        x = rng.uniform(low, high, shape)
        if op is U.RECIPROCAL:
            x *= np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return x.astype(dtype.numpy_dtype)
    return et.random(dtype, shape, rng)


def unary_reference(op: UnaryOp, x: np.ndarray, dtype: DataType) -> np.ndarray:
    if dtype.is_float:
        with np.errstate(all="ignore"):
            return FLOAT_REFERENCE[op](et.float64(x))
    return et.integer_oracle(integer_reference(op), [x], dtype)


def check(y: np.ndarray, expected: np.ndarray, op: UnaryOp, dtype: DataType, spec: object) -> None:
    if op in TO_BOOL or not dtype.is_float:
        assert y.dtype == expected.dtype, f"{spec}: output type {y.dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(y, expected, err_msg=str(spec))
    else:
        assert_close(y, expected, *et.tolerance(dtype), spec)


def _spec(op: UnaryOp, x: np.ndarray, dtype: DataType, name: str = "") -> object:
    return layer_spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [x], x.shape,
                      name=name or f"{op.name.lower()}_{dtype.numpy_name}", dtypes=[dtype],
                      output_dtype=out_type(op, dtype))


@pytest.mark.parametrize("op, dtype", [(op, t) for op in UnaryOp for t in unary_types(op)],
                         ids=lambda v: v.name.lower() if isinstance(v, UnaryOp) else et.type_id(v))
def test_unary(backend, op: UnaryOp, dtype: DataType) -> None:
    x = unary_input(op, dtype, (3, 11))
    spec = _spec(op, x, dtype)
    (y,) = run_layer(backend, spec, [x])
    check(y, unary_reference(op, x, dtype), op, dtype, spec)


SHAPES = [(), (1,), (7,), (2, 3, 4), (1, 1, 1, 1, 1, 1, 1, 2), (0,), (3, 0)]


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("op, dtype", [(U.EXP, T.FLOAT32), (U.NEG, T.INT64), (U.IS_INF, T.FLOAT16),
                                       (U.LOGICAL_NOT, T.BOOL), (U.BITWISE_NOT, T.UINT8)],
                         ids=lambda v: v.name.lower() if isinstance(v, UnaryOp) else et.type_id(v))
def test_unary_shapes(backend, op: UnaryOp, dtype: DataType, shape: tuple[int, ...]) -> None:
    x = unary_input(op, dtype, shape, seed=402)
    spec = _spec(op, x, dtype, name=f"{op.name.lower()}{list(shape)}")
    (y,) = run_layer(backend, spec, [x])
    check(y, unary_reference(op, x, dtype), op, dtype, spec)


SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 1e-30, -7.25]


@pytest.mark.parametrize("dtype", et.FLOATS, ids=et.type_id)
@pytest.mark.parametrize("op", [op for op in UnaryOp if T.FLOAT32 in unary_types(op)], ids=lambda op: op.name.lower())
def test_unary_special_values(backend, op: UnaryOp, dtype: DataType) -> None:
    """NaN, infinities, signed zeros, halves (ROUND to even), poles and domain errors as C99 and
    NumPy give them."""
    x = np.array(SPECIAL).astype(dtype.numpy_dtype)
    spec = _spec(op, x, dtype, name=f"{op.name.lower()}_special_{dtype.numpy_name}")
    (y,) = run_layer(backend, spec, [x])
    expected = unary_reference(op, x, dtype)
    check(y, expected, op, dtype, spec)
    if op not in TO_BOOL:
        zeros = expected == 0
        np.testing.assert_array_equal(np.signbit(et.float64(y))[zeros], np.signbit(expected)[zeros],
                                      err_msg=f"{spec}: signs of zero results")


@pytest.mark.parametrize("dtype", et.SIGNED, ids=et.type_id)
@pytest.mark.parametrize("op", [U.ABS, U.NEG, U.SIGN, U.BITWISE_NOT], ids=lambda op: op.name.lower())
def test_signed_extremes_wrap(backend, op: UnaryOp, dtype: DataType) -> None:
    low, high = et.limits(dtype)
    x = np.array([low, low + 1, -1, 0, 1, high], dtype=dtype.numpy_dtype)
    (y,) = run_layer(backend, _spec(op, x, dtype), [x])
    np.testing.assert_array_equal(y, unary_reference(op, x, dtype))


# ---- malformed layers -------------------------------------------------------------------------


@pytest.mark.parametrize("op, dtype, output_dtype, reason", [
    pytest.param(U.EXP, T.INT32, T.INT32, "float", id="exp of int32"),
    pytest.param(U.ROUND, T.BOOL, T.BOOL, "float", id="round of bool"),
    pytest.param(U.NEG, T.UINT8, T.UINT8, "signed", id="neg of uint8"),
    pytest.param(U.ABS, T.BOOL, T.BOOL, "numeric", id="abs of bool"),
    pytest.param(U.IS_NAN, T.FLOAT32, T.FLOAT32, "must be bool", id="is_nan with a float output"),
    pytest.param(U.IS_INF, T.INT64, T.BOOL, "float", id="is_inf of int64"),
    pytest.param(U.LOGICAL_NOT, T.INT8, T.INT8, "bool", id="logical_not of int8"),
    pytest.param(U.BITWISE_NOT, T.FLOAT32, T.FLOAT32, "integer", id="bitwise_not of float32"),
    pytest.param(U.BITWISE_NOT, T.BOOL, T.BOOL, "integer", id="bitwise_not of bool"),
    pytest.param(U.SQRT, T.FLOAT32, T.FLOAT64, "output 0 is float64", id="output of another type"),
])
def test_unary_of_the_wrong_types_is_refused(backend, op: UnaryOp, dtype: DataType, output_dtype: DataType,
                                             reason: str) -> None:
    spec = layer_spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [(2, 3)], (2, 3),
                      dtypes=[dtype], output_dtype=output_dtype)
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("inputs, output, reason", [
    pytest.param([(2, 3)], (3, 2), "output has shape", id="output shape differs"),
    pytest.param([(2, 3)], (2, 3, 1), "output has shape", id="output rank differs"),
    pytest.param([(2, 3), (2, 3)], (2, 3), "takes 1 input", id="two inputs"),
    pytest.param([], (2, 3), "takes 1 input", id="no input"),
])
def test_malformed_unary_is_refused(backend, inputs, output, reason: str) -> None:
    spec = layer_spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor("exp"), inputs, output)
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("value", [0, 30, 1000])
def test_unknown_unary_operation_is_refused(backend, value: int) -> None:
    desc = et.broken(ElementwiseUnaryDescriptor("exp"), op=value)
    spec = layer_spec(LayerKind.ELEMENTWISE_UNARY, desc, [(4,)], (4,))
    assert_refused(backend, spec, f"unknown operation {value}")
