"""The networks a session builds, and which one runs a run's input shapes.

A session imports its model once with symbolic dims (plugnn.symbolic): every dim the model
leaves dynamic is a symbol whose hint is its size in the first run, the import records the
decisions it took on the hints as guards, and the network is optimized and loaded once, as a
SymbolicLoadedNetwork that runs at any binding of the symbols keeping those guards (each new
binding re-sizes the workloads of the last one and plans its memory; nothing is imported or
optimized again). A run whose shapes break a guard (or which a backend refuses) gets a network
built at its shapes, kept beside the first; `capacity` bounds how many such builds stay loaded
(least recently used first out). A model whose every input shape is fixed is one build.

Every build's network references the model's initializers (read once by the session);
constants the optimizer computes (folded batch normalization, constant subgraphs) are replaced
by an equal array an earlier build holds, so they too exist once.

Threads: lookups take the session's lock briefly; building takes the lock of the runtime
(shared by every session on it), so no two builds create, re-size or destroy workloads at once.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn import fork_safety
from plugnn.errors import InputError
from plugnn.loaded import LoadedNetwork
from plugnn.loaded_symbolic import SymbolicLoadedNetwork
from plugnn.onnx.importer import import_model
from plugnn.optimized import OptimizedNetwork
from plugnn.optimizer import optimize
from plugnn.runtime import Runtime
from plugnn.session.model import SessionModel
from plugnn.shape_program import BindingError
from plugnn.symbolic import ShapeEnv

log = logging.getLogger("plugnn")

Shapes = tuple[tuple[int, ...], ...]

_RUNTIME_LOCKS: weakref.WeakKeyDictionary[Runtime, threading.RLock] = weakref.WeakKeyDictionary()
_RUNTIME_LOCKS_GUARD = threading.Lock()
# New locks in a child forked while another thread held them (plugnn.fork_safety).
fork_safety.fresh_locks_in_child(sys.modules[__name__], "_RUNTIME_LOCKS_GUARD")
fork_safety.fresh_lock_values_in_child(_RUNTIME_LOCKS)


def runtime_lock(runtime: Runtime) -> threading.RLock:
    """The lock every session on `runtime` holds while it builds or unloads a network."""
    with _RUNTIME_LOCKS_GUARD:
        lock = _RUNTIME_LOCKS.get(runtime)
        if lock is None:
            lock = _RUNTIME_LOCKS[runtime] = threading.RLock()
        return lock


class Build:
    """One network a session built: imported (symbolically where the model has dynamic dims) at
    the shapes of the run that asked for it, optimized and loaded, with what that cost."""

    __slots__ = ("shapes", "network", "optimized", "milliseconds", "stages", "users", "evicted", "symbolic",
                 "keyed")

    def __init__(self, shapes: Shapes, network: LoadedNetwork | SymbolicLoadedNetwork, optimized: OptimizedNetwork,
                 milliseconds: float, stages: dict[str, float]) -> None:
        self.shapes = shapes
        self.network = network
        self.optimized = optimized
        self.milliseconds = milliseconds
        self.stages = stages
        self.users = 0
        self.evicted = False
        self.symbolic = isinstance(network, SymbolicLoadedNetwork)
        self.keyed = False  # set by the session: its inputs are the network's, in its order

    def run_shapes(self, feed: Any, shapes: tuple[tuple[int, ...], ...]) -> dict[str, np.ndarray]:
        """A plain run whose inputs' shapes, in the session's input order, are `shapes`."""
        if self.keyed:
            return self.network.run(feed, shapes=shapes)  # type: ignore[call-arg]
        return self.network.run(feed)

    def run(self, feed: Any, outputs: Any = None, profile: bool = False, stop: Any = None) -> dict[str, np.ndarray]:
        if outputs is None and not profile and stop is None:
            return self.network.run(feed)
        return self.network.run(feed, outputs, profile=profile, stop=stop)

    def describe(self, input_names: Sequence[str]) -> dict[str, Any]:
        info: dict[str, Any] = {"built_at": dict(zip(input_names, self.shapes)), "milliseconds": self.milliseconds,
                                "stages_ms": dict(self.stages), "layers": len(self.optimized.graph.nodes)}
        if isinstance(self.network, SymbolicLoadedNetwork):
            info.update(self.network.describe())
        else:
            info.update({"symbols": {}, "guards": [], "specialized": {},
                         "instances": [{"binding": {}, "arena_bytes": self.network.memory_plan.peak_bytes,
                                        "reshaped_layers": len(self.network.reshaped_layers),
                                        "layers": len(self.optimized.graph.nodes)}], "instances_made": 1,
                         "instances_resized": 0, "steady_resizes": 0})
        return info


class SessionNetworks:
    """The builds of one session: `acquire(shapes)` returns the build that runs those input
    shapes (built if none holds there) with a use counted; `release(build)` ends the use."""

    def __init__(self, model: SessionModel, runtime: Runtime, backends: Sequence[str] | None, capacity: int) -> None:
        self.model = model
        self.runtime = runtime
        self.backends = list(backends) if backends is not None else None
        self.capacity = capacity
        self.input_names = [i.name for i in model.inputs]
        self._builds: OrderedDict[int, Build] = OrderedDict()  # by id, least recently used first
        self._by_shapes: dict[Shapes, Build] = {}  # shapes already run -> their build
        self._lock = threading.Lock()
        self._load_lock = runtime_lock(runtime)
        fork_safety.fresh_locks_in_child(self, "_lock", "_load_lock")
        # Constants the optimizer computed, by key: an equal array from another build replaces a
        # new one (weakly held: gone with the last build using it).
        self._computed: weakref.WeakValueDictionary[str, np.ndarray] = weakref.WeakValueDictionary()
        self._shared_ids = {id(a) for a in model.initializers.values()}
        self.built = 0
        self.evictions = 0

    def lookup(self, shapes: Shapes) -> Build | None:
        """The build that ran these shapes before, with a use counted, or None."""
        with self._lock:
            build = self._by_shapes.get(shapes)
            if build is not None and not build.evicted:
                self._builds.move_to_end(id(build))
                build.users += 1
                return build
            return None

    def latest_symbolic(self) -> Build | None:
        """The most recently used build, with a use counted, when it is symbolic, else None: what
        a run at shapes this table has not seen tries first. Its own binding checks the shapes
        (ranks, fixed dims, guards) as it re-sizes; where they do not fit (an InputError) the run
        goes the full way (acquire), which also tries the other builds."""
        with self._lock:
            if not self._builds:
                return None
            build = next(reversed(self._builds.values()))
            if not build.symbolic or build.evicted:
                return None
            build.users += 1
            return build

    def acquire(self, shapes: Shapes) -> Build:
        build = self.lookup(shapes) or self._holding(shapes)
        if build is not None:
            return build
        with self._load_lock:
            build = self.lookup(shapes) or self._holding(shapes)  # another thread built it meanwhile
            if build is not None:
                return build
            return self._admit(shapes, self._build(shapes))

    def _admit(self, shapes: Shapes, build: Build) -> Build:
        """Keep a new build (with a use counted) for `shapes`, evicting the least recently used
        beyond the capacity (unloaded now, or when their last run ends). Under the load lock."""
        with self._lock:
            build.users += 1
            self._builds[id(build)] = build
            self._by_shapes[shapes] = build
            evicted = []
            while len(self._builds) > self.capacity:
                _, old = self._builds.popitem(last=False)
                old.evicted = True
                self.evictions += 1
                self._by_shapes = {k: b for k, b in self._by_shapes.items() if b is not old}
                if old.users == 0:
                    evicted.append(old)
        for old in evicted:
            old.network.unload()
        return build

    def _holding(self, shapes: Shapes) -> Build | None:
        """The most recent build that holds at `shapes`, with a use counted, or None."""
        feed_shapes = dict(zip(self.input_names, shapes))
        with self._lock:
            candidates = list(reversed(self._builds.values()))
        for build in candidates:
            if self._holds(build, feed_shapes):
                with self._lock:
                    if build.evicted:
                        continue
                    build.users += 1
                    self._by_shapes[shapes] = build
                    self._builds.move_to_end(id(build))
                    return build
        return None

    def _holds(self, build: Build, shapes: dict[str, tuple[int, ...]]) -> bool:
        network = build.network
        if not isinstance(network, SymbolicLoadedNetwork):
            return False
        try:
            binding = network.program.bind(shapes)
            network.program.evaluate(binding)
        except (BindingError, InputError):
            return False
        return True

    def release(self, build: Build) -> None:
        with self._lock:
            build.users -= 1
            unload = build.evicted and build.users == 0
        if unload:
            with self._load_lock:
                build.network.unload()

    def run(self, build: Build, feed: Any, outputs: Any = None, profile: bool = False,
            stop: Any = None) -> dict[str, np.ndarray]:
        """Run `build` (`outputs`, `profile` and `stop` as LoadedNetwork.run takes them); a symbolic
        one that turns out not to hold at the feed's shapes (a backend refused them) hands the run
        to a build made at those shapes."""
        try:
            return build.run(feed, outputs, profile, stop)
        except BindingError:
            if not build.symbolic:
                raise
        shapes = tuple(tuple(feed[n].shape) for n in self.input_names)
        with self._lock:
            if self._by_shapes.get(shapes) is build:
                del self._by_shapes[shapes]
        with self._load_lock:
            other = self._admit(shapes, self._build(shapes, symbolic=False))
        try:
            return other.run(feed, outputs, profile, stop)
        finally:
            self.release(other)

    def _build(self, shapes: Shapes, symbolic: bool = True) -> Build:
        model = self.model
        clock = time.perf_counter
        start = clock()
        feed_shapes = dict(zip(self.input_names, shapes))
        env = ShapeEnv() if symbolic and model.dynamic else None
        try:
            network = import_model(model.proto, source=model.source, name=model.name, input_shapes=feed_shapes,
                                   initializers=model.initializers, shape_env=env)
        except Exception as exc:  # noqa: BLE001 - the symbolic import is retried at these shapes
            if env is None:
                raise
            log.info("session %r: the import with symbolic dims failed (%s: %s); building for %s only", model.name,
                     type(exc).__name__, exc, ", ".join(f"{n}={list(s)}" for n, s in feed_shapes.items()))
            env = None
            network = import_model(model.proto, source=model.source, name=model.name, input_shapes=feed_shapes,
                                   initializers=model.initializers)
        imported = clock()
        optimized = optimize(network, self.runtime, self.backends)
        self._share_computed_constants(optimized)
        optimized_at = clock()
        # The other builds' networks (a symbolic one's last instance, held meanwhile): the new one's
        # workloads are re-sized from theirs where the layer is the same, sharing prepacked weights.
        held = [(b.network, b.network.hold_last()) for b in reversed(self._builds.values())
                if isinstance(b.network, SymbolicLoadedNetwork)]
        try:
            sources = [b.network for b in reversed(self._builds.values())
                       if isinstance(b.network, LoadedNetwork) and b.network.loaded]
            sources += [instance.loaded for _, instance in held if instance is not None]
            loaded = self.runtime.load_network(optimized, reshape_from=sources) if env is None or not env.hints \
                else self.runtime.load_network(optimized)
            if isinstance(loaded, SymbolicLoadedNetwork):
                loaded.acquire(loaded.program.bind(feed_shapes), sources)  # the first instance, made now
                loaded.release(loaded.last_instance)  # type: ignore[arg-type]
        finally:
            for network, instance in held:
                if instance is not None:
                    network.release(instance)
        done = clock()
        stages = {"import": (imported - start) * 1e3, "optimize": (optimized_at - imported) * 1e3,
                  "load": (done - optimized_at) * 1e3}
        build = Build(shapes, loaded, optimized, (done - start) * 1e3, stages)
        build.keyed = isinstance(loaded, SymbolicLoadedNetwork) and loaded.input_names == self.input_names
        self.built += 1
        text = ", ".join(f"{n}={list(s)}" for n, s in feed_shapes.items())
        if isinstance(loaded, SymbolicLoadedNetwork):
            guards = len(loaded.program.env.guards)
            pinned = loaded.program.env.specialized
            log.info("session %r: built for every shape with symbols %s (%d guards%s) at %s in %.1f ms (import %.1f, "
                     "optimize %.1f, load %.1f ms)", model.name, loaded.symbols, guards,
                     f"; pinned to their hints: {sorted(pinned)}" if pinned else "", text, build.milliseconds,
                     stages["import"], stages["optimize"], stages["load"])
        else:
            log.info("session %r: built for %s in %.1f ms (import %.1f, optimize %.1f, load %.1f ms)", model.name,
                     text, build.milliseconds, stages["import"], stages["optimize"], stages["load"])
        return build

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

    def builds(self) -> list[Build]:
        with self._lock:
            return list(self._builds.values())

    def clear(self) -> None:
        """Unload every build (those in use when their run ends)."""
        with self._load_lock:
            with self._lock:
                builds = list(self._builds.values())
                self._builds.clear()
                self._by_shapes.clear()
                for build in builds:
                    build.evicted = True
            for build in builds:
                if build.users == 0:
                    build.network.unload()


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-for-bit equality of two C-contiguous arrays of one dtype and shape (NaNs included)."""
    if a.size == 0:
        return True
    return bool(np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(b).reshape(-1).view(np.uint8)))
