"""A session cannot be created on a runtime that was closed (borrowed: runtime=)."""

from __future__ import annotations

import pytest

import plugnn
from plugnn.errors import RuntimeClosedError

from .models import cnn


def test_a_session_cannot_borrow_a_closed_runtime() -> None:
    runtime = plugnn.Runtime()
    runtime.close()
    with pytest.raises(RuntimeClosedError, match="cannot create a session on .*: the runtime is closed"):
        plugnn.InferenceSession(cnn().SerializeToString(), runtime=runtime, backends=["CpuRef"])
