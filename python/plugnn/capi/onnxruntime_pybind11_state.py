"""onnxruntime's `onnxruntime.capi.onnxruntime_pybind11_state` names, for plugnn: the error
classes a script catches and the option and value classes it takes from here (plugnn.capi)."""

from __future__ import annotations

from plugnn.session.memory import (
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDeviceMemoryType,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
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
from plugnn.session.ort_errors import (
    DeviceReset,
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoadCanceled,
    ModelLoaded,
    ModelRequiresCompilation,
    NoModel,
    NoSuchFile,
    NotFound,
    NotImplemented,
    RuntimeException,
)
from plugnn.session.ort_value import OrtDevice, OrtDeviceVendorId, OrtValue, OrtValueVector, is_dlpack_uint8_tensor
from plugnn.session.providers import get_all_providers, get_available_providers, get_device
from plugnn.session.version import disable_telemetry_events, enable_telemetry_events, get_build_info, get_version_string

__all__ = [
    "DeviceReset", "EPFail", "EngineError", "ExecutionMode", "ExecutionOrder", "Fail", "GraphOptimizationLevel",
    "InvalidArgument", "InvalidGraph", "InvalidProtobuf", "ModelLoadCanceled", "ModelLoaded", "ModelMetadata",
    "ModelRequiresCompilation", "NoModel", "NoSuchFile", "NodeArg", "NotFound", "NotImplemented", "OrtAllocatorType",
    "OrtArenaCfg", "OrtDevice", "OrtDeviceMemoryType", "OrtDeviceVendorId", "OrtMemType", "OrtMemoryInfo",
    "OrtMemoryInfoDeviceType", "OrtValue", "OrtValueVector", "RunOptions",
    "RuntimeException", "SessionOptions", "disable_telemetry_events", "enable_telemetry_events", "get_all_providers",
    "get_available_providers", "get_build_info", "get_device", "get_version_string", "set_default_logger_callback",
    "set_default_logger_severity",
    "set_default_logger_verbosity", "is_dlpack_uint8_tensor",
]
