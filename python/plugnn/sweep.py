"""The layer sweep of `plugnn check-backend`: for every layer kind, a generated set of layers
(shapes, element types, descriptor parameters) with their inputs, and the comparison of a
backend's outputs with CpuRef's.

`GENERATORS` maps a layer kind to a function of a NumPy Generator yielding `Case`s; a new
kind joins the sweep with one entry there. Outputs come from `shapes.INFER` (the one home of
the shape rules) and a case is asked of the backend only as it is: CpuRef is the oracle,
compared with the tolerance of plugnn's layer conformance suite (which holds CpuRef itself
to NumPy). Each kind also gets one malformed case (its first layer with an output one
element too long; on the first axis for the kinds of FREE_LAST_AXIS; with one axis too many for
those of FREE_OUTPUT_DIMS), which every backend must refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from plugnn import descriptors as d
from plugnn.layers import LayerSpec
from plugnn.shapes import CHECK, INFER
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
        if outputs is not None and kind in CHECK:
            CHECK[kind](descriptor, infos, outs)
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


# ---- the kinds of ABI 1.1 (backend_api.h "since 1.1") ------------------------------------------------

U8, I8, I16, U16, I32, U32, I64, U64 = (DataType.UINT8, DataType.INT8, DataType.INT16, DataType.UINT16,
                                        DataType.INT32, DataType.UINT32, DataType.INT64, DataType.UINT64)
BOOL, F16, F64 = DataType.BOOL, DataType.FLOAT16, DataType.FLOAT64
INTEGER_TYPES = (I8, U8, I16, U16, I32, U32, I64, U64)
# A shape whose rows are longer than a 16-wide vector and not a multiple of 8: every kind has a
# case of it, so a backend's vector loops and their tails both run.
WIDE = (3, 37)


def _every_type() -> list[DataType]:
    """ANY_TYPES, the integer types they leave out and the float types, each once."""
    types = [*ANY_TYPES, I16, U16, U32, U64, *_float_types()]
    return list(dict.fromkeys(types))


def _away_from_integers(rng: np.random.Generator, shape: Sequence[int], dtype: DataType, low: int = -40,
                        high: int = 40) -> np.ndarray:
    """Integers in [low, high) plus a quarter or three quarters: exact in every float type
    (bfloat16 too for |x| < 64), a quarter away from every integer and every half, so floor,
    ceil, round and truncation have one answer however they are computed."""
    whole = rng.integers(low, high, tuple(shape))
    return (whole + rng.choice([0.25, 0.75], tuple(shape))).astype(dtype.numpy_dtype)


def _distinct(rng: np.random.Generator, shape: Sequence[int], dtype: DataType) -> np.ndarray:
    """Values without repeats (a shuffled range, centred for signed types, eighths for floats):
    no ties for top-k or arg-max; exact in every float type for up to 256 elements."""
    n = int(np.prod(shape, dtype=np.int64))
    values = rng.permutation(n).astype(np.float64)
    if dtype.is_float:
        values = (values - n // 2) / 8
    elif not dtype.name.startswith("UINT"):
        values -= min(n // 2, 100)
    return values.reshape(tuple(shape)).astype(dtype.numpy_dtype)


def _special_floats(rng: np.random.Generator, shape: Sequence[int], dtype: DataType) -> np.ndarray:
    """Numbers with NaN, +inf, -inf and signed zeros among them."""
    x = _data(rng, shape, F32, 2.0).astype(np.float64).reshape(-1)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    for i in range(0, x.size, 3):
        x[i] = specials[(i // 3) % len(specials)]
    return x.reshape(tuple(shape)).astype(dtype.numpy_dtype)


def _unary_input(rng: np.random.Generator, op: d.UnaryOp, shape: Sequence[int], dtype: DataType) -> np.ndarray:
    """Inputs inside each function's domain and away from its ill-conditioned points."""
    name = op.name
    if name == "LOGICAL_NOT":
        return _data(rng, shape, BOOL)
    if not dtype.is_float:
        return _data(rng, shape, dtype)
    uniform = {"ASIN": (-0.95, 0.95), "ACOS": (-0.95, 0.95), "ATANH": (-0.9, 0.9), "ACOSH": (1.1, 5.0),
               "TAN": (-1.2, 1.2), "EXP": (-4.0, 4.0), "SINH": (-4.0, 4.0), "COSH": (-4.0, 4.0)}
    if name in uniform:
        return rng.uniform(*uniform[name], tuple(shape)).astype(dtype.numpy_dtype)
    if name in ("SQRT", "RSQRT", "LOG"):
        return _data(rng, shape, dtype, 2.0, low=0.1)
    if name == "RECIPROCAL":
        return (_data(rng, shape, F32, 1.0, low=0.2) * rng.choice([-1, 1], tuple(shape))).astype(dtype.numpy_dtype)
    if name in ("FLOOR", "CEIL", "ROUND"):
        return _away_from_integers(rng, shape, dtype)
    if name.startswith("IS_"):
        return _special_floats(rng, shape, dtype)
    return _data(rng, shape, dtype, 2.0)


_UNARY_INTEGER_TYPES = {"ABS": (I8, U8, I32, I64), "NEG": (I8, I16, I32, I64), "SIGN": (I8, U16, I32, I64),
                        "BITWISE_NOT": (I8, U8, I16, U16, I32, U32, I64, U64)}


def elementwise_unary(rng: np.random.Generator) -> Iterator[Case | None]:
    """Every op over float32 shapes (scalar and empty too), its integer types, and the float
    types; the exact halves of ROUND (ties to even) on their own."""
    kind = d.LayerKind.ELEMENTWISE_UNARY
    for op in d.UnaryOp:
        if op.name == "INVALID":
            continue
        first = BOOL if op.name == "LOGICAL_NOT" else I32 if op.name == "BITWISE_NOT" else F32
        for shape in [(2, 3, 4), WIDE, (), (0, 3)]:
            yield _case(kind, f"{op.name.lower()}{_shape_text(shape)} {first.numpy_name}",
                        d.ElementwiseUnaryDescriptor(op), [_unary_input(rng, op, shape, first)])
        for dtype in _UNARY_INTEGER_TYPES.get(op.name, ()):
            if dtype is not first:
                yield _case(kind, f"{op.name.lower()}[3,5] {dtype.numpy_name}", d.ElementwiseUnaryDescriptor(op),
                            [_unary_input(rng, op, (3, 5), dtype)])
        if first is F32:
            for dtype in _float_types():
                yield _case(kind, f"{op.name.lower()}[3,5] {dtype.numpy_name}", d.ElementwiseUnaryDescriptor(op),
                            [_unary_input(rng, op, (3, 5), dtype)])
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.5], np.float32)
    yield _case(kind, "round of exact halves (to even)", d.ElementwiseUnaryDescriptor("round"), [halves])


def select(rng: np.random.Generator) -> Iterator[Case | None]:
    for shapes in [((2, 3, 4),) * 3, ((3, 1), (1, 4), (3, 4)), ((4,), (2, 3, 4), ()), ((), (2, 2), (2, 1)),
                   ((0, 3), (0, 3), (3,)), (WIDE, WIDE, WIDE[-1:])]:
        arrays = [_data(rng, shapes[0], BOOL), _data(rng, shapes[1], F32), _data(rng, shapes[2], F32)]
        yield _case(d.LayerKind.SELECT, "select" + "".join(_shape_text(s) for s in shapes), None, arrays)
    for dtype in _every_type():
        arrays = [_data(rng, (2, 5), BOOL), _data(rng, (2, 5), dtype), _data(rng, (5,), dtype)]
        yield _case(d.LayerKind.SELECT, f"select[2,5][2,5][5] {dtype.numpy_name}", None, arrays)


_REDUCE_AXES = [((2, 3, 4), (1,), True), ((2, 3, 4), (0, 2), False), ((3, 5), (0, 1), True),
                ((3, 5), (0, 1), False), ((2, 3, 4), (), True), ((2, 0, 3), (1,), True), (WIDE, (1,), False),
                ((37, 6), (0,), True)]


def _reduce_input(rng: np.random.Generator, op: d.ReduceOp, shape: Sequence[int], dtype: DataType) -> np.ndarray:
    if op.name.startswith("ARG"):
        return _distinct(rng, shape, dtype)
    if op.name == "LOG_SUM":
        return _data(rng, shape, dtype, 1.0, low=0.2)
    if op.name == "PROD" and dtype.is_float:
        return (rng.uniform(0.5, 1.5, tuple(shape)) * rng.choice([-1, 1], tuple(shape))).astype(dtype.numpy_dtype)
    return _data(rng, shape, dtype, 2.0)


def reduce(rng: np.random.Generator) -> Iterator[Case | None]:
    """Every op over one axis, several, all (keep_dims or not), none and an empty one; arg-max
    and arg-min along each axis, first and last index, on distinct values; integer and bool
    types, the float types."""
    kind = d.LayerKind.REDUCE
    for op in d.ReduceOp:
        if op.name == "INVALID":
            continue
        if op.name.startswith("ARG"):
            for shape, axis, last, keep in [((3, 5), 1, False, True), ((3, 5), 0, True, False),
                                            ((2, 3, 4), 2, False, False), ((2, 3, 4), 1, True, True),
                                            ((7,), 0, False, True), (WIDE, 1, False, False), ((37, 3), 0, True, True)]:
                desc = d.ReduceDescriptor(op, (axis,), keep, last)
                yield _case(kind, f"{op.name.lower()}{_shape_text(shape)} axis {axis}{' last' if last else ''}"
                                  f"{' keep_dims' if keep else ''}", desc, [_reduce_input(rng, op, shape, F32)])
        else:
            for shape, axes, keep in _REDUCE_AXES:
                desc = d.ReduceDescriptor(op, axes, keep)
                yield _case(kind, f"{op.name.lower()}{_shape_text(shape)} axes {_shape_text(axes)}"
                                  f"{' keep_dims' if keep else ''}", desc, [_reduce_input(rng, op, shape, F32)])
        types = [*_float_types()]
        if op.name not in ("LOG_SUM", "LOG_SUM_EXP"):
            types += [I32, I64, U8, I8]
        if op.name in ("MAX", "MIN"):
            types.append(BOOL)
        for dtype in types:
            axes = (1,)
            yield _case(kind, f"{op.name.lower()}[3,4] axes [1] {dtype.numpy_name}", d.ReduceDescriptor(op, axes),
                        [_reduce_input(rng, op, (3, 4), dtype)])


def normalization(rng: np.random.Generator) -> Iterator[Case | None]:
    """LAYER and RMS over the trailing dims from several axes (scale and bias broadcast, bias or
    not), GROUP with 1, some and C groups (instance normalization), LP with p = 1 and 2 along
    each axis (a zero row too); the float types."""
    kind = d.LayerKind.NORMALIZATION
    N = d.NormalizationOp
    for op in (N.LAYER, N.RMS):
        for shape, axis, param_shape, bias in [((2, 3, 8), -1, (8,), True), ((2, 3, 4), 1, (3, 4), False),
                                               ((2, 3, 4), 1, (1, 4), True), ((4, 6), 0, (4, 6), True),
                                               ((5,), 0, (5,), False), ((2, 3, 40), -1, (40,), True)]:
            arrays = [_data(rng, shape, F32, 2.0), _data(rng, param_shape, F32)]
            if bias:
                arrays.append(_data(rng, param_shape, F32))
            desc = d.NormalizationDescriptor(op, axis, 0, 1e-5, bias)
            yield _case(kind, f"{op.name.lower()}{_shape_text(shape)} axis {axis} scale {_shape_text(param_shape)}"
                              f"{' +bias' if bias else ''}", desc, arrays, constants=tuple(range(1, len(arrays))))
    for shape, groups, bias in [((2, 6, 3, 2), 3, True), ((1, 4, 5), 4, True), ((2, 6, 4), 1, False),
                                ((2, 4, 2, 2, 2), 2, True), ((3, 2), 2, True), ((1, 8, 4, 37), 4, True)]:
        c = shape[1]
        arrays = [_data(rng, shape, F32, 2.0), _data(rng, (c,), F32)] + ([_data(rng, (c,), F32)] if bias else [])
        label = "instance" if groups == c else f"{groups} groups"
        yield _case(kind, f"group{_shape_text(shape)} {label}{' +bias' if bias else ''}",
                    d.NormalizationDescriptor(N.GROUP, 0, groups, 1e-5, bias), arrays)
    for p in (1, 2):
        for shape, axis in [((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1)]:
            x = _data(rng, shape, F32, 2.0)
            x[(0,) * (len(shape) - 1)] = 0  # a zero row along the last axis
            yield _case(kind, f"lp p={p}{_shape_text(shape)} axis {axis}", d.NormalizationDescriptor(N.LP, axis, p),
                        [x])
    for dtype in _float_types():
        for op, params, groups in [(N.LAYER, (6,), 0), (N.RMS, (6,), 0), (N.GROUP, (4,), 2), (N.LP, (), 2)]:
            shape = (2, 4, 6)
            arrays = [_data(rng, shape, dtype, 2.0)]
            if params:
                arrays += [_data(rng, params, dtype), _data(rng, params, dtype)]
            desc = d.NormalizationDescriptor(op, -1, groups, 1e-5, bool(params))
            yield _case(kind, f"{op.name.lower()}[2,4,6] {dtype.numpy_name}", desc, arrays)


def _indices(rng: np.random.Generator, shape: Sequence[int], size: int, dtype: DataType = I64) -> np.ndarray:
    """Indices into an axis of `size`, half of them negative (counting from the end)."""
    values = rng.integers(0, size, tuple(shape))
    negative = rng.random(tuple(shape)) < 0.5
    return np.where(negative, values - size, values).astype(dtype.numpy_dtype)


def gather(rng: np.random.Generator) -> Iterator[Case | None]:
    """TAKE along each axis (scalar, vector and matrix indices), ELEMENTS along each axis, ND
    with batch_dims 0 and 1 and tuples of 1 and 2; int32 and int64 indices, negative ones,
    given at run time and as constants; every element type."""
    kind = d.LayerKind.GATHER
    G = d.GatherOp
    data = _data(rng, (4, 5, 3), F32)
    for axis, idx_shape in [(0, (2, 3)), (1, (4,)), (-1, ()), (2, (2, 2)), (-3, (0,))]:
        size = data.shape[axis]
        for itype, constant in [(I64, False), (I32, True)]:
            indices = _indices(rng, idx_shape, size, itype)
            yield _case(kind, f"take[4,5,3] axis {axis} indices {_shape_text(idx_shape)} {itype.numpy_name}"
                              f"{' constant' if constant else ''}", d.GatherDescriptor(G.TAKE, axis),
                        [data, indices], constants=(1,) if constant else ())
    for axis, idx_shape in [(0, (3, 5, 3)), (1, (4, 2, 3)), (-1, (2, 5, 6))]:
        a = axis % 3
        indices = _indices(rng, idx_shape, data.shape[a], I64 if a else I32)
        yield _case(kind, f"elements[4,5,3] axis {axis} indices {_shape_text(idx_shape)}",
                    d.GatherDescriptor(G.ELEMENTS, axis), [data, indices])
    for batch, idx_shape in [(0, (3, 1)), (0, (2, 2, 2)), (0, (4, 3)), (1, (4, 2, 1)), (1, (4, 2))]:
        k = idx_shape[-1]
        columns = [_indices(rng, idx_shape[:-1] + (1,), data.shape[batch + j]) for j in range(k)]
        indices = np.concatenate(columns, axis=-1)
        yield _case(kind, f"nd[4,5,3] batch_dims {batch} indices {_shape_text(idx_shape)}",
                    d.GatherDescriptor(G.ND, 0, batch), [data, indices])
    yield _case(kind, f"take{_shape_text(WIDE)} rows", d.GatherDescriptor(G.TAKE, 0),
                [_data(rng, WIDE, F32), _indices(rng, (5,), WIDE[0])])
    for dtype in _every_type():
        yield _case(kind, f"take[3,4] axis 1 {dtype.numpy_name}", d.GatherDescriptor(G.TAKE, 1),
                    [_data(rng, (3, 4), dtype), _indices(rng, (5,), 4)])


def scatter(rng: np.random.Generator) -> Iterator[Case | None]:
    """ELEMENTS along each axis and ND (whole rows and single elements) with every reduction,
    repeated and negative indices; integer, bool (no reduction) and float types."""
    kind = d.LayerKind.SCATTER
    S = d.ScatterOp
    for reduction in d.ScatterReduction:
        if reduction.name == "INVALID":
            continue
        data = _data(rng, (4, 5), F32)
        for axis, idx_shape in [(0, (3, 5)), (1, (4, 2)), (-1, (2, 7))]:
            indices = _indices(rng, idx_shape, 5 if axis % 2 else 4)
            yield _case(kind, f"elements {reduction.name.lower()} axis {axis} indices {_shape_text(idx_shape)}",
                        d.ScatterDescriptor(S.ELEMENTS, reduction, axis),
                        [data, indices, _data(rng, idx_shape, F32)])
        for idx_shape, updates_shape in [((3, 1), (3, 5)), ((4, 2), (4,))]:
            k = idx_shape[-1]
            indices = np.concatenate([_indices(rng, idx_shape[:-1] + (1,), data.shape[j]) for j in range(k)], axis=-1)
            yield _case(kind, f"nd {reduction.name.lower()} indices {_shape_text(idx_shape)}",
                        d.ScatterDescriptor(S.ND, reduction), [data, indices, _data(rng, updates_shape, F32)])
        for dtype in (I32, U8, I64, *_float_types()):
            indices = _indices(rng, (3, 3), 4, I32)
            yield _case(kind, f"elements {reduction.name.lower()} {dtype.numpy_name}",
                        d.ScatterDescriptor(S.ELEMENTS, reduction, 0),
                        [_data(rng, (4, 3), dtype), indices, _data(rng, (3, 3), dtype)])
    yield _case(kind, f"elements add{_shape_text(WIDE)} axis 0", d.ScatterDescriptor(S.ELEMENTS, "add", 0),
                [_data(rng, WIDE, F32), _indices(rng, (5, WIDE[1]), WIDE[0]), _data(rng, (5, WIDE[1]), F32)])
    yield _case(kind, "elements none bool", d.ScatterDescriptor(S.ELEMENTS, "none", 1),
                [_data(rng, (3, 4), BOOL), _indices(rng, (3, 2), 4), _data(rng, (3, 2), BOOL)])


def _slice_case(rng: np.random.Generator, shape: Sequence[int], slices: Sequence[slice],
                dtype: DataType = F32) -> Case | None:
    """A Slice of `shape` by Python slices (one per dim), resolved as network.add_slice does."""
    starts, steps, counts = [], [], []
    for dim, s in zip(shape, slices):
        begin, stop, step = s.indices(dim)
        count = len(range(begin, stop, step))
        starts.append(begin if count else 0)
        steps.append(step)
        counts.append(count)
    text = ",".join(f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}"
                    f"{'' if s.step is None else ':' + str(s.step)}" for s in slices)
    return _case(d.LayerKind.SLICE, f"slice{_shape_text(shape)}[{text}] {dtype.numpy_name}",
                 d.SliceDescriptor(tuple(starts), tuple(steps)), [_data(rng, shape, dtype)],
                 outputs=[TensorInfo(tuple(counts), dtype)])


def slice_(rng: np.random.Generator) -> Iterator[Case | None]:
    """Steps of 1, larger, negative (whole axis reversed, every other one backwards), an empty
    result, rank 1 to 4; every element type. The first case reverses its last axis whole, so one
    more element there leaves the input (its malformed twin)."""
    S = slice
    for shape, slices in [((3, 5), (S(None), S(None, None, -1))),
                          ((4, 6), (S(1, 3), S(0, 6, 2))),
                          ((4, 6), (S(-1, 0, -2), S(-2, None, -3))),
                          ((2, 3, 4), (S(None), S(2, 0, -1), S(1, -1))),
                          ((2, 3, 4, 5), (S(1, None), S(None), S(None, None, 3), S(4, 0, -2))),
                          ((7,), (S(5, 2),)),
                          ((3, 4), (S(None), S(3, 4))), (WIDE, (S(None, None, -1), S(1, None)))]:
        yield _slice_case(rng, shape, slices)
    for dtype in _every_type():
        yield _slice_case(rng, (3, 4), (S(2, None, -1), S(None, None, 2)), dtype)


def split(rng: np.random.Generator) -> Iterator[Case | None]:
    """Even and uneven pieces, an empty piece, one piece, along each axis (negative too)."""
    kind = d.LayerKind.SPLIT
    for shape, axis, sizes in [((4, 6), -1, (2, 3, 1)), ((4, 6), 0, (2, 2)), ((2, 7, 3), 1, (3, 0, 4)),
                               ((5,), 0, (5,)), ((2, 3, 4), -3, (1, 1)), (WIDE, 1, (17, 20))]:
        a = axis % len(shape)
        outputs = [TensorInfo(shape[:a] + (n,) + shape[a + 1:], F32) for n in sizes]
        yield _case(kind, f"split{_shape_text(shape)} axis {axis} sizes {_shape_text(sizes)}",
                    d.SplitDescriptor(axis), [_data(rng, shape, F32)], outputs=outputs)
    for dtype in _every_type():
        yield _case(kind, f"split[3,5] axis 1 {dtype.numpy_name}", d.SplitDescriptor(1), [_data(rng, (3, 5), dtype)],
                    outputs=[TensorInfo((3, 2), dtype), TensorInfo((3, 3), dtype)])


def pad(rng: np.random.Generator) -> Iterator[Case | None]:
    """Every mode with pads on some axes, negative pads (cropping) and, for WRAP, pads longer
    than the axis; CONSTANT with and without the value input; every element type."""
    kind = d.LayerKind.PAD
    for mode in d.PadMode:
        if mode.name == "INVALID":
            continue
        geometries = [((3, 4), (1, 2), (2, 1)), ((2, 3, 5), (0, 1, 2), (1, 0, 3)), ((6,), (-2,), (3,)),
                      ((4, 5), (1, -1), (-2, 2)), (WIDE, (1, 3), (2, 5))]
        if mode is d.PadMode.WRAP:
            geometries.append(((2, 3), (3, 4), (5, 7)))
        for shape, begin, end in geometries:
            desc = d.PadDescriptor(mode, begin, end)
            yield _case(kind, f"{mode.name.lower()}{_shape_text(shape)} pads {_shape_text(begin)}{_shape_text(end)}",
                        desc, [_data(rng, shape, F32)])
    for constant in (False, True):
        yield _case(kind, f"constant[3,4] value input{' constant' if constant else ''}",
                    d.PadDescriptor("constant", (1, 1), (0, 2)),
                    [_data(rng, (3, 4), F32), np.array([2.5], np.float32)], constants=(1,) if constant else ())
    for dtype in _every_type():
        yield _case(kind, f"constant[3,4] value {dtype.numpy_name}", d.PadDescriptor("constant", (1, 0), (2, 1)),
                    [_data(rng, (3, 4), dtype), _data(rng, (), dtype)])
        yield _case(kind, f"reflect[3,4] {dtype.numpy_name}", d.PadDescriptor("reflect", (2, 1), (1, 3)),
                    [_data(rng, (3, 4), dtype)])


def expand(rng: np.random.Generator) -> Iterator[Case | None]:
    """New leading dims, dims of 1 stretched, a scalar, an empty output; every element type."""
    kind = d.LayerKind.EXPAND
    for shape, out in [((3, 4), (2, 3, 4)), ((3, 1), (3, 5)), ((1, 4, 1), (2, 3, 4, 6)), ((), (2, 3)),
                       ((2, 1), (2, 0)), ((5,), (5,)), ((1, 37), WIDE)]:
        yield _case(kind, f"expand{_shape_text(shape)}->{_shape_text(out)}", None, [_data(rng, shape, F32)],
                    outputs=[TensorInfo(out, F32)])
    for dtype in _every_type():
        yield _case(kind, f"expand[3,1]->[2,3,4] {dtype.numpy_name}", None, [_data(rng, (3, 1), dtype)],
                    outputs=[TensorInfo((2, 3, 4), dtype)])


def _resize_case(rng: np.random.Generator, name: str, shape: Sequence[int], scales: Sequence[float],
                 dtype: DataType = F32, **options: Any) -> Case | None:
    out = tuple(int(math.floor(s * f)) for s, f in zip(shape, scales))
    desc = d.ResizeDescriptor(scales=tuple(scales), **options)
    label = f"{desc.mode.name.lower()} {desc.coordinates.name.lower()} {name}{_shape_text(shape)}->" \
            f"{_shape_text(out)} {dtype.numpy_name}"
    return _case(d.LayerKind.RESIZE, label, desc, [_data(rng, shape, dtype)], outputs=[TensorInfo(out, dtype)])


RESIZE_GEOMETRIES: list[tuple[str, tuple[int, ...], tuple[float, ...]]] = [
    ("1 axis", (2, 7), (1.0, 1.5)),
    ("2 axes", (1, 2, 4, 5), (1.0, 1.0, 2.0, 0.6)),
    ("3 axes", (1, 3, 4, 5), (1.0, 2.0, 0.5, 1.4)),
    ("4 axes", (2, 3, 4, 3), (1.5, 2.0, 0.75, 2.0)),
    ("2 wide axes", (1, 2, 9, 37), (1.0, 1.0, 2.0, 1.5)),
    ("x2 on 2 axes", (1, 2, 5, 9), (1.0, 1.0, 2.0, 2.0)),  # NEAREST: each element repeated
    ("1 axis, not the last", (1, 3, 4, 6), (1.0, 1.0, 2.0, 1.0)),
]


def resize(rng: np.random.Generator) -> Iterator[Case | None]:
    """NEAREST with each nearest mode, LINEAR and CUBIC, each with every coordinate transform
    over 1 to 4 resized axes (up and down); antialias, exclude_outside, a cubic coefficient,
    crop-and-resize with its extrapolation value; NEAREST over every element type, LINEAR and
    CUBIC over the float types. The first case resizes 1 axis."""
    for mode in d.ResizeMode:
        if mode.name == "INVALID":
            continue
        for coordinates in d.CoordinateTransform:
            if coordinates.name == "INVALID":
                continue
            roi = {"roi_start": (0.0, 0.0, 0.2, -0.1), "roi_end": (1.0, 1.0, 0.9, 1.2),
                   "extrapolation_value": -3.5} if coordinates.name == "TF_CROP_AND_RESIZE" else {}
            for i, (name, shape, scales) in enumerate(RESIZE_GEOMETRIES):
                options: dict[str, Any] = {"mode": mode, "coordinates": coordinates}
                if mode is d.ResizeMode.NEAREST:
                    options["nearest_mode"] = list(d.NearestMode)[i % len(d.NearestMode)]
                if roi and len(shape) == 4:
                    options.update(roi)
                yield _resize_case(rng, name, shape, scales, **options)
    for mode, extra in [("linear", {"antialias": True}), ("cubic", {"antialias": True}),
                        ("cubic", {"exclude_outside": True, "cubic_coeff_a": -0.5})]:
        label = "+" + ",".join(extra)
        yield _resize_case(rng, f"{label} 2 axes", (1, 2, 8, 7), (1.0, 1.0, 0.5, 0.6), mode=mode, **extra)
    for dtype in _every_type():
        yield _resize_case(rng, "2 axes", (1, 2, 3, 4), (1.0, 1.0, 2.0, 1.5), dtype, mode="nearest")
    for dtype in _float_types():
        for mode in ("linear", "cubic"):
            yield _resize_case(rng, "2 axes", (1, 2, 3, 4), (1.0, 1.0, 2.0, 0.5), dtype, mode=mode)


CAST_TYPES = (F32, F16, F64, DataType.BFLOAT16, I8, U8, I16, U16, I32, U32, I64, U64, BOOL)


def _cast_input(rng: np.random.Generator, source: DataType, target: DataType) -> np.ndarray:
    """Values every conversion defines (ONNX Cast): floats a quarter away from integers and
    within the target's range when it is an integer type (non-negative for unsigned), zeros
    among them for BOOL; integers of their whole range (the low bits are kept)."""
    shape = (4, 6)
    if source is BOOL:
        return _data(rng, shape, BOOL)
    if source.is_float:
        unsigned = target.name.startswith("UINT")
        x = _away_from_integers(rng, shape, source, 0 if unsigned else -60, 60)
        x.reshape(-1)[::5] = 0
        return x
    info = np.iinfo(source.numpy_dtype)
    return rng.integers(info.min, info.max, shape, dtype=source.numpy_dtype, endpoint=True)


def _double_rounding_trap(fraction_bits: int) -> np.ndarray:
    """float64 values just off a tie of a type with `fraction_bits` bits after the point: they
    round one way from the exact value, the other way through float32 (which drops the
    difference and leaves the tie to round to even)."""
    half = 2.0 ** -(fraction_bits + 1)
    return np.array([1 + half + 2.0 ** -30, -(1 + half + 2.0 ** -31), 1 + 3 * half - 2.0 ** -30,
                     2 * (1 + half + 2.0 ** -29)], np.float64)


def cast(rng: np.random.Generator) -> Iterator[Case | None]:
    """Every pair of the float, signed, unsigned and bool types (the same type copies); one
    rounding from float64 to float16 and bfloat16; out-of-range values to float16 with and
    without saturate (infinities and NaN kept)."""
    kind = d.LayerKind.CAST
    types = [t for t in CAST_TYPES if t is not DataType.BFLOAT16 or DataType.BFLOAT16 in _float_types()]
    for source in types:
        for target in types:
            x = _cast_input(rng, source, target)
            yield _case(kind, f"{source.numpy_name} to {target.numpy_name}", d.CastDescriptor(), [x],
                        outputs=[TensorInfo(x.shape, target)])
    for source, target in [(F32, F16), (F16, F32), (F32, I32), (I32, F32), (F64, F32), (U8, F32)]:
        x = _cast_input(rng, source, target)
        x = np.resize(x, WIDE)
        yield _case(kind, f"{source.numpy_name} to {target.numpy_name}{_shape_text(WIDE)}", d.CastDescriptor(), [x],
                    outputs=[TensorInfo(WIDE, target)])
    for target in (F16, *(t for t in types if t is DataType.BFLOAT16)):
        yield _case(kind, f"float64 to {target.numpy_name} rounds once", d.CastDescriptor(),
                    [_double_rounding_trap(10 if target is F16 else 7)], outputs=[TensorInfo((4,), target)])
    big = np.array([7.0e4, -1.0e5, 65504.0, np.inf, -np.inf, np.nan, 1.0], np.float32)
    for saturate in (False, True):
        yield _case(kind, f"float32 beyond float16's range{' saturate' if saturate else ''}",
                    d.CastDescriptor(saturate), [big], outputs=[TensorInfo(big.shape, F16)])


CONVOLUTIONS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any], bool, str | None]] = [
    # (op, x, weights, descriptor geometry, bias, fused activation)
    ("forward", (2, 4, 9), (6, 2, 3), {"strides": (2,), "pads_begin": (1,), "pads_end": (2,), "groups": 2}, True,
     "relu"),
    ("forward", (1, 3, 10), (4, 3, 3), {"dilations": (2,), "pads_begin": (0,), "pads_end": (0,)}, False, None),
    ("forward", (1, 4, 7, 6), (4, 1, 3, 3), {"strides": (2, 1), "pads_begin": (1, 1), "pads_end": (1, 1),
                                             "groups": 4}, True, None),
    ("forward", (2, 3, 6, 6), (5, 3, 2, 3), {"dilations": (2, 1), "pads_begin": (0, 1), "pads_end": (1, 2)}, False,
     "sigmoid"),
    ("forward", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), {"strides": (1, 2, 1), "pads_begin": (1, 0, 1),
                                                   "pads_end": (0, 1, 1)}, True, None),
    ("forward", (1, 4, 3, 4, 5), (4, 2, 3, 3, 3), {"dilations": (1, 1, 2), "pads_begin": (1, 1, 1),
                                                   "pads_end": (1, 1, 1), "groups": 2}, False, "relu"),
    ("transposed", (1, 4, 5), (4, 3, 3), {"strides": (2,), "pads_begin": (1,), "pads_end": (0,),
                                          "output_padding": (1,)}, True, None),
    ("transposed", (2, 4, 3, 4), (4, 2, 3, 3), {"strides": (2, 2), "pads_begin": (1, 1), "pads_end": (1, 1),
                                                "dilations": (1, 2), "output_padding": (1, 0), "groups": 2}, True,
     "relu"),
    ("transposed", (1, 3, 4, 4), (3, 1, 2, 2), {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0),
                                                "groups": 3}, False, None),
    ("transposed", (1, 2, 2, 3, 3), (2, 3, 2, 2, 3), {"strides": (2, 1, 2), "pads_begin": (0, 0, 1),
                                                      "pads_end": (0, 0, 0)}, True, None),
    ("forward", (1, 8, 10, 37), (16, 8, 3, 3), {"pads_begin": (1, 1), "pads_end": (1, 1)}, True, "relu"),
    ("forward", (1, 6, 37), (6, 1, 5), {"pads_begin": (2,), "pads_end": (2,), "groups": 6}, True, None),
    ("transposed", (1, 8, 6, 19), (8, 4, 3, 3), {"strides": (2, 2), "pads_begin": (1, 1), "pads_end": (1, 1),
                                                 "output_padding": (1, 1)}, True, None),
]


def convolution(rng: np.random.Generator) -> Iterator[Case | None]:
    """1-, 2- and 3-D, forward and transposed: strides, asymmetric pads, dilations, groups
    (depthwise too), output_padding, bias, a fused activation; constant and run-time weights;
    the float types."""
    kind = d.LayerKind.CONVOLUTION
    for i, (op, x_shape, w_shape, geometry, bias, act) in enumerate(CONVOLUTIONS):
        rank = len(x_shape) - 2
        geometry = {"strides": (1,) * rank, "pads_begin": (0,) * rank, "pads_end": (0,) * rank,
                    "dilations": (1,) * rank, "output_padding": (0,) * rank} | geometry
        desc = d.ConvolutionDescriptor(op, has_bias=bias, fused_activation=d.ActivationDescriptor(act) if act else None,
                                       **geometry)
        out_c = w_shape[0] if op == "forward" else w_shape[1] * desc.groups
        arrays = [_data(rng, x_shape, F32), _data(rng, w_shape, F32, 0.5)] + ([_data(rng, (out_c,), F32)] if bias
                                                                            else [])
        constant = i % 2 == 0
        name = f"{op} {rank}-D x{_shape_text(x_shape)} w{_shape_text(w_shape)} g{desc.groups}" + (
            " +bias" if bias else "") + (f" +{act}" if act else "") + (" constant weights" if constant else "")
        yield _case(kind, name, desc, arrays, constants=tuple(range(1, len(arrays))) if constant else ())
    for dtype in _float_types():
        for op, w_shape in (("forward", (4, 3, 3, 3)), ("transposed", (3, 4, 3, 3))):
            desc = d.ConvolutionDescriptor(op, (2, 1), (1, 0), (0, 1), has_bias=True)
            arrays = [_data(rng, (1, 3, 5, 5), dtype), _data(rng, w_shape, dtype, 0.5), _data(rng, (4,), dtype)]
            yield _case(kind, f"{op} 2-D {dtype.numpy_name}", desc, arrays, constants=(1, 2))


POOLINGS: list[tuple[tuple[int, ...], dict[str, Any]]] = [
    ((2, 3, 9), {"kernel": (3,), "strides": (2,), "pads_begin": (1,), "pads_end": (1,), "rounding": "ceil"}),
    ((1, 2, 7, 6), {"kernel": (3, 2), "strides": (2, 2), "pads_begin": (1, 0), "pads_end": (1, 1),
                    "dilations": (1, 2), "padding_method": "include"}),
    ((1, 2, 5, 5), {"kernel": (5, 5)}),
    ((1, 2, 4, 5, 4), {"kernel": (2, 2, 3), "strides": (2, 1, 1), "pads_begin": (0, 1, 1), "pads_end": (1, 0, 1),
                       "rounding": "ceil", "padding_method": "include"}),
    ((1, 1, 5, 4, 6), {"kernel": (3, 2, 2), "strides": (1, 2, 2), "dilations": (2, 1, 1)}),
    ((1, 4, 10, 37), {"kernel": (3, 3), "strides": (1, 1), "pads_begin": (1, 1), "pads_end": (1, 1)}),
    ((2, 3, 37), {"kernel": (4,), "strides": (3,)}),
]


def pooling(rng: np.random.Generator) -> Iterator[Case | None]:
    """MAX, AVERAGE (padding excluded and included) and LP (p = 1, 2, 3) over 1, 2 and 3 spatial
    axes: strides, pads, dilations, ceil rounding, a global window; MAX over integer types, every
    kind over the float types."""
    kind = d.LayerKind.POOLING
    for pool in d.PoolingKind:
        if pool.name == "INVALID":
            continue
        for i, (shape, geometry) in enumerate(POOLINGS):
            p = 1.0 + i % 3
            rank = len(shape) - 2
            geometry = {"strides": (1,) * rank, "pads_begin": (0,) * rank, "pads_end": (0,) * rank,
                        "dilations": (1,) * rank} | geometry
            desc = d.PoolingDescriptor(pool, p=p, **geometry)
            name = f"{pool.name.lower()} {len(shape) - 2}-D {_shape_text(shape)} k{_shape_text(desc.kernel)} " \
                   f"s{_shape_text(desc.strides)} {desc.rounding.name.lower()}" + (
                       f" {desc.padding_method.name.lower()}" if pool.name == "AVERAGE" else "") + (
                       f" p={p:g}" if pool.name == "LP" else "")
            x = _data(rng, shape, F32, 2.0)
            yield _case(kind, name, desc, [x], rtol_scale=3.0 if pool.name == "LP" else 1.0)
        for dtype in _float_types():
            desc = d.PoolingDescriptor(pool, (2, 2), (2, 1), (1, 0), (0, 1))
            yield _case(kind, f"{pool.name.lower()} 2-D {dtype.numpy_name}", desc, [_data(rng, (1, 2, 5, 4), dtype)],
                        rtol_scale=3.0 if pool.name == "LP" else 1.0)
    for dtype in (I8, U8, I32, I64, U16):
        desc = d.PoolingDescriptor("max", (3,), (2,), (1,), (1,), (1,))
        yield _case(kind, f"max 1-D {dtype.numpy_name}", desc, [_data(rng, (2, 2, 7), dtype)])


def top_k(rng: np.random.Generator) -> Iterator[Case | None]:
    """Largest and smallest, along the last, a middle and the first axis, k from 0 to the whole
    axis, sorted (and unsorted with k = 1, whose order is unique); distinct values (no ties);
    integer and float types. The first case is along the last axis."""
    kind = d.LayerKind.TOP_K
    for largest in (True, False):
        for shape, axis, k, sorted_ in [((3, 7), -1, 3, True), ((4, 5, 3), 1, 5, True), ((4, 5, 3), 0, 1, True),
                                        ((6,), 0, 0, True), ((3, 7), 1, 1, False), ((2, 9), -2, 2, True),
                                        (WIDE, 1, 6, True)]:
            a = axis % len(shape)
            out = shape[:a] + (k,) + shape[a + 1:]
            name = f"{'largest' if largest else 'smallest'}{_shape_text(shape)} axis {axis} k={k}" + (
                "" if sorted_ else " unsorted")
            yield _case(kind, name, d.TopKDescriptor(axis, largest, sorted_), [_distinct(rng, shape, F32)],
                        outputs=[TensorInfo(out, F32), TensorInfo(out, I64)])
        for dtype in (I8, U8, I32, I64, U16, *_float_types()):
            yield _case(kind, f"{'largest' if largest else 'smallest'}[3,8] k=3 {dtype.numpy_name}",
                        d.TopKDescriptor(-1, largest), [_distinct(rng, (3, 8), dtype)],
                        outputs=[TensorInfo((3, 3), dtype), TensorInfo((3, 3), I64)])


def cumulative(rng: np.random.Generator) -> Iterator[Case | None]:
    """SUM and PROD, inclusive and exclusive, forward and reverse, along each axis (negative
    too) and an empty one; integer types (wrapping) and the float types."""
    kind = d.LayerKind.CUMULATIVE
    for op in d.CumulativeOp:
        if op.name == "INVALID":
            continue
        for exclusive in (False, True):
            for reverse in (False, True):
                for shape, axis in [((3, 5), 1), ((2, 3, 4), -3), ((7,), 0), (WIDE, -1)]:
                    x = _data(rng, shape, F32) if op.name == "SUM" else (
                        rng.uniform(0.6, 1.4, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
                    name = f"{op.name.lower()}{_shape_text(shape)} axis {axis}" + (
                        " exclusive" if exclusive else "") + (" reverse" if reverse else "")
                    yield _case(kind, name, d.CumulativeDescriptor(op, axis, exclusive, reverse), [x])
        yield _case(kind, f"{op.name.lower()}[0,3] axis 0", d.CumulativeDescriptor(op, 0), [_data(rng, (0, 3), F32)])
        for dtype in (I8, U8, I32, I64, U64, *_float_types()):
            x = _data(rng, (3, 6), dtype) if op.name == "SUM" or not dtype.is_float else (
                rng.uniform(0.6, 1.4, (3, 6)) * rng.choice([-1, 1], (3, 6))).astype(dtype.numpy_dtype)
            yield _case(kind, f"{op.name.lower()}[3,6] axis 1 exclusive {dtype.numpy_name}",
                        d.CumulativeDescriptor(op, 1, True), [x])


def one_hot(rng: np.random.Generator) -> Iterator[Case | None]:
    """The depth axis first, in the middle and last; negative and out-of-range indices; integer
    and float (truncated) indices; values of several types, constant or at run time. The first
    case puts the depth first, so its last axis is the indices' (its malformed twin)."""
    kind = d.LayerKind.ONE_HOT
    depth = 5
    for itype, axis, shape in [(I64, 0, (3, 4)), (I32, -1, (3, 4)), (I64, 1, (2, 3)), (I64, -1, ()),
                               (U8, -2, (4,)), (F32, -1, (2, 3)), (F16, 1, (3, 2)), (I64, -1, WIDE)]:
        if itype.is_float:
            indices = _away_from_integers(rng, shape, itype, -depth - 1, depth + 2)
        elif itype.name.startswith("UINT"):
            indices = rng.integers(0, depth + 2, shape).astype(itype.numpy_dtype)
        else:
            indices = rng.integers(-depth - 2, depth + 2, shape).astype(itype.numpy_dtype)
        rank = len(shape) + 1
        a = axis % rank
        out = shape[:a] + (depth,) + shape[a:]
        values = np.array([-1.5, 2.0], np.float32)
        yield _case(kind, f"indices {_shape_text(shape)} {itype.numpy_name} depth {depth} axis {axis}",
                    d.OneHotDescriptor(axis), [indices, values], constants=(1,) if axis >= 0 else (),
                    outputs=[TensorInfo(out, F32)])
    for vtype in (I8, U8, I32, I64, BOOL, *_float_types()):
        values = np.array([0, 1], np.int64).astype(vtype.numpy_dtype) if vtype is BOOL else \
            np.array([3, 7], np.int64).astype(vtype.numpy_dtype)
        yield _case(kind, f"values {vtype.numpy_name}", d.OneHotDescriptor(-1),
                    [rng.integers(0, 4, (2, 3)).astype(np.int64), values], outputs=[TensorInfo((2, 3, 4), vtype)])


def triangular(rng: np.random.Generator) -> Iterator[Case | None]:
    """Upper and lower with k below, on and above the diagonal (beyond the matrix too), square,
    wide, tall, batched and empty matrices; every element type."""
    kind = d.LayerKind.TRIANGULAR
    for upper in (True, False):
        for shape, k in [((4, 5), 0), ((4, 5), 1), ((5, 3), -2), ((2, 3, 3), 0), ((2, 1, 4, 4), -1), ((3, 4), 6),
                         ((3, 4), -5), ((0, 3), 0), ((20, 37), 3)]:
            yield _case(kind, f"{'upper' if upper else 'lower'}{_shape_text(shape)} k={k}",
                        d.TriangularDescriptor(upper, k), [_data(rng, shape, F32)])
    for dtype in _every_type():
        yield _case(kind, f"upper[3,4] k=1 {dtype.numpy_name}", d.TriangularDescriptor(True, 1),
                    [_data(rng, (3, 4), dtype)])


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
    d.LayerKind.ELEMENTWISE_UNARY: elementwise_unary,
    d.LayerKind.SELECT: select,
    d.LayerKind.REDUCE: reduce,
    d.LayerKind.NORMALIZATION: normalization,
    d.LayerKind.GATHER: gather,
    d.LayerKind.SCATTER: scatter,
    d.LayerKind.SLICE: slice_,
    d.LayerKind.SPLIT: split,
    d.LayerKind.PAD: pad,
    d.LayerKind.EXPAND: expand,
    d.LayerKind.RESIZE: resize,
    d.LayerKind.CAST: cast,
    d.LayerKind.CONVOLUTION: convolution,
    d.LayerKind.POOLING: pooling,
    d.LayerKind.TOP_K: top_k,
    d.LayerKind.CUMULATIVE: cumulative,
    d.LayerKind.ONE_HOT: one_hot,
    d.LayerKind.TRIANGULAR: triangular,
}

# Kinds whose first output's last axis may have any length (RANDOM's sample count): their
# malformed case lengthens the first axis.
FREE_LAST_AXIS = {d.LayerKind.RANDOM}

# Kinds whose output dims may all be anything (RESIZE: ONNX's sizes): their malformed case gets
# an output of one more axis than the input instead.
FREE_OUTPUT_DIMS = {d.LayerKind.RESIZE}

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
    scalar; the first axis for FREE_LAST_AXIS; one more axis for FREE_OUTPUT_DIMS): a layer
    every backend must refuse."""
    out = case.spec.outputs[0]
    shape = out.shape[:-1] + (out.shape[-1] + 1,) if out.shape else (2,)
    if case.spec.kind in FREE_LAST_AXIS:  # any length is right there: the first axis instead
        shape = (out.shape[0] + 1,) + out.shape[1:]
    if case.spec.kind in FREE_OUTPUT_DIMS:  # any dims are right there: a wrong rank instead
        shape = out.shape + (1,)
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
