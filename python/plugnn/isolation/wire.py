"""The messages between the host and an isolated backend's worker, and how they travel.

Over one AF_UNIX stream socket, each message is an 8-byte length and a pickle; file descriptors
(shared-memory segments) ride with the length as SCM_RIGHTS. The host sends requests, a tuple
(operation, arguments...), and reads one reply per request: ("ok", value) or ("error", encoded
error). Notices (map a segment, unmap one, drop an object) get no reply; the worker handles them
in order, before the request that follows them.

What crosses is plain data: LayerSpecs and Subgraphs with constants replaced by `ShmRef`s
(their bytes are in shared memory already), PRECOMPILED payloads replaced by `PayloadRef`s
(the pointer stays in the worker, which made it), tensors as `ShmRef`s or `DeviceRef`s.
"""

from __future__ import annotations

import pickle
import select
import socket
import struct
import time
from typing import Any, NamedTuple

from plugnn import errors

_HEADER = struct.Struct("<Q")
MAX_FDS = 64
NOTICES = frozenset({"map", "unmap", "drop"})


class ShmRef(NamedTuple):
    """An array in a shared segment: segment id, byte offset, NumPy dtype, shape."""

    segment_id: int
    offset: int
    dtype: Any
    shape: tuple[int, ...]


class DeviceRef(NamedTuple):
    """A tensor in a non-host-memory backend's own memory: the worker-side handle and its info."""

    handle: int
    info: Any


class PayloadRef(NamedTuple):
    """A PRECOMPILED layer's payload, kept in the worker that made it: its handle there."""

    handle: int


class WorkerGone(Exception):
    """The other end closed the socket (the worker died or exited)."""


class TimedOut(Exception):
    """No complete reply within the time allowed."""


class Channel:
    """One end of the socket; not thread-safe (the host serializes requests)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)

    def send(self, message: Any, fds: list[int] | tuple[int, ...] = ()) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        header = _HEADER.pack(len(data))
        try:
            if fds:
                sent = socket.send_fds(self.sock, [header], list(fds))
                if sent != len(header):
                    self.sock.sendall(header[sent:])
            else:
                data = header + data
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise WorkerGone(str(exc)) from None

    def receive(self, deadline: float | None = None) -> tuple[Any, list[int]]:
        """The next message and the descriptors that came with it; `deadline` (time.monotonic)
        bounds the wait (TimedOut). KeyboardInterrupt (Ctrl-C) propagates from the wait."""
        fds: list[int] = []
        header = b""
        while len(header) < _HEADER.size:
            self._wait(deadline)
            try:
                chunk, more, _, _ = socket.recv_fds(self.sock, _HEADER.size - len(header), MAX_FDS)
            except (ConnectionResetError, BrokenPipeError):
                chunk, more = b"", []
            if not chunk:
                raise WorkerGone("the worker closed its socket")
            header += chunk
            fds += more
        (size,) = _HEADER.unpack(header)
        body = bytearray(size)
        view = memoryview(body)
        got = 0
        while got < size:
            self._wait(deadline)
            try:
                n = self.sock.recv_into(view[got:])
            except (ConnectionResetError, BrokenPipeError):
                n = 0
            if n == 0:
                raise WorkerGone("the worker closed its socket")
            got += n
        return pickle.loads(body), fds

    def _wait(self, deadline: float | None) -> None:
        if deadline is None:
            timeout = -1
        else:
            timeout = int(max(0.0, deadline - time.monotonic()) * 1000) + 1
        while True:
            if self._poll.poll(timeout):
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise TimedOut()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# ---- errors across the socket ----------------------------------------------------------------


def encode_error(exc: BaseException) -> tuple[Any, ...]:
    """A worker-side exception as plain data: a BackendError keeps its fields."""
    if isinstance(exc, errors.BackendError):
        return ("backend", type(exc).__name__, exc.backend_id, exc.call, exc.message, exc.status)
    if isinstance(exc, errors.BackendLoadError):
        return ("load", exc.path, exc.reason, exc.backend_id)
    if isinstance(exc, errors.PlugnnError):
        return ("plugnn", type(exc).__name__, str(exc))
    return ("other", type(exc).__name__, str(exc))


def decode_error(encoded: tuple[Any, ...], backend_id: str, call: str) -> Exception:
    """The host-side exception for an encoded one: the same BackendError subclass with the same
    fields, another PlugnnError by name where it takes a message, else a BackendError."""
    kind = encoded[0]
    if kind == "backend":
        _, name, b_id, b_call, message, status = encoded
        cls = getattr(errors, name, errors.BackendError)
        if not (isinstance(cls, type) and issubclass(cls, errors.BackendError)) or cls is errors.BackendCrashedError:
            cls = errors.BackendError
        return cls(b_id, b_call, message, status)
    if kind == "load":
        return errors.BackendLoadError(encoded[1], encoded[2], encoded[3])
    _, name, text = encoded
    cls = getattr(errors, name, None)
    simple = (errors.PlugnnError, errors.NetworkError, errors.OptimizationError, errors.InputError,
              errors.RuntimeClosedError, errors.ConfigurationError)
    if kind == "plugnn" and cls in simple:
        return cls(text)  # type: ignore[no-any-return]
    return errors.BackendError(backend_id, call, f"{name}: {text}" if kind == "other" else text)
