"""Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (opset 7 on), ArgMax and ArgMin: one REDUCE layer
each.

`axes` is an attribute before opset 13 (ReduceSum) or 18 (the others) and an optional input
from then on, which must be known at import time. No axes reduce every axis, or, with
`noop_with_empty_axes` (from the opset that made axes an input), nothing: the op then applies
per element (ReduceL1 gives |x|, ReduceSumSquare x^2, ...), as ONNX's reference does. When x is
known at import time too (a ReduceProd over a Shape in a shape chain), the node is folded with
NumPy by the same rules as the layer (backend_api.h, pn_reduce_op): floats in float64 rounded
once to x's type, integer sums and products modulo 2^bits, integer means and L2 in float64
truncated toward zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx import folding
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op

# ONNX operator -> (plugnn reduction, the opset from which axes is an input)
_REDUCTIONS = {
    "ReduceSum": ("sum", 13),
    "ReduceMean": ("mean", 18),
    "ReduceMax": ("max", 18),
    "ReduceMin": ("min", 18),
    "ReduceProd": ("prod", 18),
    "ReduceL1": ("l1", 18),
    "ReduceL2": ("l2", 18),
    "ReduceLogSum": ("log_sum", 18),
    "ReduceLogSumExp": ("log_sum_exp", 18),
    "ReduceSumSquare": ("sum_square", 18),
}

_FLOAT_ONLY = ("log_sum", "log_sum_exp")
_BOOL_TOO = ("max", "min")


# ---- NumPy evaluation (folds) -------------------------------------------------------------------


def _wrapping(x: np.ndarray) -> np.ndarray:
    """An integer array as uint64 two's complement: arithmetic on it is modulo 2^64."""
    return x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)


def _float_reduce(kind: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    wide = x.astype(np.float64)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == "mean":
            total = wide.sum(axes, keepdims=True)
            return total / count if count else np.full_like(total, np.nan)
        if kind in ("max", "min", "log_sum_exp"):
            reduce = np.max if kind != "min" else np.min
            extreme = reduce(wide, axes, keepdims=True, initial=np.inf if kind == "min" else -np.inf)
            if kind != "log_sum_exp":
                return extreme
            shift = np.where(np.isfinite(extreme), extreme, 0.0)
            lse = shift + np.log(np.exp(wide - shift).sum(axes, keepdims=True))
            return np.where(np.isfinite(extreme), lse, extreme)
        terms = {"l1": np.abs(wide), "l2": wide * wide, "sum_square": wide * wide}.get(kind, wide)
        result = terms.prod(axes, keepdims=True) if kind == "prod" else terms.sum(axes, keepdims=True)
        return {"l2": np.sqrt, "log_sum": np.log}.get(kind, lambda v: v)(result)


def _integer_reduce(kind: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if kind in ("max", "min"):
        info = np.iinfo(x.dtype) if x.dtype != np.bool_ else None
        low, high = (0, 1) if info is None else (info.min, info.max)
        wide = x.astype(np.int64 if x.dtype.kind == "i" else np.uint64)
        found = np.max(wide, axes, keepdims=True, initial=low) if kind == "max" else \
            np.min(wide, axes, keepdims=True, initial=high)
        return found.astype(x.dtype)
    if kind in ("mean", "l2"):
        wide = x.astype(np.float64)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        if kind == "mean":
            value = wide.sum(axes, keepdims=True) / count if count else np.zeros(wide.sum(axes, keepdims=True).shape)
        else:
            value = np.sqrt((wide * wide).sum(axes, keepdims=True))
        info = np.iinfo(x.dtype)
        return np.clip(np.trunc(value), info.min, info.max).astype(x.dtype)
    bits = _wrapping(x)
    if kind == "l1" and x.dtype.kind == "i":
        bits = np.where(x < 0, np.uint64(0) - bits, bits)
    if kind == "sum_square":
        bits = bits * bits
    total = bits.prod(axes, keepdims=True, dtype=np.uint64) if kind == "prod" else \
        bits.sum(axes, keepdims=True, dtype=np.uint64)
    return total.astype(x.dtype)


def numpy_reduce(kind: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """The REDUCE layer's result for `x` (axes resolved; () applies the op per element)."""
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        result = _float_reduce(kind, x, axes).astype(x.dtype)
    else:
        result = _integer_reduce(kind, x, axes)
    return result if keepdims else result.reshape([s for i, s in enumerate(x.shape) if i not in axes])


def numpy_arg(x: np.ndarray, axis: int, is_max: bool, keepdims: bool, last: bool) -> np.ndarray:
    """ArgMax/ArgMin: the first (last) index of the most extreme value; a NaN is the most extreme."""
    wide = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else x
    if last:
        flipped = np.flip(wide, axis)
        found = x.shape[axis] - 1 - (np.argmax(flipped, axis) if is_max else np.argmin(flipped, axis))
    else:
        found = np.argmax(wide, axis) if is_max else np.argmin(wide, axis)
    found = np.asarray(found, np.int64)
    return np.expand_dims(found, axis) if keepdims else found


# ---- attributes --------------------------------------------------------------------------------------


def _flag(ctx: NodeContext, name: str, default: int) -> bool:
    value = int(ctx.attr(name, default))
    if value not in (0, 1):
        raise ctx.unsupported_value(name, value, "0, 1")
    return bool(value)


def _axes(ctx: NodeContext, axes_input_from: int, rank: int) -> tuple[int, ...]:
    """The resolved axes to reduce: () reduces nothing (noop_with_empty_axes)."""
    if ctx.opset < axes_input_from:
        if ctx.num_inputs > 1:
            raise ctx.error(f"takes one input before opset {axes_input_from} (axes is an attribute), got "
                            f"{ctx.num_inputs}")
        if ctx.has("noop_with_empty_axes"):
            raise ctx.error(f"attribute 'noop_with_empty_axes' exists from opset {axes_input_from}; the model's "
                            f"opset is {ctx.opset}")
    elif ctx.has("axes"):
        raise ctx.error(f"attribute 'axes' exists before opset {axes_input_from} only; from then on axes is "
                        f"input 1 (the model's opset is {ctx.opset})")
    axes = folding.axes_of(ctx, axes_input_from, required=False)
    noop = _flag(ctx, "noop_with_empty_axes", 0)
    if not axes:
        return () if noop else tuple(range(rank))
    return tuple(sorted(folding.normalize_axes(ctx, axes, rank)))


def _check_type(ctx: NodeContext, kind: str, dtype: Any) -> None:
    name = np.dtype(dtype).name
    if kind in _FLOAT_ONLY and not (np.dtype(dtype).kind == "f" or name == "bfloat16"):
        raise ctx.error(f"input 0 (data) has element type {name}; {ctx.op_type} takes float types in plugnn "
                        f"(log of an integer sum: cast the input to a float type)")
    if np.dtype(dtype) == np.bool_ and kind not in _BOOL_TOO:
        raise ctx.error(f"input 0 (data) is bool; {ctx.op_type} takes numeric types")


def _numpy_dtype(value: Any) -> Any:
    return value.dtype if isinstance(value, np.ndarray) else value.dtype.numpy_dtype


# ---- Reduce* ------------------------------------------------------------------------------------------


def _reduction(op_type: str, kind: str, axes_input_from: int) -> None:
    attributes = ("axes", "keepdims", "noop_with_empty_axes")

    def resolve(ctx: NodeContext) -> tuple[tuple[int, ...], bool]:
        value = ctx.value(0)
        _check_type(ctx, kind, _numpy_dtype(value))
        return _axes(ctx, axes_input_from, len(value.shape)), _flag(ctx, "keepdims", 1)

    def fold(ctx: NodeContext) -> list[Any]:
        axes, keepdims = resolve(ctx)
        return [numpy_reduce(kind, np.asarray(ctx.value(0)), axes, keepdims)]

    def convert(ctx: NodeContext) -> list[Any]:
        axes, keepdims = resolve(ctx)
        x = ctx.tensor(0, "data")
        return [ctx.network.add_reduce(kind, x, axes, keepdims, name=ctx.name())]

    op(op_type, attributes, fold=fold)(convert)


for _op_type, (_kind, _from) in _REDUCTIONS.items():
    _reduction(_op_type, _kind, _from)


# ---- ArgMax, ArgMin ------------------------------------------------------------------------------------


def _arg(op_type: str, kind: str) -> None:
    def resolve(ctx: NodeContext) -> tuple[int, bool, bool]:
        value = ctx.value(0)
        rank = len(value.shape)
        dtype = np.dtype(_numpy_dtype(value))
        if dtype == np.bool_:
            raise ctx.error(f"input 0 (data) is bool; {op_type} takes numeric types")
        if ctx.has("select_last_index") and ctx.opset < 12:
            raise ctx.error(f"attribute 'select_last_index' exists from opset 12; the model's opset is {ctx.opset}")
        axis = int(ctx.attr("axis", 0))
        if not -rank <= axis < rank:
            raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank}")
        axis %= rank
        if value.shape[axis] == 0:
            raise ctx.error(f"axis {axis} of input 0 (data) has size 0: {op_type} has no index to give")
        return axis, _flag(ctx, "keepdims", 1), _flag(ctx, "select_last_index", 0)

    def fold(ctx: NodeContext) -> list[Any]:
        axis, keepdims, last = resolve(ctx)
        return [numpy_arg(np.asarray(ctx.value(0)), axis, kind == "arg_max", keepdims, last)]

    def convert(ctx: NodeContext) -> list[Any]:
        axis, keepdims, last = resolve(ctx)
        x = ctx.tensor(0, "data")
        return [ctx.network.add_reduce(kind, x, (axis,), keepdims, select_last_index=last, name=ctx.name())]

    op(op_type, ("axis", "keepdims", "select_last_index"), fold=fold)(convert)


_arg("ArgMax", "arg_max")
_arg("ArgMin", "arg_min")
