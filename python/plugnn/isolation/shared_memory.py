"""Shared-memory segments: memory the host and an isolated backend's worker both map.

A `Segment` is an anonymous file (memfd) mapped in the host; its file descriptor travels to a
worker over the worker's socket (SCM_RIGHTS) the first time a call refers to it, and the worker
maps the same pages (`WorkerMapping`), so a tensor the worker writes is the one the host reads.
The host finds the segment and offset of any array inside one with `locate`. A segment lives
while its array (or any view of it) does; when it goes, every worker that mapped it is told to
unmap it (with the next message it gets).

In the worker, each segment is mapped between two inaccessible guard regions (`GUARD_BYTES` each
side), so a kernel that writes far past its output (or before its input) faults in the worker
instead of landing in another network's tensors.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

PAGE = mmap.PAGESIZE
GUARD_BYTES = 1 << 30  # address space only (PROT_NONE, MAP_NORESERVE): no memory is committed


def _page_rounded(n: int) -> int:
    return max(PAGE, (n + PAGE - 1) // PAGE * PAGE)


class Segment:
    """One memfd of `size` bytes mapped in this process; `array` is a uint8 array over all of it."""

    _ids = iter(range(1, 1 << 62))

    def __init__(self, num_bytes: int, name: str = "plugnn", read_only: bool = False) -> None:
        self.read_only = read_only  # mapped read-only in workers (constants)
        self.size = _page_rounded(num_bytes)
        self.id = next(Segment._ids)
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, self.size)
            self._map = mmap.mmap(self.fd, self.size)
        except BaseException:
            os.close(self.fd)
            raise
        self.array = np.frombuffer(self._map, np.uint8)
        self.address = int(self.array.ctypes.data)
        _register(self)
        weakref.finalize(self.array, _release, self.id, self.fd, self._map)


# ---- the host's table of live segments (address -> segment) ----------------------------------

_lock = threading.Lock()
_starts: list[int] = []
_by_start: dict[int, tuple[int, int, int, bool]] = {}  # start -> (end, id, fd, read-only in workers)
_listeners: weakref.WeakSet[Any] = weakref.WeakSet()  # workers told when a segment goes (.segment_gone)


def _register(segment: Segment) -> None:
    with _lock:
        bisect.insort(_starts, segment.address)
        _by_start[segment.address] = (segment.address + segment.size, segment.id, segment.fd, segment.read_only)


def _release(segment_id: int, fd: int, mapping: mmap.mmap) -> None:
    with _lock:
        start = next((s for s, entry in _by_start.items() if entry[1] == segment_id), None)
        if start is not None:
            del _by_start[start]
            _starts.remove(start)
        listeners = list(_listeners)
    for listener in listeners:
        listener.segment_gone(segment_id)
    try:
        mapping.close()
    except BufferError:  # still exported somewhere: the mapping goes with its last view
        pass
    os.close(fd)


def add_listener(listener: Any) -> None:
    """`listener.segment_gone(segment_id)` is called whenever a segment is released."""
    _listeners.add(listener)


class Location:
    """Where an array lies in shared memory: segment id, byte offset, the segment's fd (to send
    it to a worker that has not mapped it yet), size, and whether workers map it read-only."""

    __slots__ = ("segment_id", "offset", "fd", "size", "read_only")

    def __init__(self, segment_id: int, offset: int, fd: int, size: int, read_only: bool) -> None:
        self.segment_id = segment_id
        self.offset = offset
        self.fd = fd
        self.size = size
        self.read_only = read_only


def locate(array: Any) -> Location | None:
    """The segment and offset holding all of `array`'s bytes, or None (not in shared memory)."""
    if not isinstance(array, np.ndarray):
        return None
    address = int(array.ctypes.data)
    end = address + array.nbytes
    with _lock:
        i = bisect.bisect_right(_starts, address) - 1
        if i < 0:
            return None
        start = _starts[i]
        seg_end, segment_id, fd, read_only = _by_start[start]
    if end > seg_end:
        return None
    return Location(segment_id, address - start, fd, seg_end - start, read_only)


def shared_array(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A new zeroed array in its own shared-memory segment. Bound as a network input or output of
    a layer on an isolated backend, it is passed to the worker in place (not copied per run)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    segment = Segment(count * dtype.itemsize)
    return segment.array[:count * dtype.itemsize].view(dtype).reshape(shape)


class Pool:
    """Small blocks carved from large segments (`chunk_bytes`), so that a model of a thousand
    constants holds a few file descriptors, not a thousand. A segment's pages are committed only when written, so
    a chunk's unused tail costs nothing; a chunk goes when the pool has moved on and every block
    cut from it is gone (each block is a view of it). A block of more than a quarter of a chunk
    gets a segment of its own."""

    def __init__(self, name: str, read_only: bool = False, chunk_bytes: int = 256 << 20) -> None:
        self._name = name
        self._read_only = read_only
        self._chunk_bytes = chunk_bytes
        self._chunk: np.ndarray | None = None
        self._used = 0
        self._lock = threading.Lock()

    def take(self, num_bytes: int) -> np.ndarray:
        """A uint8 array of `num_bytes` in shared memory, 64-byte aligned."""
        size = (num_bytes + 63) // 64 * 64
        if size > self._chunk_bytes // 4:
            return Segment(num_bytes, self._name, self._read_only).array[:num_bytes]
        with self._lock:
            if self._chunk is None or self._used + size > len(self._chunk):
                self._chunk = Segment(self._chunk_bytes, self._name, self._read_only).array
                self._used = 0
            block = self._chunk[self._used:self._used + num_bytes]
            self._used += size
        return block


# ---- the worker's side: segments mapped between guard regions ---------------------------------

_libc: Any = None


def _c() -> Any:
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = libc
    return _libc


_MAP_FAILED = ctypes.c_void_p(-1).value
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)
_MAP_FIXED = 0x10
_PROT_NONE = 0


class WorkerMapping:
    """A segment mapped in the worker between two PROT_NONE guards (read-only when asked: a
    plugin that writes into a constant then faults); `array` is uint8 over it. `close()` unmaps
    it (nothing may use its memory afterwards)."""

    def __init__(self, fd: int, size: int, read_only: bool = False) -> None:
        libc = _c()
        total = size + 2 * GUARD_BYTES
        base = libc.mmap(None, total, _PROT_NONE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        if base in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"reserving {total} bytes of address space failed")
        protection = mmap.PROT_READ if read_only else mmap.PROT_READ | mmap.PROT_WRITE
        where = libc.mmap(base + GUARD_BYTES, size, protection, mmap.MAP_SHARED | _MAP_FIXED, fd, 0)
        if where in (None, _MAP_FAILED):
            err = ctypes.get_errno()
            libc.munmap(base, total)
            raise OSError(err, "mapping a shared segment failed")
        self._base, self._total = base, total
        self.size = size
        self.address = int(where)
        self.array = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(self.address))

    def view(self, offset: int, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        return self.array[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)

    def close(self) -> None:
        if self._base:
            _c().munmap(self._base, self._total)
            self._base = 0


Listener = Callable[[int], None]
