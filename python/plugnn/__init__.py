"""plugnn: a neural-network inference runtime whose compute lives in pluggable C backends.

`import plugnn` stays cheap: NumPy and the native glue load only when first used.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing costs more than all of plugnn's own
# start-up in a fresh interpreter. Type checkers treat this name as True.
TYPE_CHECKING = False

from plugnn._build_config import BACKEND_API_VERSION
from plugnn.errors import (
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
}

__all__ = [
    "BACKEND_API_VERSION",
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
    from plugnn.session import InferenceSession, NodeArg
    from plugnn.tensor import DataType, TensorInfo
