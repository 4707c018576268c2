"""Data-movement operators: Slice, Split, Pad, Expand, Tile, DepthToSpace, SpaceToDepth and Trilu
(SLICE, SPLIT, PAD, EXPAND, RESHAPE + TRANSPOSE and TRIANGULAR layers on any element type), and
Range, Size and EyeLike (values known at import).

Every operator is folded with NumPy when all its inputs are known at import. The values an
output shape depends on (Slice's starts/ends/axes/steps, Split's sizes, Pad's pads and axes,
Expand's shape, Tile's repeats, Range's start/limit/delta) must be known at import: one
computed at run time is a ModelError saying so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from plugnn import shapes
from plugnn.descriptors import LayerKind, PadMode, SliceDescriptor
from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext, np_dtype, type_name
from plugnn.onnx.registry import op
from plugnn.onnx.static_inputs import dtype_of, static_array, static_dims, static_ints
from plugnn.symbolic import Dim
from plugnn.tensor import TensorInfo

SHAPE_DEPENDS = "the output shape depends on it"


def _axes(ctx: NodeContext, axes: list[int], rank: int, what: str = "axes") -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(f"{what} {axes}: {a} is out of range for rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ctx.error(f"{what} {axes} name an axis twice")
    return out


# ---- Slice ---------------------------------------------------------------------------------------


def _slice_spans(ctx: NodeContext, shape: tuple[Any, ...]) -> list[tuple[Any, Any, int]]:
    """(first index, count, step) per dim of the input (the whole dim where the node names
    none), clamped as ONNX's Slice does; starts, ends and dims may be symbolic Dims."""
    if ctx.opset < 10:
        starts, ends, axes = ctx.ints("starts"), ctx.ints("ends"), ctx.ints("axes")
        steps = None
        if starts is None or ends is None:
            raise ctx.error("attributes 'starts' and 'ends' are required (opset < 10)")
    else:
        for name in ("starts", "ends", "axes", "steps"):
            if ctx.has(name):
                raise ctx.error(f"attribute {name!r} is Slice's before opset 10; from opset 10 it is an input")
        starts = static_dims(ctx, 1, "starts", SHAPE_DEPENDS)
        ends = static_dims(ctx, 2, "ends", SHAPE_DEPENDS)
        axes = static_ints(ctx, 3, "axes", SHAPE_DEPENDS) if ctx.has_input(3) else None
        steps = static_ints(ctx, 4, "steps", SHAPE_DEPENDS) if ctx.has_input(4) else None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must have the same length")
    spans: list[tuple[Any, Any, int]] = [(0, dim, 1) for dim in shape]
    for start, end, axis, step in zip(starts, ends, _axes(ctx, axes, len(shape)), steps):
        if step == 0:
            raise ctx.error(f"steps {steps}: a step is 0")
        first, count = shapes.slice_span(start, end, step, shape[axis], onnx=True)
        spans[axis] = (first, count, step)
    return spans


def _python_slice(first: int, count: int, step: int) -> slice:
    if not count:
        return slice(0, 0, 1)
    last = first + (count - 1) * step
    return slice(first, last + 1 if step > 0 else (last - 1 if last > 0 else None), step)


def _fold_slice(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    spans = _slice_spans(ctx, data.shape)
    return [np.ascontiguousarray(data[tuple(_python_slice(*span) for span in spans)])]


@op("Slice", ("starts", "ends", "axes"), fold=_fold_slice)
def slice_(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "data")
    spans = _slice_spans(ctx, x.shape)
    if all(first == 0 and step == 1 and count == dim for (first, count, step), dim in zip(spans, x.shape)):
        return [ctx.network.add_identity(x, name=ctx.name())]
    desc = SliceDescriptor(tuple(first for first, _, _ in spans), tuple(step for _, _, step in spans))
    out = TensorInfo(tuple(count for _, count, _ in spans), x.dtype)
    return [ctx.network.add_layer(LayerKind.SLICE, desc, [x], [out], name=ctx.name())[0]]


# ---- Split ---------------------------------------------------------------------------------------


def _split_sizes(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[int, list[int]]:
    rank = len(shape)
    axis = int(ctx.attr("axis", 0))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank}")
    axis %= rank
    n = len(ctx.node.output)
    dim = shape[axis]
    if ctx.opset < 13:
        sizes = ctx.ints("split")
    else:
        if ctx.has("split"):
            raise ctx.error("attribute 'split' is Split's before opset 13; from opset 13 it is input 1")
        sizes = static_ints(ctx, 1, "split", SHAPE_DEPENDS) if ctx.has_input(1) else None
    if ctx.has("num_outputs"):
        if ctx.opset < 18:
            raise ctx.error(f"attribute 'num_outputs' is Split's from opset 18 (the model's opset is {ctx.opset})")
        if sizes is not None:
            raise ctx.error("input 'split' and attribute 'num_outputs' are both given; give one")
        count = int(ctx.attr("num_outputs"))
        if count < 1 or count != n:
            raise ctx.error(f"attribute 'num_outputs' = {count} must be >= 1 and equal the node's {n} outputs")
        chunk = -(-dim // count)
        sizes = [chunk] * (count - 1) + [dim - chunk * (count - 1)]
        if sizes[-1] < 0:
            raise ctx.error(f"axis {axis} of size {dim} cannot be split into {count} chunks of {chunk}")
    elif sizes is None:
        if ctx.opset >= 18:
            raise ctx.error("either input 'split' or attribute 'num_outputs' is required from opset 18")
        if dim % n:
            raise ctx.error(f"axis {axis} of size {dim} does not split into {n} equal parts (one per output)")
        sizes = [dim // n] * n
    if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise ctx.error(f"split {sizes} must give one size >= 0 per output ({n}) adding up to axis {axis}'s {dim}")
    return axis, sizes


def _fold_split(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    axis, sizes = _split_sizes(ctx, data.shape)
    return [np.ascontiguousarray(part) for part in np.split(data, np.cumsum(sizes)[:-1], axis=axis)]


@op("Split", ("axis", "split", "num_outputs"), fold=_fold_split)
def split(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0)
    axis, sizes = _split_sizes(ctx, x.shape)
    return list(ctx.network.add_split(x, sizes, axis, name=ctx.name()))


# ---- Pad -----------------------------------------------------------------------------------------

_PAD_MODES = {"constant": PadMode.CONSTANT, "reflect": PadMode.REFLECT, "edge": PadMode.EDGE, "wrap": PadMode.WRAP}


def _pad_args(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[PadMode, list[int], list[int]]:
    rank = len(shape)
    mode_name = str(ctx.attr("mode", "constant"))
    allowed = ["constant", "reflect", "edge"] + (["wrap"] if ctx.opset >= 19 else [])
    if mode_name not in allowed:
        raise ctx.unsupported_value("mode", mode_name, f"{', '.join(allowed)} at opset {ctx.opset}")
    if ctx.opset < 11:
        pads = ctx.ints("pads")
        if pads is None:
            raise ctx.error("attribute 'pads' is required (opset < 11)")
        axes = list(range(rank))
    else:
        for name in ("pads", "value"):
            if ctx.has(name):
                raise ctx.error(f"attribute {name!r} is Pad's before opset 11; from opset 11 it is an input")
        pads = static_ints(ctx, 1, "pads", SHAPE_DEPENDS)
        axes = list(range(rank))
        if ctx.has_input(3):
            if ctx.opset < 18:
                raise ctx.error(f"input 3 (axes) is Pad's from opset 18 (the model's opset is {ctx.opset})")
            axes = _axes(ctx, static_ints(ctx, 3, "axes", SHAPE_DEPENDS), rank)
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} must hold 2 values per padded axis ({len(axes)} axes)")
    begin, end = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[len(axes) + i]
    mode = _PAD_MODES[mode_name]
    for axis, (b, dim, e) in enumerate(zip(begin, shape, end)):
        kept, grow = dim - max(-b, 0) - max(-e, 0), max(b, e, 0)
        if kept < 0:
            raise ctx.error(f"pads {pads}: axis {axis} of size {dim} loses more elements than it has")
        if mode is PadMode.REFLECT and grow and grow >= kept:
            raise ctx.error(f"pads {pads}: reflect padding of axis {axis} needs pads smaller than its {kept} "
                            f"(cropped) elements")
        if mode in (PadMode.EDGE, PadMode.WRAP) and grow and not kept:
            raise ctx.error(f"pads {pads}: {mode_name} padding of axis {axis}, which is empty")
    return mode, begin, end


def _pad_value(ctx: NodeContext, dtype: np.dtype) -> Any:
    """The constant: a NumPy scalar, a network Tensor (computed at run time) or None (0)."""
    if ctx.opset < 11:
        return np.asarray(float(ctx.attr("value", 0.0))).astype(dtype)
    if not ctx.has_input(2):
        return None
    value = ctx.value(2)
    if int(np.prod(value.shape)) != 1:
        raise ctx.error(f"input 2 (constant_value) must hold one element, its shape is {list(value.shape)}")
    if dtype_of(value) != dtype:
        raise ctx.error(f"input 2 (constant_value) has element type {dtype_of(value)}, input 0 has {dtype}")
    return value


def _fold_pad(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    mode, begin, end = _pad_args(ctx, data.shape)
    crop = tuple(slice(max(-b, 0), n - max(-e, 0)) for b, n, e in zip(begin, data.shape, end))
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if mode is not PadMode.CONSTANT:
        return [np.pad(data[crop], widths, mode=mode.name.lower())]
    value = _pad_value(ctx, data.dtype)
    fill = np.zeros((), data.dtype) if value is None else np.asarray(value).reshape(())
    return [np.pad(data[crop], widths, mode="constant", constant_values=fill)]


@op("Pad", ("mode", "pads", "value"), fold=_fold_pad)
def pad(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "data")
    mode, begin, end = _pad_args(ctx, x.shape)
    value = _pad_value(ctx, dtype_of(x)) if mode is PadMode.CONSTANT else None
    if value is not None and not isinstance(value, Tensor):
        value = ctx.array_tensor(np.asarray(value).reshape(()), "value")
    return [ctx.network.add_pad(x, begin, end, mode, value, name=ctx.name())]


# ---- Expand, Tile --------------------------------------------------------------------------------


def _expanded_shape(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[int, ...]:
    target = static_dims(ctx, 1, "shape", SHAPE_DEPENDS)
    try:
        return shapes.broadcast_shapes(tuple(shape), tuple(target))
    except ValueError as exc:
        raise ctx.error(f"input 0 of shape {list(shape)} does not broadcast with shape {target}: {exc}") from None


def _fold_expand(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [np.array(np.broadcast_to(data, _expanded_shape(ctx, data.shape)))]


@op("Expand", (), fold=_fold_expand)
def expand(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0)
    return [ctx.network.add_expand(x, _expanded_shape(ctx, x.shape), name=ctx.name())]


def _repeats(ctx: NodeContext, rank: int) -> list[int]:
    repeats = static_dims(ctx, 1, "repeats", SHAPE_DEPENDS)
    if len(repeats) != rank or any(r < 0 for r in repeats):
        raise ctx.error(f"input 1 (repeats) {repeats} must hold one value >= 0 per dim of input 0 (rank {rank})")
    return repeats


def _fold_tile(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [np.tile(data, _repeats(ctx, data.ndim))]


@op("Tile", (), fold=_fold_tile)
def tile(ctx: NodeContext) -> list[Any]:
    """x reshaped with a 1 before each repeated dim, expanded to the repeats, reshaped back."""
    x = ctx.tensor(0)
    repeats = _repeats(ctx, len(x.shape))
    if all(r == 1 for r in repeats):
        return [ctx.network.add_identity(x, name=ctx.name())]
    spread: list[int] = []
    expanded: list[int] = []
    for dim, r in zip(x.shape, repeats):
        if r != 1:
            spread.append(1)
            expanded.append(r)
        spread.append(dim)
        expanded.append(dim)
    if len(spread) > 8:
        raise ctx.error(f"tiling a rank-{len(x.shape)} input with repeats {repeats} needs rank {len(spread)} "
                        f"intermediates; plugnn tensors have at most 8 dims")
    net = ctx.network
    y = net.add_reshape(x, spread, name=ctx.aux("spread"))
    y = net.add_expand(y, expanded, name=ctx.aux("repeat"))
    return [net.add_reshape(y, [d * r for d, r in zip(x.shape, repeats)], name=ctx.name())]


# ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------------


def _block_plan(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """(the 6-D shape, the permutation, the output shape) of the reshape + transpose + reshape."""
    if len(shape) != 4:
        raise ctx.error(f"input 0 must have rank 4 [N, C, H, W], got shape {list(shape)}")
    if not ctx.has("blocksize"):
        raise ctx.error("attribute 'blocksize' is required")
    b = int(ctx.attr("blocksize"))
    if b < 1:
        raise ctx.unsupported_value("blocksize", b, "an integer >= 1")
    n, c, h, w = shape
    if ctx.op_type == "SpaceToDepth" and ctx.has("mode") and ctx.opset < 28:
        raise ctx.error(f"attribute 'mode' is SpaceToDepth's from opset 28 (the model's opset is {ctx.opset})")
    mode = str(ctx.attr("mode", "DCR"))
    if mode not in ("DCR", "CRD"):
        raise ctx.unsupported_value("mode", mode, "DCR, CRD")
    if ctx.op_type == "SpaceToDepth":
        if h % b or w % b:
            raise ctx.error(f"H and W of {list(shape)} must be multiples of blocksize {b}")
        perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
        return [n, c, h // b, b, w // b, b], perm, [n, c * b * b, h // b, w // b]
    if c % (b * b):
        raise ctx.error(f"C of {list(shape)} must be a multiple of blocksize^2 = {b * b}")
    out = [n, c // (b * b), h * b, w * b]
    if mode == "DCR":
        return [n, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2], out
    return [n, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3], out


def _fold_blocks(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    six, perm, out = _block_plan(ctx, data.shape)
    return [np.ascontiguousarray(data.reshape(six).transpose(perm)).reshape(out)]


def _blocks(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0)
    six, perm, out = _block_plan(ctx, x.shape)
    net = ctx.network
    y = net.add_reshape(x, six, name=ctx.aux("blocks"))
    y = net.add_transpose(y, perm, name=ctx.aux("move"))
    return [net.add_reshape(y, out, name=ctx.name())]


op("DepthToSpace", ("blocksize", "mode"), fold=_fold_blocks)(_blocks)
op("SpaceToDepth", ("blocksize", "mode"), fold=_fold_blocks)(_blocks)


# ---- Trilu ---------------------------------------------------------------------------------------


def _trilu_args(ctx: NodeContext) -> tuple[bool, int]:
    if len(ctx.shape(0)) < 2:
        raise ctx.error(f"input 0 must have rank >= 2, got shape {list(ctx.shape(0))}")
    upper = int(ctx.attr("upper", 1))
    if upper not in (0, 1):
        raise ctx.unsupported_value("upper", upper, "0, 1")
    k = 0
    if ctx.has_input(1):
        values = static_ints(ctx, 1, "k", "it selects the diagonal the layer is built for")
        if len(values) != 1:
            raise ctx.error(f"input 1 (k) must hold one value, got {values}")
        k = values[0]
    return bool(upper), k


def _fold_trilu(ctx: NodeContext) -> list[Any]:
    upper, k = _trilu_args(ctx)
    return [(np.triu if upper else np.tril)(ctx.value(0), k)]


@op("Trilu", ("upper",), fold=_fold_trilu)
def trilu(ctx: NodeContext) -> list[Any]:
    upper, k = _trilu_args(ctx)
    return [ctx.network.add_triangular(ctx.tensor(0), upper, k, name=ctx.name())]


# ---- Range, Size, EyeLike (values known at import) -----------------------------------------------


def _range_scalar(ctx: NodeContext, i: int, what: str) -> np.ndarray:
    value = static_array(ctx, i, what, "the output's length depends on Range's values")
    if value.size != 1:
        raise ctx.error(f"input {i} ({what}) must be a scalar, its shape is {list(value.shape)}")
    return value.reshape(())


def _symbolic_range(ctx: NodeContext) -> list[Any] | None:
    """Range with a bound computed from symbolic dims (a position index up to the sequence
    length): an integer Range as layers, start + delta * (exclusive cumulative sum of ones), whose
    length follows the symbols. None when no bound is symbolic or the Range is not of that form."""
    if not any(ctx.sym(i) is not None for i in range(3)) or ctx.sym(2) is not None:
        return None
    dtype = np.asarray(ctx.value(0)).dtype
    if dtype.kind not in "iu" or any(np.asarray(ctx.value(i)).size != 1 for i in range(3)):
        return None
    start, limit = (ctx.shape_values(i, w)[0] for i, w in ((0, "start"), (1, "limit")))
    delta = int(np.asarray(ctx.const(2, "delta")).reshape(-1)[0])
    if delta == 0:
        raise ctx.error("input 2 (delta) is 0")
    span = limit - start if delta > 0 else start - limit
    step = abs(delta)
    count = (span + step - 1) // step if span > 0 else 0
    net = ctx.network
    ones = ctx.array_tensor(np.ones(1, dtype), "one")
    y = net.add_expand(ones, [count], name=ctx.aux("ones"))
    y = net.add_cumulative("sum", y, 0, exclusive=True, name=ctx.aux("index"))
    if delta != 1:
        y = net.add_mul(y, ctx.array_tensor(np.array([delta], dtype), "delta"), name=ctx.aux("step"))
    if isinstance(start, Dim) or start != 0:
        first = ctx.tensor(0, "start") if isinstance(start, Dim) else ctx.array_tensor(np.array([start], dtype), "start")
        return [net.add_add(y, first, name=ctx.name())]
    return [net.add_identity(y, name=ctx.name())]


@op("Range", ())
def range_(ctx: NodeContext) -> list[Any]:
    symbolic = _symbolic_range(ctx)
    if symbolic is not None:
        return symbolic
    start, limit, delta = (_range_scalar(ctx, i, w) for i, w in enumerate(("start", "limit", "delta")))
    dtype = start.dtype
    if limit.dtype != dtype or delta.dtype != dtype:
        raise ctx.error(f"start, limit and delta must share one element type, got {dtype}, {limit.dtype}, "
                        f"{delta.dtype}")
    if dtype.kind not in "iuf" and dtype.name != "bfloat16":
        raise ctx.error(f"element type {dtype} is not numeric")
    if float(delta) == 0:
        raise ctx.error("input 2 (delta) is 0")
    if dtype.kind in "iu":
        s, l, d = int(start), int(limit), int(delta)
        count = max(-(-(l - s) // d), 0)
        return [np.array([s + i * d for i in range(count)], dtype)]
    count = max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    return [(float(start) + np.arange(count, dtype=np.float64) * float(delta)).astype(dtype)]


def _size(ctx: NodeContext) -> list[Any]:
    count: Any = 1
    for dim in ctx.shape(0):
        count = count * dim
    if isinstance(count, Dim):  # a symbolic import: the hint, and the expression beside it
        ctx.set_sym(0, np.asarray(count, dtype=object))
        return [np.array(count.hint, np.int64)]
    return [np.array(int(count), np.int64)]


@op("Size", (), fold=_size)
def size(ctx: NodeContext) -> list[Any]:
    return _size(ctx)


def _eye_like(ctx: NodeContext) -> list[Any]:
    shape = ctx.shape(0)
    if len(shape) != 2:
        raise ctx.error(f"input 0 must have rank 2, got shape {list(shape)}")
    if ctx.has("dtype"):
        dtype = np_dtype(int(ctx.attr("dtype")))
        if dtype.kind not in "biuf" and dtype.name != "bfloat16":
            raise ctx.unsupported_value("dtype", type_name(int(ctx.attr("dtype"))), "numeric and bool element types")
    else:
        dtype = dtype_of(ctx.value(0))
    return [np.eye(shape[0], shape[1], int(ctx.attr("k", 0))).astype(dtype)]


op("EyeLike", ("dtype", "k"), fold=_eye_like)(_eye_like)

