"""Output shapes and element types of every layer kind, checked against the descriptor
(pure Python), by the rules of backend_api.h.

INFER: for kinds whose outputs follow from the descriptor and the inputs, a function of
the descriptor and the input TensorInfos returning the output TensorInfos. CHECK: for kinds
whose outputs the builder states (a reshape's shape, a slice's counts, a cast's type, top-k's
k), a function of the descriptor, the inputs and those outputs. Either raises ValueError with
a sentence saying what does not fit; the network wraps it into a NetworkError naming the layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from plugnn import descriptors as d
from plugnn.symbolic import Dim, as_dim
from plugnn.tensor import DataType, TensorInfo

Infos = Sequence[TensorInfo]


def _float(infos: Infos) -> DataType:
    """The one element type of `infos`, which must be a float type."""
    return _typed(infos, "float")


def _same_type(infos: Infos, first: int = 0) -> DataType:
    """The element type every info from `first` on shares."""
    dtype = infos[first].dtype
    for i, info in enumerate(infos[first:], start=first):
        if info.dtype != dtype:
            raise ValueError(f"input {i} is {info.dtype.numpy_name} but input {first} is {dtype.numpy_name}")
    return dtype


# Element-type classes of backend_api.h's kind comments.
_CLASSES = {
    "float": lambda t: t.is_float,
    "numeric": lambda t: t is not DataType.BOOL,
    "integer": lambda t: t.is_integer,
    "signed": lambda t: t.is_float or t.name.startswith("INT"),
    "unsigned": lambda t: t.name.startswith("UINT"),
    "bool": lambda t: t is DataType.BOOL,
    "any": lambda t: True,
    "numeric or bool": lambda t: True,
}


def _typed(infos: Infos, allowed: str, what: str = "") -> DataType:
    """The one element type of `infos`, which must be of class `allowed` ("float", ...)."""
    dtype = _same_type(infos)
    if not _CLASSES[allowed](dtype):
        raise ValueError(f"{what + ' ' if what else ''}takes {allowed} tensors, got {dtype.numpy_name}")
    return dtype


def _index_type(info: TensorInfo, what: str) -> None:
    if info.dtype not in (DataType.INT32, DataType.INT64):
        raise ValueError(f"{what} must be int32 or int64, got {info.dtype.numpy_name}")


def _count(infos: Infos, low: int, high: int | None = None) -> None:
    high = low if high is None else high
    if not low <= len(infos) <= high:
        expected = str(low) if low == high else f"{low} to {high}"
        raise ValueError(f"expects {expected} inputs, got {len(infos)}")


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of `shapes`; ValueError when they do not broadcast.

    A symbolic dim (plugnn.symbolic) is not asked whether it is 1 unless it must be: beside the
    same dim, or a literal 1, it is the result with no guard; beside another size it must equal
    it or, when its hint is 1, be 1 (a guard either way)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Any] = []
    for axis in range(rank):
        result: Any = None
        for shape in shapes:
            if axis - rank + len(shape) < 0:
                continue
            dim = shape[axis - rank + len(shape)]
            if not isinstance(dim, Dim) and dim == 1:
                continue
            if result is None or (isinstance(result, Dim) and isinstance(dim, Dim) and result.key == dim.key):
                result = dim if result is None else result
            elif result == dim:
                continue
            elif isinstance(dim, Dim) and dim == 1:
                continue
            elif isinstance(result, Dim) and result == 1:
                result = dim
            else:
                raise ValueError(f"shapes {', '.join(map(_shape_text, shapes))} do not broadcast (axis {axis}: "
                                 f"{result} and {dim})")
        out.append(1 if result is None else result)
    return tuple(out)


def _shape_text(shape: Sequence[Any]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def window_output(size: int, pad_begin: int, pad_end: int, kernel: int, stride: int, dilation: int,
                  ceil: bool, what: str) -> int:
    """Output length of a sliding window (the header's formula, CEIL as pooling defines it)."""
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    if room < 0:
        raise ValueError(f"{what}: window of {span} (kernel {kernel}, dilation {dilation}) does not fit in "
                         f"{size} + padding {pad_begin}+{pad_end}")
    n = -(-room // stride) + 1 if ceil else room // stride + 1
    if ceil and (n - 1) * stride >= size + pad_begin:
        n -= 1
    return n


def _spatial(info: TensorInfo, layout: d.DataLayout, what: str) -> tuple[int, int, int, int]:
    if info.rank != 4:
        raise ValueError(f"{what} input must be rank 4 ({layout.name}), got shape {info.shape}")
    n, a, b, c = info.shape
    return (n, a, b, c) if layout is d.DataLayout.NCHW else (n, c, a, b)


def _pack(n: int, c: int, h: int, w: int, layout: d.DataLayout) -> tuple[int, ...]:
    return (n, c, h, w) if layout is d.DataLayout.NCHW else (n, h, w, c)


def convolution_2d(desc: d.Convolution2dDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2, 4)
    dtype = _float(infos)
    n, c, h, w = _spatial(infos[0], desc.layout, "convolution")
    weights = infos[1]
    if weights.rank != 4:
        raise ValueError(f"weights must be rank 4 [out, in/groups, kh, kw], got {weights.shape}")
    out_c, in_per_group, kh, kw = weights.shape
    groups = desc.groups
    if c % groups or out_c % groups:
        raise ValueError(f"groups={groups} must divide input channels {c} and output channels {out_c}")
    if in_per_group * groups != c:
        raise ValueError(f"weights {weights.shape} expect {in_per_group * groups} input channels "
                         f"(groups={groups}), input has {c}")
    expected_inputs = 2 + int(desc.has_bias) + int(desc.has_addend)
    if len(infos) != expected_inputs:
        raise ValueError(f"expects {expected_inputs} inputs (x, weights{', bias' if desc.has_bias else ''}"
                         f"{', addend' if desc.has_addend else ''}), got {len(infos)}")
    if desc.has_bias and infos[2].shape != (out_c,):
        raise ValueError(f"bias must have shape ({out_c},), got {infos[2].shape}")
    top, left, bottom, right = desc.padding
    oh = window_output(h, top, bottom, kh, desc.stride[0], desc.dilation[0], False, "height")
    ow = window_output(w, left, right, kw, desc.stride[1], desc.dilation[1], False, "width")
    out = TensorInfo(_pack(n, out_c, oh, ow, desc.layout), dtype)
    if desc.has_addend and infos[-1].shape != out.shape:
        raise ValueError(f"addend must have the output shape {out.shape}, got {infos[-1].shape}")
    return [out]


def pooling_2d(desc: d.Pooling2dDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    _typed(infos, "numeric" if desc.kind is d.PoolingKind.MAX else "float", f"{desc.kind.name.lower()} pooling")
    n, c, h, w = _spatial(infos[0], desc.layout, "pooling")
    ceil = desc.rounding is d.OutputRounding.CEIL
    top, left, bottom, right = desc.padding
    oh = window_output(h, top, bottom, desc.kernel[0], desc.stride[0], desc.dilation[0], ceil, "height")
    ow = window_output(w, left, right, desc.kernel[1], desc.stride[1], desc.dilation[1], ceil, "width")
    return [TensorInfo(_pack(n, c, oh, ow, desc.layout), infos[0].dtype)]


B = d.BinaryOp
_BINARY_CLASS = {
    **dict.fromkeys((B.ADD, B.SUB, B.MUL, B.DIV, B.MAXIMUM, B.MINIMUM, B.POWER, B.MOD, B.FMOD), "numeric"),
    B.PRELU: "float",
    B.EQUAL: "numeric or bool",
    **dict.fromkeys((B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL), "numeric"),
    **dict.fromkeys((B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_XOR), "bool"),
    **dict.fromkeys((B.BITWISE_AND, B.BITWISE_OR, B.BITWISE_XOR, B.SHIFT_LEFT, B.SHIFT_RIGHT), "integer"),
}
COMPARISONS = frozenset({B.EQUAL, B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL})


def elementwise_binary(desc: d.ElementwiseBinaryDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2)
    dtype = _typed(infos, _BINARY_CLASS[desc.op], desc.op.name.lower())
    shape = broadcast_shapes(infos[0].shape, infos[1].shape)
    if desc.op is B.PRELU and shape != infos[0].shape:
        raise ValueError(f"PRelu slope {infos[1].shape} must broadcast to the input {infos[0].shape}")
    out = DataType.BOOL if desc.op in COMPARISONS else dtype
    if desc.fused_activation is not None and not out.is_float:
        raise ValueError(f"a fused activation needs a float output, not {out.numpy_name}")
    return [TensorInfo(shape, out)]


def elementwise_variadic(desc: d.ElementwiseVariadicDescriptor, infos: Infos) -> list[TensorInfo]:
    if not infos:
        raise ValueError("expects at least 1 input")
    dtype = _typed(infos, "float" if desc.op is d.VariadicOp.MEAN else "numeric", desc.op.name.lower())
    return [TensorInfo(broadcast_shapes(*(i.shape for i in infos)), dtype)]


def same_shape(desc: object, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    return [infos[0]]


def activation(desc: d.ActivationDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    _typed(infos, "float", "an activation")
    if desc.kind is d.ActivationKind.CELU and desc.alpha == 0:
        raise ValueError("celu needs alpha != 0 (it divides by alpha)")
    return [infos[0]]


U = d.UnaryOp
_UNARY_CLASS = {
    U.ABS: "numeric", U.NEG: "signed", U.SIGN: "numeric",
    **dict.fromkeys((U.IS_NAN, U.IS_INF, U.IS_POS_INF, U.IS_NEG_INF), "float"),
    U.LOGICAL_NOT: "bool", U.BITWISE_NOT: "integer",
}
_UNARY_TO_BOOL = frozenset({U.IS_NAN, U.IS_INF, U.IS_POS_INF, U.IS_NEG_INF})


def elementwise_unary(desc: d.ElementwiseUnaryDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    _typed(infos, _UNARY_CLASS.get(desc.op, "float"), desc.op.name.lower())
    return [TensorInfo(infos[0].shape, DataType.BOOL if desc.op in _UNARY_TO_BOOL else infos[0].dtype)]


def select(desc: None, infos: Infos) -> list[TensorInfo]:
    _count(infos, 3)
    if infos[0].dtype is not DataType.BOOL:
        raise ValueError(f"the condition must be bool, got {infos[0].dtype.numpy_name}")
    dtype = _same_type(infos, first=1)
    return [TensorInfo(broadcast_shapes(*(i.shape for i in infos)), dtype)]


def fully_connected(desc: d.FullyConnectedDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2 + int(desc.has_bias) + int(desc.has_addend))
    dtype = _float(infos)
    a, b = infos[0].shape, infos[1].shape
    if len(a) != 2 or len(b) != 2:
        raise ValueError(f"a and b must be rank 2, got {a} and {b}")
    m, k = (a[1], a[0]) if desc.transpose_a else a
    kb, n = (b[1], b[0]) if desc.transpose_b else b
    if k != kb:
        raise ValueError(f"inner dimensions differ: a gives K={k}, b gives K={kb}")
    if desc.has_bias:
        try:
            if broadcast_shapes(infos[2].shape, (m, n)) != (m, n):
                raise ValueError
        except ValueError:
            raise ValueError(f"c {infos[2].shape} does not broadcast to ({m}, {n})") from None
    if desc.has_addend and infos[-1].shape != (m, n):
        raise ValueError(f"addend must have the output shape ({m}, {n}), got {infos[-1].shape}")
    return [TensorInfo((m, n), dtype)]


def matmul(desc: None, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2)
    dtype = _typed(infos, "numeric", "matmul")
    a, b = infos[0].shape, infos[1].shape
    if not a or not b:
        raise ValueError("matmul inputs must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"inner dimensions differ: {a} @ {b}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    shape = (*batch, *([a2[-2]] if len(a) > 1 else []), *([b2[-1]] if len(b) > 1 else []))
    return [TensorInfo(shape, dtype)]


def softmax(desc: d.SoftmaxDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    _float(infos)
    _axis(desc.axis, infos[0].rank)
    return [infos[0]]


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def batch_normalization(desc: d.BatchNormalizationDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 5)
    dtype = _float(infos)
    x = infos[0]
    if x.rank < 2:
        raise ValueError(f"input must have rank >= 2, got {x.shape}")
    channels = x.shape[3] if x.rank == 4 and desc.layout is d.DataLayout.NHWC else x.shape[1]
    for name, info in zip(("scale", "bias", "mean", "var"), infos[1:]):
        if info.shape != (channels,):
            raise ValueError(f"{name} must have shape ({channels},), got {info.shape}")
    return [TensorInfo(x.shape, dtype)]


def lrn(desc: d.LrnDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    _float(infos)
    if infos[0].rank != 4:
        raise ValueError(f"input must be rank 4, got {infos[0].shape}")
    return [infos[0]]


def concat(desc: d.ConcatDescriptor, infos: Infos) -> list[TensorInfo]:
    if not infos:
        raise ValueError("expects at least 1 input")
    dtype = _same_type(infos)
    rank = infos[0].rank
    axis = _axis(desc.axis, rank)
    first = infos[0].shape
    for i, info in enumerate(infos):
        if info.rank != rank or any(info.shape[k] != first[k] for k in range(rank) if k != axis):
            raise ValueError(f"input {i} shape {info.shape} differs from {first} outside axis {axis}")
    total = sum(info.shape[axis] for info in infos)
    return [TensorInfo(first[:axis] + (total,) + first[axis + 1:], dtype)]


def transpose(desc: d.TransposeDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    shape = infos[0].shape
    if len(desc.perm) != len(shape):
        raise ValueError(f"permutation {desc.perm} has {len(desc.perm)} entries for rank {len(shape)}")
    return [TensorInfo(tuple(shape[p] for p in desc.perm), infos[0].dtype)]


# ---- since ABI 1.1 ---------------------------------------------------------------------------

R = d.ReduceOp
# The element types each reduction takes (backend_api.h, pn_reduce_op); the others: numeric.
_REDUCE_CLASS = {R.LOG_SUM: "float", R.LOG_SUM_EXP: "float", R.MAX: "numeric or bool", R.MIN: "numeric or bool"}
_ARG_OPS = (R.ARG_MAX, R.ARG_MIN)


def _resolved_axes(axes: Sequence[int], rank: int, what: str = "axes") -> None:
    if list(axes) != sorted(set(axes)) or any(not 0 <= a < rank for a in axes):
        raise ValueError(f"{what} {tuple(axes)} must be increasing, without repeats, in 0..{rank - 1}")


def reduce(desc: d.ReduceDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    dtype = _typed(infos, _REDUCE_CLASS.get(desc.op, "numeric"), f"reduce {desc.op.name.lower()}")
    x = infos[0]
    _resolved_axes(desc.axes, x.rank)
    arg = desc.op in _ARG_OPS
    if arg and len(desc.axes) != 1:
        raise ValueError(f"{desc.op.name.lower()} takes exactly one axis, got {desc.axes}")
    if arg and x.shape[desc.axes[0]] == 0:
        raise ValueError(f"{desc.op.name.lower()} over axis {desc.axes[0]} of size 0 has no answer")
    if desc.select_last_index and not arg:
        raise ValueError(f"select_last_index is arg_max's and arg_min's, not {desc.op.name.lower()}'s")
    shape = tuple(1 if i in desc.axes else s for i, s in enumerate(x.shape) if desc.keep_dims or i not in desc.axes)
    return [TensorInfo(shape, DataType.INT64 if arg else dtype)]


def normalization(desc: d.NormalizationDescriptor, infos: Infos) -> list[TensorInfo]:
    N = d.NormalizationOp
    x = infos[0]
    if desc.op is N.LP:
        _count(infos, 1)
        _float(infos)
        _axis(desc.axis, x.rank)
        if desc.num_groups not in (1, 2) or desc.has_bias:
            raise ValueError(f"Lp normalization takes p = 1 or 2 (num_groups) and no bias, got p = {desc.num_groups}")
        return [x]
    if not (desc.epsilon >= 0 and desc.epsilon != float("inf")):
        raise ValueError(f"epsilon must be finite and >= 0, got {desc.epsilon}")
    _count(infos, 2 + int(desc.has_bias))
    _float(infos)
    if desc.op is N.GROUP:
        if x.rank < 2:
            raise ValueError(f"group normalization needs rank >= 2 [N, C, ...], got {x.shape}")
        channels = x.shape[1]
        if desc.num_groups < 1 or channels % desc.num_groups:
            raise ValueError(f"num_groups {desc.num_groups} must divide the {channels} channels")
        for name, info in zip(("scale", "bias"), infos[1:]):
            if info.shape != (channels,):
                raise ValueError(f"{name} must have shape ({channels},), got {info.shape}")
        return [x]
    axis = _axis(desc.axis, x.rank)
    for name, info in zip(("scale", "bias"), infos[1:]):
        try:
            if broadcast_shapes(info.shape, x.shape[axis:]) != x.shape[axis:]:
                raise ValueError
        except ValueError:
            raise ValueError(f"{name} {info.shape} does not broadcast to the normalized dims {x.shape[axis:]}") from None
    return [x]


def _elements_shape(data: TensorInfo, indices: TensorInfo, axis: int) -> None:
    """GatherElements / ScatterElements: indices of data's rank, no larger off the axis."""
    if indices.rank != data.rank or any(i > s for a, (i, s) in enumerate(zip(indices.shape, data.shape))
                                        if a != axis):
        raise ValueError(f"indices {indices.shape} must have the rank of data {data.shape} and no larger dims "
                         f"except on axis {axis}")


def gather(desc: d.GatherDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2)
    data, indices = infos
    _index_type(indices, "indices")
    G = d.GatherOp
    if desc.op is G.TAKE:
        axis = _axis(desc.axis, data.rank)
        return [TensorInfo(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.dtype)]
    if desc.op is G.ELEMENTS:
        _elements_shape(data, indices, _axis(desc.axis, data.rank))
        return [TensorInfo(indices.shape, data.dtype)]
    b = desc.batch_dims
    if indices.rank < 1 or b >= min(data.rank, indices.rank) or data.shape[:b] != indices.shape[:b]:
        raise ValueError(f"batch_dims {b}: data {data.shape} and indices {indices.shape} must share their first "
                         f"{b} dims, and both have more")
    k = indices.shape[-1]
    if not 1 <= k <= data.rank - b:
        raise ValueError(f"indices' last dim {k} must be in 1..{data.rank - b} (data's rank {data.rank} minus "
                         f"batch_dims {b})")
    return [TensorInfo(indices.shape[:-1] + data.shape[b + k:], data.dtype)]


def scatter(desc: d.ScatterDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 3)
    data, indices, updates = infos
    _index_type(indices, "indices")
    if updates.dtype != data.dtype:
        raise ValueError(f"updates are {updates.dtype.numpy_name} but data is {data.dtype.numpy_name}")
    if desc.op is d.ScatterOp.ELEMENTS:
        _elements_shape(data, indices, _axis(desc.axis, data.rank))
        if updates.shape != indices.shape:
            raise ValueError(f"indices {indices.shape} and updates {updates.shape} must have one shape of data's "
                             f"rank {data.rank}")
    else:
        k = indices.shape[-1] if indices.rank else 0
        if indices.rank < 1 or not 1 <= k <= data.rank or updates.shape != indices.shape[:-1] + data.shape[k:]:
            raise ValueError(f"updates {updates.shape} must have shape indices[:-1] + data[k:] = "
                             f"{indices.shape[:-1] + data.shape[k:]} (k = {k})")
    if desc.reduction is not d.ScatterReduction.NONE and data.dtype is DataType.BOOL:
        raise ValueError(f"reduction {desc.reduction.name.lower()} takes numeric tensors")
    return [data]


def pad(desc: d.PadDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1, 2)
    x = infos[0]
    if len(desc.pads_begin) != x.rank:
        raise ValueError(f"pads for {len(desc.pads_begin)} dims, the input has rank {x.rank}")
    if len(infos) == 2:
        if desc.mode is not d.PadMode.CONSTANT or infos[1].num_elements != 1 or infos[1].dtype != x.dtype:
            raise ValueError(f"the pad value must be one {x.dtype.numpy_name} element, for constant padding only")
    shape = tuple(b + s + e for b, s, e in zip(desc.pads_begin, x.shape, desc.pads_end))
    # Negative pads crop first; the positive ones then extend the cropped tensor (backend_api.h).
    for axis, (b, s, e) in enumerate(zip(desc.pads_begin, x.shape, desc.pads_end)):
        kept, grow = s - max(-b, 0) - max(-e, 0), max(b, e, 0)
        if kept < 0:
            raise ValueError(f"axis {axis}: pads {b} / {e} remove more than its {s} elements")
        if desc.mode is d.PadMode.REFLECT and grow >= kept and grow > 0:
            raise ValueError(f"axis {axis}: reflect pads {b} / {e} must be smaller than its {kept} (cropped) "
                             f"elements")
        if desc.mode in (d.PadMode.EDGE, d.PadMode.WRAP) and grow > 0 and kept == 0:
            raise ValueError(f"axis {axis}: {desc.mode.name.lower()} padding of an empty axis")
    return [TensorInfo(shape, x.dtype)]


def convolution(desc: d.ConvolutionDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2 + int(desc.has_bias))
    dtype = _float(infos)
    x, w = infos[0], infos[1]
    k = desc.spatial_rank
    if x.rank != k + 2 or w.rank != k + 2:
        raise ValueError(f"a {k}-D convolution takes input and weights of rank {k + 2}, got {x.shape} and {w.shape}")
    channels, groups = x.shape[1], desc.groups
    transposed = desc.op is d.ConvolutionOp.TRANSPOSED
    if transposed:
        if w.shape[0] != channels or channels % groups:
            raise ValueError(f"weights {w.shape} must be [{channels}, out/groups, k...] with groups={groups} "
                             f"dividing {channels}")
        out_c = w.shape[1] * groups
    else:
        if channels % groups or w.shape[1] * groups != channels or w.shape[0] % groups:
            raise ValueError(f"weights {w.shape} expect {w.shape[1] * groups} input channels (groups={groups}), "
                             f"input has {channels}")
        out_c = w.shape[0]
    if desc.has_bias and infos[2].shape != (out_c,):
        raise ValueError(f"bias must have shape ({out_c},), got {infos[2].shape}")
    spatial = []
    for axis in range(k):
        size, kern = x.shape[2 + axis], w.shape[2 + axis]
        stride, dil = desc.strides[axis], desc.dilations[axis]
        begin, end, extra = desc.pads_begin[axis], desc.pads_end[axis], desc.output_padding[axis]
        if transposed:
            if size < 1:
                raise ValueError(f"a transposed convolution's spatial axis {axis} is empty")
            n = stride * (size - 1) + extra + dil * (kern - 1) + 1 - begin - end
            if n < 0:
                raise ValueError(f"pads {begin}+{end} exceed the transposed output along axis {axis}")
            spatial.append(n)
        else:
            if extra:
                raise ValueError("output_padding is for transposed convolutions")
            spatial.append(window_output(size, begin, end, kern, stride, dil, False, f"axis {axis}"))
    return [TensorInfo((x.shape[0], out_c, *spatial), dtype)]


def pooling(desc: d.PoolingDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    x = infos[0]
    _typed(infos, "numeric" if desc.kind is d.PoolingKind.MAX else "float", f"{desc.kind.name.lower()} pooling")
    k = desc.spatial_rank
    if x.rank != k + 2:
        raise ValueError(f"{k}-D pooling takes an input of rank {k + 2}, got {x.shape}")
    ceil = desc.rounding is d.OutputRounding.CEIL
    spatial = [window_output(x.shape[2 + a], desc.pads_begin[a], desc.pads_end[a], desc.kernel[a], desc.strides[a],
                             desc.dilations[a], ceil, f"axis {a}") for a in range(k)]
    return [TensorInfo((*x.shape[:2], *spatial), x.dtype)]


# The activations of a recurrent cell (ONNX's RNN, GRU and LSTM functions; Affine is LINEAR).
RECURRENT_ACTIVATIONS = (
    d.ActivationKind.RELU, d.ActivationKind.TANH, d.ActivationKind.SIGMOID, d.ActivationKind.LINEAR,
    d.ActivationKind.LEAKY_RELU, d.ActivationKind.THRESHOLDED_RELU, d.ActivationKind.SCALED_TANH,
    d.ActivationKind.HARD_SIGMOID, d.ActivationKind.ELU, d.ActivationKind.SOFTSIGN, d.ActivationKind.SOFTPLUS)


def recurrent(desc: d.RecurrentDescriptor, infos: Infos) -> list[TensorInfo]:
    flags = (desc.has_bias, desc.has_sequence_lens, desc.has_initial_h, desc.has_initial_c, desc.has_peepholes)
    _count(infos, 3 + sum(flags))
    lstm = desc.cell is d.RecurrentCell.LSTM
    if (desc.has_initial_c or desc.has_peepholes or desc.input_forget) and not lstm:
        raise ValueError("initial_c, peepholes and input_forget are LSTM's")
    if desc.linear_before_reset and desc.cell is not d.RecurrentCell.GRU:
        raise ValueError("linear_before_reset is GRU's")
    x, w, r = infos[0], infos[1], infos[2]
    lens_index = 3 + int(desc.has_bias) if desc.has_sequence_lens else -1
    dtype = _float([info for i, info in enumerate(infos) if i != lens_index])
    if x.rank != 3:
        raise ValueError(f"x must be rank 3, got {x.shape}")
    seq, batch, size = (x.shape[1], x.shape[0], x.shape[2]) if desc.batch_major else x.shape
    dirs = 2 if desc.direction is d.RecurrentDirection.BIDIRECTIONAL else 1
    gates = {d.RecurrentCell.RNN: 1, d.RecurrentCell.GRU: 3, d.RecurrentCell.LSTM: 4}[desc.cell]
    h = desc.hidden_size
    state = (batch, dirs, h) if desc.batch_major else (dirs, batch, h)  # initial_h/c, y_h, y_c
    expected = {"w": (dirs, gates * h, size), "r": (dirs, gates * h, h)}
    optional = [("b", desc.has_bias, (dirs, 2 * gates * h)), ("sequence_lens", desc.has_sequence_lens, (batch,)),
                ("initial_h", desc.has_initial_h, state), ("initial_c", desc.has_initial_c, state),
                ("p", desc.has_peepholes, (dirs, 3 * h))]
    given = iter(infos[3:])
    checks = [("w", w, expected["w"]), ("r", r, expected["r"])]
    checks += [(name, next(given), shape) for name, present, shape in optional if present]
    for name, info, shape in checks:
        if info.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {info.shape}")
        if name == "sequence_lens" and info.dtype is not DataType.INT32:
            raise ValueError(f"sequence_lens must be int32, got {info.dtype.numpy_name}")
    needed = {d.RecurrentCell.RNN: 1, d.RecurrentCell.GRU: 2, d.RecurrentCell.LSTM: 3}[desc.cell] * dirs
    if len(desc.activations) != needed:
        raise ValueError(f"{desc.cell.name} {desc.direction.name.lower()} takes {needed} activations, "
                         f"got {len(desc.activations)}")
    for i, act in enumerate(desc.activations):
        if act.kind not in RECURRENT_ACTIVATIONS:
            raise ValueError(f"activation {i} ({act.kind.name.lower()}) is not a recurrent activation; those are "
                             f"{', '.join(k.name.lower() for k in RECURRENT_ACTIVATIONS)}")
    y = (batch, seq, dirs, h) if desc.batch_major else (seq, dirs, batch, h)
    return [TensorInfo(y, dtype), TensorInfo(state, dtype)] + ([TensorInfo(state, dtype)] if lstm else [])


def cumulative(desc: d.CumulativeDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    _typed(infos, "numeric", "a cumulative sum or product")
    _axis(desc.axis, infos[0].rank)
    return [infos[0]]


def triangular(desc: d.TriangularDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    if infos[0].rank < 2:
        raise ValueError(f"the input must have rank >= 2, got {infos[0].shape}")
    return [infos[0]]


def grid_sample(desc: d.GridSampleDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2)
    x, grid = infos
    if x.rank < 3:
        raise ValueError(f"x must be [N, C, spatial...] with at least one spatial axis, got {x.shape}")
    r = x.rank - 2
    if not grid.dtype.is_float:
        raise ValueError(f"grid must be a float type, got {grid.dtype.numpy_name}")
    if grid.rank != r + 2 or grid.shape[0] != x.shape[0] or grid.shape[-1] != r:
        raise ValueError(f"grid must be [N={x.shape[0]}, out..., {r}] for x {x.shape}, got {grid.shape}")
    return [TensorInfo((x.shape[0], x.shape[1], *grid.shape[1:-1]), x.dtype)]


def roi_align(desc: d.RoiAlignDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 3)
    x, rois, batch = infos
    dtype = _float([x, rois])
    _index_type(batch, "batch_indices")
    if x.rank != 4 or rois.rank != 2 or rois.shape[1] != 4 or batch.shape != (rois.shape[0],):
        raise ValueError(f"takes x [N, C, H, W], rois [R, 4] and batch_indices [R], got {x.shape}, {rois.shape} "
                         f"and {batch.shape}")
    return [TensorInfo((rois.shape[0], x.shape[1], desc.output_height, desc.output_width), dtype)]


def deformable_convolution(desc: d.DeformableConvolutionDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 3 + int(desc.has_bias) + int(desc.has_mask))
    dtype = _float(infos)
    x, w, offset = infos[0], infos[1], infos[2]
    k = desc.spatial_rank
    if x.rank != k + 2 or w.rank != k + 2:
        raise ValueError(f"{k}-D deformable convolution takes x and weights of rank {k + 2}, got {x.shape} and "
                         f"{w.shape}")
    channels, out_channels = x.shape[1], w.shape[0]
    if channels % desc.groups or out_channels % desc.groups or w.shape[1] != channels // desc.groups:
        raise ValueError(f"groups {desc.groups}: weights {w.shape} do not fit {channels} input channels")
    if channels % desc.offset_groups:
        raise ValueError(f"offset_groups {desc.offset_groups} do not divide the {channels} input channels")
    spatial = []
    for a in range(k):
        n = window_output(x.shape[2 + a], desc.pads_begin[a], desc.pads_end[a], w.shape[2 + a], desc.strides[a],
                          desc.dilations[a], False, f"axis {a}")
        if n < 1:
            raise ValueError(f"axis {a}: no output position")
        spatial.append(n)
    taps = 1
    for size in w.shape[2:]:
        taps *= size
    expected = [("offset", offset, (x.shape[0], desc.offset_groups * taps * k, *spatial))]
    rest = iter(infos[3:])
    if desc.has_bias:
        expected.append(("bias", next(rest), (out_channels,)))
    if desc.has_mask:
        expected.append(("mask", next(rest), (x.shape[0], desc.offset_groups * taps, *spatial)))
    for name, info, shape in expected:
        if info.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {info.shape}")
    return [TensorInfo((x.shape[0], out_channels, *spatial), dtype)]


def spectral(desc: d.SpectralDescriptor, infos: Infos) -> list[TensorInfo]:
    n = desc.length
    if desc.op is d.SpectralOp.DFT:
        _count(infos, 1)
        x = infos[0]
        dtype = _float(infos)
        if x.rank < 2 or x.shape[-1] not in (1, 2):
            raise ValueError(f"x must end in a dim of 1 (real) or 2 (complex), got {x.shape}")
        axis = _axis(desc.axis, x.rank)
        if axis == x.rank - 1:
            raise ValueError(f"the DFT axis {desc.axis} is x's last dim, which holds the complex parts")
        shape = list(x.shape)
        shape[axis] = n // 2 + 1 if desc.onesided and not desc.inverse else n
        shape[-1] = 1 if desc.onesided and desc.inverse else 2
        return [TensorInfo(tuple(shape), dtype)]
    _count(infos, 2 if desc.has_window else 1)
    dtype = _float(infos)
    signal = infos[0]
    if signal.rank != 3 or signal.shape[-1] not in (1, 2):
        raise ValueError(f"the signal must be [batch, length, 1 or 2], got {signal.shape}")
    if desc.has_window and infos[1].shape != (n,):
        raise ValueError(f"the window must be [{n}] (the frame length), got {infos[1].shape}")
    frames = (signal.shape[1] - n) // desc.frame_step + 1
    if frames < 0:
        raise ValueError(f"a signal of {signal.shape[1]} has no frame of {n} every {desc.frame_step}")
    return [TensorInfo((signal.shape[0], frames, n // 2 + 1 if desc.onesided else n, 2), dtype)]


def linear_algebra(desc: d.LinearAlgebraDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    x = infos[0]
    dtype = _float(infos)
    if x.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"a determinant takes square matrices [..., M, M], got {x.shape}")
    return [TensorInfo(x.shape[:-2], dtype)]


def data_dependent(desc: d.DataDependentDescriptor, infos: Infos) -> list[TensorInfo]:
    """The outputs' upper bounds (backend_api.h, "Data-dependent layers")."""
    op = desc.op
    int64 = DataType.INT64
    if op is d.DataDependentOp.NON_ZERO:
        _count(infos, 1)
        x = infos[0]
        if x.rank < 1:
            raise ValueError("NonZero needs an input of rank >= 1 (reshape a scalar to [1])")
        return [TensorInfo((x.rank, x.num_elements), int64)]
    if op is d.DataDependentOp.UNIQUE:
        _count(infos, 1)
        x = infos[0]
        if desc.has_axis:
            items = x.shape[_axis(desc.axis, x.rank)]
            y = x
        else:
            items = x.num_elements
            y = TensorInfo((items,), x.dtype)
        return [y] + [TensorInfo((items,), int64)] * 3
    if op is d.DataDependentOp.NON_MAX_SUPPRESSION:
        if not 2 <= len(infos) <= 5:
            raise ValueError(f"NonMaxSuppression takes 2 to 5 inputs, got {len(infos)}")
        boxes, scores = infos[0], infos[1]
        if boxes.rank != 3 or boxes.shape[2] != 4 or scores.rank != 3 or scores.shape[0] != boxes.shape[0] \
                or scores.shape[2] != boxes.shape[1]:
            raise ValueError(f"boxes must be [B, N, 4] and scores [B, C, N], got {list(boxes.shape)} and "
                             f"{list(scores.shape)}")
        return [TensorInfo((boxes.shape[0] * scores.shape[1] * boxes.shape[1], 3), int64)]
    _count(infos, 2)
    x, condition = infos
    if condition.rank != 1 or condition.dtype is not DataType.BOOL:
        raise ValueError(f"the condition must be a rank-1 bool tensor, got {condition}")
    length = condition.shape[0]
    if desc.has_axis:
        axis = _axis(desc.axis, x.rank)
        if length > x.shape[axis]:
            raise ValueError(f"the condition has {length} elements, more than dim {axis} ({x.shape[axis]})")
        shape = list(x.shape)
        shape[axis] = length
        return [TensorInfo(tuple(shape), x.dtype)]
    if length > x.num_elements:
        raise ValueError(f"the condition has {length} elements, more than the input ({x.num_elements})")
    return [TensorInfo((length,), x.dtype)]


# ---- kinds whose outputs the builder states ------------------------------------------------------


def _outputs(outputs: Infos, n: int) -> None:
    if len(outputs) != n:
        raise ValueError(f"has {n} output(s), got {len(outputs)}")


def check_reshape(desc: None, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 1)
    if outputs[0].num_elements != infos[0].num_elements or outputs[0].dtype != infos[0].dtype:
        raise ValueError(f"{infos[0]} cannot be reshaped to {outputs[0]}")


def check_slice(desc: d.SliceDescriptor, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 1)
    x, y = infos[0], outputs[0]
    if len(desc.starts) != x.rank or y.rank != x.rank or y.dtype != x.dtype:
        raise ValueError(f"a slice of {x} has starts and steps for each of its {x.rank} dims and its "
                         f"type, got {len(desc.starts)} and {y}")
    for axis, (start, step, dim, count) in enumerate(zip(desc.starts, desc.steps, x.shape, y.shape)):
        last = start + (count - 1) * step
        if count and not (0 <= start < dim and 0 <= last < dim):
            raise ValueError(f"axis {axis}: {count} elements from {start} by {step} leave 0..{dim - 1}")
        if not count and start:
            raise ValueError(f"axis {axis} is empty in the output, so its start must be 0, got {start}")


def check_split(desc: d.SplitDescriptor, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    x = infos[0]
    axis = _axis(desc.axis, x.rank)
    if not outputs:
        raise ValueError("has at least 1 output")
    for i, y in enumerate(outputs):
        if y.rank != x.rank or y.dtype != x.dtype or any(y.shape[a] != x.shape[a] for a in range(x.rank) if a != axis):
            raise ValueError(f"output {i} {y} differs from the input {x} outside axis {axis}")
    if sum(y.shape[axis] for y in outputs) != x.shape[axis]:
        raise ValueError(f"the outputs' sizes {[y.shape[axis] for y in outputs]} do not add up to {x.shape[axis]}")


def check_expand(desc: None, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 1)
    if broadcast_shapes(infos[0].shape, outputs[0].shape) != outputs[0].shape or outputs[0].dtype != infos[0].dtype:
        raise ValueError(f"{infos[0]} does not broadcast to {outputs[0]}")


def check_resize(desc: d.ResizeDescriptor, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 1)
    x, y = infos[0], outputs[0]
    _typed(infos, "any" if desc.mode is d.ResizeMode.NEAREST else "float", f"{desc.mode.name.lower()} resize")
    if y.rank != x.rank or len(desc.scales) != x.rank or y.dtype != x.dtype:
        raise ValueError(f"resizing {x} takes one scale per dim and gives its type, got {len(desc.scales)} "
                         f"scales and {y}")


def check_cast(desc: d.CastDescriptor, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 1)
    if outputs[0].shape != infos[0].shape:
        raise ValueError(f"a cast keeps the shape {infos[0].shape}, got {outputs[0].shape}")


def check_top_k(desc: d.TopKDescriptor, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 2)
    x = infos[0]
    _typed(infos, "numeric", "top-k")
    axis = _axis(desc.axis, x.rank)
    values, indices = outputs
    k = values.shape[axis] if values.rank == x.rank else -1
    expected = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    if not 0 <= k <= x.shape[axis] or values.shape != expected or indices.shape != expected \
            or values.dtype != x.dtype or indices.dtype is not DataType.INT64:
        raise ValueError(f"top-k of {x} along axis {axis} gives values of its type and int64 indices of shape "
                         f"{x.shape[:axis]} + (k,) + {x.shape[axis + 1:]}, k <= {x.shape[axis]}")


def check_one_hot(desc: d.OneHotDescriptor, infos: Infos, outputs: Infos) -> None:
    _count(infos, 2)
    _outputs(outputs, 1)
    indices, values, y = infos[0], infos[1], outputs[0]
    if indices.dtype is DataType.BOOL or values.num_elements != 2 or values.rank != 1:
        raise ValueError(f"takes numeric indices and values [off, on], got {indices} and {values}")
    rank = indices.rank + 1
    axis = _axis(desc.axis, rank)
    if y.rank != rank or y.dtype != values.dtype or y.shape[:axis] + y.shape[axis + 1:] != indices.shape:
        raise ValueError(f"the output must be the indices' shape {indices.shape} with the depth inserted at "
                         f"axis {axis}, of the values' type {values.dtype.numpy_name}, got {y}")


# ---- quantization (backend_api.h, "Quantization") -------------------------------------------------

_QUANTIZED = (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16)
_EIGHT_BIT = (DataType.INT8, DataType.UINT8)


def _names(types: Sequence[DataType]) -> str:
    return ", ".join(t.numpy_name for t in types)


def promote_float(a: DataType, b: DataType) -> DataType:
    """NumPy's promotion of two element types for a float operation, as ONNX's reference meets it
    (the quantization kinds' default precision): two float types give the wider (float32 for
    float16 with bfloat16); an integer counts as the narrowest float holding it (8-bit: float16,
    16-bit: float32, wider: float64), and two integers divide in float64."""
    def as_float(t: DataType) -> DataType:
        if t.is_float:
            return t
        return {1: DataType.FLOAT16, 2: DataType.FLOAT32}.get(t.itemsize, DataType.FLOAT64)

    if not a.is_float and not b.is_float:
        return DataType.FLOAT64
    a, b = as_float(a), as_float(b)
    if a is b:
        return a
    if DataType.FLOAT64 in (a, b):
        return DataType.FLOAT64
    return DataType.FLOAT32


def _plain(infos: Infos, role: str) -> None:
    for i, info in enumerate(infos):
        if info.quant_scale or info.quant_zero_point:
            raise ValueError(f"{role} {i} carries static quantization (quant_scale {info.quant_scale}); the "
                             f"quantization kinds take scales and zero points as inputs")


def _one_element(info: TensorInfo, what: str) -> None:
    if info.rank > 1 or info.num_elements != 1:
        raise ValueError(f"{what} must hold one element (rank 0 or 1), got shape {info.shape}")


def quantization_granularity(desc: d.QuantizationDescriptor, x: TensorInfo, scale: TensorInfo,
                             zero_point: TensorInfo) -> str:
    """"tensor", "axis" or "blocked", checking the scale's and zero point's shapes against x."""
    if scale.shape != zero_point.shape:
        raise ValueError(f"zero_point has shape {zero_point.shape} and scale {scale.shape}; they have one shape")
    if desc.block_size == 0 and scale.rank <= 1 and scale.num_elements == 1:
        return "tensor"
    if not -x.rank <= desc.axis < x.rank:
        raise ValueError(f"axis {desc.axis} is out of range for x of rank {x.rank} (per-axis and blocked "
                         f"quantization need an axis of x)")
    axis = desc.axis % x.rank
    if desc.block_size == 0:
        if scale.shape != (x.shape[axis],):
            raise ValueError(f"scale has shape {scale.shape}; per tensor it holds one element, per axis {axis} it "
                             f"is ({x.shape[axis]},), blocked it needs block_size >= 1")
        return "axis"
    blocks = -(-x.shape[axis] // desc.block_size)
    expected = x.shape[:axis] + (blocks,) + x.shape[axis + 1:]
    if scale.shape != expected:
        raise ValueError(f"a scale blocked along axis {axis} by {desc.block_size} has shape {expected}, got "
                         f"{scale.shape}")
    return "blocked"


def check_quantization(desc: d.QuantizationDescriptor, infos: Infos, outputs: Infos) -> None:
    _plain(infos, "input")
    _plain(outputs, "output")
    op = desc.op
    if op is d.QuantizationOp.DYNAMIC_QUANTIZE_LINEAR:
        _count(infos, 1)
        _outputs(outputs, 3)
        if desc.axis != 0 or desc.block_size != 0 or desc.precision is not DataType.FLOAT32:
            raise ValueError("dynamic quantization takes axis 0, block_size 0 and precision float32")
        expected = [TensorInfo(infos[0].shape, DataType.UINT8), TensorInfo((), DataType.FLOAT32),
                    TensorInfo((), DataType.UINT8)]
        if infos[0].dtype is not DataType.FLOAT32 or [TensorInfo(o.shape, o.dtype) for o in outputs] != expected:
            raise ValueError(f"dynamic quantization takes float32 x and gives y (uint8, x's shape), scale (float32, "
                             f"rank 0) and zero_point (uint8, rank 0), got {infos[0]} -> "
                             f"{', '.join(map(str, outputs))}")
        return
    _count(infos, 3)
    _outputs(outputs, 1)
    x, scale, zero_point = infos
    y = outputs[0]
    if op is d.QuantizationOp.QUANTIZE_LINEAR:
        for info, what in ((x, "x"), (scale, "scale")):
            if not (info.dtype.is_float or info.dtype is DataType.INT32):
                raise ValueError(f"quantize: {what} must be a float type or int32, got {info.dtype.numpy_name}")
        if zero_point.dtype not in _QUANTIZED:
            raise ValueError(f"quantize: zero_point must be {_names(_QUANTIZED)}, got {zero_point.dtype.numpy_name}")
        dtype = zero_point.dtype
    else:
        if x.dtype not in _QUANTIZED + (DataType.INT32,):
            raise ValueError(f"dequantize: x must be {_names(_QUANTIZED)} or int32, got {x.dtype.numpy_name}")
        if not scale.dtype.is_float or zero_point.dtype is not x.dtype:
            raise ValueError(f"dequantize: scale must be a float type and zero_point x's type, got "
                             f"{scale.dtype.numpy_name} and {zero_point.dtype.numpy_name}")
        if not y.dtype.is_float:
            raise ValueError(f"dequantize: the output must be a float type, got {y.dtype.numpy_name}")
        dtype = y.dtype
    if (y.shape, y.dtype) != (x.shape, dtype):
        raise ValueError(f"the output must be {TensorInfo(x.shape, dtype)}, got {y}")
    quantization_granularity(desc, x, scale, zero_point)


def _product_types(op: d.QuantizedOp, infos: Infos, names: tuple[str, str]) -> DataType:
    """The element types of a quantized product's inputs; returns the output's."""
    qlinear = op is d.QuantizedOp.QLINEAR
    x, x_zero, w, w_zero = (infos[0], infos[2], infos[3], infos[5]) if qlinear else infos[:4]
    for operand, zero, name in ((x, x_zero, names[0]), (w, w_zero, names[1])):
        if operand.dtype not in _EIGHT_BIT or zero.dtype is not operand.dtype:
            raise ValueError(f"{name} must be int8 or uint8 and {name}_zero_point of its type, got "
                             f"{operand.dtype.numpy_name} and {zero.dtype.numpy_name}")
    if not qlinear:
        return DataType.INT32
    scales = (infos[1], infos[4], infos[6])
    if not scales[0].dtype.is_float or any(s.dtype is not scales[0].dtype for s in scales):
        raise ValueError(f"the scales share one float type, got {', '.join(s.dtype.numpy_name for s in scales)}")
    if infos[7].dtype not in _EIGHT_BIT:
        raise ValueError(f"y_zero_point must be int8 or uint8, got {infos[7].dtype.numpy_name}")
    _one_element(infos[6], "y_scale")
    _one_element(infos[7], "y_zero_point")
    return infos[7].dtype


def quantized_convolution(desc: d.QuantizedConvolutionDescriptor, infos: Infos) -> list[TensorInfo]:
    qlinear = desc.op is d.QuantizedOp.QLINEAR
    _count(infos, (8 + int(desc.has_bias)) if qlinear else 4)
    _plain(infos, "input")
    dtype = _product_types(desc.op, infos, ("x", "w"))
    x, w = (infos[0], infos[3]) if qlinear else (infos[0], infos[2])
    k = desc.spatial_rank
    if x.rank != k + 2 or w.rank != k + 2:
        raise ValueError(f"a {k}-D convolution takes x and w of rank {k + 2}, got {x.shape} and {w.shape}")
    channels, groups, out_c = x.shape[1], desc.groups, w.shape[0]
    if channels % groups or out_c % groups or w.shape[1] * groups != channels:
        raise ValueError(f"w {w.shape} expects {w.shape[1] * groups} input channels and groups={groups} dividing "
                         f"{channels} and {out_c}")
    params = [(infos[2 if qlinear else 1], "x_zero_point", False), (infos[5 if qlinear else 3], "w_zero_point", True)]
    if qlinear:
        params += [(infos[1], "x_scale", False), (infos[4], "w_scale", True)]
    for info, what, per_channel in params:
        if not (info.rank <= 1 and info.num_elements == 1) and not (per_channel and info.shape == (out_c,)):
            raise ValueError(f"{what} must hold one element{f' or be ({out_c},)' if per_channel else ''}, got "
                             f"{info.shape}")
    if desc.has_bias and (infos[8].dtype is not DataType.INT32 or infos[8].shape != (out_c,)):
        raise ValueError(f"the bias must be int32 ({out_c},), got {infos[8]}")
    spatial = [window_output(x.shape[2 + a], desc.pads_begin[a], desc.pads_end[a], w.shape[2 + a], desc.strides[a],
                             desc.dilations[a], False, f"axis {a}") for a in range(k)]
    return [TensorInfo((x.shape[0], out_c, *spatial), dtype)]


def _operand_parameter(info: TensorInfo, operand: TensorInfo, k_axis: int, what: str, name: str) -> None:
    """A zero point or scale broadcasts to its operand and does not vary along its summed axis."""
    try:
        fits = info.rank <= operand.rank and broadcast_shapes(info.shape, operand.shape) == operand.shape
    except ValueError:
        fits = False
    aligned = k_axis - (operand.rank - info.rank)
    if not fits or (aligned >= 0 and info.shape[aligned] != 1):
        raise ValueError(f"{what} {info.shape} must broadcast to {name}'s {operand.shape} with size 1 along its "
                         f"summed axis (per tensor, per row of a, per column of b)")


def quantized_matmul(desc: d.QuantizedMatMulDescriptor, infos: Infos) -> list[TensorInfo]:
    qlinear = desc.op is d.QuantizedOp.QLINEAR
    _count(infos, 8 if qlinear else 4)
    _plain(infos, "input")
    dtype = _product_types(desc.op, infos, ("a", "b"))
    a, b = (infos[0], infos[3]) if qlinear else (infos[0], infos[2])
    shape = matmul(None, [TensorInfo(a.shape, DataType.INT32), TensorInfo(b.shape, DataType.INT32)])[0].shape
    ka, kb = a.rank - 1, (b.rank - 2 if b.rank >= 2 else 0)
    params = [(infos[2 if qlinear else 1], "a_zero_point", a, ka, "a"), (infos[5 if qlinear else 3], "b_zero_point",
                                                                         b, kb, "b")]
    if qlinear:
        params += [(infos[1], "a_scale", a, ka, "a"), (infos[4], "b_scale", b, kb, "b")]
    for info, what, operand, k_axis, name in params:
        _operand_parameter(info, operand, k_axis, what, name)
    return [TensorInfo(shape, dtype)]


def check_bitcast(desc: None, infos: Infos, outputs: Infos) -> None:
    _count(infos, 1)
    _outputs(outputs, 1)
    x, y = infos[0], outputs[0]
    if y.shape != x.shape or x.dtype.itemsize != y.dtype.itemsize:
        raise ValueError(f"a bit cast keeps the shape and the element size: {x} cannot become {y}")


def check_random(desc: d.RandomDescriptor, infos: Infos, outputs: Infos) -> None:
    _outputs(outputs, 1)
    y = outputs[0]
    if desc.op is not d.RandomOp.MULTINOMIAL:
        _count(infos, 0)
        if not y.dtype.is_float:
            raise ValueError(f"{desc.op.name.lower()} values are of a float type, got {y.dtype.numpy_name}")
        return
    _count(infos, 1)
    x = infos[0]
    if not x.dtype.is_float or x.rank != 2 or x.shape[1] < 1:
        raise ValueError(f"multinomial takes float logits [rows, classes >= 1], got {x}")
    _index_type(y, "the multinomial output")
    if y.rank != 2 or y.shape[0] != x.shape[0]:
        raise ValueError(f"the multinomial output must be [{x.shape[0]}, samples], got {y.shape}")


INFER: dict[d.LayerKind, Callable[..., list[TensorInfo]]] = {
    d.LayerKind.CONVOLUTION_2D: convolution_2d,
    d.LayerKind.POOLING_2D: pooling_2d,
    d.LayerKind.ELEMENTWISE_BINARY: elementwise_binary,
    d.LayerKind.ELEMENTWISE_VARIADIC: elementwise_variadic,
    d.LayerKind.ACTIVATION: activation,
    d.LayerKind.FULLY_CONNECTED: fully_connected,
    d.LayerKind.MATMUL: matmul,
    d.LayerKind.SOFTMAX: softmax,
    d.LayerKind.BATCH_NORMALIZATION: batch_normalization,
    d.LayerKind.LOCAL_RESPONSE_NORMALIZATION: lrn,
    d.LayerKind.CONCAT: concat,
    d.LayerKind.TRANSPOSE: transpose,
    d.LayerKind.COPY: same_shape,
    d.LayerKind.ELEMENTWISE_UNARY: elementwise_unary,
    d.LayerKind.SELECT: select,
    d.LayerKind.REDUCE: reduce,
    d.LayerKind.NORMALIZATION: normalization,
    d.LayerKind.GATHER: gather,
    d.LayerKind.SCATTER: scatter,
    d.LayerKind.PAD: pad,
    d.LayerKind.CONVOLUTION: convolution,
    d.LayerKind.POOLING: pooling,
    d.LayerKind.RECURRENT: recurrent,
    d.LayerKind.CUMULATIVE: cumulative,
    d.LayerKind.TRIANGULAR: triangular,
    d.LayerKind.QUANTIZED_CONVOLUTION: quantized_convolution,
    d.LayerKind.QUANTIZED_MATMUL: quantized_matmul,
    d.LayerKind.GRID_SAMPLE: grid_sample,
    d.LayerKind.ROI_ALIGN: roi_align,
    d.LayerKind.DEFORMABLE_CONVOLUTION: deformable_convolution,
    d.LayerKind.SPECTRAL: spectral,
    d.LayerKind.LINEAR_ALGEBRA: linear_algebra,
    d.LayerKind.DATA_DEPENDENT: data_dependent,
}

# The kinds whose outputs' shapes depend on the data (backend_api.h: PN_LAYER_DATA_DEPENDENT): the
# output infos are upper bounds, the workload reports the actual dims at execute.
DATA_DEPENDENT_KINDS = frozenset(k for k in d.LayerKind if k.name == "DATA_DEPENDENT")

CHECK: dict[d.LayerKind, Callable[..., None]] = {
    d.LayerKind.RESHAPE: check_reshape,
    d.LayerKind.SLICE: check_slice,
    d.LayerKind.SPLIT: check_split,
    d.LayerKind.EXPAND: check_expand,
    d.LayerKind.RESIZE: check_resize,
    d.LayerKind.CAST: check_cast,
    d.LayerKind.TOP_K: check_top_k,
    d.LayerKind.ONE_HOT: check_one_hot,
    d.LayerKind.QUANTIZATION: check_quantization,
    d.LayerKind.BITCAST: check_bitcast,
    d.LayerKind.RANDOM: check_random,
}


def slice_span(start: Any, end: Any, step: int, dim: Any, onnx: bool = False) -> tuple[Any, Any]:
    """(first index, count) of x[start:end:step] along a dim of size `dim`, clamped as Python's
    slice.indices does, or with `onnx` as ONNX's Slice does (which clamps a backward slice's
    start to 0, not -1); negative start and end count from the end; any of start, end and dim
    may be a symbolic Dim."""
    if step == 0:
        raise ValueError("a slice step is 0")
    low, high = (0, dim) if step > 0 else (-1, dim - 1)
    begin = start + dim if start < 0 else start
    stop = end + dim if end < 0 else end
    first_low = 0 if onnx else low
    begin = first_low if begin < first_low else high if begin > high else begin
    stop = low if stop < low else high if stop > high else stop
    span = stop - begin if step > 0 else begin - stop
    if span <= 0:
        return 0, 0
    stride = abs(step)
    return begin, (span + stride - 1) // stride


def resolve_reshape(in_shape: tuple[int, ...], target: Sequence[int], allow_zero_copy: bool = False) -> tuple[int, ...]:
    """The new shape for a reshape: one -1 is inferred; with allow_zero_copy, 0 keeps the input dim (ONNX)."""
    shape = [as_dim(t) for t in target]
    for i, t in enumerate(shape):
        if t == 0 and allow_zero_copy:
            if i >= len(in_shape):
                raise ValueError(f"0 at position {i} has no input dimension to copy (input {in_shape})")
            shape[i] = in_shape[i]
    if shape.count(-1) > 1:
        raise ValueError(f"at most one -1 allowed in {tuple(target)}")
    if any(t < -1 for t in shape):
        raise ValueError(f"negative dimension in {tuple(target)}")
    total = 1
    for d_ in in_shape:
        total *= d_
    known = 1
    for t in shape:
        if t != -1:
            known *= t
    if -1 in shape:
        if known == 0 or total % known:
            raise ValueError(f"cannot infer -1: {total} elements of {in_shape} into {tuple(target)}")
        shape[shape.index(-1)] = total // known
    elif known != total:
        raise ValueError(f"{in_shape} has {total} elements, {tuple(target)} has {known}")
    return tuple(shape)
