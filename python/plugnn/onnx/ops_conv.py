"""Convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool, LpPool, GlobalAveragePool,
GlobalMaxPool, GlobalLpPool.

2-D Conv and 2-D float pooling map onto CONVOLUTION_2D / POOLING_2D (which CpuAcc runs fast).
1-D float pooling is imported exactly as a reshape to [N, C, 1, L], the 2-D layer with a 1-high
window, and a reshape back. 1-D and 3-D Conv, every ConvTranspose, 3-D pooling and MaxPool on
integer types map onto the N-D kinds CONVOLUTION and POOLING. Global pooling of any rank reduces
the flattened spatial axes with one 2-D pooling layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import ConvolutionDescriptor, ConvolutionOp, PoolingDescriptor
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _spatial_rank(ctx: NodeContext, rank: int, what: str) -> int:
    if rank not in (3, 4, 5):
        raise ctx.error(f"{what} input has rank {rank}; plugnn imports 1-D, 2-D and 3-D {ctx.op_type} "
                        f"(rank 3, 4 or 5 input [N, C, spatial...])")
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


def _kernel(ctx: NodeContext, w_shape: tuple[int, ...], spatial: int) -> list[int]:
    if len(w_shape) != spatial + 2:
        raise ctx.error(f"weights W have shape {list(w_shape)}; expected rank {spatial + 2} for a {spatial}-D "
                        f"{ctx.op_type}")
    kernel = list(w_shape[2:])
    declared = ctx.ints("kernel_shape")
    if declared is not None and declared != kernel:
        raise ctx.unsupported_value("kernel_shape", declared, f"the weights' spatial shape {kernel}")
    return kernel


def _group(ctx: NodeContext) -> int:
    group = int(ctx.attr("group", 1))
    if group < 1:
        raise ctx.unsupported_value("group", group, "an integer >= 1")
    return group


@op("Conv", ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def conv(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    spatial = _spatial_rank(ctx, len(x.shape), "X")
    kernel = _kernel(ctx, ctx.shape(1), spatial)
    group = _group(ctx)
    strides, dilations, begins, ends = _window_params(ctx, tuple(x.shape[2:]), kernel)
    weights = ctx.tensor(1, "W")
    bias = ctx.tensor(2, "B") if ctx.has_input(2) else None
    if spatial != 2:
        desc = ConvolutionDescriptor(ConvolutionOp.FORWARD, tuple(strides), tuple(begins), tuple(ends),
                                     tuple(dilations), (0,) * spatial, group)
        return [ctx.network.add_convolution(x, weights, bias, descriptor=desc, name=ctx.name())]
    return [ctx.network.add_convolution2d(
        x, weights, bias, stride=strides, padding=(begins[0], begins[1], ends[0], ends[1]), dilation=dilations,
        groups=group, name=ctx.name())]


def _transposed_pads(ctx: NodeContext, in_spatial: tuple[int, ...], kernel: list[int], strides: list[int],
                     dilations: list[int], extra: list[int]) -> tuple[list[int], list[int], list[int]]:
    """pads_begin, pads_end and output_padding of a ConvTranspose: from output_shape or SAME_* as
    ONNX's equations say (total = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - out;
    SAME_UPPER puts total // 2 first, the others total - total // 2), from `pads` otherwise. An
    output larger than the full output (total < 0) gets its extra positions at the end."""
    k = len(kernel)
    auto_pad = str(ctx.attr("auto_pad", "NOTSET"))
    if auto_pad not in AUTO_PADS:
        raise ctx.unsupported_value("auto_pad", auto_pad, ", ".join(AUTO_PADS))
    shape = ctx.ints("output_shape")
    if shape is None and auto_pad in ("NOTSET", "VALID"):
        pads = ctx.ints("pads", [0] * (2 * k)) if auto_pad == "NOTSET" else [0] * (2 * k)
        if auto_pad == "VALID" and ctx.has("pads"):
            raise ctx.error("attribute 'pads' cannot be combined with auto_pad=VALID")
        if len(pads) != 2 * k or min(pads, default=0) < 0:
            raise ctx.unsupported_value("pads", pads, f"{2 * k} integers >= 0 (begins, then ends)")
        return pads[:k], pads[k:], extra
    if shape is None:
        if ctx.has("pads"):
            raise ctx.error(f"attribute 'pads' cannot be combined with auto_pad={auto_pad}")
        shape = [size * stride for size, stride in zip(in_spatial, strides)]
    elif len(shape) == k + 2:
        shape = shape[2:]
    if len(shape) != k or min(shape, default=0) < 0:
        raise ctx.unsupported_value("output_shape", ctx.ints("output_shape"),
                                    f"{k} sizes >= 0 (one per spatial axis)")
    begins, ends, padding = [], [], list(extra)
    for a in range(k):
        total = strides[a] * (in_spatial[a] - 1) + extra[a] + (kernel[a] - 1) * dilations[a] + 1 - shape[a]
        if total < 0:
            begins.append(0)
            ends.append(0)
            padding[a] += -total
            continue
        small = total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else total - small)
        ends.append(total - small if auto_pad == "SAME_UPPER" else small)
    return begins, ends, padding


@op("ConvTranspose", ("auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
                      "strides"))
def conv_transpose(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    spatial = _spatial_rank(ctx, len(x.shape), "X")
    w_shape = ctx.shape(1)
    kernel = _kernel(ctx, w_shape, spatial)
    group = _group(ctx)
    strides = ctx.ints("strides", [1] * spatial)
    dilations = ctx.ints("dilations", [1] * spatial)
    extra = ctx.ints("output_padding", [0] * spatial)
    for name, values, low in (("strides", strides, 1), ("dilations", dilations, 1), ("output_padding", extra, 0)):
        if len(values) != spatial or min(values, default=low) < low:
            raise ctx.unsupported_value(name, values, f"{spatial} integers >= {low}")
    if w_shape[0] != x.shape[1]:
        raise ctx.error(f"weights W have shape {list(w_shape)}; a ConvTranspose's W is [C, M / group, k...] with "
                        f"C = {x.shape[1]} (X's channels)")
    begins, ends, padding = _transposed_pads(ctx, tuple(x.shape[2:]), kernel, strides, dilations, extra)
    desc = ConvolutionDescriptor(ConvolutionOp.TRANSPOSED, tuple(strides), tuple(begins), tuple(ends),
                                 tuple(dilations), tuple(padding), group)
    bias = ctx.tensor(2, "B") if ctx.has_input(2) else None
    return [ctx.network.add_convolution(x, ctx.tensor(1, "W"), bias, descriptor=desc, name=ctx.name())]


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
    if spatial == 3 or not x.dtype.is_float:
        desc = PoolingDescriptor(kind, tuple(kernel), tuple(strides), tuple(begins), tuple(ends), tuple(dilations),
                                 "ceil" if ceil_mode else "floor", "include" if include else "exclude", p)
        return [ctx.network.add_pooling(x, desc, name=ctx.name())]
    begins, ends = _lift(begins, spatial, 0), _lift(ends, spatial, 0)
    y = ctx.network.add_pooling2d(
        _to_2d(ctx, x, spatial), kind, _lift(kernel, spatial, 1), stride=_lift(strides, spatial, 1),
        padding=(begins[0], begins[1], ends[0], ends[1]), dilation=_lift(dilations, spatial, 1),
        ceil_mode=bool(ceil_mode), count_include_pad=bool(include), p=p, name=ctx.name())
    return [_from_2d(ctx, y, spatial)]


@op("MaxPool", ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"))
def max_pool(ctx: NodeContext) -> list[Any]:
    order = int(ctx.attr("storage_order", 0))
    if order not in (0, 1):
        raise ctx.unsupported_value("storage_order", order, "0 (row major), 1 (column major)")
    y = _pool(ctx, "max")[0]
    return [y, _max_pool_indices(ctx, y, order) if ctx.output_used(1) else None]


def _window_slots(in_spatial: tuple[int, ...], out_spatial: tuple[int, ...], kernel: list[int], strides: list[int],
                  dilations: list[int], begins: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per output position, its window's input positions in scan order: (row-major flat indices,
    the sentinel P for the slots past the in-bound ones; the multi-indices of those positions)."""
    size = int(np.prod(in_spatial, dtype=np.int64))
    offsets = list(np.ndindex(*kernel))
    flat = np.full((int(np.prod(out_spatial, dtype=np.int64)), len(offsets)), size, np.int64)
    where = np.zeros(flat.shape + (len(in_spatial),), np.int64)
    for q, out in enumerate(np.ndindex(*out_spatial)):
        slot = 0
        for offset in offsets:
            pos = [o * s - b + k * d for o, s, b, k, d in zip(out, strides, begins, offset, dilations)]
            if all(0 <= p < n for p, n in zip(pos, in_spatial)):
                flat[q, slot] = int(np.ravel_multi_index(pos, in_spatial))
                where[q, slot] = pos
                slot += 1
    return flat, where


def _max_pool_indices(ctx: NodeContext, y: Any, order: int) -> Any:
    """MaxPool's Indices output from existing layers: the input flattened per channel with one
    sentinel of the type's lowest value appended, every window's in-bound elements gathered in
    ONNX's scan order (sentinels after them, so the first maximum of the scan wins as in ONNX),
    ARG_MAX over each window, the chosen slot mapped to its input position (row or column major)
    plus the channel's offset (n * C + c) * H * W."""
    net = ctx.network
    x = ctx.tensor(0, "X")
    n, c, *spatial = x.shape
    out_spatial = tuple(y.shape[2:])
    kernel = list(ctx.ints("kernel_shape"))
    strides, dilations, begins, _ = _window_params(ctx, tuple(spatial), kernel, bool(int(ctx.attr("ceil_mode", 0))))
    flat, where = _window_slots(tuple(spatial), out_spatial, kernel, strides, dilations, begins)
    size = int(np.prod(spatial, dtype=np.int64))
    dtype = np.dtype(x.dtype.numpy_name)
    lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    sentinel = ctx.array_tensor(np.full((n, c, 1), lowest, dtype), "indices_sentinel")
    rows = net.add_concat([net.add_reshape(x, (n, c, size), name=ctx.aux("indices_flat")), sentinel], 2,
                          name=ctx.aux("indices_with_sentinel"))
    slots, width = flat.shape
    windows = net.add_gather(rows, ctx.array_tensor(flat.reshape(-1), "indices_windows"), axis=2,
                             name=ctx.aux("indices_windows"))
    windows = net.add_reshape(windows, (n, c, slots, width), name=ctx.aux("indices_window_rows"))
    chosen = net.add_reduce("arg_max", windows, axes=[3], keep_dims=True, name=ctx.aux("indices_argmax"))
    dims = list(spatial) if order == 0 else list(spatial)[::-1]
    coords = where if order == 0 else where[..., ::-1]
    position = np.zeros(flat.shape, np.int64)
    for axis, extent in enumerate(dims):  # the position's index in the storage order asked for
        position = position * extent + coords[..., axis]
    positions = net.add_expand(ctx.array_tensor(position.reshape(1, 1, slots, width), "indices_positions"),
                               (n, c, slots, width), name=ctx.aux("indices_positions"))
    picked = net.add_gather(positions, chosen, axis=3, op="elements", name=ctx.aux("indices_pick"))
    channel = (np.arange(n * c, dtype=np.int64) * size).reshape(n, c, 1, 1)
    indices = net.add_add(picked, ctx.array_tensor(channel, "indices_channel_offsets"), name=ctx.aux("indices_add"))
    return net.add_reshape(indices, (n, c, *out_spatial), name=ctx.aux("indices"))


@op("AveragePool", ("auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"))
def average_pool(ctx: NodeContext) -> list[Any]:
    return _pool(ctx, "average")


@op("LpPool", ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"))
def lp_pool(ctx: NodeContext) -> list[Any]:
    p = ctx.attr("p", 2)
    if not float(p) > 0:
        raise ctx.unsupported_value("p", p, "a number > 0")
    return _pool(ctx, "lp", float(p))


def _global(ctx: NodeContext, kind: str, p: float = 2.0) -> list[Any]:
    x = ctx.tensor(0, "X")
    shape = x.shape
    if len(shape) < 3:
        raise ctx.error(f"input has rank {len(shape)}; global pooling needs rank >= 3 ([N, C, spatial...])")
    if len(shape) == 4:
        return [ctx.network.add_global_pooling2d(x, kind, p=p, name=ctx.name())]
    n, c = shape[:2]
    size = int(np.prod(shape[2:], dtype=np.int64))
    flat = ctx.network.add_reshape(x, (n, c, 1, size), name=ctx.aux("to_2d"))
    y = ctx.network.add_global_pooling2d(flat, kind, p=p, name=ctx.name())
    return [ctx.network.add_reshape(y, (n, c, *([1] * (len(shape) - 2))), name=ctx.aux("to_nd"))]


@op("GlobalAveragePool")
def global_average_pool(ctx: NodeContext) -> list[Any]:
    return _global(ctx, "average")


@op("GlobalMaxPool")
def global_max_pool(ctx: NodeContext) -> list[Any]:
    return _global(ctx, "max")


@op("GlobalLpPool", ("p",))
def global_lp_pool(ctx: NodeContext) -> list[Any]:
    p = ctx.attr("p", 2)
    if not float(p) > 0:
        raise ctx.unsupported_value("p", p, "a number > 0")
    return _global(ctx, "lp", float(p))
