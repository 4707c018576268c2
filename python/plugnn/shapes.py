"""Output shapes of every layer kind, checked against the descriptor (pure Python).

Each function takes the descriptor and the input TensorInfos and returns the output
TensorInfos, or raises ValueError with a sentence saying what does not fit; the
network wraps it into a NetworkError naming the layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plugnn import descriptors as d
from plugnn.tensor import DataType, TensorInfo

Infos = Sequence[TensorInfo]


def _float(infos: Infos) -> DataType:
    dtype = infos[0].dtype
    for i, info in enumerate(infos):
        if info.dtype != dtype:
            raise ValueError(f"input {i} is {info.dtype.numpy_name} but input 0 is {dtype.numpy_name}")
    return dtype


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
    n, c, h, w = _spatial(infos[0], desc.layout, "pooling")
    ceil = desc.rounding is d.OutputRounding.CEIL
    top, left, bottom, right = desc.padding
    oh = window_output(h, top, bottom, desc.kernel[0], desc.stride[0], desc.dilation[0], ceil, "height")
    ow = window_output(w, left, right, desc.kernel[1], desc.stride[1], desc.dilation[1], ceil, "width")
    return [TensorInfo(_pack(n, c, oh, ow, desc.layout), infos[0].dtype)]


def elementwise_binary(desc: d.ElementwiseBinaryDescriptor, infos: Infos) -> list[TensorInfo]:
    _count(infos, 2)
    dtype = _float(infos)
    shape = broadcast_shapes(infos[0].shape, infos[1].shape)
    if desc.op is d.BinaryOp.PRELU and shape != infos[0].shape:
        raise ValueError(f"PRelu slope {infos[1].shape} must broadcast to the input {infos[0].shape}")
    return [TensorInfo(shape, dtype)]


def elementwise_variadic(desc: d.ElementwiseVariadicDescriptor, infos: Infos) -> list[TensorInfo]:
    if not infos:
        raise ValueError("expects at least 1 input")
    return [TensorInfo(broadcast_shapes(*(i.shape for i in infos)), _float(infos))]


def same_shape(desc: object, infos: Infos) -> list[TensorInfo]:
    _count(infos, 1)
    return [infos[0]]


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
    dtype = _float(infos)
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
    if infos[0].rank != 4:
        raise ValueError(f"input must be rank 4, got {infos[0].shape}")
    return [infos[0]]


def concat(desc: d.ConcatDescriptor, infos: Infos) -> list[TensorInfo]:
    if not infos:
        raise ValueError("expects at least 1 input")
    dtype = _float(infos)
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


INFER: dict[d.LayerKind, Callable[..., list[TensorInfo]]] = {
    d.LayerKind.CONVOLUTION_2D: convolution_2d,
    d.LayerKind.POOLING_2D: pooling_2d,
    d.LayerKind.ELEMENTWISE_BINARY: elementwise_binary,
    d.LayerKind.ELEMENTWISE_VARIADIC: elementwise_variadic,
    d.LayerKind.ACTIVATION: same_shape,
    d.LayerKind.FULLY_CONNECTED: fully_connected,
    d.LayerKind.MATMUL: matmul,
    d.LayerKind.SOFTMAX: softmax,
    d.LayerKind.BATCH_NORMALIZATION: batch_normalization,
    d.LayerKind.LOCAL_RESPONSE_NORMALIZATION: lrn,
    d.LayerKind.CONCAT: concat,
    d.LayerKind.TRANSPOSE: transpose,
    d.LayerKind.COPY: same_shape,
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
