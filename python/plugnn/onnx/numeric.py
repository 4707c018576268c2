"""ONNX's elementwise semantics in NumPy, for folding nodes whose inputs are all known at import
(shape chains such as Shape -> Equal -> Where -> Expand, constant weights), and the element-type
checks the elementwise converters share.

The folds compute what a backend computes at run time (backend_api.h): floats in float64,
rounded once to the result's type; integers exactly, wrapping to the type's width; integer
division truncating toward zero; a division by zero or a negative integer power is an import
error naming the node. Results keep ONNX's output types (bool for comparisons and tests).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext, PendingInput
from plugnn.tensor import DataType

FLOATS = frozenset({DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT32, DataType.FLOAT64})
SIGNED = frozenset({DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64})
UNSIGNED = frozenset({DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64})
INTEGERS = SIGNED | UNSIGNED
NUMERIC = FLOATS | INTEGERS
ANY = NUMERIC | {DataType.BOOL}
BOOL = frozenset({DataType.BOOL})

# The order types are listed in messages.
_ORDER = (DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.INT8, DataType.INT16,
          DataType.INT32, DataType.INT64, DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64,
          DataType.BOOL)


def type_names(types: frozenset[DataType]) -> str:
    return ", ".join(t.numpy_name for t in _ORDER if t in types)


# ---- element types of values -------------------------------------------------------------------


def dtype_of(ctx: NodeContext, i: int, what: str) -> DataType:
    """The plugnn element type of input i (a Tensor, or an array known at import)."""
    value = ctx.value(i)
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, PendingInput):
        raise ctx.error(f"input {i} ({what}): graph input {value.name!r} has element type {value.dtype}, which "
                        f"plugnn tensors cannot hold")
    try:
        return DataType.from_any(np.asarray(value).dtype)
    except ValueError:
        raise ctx.error(f"input {i} ({what}) {ctx.input_name(i)!r} has element type {np.asarray(value).dtype}, "
                        f"which plugnn tensors cannot hold") from None


def check_types(ctx: NodeContext, inputs: Sequence[tuple[int, str]], allowed: frozenset[DataType]) -> DataType:
    """The one element type the given inputs share, which must be in `allowed`."""
    first, first_what = inputs[0]
    dtype = dtype_of(ctx, first, first_what)
    for i, what in inputs[1:]:
        other = dtype_of(ctx, i, what)
        if other != dtype:
            raise ctx.error(f"input {i} ({what}) is {other.numpy_name} but input {first} ({first_what}) is "
                            f"{dtype.numpy_name}; {ctx.op_type} takes one element type for them")
    if dtype not in allowed:
        raise ctx.error(f"input {first} ({first_what}) is {dtype.numpy_name}; {ctx.op_type} takes "
                        f"{type_names(allowed)}")
    return dtype


def numpy_dtype(dtype: DataType) -> np.dtype:
    return np.dtype(dtype.numpy_dtype)


# ---- rounding once -------------------------------------------------------------------------------


def _bfloat16_once(values: np.ndarray) -> np.ndarray:
    """float64 values to bfloat16 rounded once: through a float32 rounded to odd (the last kept bit
    set when anything was dropped), which bfloat16's rounding to nearest even then rounds exactly."""
    with np.errstate(all="ignore"):
        f = values.astype(np.float32)
        back = f.astype(np.float64)
        inexact = (back != values) & np.isfinite(values)
        toward_zero = np.where(inexact & (np.abs(back) > np.abs(values)), np.nextafter(f, np.float32(0)), f)
        bits = toward_zero.view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32).astype(DataType.BFLOAT16.numpy_dtype)


def to_float_type(values: Any, dtype: DataType) -> np.ndarray:
    """float64 results to the float type `dtype`, rounded once."""
    values = np.asarray(values, np.float64)
    if dtype is DataType.BFLOAT16:
        return _bfloat16_once(values)
    with np.errstate(all="ignore"):
        return values.astype(numpy_dtype(dtype))


def float_fold(fn: Callable[..., Any], arrays: Sequence[np.ndarray], dtype: DataType) -> np.ndarray:
    """fn on the float64 values of `arrays`, rounded once to `dtype`."""
    with np.errstate(all="ignore"):
        result = fn(*(np.asarray(a).astype(np.float64) for a in arrays))
    return to_float_type(result, dtype)


# ---- integer arithmetic ------------------------------------------------------------------------


def integer_divide(ctx: NodeContext, op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """DIV (truncating), MOD (the sign of b) or FMOD (the sign of a) of integer arrays, wrapping
    (the lowest value divided by -1 is itself)."""
    if np.any(b == 0):
        raise ctx.error(f"integer division by zero in a computation of values known at import time "
                        f"({ctx.op_type} of {a.dtype} {a.reshape(-1)[:8].tolist()} by {b.reshape(-1)[:8].tolist()})")
    with np.errstate(all="ignore"):
        if op == "mod":
            return np.remainder(a, b)
        if op == "fmod":
            return np.fmod(a, b)
        q = np.floor_divide(a, b)
        r = np.remainder(a, b)
        adjust = (r != 0) & ((a < 0) != (b < 0))
        return (q + adjust.astype(q.dtype)).astype(q.dtype)


def integer_power(ctx: NodeContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b < 0):
        raise ctx.error(f"integer power with a negative exponent in a computation of values known at import "
                        f"time (exponents {b.reshape(-1)[:8].tolist()}); integer powers need exponents >= 0")
    with np.errstate(all="ignore"):
        return np.power(a, b)


def shift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    """ONNX BitShift: bits moved out are lost; a right shift of a signed value is arithmetic; an
    amount < 0 or >= the width gives 0 (-1 for a right shift of a negative value)."""
    width = a.dtype.itemsize * 8
    b = np.asarray(b)
    valid = (b >= 0) & (b < width) if b.dtype.kind == "i" else b < width
    amount = np.where(valid, b, 0).astype(a.dtype)
    with np.errstate(all="ignore"):
        moved = np.left_shift(a, amount) if left else np.right_shift(a, amount)
        fill = np.zeros((), a.dtype) if left or a.dtype.kind == "u" else np.where(a < 0, -1, 0).astype(a.dtype)
        return np.where(valid, moved, fill).astype(a.dtype)


def wrapping(fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """An integer NumPy operation whose overflow wraps (no warnings)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*arrays))


def same_dtype(result: Any, like: np.ndarray) -> np.ndarray:
    return np.asarray(result).astype(like.dtype, copy=False)


# ---- casts ------------------------------------------------------------------------------------------


def cast(values: np.ndarray, to: np.dtype) -> np.ndarray:
    """ONNX Cast of an array (numeric and bool types): float to integer truncates toward zero,
    saturating at the type's bounds with NaN giving 0 (ONNX leaves those undefined; this is what
    the backends compute, pn_elements.h), integer to integer wraps, anything to bool is `!= 0`,
    to a float type rounds once."""
    values = np.asarray(values)
    to = np.dtype(to)
    if to == values.dtype:
        return values.copy()
    if to == np.bool_:
        return values != 0
    source_float = values.dtype.kind == "f" or values.dtype == DataType.BFLOAT16.numpy_dtype
    with np.errstate(all="ignore"):
        if to.kind in "iu":
            if source_float:
                info = np.iinfo(to)
                wide = np.nan_to_num(np.trunc(values.astype(np.float64)), nan=0.0)
                return np.clip(wide, float(info.min), float(info.max)).astype(to)
            return values.astype(to)
        target = DataType.from_any(to)
        if target is DataType.BFLOAT16 and values.dtype.itemsize > 2 and values.dtype.kind != "b":
            if values.dtype.kind in "iu" and values.dtype.itemsize == 8:
                return _bfloat16_once(_int64_to_float64_odd(values))
            return _bfloat16_once(values.astype(np.float64))
        return values.astype(to)


def _int64_to_float64_odd(values: np.ndarray) -> np.ndarray:
    """64-bit integers as float64 rounded to odd (exact below 2^53), so a narrower rounding after
    it rounds once."""
    out = np.empty(values.shape, np.float64)
    for index, v in np.ndenumerate(values):
        m = abs(int(v))
        shift_bits = max(0, m.bit_length() - 53)
        kept = (m >> shift_bits) | (1 if m & ((1 << shift_bits) - 1) else 0)
        out[index] = math.copysign(math.ldexp(float(kept), shift_bits), float(int(v)) if v else 1.0)
    return out
