"""plugnn: a neural-network inference runtime whose compute lives in pluggable C backends.

`import plugnn` stays cheap: NumPy and the native glue load only when first used.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing costs more than all of plugnn's own
# start-up in a fresh interpreter. Type checkers treat this name as True.
TYPE_CHECKING = False

from plugnn._build_config import BACKEND_API_VERSION
from plugnn.errors import (
    BackendCrashedError,
    BackendError,
    BackendLoadError,
    BackendOptionError,
    ConfigurationError,
    InputError,
    MissingDependencyError,
    ModelError,
    NetworkError,
    OptimizationError,
    PlugnnError,
    ProbeUnavailableError,
    RegistryError,
    RuntimeClosedError,
    SessionError,
    UnknownBackendError,
)

__version__ = "0.1.0"

_LAZY = {
    "Runtime": "plugnn.runtime",
    "Network": "plugnn.network",
    "Tensor": "plugnn.network",
    "optimize": "plugnn.optimizer",
    "OptimizedNetwork": "plugnn.optimized",
    "LoadedNetwork": "plugnn.loaded",
    "BackendRegistry": "plugnn.registry",
    "Backend": "plugnn.backend",
    "BackendContext": "plugnn.backend",
    "MemoryManager": "plugnn.backend",
    "Workload": "plugnn.backend",
    "WorkloadFactory": "plugnn.backend",
    "LayerSpec": "plugnn.layers",
    "SupportResult": "plugnn.layers",
    "Subgraph": "plugnn.layers",
    "Substitution": "plugnn.layers",
    "FailedLayer": "plugnn.layers",
    "OptimizationResult": "plugnn.layers",
    "TensorInfo": "plugnn.tensor",
    "DataType": "plugnn.tensor",
    "InferenceSession": "plugnn.session",
    "NodeArg": "plugnn.session",
    # onnxruntime's session API (docs/session.md)
    "SessionOptions": "plugnn.session",
    "RunOptions": "plugnn.session",
    "GraphOptimizationLevel": "plugnn.session",
    "ExecutionMode": "plugnn.session",
    "ExecutionOrder": "plugnn.session",
    "OrtValue": "plugnn.session",
    "OrtValueVector": "plugnn.session",
    "OrtDevice": "plugnn.session",
    "OrtEpAssignedNode": "plugnn.session",
    "OrtEpAssignedSubgraph": "plugnn.session",
    "OrtDeviceVendorId": "plugnn.session",
    "OrtDeviceMemoryType": "plugnn.session",
    "OrtMemoryInfoDeviceType": "plugnn.session",
    "IOBinding": "plugnn.session",
    "ModelMetadata": "plugnn.session",
    "OrtMemoryInfo": "plugnn.session",
    "OrtArenaCfg": "plugnn.session",
    "OrtAllocatorType": "plugnn.session",
    "OrtMemType": "plugnn.session",
    "create_and_register_allocator": "plugnn.session",
    "create_and_register_allocator_v2": "plugnn.session",
    "get_available_providers": "plugnn.session",
    "get_all_providers": "plugnn.session",
    "get_device": "plugnn.session",
    "check_and_normalize_provider_args": "plugnn.session",
    "set_default_logger_callback": "plugnn.session",
    "set_default_logger_severity": "plugnn.session",
    "set_default_logger_verbosity": "plugnn.session",
    "get_version_string": "plugnn.session",
    "get_build_info": "plugnn.session",
    "enable_telemetry_events": "plugnn.session",
    "disable_telemetry_events": "plugnn.session",
}

__all__ = [
    "BACKEND_API_VERSION",
    "BackendCrashedError",
    "BackendError",
    "BackendLoadError",
    "BackendOptionError",
    "ConfigurationError",
    "InputError",
    "MissingDependencyError",
    "ModelError",
    "NetworkError",
    "OptimizationError",
    "PlugnnError",
    "ProbeUnavailableError",
    "RegistryError",
    "RuntimeClosedError",
    "SessionError",
    "UnknownBackendError",
    *_LAZY,
]


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        if name == "capi":  # onnxruntime's `ort.capi.onnxruntime_pybind11_state.Fail`
            import importlib

            return importlib.import_module("plugnn.capi")
        raise AttributeError(f"module 'plugnn' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from plugnn.backend import Backend, BackendContext, MemoryManager, Workload, WorkloadFactory
    from plugnn.layers import FailedLayer, LayerSpec, OptimizationResult, Subgraph, Substitution, SupportResult
    from plugnn.loaded import LoadedNetwork
    from plugnn.network import Network, Tensor
    from plugnn.optimized import OptimizedNetwork
    from plugnn.optimizer import optimize
    from plugnn.registry import BackendRegistry
    from plugnn.runtime import Runtime
    from plugnn.session import (
        ExecutionMode,
        ExecutionOrder,
        GraphOptimizationLevel,
        InferenceSession,
        IOBinding,
        ModelMetadata,
        NodeArg,
        OrtAllocatorType,
        OrtArenaCfg,
        OrtDevice,
        OrtDeviceMemoryType,
        OrtDeviceVendorId,
        OrtEpAssignedNode,
        OrtEpAssignedSubgraph,
        OrtMemoryInfo,
        OrtMemoryInfoDeviceType,
        OrtMemType,
        OrtValue,
        OrtValueVector,
        RunOptions,
        SessionOptions,
        check_and_normalize_provider_args,
        create_and_register_allocator,
        create_and_register_allocator_v2,
        disable_telemetry_events,
        enable_telemetry_events,
        get_all_providers,
        get_available_providers,
        get_build_info,
        get_device,
        get_version_string,
        set_default_logger_callback,
        set_default_logger_severity,
        set_default_logger_verbosity,
    )
    from plugnn.tensor import DataType, TensorInfo
