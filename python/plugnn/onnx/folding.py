"""NumPy evaluation of metadata nodes whose inputs are all known at import time.

These are the static shape computations exporters emit (Shape -> Gather -> Unsqueeze ->
Concat -> Reshape, ConstantOfShape) and pure data movement of constants (Reshape/Transpose/
Concat of an initializer). The elementwise operators' folds (arithmetic, comparisons, Where,
Cast, ...) follow ONNX's semantics in numeric.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from plugnn import shapes
from plugnn.onnx.context import NodeContext
from plugnn.symbolic import product


def axes_of(ctx: NodeContext, attr_until: int, what: str = "axes", required: bool = True) -> list[int] | None:
    """`axes` from the attribute (opset < attr_until) or from input 1 (opset >= attr_until)."""
    if ctx.opset < attr_until:
        axes = ctx.ints("axes")
    elif ctx.has_input(1):
        axes = [int(a) for a in np.asarray(ctx.const(1, what)).reshape(-1)]
    else:
        axes = None
    if axes is None and required:
        raise ctx.error(f"{what} are required")
    return axes


def normalize_axes(ctx: NodeContext, axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(f"{what} {list(axes)}: {a} is out of range for rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ctx.error(f"{what} {list(axes)} repeat an axis")
    return out


def squeeze_shape(ctx: NodeContext, shape: tuple[int, ...], axes: list[int] | None) -> list[int]:
    if axes is None:
        return [s for s in shape if s != 1]
    picked = normalize_axes(ctx, axes, len(shape))
    for a in picked:
        if shape[a] != 1:
            raise ctx.error(f"cannot squeeze axis {a} of shape {list(shape)}: its size is {shape[a]}, not 1")
    return [s for i, s in enumerate(shape) if i not in picked]


def unsqueeze_shape(ctx: NodeContext, shape: tuple[int, ...], axes: list[int]) -> list[int]:
    rank = len(shape) + len(axes)
    picked = sorted(normalize_axes(ctx, axes, rank))
    out = list(shape)
    for a in picked:
        out.insert(a, 1)
    return out


def reshape_target(ctx: NodeContext, in_shape: tuple[int, ...]) -> tuple[int, ...]:
    if ctx.opset < 5:  # pragma: no cover - opset >= 7 is imported
        target = ctx.ints("shape")
    else:
        target = ctx.shape_values(1, "shape")
    allowzero = int(ctx.attr("allowzero", 0))
    if allowzero not in (0, 1):
        raise ctx.unsupported_value("allowzero", allowzero, "0, 1")
    if allowzero and 0 in target and -1 in target:
        raise ctx.error(f"shape {target} has both 0 (allowzero=1) and -1")
    try:
        return shapes.resolve_reshape(in_shape, target, allow_zero_copy=not allowzero)
    except ValueError as exc:
        raise ctx.error(f"cannot reshape {list(in_shape)} to {target}: {exc}") from None


def flatten_shape(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[int, int]:
    rank = len(shape)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    return product(shape[:axis]), product(shape[axis:])


