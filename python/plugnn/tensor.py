"""Tensor descriptions: element types and shapes (no NumPy needed to describe a tensor).

`DataType` is pn_data_type, generated from the header (members) with `_dtype_base` (methods).
"""

from __future__ import annotations

from dataclasses import dataclass

from plugnn._abi_defs import PN_MAX_DIMS, DataType
from plugnn.symbolic import Dim

__all__ = ["MAX_DIMS", "DataType", "TensorInfo"]

MAX_DIMS = PN_MAX_DIMS


@dataclass(frozen=True)
class TensorInfo:
    """Shape and element type of a dense, row-major tensor. A dim is an int, or a `Dim` (an
    expression of symbols, plugnn.symbolic) in a network built for every binding of them."""

    shape: tuple[int, ...]
    dtype: DataType = DataType.FLOAT32
    quant_scale: float = 0.0
    quant_zero_point: int = 0

    def __post_init__(self) -> None:
        shape = tuple(d if isinstance(d, Dim) else int(d) for d in self.shape)
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

    @property
    def symbolic(self) -> bool:
        """True when a dim is an expression of symbols (plugnn.symbolic.Dim)."""
        return any(isinstance(d, Dim) for d in self.shape)
