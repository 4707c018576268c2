"""Tensor descriptions: element types and shapes (no NumPy needed to describe a tensor)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class DataType(enum.IntEnum):
    """Element types; the values are pn_data_type's (checked against the header by a test)."""

    FLOAT32 = 1
    FLOAT16 = 2
    INT8 = 3
    UINT8 = 4
    INT32 = 5
    INT64 = 6
    BOOL = 7

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]

    @property
    def numpy_name(self) -> str:
        return self.name.lower()

    @classmethod
    def from_any(cls, value: Any) -> DataType:
        """Accept a DataType, its name ("float32") or a NumPy dtype."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, int):
            try:
                return cls(value)
            except ValueError:
                raise ValueError(f"unknown data type value {value}") from None
        name = str(getattr(value, "name", value)).upper()
        try:
            return cls[name]
        except KeyError:
            known = ", ".join(t.numpy_name for t in cls)
            raise ValueError(f"unknown data type {value!r}; plugnn knows {known}") from None


_ITEMSIZE = {
    DataType.FLOAT32: 4,
    DataType.FLOAT16: 2,
    DataType.INT8: 1,
    DataType.UINT8: 1,
    DataType.INT32: 4,
    DataType.INT64: 8,
    DataType.BOOL: 1,
}

MAX_DIMS = 8


@dataclass(frozen=True)
class TensorInfo:
    """Shape and element type of a dense, row-major tensor."""

    shape: tuple[int, ...]
    dtype: DataType = DataType.FLOAT32
    quant_scale: float = 0.0
    quant_zero_point: int = 0

    def __post_init__(self) -> None:
        shape = tuple(int(d) for d in self.shape)
        if len(shape) > MAX_DIMS:
            raise ValueError(f"rank {len(shape)} exceeds the maximum of {MAX_DIMS} dimensions")
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", DataType.from_any(self.dtype))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def num_bytes(self) -> int:
        return self.num_elements * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.numpy_name}[{', '.join(map(str, self.shape))}]"
