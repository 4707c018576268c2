"""onnxruntime's `onnxruntime.capi._pybind_state` (the same names as
plugnn.capi.onnxruntime_pybind11_state, which it re-exports)."""

from __future__ import annotations

from plugnn.capi.onnxruntime_pybind11_state import *  # noqa: F403 - the same module under its other name
from plugnn.capi.onnxruntime_pybind11_state import __all__  # noqa: F401
