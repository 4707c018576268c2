"""onnxruntime's `onnxruntime.capi.onnxruntime_inference_collection` names, for plugnn: the
session-level classes and check_and_normalize_provider_args."""

from __future__ import annotations

from plugnn.session.io_binding import IOBinding
from plugnn.session.model import NodeArg
from plugnn.session.ort_value import OrtDevice, OrtValue
from plugnn.session.providers import check_and_normalize_provider_args
from plugnn.session.session import InferenceSession

__all__ = ["IOBinding", "InferenceSession", "NodeArg", "OrtDevice", "OrtValue", "check_and_normalize_provider_args"]
