"""Indexing operators: Gather, GatherElements, GatherND, ScatterElements, Scatter (opsets 9-10),
ScatterND and OneHot (NonZero: ops_data_dependent.py).

Each is a GATHER, SCATTER or ONE_HOT layer when an input is computed at run time, and is folded
with NumPy when every input is known at import (static shape chains such as Shape -> Gather ->
Unsqueeze -> Concat -> Reshape stay constants). Indices known at import are checked there, so a
bad one names the node; indices computed at run time are checked by the backend when it runs
(an out-of-range index fails run() naming the layer, the index and the axis size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import GatherOp, ScatterOp, ScatterReduction
from plugnn.onnx.context import NodeContext
from plugnn.onnx.static_inputs import dtype_of, static_ints
from plugnn.onnx.registry import op


def _axis(ctx: NodeContext, rank: int, default: int = 0) -> int:
    axis = int(ctx.attr("axis", default))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank} (input 0)")
    return axis % rank


def _index_input(ctx: NodeContext, i: int = 1) -> Any:
    """Input i (the indices): an int32 or int64 array or tensor."""
    value = ctx.value(i)
    if dtype_of(value) not in (np.int32, np.int64):
        raise ctx.error(f"input {i} (indices) has element type {dtype_of(value)}; int32 or int64 expected")
    return value


def _check_range(ctx: NodeContext, indices: np.ndarray, size: int, axis: int, what: str = "indices") -> None:
    bad = indices[(indices < -size) | (indices >= size)]
    if bad.size:
        raise ctx.error(f"{what} {int(bad.reshape(-1)[0])} is out of range for axis {axis} of size {size} "
                        f"(valid: {-size} to {size - 1})")


def _data_rank(ctx: NodeContext, minimum: int = 1) -> int:
    rank = len(ctx.shape(0))
    if rank < minimum:
        raise ctx.error(f"input 0 (data) must have rank >= {minimum}, got rank {rank}")
    return rank


# ---- Gather ------------------------------------------------------------------------------------


def _fold_gather(ctx: NodeContext) -> list[Any]:
    data, indices = ctx.value(0), _index_input(ctx)
    axis = _axis(ctx, _data_rank(ctx))
    _check_range(ctx, indices, data.shape[axis], axis)
    return [np.take(data, indices, axis=axis)]


@op("Gather", ("axis",), fold=_fold_gather)
def gather(ctx: NodeContext) -> list[Any]:
    axis = _axis(ctx, _data_rank(ctx))
    indices = _index_input(ctx)
    if isinstance(indices, np.ndarray):
        _check_range(ctx, indices, ctx.shape(0)[axis], axis)
    return [ctx.network.add_gather(ctx.tensor(0, "data"), ctx.tensor(1, "indices"), axis, GatherOp.TAKE,
                                   name=ctx.name())]


# ---- GatherElements ----------------------------------------------------------------------------


def _elements_shapes(ctx: NodeContext, data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int) -> None:
    if len(index_shape) != len(data_shape) or any(
            i > d for a, (i, d) in enumerate(zip(index_shape, data_shape)) if a != axis):
        raise ctx.error(f"input 1 (indices) of shape {list(index_shape)} must have the rank of data "
                        f"{list(data_shape)} and no larger dims except on axis {axis}")


def _fold_gather_elements(ctx: NodeContext) -> list[Any]:
    data, indices = ctx.value(0), _index_input(ctx)
    axis = _axis(ctx, _data_rank(ctx))
    _elements_shapes(ctx, data.shape, indices.shape, axis)
    _check_range(ctx, indices, data.shape[axis], axis)
    region = tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))
    return [np.take_along_axis(data[region], indices.astype(np.int64) % max(data.shape[axis], 1), axis=axis)]


@op("GatherElements", ("axis",), fold=_fold_gather_elements)
def gather_elements(ctx: NodeContext) -> list[Any]:
    axis = _axis(ctx, _data_rank(ctx))
    indices = _index_input(ctx)
    _elements_shapes(ctx, ctx.shape(0), ctx.shape(1), axis)
    if isinstance(indices, np.ndarray):
        _check_range(ctx, indices, ctx.shape(0)[axis], axis)
    return [ctx.network.add_gather(ctx.tensor(0, "data"), ctx.tensor(1, "indices"), axis, GatherOp.ELEMENTS,
                                   name=ctx.name())]


# ---- GatherND ----------------------------------------------------------------------------------


def _batch_dims(ctx: NodeContext) -> int:
    if ctx.has("batch_dims") and ctx.opset < 12:
        raise ctx.error(f"attribute 'batch_dims' is GatherND's from opset 12 (the model's opset is {ctx.opset})")
    b = int(ctx.attr("batch_dims", 0))
    data, indices = ctx.shape(0), ctx.shape(1)
    if b < 0 or b >= min(len(data), len(indices)) or data[:b] != indices[:b]:
        raise ctx.error(f"attribute 'batch_dims' = {b}: data {list(data)} and indices {list(indices)} must share "
                        f"their first {b} dims and both have more")
    k = indices[-1]
    if not 1 <= k <= len(data) - b:
        raise ctx.error(f"the last dim of input 1 (indices) {list(indices)} is {k}; it must be in 1..{len(data) - b} "
                        f"(data's rank {len(data)} minus batch_dims {b})")
    return b


def _nd_check(ctx: NodeContext, indices: np.ndarray, dims: tuple[int, ...]) -> None:
    for j, size in enumerate(dims):
        _check_range(ctx, indices[..., j], size, j, "an index")


def _fold_gather_nd(ctx: NodeContext) -> list[Any]:
    data, indices = ctx.value(0), _index_input(ctx)
    b = _batch_dims(ctx)
    k = indices.shape[-1]
    _nd_check(ctx, indices, data.shape[b:b + k])
    out = np.empty(indices.shape[:-1] + data.shape[b + k:], data.dtype)
    for where in np.ndindex(*indices.shape[:-1]):
        picked = tuple(int(i) for i in indices[where])
        out[where] = data[where[:b] + picked]
    return [out]


@op("GatherND", ("batch_dims",), fold=_fold_gather_nd)
def gather_nd(ctx: NodeContext) -> list[Any]:
    _data_rank(ctx)
    b = _batch_dims(ctx)
    indices = _index_input(ctx)
    if isinstance(indices, np.ndarray):
        _nd_check(ctx, indices, ctx.shape(0)[b:b + indices.shape[-1]])
    return [ctx.network.add_gather(ctx.tensor(0, "data"), ctx.tensor(1, "indices"), 0, GatherOp.ND, b,
                                   name=ctx.name())]


# ---- ScatterElements, Scatter, ScatterND -------------------------------------------------------

_REDUCTIONS = {"none": ScatterReduction.NONE, "add": ScatterReduction.ADD, "mul": ScatterReduction.MUL,
               "max": ScatterReduction.MAX, "min": ScatterReduction.MIN}


def _reduction(ctx: NodeContext) -> ScatterReduction:
    name = str(ctx.attr("reduction", "none"))
    allowed = ["none"] + (["add", "mul"] if ctx.opset >= 16 else []) + (["max", "min"] if ctx.opset >= 18 else [])
    if ctx.has("reduction") and ctx.opset < 16:
        raise ctx.error(f"attribute 'reduction' is {ctx.op_type}'s from opset 16 (the model's opset is {ctx.opset})")
    if name not in allowed:
        raise ctx.unsupported_value("reduction", name, f"{', '.join(allowed)} at opset {ctx.opset}")
    reduction = _REDUCTIONS[name]
    if reduction is not ScatterReduction.NONE and dtype_of(ctx.value(0)) == np.bool_:
        raise ctx.error(f"attribute 'reduction' = {name!r} needs numeric data, input 0 is bool")
    return reduction


def _updates_type(ctx: NodeContext) -> None:
    if dtype_of(ctx.value(2)) != dtype_of(ctx.value(0)):
        raise ctx.error(f"input 2 (updates) has element type {dtype_of(ctx.value(2))}, data has "
                        f"{dtype_of(ctx.value(0))}")


def _combine(out: np.ndarray, where: tuple[int, ...], update: Any, reduction: ScatterReduction) -> None:
    """One update as backend_api.h defines it (floats in double, integers wrapping)."""
    if reduction is ScatterReduction.NONE:
        out[where] = update
        return
    if out.dtype.kind == "f" or out.dtype.name == "bfloat16":
        a, v = float(out[where]), float(update)
        result: Any = {ScatterReduction.ADD: a + v, ScatterReduction.MUL: a * v,
                       ScatterReduction.MAX: v if v > a else a, ScatterReduction.MIN: v if v < a else a}[reduction]
        out[where] = np.array(result).astype(out.dtype)
        return
    a, v = int(out[where]), int(update)
    result = {ScatterReduction.ADD: a + v, ScatterReduction.MUL: a * v, ScatterReduction.MAX: max(a, v),
              ScatterReduction.MIN: min(a, v)}[reduction]
    bits = out.dtype.itemsize * 8
    result &= (1 << bits) - 1
    if out.dtype.kind == "i" and result >= 1 << (bits - 1):
        result -= 1 << bits
    out[where] = result


def _scatter_elements_checks(ctx: NodeContext) -> int:
    axis = _axis(ctx, _data_rank(ctx))
    _index_input(ctx)
    _updates_type(ctx)
    _elements_shapes(ctx, ctx.shape(0), ctx.shape(1), axis)
    if ctx.shape(2) != ctx.shape(1):
        raise ctx.error(f"input 2 (updates) of shape {list(ctx.shape(2))} must have the shape of the indices "
                        f"{list(ctx.shape(1))}")
    return axis


def _fold_scatter_elements(ctx: NodeContext) -> list[Any]:
    axis = _scatter_elements_checks(ctx)
    reduction = _reduction(ctx) if ctx.op_type == "ScatterElements" else ScatterReduction.NONE
    data, indices, updates = ctx.value(0), ctx.value(1), ctx.value(2)
    _check_range(ctx, indices, data.shape[axis], axis)
    out = data.copy()
    for where in np.ndindex(*indices.shape):
        target = list(where)
        target[axis] = int(indices[where]) % data.shape[axis]
        _combine(out, tuple(target), updates[where], reduction)
    return [out]


def _scatter_elements(ctx: NodeContext, reduction: ScatterReduction) -> list[Any]:
    axis = _scatter_elements_checks(ctx)
    indices = ctx.value(1)
    if isinstance(indices, np.ndarray):
        _check_range(ctx, indices, ctx.shape(0)[axis], axis)
    return [ctx.network.add_scatter(ctx.tensor(0, "data"), ctx.tensor(1, "indices"), ctx.tensor(2, "updates"), axis,
                                    ScatterOp.ELEMENTS, reduction, name=ctx.name())]


@op("ScatterElements", ("axis", "reduction"), fold=_fold_scatter_elements)
def scatter_elements(ctx: NodeContext) -> list[Any]:
    return _scatter_elements(ctx, _reduction(ctx))


def _scatter_opset(ctx: NodeContext) -> None:
    if ctx.opset >= 11:
        raise ctx.error(f"Scatter was replaced by ScatterElements in opset 11 (the model's opset is {ctx.opset})")


def _fold_scatter(ctx: NodeContext) -> list[Any]:
    _scatter_opset(ctx)
    return _fold_scatter_elements(ctx)


@op("Scatter", ("axis",), fold=_fold_scatter)
def scatter(ctx: NodeContext) -> list[Any]:
    _scatter_opset(ctx)
    return _scatter_elements(ctx, ScatterReduction.NONE)


def _scatter_nd_checks(ctx: NodeContext) -> int:
    data = ctx.shape(0)
    _data_rank(ctx)
    _index_input(ctx)
    _updates_type(ctx)
    indices = ctx.shape(1)
    k = indices[-1] if indices else 0
    if not indices or not 1 <= k <= len(data):
        raise ctx.error(f"input 1 (indices) of shape {list(indices)} needs rank >= 1 and a last dim in "
                        f"1..{len(data)} (data's rank)")
    expected = indices[:-1] + data[k:]
    if ctx.shape(2) != expected:
        raise ctx.error(f"input 2 (updates) of shape {list(ctx.shape(2))} must have shape indices[:-1] + data[k:] "
                        f"= {list(expected)}")
    return k


def _fold_scatter_nd(ctx: NodeContext) -> list[Any]:
    k = _scatter_nd_checks(ctx)
    reduction = _reduction(ctx)
    data, indices, updates = ctx.value(0), ctx.value(1), ctx.value(2)
    _nd_check(ctx, indices, data.shape[:k])
    out = data.copy()
    for tup in np.ndindex(*indices.shape[:-1]):
        base = tuple(int(i) % n for i, n in zip(indices[tup], data.shape))
        for rest in np.ndindex(*data.shape[k:]):
            _combine(out, base + rest, updates[tup + rest], reduction)
    return [out]


@op("ScatterND", ("reduction",), fold=_fold_scatter_nd)
def scatter_nd(ctx: NodeContext) -> list[Any]:
    k = _scatter_nd_checks(ctx)
    reduction = _reduction(ctx)
    indices = ctx.value(1)
    if isinstance(indices, np.ndarray):
        _nd_check(ctx, indices, ctx.shape(0)[:k])
    return [ctx.network.add_scatter(ctx.tensor(0, "data"), ctx.tensor(1, "indices"), ctx.tensor(2, "updates"), 0,
                                    ScatterOp.ND, reduction, name=ctx.name())]


# ---- OneHot ------------------------------------------------------------------------------------


def _one_hot_args(ctx: NodeContext) -> tuple[int, int]:
    if dtype_of(ctx.value(0)) == np.bool_:
        raise ctx.error("input 0 (indices) is bool; numeric indices expected")
    depth_values = static_ints(ctx, 1, "depth", "the depth is the size of the output's new axis", integral=False)
    if len(depth_values) != 1 or depth_values[0] < 1:
        raise ctx.error(f"input 1 (depth) must be one value >= 1, got {depth_values}")
    if ctx.shape(2) not in ((2,),):
        raise ctx.error(f"input 2 (values) must be [off_value, on_value] of shape [2], got {list(ctx.shape(2))}")
    rank = len(ctx.shape(0)) + 1
    axis = int(ctx.attr("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for the output's rank {rank}")
    return depth_values[0], axis


def _fold_one_hot(ctx: NodeContext) -> list[Any]:
    depth, axis = _one_hot_args(ctx)
    indices, values = ctx.value(0), ctx.value(2)
    ctx.check_result_size(list(indices.shape) + [depth], np.float64)  # the comparison's temporaries
    flat = np.trunc(indices.astype(np.float64)).reshape(-1)
    hot = np.where(flat < 0, flat + depth, flat)
    rows = np.where(np.arange(depth)[None, :] == hot[:, None], values[1], values[0]).astype(values.dtype)
    out = rows.reshape(indices.shape + (depth,))
    return [np.ascontiguousarray(np.moveaxis(out, -1, axis))]


@op("OneHot", ("axis",), fold=_fold_one_hot)
def one_hot(ctx: NodeContext) -> list[Any]:
    depth, axis = _one_hot_args(ctx)
    return [ctx.network.add_one_hot(ctx.tensor(0, "indices"), depth, ctx.tensor(2, "values"), axis, name=ctx.name())]
