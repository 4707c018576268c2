"""Comparison, logic and bitwise operators: Equal, Less, LessOrEqual, Greater, GreaterOrEqual,
And, Or, Xor, BitwiseAnd, BitwiseOr, BitwiseXor, BitShift, Mod, Where (opsets 7 on), each one
layer (ELEMENTWISE_BINARY, or SELECT for Where) with NumPy broadcasting, and a NumPy fold when
every input is known at import, so shape chains (Shape -> Equal -> Where -> Expand in BERT and
GPT-2 exports) become constants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.descriptors import BinaryOp
from plugnn.onnx import numeric
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

_AB = [(0, "A"), (1, "B")]


def _binary(op_type: str, binary: BinaryOp, allowed: frozenset[DataType], fold_fn: Callable[..., Any],
            attributes: tuple[str, ...] = ()) -> None:
    def fold(ctx: NodeContext) -> list[Any]:
        numeric.check_types(ctx, _AB, allowed)
        a, b = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
        return [np.asarray(numeric.wrapping(fold_fn, a, b))]

    def convert(ctx: NodeContext) -> list[Any]:
        numeric.check_types(ctx, _AB, allowed)
        return [ctx.network.add_elementwise(binary, ctx.tensor(0, "A"), ctx.tensor(1, "B"), name=ctx.name())]

    op(op_type, attributes, fold=fold)(convert)


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.equal(a, b)


_binary("Equal", BinaryOp.EQUAL, numeric.ANY, _equal)
_binary("Less", BinaryOp.LESS, numeric.NUMERIC, np.less)
_binary("LessOrEqual", BinaryOp.LESS_EQUAL, numeric.NUMERIC, np.less_equal)
_binary("Greater", BinaryOp.GREATER, numeric.NUMERIC, np.greater)
_binary("GreaterOrEqual", BinaryOp.GREATER_EQUAL, numeric.NUMERIC, np.greater_equal)
_binary("And", BinaryOp.LOGICAL_AND, numeric.BOOL, np.logical_and)
_binary("Or", BinaryOp.LOGICAL_OR, numeric.BOOL, np.logical_or)
_binary("Xor", BinaryOp.LOGICAL_XOR, numeric.BOOL, np.logical_xor)
_binary("BitwiseAnd", BinaryOp.BITWISE_AND, numeric.INTEGERS, np.bitwise_and)
_binary("BitwiseOr", BinaryOp.BITWISE_OR, numeric.INTEGERS, np.bitwise_or)
_binary("BitwiseXor", BinaryOp.BITWISE_XOR, numeric.INTEGERS, np.bitwise_xor)


# ---- BitShift ---------------------------------------------------------------------------------


def _direction(ctx: NodeContext) -> BinaryOp:
    direction = ctx.attr("direction")
    if direction is None:
        raise ctx.error("attribute 'direction' is required")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.unsupported_value("direction", direction, "'LEFT', 'RIGHT'")
    return BinaryOp.SHIFT_LEFT if direction == "LEFT" else BinaryOp.SHIFT_RIGHT


def _fold_bit_shift(ctx: NodeContext) -> list[Any]:
    left = _direction(ctx) is BinaryOp.SHIFT_LEFT
    numeric.check_types(ctx, [(0, "X"), (1, "Y")], numeric.INTEGERS)
    return [numeric.shift(np.asarray(ctx.value(0)), np.asarray(ctx.value(1)), left)]


@op("BitShift", ("direction",), fold=_fold_bit_shift)
def bit_shift(ctx: NodeContext) -> list[Any]:
    direction = _direction(ctx)
    numeric.check_types(ctx, [(0, "X"), (1, "Y")], numeric.INTEGERS)
    return [ctx.network.add_elementwise(direction, ctx.tensor(0, "X"), ctx.tensor(1, "Y"), name=ctx.name())]


# ---- Mod --------------------------------------------------------------------------------------


def _fmod(ctx: NodeContext) -> bool:
    value = int(ctx.attr("fmod", 0))
    if value not in (0, 1):
        raise ctx.unsupported_value("fmod", value, "0 (the sign of the divisor), 1 (the sign of the dividend)")
    return bool(value)


def _fold_mod(ctx: NodeContext) -> list[Any]:
    fmod = _fmod(ctx)
    dtype = numeric.check_types(ctx, _AB, numeric.NUMERIC)
    a, b = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if dtype in numeric.FLOATS:
        return [numeric.float_fold(np.fmod if fmod else _numpy_mod, [a, b], dtype)]
    return [numeric.integer_divide(ctx, "fmod" if fmod else "mod", a, b)]


def _numpy_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy's floating remainder: the sign of b, a zero result signed like b (ONNX Mod-28)."""
    r = np.fmod(a, b)
    r = np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)
    return np.where(r == 0, np.copysign(0.0, b), r)


@op("Mod", ("fmod",), fold=_fold_mod)
def mod(ctx: NodeContext) -> list[Any]:
    fmod = _fmod(ctx)
    numeric.check_types(ctx, _AB, numeric.NUMERIC)
    binary = BinaryOp.FMOD if fmod else BinaryOp.MOD
    return [ctx.network.add_elementwise(binary, ctx.tensor(0, "A"), ctx.tensor(1, "B"), name=ctx.name())]


# ---- Where --------------------------------------------------------------------------------------


def _where_types(ctx: NodeContext) -> None:
    numeric.check_types(ctx, [(0, "condition")], numeric.BOOL)
    numeric.check_types(ctx, [(1, "X"), (2, "Y")], numeric.ANY)


def _fold_where(ctx: NodeContext) -> list[Any]:
    _where_types(ctx)
    x = np.asarray(ctx.value(1))
    return [np.where(np.asarray(ctx.value(0)), x, np.asarray(ctx.value(2))).astype(x.dtype, copy=False)]


@op("Where", fold=_fold_where)
def where(ctx: NodeContext) -> list[Any]:
    _where_types(ctx)
    return [ctx.network.add_select(ctx.tensor(0, "condition"), ctx.tensor(1, "X"), ctx.tensor(2, "Y"),
                                   name=ctx.name())]
