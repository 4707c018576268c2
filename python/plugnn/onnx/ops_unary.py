"""Unary elementwise operators: Abs, Neg, Sign, Reciprocal, Sqrt, Exp, Log, Erf, the
trigonometric and hyperbolic functions and their inverses, Floor, Ceil, Round, IsNaN, IsInf,
Not and BitwiseNot, each one ELEMENTWISE_UNARY layer (opsets 7 on), with a NumPy fold when the
input is known at import.

The element types are ONNX's: the float functions take float tensors; Abs and Sign every
numeric type; Neg the signed ones; Erf, which ONNX's opset 9 also defines on integers, computes
an integer input in float64 and truncates back (Cast, ERF, Cast, as ONNX's reference does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.descriptors import UnaryOp
from plugnn.onnx import numeric
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

_erf = np.vectorize(math.erf, otypes=[np.float64])

# ONNX operator -> (unary operation, input types, NumPy function on float64 / on integers).
_FLOAT_FUNCTIONS: dict[str, tuple[UnaryOp, Callable[..., Any]]] = {
    "Reciprocal": (UnaryOp.RECIPROCAL, lambda x: 1.0 / x),
    "Sqrt": (UnaryOp.SQRT, np.sqrt),
    "Exp": (UnaryOp.EXP, np.exp),
    "Log": (UnaryOp.LOG, np.log),
    "Sin": (UnaryOp.SIN, np.sin),
    "Cos": (UnaryOp.COS, np.cos),
    "Tan": (UnaryOp.TAN, np.tan),
    "Asin": (UnaryOp.ASIN, np.arcsin),
    "Acos": (UnaryOp.ACOS, np.arccos),
    "Atan": (UnaryOp.ATAN, np.arctan),
    "Sinh": (UnaryOp.SINH, np.sinh),
    "Cosh": (UnaryOp.COSH, np.cosh),
    "Asinh": (UnaryOp.ASINH, np.arcsinh),
    "Acosh": (UnaryOp.ACOSH, np.arccosh),
    "Atanh": (UnaryOp.ATANH, np.arctanh),
    "Floor": (UnaryOp.FLOOR, np.floor),
    "Ceil": (UnaryOp.CEIL, np.ceil),
    "Round": (UnaryOp.ROUND, np.rint),  # halves to even
}


def _fold_value(ctx: NodeContext, fn: Callable[..., Any], integer_fn: Callable[..., Any] | None,
                allowed: frozenset[DataType]) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "X")], allowed)
    x = np.asarray(ctx.value(0))
    if dtype in numeric.FLOATS:
        return [numeric.float_fold(fn, [x], dtype)]
    assert integer_fn is not None
    return [numeric.same_dtype(numeric.wrapping(integer_fn, x), x)]


def _unary(op_type: str, unary: UnaryOp, allowed: frozenset[DataType], fn: Callable[..., Any],
           integer_fn: Callable[..., Any] | None = None) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        numeric.check_types(ctx, [(0, "X")], allowed)
        return [ctx.network.add_unary(unary, ctx.tensor(0, "X"), name=ctx.name())]

    op(op_type, fold=lambda ctx: _fold_value(ctx, fn, integer_fn, allowed))(convert)


for _name, (_unary_op, _fn) in _FLOAT_FUNCTIONS.items():
    _unary(_name, _unary_op, numeric.FLOATS, _fn)

_unary("Abs", UnaryOp.ABS, numeric.NUMERIC, np.abs, np.abs)
_unary("Neg", UnaryOp.NEG, numeric.FLOATS | numeric.SIGNED, np.negative, np.negative)
_unary("Sign", UnaryOp.SIGN, numeric.NUMERIC, np.sign, np.sign)
_unary("BitwiseNot", UnaryOp.BITWISE_NOT, numeric.INTEGERS, np.invert, np.invert)


@op("Not", fold=lambda ctx: [np.logical_not(_bools(ctx))])
def not_(ctx: NodeContext) -> list[Any]:
    numeric.check_types(ctx, [(0, "X")], numeric.BOOL)
    return [ctx.network.add_unary(UnaryOp.LOGICAL_NOT, ctx.tensor(0, "X"), name=ctx.name())]


def _bools(ctx: NodeContext) -> np.ndarray:
    numeric.check_types(ctx, [(0, "X")], numeric.BOOL)
    return np.asarray(ctx.value(0))


# ---- Erf: floats, and (opset 9) integers through float64 ----------------------------------------


def _fold_erf(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "input")], numeric.NUMERIC)
    x = np.asarray(ctx.value(0))
    if dtype in numeric.FLOATS:
        return [numeric.float_fold(_erf, [x], dtype)]
    return [numeric.cast(_erf(x.astype(np.float64)), x.dtype)]


@op("Erf", fold=_fold_erf)
def erf(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "input")], numeric.NUMERIC)
    x = ctx.tensor(0, "input")
    if dtype in numeric.FLOATS:
        return [ctx.network.add_unary(UnaryOp.ERF, x, name=ctx.name())]
    wide = ctx.network.add_cast(x, DataType.FLOAT64, name=ctx.aux("to_float64"))
    y = ctx.network.add_unary(UnaryOp.ERF, wide, name=ctx.aux("erf"))
    return [ctx.network.add_cast(y, dtype, name=ctx.name())]


# ---- IsNaN, IsInf --------------------------------------------------------------------------------


@op("IsNaN", fold=lambda ctx: [_float_test(ctx, np.isnan)])
def is_nan(ctx: NodeContext) -> list[Any]:
    numeric.check_types(ctx, [(0, "X")], numeric.FLOATS)
    return [ctx.network.add_unary(UnaryOp.IS_NAN, ctx.tensor(0, "X"), name=ctx.name())]


def _float_test(ctx: NodeContext, fn: Callable[..., Any]) -> np.ndarray:
    numeric.check_types(ctx, [(0, "X")], numeric.FLOATS)
    return np.asarray(fn(np.asarray(ctx.value(0)).astype(np.float64)))


def _detect(ctx: NodeContext) -> tuple[bool, bool]:
    flags = []
    for name in ("detect_positive", "detect_negative"):
        value = int(ctx.attr(name, 1))
        if value not in (0, 1):
            raise ctx.unsupported_value(name, value, "0, 1")
        flags.append(bool(value))
    return flags[0], flags[1]


def _is_inf_function(ctx: NodeContext) -> Callable[..., Any]:
    positive, negative = _detect(ctx)
    return lambda x: np.isinf(x) & ((x > 0) & positive | (x < 0) & negative)


@op("IsInf", ("detect_negative", "detect_positive"), fold=lambda ctx: [_float_test(ctx, _is_inf_function(ctx))])
def is_inf(ctx: NodeContext) -> list[Any]:
    numeric.check_types(ctx, [(0, "X")], numeric.FLOATS)
    positive, negative = _detect(ctx)
    x = ctx.tensor(0, "X")
    if not positive and not negative:  # nothing is detected: all false, known at import
        return [np.zeros(x.shape, bool)]
    unary = UnaryOp.IS_INF if positive and negative else (UnaryOp.IS_POS_INF if positive else UnaryOp.IS_NEG_INF)
    return [ctx.network.add_unary(unary, x, name=ctx.name())]
