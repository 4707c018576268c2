"""Element types for the typed conformance tests: the classes of backend_api.h, random data
of any type, integer wrapping and the tolerance of a float type.

Integer oracles compute with Python integers (exact) and wrap to the type's width at the end;
float oracles compute in float64 on the values the typed inputs hold, so the only difference
a correct backend shows is the one rounding of its output (`tolerance`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugnn.tensor import DataType

from .conftest import ATOL, RTOL

T = DataType
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.FLOAT64)
SIGNED = (T.INT8, T.INT16, T.INT32, T.INT64)
UNSIGNED = (T.UINT8, T.UINT16, T.UINT32, T.UINT64)
INTEGERS = SIGNED + UNSIGNED
NUMERIC = FLOATS + INTEGERS
ALL_TYPES = NUMERIC + (T.BOOL,)


def type_id(dtype: Any) -> str | None:
    return dtype.numpy_name if isinstance(dtype, DataType) else None


def bits(dtype: DataType) -> int:
    return dtype.itemsize * 8


def is_signed(dtype: DataType) -> bool:
    return dtype in SIGNED


def limits(dtype: DataType) -> tuple[int, int]:
    """The lowest and highest value of an integer type."""
    if is_signed(dtype):
        return -(1 << (bits(dtype) - 1)), (1 << (bits(dtype) - 1)) - 1
    return 0, (1 << bits(dtype)) - 1


def wrap(value: int, dtype: DataType) -> int:
    """`value` modulo 2^bits, read as the integer type (two's complement when signed)."""
    width = bits(dtype)
    value %= 1 << width
    return value - (1 << width) if is_signed(dtype) and value >= 1 << (width - 1) else value


def tolerance(dtype: DataType) -> tuple[float, float]:
    """(rtol, atol) that covers one rounding of a float64 result to `dtype`."""
    return {T.FLOAT32: (RTOL, ATOL), T.FLOAT16: (1e-3, 1e-6), T.BFLOAT16: (8e-3, 1e-6),
            T.FLOAT64: (1e-12, 1e-14)}[dtype]


def random(dtype: DataType, shape: Sequence[int], rng: np.random.Generator, low: float | None = None,
           high: float | None = None) -> np.ndarray:
    """Random data of `dtype`: floats normal * 3 (or uniform in [low, high)), integers uniform over
    the whole type (or [low, high]), bools half true."""
    shape = tuple(shape)
    if dtype is T.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_float:
        values = rng.standard_normal(shape) * 3 if low is None else rng.uniform(low, high, shape)
        return values.astype(dtype.numpy_dtype)
    lo, hi = limits(dtype)
    lo = lo if low is None else max(lo, int(low))
    hi = hi if high is None else min(hi, int(high))
    if dtype is T.UINT64:
        return rng.integers(lo, hi, shape, dtype=np.uint64, endpoint=True)
    return rng.integers(lo, hi, shape, dtype=np.int64, endpoint=True).astype(dtype.numpy_dtype)


def integer_oracle(fn: Callable[..., int], arrays: Sequence[np.ndarray], dtype: DataType,
                   out_dtype: DataType | None = None) -> np.ndarray:
    """fn on Python ints, elementwise over the NumPy broadcast of `arrays`, wrapped to `out_dtype`
    (default: `dtype`); a BOOL `out_dtype` takes fn's truth."""
    out_dtype = out_dtype or dtype
    broadcast = np.broadcast_arrays(*arrays)
    shape = broadcast[0].shape if broadcast else ()
    flat = [[int(v) for v in b.reshape(-1)] for b in broadcast]
    results = [fn(*values) for values in zip(*flat)]
    if out_dtype is T.BOOL:
        return np.array([bool(r) for r in results], dtype=bool).reshape(shape)
    return np.array([wrap(r, out_dtype) for r in results], dtype=object).astype(out_dtype.numpy_dtype).reshape(shape)


def float64(values: np.ndarray) -> np.ndarray:
    """The float64 values an array of any type holds (exactly, for every float type)."""
    return np.asarray(values).astype(np.float64)


def broken(desc: Any, **fields: Any) -> Any:
    """`desc` with fields its own checks would refuse (as a foreign caller may send them)."""
    copy = dataclasses.replace(desc)
    for key, value in fields.items():
        object.__setattr__(copy, key, value)
    return copy
