"""A session's specializations: one loaded network per combination of input shapes, made on
first sight (import at those shapes, optimize, load) and kept in a bounded LRU cache.

Every specialization's network references the model's initializers (read once by the session);
constants the optimizer computes (folded batch normalization, constant subgraphs) are made anew
by each optimization, and are replaced by an equal array an earlier specialization holds, so
they too exist once. A layer of a new specialization that matches one of a live
specialization (same name, backend, kind, descriptor and the very same constant arrays) gets
that layer's workload re-sized (`Workload.reshape`), sharing the backend's immutable state.

Threads: lookups take the session's lock briefly; making a specialization and unloading one
take the lock of the runtime (shared by every session on it), so reshape and destroy of
workloads sharing state never run at once (backend_api.h's rule for pn_workload.reshape). A
specialization evicted while a run uses it is unloaded when that run ends.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn.loaded import LoadedNetwork
from plugnn.onnx.importer import import_model
from plugnn.optimized import OptimizedNetwork
from plugnn.optimizer import optimize
from plugnn.runtime import Runtime
from plugnn.session.model import SessionModel

log = logging.getLogger("plugnn")

Key = tuple[tuple[int, ...], ...]

_RUNTIME_LOCKS: weakref.WeakKeyDictionary[Runtime, threading.RLock] = weakref.WeakKeyDictionary()
_RUNTIME_LOCKS_GUARD = threading.Lock()


def runtime_lock(runtime: Runtime) -> threading.RLock:
    """The lock every session on `runtime` holds while it loads or unloads a specialization."""
    with _RUNTIME_LOCKS_GUARD:
        lock = _RUNTIME_LOCKS.get(runtime)
        if lock is None:
            lock = _RUNTIME_LOCKS[runtime] = threading.RLock()
        return lock


class Specialization:
    """One loaded network for one combination of input shapes, with what making it cost."""

    __slots__ = ("key", "loaded", "optimized", "milliseconds", "stages", "reshaped", "users", "evicted")

    def __init__(self, key: Key, loaded: LoadedNetwork, optimized: OptimizedNetwork, milliseconds: float,
                 stages: dict[str, float]) -> None:
        self.key = key
        self.loaded = loaded
        self.optimized = optimized
        self.milliseconds = milliseconds
        self.stages = stages
        self.reshaped = len(loaded.reshaped_layers)
        self.users = 0
        self.evicted = False

    def describe(self, input_names: Sequence[str]) -> dict[str, Any]:
        return {"shapes": dict(zip(input_names, self.key)), "milliseconds": self.milliseconds,
                "stages_ms": dict(self.stages), "layers": len(self.optimized.graph.nodes),
                "reshaped_layers": self.reshaped}


class SpecializationCache:
    """The LRU cache of one session: `acquire(key)` returns the specialization for those input
    shapes (made if new) with a use counted; `release(spec)` ends the use."""

    def __init__(self, model: SessionModel, runtime: Runtime, backends: Sequence[str] | None, capacity: int) -> None:
        self.model = model
        self.runtime = runtime
        self.backends = list(backends) if backends is not None else None
        self.capacity = capacity
        self.input_names = [i.name for i in model.inputs]
        self._entries: OrderedDict[Key, Specialization] = OrderedDict()
        self._lock = threading.Lock()
        self._load_lock = runtime_lock(runtime)
        # Constants the optimizer computed, by key: an equal array from another specialization
        # replaces a new one (weakly held: gone with the last specialization using it).
        self._computed: weakref.WeakValueDictionary[str, np.ndarray] = weakref.WeakValueDictionary()
        self._shared_ids = {id(a) for a in model.initializers.values()}
        self.made = 0
        self.evictions = 0

    def lookup(self, key: Key) -> Specialization | None:
        """The specialization for `key` with a use counted, or None when there is none yet."""
        with self._lock:
            spec = self._entries.get(key)
            if spec is not None:
                self._entries.move_to_end(key)
                spec.users += 1
            return spec

    def acquire(self, key: Key) -> Specialization:
        with self._lock:
            spec = self._entries.get(key)
            if spec is not None:
                self._entries.move_to_end(key)
                spec.users += 1
                return spec
        with self._load_lock:
            with self._lock:
                spec = self._entries.get(key)
                if spec is not None:  # another thread made it meanwhile
                    self._entries.move_to_end(key)
                    spec.users += 1
                    return spec
                sources = [s.loaded for s in reversed(self._entries.values())]
            spec = self._make(key, sources)
            with self._lock:
                spec.users += 1
                self._entries[key] = spec
                evicted = []
                while len(self._entries) > self.capacity:
                    _, old = self._entries.popitem(last=False)
                    old.evicted = True
                    self.evictions += 1
                    if old.users == 0:
                        evicted.append(old)
            for old in evicted:
                old.loaded.unload()
            return spec

    def release(self, spec: Specialization) -> None:
        with self._lock:
            spec.users -= 1
            unload = spec.evicted and spec.users == 0
        if unload:
            with self._load_lock:
                spec.loaded.unload()

    def _make(self, key: Key, sources: list[LoadedNetwork]) -> Specialization:
        model = self.model
        clock = time.perf_counter
        start = clock()
        shapes = dict(zip(self.input_names, key))
        network = import_model(model.proto, source=model.source, name=model.name, input_shapes=shapes,
                               initializers=model.initializers)
        imported = clock()
        optimized = optimize(network, self.runtime, self.backends)
        self._share_computed_constants(optimized)
        optimized_at = clock()
        loaded = self.runtime.load_network(optimized, reshape_from=sources)
        done = clock()
        stages = {"import": (imported - start) * 1e3, "optimize": (optimized_at - imported) * 1e3,
                  "load": (done - optimized_at) * 1e3}
        spec = Specialization(key, loaded, optimized, (done - start) * 1e3, stages)
        self.made += 1
        log.info("session %r: specialized for %s in %.1f ms (import %.1f, optimize %.1f, load %.1f ms; "
                 "%d of %d layers re-sized from an earlier specialization)", model.name,
                 ", ".join(f"{n}={list(s)}" for n, s in shapes.items()), spec.milliseconds, stages["import"],
                 stages["optimize"], stages["load"], spec.reshaped, len(optimized.graph.nodes))
        return spec

    def _share_computed_constants(self, optimized: OptimizedNetwork) -> None:
        constants = optimized.graph.constants
        for key, array in constants.items():
            if id(array) in self._shared_ids:
                continue
            known = self._computed.get(key)
            if known is not None and known.dtype == array.dtype and known.shape == array.shape \
                    and _same_bytes(known, array):
                constants[key] = known
            else:
                self._computed[key] = array

    # -- what it holds ------------------------------------------------------------------

    def entries(self) -> list[Specialization]:
        with self._lock:
            return list(self._entries.values())

    def clear(self) -> None:
        """Unload every specialization (those in use when their run ends)."""
        with self._load_lock:
            with self._lock:
                entries = list(self._entries.values())
                self._entries.clear()
                for spec in entries:
                    spec.evicted = True
            for spec in entries:
                if spec.users == 0:
                    spec.loaded.unload()


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-for-bit equality of two C-contiguous arrays of one dtype and shape (NaNs included)."""
    if a.size == 0:
        return True
    return bool(np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(b).reshape(-1).view(np.uint8)))
