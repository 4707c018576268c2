"""The quantization kinds (backend_api.h, "Quantization") against NumPy oracles, bit for bit.

QUANTIZATION: QUANTIZE_LINEAR on every x / scale / output type and precision, per tensor, per
axis and blocked (a short last block too), halves to even, saturation (infinities, NaN, a zero
scale), rank 0 and empty tensors; DEQUANTIZE_LINEAR on every x type and output type with the same
granularities; DYNAMIC_QUANTIZE_LINEAR (ONNX's reference formula in float32) on ordinary, one-signed,
constant, NaN-holding and empty data. QUANTIZED_CONVOLUTION and QUANTIZED_MATMUL: INTEGER and
QLINEAR, 1-D to 3-D convolutions with strides, pads, dilations and groups, per-channel weights'
zero points and scales, bias, matmuls with batch broadcasting, 1-D operands and per-row /
per-column parameters, INT32 wrapping of the sums, every scale type, requantization's rounding and
saturation. Then every malformed layer refused with a reason, by every backend alike.

The oracles compute the way ONNX's reference does (NumPy arithmetic in the precision's own type),
not the way CpuRef does (double rounded to the type), and compare bytes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import (
    LayerKind,
    QuantizationDescriptor,
    QuantizedConvolutionDescriptor,
    QuantizedMatMulDescriptor,
)
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_refused, run_layer
from .typed import assert_same

T = DataType
RANGES = {T.INT8: (-128, 127), T.UINT8: (0, 255), T.INT16: (-32768, 32767), T.UINT16: (0, 65535),
          T.INT32: (-2 ** 31, 2 ** 31 - 1)}
QUANTIZED = (T.INT8, T.UINT8, T.INT16, T.UINT16)
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.FLOAT64)


def type_id(value: Any) -> str | None:
    return value.numpy_name if isinstance(value, DataType) else None


def spec(kind: LayerKind, descriptor: Any, arrays: Sequence[np.ndarray], outputs: Sequence[TensorInfo],
         name: str = "") -> LayerSpec:
    infos = tuple(TensorInfo(np.shape(a), T.from_any(np.asarray(a).dtype)) for a in arrays)
    return LayerSpec(kind, name or kind.name.lower(), descriptor, infos, tuple(outputs))


def saturate(values: np.ndarray, dtype: DataType) -> np.ndarray:
    low, high = RANGES[dtype]
    return np.where(np.isnan(values), low, np.clip(values, low, high)).astype(dtype.numpy_dtype)


def per_element(param: np.ndarray, shape: tuple[int, ...], axis: int, block_size: int) -> np.ndarray:
    """The parameter of each element of x, picked by index (per tensor, per axis, blocked)."""
    param = np.asarray(param)
    if block_size == 0 and param.size == 1:
        return np.full(shape, param.reshape(-1)[0], param.dtype)
    axis %= len(shape)
    positions = np.indices(shape)
    if block_size == 0:
        return param.reshape(-1)[positions[axis]]
    index = tuple(positions[d] // block_size if d == axis else positions[d] for d in range(len(shape)))
    return param[index]


# ---- QUANTIZE_LINEAR ---------------------------------------------------------------------------


def quantize_oracle(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: int, block_size: int,
                    precision: DataType) -> np.ndarray:
    """ONNX's reference: x / y_scale in the precision's type (NumPy / ml_dtypes arithmetic), rint,
    plus the zero point, clipped (NaN: the lowest value, as the reference's int32 cast gives)."""
    p = precision.numpy_dtype
    s = per_element(scale, x.shape, axis, block_size).astype(p)
    z = per_element(zero, x.shape, axis, block_size).astype(np.float64)
    with np.errstate(all="ignore"):
        q = (x.astype(p) / s).astype(np.float64)
    return saturate(np.rint(q) + z, T.from_any(zero.dtype))


def run_quantize(backend: Any, x: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: int = 0,
                 block_size: int = 0, precision: DataType = T.FLOAT32) -> None:
    desc = QuantizationDescriptor("quantize_linear", axis, block_size, precision)
    layer = spec(LayerKind.QUANTIZATION, desc, [x, scale, zero], [TensorInfo(x.shape, T.from_any(zero.dtype))])
    (y,) = run_layer(backend, layer, [x, scale, zero])
    assert_same(y, quantize_oracle(x, scale, zero, axis, block_size, precision), layer)


def data(shape: tuple[int, ...], dtype: DataType, seed: int, spread: float = 300.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        values = rng.standard_normal(shape) * spread
        if dtype is T.FLOAT16:
            values = np.clip(values, -65504, 65504)
        return values.astype(np.float32).astype(dtype.numpy_dtype)
    low, high = RANGES[dtype]
    return rng.integers(max(low, -100000), min(high, 100000) + 1, shape).astype(dtype.numpy_dtype)


def zero_points(shape: tuple[int, ...], dtype: DataType, seed: int) -> np.ndarray:
    low, high = RANGES[dtype]
    rng = np.random.default_rng(seed)
    return rng.integers(low // 2, high // 2 + 1, shape).astype(dtype.numpy_dtype)


def scales(shape: tuple[int, ...], dtype: DataType, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is T.INT32:
        return rng.integers(1, 9, shape).astype(np.int32)
    return (rng.uniform(0.05, 3.0, shape)).astype(np.float32).astype(dtype.numpy_dtype)


@pytest.mark.parametrize("out", QUANTIZED, ids=type_id)
@pytest.mark.parametrize("x_type, scale_type, precision", [
    (T.FLOAT32, T.FLOAT32, T.FLOAT32), (T.FLOAT16, T.FLOAT16, T.FLOAT16), (T.BFLOAT16, T.BFLOAT16, T.BFLOAT16),
    (T.FLOAT64, T.FLOAT64, T.FLOAT64), (T.INT32, T.FLOAT32, T.FLOAT64), (T.INT32, T.INT32, T.FLOAT64),
    (T.FLOAT32, T.FLOAT16, T.FLOAT32), (T.FLOAT32, T.FLOAT32, T.FLOAT16), (T.FLOAT16, T.FLOAT32, T.BFLOAT16),
], ids=lambda v: v.numpy_name if isinstance(v, DataType) else None)
def test_quantize_every_type_per_tensor(backend, x_type: DataType, scale_type: DataType, precision: DataType,
                                        out: DataType) -> None:
    x = data((3, 5, 4), x_type, 1, spread=40000.0 if out in (T.INT16, T.UINT16) else 300.0)
    for scale_shape in [(), (1,)]:
        run_quantize(backend, x, scales(scale_shape, scale_type, 2), zero_points(scale_shape, out, 3),
                     precision=precision)


@pytest.mark.parametrize("out", (T.INT8, T.UINT16), ids=type_id)
@pytest.mark.parametrize("shape, axis", [((3, 5, 4), 0), ((3, 5, 4), 1), ((3, 5, 4), -1), ((6,), 0), ((2, 0, 3), 1),
                                         ((2, 1, 3), 1)])
def test_quantize_per_axis(backend, shape: tuple[int, ...], axis: int, out: DataType) -> None:
    x = data(shape, T.FLOAT32, 4, spread=2000.0)
    n = shape[axis]
    run_quantize(backend, x, scales((n,), T.FLOAT32, 5), zero_points((n,), out, 6), axis=axis)


@pytest.mark.parametrize("shape, axis, block_size", [
    ((3, 4), 1, 2), ((3, 4), 1, 3), ((3, 4), 1, 4), ((3, 4), 1, 1), ((5, 3), 0, 2), ((2, 7, 3), 1, 3),
    ((2, 7, 3), -1, 2), ((2, 3, 8), 2, 5), ((4, 0), 1, 2), ((6,), 0, 4),
])
def test_quantize_blocked(backend, shape: tuple[int, ...], axis: int, block_size: int) -> None:
    x = data(shape, T.FLOAT32, 7, spread=100.0)
    scale_shape = list(shape)
    scale_shape[axis] = -(-shape[axis] // block_size)
    run_quantize(backend, x, scales(tuple(scale_shape), T.FLOAT32, 8), zero_points(tuple(scale_shape), T.UINT8, 9),
                 axis=axis, block_size=block_size)


def test_quantize_rounds_halves_to_even_and_saturates(backend) -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.4999998, 125.5, 126.5, 127.5, 1e10, -1e10, np.inf, -np.inf,
                  np.nan, -0.0, 3e38, -3e38], np.float32)
    for out in QUANTIZED:
        run_quantize(backend, x, np.float32(1.0), np.zeros((), out.numpy_dtype))
        run_quantize(backend, x, np.float32(0.5), np.ones((), out.numpy_dtype))


def test_quantize_by_a_zero_scale_saturates(backend) -> None:
    """x / 0 is an infinity (the type's ends) or, for 0 / 0, NaN (the lowest value)."""
    x = np.array([[1.0, -1.0, 0.0], [2.5, 0.0, -3.0]], np.float32)
    run_quantize(backend, x, np.array([0.0, 1.0], np.float32), np.array([3, 3], np.int8), axis=0)


def test_quantize_rank_0_and_empty(backend) -> None:
    run_quantize(backend, np.float32(7.25), np.float32(0.5), np.int16(-3))
    run_quantize(backend, np.zeros((0, 3), np.float32), np.float32(0.5), np.uint8(3))


def test_quantize_division_is_rounded_to_the_precision(backend) -> None:
    """Quotients that float32 rounds to a half-integer (or off one) and float64 does not: 7.05 / 0.1
    is 70.5 in float32 (70 after rounding) and 70.4999... in float64 (70), 2.75 / 0.1 27.5 (28) and
    27.4999... (27): the precision decides."""
    x = np.array([7.05, 2.75, -4.65, -3.85, -6.45, 2.65, 0.85, 0.3, 12.5], np.float32)
    scale = np.float32(0.1)
    for precision in (T.FLOAT32, T.FLOAT64, T.FLOAT16, T.BFLOAT16):
        run_quantize(backend, x, scale, np.int8(0), precision=precision)


# ---- DEQUANTIZE_LINEAR -------------------------------------------------------------------------


def dequantize_oracle(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: int, block_size: int,
                      precision: DataType, out: DataType) -> np.ndarray:
    """(x - zero_point) in the precision's type times the scale in it (NumPy arithmetic), then
    converted to the output type."""
    p = precision.numpy_dtype
    shifted = x.astype(np.int64) - per_element(zero, x.shape, axis, block_size).astype(np.int64)
    with np.errstate(all="ignore"):
        product = shifted.astype(p) * per_element(scale, x.shape, axis, block_size).astype(p)
        return product.astype(out.numpy_dtype)


def run_dequantize(backend: Any, x: np.ndarray, scale: np.ndarray, zero: np.ndarray, out: DataType, axis: int = 0,
                   block_size: int = 0, precision: DataType = T.FLOAT32) -> None:
    desc = QuantizationDescriptor("dequantize_linear", axis, block_size, precision)
    layer = spec(LayerKind.QUANTIZATION, desc, [x, scale, zero], [TensorInfo(x.shape, out)])
    (y,) = run_layer(backend, layer, [x, scale, zero])
    assert_same(y, dequantize_oracle(x, scale, zero, axis, block_size, precision, out), layer)


@pytest.mark.parametrize("out", FLOATS, ids=type_id)
@pytest.mark.parametrize("x_type", QUANTIZED + (T.INT32,), ids=type_id)
def test_dequantize_every_type_per_tensor(backend, x_type: DataType, out: DataType) -> None:
    x = data((4, 6), x_type, 10)
    zero = zero_points((), x_type, 11) if x_type is not T.INT32 else np.int32(-70000)
    for scale_type in FLOATS:
        precision = T.FLOAT64 if T.FLOAT64 in (scale_type, out) or x_type is T.INT32 else T.FLOAT32
        run_dequantize(backend, x, scales((), scale_type, 12), zero, out, precision=precision)
        run_dequantize(backend, x, scales((1,), scale_type, 13), zero.reshape(1), out, precision=precision)


@pytest.mark.parametrize("precision", (T.FLOAT16, T.BFLOAT16), ids=type_id)
def test_dequantize_in_a_narrow_precision(backend, precision: DataType) -> None:
    x = data((3, 7), T.INT16, 14)
    run_dequantize(backend, x, scales((), T.FLOAT32, 15), np.int16(1000), T.FLOAT32, precision=precision)


@pytest.mark.parametrize("shape, axis, block_size", [
    ((3, 5, 4), 1, 0), ((3, 5, 4), -1, 0), ((1, 3, 3, 2), 1, 0), ((1, 4, 3, 2), 1, 2), ((3, 7), 1, 3),
    ((7, 3), 0, 7), ((2, 9, 2), 1, 4), ((0, 4), 1, 2),
])
def test_dequantize_per_axis_and_blocked(backend, shape: tuple[int, ...], axis: int, block_size: int) -> None:
    x = data(shape, T.UINT8, 16)
    param_shape: tuple[int, ...]
    if block_size == 0:
        param_shape = (shape[axis],)
    else:
        dims = list(shape)
        dims[axis] = -(-shape[axis] // block_size)
        param_shape = tuple(dims)
    run_dequantize(backend, x, scales(param_shape, T.FLOAT32, 17), zero_points(param_shape, T.UINT8, 18), T.FLOAT32,
                   axis=axis, block_size=block_size)


def test_dequantize_rank_0_and_extremes(backend) -> None:
    run_dequantize(backend, np.int8(-128), np.float32(0.25), np.int8(127), T.FLOAT32)
    x = np.array([0, 65535, 32768, 1], np.uint16)
    run_dequantize(backend, x, np.float16(65504.0), np.uint16(0), T.FLOAT16)  # beyond float16: infinity
    ints = np.array([2 ** 31 - 1, -2 ** 31, 16777217, -16777219], np.int32)
    run_dequantize(backend, ints, np.float32(1.0), np.int32(0), T.FLOAT64, precision=T.FLOAT64)
    run_dequantize(backend, ints, np.float32(3.0), np.int32(-5), T.FLOAT32, precision=T.FLOAT32)


# ---- DYNAMIC_QUANTIZE_LINEAR ---------------------------------------------------------------------


def dynamic_oracle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX's reference (op_dynamic_quantize_linear.py) in float32, NaN left out of the range."""
    f = np.float32
    known = x[~np.isnan(x)]
    maxx = f(np.maximum(0, known.max())) if known.size else f(0)
    minx = f(np.minimum(0, known.min())) if known.size else f(0)
    scale = f(1.0 if maxx == minx else (maxx - minx)) / f(255)
    initial = f(0) - minx / scale
    zero = np.rint(max(0, min(255, initial)))
    with np.errstate(invalid="ignore"):
        y = np.clip(np.rint(x / scale) + f(zero), 0, 255)
    y = np.where(np.isnan(y), 0, y)
    return y.astype(np.uint8), np.array(scale, np.float32), np.array(zero, np.uint8)


@pytest.mark.parametrize("name, x", [
    ("onnx", np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32)),
    ("negative", np.array([-1.0, -2.1, -1.3, -2.5, -3.34, -4.0], np.float32)),
    ("positive", np.array([[1, 2.1, 1.3, 2.5], [3.34, 4.0, 1.5, 2.6], [3.9, 4.0, 3.0, 2.345]], np.float32)),
    ("random", (np.random.default_rng(19).standard_normal((4, 3, 5)) * 7).astype(np.float32)),
    ("zeros", np.zeros((3, 2), np.float32)),
    ("with nan", np.array([1.0, np.nan, -2.0, 0.25], np.float32)),
    ("rank 0", np.float32(-3.5)),
    ("empty", np.zeros((0, 4), np.float32)),
    ("wide", np.array([-1e30, 1e30, 0.0, 3.0], np.float32)),
])
def test_dynamic_quantize(backend, name: str, x: np.ndarray) -> None:
    desc = QuantizationDescriptor("dynamic_quantize_linear")
    layer = spec(LayerKind.QUANTIZATION, desc, [x], [TensorInfo(x.shape, T.UINT8), TensorInfo((), T.FLOAT32),
                                                     TensorInfo((), T.UINT8)], name=name)
    y, scale, zero = run_layer(backend, layer, [x])
    expected = dynamic_oracle(x)
    assert_same(y, expected[0], layer)
    assert_same(scale, expected[1], layer)
    assert_same(zero, expected[2], layer)


# ---- QUANTIZED_CONVOLUTION ------------------------------------------------------------------------


def conv_sums(x: np.ndarray, x_zero: np.ndarray, w: np.ndarray, w_zero: np.ndarray,
              desc: QuantizedConvolutionDescriptor) -> np.ndarray:
    """The int32 sums, one output element at a time from its window (Python integers, wrapped)."""
    k = desc.spatial_rank
    xs = x.astype(np.int64) - int(np.asarray(x_zero).reshape(-1)[0])
    wz = np.asarray(w_zero).astype(np.int64).reshape(-1)
    ws = w.astype(np.int64) - (wz.reshape((-1,) + (1,) * (k + 1)) if wz.size > 1 else wz[0])
    padded = np.pad(xs, [(0, 0), (0, 0)] + list(zip(desc.pads_begin, desc.pads_end)))
    n, c = x.shape[:2]
    o, kernel = w.shape[0], w.shape[2:]
    out = [(padded.shape[2 + a] - desc.dilations[a] * (kernel[a] - 1) - 1) // desc.strides[a] + 1 for a in range(k)]
    cg, og = c // desc.groups, o // desc.groups
    y = np.zeros((n, o, *out), np.int64)
    for index in itertools.product(range(n), range(o), *(range(s) for s in out)):
        b, oc, at = index[0], index[1], index[2:]
        g = oc // og
        window = tuple(slice(p * st, p * st + dl * (kk - 1) + 1, dl)
                       for p, st, dl, kk in zip(at, desc.strides, desc.dilations, kernel))
        patch = padded[(b, slice(g * cg, (g + 1) * cg)) + window]
        y[index] = int(np.sum(patch * ws[oc]))
    return (y & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def requantize_oracle(acc: np.ndarray, multiplier: np.ndarray, y_zero: np.ndarray) -> np.ndarray:
    """ONNX's reference: int32 sums times the float multiplier (NumPy: float64), plus the zero
    point, rint, clip to the type."""
    with np.errstate(all="ignore"):
        v = acc.astype(np.float64) * np.asarray(multiplier).astype(np.float64)
        v = v + float(np.asarray(y_zero).reshape(-1)[0])
    return saturate(np.rint(v), T.from_any(np.asarray(y_zero).dtype))


def scale_product(x_scale: np.ndarray, w_scale: np.ndarray, y_scale: np.ndarray) -> np.ndarray:
    """x_scale * w_scale / y_scale in the scales' own type (NumPy / ml_dtypes arithmetic)."""
    return (x_scale * w_scale) / np.asarray(y_scale).reshape(-1)[0]


def conv_desc(op: str, rank: int, strides: Any = 1, pads: Any = 0, pads_end: Any = None, dilations: Any = 1,
              groups: int = 1, bias: bool = False) -> QuantizedConvolutionDescriptor:
    def each(v: Any) -> tuple[int, ...]:
        return (v,) * rank if isinstance(v, int) else tuple(v)

    return QuantizedConvolutionDescriptor(op, each(strides), each(pads), each(pads if pads_end is None else pads_end),
                                          each(dilations), groups, bias)


def int8_data(shape: tuple[int, ...], dtype: DataType, seed: int) -> np.ndarray:
    low, high = RANGES[dtype]
    return np.random.default_rng(seed).integers(low, high + 1, shape).astype(dtype.numpy_dtype)


CONV_GEOMETRIES = [
    ("1-D", (2, 3, 9), (4, 3, 3), conv_desc("integer", 1)),
    ("1-D stride 2 pads", (1, 2, 10), (3, 2, 4), conv_desc("integer", 1, strides=2, pads=2, pads_end=1)),
    ("2-D", (1, 3, 6, 5), (2, 3, 3, 2), conv_desc("integer", 2)),
    ("2-D pads dilation", (2, 2, 7, 7), (4, 2, 3, 3), conv_desc("integer", 2, pads=(1, 2), dilations=(2, 1))),
    ("2-D groups", (1, 4, 5, 5), (6, 2, 3, 3), conv_desc("integer", 2, groups=2, strides=(2, 1), pads=1)),
    ("2-D depthwise", (1, 3, 4, 4), (3, 1, 2, 2), conv_desc("integer", 2, groups=3)),
    ("3-D", (1, 2, 4, 5, 3), (2, 2, 2, 3, 2), conv_desc("integer", 3, pads=(1, 0, 1), strides=(1, 2, 1))),
    ("empty batch", (0, 2, 5, 5), (2, 2, 3, 3), conv_desc("integer", 2)),
]


@pytest.mark.parametrize("x_type, w_type", [(T.UINT8, T.INT8), (T.INT8, T.INT8), (T.UINT8, T.UINT8),
                                            (T.INT8, T.UINT8)], ids=lambda v: v.numpy_name)
@pytest.mark.parametrize("label, x_shape, w_shape, desc", CONV_GEOMETRIES, ids=[g[0] for g in CONV_GEOMETRIES])
def test_integer_convolution(backend, label: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                             desc: QuantizedConvolutionDescriptor, x_type: DataType, w_type: DataType) -> None:
    x, w = int8_data(x_shape, x_type, 20), int8_data(w_shape, w_type, 21)
    for x_zero, w_zero in [(np.zeros((), x_type.numpy_dtype), np.zeros((), w_type.numpy_dtype)),
                           (int8_data((1,), x_type, 22), int8_data((w_shape[0],), w_type, 23))]:
        out = TensorInfo(conv_sums(x, x_zero, w, w_zero, desc).shape, T.INT32)
        layer = spec(LayerKind.QUANTIZED_CONVOLUTION, desc, [x, x_zero, w, w_zero], [out], name=label)
        (y,) = run_layer(backend, layer, [x, x_zero, w, w_zero])
        assert_same(y, conv_sums(x, x_zero, w, w_zero, desc), layer)


def test_integer_convolution_sums_wrap_to_int32(backend) -> None:
    """34000 products of 255 * 255 sum to 2.2e9 > 2^31 - 1: the output wraps (two's complement)."""
    x = np.full((1, 1, 34000), 255, np.uint8)
    w = np.full((1, 1, 34000), 255, np.uint8)
    zero = np.zeros((), np.uint8)
    desc = conv_desc("integer", 1)
    layer = spec(LayerKind.QUANTIZED_CONVOLUTION, desc, [x, zero, w, zero], [TensorInfo((1, 1, 1), T.INT32)])
    (y,) = run_layer(backend, layer, [x, zero, w, zero])
    assert int(y.reshape(-1)[0]) == 34000 * 65025 - 2 ** 32


@pytest.mark.parametrize("scale_type", FLOATS, ids=type_id)
@pytest.mark.parametrize("y_type", (T.UINT8, T.INT8), ids=type_id)
@pytest.mark.parametrize("per_channel, bias", [(False, False), (True, False), (True, True), (False, True)])
def test_qlinear_convolution(backend, per_channel: bool, bias: bool, y_type: DataType, scale_type: DataType) -> None:
    x, w = int8_data((2, 4, 6, 5), T.UINT8, 24), int8_data((6, 2, 3, 3), T.INT8, 25)
    n_w = 6 if per_channel else 1
    x_scale = np.asarray(0.0037, scale_type.numpy_dtype)
    w_scale = np.random.default_rng(26).uniform(0.001, 0.004, (n_w,)).astype(np.float32).astype(scale_type.numpy_dtype)
    y_scale = np.asarray([0.05], scale_type.numpy_dtype)
    x_zero, w_zero, y_zero = np.uint8(131), int8_data((n_w,), T.INT8, 27), np.asarray([7], y_type.numpy_dtype)
    desc = conv_desc("qlinear", 2, pads=1, strides=(1, 2), groups=2, bias=bias)
    arrays = [x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero]
    acc = conv_sums(x, x_zero, w, w_zero, desc)
    if bias:
        b = np.random.default_rng(28).integers(-30000, 30000, (6,)).astype(np.int32)
        arrays.append(b)
        acc = acc + b.reshape(1, -1, 1, 1)
    m = scale_product(x_scale, w_scale, y_scale)
    m = m.reshape(1, -1, 1, 1) if per_channel else m.reshape(())
    expected = requantize_oracle(acc, m, y_zero)
    layer = spec(LayerKind.QUANTIZED_CONVOLUTION, desc, arrays, [TensorInfo(expected.shape, y_type)])
    (y,) = run_layer(backend, layer, arrays)
    assert_same(y, expected, layer)


def test_qlinear_convolution_saturates_and_rounds_halves_to_even(backend) -> None:
    """1-D, kernel 1: y = saturate(round(x * m + y_zero_point)) with m = 0.5 (exact): halves."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 256)
    w, zero = np.ones((1, 1, 1), np.int8), np.zeros((), np.int8)
    for y_scale, y_type in ((2.0, T.INT8), (0.25, T.INT8), (2.0, T.UINT8)):
        arrays = [x, np.float32(1.0), zero, w, np.float32(1.0), zero, np.float32(y_scale),
                  np.zeros((), y_type.numpy_dtype)]
        layer = spec(LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 1), arrays, [TensorInfo(x.shape, y_type)])
        (y,) = run_layer(backend, layer, arrays)
        expected = saturate(np.rint(x.astype(np.float64) / y_scale), y_type)
        assert_same(y, expected, layer)


# ---- QUANTIZED_MATMUL -------------------------------------------------------------------------------


def matmul_sums(a: np.ndarray, a_zero: np.ndarray, b: np.ndarray, b_zero: np.ndarray) -> np.ndarray:
    sums = np.matmul(a.astype(np.int64) - a_zero.astype(np.int64), b.astype(np.int64) - b_zero.astype(np.int64))
    return (np.asarray(sums) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


MATMUL_SHAPES = [  # a, b, a's parameter shape (per row), b's (per column)
    ("2-D", (3, 4), (4, 5), (3, 1), (5,)),
    ("batched", (2, 3, 4), (2, 4, 5), (2, 3, 1), (2, 1, 5)),
    ("broadcast batch", (2, 1, 3, 4), (3, 4, 5), (3, 1), (1, 5)),
    ("a vector", (4,), (2, 4, 3), (), (2, 1, 3)),
    ("b vector", (2, 3, 4), (4,), (2, 3, 1), (1,)),
    ("vectors", (5,), (5,), (1,), ()),
    ("empty k", (3, 0), (0, 2), (3, 1), (2,)),
    ("empty m", (0, 4), (4, 2), (), (2,)),
]


@pytest.mark.parametrize("a_type, b_type", [(T.UINT8, T.INT8), (T.INT8, T.UINT8), (T.UINT8, T.UINT8),
                                            (T.INT8, T.INT8)], ids=lambda v: v.numpy_name)
@pytest.mark.parametrize("label, a_shape, b_shape, a_param, b_param", MATMUL_SHAPES, ids=[m[0] for m in MATMUL_SHAPES])
def test_integer_matmul(backend, label: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                        a_param: tuple[int, ...], b_param: tuple[int, ...], a_type: DataType, b_type: DataType) -> None:
    a, b = int8_data(a_shape, a_type, 30), int8_data(b_shape, b_type, 31)
    for a_zero, b_zero in [(np.zeros((), a_type.numpy_dtype), np.zeros((), b_type.numpy_dtype)),
                           (int8_data(a_param, a_type, 32), int8_data(b_param, b_type, 33))]:
        expected = matmul_sums(a, a_zero, b, b_zero)
        layer = spec(LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"), [a, a_zero, b, b_zero],
                     [TensorInfo(expected.shape, T.INT32)], name=label)
        (y,) = run_layer(backend, layer, [a, a_zero, b, b_zero])
        assert_same(y, expected, layer)


def test_integer_matmul_sums_wrap_to_int32(backend) -> None:
    a = np.full((2, 40000), 255, np.uint8)
    b = np.full((40000, 1), 255, np.uint8)
    a_zero, b_zero = np.zeros((), np.uint8), np.array([0], np.uint8)
    layer = spec(LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"), [a, a_zero, b, b_zero],
                 [TensorInfo((2, 1), T.INT32)])
    (y,) = run_layer(backend, layer, [a, a_zero, b, b_zero])
    assert y.reshape(-1).tolist() == [40000 * 65025 - 2 ** 32] * 2


@pytest.mark.parametrize("scale_type", FLOATS, ids=type_id)
@pytest.mark.parametrize("label, a_shape, b_shape, a_param, b_param", MATMUL_SHAPES[:5],
                         ids=[m[0] for m in MATMUL_SHAPES[:5]])
def test_qlinear_matmul(backend, label: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                        a_param: tuple[int, ...], b_param: tuple[int, ...], scale_type: DataType) -> None:
    rng = np.random.default_rng(34)
    a, b = int8_data(a_shape, T.UINT8, 35), int8_data(b_shape, T.INT8, 36)
    a_zero, b_zero = int8_data(a_param, T.UINT8, 37), int8_data(b_param, T.INT8, 38)
    a_scale = rng.uniform(0.002, 0.01, a_param).astype(np.float32).astype(scale_type.numpy_dtype)
    b_scale = rng.uniform(0.002, 0.01, b_param).astype(np.float32).astype(scale_type.numpy_dtype)
    y_scale, y_zero = np.asarray(0.0107, scale_type.numpy_dtype), np.asarray([118], np.uint8)
    arrays = [a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero]
    acc = matmul_sums(a, a_zero, b, b_zero)
    rows = np.broadcast_to(a_scale, a.shape)[..., 0] if a.ndim >= 2 else np.broadcast_to(a_scale, a.shape)[0]
    cols = np.broadcast_to(b_scale, b.shape)
    cols = cols[..., 0, :] if b.ndim >= 2 else cols[0]
    if a.ndim >= 2 and b.ndim >= 2:
        rows, cols = rows[..., :, None], cols[..., None, :]
    expected = requantize_oracle(acc, scale_product(rows, cols, y_scale), y_zero)
    layer = spec(LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("qlinear"), arrays,
                 [TensorInfo(expected.shape, T.UINT8)], name=label)
    (y,) = run_layer(backend, layer, arrays)
    assert_same(y, expected, layer)


# ---- malformed layers -------------------------------------------------------------------------------

F32, U8, I8, I32 = T.FLOAT32, T.UINT8, T.INT8, T.INT32


def info(shape: tuple[int, ...], dtype: DataType = F32, **quant: Any) -> TensorInfo:
    return TensorInfo(shape, dtype, **quant)


def quant(op: str = "quantize_linear", axis: int = 0, block: int = 0, precision: DataType = F32) -> Any:
    return QuantizationDescriptor(op, axis, block, precision)


Q_OK = (info((2, 3)), info(()), info((), U8))
DQ_OK = (info((2, 3), U8), info(()), info((), U8))
DYN_OUT = (info((4,), U8), info(()), info((), U8))
QCONV_INTEGER = (info((1, 2, 5, 5), U8), info((), U8), info((3, 2, 3, 3), I8), info((), I8))
QCONV_QLINEAR = (info((1, 2, 5, 5), U8), info(()), info((), U8), info((3, 2, 3, 3), I8), info(()), info((), I8),
                 info(()), info((), U8))
QMM_QLINEAR = (info((3, 4), U8), info(()), info((), U8), info((4, 2), I8), info(()), info((), I8), info(()),
               info((), U8))

MALFORMED = {
    # QUANTIZATION
    "unknown op": (LayerKind.QUANTIZATION, None, Q_OK, (info((2, 3), U8),), "unknown op 7"),
    "integer precision": (LayerKind.QUANTIZATION, quant(), Q_OK, (info((2, 3), U8),), "precision"),
    "two inputs": (LayerKind.QUANTIZATION, quant(), Q_OK[:2], (info((2, 3), U8),), "takes 3 input"),
    "quantize int8 x": (LayerKind.QUANTIZATION, quant(), (info((2, 3), I8),) + Q_OK[1:], (info((2, 3), U8),),
                        "x .* must be a float type or int32"),
    "quantize bool scale": (LayerKind.QUANTIZATION, quant(), (Q_OK[0], info((), T.BOOL), Q_OK[2]), (info((2, 3), U8),),
                            "scale .* must be a float type or int32"),
    "quantize int32 zero point": (LayerKind.QUANTIZATION, quant(), Q_OK[:2] + (info((), I32),), (info((2, 3), I32),),
                                  "zero_point .* int8, uint8, int16 or uint16"),
    "quantize output type": (LayerKind.QUANTIZATION, quant(), Q_OK, (info((2, 3), I8),), "zero_point's type"),
    "quantize output shape": (LayerKind.QUANTIZATION, quant(), Q_OK, (info((3, 2), U8),), "shape"),
    "dequantize float x": (LayerKind.QUANTIZATION, quant("dequantize_linear"), (info((2, 3)),) + DQ_OK[1:],
                           (info((2, 3)),), "x .* must be int8, uint8, int16, uint16 or int32"),
    "dequantize int scale": (LayerKind.QUANTIZATION, quant("dequantize_linear"), (DQ_OK[0], info((), I32), DQ_OK[2]),
                             (info((2, 3)),), "scale .* float"),
    "dequantize zero point type": (LayerKind.QUANTIZATION, quant("dequantize_linear"), DQ_OK[:2] + (info((), I8),),
                                   (info((2, 3)),), "x's type"),
    "dequantize integer output": (LayerKind.QUANTIZATION, quant("dequantize_linear"), DQ_OK, (info((2, 3), I32),),
                                  "output .* float"),
    "scale and zero point shapes": (LayerKind.QUANTIZATION, quant(axis=1), (Q_OK[0], info((3,)), info((), U8)),
                                    (info((2, 3), U8),), "one shape"),
    "per-axis length": (LayerKind.QUANTIZATION, quant(axis=1), (Q_OK[0], info((2,)), info((2,), U8)),
                        (info((2, 3), U8),), "per-axis scale has x's dim 1 \\(3\\) elements, got 2"),
    "axis out of range": (LayerKind.QUANTIZATION, quant(axis=2), (Q_OK[0], info((3,)), info((3,), U8)),
                          (info((2, 3), U8),), "axis 2 is out of range"),
    "rank-2 scale unblocked": (LayerKind.QUANTIZATION, quant(axis=1), (Q_OK[0], info((2, 3)), info((2, 3), U8)),
                               (info((2, 3), U8),), "block_size must be >= 1"),
    "rank-2 one-element scale": (LayerKind.QUANTIZATION, quant(), (Q_OK[0], info((1, 1)), info((1, 1), U8)),
                                 (info((2, 3), U8),), "block_size"),
    "blocked rank": (LayerKind.QUANTIZATION, quant(axis=1, block=2), (Q_OK[0], info((2,)), info((2,), U8)),
                     (info((2, 3), U8),), "blocked scale has x's rank 2"),
    "blocked count": (LayerKind.QUANTIZATION, quant(axis=1, block=2), (Q_OK[0], info((2, 1)), info((2, 1), U8)),
                      (info((2, 3), U8),), "ceil\\(3 / 2\\)"),
    "blocked other dim": (LayerKind.QUANTIZATION, quant(axis=1, block=2), (Q_OK[0], info((1, 2)), info((1, 2), U8)),
                          (info((2, 3), U8),), "blocked along axis 1"),
    "quantized tensor info": (LayerKind.QUANTIZATION, quant("dequantize_linear"),
                              (info((2, 3), U8, quant_scale=0.5, quant_zero_point=3),) + DQ_OK[1:], (info((2, 3)),),
                              "static quantization"),
    "dynamic two inputs": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear"), (info((4,)), info(())), DYN_OUT,
                           "1 input"),
    "dynamic one output": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear"), (info((4,)),), DYN_OUT[:1],
                           "3 outputs"),
    "dynamic float16 x": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear"), (info((4,), T.FLOAT16),), DYN_OUT,
                          "x is float16; it must be float32"),
    "dynamic int8 y": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear"), (info((4,)),),
                       (info((4,), I8),) + DYN_OUT[1:], "y .* must be uint8"),
    "dynamic scale shape": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear"), (info((4,)),),
                            (DYN_OUT[0], info((1,)), DYN_OUT[2]), "output 1 \\(scale\\) has shape"),
    "dynamic axis": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear", axis=1), (info((4,)),), DYN_OUT,
                     "axis 0, block_size 0 and precision float32"),
    "dynamic precision": (LayerKind.QUANTIZATION, quant("dynamic_quantize_linear", precision=T.FLOAT64),
                          (info((4,)),), DYN_OUT, "precision float32"),
    # QUANTIZED_CONVOLUTION
    "conv unknown op": (LayerKind.QUANTIZED_CONVOLUTION, None, QCONV_INTEGER, (info((1, 3, 3, 3), I32),),
                        "unknown op"),
    "conv integer with bias": (LayerKind.QUANTIZED_CONVOLUTION, "integer bias", QCONV_INTEGER,
                               (info((1, 3, 3, 3), I32),), "only QLINEAR takes a bias"),
    "conv counts": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2), QCONV_INTEGER[:3],
                    (info((1, 3, 3, 3), I32),), "takes 4 input"),
    "conv float x": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2), (info((1, 2, 5, 5)),) + QCONV_INTEGER[1:],
                     (info((1, 3, 3, 3), I32),), "x \\(input 0\\) is float32; it must be int8 or uint8"),
    "conv zero point type": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2),
                             QCONV_INTEGER[:3] + (info((), U8),), (info((1, 3, 3, 3), I32),), "w's type"),
    "conv integer output type": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2), QCONV_INTEGER,
                                 (info((1, 3, 3, 3), U8),), "must be int32"),
    "conv output shape": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2), QCONV_INTEGER,
                          (info((1, 3, 4, 4), I32),), "output has shape"),
    "conv groups": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2, groups=2), QCONV_INTEGER,
                    (info((1, 3, 3, 3), I32),), "groups"),
    "conv x zero point per channel": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2),
                                      (QCONV_INTEGER[0], info((2,), U8)) + QCONV_INTEGER[2:],
                                      (info((1, 3, 3, 3), I32),), "x_zero_point .* one element"),
    "conv w zero point length": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2),
                                 QCONV_INTEGER[:3] + (info((2,), I8),), (info((1, 3, 3, 3), I32),),
                                 "per output channel"),
    "conv rank": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 1), QCONV_INTEGER, (info((1, 3, 3), I32),),
                  "x must have rank 3"),
    "conv window": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("integer", 2, dilations=3), QCONV_INTEGER,
                    (info((1, 3, 1, 1), I32),), "does not fit"),
    "conv scales of two types": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2),
                                 QCONV_QLINEAR[:4] + (info((), T.FLOAT16),) + QCONV_QLINEAR[5:],
                                 (info((1, 3, 3, 3), U8),), "one float type"),
    "conv int scale": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2), (QCONV_QLINEAR[0], info((), I32))
                       + QCONV_QLINEAR[2:], (info((1, 3, 3, 3), U8),), "x_scale .* float"),
    "conv y zero point int32": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2),
                                QCONV_QLINEAR[:7] + (info((), I32),), (info((1, 3, 3, 3), I32),),
                                "y_zero_point .* int8 or uint8"),
    "conv qlinear output type": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2), QCONV_QLINEAR,
                                 (info((1, 3, 3, 3), I8),), "y_zero_point's type"),
    "conv y scale per channel": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2),
                                 QCONV_QLINEAR[:6] + (info((3,)), QCONV_QLINEAR[7]), (info((1, 3, 3, 3), U8),),
                                 "y_scale .* one element"),
    "conv bias type": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2, bias=True),
                       QCONV_QLINEAR + (info((3,)),), (info((1, 3, 3, 3), U8),), "bias .* must be int32"),
    "conv bias shape": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2, bias=True),
                        QCONV_QLINEAR + (info((2,), I32),), (info((1, 3, 3, 3), U8),), "bias"),
    "conv bias without flag": (LayerKind.QUANTIZED_CONVOLUTION, conv_desc("qlinear", 2),
                               QCONV_QLINEAR + (info((3,), I32),), (info((1, 3, 3, 3), U8),), "takes 8 input"),
    # QUANTIZED_MATMUL
    "matmul unknown op": (LayerKind.QUANTIZED_MATMUL, None, QMM_QLINEAR, (info((3, 2), U8),), "unknown op"),
    "matmul counts": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("qlinear"), QMM_QLINEAR[:4],
                      (info((3, 2), U8),), "takes 8 input"),
    "matmul inner dims": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("qlinear"),
                          QMM_QLINEAR[:3] + (info((5, 2), I8),) + QMM_QLINEAR[4:], (info((3, 2), U8),),
                          "inner dimensions differ"),
    "matmul batch": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"),
                     (info((2, 3, 4), U8), info((), U8), info((3, 4, 2), I8), info((), I8)),
                     (info((2, 3, 2), I32),), "batch dims"),
    "matmul per-k zero point": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"),
                                (info((3, 4), U8), info((4,), U8), info((4, 2), I8), info((), I8)),
                                (info((3, 2), I32),), "varies along a's summed axis"),
    "matmul b per-k scale": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("qlinear"),
                             QMM_QLINEAR[:4] + (info((4, 1)),) + QMM_QLINEAR[5:], (info((3, 2), U8),),
                             "b_scale .* varies along b's summed axis"),
    "matmul unbroadcastable": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"),
                               (info((3, 4), U8), info((2, 1), U8), info((4, 2), I8), info((), I8)),
                               (info((3, 2), I32),), "does not broadcast"),
    "matmul y zero point": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("qlinear"),
                            QMM_QLINEAR[:7] + (info((2,), U8),), (info((3, 2), U8),), "y_zero_point .* one element"),
    "matmul int16": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"),
                     (info((3, 4), T.INT16), info((), T.INT16), info((4, 2), I8), info((), I8)),
                     (info((3, 2), I32),), "a \\(input 0\\) is int16; it must be int8 or uint8"),
    "matmul output shape": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("qlinear"), QMM_QLINEAR,
                            (info((2, 3), U8),), "output has shape"),
    "matmul quantized info": (LayerKind.QUANTIZED_MATMUL, QuantizedMatMulDescriptor("integer"),
                              (info((3, 4), U8), info((), U8), info((4, 2), I8, quant_scale=0.1), info((), I8)),
                              (info((3, 2), I32),), "input 2 carries static quantization"),
}


def malformed_spec(name: str) -> LayerSpec:
    kind, desc, inputs, outputs, _ = MALFORMED[name]
    if name == "unknown op":
        desc = QuantizationDescriptor("quantize_linear")
        object.__setattr__(desc, "op", 7)
    elif name == "integer precision":
        desc = QuantizationDescriptor("quantize_linear")
        object.__setattr__(desc, "precision", T.INT32)
    elif name == "conv unknown op":
        desc = conv_desc("integer", 2)
        object.__setattr__(desc, "op", 9)
    elif name == "conv integer with bias":
        desc = conv_desc("integer", 2)
        object.__setattr__(desc, "has_bias", True)
    elif name == "matmul unknown op":
        desc = QuantizedMatMulDescriptor("qlinear")
        object.__setattr__(desc, "op", 0)
    return LayerSpec(kind, name.replace(" ", "_"), desc, tuple(inputs), tuple(outputs))


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_layers_are_refused(backend, name: str) -> None:
    assert_refused(backend, malformed_spec(name), MALFORMED[name][4])
