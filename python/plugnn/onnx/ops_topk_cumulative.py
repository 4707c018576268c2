"""TopK (opset 1: attribute k; 10: input K; 11: largest, sorted), CumSum (11, 14) and CumProd
(26): one TOP_K or CUMULATIVE layer each.

TopK's k sets its outputs' shapes, which plugnn fixes when it builds the network: K must be
known at import time (an initializer, a Constant or a folded shape computation), as must
CumSum's and CumProd's axis. Equal values keep the lower index first and a NaN counts as
larger than every number (onnxruntime and ONNX's reference agree); with sorted = 0 the layer
still sorts. Nodes whose data is known at import time are folded with NumPy by the same rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op

_K_WHAT = "K (the number of values, which fixes the output shapes plugnn builds at import)"


def _numpy_dtype(value: Any) -> np.dtype:
    return np.dtype(value.dtype if isinstance(value, np.ndarray) else value.dtype.numpy_dtype)


def _numeric(ctx: NodeContext, what: str) -> np.dtype:
    dtype = _numpy_dtype(ctx.value(0))
    if dtype == np.bool_ or not (dtype.kind in "iuf" or dtype.name == "bfloat16"):
        raise ctx.error(f"input 0 ({what}) has element type {dtype.name}; {ctx.op_type} takes numeric types")
    return dtype


def _flag(ctx: NodeContext, name: str, default: int) -> bool:
    value = int(ctx.attr(name, default))
    if value not in (0, 1):
        raise ctx.unsupported_value(name, value, "0, 1")
    return bool(value)


# ---- TopK ------------------------------------------------------------------------------------------------


def _top_k_arguments(ctx: NodeContext) -> tuple[int, int, bool, bool]:
    """(k, axis resolved, largest, sorted)."""
    _numeric(ctx, "X")
    shape = tuple(ctx.value(0).shape)
    rank = len(shape)
    if ctx.opset < 10:
        if not ctx.has("k"):
            raise ctx.error("attribute 'k' is required (before opset 10)")
        k = int(ctx.attr("k"))
    else:
        if ctx.has("k"):
            raise ctx.error(f"attribute 'k' exists before opset 10 only; from then on K is input 1 (the model's "
                            f"opset is {ctx.opset})")
        if not ctx.has_input(1):
            raise ctx.error("input 1 (K) is required")
        values = np.asarray(ctx.const(1, _K_WHAT))
        if values.dtype.kind not in "iu" or values.size != 1:
            raise ctx.error(f"input 1 (K) must hold one integer, got {values.dtype} of shape {list(values.shape)}")
        k = int(values.reshape(-1)[0])
    for name in ("largest", "sorted"):
        if ctx.has(name) and ctx.opset < 11:
            raise ctx.error(f"attribute {name!r} exists from opset 11; the model's opset is {ctx.opset}")
    axis = int(ctx.attr("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank}")
    axis %= rank
    if not 0 <= k <= shape[axis]:
        raise ctx.error(f"k = {k} must be in 0..{shape[axis]} (the size of axis {axis} of X {list(shape)})")
    return k, axis, _flag(ctx, "largest", 1), _flag(ctx, "sorted", 1)


def numpy_top_k(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (smallest) values along axis and their int64 indices: ties in index order, NaN
    larger than every number."""
    wide = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else x
    index = np.indices(x.shape)[axis] if x.ndim else np.zeros((), np.int64)
    if largest:  # NaN first, then descending values, then ascending index
        nan = np.isnan(wide) if wide.dtype.kind == "f" else np.zeros(x.shape, bool)
        descending = -np.where(nan, 0, wide) if wide.dtype.kind == "f" else \
            (np.iinfo(wide.dtype).max - wide if wide.dtype.kind == "u" else ~wide)  # ~v reverses order, no overflow
        order = np.lexsort((index, descending, ~nan), axis=axis)
    else:  # ascending values (NumPy's sort puts NaN last), then ascending index
        order = np.lexsort((index, wide), axis=axis)
    picked = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, picked, axis), picked.astype(np.int64)


def _fold_top_k(ctx: NodeContext) -> list[Any]:
    k, axis, largest, _ = _top_k_arguments(ctx)
    values, indices = numpy_top_k(np.asarray(ctx.value(0)), k, axis, largest)
    return [values, indices]


@op("TopK", ("axis", "k", "largest", "sorted"), fold=_fold_top_k)
def top_k(ctx: NodeContext) -> list[Any]:
    k, axis, largest, is_sorted = _top_k_arguments(ctx)
    values, indices = ctx.network.add_top_k(ctx.tensor(0, "X"), k, axis, largest, is_sorted, name=ctx.name())
    return [values, indices]


# ---- CumSum, CumProd ---------------------------------------------------------------------------------------


def _cumulative_arguments(ctx: NodeContext) -> tuple[int, bool, bool]:
    _numeric(ctx, "x")
    rank = len(ctx.value(0).shape)
    if not ctx.has_input(1):
        raise ctx.error("input 1 (axis) is required")
    value = np.asarray(ctx.const(1, "axis"))
    if value.dtype.kind not in "iu" or value.size != 1 or value.ndim > 1:
        raise ctx.error(f"input 1 (axis) must be one integer (a scalar), got {value.dtype} of shape "
                        f"{list(value.shape)}")
    axis = int(value.reshape(-1)[0])
    if not -rank <= axis < rank:
        raise ctx.error(f"input 1 (axis) = {axis} is out of range for rank {rank}")
    return axis % rank, _flag(ctx, "exclusive", 0), _flag(ctx, "reverse", 0)


def numpy_cumulative(x: np.ndarray, axis: int, prod: bool, exclusive: bool, reverse: bool) -> np.ndarray:
    """Floats in float64 rounded once to x's type; integers modulo 2^bits."""
    is_float = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    work = x.astype(np.float64) if is_float else \
        (x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64))
    if reverse:
        work = np.flip(work, axis)
    if exclusive and work.shape[axis]:
        first = np.take(work, [0], axis)
        identity = np.ones_like(first) if prod else np.zeros_like(first)
        work = np.concatenate([identity, np.take(work, np.arange(work.shape[axis] - 1), axis)], axis)
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.cumprod(work, axis, dtype=work.dtype) if prod else np.cumsum(work, axis, dtype=work.dtype)
    if reverse:
        result = np.flip(result, axis)
    return np.ascontiguousarray(result.astype(x.dtype))


def _cumulative(op_type: str, kind: str) -> None:
    def fold(ctx: NodeContext) -> list[Any]:
        axis, exclusive, reverse = _cumulative_arguments(ctx)
        return [numpy_cumulative(np.asarray(ctx.value(0)), axis, kind == "prod", exclusive, reverse)]

    def convert(ctx: NodeContext) -> list[Any]:
        axis, exclusive, reverse = _cumulative_arguments(ctx)
        return [ctx.network.add_cumulative(kind, ctx.tensor(0, "x"), axis, exclusive, reverse, name=ctx.name())]

    op(op_type, ("exclusive", "reverse"), fold=fold)(convert)


_cumulative("CumSum", "sum")
_cumulative("CumProd", "prod")
