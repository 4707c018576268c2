"""Tensor descriptions: element types and shapes (no NumPy needed to describe a tensor).

`DataType` is pn_data_type, generated from the header (members) with `_dtype_base` (methods).
"""

from __future__ import annotations

from dataclasses import dataclass

from plugnn._abi_defs import PN_MAX_DIMS, DataType
from plugnn.errors import NetworkError
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
        if len(shape) > MAX_DIMS:  # PN_MAX_DIMS: fixed for the 1.x ABI (backend_api.h says why)
            raise NetworkError(f"rank {len(shape)} exceeds the maximum of {MAX_DIMS} dimensions (PN_MAX_DIMS)")
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", DataType.from_any(self.dtype))

    def at(self, shape: tuple[int, ...]) -> TensorInfo:
        """This info at another shape of the same rank, `shape` a tuple of ints (a symbolic
        network's binding evaluated: plugnn.shape_program), without the checks of a new one
        but the sign of the dims."""
        if len(shape) != len(self.shape) or (shape and min(shape) < 0):
            raise ValueError(f"shape {shape} for {self}: another rank, or a negative dimension")
        info = object.__new__(TensorInfo)
        object.__setattr__(info, "shape", shape)
        object.__setattr__(info, "dtype", self.dtype)
        object.__setattr__(info, "quant_scale", self.quant_scale)
        object.__setattr__(info, "quant_zero_point", self.quant_zero_point)
        return info

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
