"""The quantization kinds' semantics (backend_api.h, "Quantization") in NumPy, for folding the
quantization operators when every input is known at import (a DequantizeLinear of constant
weights, a QuantizeLinear of a constant): the values CpuRef computes, bit for bit.

Rounding is to nearest, halves to even (np.rint); saturation clamps to the integer type's
range, NaN giving its lowest value; "rounded to T" goes through numeric.to_float_type (once, from
the float64 value). Integer sums are exact and wrap to int32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from plugnn.onnx.numeric import to_float_type
from plugnn.tensor import DataType

_RANGES = {DataType.INT8: (-128, 127), DataType.UINT8: (0, 255), DataType.INT16: (-32768, 32767),
           DataType.UINT16: (0, 65535)}


def rounded(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """float64 values rounded once to the float type `dtype`, back in float64."""
    if dtype is DataType.FLOAT64:
        return np.asarray(values, np.float64)
    return to_float_type(values, dtype).astype(np.float64)


def saturate(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """Integer-valued float64 values clamped to `dtype`'s range (NaN: the lowest value)."""
    low, high = _RANGES[dtype]
    values = np.where(np.isnan(values), low, np.clip(values, low, high))
    return values.astype(dtype.numpy_dtype)


def expand(param: np.ndarray, shape: Sequence[int], axis: int, block_size: int) -> np.ndarray:
    """A scale or zero point broadcast to x's shape: per tensor (one element), per axis
    (rank 1 along `axis`) or blocked (`block_size` elements of x per element along `axis`)."""
    param = np.asarray(param)
    if block_size == 0 and param.ndim <= 1 and param.size == 1:
        return np.broadcast_to(param.reshape(()), tuple(shape))
    axis %= len(shape)
    if block_size == 0:
        dims = [1] * len(shape)
        dims[axis] = param.size
        return np.broadcast_to(param.reshape(dims), tuple(shape))
    repeated = np.repeat(param, block_size, axis=axis)
    return np.take(repeated, np.arange(shape[axis]), axis=axis)


def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int, block_size: int,
             precision: DataType) -> np.ndarray:
    """saturate(round(x' / scale') + zero_point), x' and scale' and their quotient rounded to
    `precision`; the result has zero_point's type."""
    out = DataType.from_any(np.asarray(zero_point).dtype)
    s = rounded(expand(scale, x.shape, axis, block_size).astype(np.float64), precision)
    z = expand(zero_point, x.shape, axis, block_size).astype(np.float64)
    with np.errstate(all="ignore"):
        q = rounded(rounded(np.asarray(x).astype(np.float64), precision) / s, precision)
        return saturate(np.rint(q) + z, out)


def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int, block_size: int,
               precision: DataType, dtype: DataType) -> np.ndarray:
    """(x - zero_point)' * scale', each and the product rounded to `precision`, then to `dtype`."""
    shifted = np.asarray(x).astype(np.int64) - expand(zero_point, x.shape, axis, block_size).astype(np.int64)
    s = rounded(expand(scale, x.shape, axis, block_size).astype(np.float64), precision)
    with np.errstate(all="ignore"):
        product = rounded(rounded(shifted.astype(np.float64), precision) * s, precision)
    return to_float_type(product, dtype)


def dynamic_quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DynamicQuantizeLinear of float32 x in float32 arithmetic (NaN elements left out of the
    range): y (uint8), scale (float32 []), zero_point (uint8 [])."""
    x = np.asarray(x, np.float32)
    known = x[~np.isnan(x)]
    f = np.float32
    hi = max(f(0), known.max()) if known.size else f(0)
    lo = min(f(0), known.min()) if known.size else f(0)
    with np.errstate(all="ignore"):
        scale = f(f(1) if hi == lo else f(hi - lo)) / f(255)
        initial = f(0) - f(lo / scale)
        zero = np.rint(np.float64(0.0 if np.isnan(initial) else min(max(float(initial), 0.0), 255.0)))
        q = np.rint((x / scale).astype(np.float64))
    return saturate(q + zero, DataType.UINT8), np.asarray(scale, np.float32), np.asarray(zero, np.uint8)


def wrap_int32(values: np.ndarray) -> np.ndarray:
    """Exact int64 sums to int32, modulo 2^32."""
    return np.asarray(values, np.int64).astype(np.int32)


def requantize(acc: np.ndarray, multiplier: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """saturate(round(double(acc) * multiplier + zero_point)), of zero_point's type."""
    out = DataType.from_any(np.asarray(zero_point).dtype)
    with np.errstate(all="ignore"):
        v = acc.astype(np.float64) * multiplier.astype(np.float64)
        v = v + np.asarray(zero_point).astype(np.float64).reshape(())
    return saturate(np.rint(v), out)


def multiplier(x_scale: np.ndarray, w_scale: np.ndarray, y_scale: np.ndarray) -> np.ndarray:
    """(x_scale * w_scale) / y_scale, each step rounded to the scales' type (broadcast)."""
    dtype = DataType.from_any(np.asarray(x_scale).dtype)
    with np.errstate(all="ignore"):
        product = rounded(np.asarray(x_scale, np.float64) * np.asarray(w_scale, np.float64), dtype)
        return rounded(product / np.asarray(y_scale, np.float64).reshape(()), dtype)


def convolve(x: np.ndarray, w: np.ndarray, strides: Sequence[int], pads_begin: Sequence[int],
             pads_end: Sequence[int], dilations: Sequence[int], groups: int) -> np.ndarray:
    """The exact int64 sums of a forward convolution of integer x [N, C, ...] and w [O, C/g, k...]."""
    x = np.asarray(x, np.int64)
    w = np.asarray(w, np.int64)
    padded = np.pad(x, [(0, 0), (0, 0)] + list(zip(pads_begin, pads_end)))
    kernel = w.shape[2:]
    out = [(padded.shape[2 + a] - dilations[a] * (kernel[a] - 1) - 1) // strides[a] + 1 for a in range(len(kernel))]
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    y = np.zeros((n, o, *out), np.int64)
    cg, og = c // groups, o // groups
    for g in range(groups):
        xg = padded[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for tap in np.ndindex(*kernel):
            window = tuple(slice(t * dl, t * dl + (size - 1) * st + 1, st)
                           for t, dl, size, st in zip(tap, dilations, out, strides))
            patch = xg[(slice(None), slice(None)) + window]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch, wg[(slice(None), slice(None)) + tap])
    return y
