"""The worker process of an isolated backend: `python -m plugnn.isolation.worker <socket fd>`.

It loads one plugin with the runtime's own loader (the same entry-point, id and version checks)
and serves the host's requests over the socket (plugnn.isolation.wire) with the runtime's own
native proxies (plugnn.native): every layer the host sends becomes the same C structs, through
the same marshalling, as in-process. The backend object, its memory manager, factories,
workloads, contexts and PRECOMPILED payloads live here; the host holds handles to them. Tensors
are views of shared-memory segments the host created (plugnn.isolation.shared_memory).

Before each execute the worker writes the handle of the prepared workload it is about to call
into the status segment the host gave it, so that if the plugin kills this process the host can
name the layer. Ctrl-C is the host's to handle: this process ignores SIGINT, and it exits when
the host closes the socket, or within a second of the host's death even while a plugin call
hangs.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

import numpy as np

from plugnn.isolation.shared_memory import WorkerMapping
from plugnn.isolation.wire import NOTICES, Channel, DeviceRef, PayloadRef, ShmRef, WorkerGone, encode_error


class Worker:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.backend: Any = None
        self.mappings: dict[int, WorkerMapping] = {}
        self.objects: dict[int, Any] = {}
        self.prepared: dict[int, Any] = {}
        self._next = 1
        self.status: Any = None  # int64[1]: the prepared workload being executed, else 0

    # -- handles ---------------------------------------------------------------------------------

    def _keep(self, obj: Any) -> int:
        handle = self._next
        self._next += 1
        self.objects[handle] = obj
        return handle

    def array(self, ref: Any) -> Any:
        if isinstance(ref, ShmRef):
            return self.mappings[ref.segment_id].view(ref.offset, ref.dtype, tuple(ref.shape))
        if isinstance(ref, DeviceRef):
            return self.objects[ref.handle]
        raise TypeError(f"not a tensor reference: {type(ref).__name__}")

    def spec(self, spec: Any) -> Any:
        """A host LayerSpec with its references resolved: constants as arrays in shared memory,
        a PRECOMPILED payload as the worker's own."""
        constants = tuple(None if c is None else self.array(c) for c in spec.constants)
        descriptor = spec.descriptor
        payload = getattr(descriptor, "payload", None)
        if isinstance(payload, PayloadRef):
            descriptor = dataclasses.replace(descriptor, payload=self.objects[payload.handle])
        return dataclasses.replace(spec, constants=constants, descriptor=descriptor)

    # -- the loop ----------------------------------------------------------------------------------

    def serve(self) -> None:
        failed: Exception | None = None  # a notice that failed, reported with the next answer
        while True:
            try:
                message, fds = self.channel.receive()
            except WorkerGone:
                return
            op, args = message[0], message[1:]
            if op in NOTICES:
                try:
                    getattr(self, "on_" + op)(*args, fds=fds)
                except Exception as exc:  # reported as the answer to the next request
                    failed = failed or exc
                continue
            try:
                if failed is not None:
                    raise failed
                value = getattr(self, "on_" + op)(*args)
                reply: tuple[Any, ...] = ("ok", value)
            except Exception as exc:  # every failure goes back to the host as data
                reply = ("error", encode_error(exc))
            failed = None
            try:
                self.channel.send(reply)
            except WorkerGone:
                return
            if op == "close":
                return

    # -- notices -------------------------------------------------------------------------------

    def on_map(self, segment_id: int, size: int, read_only: bool, fds: list[int]) -> None:
        try:
            self.mappings[segment_id] = WorkerMapping(fds[0], size, read_only)
        finally:
            for fd in fds:
                os.close(fd)

    def on_unmap(self, segment_id: int, fds: list[int]) -> None:
        mapping = self.mappings.pop(segment_id, None)
        if mapping is not None:
            mapping.close()

    def on_drop(self, handle: int, fds: list[int]) -> None:
        self.prepared.pop(handle, None)
        obj = self.objects.pop(handle, None)
        if obj is None:
            return
        from plugnn._marshal import NativePayload

        if isinstance(obj, NativePayload):
            obj.release()
        else:
            close = getattr(obj, "close", None)  # a prepared workload has none: it just goes
            if close is not None:
                close()

    # -- the backend --------------------------------------------------------------------------------

    def on_hello(self, path: str, api_version: tuple[int, int], status_segment: int) -> dict[str, Any]:
        from plugnn.loader import create_backend, load_shared_object

        self.status = self.mappings[status_segment].view(0, np.int64, (1,))
        shared_object = load_shared_object(path, tuple(api_version))  # type: ignore[arg-type]
        try:
            self.backend = create_backend(shared_object)
        except BaseException:
            shared_object.close()
            raise
        b = self.backend
        return {"backend_id": b.backend_id, "version": b.version, "host_memory": b.host_memory,
                "moves_in_place": b.moves_in_place, "pid": os.getpid()}

    def on_is_layer_supported(self, spec: Any) -> tuple[bool, str]:
        result = self.backend.is_layer_supported(self.spec(spec))
        return bool(result.supported), result.reason

    def on_optimize_subgraph(self, subgraph: Any) -> Any:
        local = dataclasses.replace(subgraph, layers=tuple(self.spec(s) for s in subgraph.layers))
        result = self.backend.optimize_subgraph(local)
        if result is None:
            return None
        substitutions = []
        for s in result.substitutions:
            replacement = s.replacement
            payload = getattr(replacement.descriptor, "payload", None)
            if payload is not None:
                descriptor = dataclasses.replace(replacement.descriptor, payload=PayloadRef(self._keep(payload)))
                replacement = dataclasses.replace(replacement, descriptor=descriptor)
            substitutions.append(dataclasses.replace(s, replacement=replacement))
        return dataclasses.replace(result, substitutions=tuple(substitutions))

    def on_ping(self) -> int:
        return os.getpid()

    def on_set_option(self, key: str, value: str) -> None:
        self.backend.set_option(key, value)

    def on_get_option(self, key: str) -> str:
        return str(self.backend.get_option(key))

    def on_create(self, what: str, manager: int | None = None) -> int | None:
        if what == "workload_factory":
            obj = self.backend.create_workload_factory(self.objects[manager] if manager else None)
        elif what == "memory_manager":
            obj = self.backend.create_memory_manager()
        else:
            obj = self.backend.create_context()
        return None if obj is None else self._keep(obj)

    def on_call(self, handle: int, method: str, *args: Any) -> None:
        """A memory manager's acquire/release, a context's notifications."""
        getattr(self.objects[handle], method)(*args)

    # -- workloads ----------------------------------------------------------------------------------

    def on_create_workload(self, factory: int, spec: Any) -> tuple[int, int]:
        workload = self.objects[factory].create_workload(self.spec(spec))
        return self._keep(workload), int(workload.workspace_bytes)

    def on_reshape(self, workload: int, spec: Any) -> tuple[int, int] | None:
        reshaped = self.objects[workload].reshape(self.spec(spec))
        return None if reshaped is None else (self._keep(reshaped), int(reshaped.workspace_bytes))

    def on_prepare(self, workload: int, inputs: list[Any], outputs: list[Any], workspace: Any) -> int:
        obj = self.objects[workload]
        if isinstance(workspace, ShmRef):
            space = self.array(workspace)
        else:
            space = np.empty(obj.workspace_bytes, np.uint8) if obj.workspace_bytes else None
        prepared = obj.prepare([self.array(r) for r in inputs], [self.array(r) for r in outputs], space)
        prepared._space = space  # type: ignore[attr-defined]
        handle = self._keep(prepared)
        self.prepared[handle] = (prepared, bool(getattr(obj, "reports_dims", False)))
        return handle

    def on_rebind(self, prepared: int, side: str, index: int, ref: Any) -> None:
        bound = self.prepared[prepared][0]
        (bound.inputs if side == "in" else bound.outputs)[index] = self.array(ref)

    def on_run(self, handles: list[int], copies: dict[int, list[tuple[ShmRef, ShmRef]]] | None) -> list[Any] | None:
        """Execute prepared workloads in order (before step i, copy each (source, target) pair of
        copies[i]); the output shapes of data-dependent ones."""
        status = self.status
        shapes: list[Any] | None = None
        prepared = self.prepared
        try:
            for i, handle in enumerate(handles):
                if copies and i in copies:
                    for source, target in copies[i]:
                        np.copyto(self.array(target), self.array(source))
                bound, reports = prepared[handle]
                status[0] = handle
                bound()
                if reports:
                    if shapes is None:
                        shapes = [None] * len(handles)
                    shapes[i] = bound.output_shapes()
        finally:
            status[0] = 0
        return shapes

    def on_close(self) -> None:
        self.prepared.clear()
        self.objects.clear()
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        for mapping in self.mappings.values():
            mapping.close()
        self.mappings.clear()


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's; it stops this process itself
    if len(argv) != 2:
        print("usage: python -m plugnn.isolation.worker <socket fd>", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(argv[1]))
    threading.Thread(target=_orphan_watch, args=(os.getppid(),), name="plugnn-orphan-watch", daemon=True).start()
    Worker(Channel(sock)).serve()
    return 0


def _orphan_watch(parent: int) -> None:
    """End this process once the host is gone, even while a plugin call hangs (cffi releases the
    GIL during C calls, so this thread runs): a closed socket is only seen between calls."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
