"""Elementwise operators: Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean, PRelu and the
activations Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Elu, Clip, on every element
type ONNX allows them (opsets 7 on), each folded with NumPy when every input is known at import.

Integer forms (backend_api.h): Div truncates toward zero and a zero divisor fails (at run time,
or at import for a fold); Pow of integers is exact (wrapping) and needs exponents >= 0. Pow's
exponent may have another type than its base (opset 12): a float base takes the exponent cast
to its type; an integer base with a float exponent is computed in float64 and truncated back; two
integer types meet in int64 and wrap back to the base's type. Relu of integers is MAXIMUM with 0;
PRelu of integers is x < 0 ? x * slope : x (LESS, MUL, SELECT); Clip of integers, of float64,
and with bounds computed at run time is MAXIMUM then MINIMUM (float bounds known at import give
one BOUNDED_RELU activation).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.descriptors import ActivationKind, BinaryOp, VariadicOp
from plugnn.network import Tensor
from plugnn.onnx import numeric, ops_activation
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

_AB = [(0, "A"), (1, "B")]

# ---- binary ------------------------------------------------------------------------------------

_FLOAT_FN: dict[BinaryOp, Callable[..., Any]] = {
    BinaryOp.ADD: np.add, BinaryOp.SUB: np.subtract, BinaryOp.MUL: np.multiply, BinaryOp.DIV: np.divide,
}


def _fold_arithmetic(ctx: NodeContext, binary: BinaryOp) -> list[Any]:
    dtype = numeric.check_types(ctx, _AB, numeric.NUMERIC)
    a, b = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if dtype in numeric.FLOATS:
        return [numeric.float_fold(_FLOAT_FN[binary], [a, b], dtype)]
    if binary is BinaryOp.DIV:
        return [numeric.integer_divide(ctx, "div", a, b)]
    return [numeric.same_dtype(numeric.wrapping(_FLOAT_FN[binary], a, b), a)]


def _binary(op_type: str, binary: BinaryOp) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        numeric.check_types(ctx, _AB, numeric.NUMERIC)
        return [ctx.network.add_elementwise(binary, ctx.tensor(0, "A"), ctx.tensor(1, "B"), name=ctx.name())]

    op(op_type, (), fold=lambda ctx: _fold_arithmetic(ctx, binary))(convert)


_binary("Add", BinaryOp.ADD)
_binary("Sub", BinaryOp.SUB)
_binary("Mul", BinaryOp.MUL)
_binary("Div", BinaryOp.DIV)


# ---- Pow ---------------------------------------------------------------------------------------------


def _pow_types(ctx: NodeContext) -> tuple[DataType, DataType]:
    return (numeric.check_types(ctx, [(0, "X")], numeric.NUMERIC),
            numeric.check_types(ctx, [(1, "Y")], numeric.NUMERIC))


def _fold_pow(ctx: NodeContext) -> list[Any]:
    base, exponent = _pow_types(ctx)
    x, y = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if base in numeric.FLOATS:
        return [numeric.float_fold(np.power, [x, numeric.cast(y, x.dtype)], base)]
    if exponent in numeric.FLOATS:
        return [numeric.cast(numeric.float_fold(np.power, [x, y], DataType.FLOAT64), x.dtype)]
    wide = numeric.integer_power(ctx, x.astype(np.int64), y.astype(np.int64))
    return [numeric.cast(wide, x.dtype)]


@op("Pow", fold=_fold_pow)
def pow_(ctx: NodeContext) -> list[Any]:
    base, exponent = _pow_types(ctx)
    x, y = ctx.tensor(0, "X"), ctx.tensor(1, "Y")
    net = ctx.network
    if base == exponent:
        return [net.add_elementwise(BinaryOp.POWER, x, y, name=ctx.name())]
    if base in numeric.FLOATS:
        y = net.add_cast(y, base, name=ctx.aux("exponent_cast"))
        return [net.add_elementwise(BinaryOp.POWER, x, y, name=ctx.name())]
    wide = DataType.FLOAT64 if exponent in numeric.FLOATS else DataType.INT64
    x_wide = net.add_cast(x, wide, name=ctx.aux("base_cast"))
    y_wide = y if exponent == wide else net.add_cast(y, wide, name=ctx.aux("exponent_cast"))
    power = net.add_elementwise(BinaryOp.POWER, x_wide, y_wide, name=ctx.aux("power"))
    return [net.add_cast(power, base, name=ctx.name())]


# ---- PRelu ---------------------------------------------------------------------------------------


def _fold_prelu(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "X"), (1, "slope")], numeric.NUMERIC)
    x, slope = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if dtype in numeric.FLOATS:
        return [numeric.float_fold(lambda a, s: np.where(a >= 0, a, a * s), [x, slope], dtype)]
    product = numeric.wrapping(np.multiply, x, slope)
    return [np.where(x < 0, product, x).astype(x.dtype)]


@op("PRelu", fold=_fold_prelu)
def prelu(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "X"), (1, "slope")], numeric.NUMERIC)
    x, slope = ctx.tensor(0, "X"), ctx.tensor(1, "slope")
    net = ctx.network
    if dtype in numeric.FLOATS:
        return [net.add_elementwise(BinaryOp.PRELU, x, slope, name=ctx.name())]
    if dtype in numeric.UNSIGNED:  # never negative
        return [net.add_identity(x, name=ctx.name())]
    zero = ctx.array_tensor(np.zeros((), numeric.numpy_dtype(dtype)), "zero")
    negative = net.add_elementwise(BinaryOp.LESS, x, zero, name=ctx.aux("negative"))
    scaled = net.add_elementwise(BinaryOp.MUL, x, slope, name=ctx.aux("scaled"))
    return [net.add_select(negative, scaled, x, name=ctx.name())]


# ---- variadic ----------------------------------------------------------------------------------

_VARIADIC_FN: dict[VariadicOp, Callable[..., Any]] = {
    VariadicOp.MAXIMUM: np.maximum, VariadicOp.MINIMUM: np.minimum, VariadicOp.SUM: np.add,
}


def _variadic_inputs(ctx: NodeContext, allowed: frozenset[DataType]) -> list[int]:
    present = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    if not present:
        raise ctx.error("needs at least one input")
    numeric.check_types(ctx, [(i, f"data_{i}") for i in present], allowed)
    return present


def _fold_variadic(ctx: NodeContext, variadic: VariadicOp, allowed: frozenset[DataType]) -> list[Any]:
    present = _variadic_inputs(ctx, allowed)
    arrays = [np.asarray(ctx.value(i)) for i in present]
    dtype = numeric.dtype_of(ctx, present[0], "data_0")

    def combine(*values: np.ndarray) -> np.ndarray:
        if variadic is VariadicOp.MEAN:
            return functools.reduce(np.add, values) / len(values)
        return functools.reduce(_VARIADIC_FN[variadic], values)

    if dtype in numeric.FLOATS:
        return [numeric.float_fold(combine, arrays, dtype)]
    return [numeric.same_dtype(numeric.wrapping(combine, *arrays), arrays[0])]


def _variadic(op_type: str, variadic: VariadicOp, allowed: frozenset[DataType]) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        present = _variadic_inputs(ctx, allowed)
        tensors = [ctx.tensor(i, f"data_{i}") for i in present]
        return [ctx.network.add_variadic(variadic, tensors, name=ctx.name())]

    op(op_type, fold=lambda ctx: _fold_variadic(ctx, variadic, allowed))(convert)


_variadic("Max", VariadicOp.MAXIMUM, numeric.NUMERIC)
_variadic("Min", VariadicOp.MINIMUM, numeric.NUMERIC)
_variadic("Sum", VariadicOp.SUM, numeric.NUMERIC)
_variadic("Mean", VariadicOp.MEAN, numeric.FLOATS)


# ---- activations -------------------------------------------------------------------------------

ops_activation.activation("LeakyRelu", ActivationKind.LEAKY_RELU, [("alpha", 0.01, "alpha")])
ops_activation.activation("Sigmoid", ActivationKind.SIGMOID)
ops_activation.activation("HardSigmoid", ActivationKind.HARD_SIGMOID, [("alpha", 0.2, "alpha"), ("beta", 0.5, "beta")])
ops_activation.activation("HardSwish", ActivationKind.HARD_SWISH)
ops_activation.activation("Tanh", ActivationKind.TANH)
ops_activation.activation("Elu", ActivationKind.ELU, [("alpha", 1.0, "alpha")])

_RELU_TYPES = numeric.FLOATS | numeric.SIGNED


def _fold_relu(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "X")], _RELU_TYPES)
    x = np.asarray(ctx.value(0))
    if dtype in numeric.FLOATS:
        return [ops_activation.fold_activation(x, ActivationKind.RELU, 0.0, 0.0, dtype)]
    return [np.maximum(x, 0).astype(x.dtype)]


@op("Relu", fold=_fold_relu)
def relu(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "X")], _RELU_TYPES)
    x = ctx.tensor(0, "X")
    if dtype in numeric.FLOATS:
        return [ctx.network.add_activation(x, ActivationKind.RELU, name=ctx.name())]
    zero = ctx.array_tensor(np.zeros((), numeric.numpy_dtype(dtype)), "zero")
    return [ctx.network.add_elementwise(BinaryOp.MAXIMUM, x, zero, name=ctx.name())]


# ---- Clip ----------------------------------------------------------------------------------------

_FLOAT32 = np.finfo(np.float32)


def _clip_bound(ctx: NodeContext, i: int, what: str, dtype: DataType) -> np.ndarray | Tensor | None:
    """Input i (min or max): None when absent; a one-element array or tensor of x's type."""
    if not ctx.has_input(i):
        return None
    numeric.check_types(ctx, [(0, "input"), (i, what)], numeric.NUMERIC)
    value = ctx.value(i)
    size = value.info.num_elements if isinstance(value, Tensor) else np.asarray(value).size
    if size != 1:
        raise ctx.error(f"input {i} ({what}) must be a scalar, got shape {list(value.shape)}")
    return np.asarray(value).reshape(()) if isinstance(value, np.ndarray) else ctx.tensor(i, what)


def _clip_bounds(ctx: NodeContext) -> tuple[DataType, Any, Any]:
    """(x's type, min, max) of any opset; a bound is None, an array known at import or a Tensor."""
    if ctx.opset < 11:
        dtype = numeric.check_types(ctx, [(0, "input")], numeric.FLOATS)
        low = np.asarray(float(ctx.attr("min", float(_FLOAT32.min))), np.float64)
        high = np.asarray(float(ctx.attr("max", float(_FLOAT32.max))), np.float64)
        return dtype, low, high
    dtype = numeric.check_types(ctx, [(0, "input")], numeric.NUMERIC)
    return dtype, _clip_bound(ctx, 1, "min", dtype), _clip_bound(ctx, 2, "max", dtype)


def _fold_clip(ctx: NodeContext) -> list[Any]:
    dtype, low, high = _clip_bounds(ctx)
    x = np.asarray(ctx.value(0))
    y = x if low is None else np.maximum(x, np.asarray(low).astype(x.dtype))
    y = y if high is None else np.minimum(y, np.asarray(high).astype(x.dtype))
    return [np.asarray(y).astype(x.dtype)]


def _exact_in_float32(value: Any) -> bool:
    v = float(np.asarray(value).astype(np.float64))
    with np.errstate(over="ignore"):  # beyond float32's range: not exact (inf != v)
        return bool(np.isinf(v) or float(np.float32(v)) == v)


@op("Clip", ("min", "max"), fold=_fold_clip)
def clip(ctx: NodeContext) -> list[Any]:
    dtype, low, high = _clip_bounds(ctx)
    x = ctx.tensor(0, "input")
    net = ctx.network
    known = not isinstance(low, Tensor) and not isinstance(high, Tensor)
    if dtype in numeric.FLOATS and known and all(b is None or _exact_in_float32(b) for b in (low, high)):
        lo = -np.inf if low is None else float(np.asarray(low).astype(np.float64))
        hi = np.inf if high is None else float(np.asarray(high).astype(np.float64))
        return [net.add_activation(x, ActivationKind.BOUNDED_RELU, lo, hi, name=ctx.name())]
    if low is None and high is None:
        return [net.add_identity(x, name=ctx.name())]

    def bound_tensor(bound: Any, role: str) -> Tensor:
        if isinstance(bound, Tensor):
            return bound if bound.shape == () else net.add_reshape(bound, (), name=ctx.aux(f"{role}_scalar"))
        return ctx.array_tensor(np.asarray(bound).astype(numeric.numpy_dtype(dtype)), role)

    y = x
    if low is not None:
        y = net.add_elementwise(BinaryOp.MAXIMUM, y, bound_tensor(low, "min"),
                                name=ctx.name() if high is None else ctx.aux("min"))
    if high is not None:
        y = net.add_elementwise(BinaryOp.MINIMUM, y, bound_tensor(high, "max"), name=ctx.name())
    return [y]
