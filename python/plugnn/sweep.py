"""The layer sweep of `plugnn check-backend`: for every layer kind, a generated set of layers
(shapes, element types, descriptor parameters) with their inputs, and the comparison of a
backend's outputs with CpuRef's.

`GENERATORS` maps a layer kind to a function of a NumPy Generator yielding `Case`s; a new
kind joins the sweep with one entry there. Outputs come from `shapes.INFER` (the one home of
the shape rules) and a case is asked of the backend only as it is: CpuRef is the oracle,
compared with the tolerance of plugnn's layer conformance suite (which holds CpuRef itself
to NumPy). Each kind also gets one malformed case (its first layer with an output one
element too long; on the first axis for the kinds of FREE_LAST_AXIS), which every backend must
refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from plugnn import descriptors as d
from plugnn.layers import LayerSpec
from plugnn.shapes import INFER
from plugnn.tensor import DataType, TensorInfo

F32 = DataType.FLOAT32

# |actual - expected| <= atol + rtol * |expected|, per element type of the output. float32 is
# the conformance suite's class (RTOL, ATOL in tests/conformance/conftest.py); the narrower
# float types allow one rounding of their own; integers and bool are exact.
TOLERANCE: dict[DataType, tuple[float, float]] = {
    DataType.FLOAT32: (1e-4, 1e-5),
    DataType.FLOAT16: (2e-3, 1e-3),
    DataType.BFLOAT16: (1.6e-2, 1e-2),
    DataType.FLOAT64: (1e-9, 1e-12),
}
LP_RTOL = 3e-4  # Lp pooling's pow/root chain, as in the conformance suite


class Case(NamedTuple):
    """One layer to ask about and, when claimed, to run: `inputs` are its arrays."""

    name: str
    spec: LayerSpec
    inputs: tuple[np.ndarray, ...]
    rtol_scale: float = 1.0


# A generator may yield None: a combination the shape rules reject (shapes.INFER), dropped.
Generator = Callable[[np.random.Generator], Iterator["Case | None"]]


# ---- building cases ------------------------------------------------------------------------------


def _data(rng: np.random.Generator, shape: Sequence[int], dtype: DataType, scale: float = 1.0,
          low: float | None = None) -> np.ndarray:
    shape = tuple(shape)
    if dtype is DataType.BOOL:
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        lo, hi = (0, 16) if dtype.name.startswith("UINT") else (-8, 8)
        return rng.integers(lo, hi, shape).astype(dtype.numpy_dtype)
    values = rng.standard_normal(shape) * scale
    if low is not None:
        values = np.abs(values) + low
    return values.astype(dtype.numpy_dtype)


def _case(kind: d.LayerKind, name: str, descriptor: Any, inputs: Sequence[np.ndarray],
          constants: Sequence[int] = (), outputs: Sequence[TensorInfo] | None = None,
          dtypes: Sequence[DataType] | None = None, rtol_scale: float = 1.0) -> Case | None:
    if dtypes is None:
        dtypes = [DataType[np.dtype(x.dtype).name.upper()] if np.dtype(x.dtype).name != "bool" else DataType.BOOL
                  for x in inputs]
    infos = tuple(TensorInfo(tuple(x.shape), t) for x, t in zip(inputs, dtypes))
    try:
        outs = tuple(outputs) if outputs is not None else tuple(INFER[kind](descriptor, infos))
    except ValueError:
        return None
    constant_data = tuple(inputs[i] if i in constants else None for i in range(len(inputs))) if constants else ()
    spec = LayerSpec(kind, name, descriptor, infos, outs, constants=constant_data)
    return Case(name, spec, tuple(inputs), rtol_scale)


def _float_types() -> list[DataType]:
    """The float types a sweep tries beyond float32 (bfloat16 only with ml_dtypes)."""
    types = [DataType.FLOAT16, DataType.FLOAT64]
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        return types
    return types + [DataType.BFLOAT16]


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


# ---- the generators, one per kind ------------------------------------------------------------------

ACTIVATION_PARAMETERS: dict[str, tuple[float, float]] = {
    "BOUNDED_RELU": (-0.5, 0.7), "LEAKY_RELU": (0.1, 0.0), "ELU": (0.8, 0.0), "HARD_SIGMOID": (0.2, 0.5),
    "LINEAR": (1.5, -0.25), "SWISH": (1.0, 0.0), "SELU": (1.67, 1.05), "CELU": (1.0, 0.0),
    "THRESHOLDED_RELU": (0.5, 0.0), "SHRINK": (0.5, 0.1), "SCALED_TANH": (1.7, 0.67),
}


def activation_descriptor(kind: d.ActivationKind) -> d.ActivationDescriptor:
    alpha, beta = ACTIVATION_PARAMETERS.get(kind.name, (0.0, 0.0))
    return d.ActivationDescriptor(kind, alpha, beta)


def activation(rng: np.random.Generator) -> Iterator[Case | None]:
    shapes = [(2, 3, 4, 5), (17,), (), (0, 3)]
    for kind in d.ActivationKind:
        if kind.name == "INVALID":
            continue
        desc = activation_descriptor(kind)
        for shape in shapes:
            x = _data(rng, shape, F32, 3.0, low=0.0 if kind.name == "SQRT" else None)
            yield _case(d.LayerKind.ACTIVATION, f"{kind.name.lower()}{_shape_text(shape)}", desc, [x])
    for dtype in _float_types():
        x = _data(rng, (3, 11), dtype, 3.0)
        yield _case(d.LayerKind.ACTIVATION, f"relu[3,11] {dtype.numpy_name}", d.ActivationDescriptor("relu"), [x])
        yield _case(d.LayerKind.ACTIVATION, f"sigmoid[3,11] {dtype.numpy_name}", d.ActivationDescriptor("sigmoid"), [x])


def _binary_inputs(rng: np.random.Generator, op: d.BinaryOp, a_shape: Sequence[int],
                   b_shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    name = op.name
    if name.startswith("LOGICAL"):
        return _data(rng, a_shape, DataType.BOOL), _data(rng, b_shape, DataType.BOOL)
    if name.startswith(("BITWISE", "SHIFT")):
        a = _data(rng, a_shape, DataType.INT32)
        b = rng.integers(0, 8, tuple(b_shape)).astype(np.int32) if name.startswith("SHIFT") else _data(
            rng, b_shape, DataType.INT32)
        return a, b
    a = _data(rng, a_shape, F32, 2.0, low=0.5 if name == "POWER" else None)
    b = _data(rng, b_shape, F32, 1.0, low=0.5 if name in ("DIV", "MOD", "FMOD", "POWER") else None)
    if name == "POWER":
        b = np.minimum(b, np.float32(3.0))
    return a, b


def elementwise_binary(rng: np.random.Generator) -> Iterator[Case | None]:
    pairs = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((19,), ())]
    for op in d.BinaryOp:
        if op.name == "INVALID":
            continue
        for a_shape, b_shape in pairs:
            if op.name == "PRELU" and len(b_shape) > len(a_shape):
                continue
            a, b = _binary_inputs(rng, op, a_shape, b_shape)
            name = f"{op.name.lower()}{_shape_text(a_shape)}{_shape_text(b_shape)}"
            yield _case(d.LayerKind.ELEMENTWISE_BINARY, name, d.ElementwiseBinaryDescriptor(op), [a, b])
    a, b = _binary_inputs(rng, d.BinaryOp.ADD, (2, 9), (2, 9))
    yield _case(d.LayerKind.ELEMENTWISE_BINARY, "add+relu[2,9]",
                d.ElementwiseBinaryDescriptor("add", d.ActivationDescriptor("relu")), [a, b])


def elementwise_variadic(rng: np.random.Generator) -> Iterator[Case | None]:
    for op in d.VariadicOp:
        if op.name == "INVALID":
            continue
        for shapes in ([(2, 3)], [(2, 3), (2, 3), (2, 3)], [(4, 1, 3), (5, 1), (3,)]):
            arrays = [_data(rng, s, F32) for s in shapes]
            name = f"{op.name.lower()}" + "".join(_shape_text(s) for s in shapes)
            yield _case(d.LayerKind.ELEMENTWISE_VARIADIC, name, d.ElementwiseVariadicDescriptor(op), arrays)


def convolution_2d(rng: np.random.Generator) -> Iterator[Case | None]:
    geometries = [  # (x NCHW, out channels, kernel, stride, padding, dilation, groups)
        ((1, 3, 8, 8), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
        ((2, 4, 7, 9), 6, (3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 2),
        ((1, 8, 6, 6), 8, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 8),
        ((1, 16, 5, 5), 32, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ((1, 3, 12, 12), 16, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), 1),
    ]
    for i, (x_shape, out, kernel, stride, padding, dilation, groups) in enumerate(geometries):
        x = _data(rng, x_shape, F32)
        w = _data(rng, (out, x_shape[1] // groups, *kernel), F32, 0.5)
        bias = _data(rng, (out,), F32)
        act = d.ActivationDescriptor("relu") if i % 2 == 0 else None
        desc = d.Convolution2dDescriptor(stride, padding, dilation, groups, has_bias=True, fused_activation=act)
        name = f"conv{_shape_text(x_shape)} k{kernel[0]}x{kernel[1]} s{stride[0]} g{groups}{' +relu' if act else ''}"
        yield _case(d.LayerKind.CONVOLUTION_2D, name, desc, [x, w, bias], constants=(1, 2))
    x, w = _data(rng, (1, 3, 6, 6), F32), _data(rng, (4, 3, 3, 3), F32, 0.5)
    yield _case(d.LayerKind.CONVOLUTION_2D, "conv[1,3,6,6] run-time weights, no bias", d.Convolution2dDescriptor(),
                [x, w])
    x_nhwc = _data(rng, (1, 6, 6, 3), F32)
    yield _case(d.LayerKind.CONVOLUTION_2D, "conv NHWC[1,6,6,3]", d.Convolution2dDescriptor(layout="nhwc"),
                [x_nhwc, w], constants=(1,))
    for dtype in _float_types():
        xt, wt = _data(rng, (1, 3, 6, 6), dtype), _data(rng, (4, 3, 3, 3), dtype, 0.5)
        yield _case(d.LayerKind.CONVOLUTION_2D, f"conv[1,3,6,6] {dtype.numpy_name}", d.Convolution2dDescriptor(),
                    [xt, wt], constants=(1,))


def pooling_2d(rng: np.random.Generator) -> Iterator[Case | None]:
    x = _data(rng, (2, 3, 9, 8), F32, 2.0)
    for kind in d.PoolingKind:
        if kind.name == "INVALID":
            continue
        for kernel, stride, padding, rounding, method in [
                ((2, 2), (2, 2), (0, 0, 0, 0), "floor", "exclude"),
                ((3, 3), (2, 2), (1, 1, 1, 1), "ceil", "exclude"),
                ((3, 2), (1, 2), (1, 0, 1, 1), "floor", "include")]:
            desc = d.Pooling2dDescriptor(kind, kernel, stride, padding, rounding=rounding, padding_method=method)
            name = f"{kind.name.lower()} k{kernel[0]}x{kernel[1]} s{stride[0]}x{stride[1]} {rounding} {method}"
            yield _case(d.LayerKind.POOLING_2D, name, desc, [x], rtol_scale=3.0 if kind.name == "LP" else 1.0)
    for dtype in _float_types():
        yield _case(d.LayerKind.POOLING_2D, f"max k2x2 {dtype.numpy_name}",
                    d.Pooling2dDescriptor("max", (2, 2), (2, 2)), [_data(rng, (1, 2, 4, 4), dtype)])


def fully_connected(rng: np.random.Generator) -> Iterator[Case | None]:
    for m, k, n, ta, tb, bias, alpha, beta, act in [
            (1, 16, 10, False, False, True, 1.0, 1.0, None),
            (4, 7, 5, False, True, True, 0.5, 2.0, "relu"),
            (3, 9, 33, True, False, False, 1.0, 1.0, None),
            (5, 64, 48, False, True, True, 1.0, 1.0, "relu")]:
        a = _data(rng, (k, m) if ta else (m, k), F32)
        b = _data(rng, (n, k) if tb else (k, n), F32, 0.5)
        arrays = [a, b] + ([_data(rng, (n,), F32)] if bias else [])
        desc = d.FullyConnectedDescriptor(ta, tb, alpha, beta, has_bias=bias,
                                          fused_activation=d.ActivationDescriptor(act) if act else None)
        name = f"fc m{m} k{k} n{n}{' tA' if ta else ''}{' tB' if tb else ''}{' bias' if bias else ''}" + (
            f" +{act}" if act else "")
        yield _case(d.LayerKind.FULLY_CONNECTED, name, desc, arrays, constants=tuple(range(1, len(arrays))))
    for dtype in _float_types():
        yield _case(d.LayerKind.FULLY_CONNECTED, f"fc m2 k5 n3 {dtype.numpy_name}", d.FullyConnectedDescriptor(),
                    [_data(rng, (2, 5), dtype), _data(rng, (5, 3), dtype)], constants=(1,))


def matmul(rng: np.random.Generator) -> Iterator[Case | None]:
    for a_shape, b_shape in [((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((2, 1, 3, 4), (5, 4, 2)), ((7,), (7, 3)),
                             ((6,), (6,))]:
        yield _case(d.LayerKind.MATMUL, f"matmul{_shape_text(a_shape)}{_shape_text(b_shape)}", None,
                    [_data(rng, a_shape, F32), _data(rng, b_shape, F32)])


def softmax(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape, axis in [((2, 10), -1), ((3, 4, 5), 1), ((2, 3, 4), 0), ((1, 1000), -1)]:
        yield _case(d.LayerKind.SOFTMAX, f"softmax{_shape_text(shape)} axis {axis}", d.SoftmaxDescriptor(axis),
                    [_data(rng, shape, F32, 4.0)])
    for dtype in _float_types():
        yield _case(d.LayerKind.SOFTMAX, f"softmax[2,7] {dtype.numpy_name}", d.SoftmaxDescriptor(),
                    [_data(rng, (2, 7), dtype, 2.0)])


def batch_normalization(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape, layout in [((2, 3, 4, 5), "nchw"), ((1, 4, 3, 3), "nhwc"), ((4, 6), "nchw")]:
        c = shape[-1] if layout == "nhwc" else shape[1]
        arrays = [_data(rng, shape, F32), _data(rng, (c,), F32), _data(rng, (c,), F32), _data(rng, (c,), F32),
                  _data(rng, (c,), F32, 1.0, low=0.1)]
        yield _case(d.LayerKind.BATCH_NORMALIZATION, f"batchnorm{_shape_text(shape)} {layout}",
                    d.BatchNormalizationDescriptor(1e-3, layout), arrays, constants=(1, 2, 3, 4))


def lrn(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape, size in [((1, 7, 4, 4), 3), ((2, 4, 3, 5), 5)]:
        yield _case(d.LayerKind.LOCAL_RESPONSE_NORMALIZATION, f"lrn{_shape_text(shape)} size {size}",
                    d.LrnDescriptor(size, 1e-2, 0.75, 1.0), [_data(rng, shape, F32, 2.0)])


ANY_TYPES = (DataType.INT8, DataType.UINT8, DataType.INT32, DataType.INT64, DataType.BOOL, DataType.FLOAT16)


def concat(rng: np.random.Generator) -> Iterator[Case | None]:
    layouts: list[tuple[list[tuple[int, ...]], int]] = [
        ([(2, 3), (2, 4)], 1), ([(1, 2, 3), (2, 2, 3), (3, 2, 3)], 0), ([(2, 3, 1)] * 2, -1)]
    for shapes, axis in layouts:
        arrays = [_data(rng, s, F32) for s in shapes]
        yield _case(d.LayerKind.CONCAT, "concat" + "".join(_shape_text(s) for s in shapes) + f" axis {axis}",
                    d.ConcatDescriptor(axis), arrays)
    for dtype in ANY_TYPES:
        arrays = [_data(rng, (2, 2), dtype), _data(rng, (2, 3), dtype)]
        yield _case(d.LayerKind.CONCAT, f"concat[2,2][2,3] {dtype.numpy_name}", d.ConcatDescriptor(1), arrays)


def reshape(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape, new in [((2, 3, 4), (6, 4)), ((24,), (2, 2, 6)), ((1, 5), (5,))]:
        x = _data(rng, shape, F32)
        yield _case(d.LayerKind.RESHAPE, f"reshape{_shape_text(shape)}->{_shape_text(new)}", None, [x],
                    outputs=[TensorInfo(new, F32)])
    for dtype in ANY_TYPES:
        yield _case(d.LayerKind.RESHAPE, f"reshape[2,3]->[3,2] {dtype.numpy_name}", None, [_data(rng, (2, 3), dtype)],
                    outputs=[TensorInfo((3, 2), dtype)])


def transpose(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape, perm in [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((1, 2, 3, 4), (0, 2, 3, 1)), ((5,), (0,))]:
        yield _case(d.LayerKind.TRANSPOSE, f"transpose{_shape_text(shape)} perm {_shape_text(perm)}",
                    d.TransposeDescriptor(perm), [_data(rng, shape, F32)])
    for dtype in ANY_TYPES:
        yield _case(d.LayerKind.TRANSPOSE, f"transpose[2,3] {dtype.numpy_name}", d.TransposeDescriptor((1, 0)),
                    [_data(rng, (2, 3), dtype)])


def copy(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape in [(2, 3, 4), (), (0, 2)]:
        yield _case(d.LayerKind.COPY, f"copy{_shape_text(shape)}", None, [_data(rng, shape, F32)])
    for dtype in ANY_TYPES:
        yield _case(d.LayerKind.COPY, f"copy[3,2] {dtype.numpy_name}", None, [_data(rng, (3, 2), dtype)])


RECURRENT_ACTIVATIONS = {
    d.RecurrentCell.RNN: ("tanh",),
    d.RecurrentCell.GRU: ("sigmoid", "tanh"),
    d.RecurrentCell.LSTM: ("sigmoid", "tanh", "tanh"),
}
RECURRENT_GATES = {d.RecurrentCell.RNN: 1, d.RecurrentCell.GRU: 3, d.RecurrentCell.LSTM: 4}


def recurrent(rng: np.random.Generator) -> Iterator[Case | None]:
    seq, batch, size, hidden = 4, 2, 3, 5
    for cell in d.RecurrentCell:
        if cell.name == "INVALID":
            continue
        for direction, optional, extra in [
                ("forward", (), {}),
                ("bidirectional", ("b", "initial_h", "initial_c"), {}),
                ("reverse", ("b", "sequence_lens", "p"), {"batch_major": True})]:
            dirs = 2 if direction == "bidirectional" else 1
            lstm = cell is d.RecurrentCell.LSTM
            present = [o for o in optional if lstm or o not in ("initial_c", "p")]
            acts = tuple(d.ActivationDescriptor(a) for a in RECURRENT_ACTIVATIONS[cell]) * dirs
            desc = d.RecurrentDescriptor(cell, hidden, direction, acts, has_bias="b" in present,
                                         has_sequence_lens="sequence_lens" in present,
                                         has_initial_h="initial_h" in present, has_initial_c="initial_c" in present,
                                         has_peepholes="p" in present, **extra)  # type: ignore[arg-type]
            gates = RECURRENT_GATES[cell]
            major = bool(extra.get("batch_major"))
            state = (batch, dirs, hidden) if major else (dirs, batch, hidden)
            arrays = [_data(rng, (batch, seq, size) if major else (seq, batch, size), F32, 1.5),
                      _data(rng, (dirs, gates * hidden, size), F32, 0.6),
                      _data(rng, (dirs, gates * hidden, hidden), F32, 0.6)]
            dtypes = [F32, F32, F32]
            for name in ("b", "sequence_lens", "initial_h", "initial_c", "p"):
                if name not in present:
                    continue
                if name == "sequence_lens":
                    arrays.append(rng.integers(0, seq + 1, (batch,)).astype(np.int32))
                    dtypes.append(DataType.INT32)
                else:
                    shape = {"b": (dirs, 2 * gates * hidden), "p": (dirs, 3 * hidden)}.get(name, state)
                    arrays.append(_data(rng, shape, F32, 0.6))
                    dtypes.append(F32)
            label = f"{cell.name.lower()} {direction}" + (f" +{','.join(present)}" if present else "") + (
                " batch-major" if major else "")
            yield _case(d.LayerKind.RECURRENT, label, desc, arrays, dtypes=dtypes)


_INT_RANGES = {DataType.INT8: (-128, 127), DataType.UINT8: (0, 255), DataType.INT16: (-32768, 32767),
               DataType.UINT16: (0, 65535), DataType.INT32: (-70000, 70000)}


def _full_range(rng: np.random.Generator, shape: Sequence[int], dtype: DataType) -> np.ndarray:
    """Integers over the whole range of an 8- or 16-bit type (int32: +-70000)."""
    low, high = _INT_RANGES[dtype]
    return rng.integers(low, high + 1, tuple(shape)).astype(dtype.numpy_dtype)


def _positive(rng: np.random.Generator, shape: Sequence[int], dtype: DataType) -> np.ndarray:
    return rng.uniform(0.01, 2.0, tuple(shape)).astype(np.float32).astype(dtype.numpy_dtype)


def _scale_shape(x_shape: Sequence[int], axis: int, block_size: int) -> tuple[int, ...]:
    if block_size == 0:
        return (x_shape[axis],)
    dims = list(x_shape)
    dims[axis] = -(-dims[axis] // block_size)
    return tuple(dims)


def quantization(rng: np.random.Generator) -> Iterator[Case | None]:
    q = d.LayerKind.QUANTIZATION
    for x_type, out, precision in [(F32, DataType.UINT8, F32), (F32, DataType.INT8, F32),
                                   (DataType.FLOAT16, DataType.INT16, DataType.FLOAT16),
                                   (DataType.FLOAT64, DataType.UINT16, DataType.FLOAT64),
                                   (DataType.INT32, DataType.INT8, DataType.FLOAT64)]:
        x = _full_range(rng, (3, 5, 4), x_type) if x_type is DataType.INT32 else _data(rng, (3, 5, 4), x_type, 60.0)
        scale_type = F32 if x_type is DataType.INT32 else x_type
        for label, axis, block in [("per tensor", 0, 0), ("per axis 1", 1, 0), ("blocked 3 along -1", -1, 3)]:
            shape = () if label == "per tensor" else _scale_shape(x.shape, axis, block)
            arrays = [x, _positive(rng, shape, scale_type), _full_range(rng, shape, out) // 2]
            desc = d.QuantizationDescriptor("quantize_linear", axis, block, precision)
            yield _case(q, f"quantize {x_type.numpy_name}->{out.numpy_name} {label}", desc, arrays,
                        outputs=[TensorInfo(x.shape, out)])
    for x_type, out in [(DataType.UINT8, F32), (DataType.INT8, DataType.FLOAT16), (DataType.INT16, F32),
                        (DataType.UINT16, DataType.FLOAT64), (DataType.INT32, F32)]:
        x = _full_range(rng, (2, 6, 3), x_type)
        precision = DataType.FLOAT64 if DataType.FLOAT64 in (out,) or x_type is DataType.INT32 else F32
        for label, axis, block in [("per tensor", 0, 0), ("per axis 1", 1, 0), ("blocked 4 along 1", 1, 4)]:
            shape = () if label == "per tensor" else _scale_shape(x.shape, axis, block)
            arrays = [x, _positive(rng, shape, F32), _full_range(rng, shape, x_type)]
            desc = d.QuantizationDescriptor("dequantize_linear", axis, block, precision)
            yield _case(q, f"dequantize {x_type.numpy_name}->{out.numpy_name} {label}", desc, arrays,
                        outputs=[TensorInfo(x.shape, out)])
    for shape in [(4, 7), (), (0, 3)]:
        x = _data(rng, shape, F32, 3.0)
        yield _case(q, f"dynamic quantize{_shape_text(shape)}", d.QuantizationDescriptor("dynamic_quantize_linear"),
                    [x], outputs=[TensorInfo(shape, DataType.UINT8), TensorInfo((), F32),
                                  TensorInfo((), DataType.UINT8)])


def quantized_convolution(rng: np.random.Generator) -> Iterator[Case | None]:
    u8, i8 = DataType.UINT8, DataType.INT8
    geometries = [  # (x, w, strides, pads, dilations, groups)
        ((1, 3, 9), (4, 3, 3), (2,), (1,), (1,), 1),
        ((2, 4, 7, 6), (6, 2, 3, 3), (1, 2), (1, 0), (1, 2), 2),
        ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (1, 1, 2), (0, 1, 1), (1, 1, 1), 1),
    ]
    for x_shape, w_shape, strides, pads, dilations, groups in geometries:
        x, w = _full_range(rng, x_shape, u8), _full_range(rng, w_shape, i8)
        name = f"{len(strides)}-D x{_shape_text(x_shape)} w{_shape_text(w_shape)} g{groups}"
        desc = d.QuantizedConvolutionDescriptor("integer", strides, pads, pads, dilations, groups)
        yield _case(d.LayerKind.QUANTIZED_CONVOLUTION, f"integer {name}", desc,
                    [x, _full_range(rng, (), u8), w, _full_range(rng, (w_shape[0],), i8)], constants=(2, 3))
        for scale_type in (F32, DataType.FLOAT16):
            qdesc = d.QuantizedConvolutionDescriptor("qlinear", strides, pads, pads, dilations, groups, True)
            arrays = [x, np.asarray(0.004, scale_type.numpy_dtype), _full_range(rng, (), u8), w,
                      _positive(rng, (w_shape[0],), scale_type) / 100, _full_range(rng, (w_shape[0],), i8),
                      np.asarray(0.05, scale_type.numpy_dtype), _full_range(rng, (), u8),
                      rng.integers(-5000, 5000, (w_shape[0],)).astype(np.int32)]
            yield _case(d.LayerKind.QUANTIZED_CONVOLUTION, f"qlinear {name} {scale_type.numpy_name} scales", qdesc,
                        arrays, constants=(3, 4, 5, 8))


def quantized_matmul(rng: np.random.Generator) -> Iterator[Case | None]:
    u8, i8 = DataType.UINT8, DataType.INT8
    for a_shape, b_shape, a_param, b_param in [((3, 4), (4, 5), (3, 1), (5,)), ((2, 3, 4), (4, 6), (), (6,)),
                                               ((2, 1, 3, 4), (5, 4, 2), (3, 1), (5, 1, 2)), ((7,), (7, 3), (), (3,))]:
        a, b = _full_range(rng, a_shape, u8), _full_range(rng, b_shape, i8)
        name = f"a{_shape_text(a_shape)} b{_shape_text(b_shape)}"
        yield _case(d.LayerKind.QUANTIZED_MATMUL, f"integer {name}", d.QuantizedMatMulDescriptor("integer"),
                    [a, _full_range(rng, a_param, u8), b, _full_range(rng, b_param, i8)])
        for scale_type in (F32, DataType.FLOAT16):
            arrays = [a, _positive(rng, a_param, scale_type) / 100, _full_range(rng, a_param, u8), b,
                      _positive(rng, b_param, scale_type) / 100, _full_range(rng, b_param, i8),
                      np.asarray(0.0107, scale_type.numpy_dtype), _full_range(rng, (), i8)]
            yield _case(d.LayerKind.QUANTIZED_MATMUL, f"qlinear {name} {scale_type.numpy_name} scales",
                        d.QuantizedMatMulDescriptor("qlinear"), arrays, constants=(3, 4, 5))


def grid_sample(rng: np.random.Generator) -> Iterator[Case | None]:
    for mode in ("nearest", "linear", "cubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                x = _data(rng, (2, 3, 5, 6), F32)
                grid = rng.uniform(-1.3, 1.3, (2, 4, 3, 2)).astype(np.float32)
                desc = d.GridSampleDescriptor(mode, padding, align)
                yield _case(d.LayerKind.GRID_SAMPLE, f"{mode} {padding}{' align_corners' if align else ''}", desc,
                            [x, grid])
    volume = rng.uniform(-1.1, 1.1, (1, 2, 3, 4, 3)).astype(np.float32)
    yield _case(d.LayerKind.GRID_SAMPLE, "linear 3-D", d.GridSampleDescriptor("linear"),
                [_data(rng, (1, 2, 4, 5, 3), F32), volume])
    for dtype in (*_float_types(), DataType.INT32, DataType.UINT8):
        yield _case(d.LayerKind.GRID_SAMPLE, f"linear {dtype.numpy_name}", d.GridSampleDescriptor("linear"),
                    [_data(rng, (1, 2, 4, 4), dtype), rng.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)],
                    dtypes=[dtype, F32])


def roi_align(rng: np.random.Generator) -> Iterator[Case | None]:
    x = _data(rng, (2, 3, 8, 9), F32)
    corners = rng.uniform(0, 7, (4, 2, 2))
    rois = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1).astype(np.float32)
    batch = np.array([0, 1, 1, 0], np.int64)
    for mode in ("average", "max"):
        for half_pixel in (True, False):
            for ratio in (0, 2):
                desc = d.RoiAlignDescriptor(mode, 3, 2, ratio, 1.0, half_pixel)
                yield _case(d.LayerKind.ROI_ALIGN, f"{mode} ratio {ratio}{' half_pixel' if half_pixel else ''}", desc,
                            [x, rois, batch])
    for dtype in _float_types():
        yield _case(d.LayerKind.ROI_ALIGN, f"average {dtype.numpy_name}", d.RoiAlignDescriptor("average", 2, 2),
                    [x.astype(dtype.numpy_dtype), rois.astype(dtype.numpy_dtype), batch],
                    dtypes=[dtype, dtype, DataType.INT64])


def deformable_convolution(rng: np.random.Generator) -> Iterator[Case | None]:
    for rank, groups, offset_groups, bias, mask in [(2, 1, 1, False, False), (2, 2, 2, True, True),
                                                    (1, 1, 1, True, False), (3, 1, 1, False, True)]:
        spatial = (6, 5, 4)[:rank]
        kernel = (3, 2, 2)[:rank]
        desc = d.DeformableConvolutionDescriptor((1,) * rank, (1,) * rank, (0,) * rank, (1,) * rank, groups,
                                                 offset_groups)
        x = _data(rng, (2, 4, *spatial), F32)
        w = _data(rng, (6, 4 // groups, *kernel), F32, 0.5)
        out = [s + 1 - k + 1 for s, k in zip(spatial, kernel)]
        taps = int(np.prod(kernel))
        offset = _data(rng, (2, offset_groups * taps * rank, *out), F32, 0.8)
        arrays = [x, w, offset]
        if bias:
            arrays.append(_data(rng, (6,), F32))
        if mask:
            arrays.append(rng.uniform(0, 1, (2, offset_groups * taps, *out)).astype(np.float32))
        desc = d.DeformableConvolutionDescriptor(desc.strides, desc.pads_begin, desc.pads_end, desc.dilations,
                                                 groups, offset_groups, bias, mask)
        yield _case(d.LayerKind.DEFORMABLE_CONVOLUTION, f"{rank}-D groups {groups}/{offset_groups}"
                    f"{' +bias' if bias else ''}{' +mask' if mask else ''}", desc, arrays)


def spectral(rng: np.random.Generator) -> Iterator[Case | None]:
    for inverse, onesided in [(False, False), (False, True), (True, False), (True, True)]:
        for length in (8, 5):
            channels = 2 if inverse or not onesided else 1
            n_in = length // 2 + 1 if inverse and onesided else length
            desc = d.SpectralDescriptor("dft", length, 1, inverse, onesided)
            yield _case(d.LayerKind.SPECTRAL, f"dft n={length}{' inverse' if inverse else ''}"
                        f"{' onesided' if onesided else ''}", desc, [_data(rng, (2, n_in, 3, channels), F32)])
    yield _case(d.LayerKind.SPECTRAL, "dft padded", d.SpectralDescriptor("dft", 12, -2), [_data(rng, (3, 7, 2), F32)])
    for onesided in (True, False):
        desc = d.SpectralDescriptor("stft", 8, 0, False, onesided, 3, True)
        yield _case(d.LayerKind.SPECTRAL, f"stft{' onesided' if onesided else ''}", desc,
                    [_data(rng, (2, 20, 1), F32), _data(rng, (8,), F32)])
    for dtype in _float_types():
        yield _case(d.LayerKind.SPECTRAL, f"dft {dtype.numpy_name}", d.SpectralDescriptor("dft", 6, 1),
                    [_data(rng, (2, 6, 2), dtype)])


def linear_algebra(rng: np.random.Generator) -> Iterator[Case | None]:
    for shape in [(3, 3), (2, 4, 4), (5, 1, 1), (2, 0, 0)]:
        yield _case(d.LayerKind.LINEAR_ALGEBRA, f"determinant{_shape_text(shape)}", d.LinearAlgebraDescriptor(),
                    [_data(rng, shape, F32)])
    for dtype in _float_types():
        yield _case(d.LayerKind.LINEAR_ALGEBRA, f"determinant {dtype.numpy_name}", d.LinearAlgebraDescriptor(),
                    [_data(rng, (2, 3, 3), dtype, 0.5)])


def bitcast(rng: np.random.Generator) -> Iterator[Case | None]:
    pairs = [(F32, DataType.INT32), (DataType.INT64, DataType.FLOAT64), (DataType.UINT16, DataType.FLOAT16),
             (DataType.INT8, DataType.UINT8), (DataType.BOOL, DataType.UINT8), (DataType.UINT32, F32)]
    for source, target in pairs:
        x = _data(rng, (3, 5), source)
        yield _case(d.LayerKind.BITCAST, f"{source.numpy_name} to {target.numpy_name}", None, [x],
                    outputs=[TensorInfo((3, 5), target)])


def random(rng: np.random.Generator) -> Iterator[Case | None]:
    logits = _data(rng, (3, 5), F32)
    for dtype in (DataType.INT32, DataType.INT64):  # first: its malformed twin has a wrong row count
        yield _case(d.LayerKind.RANDOM, f"multinomial {dtype.numpy_name}", d.RandomDescriptor("multinomial", 7, 0, 0),
                    [logits], outputs=[TensorInfo((3, 9), dtype)])
    for op, a, b in (("uniform", -2.0, 3.0), ("normal", 1.0, 0.5)):
        for dtype in (F32, *_float_types()):
            yield _case(d.LayerKind.RANDOM, f"{op} {dtype.numpy_name}", d.RandomDescriptor(op, 42, a, b), [],
                        outputs=[TensorInfo((4, 7), dtype)])


def data_dependent(rng: np.random.Generator) -> Iterator[Case | None]:
    """NonZero, Unique (sorted or not, flat or along an axis), NonMaxSuppression (corners or
    centers, with and without thresholds) and Compress: few distinct values, so there are zeros,
    repeats and ties."""
    kind = d.LayerKind.DATA_DEPENDENT
    op = d.DataDependentOp

    def few(shape: Sequence[int], dtype: DataType) -> np.ndarray:
        raw = rng.integers(0, 3, tuple(shape))
        return raw.astype(bool) if dtype is DataType.BOOL else raw.astype(dtype.numpy_dtype)

    for dtype in (F32, DataType.INT64, DataType.UINT8, DataType.BOOL, *_float_types()):
        for shape in [(3, 4), (7,), (0, 2)]:
            yield _case(kind, f"non_zero{_shape_text(shape)} {dtype.numpy_name}",
                        d.DataDependentDescriptor(op.NON_ZERO), [few(shape, dtype)])
        condition = rng.random(4) < 0.5
        yield _case(kind, f"compress[3,4] axis 1 {dtype.numpy_name}", d.DataDependentDescriptor(op.COMPRESS, True, 1),
                    [few((3, 4), dtype), condition])
        yield _case(kind, f"compress[3,4] flat {dtype.numpy_name}", d.DataDependentDescriptor(op.COMPRESS),
                    [few((3, 4), dtype), rng.random(7) < 0.5])
    for dtype in (F32, DataType.INT32, DataType.UINT16):
        for sorted_ in (True, False):
            for shape, axis in [((9,), None), ((4, 3), 0), ((2, 5, 2), 1)]:
                desc = d.DataDependentDescriptor(op.UNIQUE, axis is not None, axis or 0, sorted_)
                yield _case(kind, f"unique{_shape_text(shape)} axis {axis} {'sorted' if sorted_ else 'unsorted'} "
                                  f"{dtype.numpy_name}", desc, [few(shape, dtype)])
    for center in (False, True):
        boxes = (rng.random((2, 6, 4)) * 4).astype(np.float32)
        scores = np.round(rng.random((2, 3, 6)), 1).astype(np.float32)
        limits = [np.array([3], np.int64), np.array([0.4], np.float32), np.array([0.2], np.float32)]
        for count in (0, 1, 2, 3):
            yield _case(kind, f"non_max_suppression [2,6,4] {count + 2} inputs{' center' if center else ''}",
                        d.DataDependentDescriptor(op.NON_MAX_SUPPRESSION, center_point_box=center),
                        [boxes, scores, *limits[:count]])


GENERATORS: dict[d.LayerKind, Generator] = {
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
    d.LayerKind.RESHAPE: reshape,
    d.LayerKind.TRANSPOSE: transpose,
    d.LayerKind.COPY: copy,
    d.LayerKind.RECURRENT: recurrent,
    d.LayerKind.QUANTIZATION: quantization,
    d.LayerKind.QUANTIZED_CONVOLUTION: quantized_convolution,
    d.LayerKind.QUANTIZED_MATMUL: quantized_matmul,
    d.LayerKind.GRID_SAMPLE: grid_sample,
    d.LayerKind.ROI_ALIGN: roi_align,
    d.LayerKind.DEFORMABLE_CONVOLUTION: deformable_convolution,
    d.LayerKind.SPECTRAL: spectral,
    d.LayerKind.LINEAR_ALGEBRA: linear_algebra,
    d.LayerKind.BITCAST: bitcast,
    d.LayerKind.RANDOM: random,
    d.LayerKind.DATA_DEPENDENT: data_dependent,
}

# Kinds whose first output's last axis may have any length (RANDOM's sample count): their
# malformed case lengthens the first axis.
FREE_LAST_AXIS = {d.LayerKind.RANDOM}

# Kinds no backend is handed as such (a backend's own optimize_subgraph makes PRECOMPILED layers).
NOT_SWEPT = {d.LayerKind.PRECOMPILED}


def kind_name(kind: d.LayerKind) -> str:
    """The display name of a kind, as plugin_common's kind table spells it (Convolution2d)."""
    special = {"LOCAL_RESPONSE_NORMALIZATION": "LocalResponseNormalization", "MATMUL": "MatMul",
               "QUANTIZED_MATMUL": "QuantizedMatMul"}
    return special.get(kind.name) or "".join(part.capitalize() for part in kind.name.split("_")).replace(
        "Convolution2D", "Convolution2d").replace("Pooling2D", "Pooling2d")


def parse_kinds(names: Sequence[str]) -> list[d.LayerKind]:
    """Layer kinds named like "Convolution2d", "CONVOLUTION_2D" or "convolution_2d"."""
    known = {kind_name(k).lower(): k for k in GENERATORS} | {k.name.lower(): k for k in GENERATORS}
    kinds = []
    for name in names:
        kind = known.get(name.strip().lower())
        if kind is None:
            raise ValueError(f"no layer kind {name!r} in the sweep; kinds: {', '.join(map(kind_name, GENERATORS))}")
        kinds.append(kind)
    return kinds


def cases(kind: d.LayerKind, seed: int = 20) -> list[Case]:
    """The cases of `kind`, the same on every call (a fixed seed per kind)."""
    rng = np.random.default_rng([seed, int(kind)])
    return [case for case in GENERATORS[kind](rng) if case is not None]


def malformed(case: Case) -> Case:
    """`case` with its first output one element longer on its last axis (or rank 1 for a
    scalar): a layer every backend must refuse."""
    out = case.spec.outputs[0]
    shape = out.shape[:-1] + (out.shape[-1] + 1,) if out.shape else (2,)
    if case.spec.kind in FREE_LAST_AXIS:  # any length is right there: the first axis instead
        shape = (out.shape[0] + 1,) + out.shape[1:]
    outputs = (TensorInfo(shape, out.dtype),) + case.spec.outputs[1:]
    spec = LayerSpec(case.spec.kind, case.name + " with a wrong output shape", case.spec.descriptor,
                     case.spec.inputs, outputs, constants=case.spec.constants)
    return Case(spec.name, spec, case.inputs)


# ---- comparing ------------------------------------------------------------------------------------


def tolerance(dtype: DataType) -> tuple[float, float]:
    return TOLERANCE.get(dtype, (0.0, 0.0))


def compare(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    """"" when |actual - expected| <= atol + rtol * |expected| everywhere (NaN matches NaN,
    equal infinities match), else a sentence: how many elements differ, the worst one's
    index and both values."""
    if actual.shape != expected.shape:
        return f"output shape {actual.shape}, CpuRef's {expected.shape}"
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(a - e)
        ok = (error <= atol + rtol * np.abs(e)) | (a == e) | (np.isnan(a) & np.isnan(e))
    if ok.all():
        return ""
    excess = np.where(ok, -np.inf, np.nan_to_num(error - (atol + rtol * np.abs(e)), nan=np.inf, posinf=np.inf))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.ndim else ()
    index = tuple(int(i) for i in worst)
    return (f"{int((~ok).sum())} of {ok.size} elements differ beyond rtol {rtol:g}, atol {atol:g}; worst at "
            f"{index}: {_value(a[worst])} where CpuRef gives {_value(e[worst])}")


def _value(x: Any) -> str:
    value = float(x)
    return repr(value) if math.isfinite(value) else str(value)
