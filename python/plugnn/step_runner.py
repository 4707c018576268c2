"""Runs of consecutive native workloads called in one call: the runtime's step runner.

`LoadedNetwork.run` calls its steps in order. A native workload's step (`BoundExecution`) is one
call from Python into the plugin, about 0.4 us each; a BERT-like model of 30 layers pays 12 us a
run for it. `batched` groups each run of two or more consecutive native steps into one call of
`pnr_run_steps` (native/runner/plugnn_runner.h, the package's lib/libplugnn_runner.so; its
declarations are in the ABI's generated cffi module), which
calls the same `execute` functions with the same arguments in the same order and stops at the
first failure; that step's error is raised as the step itself would raise it. Other steps
(Python backends, runtime copies) stay calls of their own.

The environment variable PLUGNN_STEP_RUNNER names another copy of the library (scripts/
sanitize.sh points it at the sanitizer build's). If the library cannot be loaded, a warning is
logged once and every step is called on its own, as before.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from plugnn import _build_config
from plugnn._abi import ffi
from plugnn.errors import RuntimeClosedError
from plugnn.native import BoundExecution

log = logging.getLogger("plugnn")

LIBRARY_ENV = "PLUGNN_STEP_RUNNER"  # another libplugnn_runner (the sanitizer build's)
LIBRARY = os.environ.get(LIBRARY_ENV) or os.path.join(
    _build_config.INSTALL_DIR, "lib", "libplugnn_runner.dylib" if sys.platform == "darwin" else "libplugnn_runner.so")

_library: Any = None
_loaded = False


def runner_library() -> Any:
    """The loaded step runner, or None (logged once) when it cannot be loaded."""
    global _library, _loaded
    if not _loaded:
        _loaded = True
        try:
            _library = ffi.dlopen(LIBRARY)
        except OSError as exc:
            log.warning("plugnn: the step runner %s did not load (%s); each layer is called on its own", LIBRARY, exc)
    return _library


class NativeRun:
    """Consecutive native steps as one callable: one call into the runner."""

    __slots__ = ("steps", "_array", "_count", "_status", "_run")

    def __init__(self, steps: Sequence[BoundExecution], library: Any) -> None:
        self.steps = list(steps)
        self._array = ffi.new("pnr_step[]", len(self.steps))
        for entry, step in zip(self._array, self.steps):
            entry.workload = step._workload._c
            entry.args = step._args
            entry.message = step._message.out
        self._count = len(self.steps)
        self._status = ffi.new("int32_t*")
        self._run = library.pnr_run_steps

    def __call__(self) -> None:
        first = self.steps[0]._workload
        if first.closed:
            raise RuntimeClosedError(f"workload of layer {first.layer_name!r} is closed")
        done = self._run(self._array, self._count, self._status)
        if done != self._count:
            workload = self.steps[done]._workload
            workload._check(int(self._status[0]), f"execute(layer {workload.layer_name!r})")


def batched(calls: Sequence[Callable[[], None]]) -> list[Callable[[], None]]:
    """`calls` in order, each run of two or more consecutive native steps (BoundExecution) as one
    NativeRun; unchanged when the runner library is not there."""
    library = runner_library()
    if library is None:
        return _grouped(list(calls))
    out: list[Callable[[], None]] = []
    pending: list[BoundExecution] = []

    def flush() -> None:
        if len(pending) >= 2:
            out.append(NativeRun(pending, library))
        else:
            out.extend(pending)
        pending.clear()

    for call in calls:
        if type(call) is BoundExecution:
            pending.append(call)
        else:
            flush()
            out.append(call)
    flush()
    return _grouped(out)


def _grouped(calls: list[Callable[[], None]]) -> list[Callable[[], None]]:
    """Each run of two or more consecutive calls with the same `batch_group` (an isolated
    backend's worker, plugnn.isolation) as one call of the group's: one request to the worker."""
    out: list[Callable[[], None]] = []
    i = 0
    while i < len(calls):
        group = getattr(calls[i], "batch_group", None)
        j = i + 1
        while group is not None and j < len(calls) and getattr(calls[j], "batch_group", None) is group:
            j += 1
        if j - i >= 2:
            from plugnn.isolation.proxy import RemoteRun

            out.append(RemoteRun(calls[i:j]))  # type: ignore[arg-type]
        else:
            out.append(calls[i])
        i = j
    return out
