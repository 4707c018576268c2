"""Convolution and pooling: Conv, MaxPool, AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool.

plugnn's layers are 2-D (NCHW). 1-D operators (rank-3 input [N, C, L]) are imported exactly as
a reshape to [N, C, 1, L], the 2-D layer with a 1-high window, and a reshape back. 3-D and
higher are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _spatial_rank(ctx: NodeContext, rank: int, what: str) -> int:
    if rank not in (3, 4):
        raise ctx.error(f"{what} input has rank {rank} ({rank - 2}-D); plugnn imports 1-D and 2-D "
                        f"{ctx.op_type} only (rank 3 or 4 input)")
    return rank - 2


def _window_params(ctx: NodeContext, in_spatial: tuple[int, ...], kernel: list[int], ceil_mode: bool = False
                   ) -> tuple[list[int], list[int], list[int], list[int]]:
    """strides, dilations, pads_begin, pads_end for the node (auto_pad resolved from static shapes)."""
    k = len(kernel)
    strides = ctx.ints("strides", [1] * k)
    dilations = ctx.ints("dilations", [1] * k)
    if len(strides) != k or min(strides, default=1) < 1:
        raise ctx.unsupported_value("strides", strides, f"{k} integers >= 1")
    if len(dilations) != k or min(dilations, default=1) < 1:
        raise ctx.unsupported_value("dilations", dilations, f"{k} integers >= 1")
    auto_pad = str(ctx.attr("auto_pad", "NOTSET"))
    if auto_pad not in AUTO_PADS:
        raise ctx.unsupported_value("auto_pad", auto_pad, ", ".join(AUTO_PADS))
    if auto_pad == "NOTSET":
        pads = ctx.ints("pads", [0] * (2 * k))
        if len(pads) != 2 * k or min(pads, default=0) < 0:
            raise ctx.unsupported_value("pads", pads, f"{2 * k} integers >= 0 (begins, then ends)")
        return strides, dilations, pads[:k], pads[k:]
    if ctx.has("pads"):
        raise ctx.error(f"attribute 'pads' cannot be combined with auto_pad={auto_pad}")
    if auto_pad == "VALID":
        return strides, dilations, [0] * k, [0] * k
    begins, ends = [], []
    for size, kern, stride, dil in zip(in_spatial, kernel, strides, dilations):
        out = -(-size // stride)
        total = max(0, (out - 1) * stride + (kern - 1) * dil + 1 - size)
        small = total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else total - small)
        ends.append(total - small if auto_pad == "SAME_UPPER" else small)
    return strides, dilations, begins, ends


def _to_2d(ctx: NodeContext, x: Any, spatial: int) -> Any:
    if spatial == 2:
        return x
    n, c, length = x.shape
    return ctx.network.add_reshape(x, (n, c, 1, length), name=ctx.aux("to_2d"))


def _from_2d(ctx: NodeContext, y: Any, spatial: int) -> Any:
    if spatial == 2:
        return y
    n, c, _, length = y.shape
    return ctx.network.add_reshape(y, (n, c, length), name=ctx.aux("to_1d"))


def _lift(values: list[int], spatial: int, fill: int) -> list[int]:
    return values if spatial == 2 else [fill, *values]


@op("Conv", ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def conv(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    spatial = _spatial_rank(ctx, len(x.shape), "X")
    w_shape = ctx.shape(1)
    if len(w_shape) != spatial + 2:
        raise ctx.error(f"weights W have shape {list(w_shape)}; expected rank {spatial + 2} for a {spatial}-D Conv")
    kernel = list(w_shape[2:])
    declared = ctx.ints("kernel_shape")
    if declared is not None and declared != kernel:
        raise ctx.unsupported_value("kernel_shape", declared, f"the weights' spatial shape {kernel}")
    group = int(ctx.attr("group", 1))
    if group < 1:
        raise ctx.unsupported_value("group", group, "an integer >= 1")
    strides, dilations, begins, ends = _window_params(ctx, tuple(x.shape[2:]), kernel)
    if spatial == 1:
        if ctx.is_const(1):
            weights = ctx.array_tensor(ctx.value(1).reshape(w_shape[0], w_shape[1], 1, w_shape[2]), "weights_2d")
        else:
            weights = ctx.network.add_reshape(ctx.tensor(1, "W"), (w_shape[0], w_shape[1], 1, w_shape[2]),
                                              name=ctx.aux("weights_2d"))
    else:
        weights = ctx.tensor(1, "W")
    bias = ctx.tensor(2, "B") if ctx.has_input(2) else None
    begins, ends = _lift(begins, spatial, 0), _lift(ends, spatial, 0)
    y = ctx.network.add_convolution2d(
        _to_2d(ctx, x, spatial), weights, bias, stride=_lift(strides, spatial, 1),
        padding=(begins[0], begins[1], ends[0], ends[1]), dilation=_lift(dilations, spatial, 1),
        groups=group, name=ctx.name())
    return [_from_2d(ctx, y, spatial)]


def _pool(ctx: NodeContext, kind: str, p: float = 2.0) -> list[Any]:
    x = ctx.tensor(0, "X")
    spatial = _spatial_rank(ctx, len(x.shape), "X")
    kernel = ctx.ints("kernel_shape")
    if kernel is None:
        raise ctx.error("attribute 'kernel_shape' is required")
    if len(kernel) != spatial or min(kernel) < 1:
        raise ctx.unsupported_value("kernel_shape", kernel, f"{spatial} integers >= 1 (one per spatial axis)")
    ceil_mode = int(ctx.attr("ceil_mode", 0))
    if ceil_mode not in (0, 1):
        raise ctx.unsupported_value("ceil_mode", ceil_mode, "0, 1")
    include = int(ctx.attr("count_include_pad", 0))
    if include not in (0, 1):
        raise ctx.unsupported_value("count_include_pad", include, "0, 1")
    strides, dilations, begins, ends = _window_params(ctx, tuple(x.shape[2:]), kernel, bool(ceil_mode))
    begins, ends = _lift(begins, spatial, 0), _lift(ends, spatial, 0)
    y = ctx.network.add_pooling2d(
        _to_2d(ctx, x, spatial), kind, _lift(kernel, spatial, 1), stride=_lift(strides, spatial, 1),
        padding=(begins[0], begins[1], ends[0], ends[1]), dilation=_lift(dilations, spatial, 1),
        ceil_mode=bool(ceil_mode), count_include_pad=bool(include), p=p, name=ctx.name())
    return [_from_2d(ctx, y, spatial)]


@op("MaxPool", ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"),
    outputs_note="the Indices output is not produced")
def max_pool(ctx: NodeContext) -> list[Any]:
    if ctx.output_used(1):
        raise ctx.error("output 1 (Indices) is used; plugnn's max pooling does not produce indices")
    order = int(ctx.attr("storage_order", 0))
    if order != 0:
        raise ctx.unsupported_value("storage_order", order, "0 (row major; it only affects the Indices output)")
    return [*_pool(ctx, "max"), None]


@op("AveragePool", ("auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"))
def average_pool(ctx: NodeContext) -> list[Any]:
    return _pool(ctx, "average")


@op("LpPool", ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"))
def lp_pool(ctx: NodeContext) -> list[Any]:
    p = ctx.attr("p", 2)
    if not float(p) > 0:
        raise ctx.unsupported_value("p", p, "a number > 0")
    return _pool(ctx, "lp", float(p))


def _global(ctx: NodeContext, kind: str) -> list[Any]:
    x = ctx.tensor(0, "X")
    shape = x.shape
    if len(shape) < 3:
        raise ctx.error(f"input has rank {len(shape)}; global pooling needs rank >= 3 ([N, C, spatial...])")
    if len(shape) == 4:
        return [ctx.network.add_global_pooling2d(x, kind, name=ctx.name())]
    n, c = shape[:2]
    size = int(np.prod(shape[2:], dtype=np.int64))
    flat = ctx.network.add_reshape(x, (n, c, 1, size), name=ctx.aux("to_2d"))
    y = ctx.network.add_global_pooling2d(flat, kind, name=ctx.name())
    return [ctx.network.add_reshape(y, (n, c, *([1] * (len(shape) - 2))), name=ctx.aux("to_nd"))]


@op("GlobalAveragePool")
def global_average_pool(ctx: NodeContext) -> list[Any]:
    return _global(ctx, "average")


@op("GlobalMaxPool")
def global_max_pool(ctx: NodeContext) -> list[Any]:
    return _global(ctx, "max")
