"""plugnn.InferenceSession: onnxruntime's interface (get_inputs, get_outputs, run) over plugnn,
with input shapes decided at run time. See docs/session.md."""

from __future__ import annotations

from plugnn.session.model import NodeArg
from plugnn.session.session import InferenceSession

__all__ = ["InferenceSession", "NodeArg"]
