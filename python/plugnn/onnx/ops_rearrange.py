"""Operators that move elements to computed places, imported exactly as existing layers (no
layer kind of their own): Col2Im (opset 18), MaxUnpool (9, 11, 22), ReverseSequence (10, 28)
and TensorScatter (24). Each has a NumPy fold for constant inputs.

  Col2Im:          the blocks [N, C * K, L] transposed to [K * L, N, C] and added with SCATTER
                   (ND, reduction add) into zeros [padded image..., N, C] flattened, at indices
                   computed at import; then transposed back and the pads cropped (PAD with
                   negative pads). Numeric types (overlapping blocks add).
  MaxUnpool:       SCATTER (ND, no reduction) of X's values at the flat indices I into zeros of
                   the shape a MaxPool with these attributes inverts, [N, C, (in - 1) * stride -
                   pads + kernel...]; with output_shape, that tensor padded with zeros at the end
                   of each spatial axis (ONNX's reference: the indices address the inferred
                   shape, whose values land in the output's leading corner).
  ReverseSequence: GATHER (take) of the [time * batch] rows at index
                   t' * batch + b, t' = len[b] - 1 - t for t < len[b] else t: a constant for
                   constant sequence_lens, else computed with integer layers.
  TensorScatter:   SCATTER (ND, no reduction) of `update` into `past_cache` at the index tuples
                   (prefix..., write_indices[batch] + s), taken modulo the cache length in
                   circular mode (MOD, the sign of the divisor); out-of-range indices in linear
                   mode fail at run time as the Scatter layer's do.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext
from plugnn.onnx.ops_sampling import since
from plugnn.onnx.registry import op
from plugnn.onnx.static_inputs import static_ints
from plugnn.tensor import DataType


def _positive_ints(ctx: NodeContext, name: str, default: list[int], count: int, low: int) -> list[int]:
    values = ctx.ints(name, default)
    if len(values) != count or min(values, default=low) < low:
        raise ctx.unsupported_value(name, values, f"{count} integers >= {low}")
    return values


def _zeros(ctx: NodeContext, shape: tuple[int, ...], dtype: DataType, role: str) -> Tensor:
    scalar = ctx.array_tensor(np.zeros((), dtype.numpy_dtype), role)
    return ctx.network.add_expand(scalar, shape, name=ctx.aux(role))


# ---- Col2Im -----------------------------------------------------------------------------------------


def _col2im_geometry(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int], list[int],
                                                                         list[int], list[int]]:
    """image, block, strides, dilations, pads_begin, pads_end (checked against the input)."""
    since(ctx, 18)
    why = "the output shape depends on it"
    image = static_ints(ctx, 1, "image_shape", why)
    block = static_ints(ctx, 2, "block_shape", why)
    r = len(image)
    if r < 1 or len(block) != r or min(block) < 1 or min(image) < 0:
        raise ctx.error(f"image_shape {image} and block_shape {block} must name the same spatial axes (blocks >= 1)")
    strides = _positive_ints(ctx, "strides", [1] * r, r, 1)
    dilations = _positive_ints(ctx, "dilations", [1] * r, r, 1)
    pads = _positive_ints(ctx, "pads", [0] * (2 * r), 2 * r, 0)
    if len(shape) != 3:
        raise ctx.error(f"input must be [N, C * prod(block_shape), L], got shape {list(shape)}")
    k = int(np.prod(block))
    if shape[1] % k:
        raise ctx.error(f"input dim 1 ({shape[1]}) is not a multiple of prod(block_shape) = {k}")
    blocks = []
    for a in range(r):
        count = (image[a] + pads[a] + pads[r + a] - dilations[a] * (block[a] - 1) - 1) // strides[a] + 1
        if count < 1:
            raise ctx.error(f"spatial axis {a}: the block of {block[a]} (dilation {dilations[a]}) does not fit the "
                            f"padded image ({image[a]} + {pads[a]} + {pads[r + a]})")
        blocks.append(count)
    if int(np.prod(blocks)) != shape[2]:
        raise ctx.error(f"input dim 2 is {shape[2]}, but the image holds {blocks} = {int(np.prod(blocks))} blocks")
    return image, block, strides, dilations, pads[:r], pads[r:]


def _col2im_indices(image: list[int], block: list[int], strides: list[int], dilations: list[int],
                    begins: list[int], ends: list[int]) -> np.ndarray:
    """The flat position in the padded image of every (tap, block position), tap-major."""
    r = len(image)
    padded = [image[a] + begins[a] + ends[a] for a in range(r)]
    counts = [(padded[a] - dilations[a] * (block[a] - 1) - 1) // strides[a] + 1 for a in range(r)]
    taps = np.array(list(itertools.product(*[range(b) for b in block])), np.int64).reshape(-1, r)
    spots = np.array(list(itertools.product(*[range(c) for c in counts])), np.int64).reshape(-1, r)
    coords = spots[np.newaxis, :, :] * np.array(strides) + taps[:, np.newaxis, :] * np.array(dilations)
    flat = np.ravel_multi_index(tuple(coords.reshape(-1, r).T), padded) if coords.size else np.zeros(0, np.int64)
    return np.asarray(flat, np.int64)


def _fold_col2im(ctx: NodeContext) -> list[Any] | None:
    x = np.asarray(ctx.value(0))
    if x.dtype.kind not in "iuf":
        return None
    image, block, strides, dilations, begins, ends = _col2im_geometry(ctx, x.shape)
    n, ck, length = x.shape
    k = int(np.prod(block))
    padded = [image[a] + begins[a] + ends[a] for a in range(len(image))]
    flat = _col2im_indices(image, block, strides, dilations, begins, ends)
    out = np.zeros((n, ck // k, int(np.prod(padded))), x.dtype)
    values = x.reshape(n, ck // k, k * length)
    for i, position in enumerate(flat):
        out[:, :, position] += values[:, :, i]
    out = out.reshape((n, ck // k, *padded))
    crop = tuple(slice(b, b + size) for b, size in zip(begins, image))
    return [np.ascontiguousarray(out[(slice(None), slice(None), *crop)])]


@op("Col2Im", ("dilations", "pads", "strides"), fold=_fold_col2im)
def col2im(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "input")
    image, block, strides, dilations, begins, ends = _col2im_geometry(ctx, tuple(x.shape))
    if x.dtype is DataType.BOOL:
        raise ctx.error("Col2Im adds overlapping blocks; plugnn adds numeric types, the input is bool")
    net = ctx.network
    n, ck, length = x.shape
    k = int(np.prod(block))
    c = ck // k
    padded = [image[a] + begins[a] + ends[a] for a in range(len(image))]
    flat = _col2im_indices(image, block, strides, dilations, begins, ends)
    # [N, C * K, L] -> [K * L, N, C]: each row is one (tap, block position) of every image and channel.
    rows = net.add_reshape(x, (n, c, k, length), name=ctx.aux("blocks"))
    rows = net.add_transpose(rows, (2, 3, 0, 1), name=ctx.aux("tap_major"))
    rows = net.add_reshape(rows, (k * length, n, c), name=ctx.aux("rows"))
    size = int(np.prod(padded))
    zeros = _zeros(ctx, (size, n, c), x.dtype, "zeros")
    indices = ctx.array_tensor(flat.reshape(-1, 1), "positions")
    summed = net.add_scatter(zeros, indices, rows, op="nd", reduction="add", name=ctx.aux("add"))
    image_major = net.add_transpose(summed, (1, 2, 0), name=ctx.aux("channels_first"))
    shaped = net.add_reshape(image_major, (n, c, *padded), name=ctx.aux("image"))
    if not any(begins) and not any(ends):
        return [net.add_identity(shaped, name=ctx.name())]
    return [net.add_pad(shaped, [0, 0] + [-b for b in begins], [0, 0] + [-e for e in ends], name=ctx.name())]


# ---- MaxUnpool ----------------------------------------------------------------------------------------


def _unpool_shapes(ctx: NodeContext, x_shape: tuple[int, ...], i_shape: tuple[int, ...]
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The inferred shape (which the indices address) and the output's."""
    if len(x_shape) < 3:
        raise ctx.error(f"X must be [N, C, spatial...], got shape {list(x_shape)}")
    if tuple(i_shape) != tuple(x_shape):
        raise ctx.error(f"I has shape {list(i_shape)}, X {list(x_shape)}: one index per value")
    r = len(x_shape) - 2
    kernel = ctx.ints("kernel_shape")
    if kernel is None or len(kernel) != r or min(kernel) < 1:
        raise ctx.unsupported_value("kernel_shape", kernel, f"{r} integers >= 1 (required)")
    strides = _positive_ints(ctx, "strides", [1] * r, r, 1)
    pads = _positive_ints(ctx, "pads", [0] * (2 * r), 2 * r, 0)
    inferred = tuple(x_shape[:2]) + tuple((x_shape[2 + a] - 1) * strides[a] - pads[a] - pads[r + a] + kernel[a]
                                          for a in range(r))
    if min(inferred) < 0:
        raise ctx.error(f"the pads {pads} exceed the unpooled shape {list(inferred)}")
    if not ctx.has_input(2):
        return inferred, inferred
    output = tuple(static_ints(ctx, 2, "output_shape", "the output shape depends on it"))
    if len(output) != len(inferred) or output[:2] != inferred[:2] or any(o < i for o, i in zip(output, inferred)):
        raise ctx.error(f"output_shape {list(output)} must keep N and C and be at least the unpooled shape "
                        f"{list(inferred)} the indices address (ONNX's reference pads that shape at the end)")
    return inferred, output


def _fold_unpool(ctx: NodeContext) -> list[Any] | None:
    x, indices = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    inferred, output = _unpool_shapes(ctx, x.shape, indices.shape)
    flat = np.zeros(int(np.prod(inferred)), x.dtype)
    total = flat.size
    for value, index in zip(x.reshape(-1), indices.reshape(-1)):
        if not -total <= index < total:
            raise ctx.error(f"input 1 (I) holds index {int(index)}, outside the {total} unpooled elements")
        flat[index] = value
    out = np.zeros(output, x.dtype)
    out[tuple(slice(0, s) for s in inferred)] = flat.reshape(inferred)
    return [out]


@op("MaxUnpool", ("kernel_shape", "pads", "strides"), fold=_fold_unpool)
def max_unpool(ctx: NodeContext) -> list[Any]:
    since(ctx, 9)
    x = ctx.tensor(0, "X")
    inferred, output = _unpool_shapes(ctx, tuple(x.shape), ctx.shape(1))
    indices = ctx.tensor(1, "I")
    if indices.dtype is not DataType.INT64:
        raise ctx.error(f"input 1 (I) is {indices.dtype.numpy_name}; ONNX takes int64")
    net = ctx.network
    total = int(np.prod(inferred))
    count = int(np.prod(x.shape))
    zeros = _zeros(ctx, (total,), x.dtype, "zeros")
    where = net.add_reshape(indices, (count, 1), name=ctx.aux("indices"))
    values = net.add_reshape(x, (count,), name=ctx.aux("values"))
    flat = net.add_scatter(zeros, where, values, op="nd", name=ctx.aux("scatter"))
    shaped = net.add_reshape(flat, inferred, name=ctx.aux("unpooled") if output != inferred else ctx.name())
    if output == inferred:
        return [shaped]
    return [net.add_pad(shaped, [0] * len(output), [o - i for o, i in zip(output, inferred)], name=ctx.name())]


# ---- ReverseSequence -------------------------------------------------------------------------------------


def _reverse_axes(ctx: NodeContext, rank: int) -> tuple[int, int]:
    since(ctx, 10)
    batch_axis, time_axis = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    if rank < 2:
        raise ctx.error(f"input must have rank >= 2, got rank {rank}")
    if {batch_axis, time_axis} != {0, 1}:
        raise ctx.error(f"batch_axis ({batch_axis}) and time_axis ({time_axis}) must be 0 and 1, in either order")
    return batch_axis, time_axis


def _reversed_rows(lens: np.ndarray, steps: int) -> np.ndarray:
    """[time * batch] row indices: row t * batch + b reads row t' * batch + b."""
    t = np.arange(steps)[:, np.newaxis]
    source = np.where(t < lens[np.newaxis, :], lens[np.newaxis, :] - 1 - t, t)
    return (source * lens.size + np.arange(lens.size)[np.newaxis, :]).reshape(-1).astype(np.int64)


def _check_lens(ctx: NodeContext, lens: np.ndarray, steps: int, batch: int) -> np.ndarray:
    lens = np.asarray(lens).reshape(-1)
    if lens.dtype.kind not in "iu" or lens.size != batch:
        raise ctx.error(f"input 1 (sequence_lens) must be {batch} integers (one per batch entry), got {lens.dtype} "
                        f"of shape {list(np.shape(lens))}")
    if lens.size and (lens.min() < 0 or lens.max() > steps):
        raise ctx.error(f"input 1 (sequence_lens) = {lens.tolist()}: each length lies in [0, {steps}]")
    return lens.astype(np.int64)


def _fold_reverse(ctx: NodeContext) -> list[Any] | None:
    data = np.asarray(ctx.value(0))
    batch_axis, time_axis = _reverse_axes(ctx, data.ndim)
    moved = np.moveaxis(data, (time_axis, batch_axis), (0, 1))
    lens = _check_lens(ctx, ctx.value(1), moved.shape[0], moved.shape[1])
    rows = moved.reshape(moved.shape[0] * moved.shape[1], -1)[_reversed_rows(lens, moved.shape[0])]
    return [np.ascontiguousarray(np.moveaxis(rows.reshape(moved.shape), (0, 1), (time_axis, batch_axis)))]


@op("ReverseSequence", ("batch_axis", "time_axis"), fold=_fold_reverse)
def reverse_sequence(ctx: NodeContext) -> list[Any]:
    data = ctx.tensor(0, "input")
    batch_axis, time_axis = _reverse_axes(ctx, len(data.shape))
    net = ctx.network
    swap = time_axis == 1
    perm = [1, 0] + list(range(2, len(data.shape)))
    moved = net.add_transpose(data, perm, name=ctx.aux("time_first")) if swap else data
    steps, batch = moved.shape[0], moved.shape[1]
    rest = moved.shape[2:]
    rows = net.add_reshape(moved, (steps * batch, int(np.prod(rest, dtype=np.int64))), name=ctx.aux("rows"))
    if ctx.is_const(1):
        order = ctx.array_tensor(_reversed_rows(_check_lens(ctx, ctx.const(1, "sequence_lens"), steps, batch), steps),
                                 "rows")
    else:
        order = _runtime_rows(ctx, ctx.tensor(1, "sequence_lens"), steps, batch)
    picked = net.add_gather(rows, order, axis=0, name=ctx.aux("reverse"))
    shaped = net.add_reshape(picked, moved.shape, name=ctx.aux("shape") if swap else ctx.name())
    return [net.add_transpose(shaped, perm, name=ctx.name())] if swap else [shaped]


def _runtime_rows(ctx: NodeContext, lens: Tensor, steps: int, batch: int) -> Tensor:
    """_reversed_rows with layers: t' = where(t < len, len - 1 - t, t), row = t' * batch + b."""
    if lens.dtype not in (DataType.INT64, DataType.INT32) or tuple(lens.shape) != (batch,):
        raise ctx.error(f"input 1 (sequence_lens) must be int64 [{batch}], got {lens.dtype.numpy_name} of shape "
                        f"{list(lens.shape)}")
    net = ctx.network
    if lens.dtype is not DataType.INT64:
        lens = net.add_cast(lens, DataType.INT64, name=ctx.aux("lens"))
    t = ctx.array_tensor(np.arange(steps, dtype=np.int64).reshape(steps, 1), "steps")
    row = net.add_reshape(lens, (1, batch), name=ctx.aux("lens_row"))
    inside = net.add_elementwise("less", t, row, name=ctx.aux("inside"))
    last = net.add_elementwise("sub", row, ctx.array_tensor(np.ones((), np.int64), "one"), name=ctx.aux("last"))
    mirrored = net.add_elementwise("sub", last, t, name=ctx.aux("mirrored"))
    source = net.add_select(inside, mirrored, t, name=ctx.aux("source"))
    scaled = net.add_elementwise("mul", source, ctx.array_tensor(np.array(batch, np.int64), "batch"),
                                 name=ctx.aux("scaled"))
    flat = net.add_elementwise("add", scaled, ctx.array_tensor(np.arange(batch, dtype=np.int64).reshape(1, batch),
                                                               "entries"), name=ctx.aux("flat"))
    return net.add_reshape(flat, (steps * batch,), name=ctx.aux("order"))


# ---- TensorScatter --------------------------------------------------------------------------------------


def _scatter_geometry(ctx: NodeContext, cache: tuple[int, ...], update: tuple[int, ...]) -> tuple[int, bool]:
    since(ctx, 24)
    mode = str(ctx.attr("mode", "linear"))
    if mode not in ("linear", "circular"):
        raise ctx.unsupported_value("mode", mode, "linear, circular")
    rank = len(cache)
    axis = int(ctx.attr("axis", -2))
    if not -rank <= axis < rank or axis % rank == 0:
        raise ctx.unsupported_value("axis", axis, f"an axis of the rank-{rank} cache other than 0 (the batch)")
    axis %= rank
    if len(update) != rank or any(u != c for i, (u, c) in enumerate(zip(update, cache)) if i != axis) \
            or update[axis] > cache[axis]:
        raise ctx.error(f"update {list(update)} must match past_cache {list(cache)} but on axis {axis}, where it "
                        f"is at most as long")
    return axis, mode == "circular"


def _base_indices(cache: tuple[int, ...], update: tuple[int, ...], axis: int) -> np.ndarray:
    """[prefix..., S, axis + 1]: the tuple (prefix..., s) of every update row."""
    grids = np.meshgrid(*[np.arange(n) for n in update[:axis + 1]], indexing="ij")
    return np.stack(grids, axis=-1).astype(np.int64)


def _fold_tensor_scatter(ctx: NodeContext) -> list[Any] | None:
    cache, update = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    axis, circular = _scatter_geometry(ctx, cache.shape, update.shape)
    writes = np.asarray(ctx.value(2)).reshape(-1).astype(np.int64) if ctx.has_input(2) \
        else np.zeros(cache.shape[0], np.int64)
    out = cache.copy()
    length = cache.shape[axis]
    for prefix in np.ndindex(*cache.shape[:axis]):
        for s in range(update.shape[axis]):
            target = writes[prefix[0]] + s
            target = target % length if circular else target
            if not -length <= target < length:
                raise ctx.error(f"write index {int(target)} lies outside the cache's {length} positions")
            out[(*prefix, target)] = update[(*prefix, s)]
    return [out]


@op("TensorScatter", ("axis", "mode"), fold=_fold_tensor_scatter)
def tensor_scatter(ctx: NodeContext) -> list[Any]:
    cache, update = ctx.tensor(0, "past_cache"), ctx.tensor(1, "update")
    axis, circular = _scatter_geometry(ctx, tuple(cache.shape), tuple(update.shape))
    if cache.dtype != update.dtype:
        raise ctx.error(f"past_cache is {cache.dtype.numpy_name}, update {update.dtype.numpy_name}; one type")
    net = ctx.network
    base = _base_indices(tuple(cache.shape), tuple(update.shape), axis)
    column = np.zeros(axis + 1, np.int64)
    column[axis] = 1
    modulus = np.array(list(cache.shape[:axis]) + [cache.shape[axis]], np.int64)
    if not ctx.has_input(2) or ctx.is_const(2):
        writes = np.asarray(ctx.const(2, "write_indices")).reshape(-1).astype(np.int64) if ctx.has_input(2) \
            else np.zeros(cache.shape[0], np.int64)
        if writes.size != cache.shape[0]:
            raise ctx.error(f"input 2 (write_indices) has {writes.size} values for a batch of {cache.shape[0]}")
        shift = writes.reshape((-1,) + (1,) * (axis + 1)) * column  # [B, 1.., 1, axis + 1]
        indices = base + shift
        if circular and modulus.size and modulus[-1] > 0:
            indices = np.mod(indices, modulus)
        where: Any = ctx.array_tensor(indices, "indices")
    else:
        writes = ctx.tensor(2, "write_indices")
        if writes.dtype is not DataType.INT64 or tuple(writes.shape) != (cache.shape[0],):
            raise ctx.error(f"input 2 (write_indices) must be int64 [{cache.shape[0]}], got "
                            f"{writes.dtype.numpy_name} of shape {list(writes.shape)}")
        per_batch = net.add_reshape(writes, (cache.shape[0],) + (1,) * (axis + 1), name=ctx.aux("writes"))
        shift = net.add_elementwise("mul", per_batch, ctx.array_tensor(column, "column"), name=ctx.aux("shift"))
        where = net.add_elementwise("add", ctx.array_tensor(base, "base"), shift, name=ctx.aux("indices"))
        if circular:
            where = net.add_elementwise("mod", where, ctx.array_tensor(modulus, "lengths"), name=ctx.aux("wrap"))
    return [net.add_scatter(cache, where, update, op="nd", name=ctx.name())]
