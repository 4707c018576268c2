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

from plugnn import descriptors as d
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
    """NumPy broadcasting of `shapes`; ValueError when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        dims = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(dims) > 1:
            raise ValueError(f"shapes {', '.join(map(str, shapes))} do not broadcast (axis {axis}: {sorted(dims)})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


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
}


def resolve_reshape(in_shape: tuple[int, ...], target: Sequence[int], allow_zero_copy: bool = False) -> tuple[int, ...]:
    """The new shape for a reshape: one -1 is inferred; with allow_zero_copy, 0 keeps the input dim (ONNX)."""
    shape = list(int(t) for t in target)
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
