"""Where code written for onnxruntime imports from `onnxruntime.capi`, for plugnn.

`plugnn.capi.onnxruntime_pybind11_state` (also `_pybind_state`) holds onnxruntime's error class
names (Fail, InvalidArgument, NoSuchFile, InvalidGraph, ...: subclasses of plugnn's errors,
plugnn.session.ort_errors) and the option and value classes scripts take from there;
`plugnn.capi.onnxruntime_inference_collection` the session-level classes and
check_and_normalize_provider_args. They are plugnn's own classes under onnxruntime's module
names, so `from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument` becomes
`from plugnn.capi.onnxruntime_pybind11_state import InvalidArgument`; nothing here is
onnxruntime's code.
"""

from __future__ import annotations

_MODULES = ("onnxruntime_pybind11_state", "_pybind_state", "onnxruntime_inference_collection")


def __getattr__(name: str) -> object:
    """The submodules on first use (`plugnn.capi.onnxruntime_pybind11_state.Fail`)."""
    if name not in _MODULES:
        raise AttributeError(f"module 'plugnn.capi' has no attribute {name!r}")
    import importlib

    return importlib.import_module(f"plugnn.capi.{name}")
