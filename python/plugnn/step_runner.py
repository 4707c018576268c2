"""Runs of consecutive native workloads called in one call: the runtime's step runner.

`LoadedNetwork.run` calls its steps in order. A native workload's step (`BoundExecution`) is one
call from Python into the plugin, about 0.4 us each; a BERT-like model of 30 layers pays 12 us a
run for it. `batched` groups each run of two or more consecutive native steps into one call of
`pnr_run_steps` (native/runner/plugnn_runner.h, the package's lib/libplugnn_runner.so; its
declarations are in the ABI's generated cffi module), which
calls the same `execute` functions with the same arguments in the same order and stops at the
first failure; that step's error is raised as the step itself would raise it. Other steps
(Python backends, runtime copies) stay calls of their own.

Ctrl-C: a batch runs with the GIL released, so Python could run its SIGINT handler only once
the whole batch was done. On the main thread (where Python runs signal handlers), a run first
calls `pnr_watch_interrupts` (the runner's C handler is chained before Python's: it sets a flag)
and the batch is called through `pnr_run_steps_checked`, which stops before the next layer once
the flag is set; Python then runs its handler (KeyboardInterrupt leaves run(); a handler that
returns lets the run go on with the layers left). A layer's own kernel is not interrupted.

The environment variable PLUGNN_STEP_RUNNER names another copy of the library (scripts/
sanitize.sh points it at the sanitizer build's). If the library cannot be loaded, a warning is
logged once and every step is called on its own, as before.
"""

from __future__ import annotations

import _signal  # getsignal without signal's enum conversion: 2 us a run -> 0.03
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from plugnn._abi import ffi
from plugnn.errors import RuntimeClosedError
from plugnn.native import BoundExecution
from plugnn.runner_library import runner_library

log = logging.getLogger("plugnn")

INTERRUPTED = -1  # pnr_run_steps_checked's status when it stopped for an interrupt (PNR_INTERRUPTED)
_MAIN_THREAD = threading.main_thread().ident

class NativeRun:
    """Consecutive native steps as one callable: one call into the runner."""

    __slots__ = ("steps", "_array", "_count", "_status", "_run", "_watch")

    def __init__(self, steps: Sequence[BoundExecution], library: Any) -> None:
        self.steps = list(steps)
        self._array = ffi.new("pnr_step[]", len(self.steps))
        for entry, step in zip(self._array, self.steps):
            entry.workload = step._workload._c
            entry.args = step._args
            entry.message = step._message.out
        self._count = len(self.steps)
        self._status = ffi.new("int32_t*")
        self._run = library.pnr_run_steps_checked
        self._watch = library.pnr_watch_interrupts

    def replace(self, index: int, step: BoundExecution) -> None:
        """Run `step` in place of step `index` (a layer given a new workload)."""
        self.steps[index] = step
        entry = self._array[index]
        entry.workload = step._workload._c
        entry.args = step._args
        entry.message = step._message.out

    def __call__(self) -> None:
        first = self.steps[0]._workload
        if first.closed:
            raise RuntimeClosedError(f"workload of layer {first.layer_name!r} is closed")
        check = threading.get_ident() == _MAIN_THREAD and _watching(self._watch)
        done = self._run(self._array, self._count, self._status, check)
        while done != self._count and self._status[0] == INTERRUPTED:
            _let_python_handle_signals()  # a KeyboardInterrupt leaves here, between two layers
            done += self._run(self._array + done, self._count - done, self._status, check)
        if done != self._count:
            workload = self.steps[done]._workload
            workload._check(int(self._status[0]), f"execute(layer {workload.layer_name!r})")


_watched: list[Any] = [None, False]  # Python's SIGINT handler when the runner's was chained to it, chained


def _watching(watch: Callable[[], int]) -> bool:
    """Whether the runner's SIGINT handler is chained before Python's: pnr_watch_interrupts (a
    system call, about 1 us) only when Python's handler changed since the last time (0.1 us)."""
    handler = _signal.getsignal(signal.SIGINT)
    if handler is not _watched[0]:
        _watched[0], _watched[1] = handler, watch() == 0
    return bool(_watched[1])


def _let_python_handle_signals() -> None:
    """A call: Python runs pending signal handlers on entering it (eval breaker)."""


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
