"""Fixtures of the isolation tests: runtimes that run the mock `fault_by_name` (MockFault, whose
RELU dies the way its layer's name says) or the bundled CpuRef in a worker process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plugnn import Runtime
from plugnn.loader import BUNDLED_DIR, ENV_VAR


@pytest.fixture
def fault_dir(plugin_dir: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The search list: a directory holding MockFault, then the bundled backends."""
    directory = plugin_dir("fault_by_name", name="fault")
    monkeypatch.setenv(ENV_VAR, f"{directory}:{BUNDLED_DIR}")
    monkeypatch.delenv("PLUGNN_ISOLATE", raising=False)
    monkeypatch.delenv("PLUGNN_ISOLATE_WATCHDOG", raising=False)
    return directory


@pytest.fixture
def isolated(fault_dir: Path) -> Iterator[Callable[..., Runtime]]:
    """isolated(watchdog=...): a runtime with MockFault isolated (and CpuRef, CpuAcc in-process)."""
    made: list[Runtime] = []

    def make(**kwargs: Any) -> Runtime:
        runtime = Runtime(isolate={"MockFault": "process", **kwargs.pop("isolate", {})}, **kwargs)
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        runtime.close()
