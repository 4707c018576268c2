"""onnxruntime's error class names, as subclasses of plugnn's errors.

Code written for onnxruntime catches `onnxruntime.capi.onnxruntime_pybind11_state.Fail`,
`InvalidArgument`, `NoSuchFile`, ...; plugnn.capi.onnxruntime_pybind11_state exports these
classes under those names. Each is the plugnn error that means the same thing (an
`InvalidArgument` is an `InputError`, a `NoSuchFile` a `ModelError`), so `except
plugnn.PlugnnError` catches them all and `except InvalidArgument` catches what onnxruntime's
would. Messages are plugnn's (they name the model, input and what was expected), without
onnxruntime's "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT :" prefix: plugnn does not pretend
to be onnxruntime.
"""

from __future__ import annotations

import builtins

from plugnn.errors import InputError, ModelError, PlugnnError, RunStoppedError, SessionError


class Fail(PlugnnError, RuntimeError):
    """A request plugnn cannot carry out (onnxruntime's FAIL): a bad provider in set_providers,
    a config key that was never set, a run stopped by RunOptions.terminate."""


class InvalidArgument(InputError):
    """A run's inputs, outputs or options do not fit the model (onnxruntime's INVALID_ARGUMENT)."""


class NoSuchFile(ModelError):
    """The model file does not exist (onnxruntime's NO_SUCHFILE)."""


class NoModel(SessionError):
    """No model was given (onnxruntime's NO_MODEL)."""


class ModelLoaded(SessionError):
    """The session already holds its model (onnxruntime's MODEL_LOADED)."""


class InvalidProtobuf(ModelError):
    """The model's bytes are not an ONNX ModelProto (onnxruntime's INVALID_PROTOBUF)."""


class InvalidGraph(ModelError):
    """The model's graph is malformed (onnxruntime's INVALID_GRAPH)."""


class NotImplemented(PlugnnError, builtins.NotImplementedError):  # noqa: A001 - onnxruntime's name
    """Something plugnn does not do: an operator it lacks, a custom-op library, a device it has
    no backend for (onnxruntime's NOT_IMPLEMENTED)."""


class EngineError(PlugnnError, RuntimeError):
    """onnxruntime's ENGINE_ERROR; plugnn raises BackendError for a backend's failure."""


class RuntimeException(PlugnnError, RuntimeError):
    """onnxruntime's RUNTIME_EXCEPTION."""


class EPFail(PlugnnError, RuntimeError):
    """onnxruntime's EP_FAIL (an execution provider failed); plugnn raises BackendError."""


class ModelLoadCanceled(SessionError):
    """onnxruntime's MODEL_LOAD_CANCELED."""


class ModelRequiresCompilation(SessionError):
    """onnxruntime's MODEL_REQUIRES_COMPILATION."""


class NotFound(PlugnnError, LookupError):
    """onnxruntime's NOT_FOUND."""


class DeviceReset(PlugnnError, RuntimeError):
    """onnxruntime's DEVICE_RESET."""


ORT_ERRORS = (Fail, InvalidArgument, NoSuchFile, NoModel, ModelLoaded, InvalidProtobuf, InvalidGraph,
              NotImplemented, EngineError, RuntimeException, EPFail, ModelLoadCanceled, ModelRequiresCompilation,
              NotFound, DeviceReset)


class OperatorNotImplemented(ModelError, NotImplemented):
    """A model with an operator plugnn does not have: a ModelError, which `except
    NotImplemented` (onnxruntime's class for a node without a kernel) catches too."""


class RunTerminated(RunStoppedError, Fail):
    """A run stopped by RunOptions.terminate: plugnn's RunStoppedError, and onnxruntime's Fail
    ("Exiting due to terminate flag being set to true")."""
