"""plugnn.InferenceSession: onnxruntime's interface (get_inputs, get_outputs, run, SessionOptions,
RunOptions, OrtValue, I/O binding, profiling) over plugnn, with input shapes decided at run
time. See docs/session.md."""

from __future__ import annotations

from plugnn.session.assignment import OrtEpAssignedNode, OrtEpAssignedSubgraph
from plugnn.session.io_binding import IOBinding
from plugnn.session.memory import (
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDeviceMemoryType,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
    create_and_register_allocator,
    create_and_register_allocator_v2,
)
from plugnn.session.model import ModelMetadata, NodeArg
from plugnn.session.options import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
)
from plugnn.session.ort_logging import (
    set_default_logger_callback,
    set_default_logger_severity,
    set_default_logger_verbosity,
)
from plugnn.session.ort_value import OrtDevice, OrtDeviceVendorId, OrtValue, OrtValueVector
from plugnn.session.providers import (
    check_and_normalize_provider_args,
    get_all_providers,
    get_available_providers,
    get_device,
)
from plugnn.session.session import InferenceSession
from plugnn.session.version import disable_telemetry_events, enable_telemetry_events, get_build_info, get_version_string

__all__ = [
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "OrtAllocatorType",
    "OrtArenaCfg",
    "OrtDevice",
    "OrtEpAssignedNode",
    "OrtEpAssignedSubgraph",
    "OrtDeviceMemoryType",
    "OrtDeviceVendorId",
    "OrtMemType",
    "OrtMemoryInfo",
    "OrtMemoryInfoDeviceType",
    "OrtValue",
    "OrtValueVector",
    "RunOptions",
    "SessionOptions",
    "check_and_normalize_provider_args",
    "create_and_register_allocator",
    "create_and_register_allocator_v2",
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_device",
    "get_version_string",
    "set_default_logger_callback",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
]
