"""IsolatedBackend: the backend protocol in the host, every call forwarded to a worker process.

The runtime, the optimizer and loaded networks use it like any backend. What differs is where
memory lives:

- a loaded network's arena and workspace come from `host_arena` (a shared segment the worker
  maps), so the tensors between layers, whichever backend runs them, are the same bytes in both
  processes: nothing is copied on the way in or out of an isolated layer;
- constants (weights) are copied into shared memory once per array, the first time a layer
  that reads them crosses (support query, optimize_subgraph or create_workload), and every
  later layer, workload or specialization reading that array refers to the same copy;
- a buffer that is in no shared segment (the caller's arrays bound as network inputs and
  outputs) is staged: copied into a shared buffer before the call, out of it after. Arrays from
  `plugnn.isolation.shared_array` are passed in place instead.

A worker that dies, hangs past the watchdog or is interrupted fails the backend for good
(`failure`): its support queries answer no with the reason (so optimizing again places its
layers on the next backend of the preference, and explain() says why), other calls raise
BackendCrashedError; `restart()` starts a new worker.
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from collections.abc import MutableSequence, Sequence
from typing import Any

import numpy as np

from plugnn.backend import Backend, BackendContext, DeviceBuffer, MemoryManager, PreparedWorkload, Workload, \
    WorkloadFactory
from plugnn.errors import BackendError, BackendLoadError
from plugnn.isolation import shared_memory
from plugnn.isolation.process import WorkerProcess
from plugnn.isolation.shared_memory import Location, Segment, locate
from plugnn.isolation.wire import PayloadRef, ShmRef
from plugnn.layers import LayerSpec, OptimizationResult, Subgraph, SupportResult

log = logging.getLogger("plugnn")


class RemotePayload:
    """A PRECOMPILED layer's payload that lives in the worker: its handle there."""

    def __init__(self, worker: WorkerProcess, handle: int) -> None:
        self.handle = handle
        self._release = weakref.finalize(self, worker.drop, handle)

    def release(self) -> None:
        self._release()


class IsolatedBackend(Backend):
    """One plugin run in a worker process (see the module's doc)."""

    def __init__(self, path: str, api_version: tuple[int, int], watchdog: float | None, source: str = "",
                 expected_id: str | None = None) -> None:
        self.origin = path
        self.source = source
        self.isolation = "process"
        self.watchdog = watchdog
        self._api_version = api_version
        self._expected_id = expected_id
        self._constants: dict[int, tuple[weakref.ref[Any], np.ndarray]] = {}
        self._options: list[tuple[str, str]] = []
        # The shared copies of constant arrays: this backend's own (no other worker maps them),
        # mapped read-only in the worker.
        self._pool = shared_memory.Pool("plugnn-constants", read_only=True)
        # Staging buffers of network inputs and outputs: small, so a smaller chunk (a chunk's
        # pages stay until every block of it is gone).
        self._staging = shared_memory.Pool("plugnn-staging", chunk_bytes=16 << 20)
        self.worker = self._start()

    def _start(self) -> WorkerProcess:
        worker = WorkerProcess(self.origin, self._api_version, self.watchdog, self._expected_id or self.origin)
        hello = worker.hello
        if self._expected_id is not None and hello["backend_id"] != self._expected_id:
            worker.close()
            raise BackendLoadError(self.origin, f"the worker loaded backend {hello['backend_id']!r}, "
                                                f"not {self._expected_id!r}")
        if not hello["host_memory"]:
            worker.close()
            raise BackendLoadError(self.origin, "only host-memory backends (PN_BACKEND_HOST_MEMORY) can run in a "
                                                "worker process: this one manages its own memory",
                                   hello["backend_id"])
        self.backend_id = worker.name = hello["backend_id"]
        self.version = tuple(hello["version"])  # type: ignore[assignment]
        self.host_memory = True
        self.moves_in_place = bool(hello["moves_in_place"])
        self._fallback_logged = False  # (the constant copies stay: a new worker maps them on use)
        return worker

    # -- failure and restart -------------------------------------------------------------------------

    @property
    def failure(self) -> BackendError | None:  # type: ignore[override]
        return self.worker.failure

    @property
    def pid(self) -> int:
        return self.worker.pid

    def restart(self) -> None:
        """End this backend's worker (if it still runs) and start a new one, with the options set
        so far applied again. What the old worker held (factories, workloads, the networks loaded
        on it) goes with it: their calls raise RuntimeClosedError; load the networks again."""
        old = self.worker
        old.close()
        self._expected_id = self.backend_id
        self.worker = self._start()
        for key, value in self._options:
            self.worker.request("set_option", key, value, call=f"set_option({key!r})")
        log.info("backend %r: new worker process %d started", self.backend_id, self.worker.pid)

    # -- what crosses -----------------------------------------------------------------------------------

    def _constant(self, array: Any, maps: list[Location], keep: list[Any]) -> ShmRef:
        """The shared copy of constant `array` (made on first use), as a reference."""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            array = np.array(array, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
        loc = locate(array)
        if loc is None:
            entry = self._constants.get(id(array))
            copy = entry[1] if entry is not None and entry[0]() is array else None
            if copy is None:
                copy = self._pool.take(array.nbytes).view(array.dtype).reshape(array.shape)
                np.copyto(copy, array)
                try:
                    self._constants[id(array)] = (weakref.ref(array), copy)
                    weakref.finalize(array, self._constants.pop, id(array), None)  # the dict's method, not self's
                except TypeError:  # not weak-referenceable: copied for this use only
                    pass
            keep.append(copy)
            loc = locate(copy)
            assert loc is not None
        maps.append(loc)
        return ShmRef(loc.segment_id, loc.offset, array.dtype, tuple(array.shape))

    def _spec(self, spec: LayerSpec, maps: list[Location], keep: list[Any]) -> LayerSpec:
        constants = tuple(None if c is None else self._constant(c, maps, keep) for c in spec.constants)
        descriptor = spec.descriptor
        payload = getattr(descriptor, "payload", None)
        if isinstance(payload, RemotePayload):
            descriptor = dataclasses.replace(descriptor, payload=PayloadRef(payload.handle))
        elif payload is not None:
            raise BackendError(self.backend_id, f"layer {spec.name!r}",
                               "a PRECOMPILED layer made by another backend cannot run on this one")
        return dataclasses.replace(spec, constants=constants, descriptor=descriptor)

    # -- the backend protocol ---------------------------------------------------------------------------

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if self.failure is not None:
            reason = f"backend failed: {self.worker.failure_summary}"
            if not self._fallback_logged:
                self._fallback_logged = True
                log.warning("backend %r failed earlier (%s): its layers go to the next backend of the preference; "
                            "Runtime.restart_backend(%r) starts a new worker", self.backend_id,
                            self.worker.failure_summary, self.backend_id)
            return SupportResult(False, reason)
        maps: list[Location] = []
        keep: list[Any] = []
        ok, reason = self.worker.request("is_layer_supported", self._spec(layer, maps, keep), maps=maps,
                                         call=f"is_layer_supported(layer {layer.name!r})", layer=layer.name)
        return SupportResult(bool(ok), reason if not ok else "")

    def optimize_subgraph(self, subgraph: Subgraph) -> OptimizationResult | None:
        maps: list[Location] = []
        keep: list[Any] = []
        remote = dataclasses.replace(subgraph, layers=tuple(self._spec(s, maps, keep) for s in subgraph.layers))
        result = self.worker.request("optimize_subgraph", remote, maps=maps, call="optimize_subgraph")
        if result is None:
            return None
        substitutions = []
        for s in result.substitutions:
            payload = getattr(s.replacement.descriptor, "payload", None)
            if isinstance(payload, PayloadRef):
                descriptor = dataclasses.replace(s.replacement.descriptor,
                                                 payload=RemotePayload(self.worker, payload.handle))
                s = dataclasses.replace(s, replacement=dataclasses.replace(s.replacement, descriptor=descriptor))
            substitutions.append(s)
        return dataclasses.replace(result, substitutions=tuple(substitutions))

    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> RemoteWorkloadFactory:
        manager = memory_manager.handle if isinstance(memory_manager, RemoteMemoryManager) else None
        handle = self.worker.request("create", "workload_factory", manager, call="create_workload_factory")
        return RemoteWorkloadFactory(self, handle)

    def create_memory_manager(self) -> RemoteMemoryManager | None:
        handle = self.worker.request("create", "memory_manager", call="create_memory_manager")
        return None if handle is None else RemoteMemoryManager(self, handle)

    def create_context(self) -> RemoteContext | None:
        handle = self.worker.request("create", "context", call="create_context")
        return None if handle is None else RemoteContext(self, handle)

    def set_option(self, key: str, value: str) -> None:
        self.worker.request("set_option", key, str(value), call=f"set_option({key!r})")
        self._options.append((key, str(value)))

    def get_option(self, key: str) -> str:
        return str(self.worker.request("get_option", key, call=f"get_option({key!r})"))

    def host_arena(self, num_bytes: int) -> np.ndarray:
        return Segment(num_bytes, "plugnn-arena").array[:num_bytes]

    def close(self) -> None:
        self.worker.close()


class _Remote:
    """An object living in the worker: its handle, dropped there once (close or collection)."""

    def __init__(self, backend: IsolatedBackend, handle: int) -> None:
        self.backend = backend
        self.worker = backend.worker
        self.handle = handle
        self._drop = weakref.finalize(self, self.worker.drop, handle)

    def _request(self, op: str, *args: Any, **kwargs: Any) -> Any:
        return self.worker.request(op, *args, **kwargs)

    def _teardown(self, op: str, *args: Any, **kwargs: Any) -> None:
        """A call that only matters while the worker lives (a context's notifications, a memory
        manager's release): nothing to do once it failed or was closed, so that networks unload
        and others load after a crash."""
        if self.worker.failure is None and not self.worker.closed:
            self.worker.request(op, *args, **kwargs)

    def close(self) -> None:
        self._drop()


class RemoteMemoryManager(_Remote, MemoryManager):
    def acquire(self) -> None:
        self._request("call", self.handle, "acquire", call="acquire")

    def release(self) -> None:
        self._teardown("call", self.handle, "release", call="release")


class RemoteContext(_Remote, BackendContext):
    def _notify(self, name: str, network_id: int) -> None:
        self._teardown("call", self.handle, name, network_id, call=f"{name}({network_id})")

    def before_load_network(self, network_id: int) -> None:
        self._notify("before_load_network", network_id)

    def after_load_network(self, network_id: int) -> None:
        self._notify("after_load_network", network_id)

    def before_unload_network(self, network_id: int) -> None:
        self._notify("before_unload_network", network_id)

    def after_unload_network(self, network_id: int) -> None:
        self._notify("after_unload_network", network_id)


class RemoteWorkloadFactory(_Remote, WorkloadFactory):
    def create_workload(self, layer: LayerSpec) -> RemoteWorkload:
        maps: list[Location] = []
        keep: list[Any] = []
        spec = self.backend._spec(layer, maps, keep)
        handle, workspace = self._request("create_workload", self.handle, spec, maps=maps,
                                          call=f"create_workload(layer {layer.name!r})", layer=layer.name)
        return RemoteWorkload(self.backend, handle, layer.name, workspace, keep)


class RemoteWorkload(_Remote, Workload):
    """A workload in the worker; `keep` holds the shared copies of its constants."""

    def __init__(self, backend: IsolatedBackend, handle: int, layer_name: str, workspace_bytes: int,
                 keep: list[Any]) -> None:
        super().__init__(backend, handle)
        self.layer_name = layer_name
        self.workspace_bytes = workspace_bytes
        self._keep = keep

    def prepare(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> RemotePrepared:
        return RemotePrepared(self, list(inputs), list(outputs), workspace)

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None
                ) -> list[tuple[int, ...]] | None:
        prepared = self.prepare(inputs, outputs, workspace)
        prepared()
        return prepared.output_shapes()

    def reshape(self, layer: LayerSpec) -> RemoteWorkload | None:
        maps: list[Location] = []
        keep: list[Any] = []
        spec = self.backend._spec(layer, maps, keep)
        answer = self._request("reshape", self.handle, spec, maps=maps, call=f"reshape(layer {layer.name!r})",
                               layer=layer.name)
        if answer is None:
            return None
        handle, workspace = answer
        return RemoteWorkload(self.backend, handle, layer.name, workspace, self._keep + keep)


class _Slot:
    """One bound buffer of a prepared remote workload: the host's item, and where the worker sees
    it (`staging`: the shared copy of an item in no shared segment, else None)."""

    __slots__ = ("item", "staging", "loc")

    def __init__(self, item: Any, staging: np.ndarray | None, loc: Location | None) -> None:
        self.item = item
        self.staging = staging
        self.loc = loc


class _Bound(MutableSequence[Any]):
    """The inputs or outputs of a RemotePrepared: assigning an item rebinds it."""

    def __init__(self, prepared: RemotePrepared, side: str, slots: list[_Slot]) -> None:
        self._prepared = prepared
        self._side = side
        self._slots = slots

    def __getitem__(self, index: Any) -> Any:
        return self._slots[index].item

    def __setitem__(self, index: Any, item: Any) -> None:
        self._prepared._rebind(self._side, index, item)

    def __delitem__(self, index: Any) -> None:
        raise TypeError("a workload's bound buffers cannot be removed")

    def insert(self, index: int, item: Any) -> None:
        raise TypeError("a workload's bound buffers cannot be added")

    def __len__(self) -> int:
        return len(self._slots)


class RemotePrepared(_Remote, PreparedWorkload):
    """A workload with its buffers bound in the worker. Calling it stages what must be staged and
    runs it with one request; consecutive ones of one worker run with one request together
    (`batch_group`, plugnn.step_runner)."""

    raises_plugnn_errors = True

    def __init__(self, workload: RemoteWorkload, inputs: list[Any], outputs: list[Any], workspace: Any) -> None:
        backend = workload.backend
        self.layer_name = workload.layer_name
        self.workload = workload
        maps: list[Location] = []
        keep: list[Any] = []
        self._in = [self._slot(x, maps, keep, backend) for x in inputs]
        self._out = [self._slot(x, maps, keep, backend) for x in outputs]
        self._stage([s for s in self._in + self._out if s.loc is None], backend)
        refs_in = [self._ref(s, maps) for s in self._in]
        refs_out = [self._ref(s, maps) for s in self._out]
        space = None
        if isinstance(workspace, np.ndarray) and workspace.nbytes >= workload.workspace_bytes:
            loc = locate(workspace)
            if loc is not None:
                maps.append(loc)
                space = ShmRef(loc.segment_id, loc.offset, np.dtype(np.uint8), (int(workspace.nbytes),))
        handle = workload.worker.request("prepare", workload.handle, refs_in, refs_out, space, maps=maps,
                                         call=f"prepare(layer {self.layer_name!r})", layer=self.layer_name)
        super().__init__(backend, handle)
        self.worker.layers[handle] = self.layer_name
        self._keep = keep
        self.inputs = _Bound(self, "in", self._in)
        self.outputs = _Bound(self, "out", self._out)
        self._staged_in = [s for s in self._in if s.staging is not None]
        self._staged_out = [s for s in self._out if s.staging is not None]
        self._shapes: list[tuple[int, ...]] | None = None
        self.batch_group = self.worker

    @staticmethod
    def _slot(item: Any, maps: list[Location], keep: list[Any], backend: IsolatedBackend) -> _Slot:
        if isinstance(item, DeviceBuffer):
            raise BackendError(backend.backend_id, "prepare", "an isolated backend takes host arrays only")
        loc = locate(item)
        if loc is None:
            entry = backend._constants.get(id(item))
            if entry is not None and entry[0]() is item:
                loc = locate(entry[1])
        return _Slot(item, None, loc)

    @staticmethod
    def _stage(slots: list[_Slot], backend: IsolatedBackend) -> None:
        """A shared staging buffer for each of `slots`."""
        for slot in slots:
            item = slot.item
            slot.staging = backend._staging.take(item.nbytes).view(item.dtype).reshape(item.shape)
            slot.loc = locate(slot.staging)

    @staticmethod
    def _ref(slot: _Slot, maps: list[Location]) -> ShmRef:
        loc = slot.loc
        assert loc is not None
        maps.append(loc)
        item = slot.item
        return ShmRef(loc.segment_id, loc.offset, item.dtype, tuple(item.shape))

    def _rebind(self, side: str, index: int, item: Any) -> None:
        slot = (self._in if side == "in" else self._out)[index]
        loc = locate(item)
        if loc is None and slot.staging is not None:
            slot.item = item  # still staged through the same buffer
            return
        new = _Slot(item, None, loc)
        if loc is None:
            self._stage([new], self.backend)
        maps: list[Location] = []
        self.worker.request("rebind", self.handle, side, index, self._ref(new, maps), maps=maps,
                            call=f"prepare(layer {self.layer_name!r})", layer=self.layer_name)
        slot.item, slot.staging, slot.loc = new.item, new.staging, new.loc
        self._staged_in = [s for s in self._in if s.staging is not None]
        self._staged_out = [s for s in self._out if s.staging is not None]

    def __call__(self) -> None:
        run_remote([self])

    def output_shapes(self) -> list[tuple[int, ...]] | None:
        return self._shapes


def run_remote(steps: Sequence[RemotePrepared]) -> None:
    """Run consecutive prepared workloads of one worker with one request: stage their inputs,
    run, copy their staged outputs back. A staged input that an earlier step of the request
    writes (a network output a later layer reads) is copied in the worker, between the two."""
    produced: dict[int, _Slot] = {}  # id(host array) -> the staged output slot that writes it
    copies: dict[int, list[tuple[ShmRef, ShmRef]]] | None = None
    for index, step in enumerate(steps):
        for slot in step._staged_in:
            source = produced.get(id(slot.item)) if produced else None
            if source is None:
                np.copyto(slot.staging, slot.item)
            else:
                if copies is None:
                    copies = {}
                copies.setdefault(index, []).append((_staging_ref(source), _staging_ref(slot)))
        for slot in step._staged_out:
            produced[id(slot.item)] = slot
    first = steps[0]
    call = f"execute(layer {first.layer_name!r})" if len(steps) == 1 else \
        f"execute(layers {first.layer_name!r} to {steps[-1].layer_name!r})"
    shapes = first.worker.request("run", [s.handle for s in steps], copies, call=call,
                                  layer=first.layer_name if len(steps) == 1 else None)
    for i, step in enumerate(steps):
        for slot in step._staged_out:
            np.copyto(slot.item, slot.staging)
        if shapes is not None and shapes[i] is not None:
            step._shapes = [tuple(int(d) for d in s) for s in shapes[i]]


def _staging_ref(slot: _Slot) -> ShmRef:
    loc = slot.loc
    assert loc is not None and slot.staging is not None
    return ShmRef(loc.segment_id, loc.offset, slot.staging.dtype, tuple(slot.staging.shape))


class RemoteRun:
    """Consecutive prepared workloads of one worker as one callable (plugnn.step_runner.batched)."""

    __slots__ = ("steps",)

    def __init__(self, steps: Sequence[RemotePrepared]) -> None:
        self.steps = list(steps)

    def __call__(self) -> None:
        run_remote(self.steps)


shared_array = shared_memory.shared_array
