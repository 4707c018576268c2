"""Helpers for the conformance tests of kinds that take every element type (data movement,
indexing): deterministic values of any DataType and a bit-exact comparison."""

from __future__ import annotations

import numpy as np

from plugnn.layers import LayerSpec
from plugnn.tensor import DataType

from .conftest import describe

ALL_TYPES = list(DataType)
NUMERIC_TYPES = [t for t in DataType if t is not DataType.BOOL]
# One of each width: one byte, two, four, eight, and bool.
WIDTHS = [DataType.UINT8, DataType.FLOAT16, DataType.INT32, DataType.FLOAT64, DataType.BOOL]


def values(dtype: DataType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Deterministic values of `dtype`: small signed numbers (floats with fractions), bools."""
    rng = np.random.default_rng(seed)
    if dtype is DataType.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_float:
        return (rng.standard_normal(shape) * 4).astype(np.float32).astype(dtype.numpy_dtype)
    low = 0 if dtype.name.startswith("UINT") else -9
    return rng.integers(low, 10, shape).astype(dtype.numpy_dtype)


def assert_same(actual: np.ndarray, expected: np.ndarray, case: LayerSpec | str) -> None:
    """Same shape and the same bytes as `expected` in actual's type (the outputs start NaN-filled,
    so an element a kernel never writes shows)."""
    what = describe(case) if isinstance(case, LayerSpec) else case
    expected = np.array(expected, dtype=actual.dtype, order="C")
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    if actual.tobytes() != expected.tobytes():
        a, e = actual.reshape(-1), expected.reshape(-1)
        first = next(i for i in range(a.size) if a[i:i + 1].tobytes() != e[i:i + 1].tobytes())
        where = np.unravel_index(first, actual.shape)
        raise AssertionError(f"{what}: differs from NumPy first at {tuple(int(i) for i in where)}: actual "
                             f"{a[first]!r}, expected {e[first]!r}\nactual   {a[:16]}\nexpected {e[:16]}")
