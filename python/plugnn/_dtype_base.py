"""What plugnn's DataType does beyond its values: the members come from the header
(`_abi_defs.DataType`, generated), the behaviour from here."""

from __future__ import annotations

from typing import Any

# Bytes per element, by member name (backend_api.h: dense storage, bool one byte).
_ITEMSIZE = {"FLOAT32": 4, "FLOAT16": 2, "INT8": 1, "UINT8": 1, "INT32": 4, "INT64": 8, "BOOL": 1,
             "INT16": 2, "UINT16": 2, "UINT32": 4, "UINT64": 8, "FLOAT64": 8, "BFLOAT16": 2}
_FLOATS = frozenset({"FLOAT32", "FLOAT16", "FLOAT64", "BFLOAT16"})


class DataTypeBase:
    """Methods of the generated `DataType` enum (an element type of pn_data_type)."""

    name: str

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self.name]

    @property
    def numpy_name(self) -> str:
        return self.name.lower()

    @property
    def numpy_dtype(self) -> Any:
        """The NumPy dtype (bfloat16 is the ml_dtypes package's, which onnx installs)."""
        import numpy as np

        if self.name == "BFLOAT16":
            try:
                import ml_dtypes
            except ImportError:
                from plugnn.errors import PlugnnError

                raise PlugnnError("bfloat16 tensors are NumPy arrays of ml_dtypes.bfloat16: "
                                  "pip install ml_dtypes") from None
            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.numpy_name)

    @property
    def numpy_spelling(self) -> str:
        """How Python code names the NumPy type: numpy.float32, ml_dtypes.bfloat16, numpy.bool_."""
        if self.name == "BFLOAT16":
            return "ml_dtypes.bfloat16"
        return "numpy.bool_" if self.name == "BOOL" else f"numpy.{self.numpy_name}"

    @property
    def is_float(self) -> bool:
        return self.name in _FLOATS

    @property
    def is_integer(self) -> bool:
        return self.name not in _FLOATS and self.name != "BOOL"

    @classmethod
    def from_any(cls, value: Any) -> Any:
        """Accept a DataType, its value, its name ("float32") or a NumPy dtype."""
        if isinstance(value, cls):
            return value
        members: Any = cls
        if isinstance(value, int):
            try:
                return members(value)
            except ValueError:
                raise ValueError(f"unknown data type value {value}") from None
        name = str(getattr(value, "name", value)).upper()
        try:
            return members[name]
        except KeyError:
            known = ", ".join(t.numpy_name for t in members)
            raise ValueError(f"unknown data type {value!r}; plugnn knows {known}") from None
