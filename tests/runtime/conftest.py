from __future__ import annotations

from collections.abc import Iterator

import pytest

from plugnn import BackendRegistry, Runtime
from pybackends import PyDevice, PyRefuser, PySoftmax


@pytest.fixture
def runtime(no_static_backends: None) -> Iterator[Runtime]:
    """A runtime with the bundled CpuRef and the Python test backends PySoftmax, PyRefuser, PyDevice."""
    BackendRegistry.register("PySoftmax", PySoftmax)
    BackendRegistry.register("PyRefuser", PyRefuser)
    BackendRegistry.register("PyDevice", PyDevice)
    with Runtime() as rt:
        yield rt
