"""BitCast (opset 26): one BITCAST layer, the bits of each element reinterpreted as another type
of the same size (ONNX defines the bytes as little-endian, plugnn tensors are in host order: the
same on the little-endian hosts plugnn runs on).

Its own layer kind because no other layer changes an element's type without converting its
value (Cast converts, Reshape keeps the type)."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.ops_sampling import since
from plugnn.onnx.ops_shape import _target
from plugnn.onnx.registry import op
from plugnn.tensor import DataType


def _to(ctx: NodeContext, source: DataType) -> DataType:
    since(ctx, 26)
    to = ctx.attr("to")
    if to is None:
        raise ctx.error("attribute 'to' is required")
    target = _target(ctx, int(to), f"attribute 'to' = {int(to)}")
    if target.itemsize != source.itemsize:
        raise ctx.error(f"attribute 'to' = {target.numpy_name} ({8 * target.itemsize} bits) and the input's "
                        f"{source.numpy_name} ({8 * source.itemsize} bits) differ in width")
    return target


def _fold(ctx: NodeContext) -> list[Any] | None:
    x = np.ascontiguousarray(ctx.value(0))
    try:
        source = DataType.from_any(x.dtype)
    except ValueError:
        raise ctx.error(f"input 0 has element type {x.dtype}, which plugnn tensors cannot hold") from None
    target = _to(ctx, source)
    y = x.view(target.numpy_dtype)
    if target is DataType.BOOL and source is not DataType.BOOL and y.view(np.uint8).max(initial=0) > 1:
        raise ctx.error("the input holds a byte other than 0 or 1, which is no bool")
    return [y]


@op("BitCast", ("to",), fold=_fold)
def bitcast(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "input")
    target = _to(ctx, x.dtype)
    if target == x.dtype:
        return [ctx.network.add_identity(x, name=ctx.name())]
    return [ctx.network.add_bitcast(x, target, name=ctx.name())]
