"""Operators whose output shapes depend on the data: NonZero, Unique, NonMaxSuppression, Compress.

With every input known at import they fold with NumPy (the same rules as CpuRef's kernels).
Compress with a condition known at import is a GATHER of the selected indices (a static shape).
Otherwise each is a DATA_DEPENDENT layer (backend_api.h, "Data-dependent layers") whose outputs
hold upper bounds of their shapes: as graph outputs they come back from run() in their actual
shapes; a node reading one needs the dynamic path (plugnn.dynamic runs it in a segment
specialized for the actual shape).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import DataDependentOp, GatherOp
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op


def _axis(ctx: NodeContext, rank: int) -> int | None:
    if not ctx.has("axis"):
        return None
    axis = int(ctx.attr("axis"))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank} (input 0)")
    return axis % rank


# ---- NonZero ----------------------------------------------------------------------------------


def _fold_non_zero(ctx: NodeContext) -> list[Any]:
    x = np.atleast_1d(ctx.value(0))
    return [np.array(np.nonzero(x), np.int64).reshape(x.ndim, -1)]


@op("NonZero", (), fold=_fold_non_zero)
def non_zero(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    if x.info.rank == 0:  # ONNX reads a scalar as one element: the output is [1, n]
        x = ctx.network.add_reshape(x, (1,), name=ctx.aux("as_1d"))
    return [ctx.network.add_data_dependent(DataDependentOp.NON_ZERO, [x], name=ctx.name())[0]]


# ---- Unique ------------------------------------------------------------------------------------


def _unique_args(ctx: NodeContext) -> tuple[int | None, bool]:
    sorted_ = int(ctx.attr("sorted", 1))
    if sorted_ not in (0, 1):
        raise ctx.unsupported_value("sorted", sorted_, "0, 1")
    return _axis(ctx, len(ctx.shape(0))), bool(sorted_)


def _fold_unique(ctx: NodeContext) -> list[Any]:
    axis, sorted_ = _unique_args(ctx)
    x = np.asarray(ctx.value(0))
    items = x.reshape(-1) if axis is None else np.moveaxis(x, axis, 0)
    count = items.shape[0]
    first: dict[Any, int] = {}  # each item's first position, in order of first occurrence
    for i in range(count):
        first.setdefault(_equal_key(items[i]), i)
    groups = sorted(first.values(), key=lambda i: _sort_key(items[i])) if sorted_ else list(first.values())
    position = {_equal_key(items[g]): k for k, g in enumerate(groups)}
    inverse = np.array([position[_equal_key(items[i])] for i in range(count)], np.int64)
    counts = np.bincount(inverse, minlength=len(groups)).astype(np.int64)
    chosen = items[np.array(groups, np.int64)]
    y = chosen if axis is None else np.moveaxis(chosen, 0, axis)
    return [np.ascontiguousarray(y), np.array(groups, np.int64), inverse, counts]


def _equal_key(item: np.ndarray) -> Any:
    """Items are equal when their elements are (NaNs equal, -0.0 equal to 0.0)."""
    values = np.atleast_1d(item).reshape(-1)
    if values.dtype.kind == "f":
        return tuple("nan" if v != v else float(v) + 0.0 for v in values.astype(np.float64))
    return tuple(v.item() for v in values)


def _sort_key(item: np.ndarray) -> Any:
    """Lexicographic by elements, NaN after every number."""
    values = np.atleast_1d(item).reshape(-1)
    if values.dtype.kind == "f":
        return tuple((1, 0.0) if v != v else (0, float(v)) for v in values.astype(np.float64))
    return tuple(v.item() for v in values)


@op("Unique", ("axis", "sorted"), fold=_fold_unique)
def unique(ctx: NodeContext) -> list[Any]:
    axis, sorted_ = _unique_args(ctx)
    return list(ctx.network.add_data_dependent(DataDependentOp.UNIQUE, [ctx.tensor(0, "X")], axis=axis,
                                               sorted=sorted_, name=ctx.name()))


# ---- NonMaxSuppression ---------------------------------------------------------------------------


@op("NonMaxSuppression", ("center_point_box",))
def non_max_suppression(ctx: NodeContext) -> list[Any]:
    center = int(ctx.attr("center_point_box", 0))
    if center not in (0, 1):
        raise ctx.unsupported_value("center_point_box", center, "0 (corners), 1 (center and size)")
    boxes, scores = ctx.tensor(0, "boxes"), ctx.tensor(1, "scores")
    inputs = [boxes, scores]
    last = max((i for i in range(2, min(ctx.num_inputs, 5)) if ctx.has_input(i)), default=1)
    defaults = {2: np.zeros(1, np.int64), 3: np.zeros(1, boxes.dtype.numpy_dtype)}
    roles = {2: "max_output_boxes_per_class", 3: "iou_threshold", 4: "score_threshold"}
    for i in range(2, last + 1):
        if ctx.has_input(i):
            inputs.append(ctx.tensor(i, roles[i]))
        else:  # an empty name before a given input: ONNX's default
            inputs.append(ctx.array_tensor(defaults[i], roles[i]))
    return [ctx.network.add_data_dependent(DataDependentOp.NON_MAX_SUPPRESSION, inputs, center_point_box=bool(center),
                                           name=ctx.name())[0]]


# ---- Compress --------------------------------------------------------------------------------------


def _selected(ctx: NodeContext, axis: int | None) -> np.ndarray:
    condition = np.asarray(ctx.value(1))
    if condition.ndim != 1:
        raise ctx.error(f"input 1 (condition) must have rank 1, got shape {list(condition.shape)}")
    shape = ctx.shape(0)
    span = int(np.prod(shape, dtype=np.int64)) if axis is None else shape[axis]
    if condition.shape[0] > span:
        raise ctx.error(f"input 1 (condition) has {condition.shape[0]} elements, more than the {span} it selects "
                        f"from")
    return np.nonzero(condition.astype(bool))[0].astype(np.int64)


def _fold_compress(ctx: NodeContext) -> list[Any]:
    axis = _axis(ctx, len(ctx.shape(0)))
    x = np.asarray(ctx.value(0))
    picked = _selected(ctx, axis)
    return [np.ascontiguousarray(np.take(x.reshape(-1) if axis is None else x, picked, axis=axis or 0))]


@op("Compress", ("axis",), fold=_fold_compress)
def compress(ctx: NodeContext) -> list[Any]:
    axis = _axis(ctx, len(ctx.shape(0)))
    x = ctx.tensor(0, "input")
    if ctx.is_const(1):  # the selection is known: a gather of fixed indices (a static shape)
        picked = _selected(ctx, axis)
        source = x if axis is not None else ctx.network.add_reshape(x, (-1,), name=ctx.aux("flat"))
        return [ctx.network.add_gather(source, ctx.array_tensor(picked, "indices"), axis or 0, GatherOp.TAKE,
                                       name=ctx.name())]
    return [ctx.network.add_data_dependent(DataDependentOp.COMPRESS, [x, ctx.tensor(1, "condition")], axis=axis,
                                           name=ctx.name())[0]]
