"""The host's side of one worker process: starting it, requests with a watchdog, and turning its
death into a BackendCrashedError.

Requests are serialized (one lock per worker): two networks running at once on one isolated
backend take turns for its calls. Notices (drop an object, unmap a segment) are queued from
anywhere, garbage collection included, and sent before the next request.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn.errors import BackendCrashedError, BackendLoadError, RuntimeClosedError
from plugnn.isolation import shared_memory
from plugnn.isolation.shared_memory import Location, Segment
from plugnn.isolation.wire import Channel, TimedOut, WorkerGone, decode_error
from plugnn.supervisor import child_environment, signal_name

log = logging.getLogger("plugnn")

# How long close() waits for a worker to exit by itself before killing it.
EXIT_GRACE_SECONDS = 5.0
# The watchdog of the first request (loading the plugin) is at least this long.
START_SECONDS = 30.0


class WorkerProcess:
    """One worker: `python -m plugnn.isolation.worker` serving one plugin file."""

    def __init__(self, path: str, api_version: tuple[int, int], watchdog: float | None, name: str) -> None:
        self.path = path
        self.watchdog = watchdog
        self.name = name  # the backend id, once known (for messages)
        self.failure: BackendCrashedError | None = None
        self.closed = False
        self.failure_summary = ""  # one line for support queries and explain()
        self._lock = threading.Lock()
        self._pending: deque[tuple[Any, ...]] = deque()
        self._mapped: set[int] = set()
        self.layers: dict[int, str] = {}  # prepared handle -> layer name, to name a crash's layer
        self._status = Segment(shared_memory.PAGE, "plugnn-status")
        self._status_word = self._status.array.view(np.int64)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.channel = Channel(ours)
        env = _environment()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "plugnn.isolation.worker", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        except OSError as exc:
            self.channel.close()
            raise BackendLoadError(path, f"cannot start a worker process: {exc}") from None
        finally:
            theirs.close()
        self.pid = self.process.pid
        self.owner_pid = os.getpid()  # a forked child must not talk to its parent's worker
        shared_memory.add_listener(self)
        status = shared_memory.locate(self._status_word)
        assert status is not None
        self.hello = self.request("hello", path, tuple(api_version), status.segment_id, maps=[status],
                                  call="loading the plugin", minimum=START_SECONDS)

    # -- notices, from any thread (and from garbage collection) ----------------------------------

    def segment_gone(self, segment_id: int) -> None:
        if segment_id in self._mapped:
            self._pending.append(("unmap", segment_id))

    def drop(self, handle: int) -> None:
        self._pending.append(("drop", handle))
        self.layers.pop(handle, None)

    # -- requests -------------------------------------------------------------------------------

    def request(self, op: str, *args: Any, maps: Sequence[Location] = (), call: str = "",
                layer: str | None = None, minimum: float = 0.0) -> Any:
        """Send one request and return the worker's answer (its error raised as the same type).
        A worker that dies, hangs past the watchdog, or is interrupted (Ctrl-C) makes this a
        BackendCrashedError (KeyboardInterrupt for Ctrl-C) and the worker failed for good."""
        call = call or op
        with self._lock:
            if os.getpid() != self.owner_pid:
                raise RuntimeClosedError(f"backend {self.name!r}: {call}: its worker process {self.pid} belongs to "
                                         f"process {self.owner_pid}; in this forked child, "
                                         f"Runtime.restart_backend({self.name!r}) starts one of its own")
            if self.closed:
                raise RuntimeClosedError(f"backend {self.name!r}: {call}: its worker process {self.pid} was closed "
                                         f"(Runtime.restart_backend or close), and what it held with it: load "
                                         f"the network again")
            if self.failure is not None:
                raise self._failed_again(call)
            try:
                self._flush(maps)
                self.channel.send((op, *args))
                deadline = None if self.watchdog is None else time.monotonic() + max(self.watchdog, minimum)
                (status, value), _ = self.channel.receive(deadline)
            except TimedOut:
                raise self._crashed(call, layer, timed_out=True) from None
            except WorkerGone:
                raise self._crashed(call, layer) from None
            except KeyboardInterrupt:
                self._crashed(call, layer, interrupted=True)
                raise
        if status == "error":
            raise decode_error(value, self.name, call)
        return value

    def _flush(self, maps: Sequence[Location]) -> None:
        pending = self._pending
        while pending:
            notice = pending.popleft()
            if notice[0] == "unmap":
                self._mapped.discard(notice[1])
            self.channel.send(notice)
        for loc in maps:
            if loc.segment_id not in self._mapped:
                self.channel.send(("map", loc.segment_id, loc.size, loc.read_only), [loc.fd])
                self._mapped.add(loc.segment_id)

    # -- failures -------------------------------------------------------------------------------

    def _crashed(self, call: str, layer: str | None, timed_out: bool = False,
                 interrupted: bool = False) -> BackendCrashedError:
        running = int(self._status_word[0])
        if running and running in self.layers:
            layer = self.layers[running]
            call = f"execute(layer {layer!r})"
        if timed_out or interrupted:
            self._kill()
        code = self._reap()
        sig = signal_name(-code) if code is not None and code < 0 else None
        status = code if code is not None and code >= 0 else None
        if timed_out:
            how = f"gave no answer within the {self.watchdog:g} s watchdog and was killed"
        elif interrupted:
            how = "was stopped by the runtime at Ctrl-C (KeyboardInterrupt)"
        elif sig is not None:
            how = f"was killed by {sig}"
        elif status is not None:
            how = f"exited with status {status}"
        else:
            how = "closed its socket"
        message = (f"the backend's worker process (pid {self.pid}) {how}; the backend is marked failed: "
                   f"re-optimize to run its layers on the next preferred backend, or start a new worker "
                   f"with Runtime.restart_backend({self.name!r})")
        error = BackendCrashedError(self.name, call, message, layer=layer,
                                    signal="SIGKILL" if timed_out or interrupted else sig, exit_status=status,
                                    timed_out=timed_out, interrupted=interrupted, pid=self.pid)
        self.failure = error
        self.failure_summary = f"its worker process {self.pid} {how} in {call}"
        self.channel.close()
        log.warning("%s", error)
        return error

    def _failed_again(self, call: str) -> BackendCrashedError:
        first = self.failure
        assert first is not None
        return BackendCrashedError(self.name, call, f"the backend failed earlier: {first.call}: {first.message}",
                                   layer=first.layer, signal=first.signal, exit_status=first.exit_status,
                                   timed_out=first.timed_out, interrupted=first.interrupted, pid=first.pid)

    def _kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)  # its own session: the plugin's children too
        except OSError:
            pass

    def _reap(self) -> int | None:
        try:
            return self.process.wait(timeout=EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill()
            return self.process.wait()

    # -- the end ----------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.failure is None and self.process.poll() is None

    def close(self) -> None:
        """Destroy the backend's objects in the worker and end it (killed if it does not exit)."""
        if self.closed:
            return
        if os.getpid() != self.owner_pid:  # the parent's worker: leave it to the parent
            self.closed = True
            return
        if self.failure is None and self.process.poll() is None:
            try:
                self.request("close", call="close")
            except Exception as exc:  # closing goes on: the process is ended below whatever it did
                log.debug("closing worker %d of %s: %s", self.pid, self.name, exc)
        self.channel.close()
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=EXIT_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self._kill()
                self.process.wait()
        self.closed = True


def _environment() -> dict[str, str]:
    """The environment of a child that runs plugin code (plugnn.supervisor: a preloaded
    sanitizer's signal handling off), with this process's plugnn first on the path."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    return child_environment(PYTHONPATH=path)

