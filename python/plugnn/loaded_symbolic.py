"""One loaded network for every shape: a symbolic optimized network run at any binding.

`Runtime.load_network` returns a `SymbolicLoadedNetwork` for an optimized network whose
shapes are expressions of symbols (plugnn.symbolic). A run binds the symbols from the inputs'
shapes (its shape program, plugnn.shape_program), and runs the *instance* of that binding: the
network's concrete form at those shapes, loaded once. The first instance creates every
workload; every later one is made from the most recent one, each layer's workload re-sized
(`pn_workload.reshape`: prepacked weights shared, nothing imported or optimized again) where
its backend can, else created (a backend built against the 1.0 header has no reshape: its
workloads are created again, which the log says once), and its memory planned at its sizes.
A layer a backend fused at the hints (optimize_subgraph) whose workload it refuses at the new
shapes is fused again from the layers it stands for, at those shapes (only that layer).
Instances are kept per binding (least recently used first out), so alternating shapes cost a
lookup each.

A binding that breaks a guard of the network (a decision its construction took on the hints
that does not hold at those shapes), or at which a backend refuses a layer, raises
BindingError: the network does not hold there (an InferenceSession then builds another one,
at those shapes).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from plugnn.errors import BackendError, InputError, PlugnnError, RuntimeClosedError
from plugnn.optimized import OptimizedNetwork
from plugnn.placement import fuse_again
from plugnn.shape_program import BindingError, ShapeProgram
from plugnn.symbolic import ShapeEnv

log = logging.getLogger("plugnn")

DEFAULT_INSTANCES = 8

Loader = Callable[..., Any]  # Runtime.load_network(concrete network, reshape_from, remake) -> LoadedNetwork


class Instance:
    """A symbolic network at one binding: its LoadedNetwork and its shape values' arrays."""

    __slots__ = ("binding", "loaded", "shape_values", "users", "evicted")

    def __init__(self, binding: tuple[int, ...], loaded: Any, shape_values: dict[str, np.ndarray]) -> None:
        self.binding = binding
        self.loaded = loaded
        self.shape_values = shape_values
        self.users = 0
        self.evicted = False


class SymbolicLoadedNetwork:
    """A loaded network whose input shapes may change from run to run (see the module's text)."""

    def __init__(self, optimized: OptimizedNetwork, env: ShapeEnv, load: Loader,
                 capacity: int = DEFAULT_INSTANCES) -> None:
        self.name = optimized.network_name
        self.optimized = optimized
        self.program = ShapeProgram(optimized.graph, env, self.name)
        self.capacity = capacity
        self._load = load
        self._symbols = list(env.hints)
        self._instances: OrderedDict[tuple[int, ...], Instance] = OrderedDict()
        self._refused: set[tuple[int, ...]] = set()
        self._lock = threading.Lock()      # the instance table
        self._make_lock = threading.Lock()  # one instance made at a time (reshape's rule)
        self._loaded = True
        self.instances_made = 0
        self.last_profile: list[dict[str, Any]] = []
        self.last_instance: Instance | None = None
        shape_value_keys = set(optimized.graph.shape_values)
        self._input_names = [n for n in optimized.graph.inputs if n not in shape_value_keys]
        self._warned_recreated: set[str] = set()

    # -- what it takes and gives -----------------------------------------------------------

    @property
    def input_infos(self) -> dict[str, Any]:
        graph = self.optimized.graph
        return {name: graph.infos[graph.inputs[name]] for name in self._input_names}

    @property
    def output_infos(self) -> dict[str, Any]:
        graph = self.optimized.graph
        return {name: graph.infos[key] for name, key in graph.outputs.items()}

    @property
    def symbols(self) -> dict[str, int]:
        """The symbols and their hints (the binding the network was built at)."""
        return dict(self.program.env.hints)

    @property
    def loaded(self) -> bool:
        return self._loaded

    # -- running ---------------------------------------------------------------------------

    def run(self, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray] | None = None,
            profile: bool = False, stop: Callable[[], bool] | None = None) -> dict[str, np.ndarray]:
        """Run once at the inputs' shapes (any binding of the symbols the network holds at);
        `outputs`, `profile` and `stop` as LoadedNetwork.run takes them. InputError for inputs
        that do not fit the declared ranks and fixed dims; BindingError for shapes the network
        does not hold at."""
        if not isinstance(inputs, Mapping):
            raise InputError(f"network {self.name!r}: inputs must be a dict of input name to numpy.ndarray, got "
                             f"{type(inputs).__name__}")
        shapes = {}
        for name in self._input_names:
            array = inputs.get(name)
            if array is None:
                raise InputError(f"network {self.name!r} takes inputs {sorted(self._input_names)}; missing {name!r}")
            shape = getattr(array, "shape", None)
            if shape is None:
                raise InputError(f"input {name!r} must be a numpy.ndarray, got {type(array).__name__}")
            shapes[name] = shape
        instance = self.acquire(self.program.bind(shapes))
        try:
            feed = dict(inputs)
            feed.update(instance.shape_values)
            results = instance.loaded.run(feed, outputs, profile, stop=stop)
            if profile:
                self.last_profile = instance.loaded.last_profile
            return results
        finally:
            self.release(instance)

    def acquire(self, binding: Mapping[str, int]) -> Instance:
        """The instance for `binding` (made if new), with a use counted: release() ends it."""
        key = tuple(binding[s] for s in self._symbols)
        with self._lock:
            instance = self._hit(key)
            if instance is not None:
                return instance
            if key in self._refused:
                raise BindingError(f"network {self.name!r}: a backend refused the shapes {dict(binding)} before")
        with self._make_lock:
            with self._lock:
                instance = self._hit(key)
                if instance is not None:
                    return instance
                if not self._loaded:
                    raise RuntimeClosedError(f"network {self.name!r} was unloaded")
                source = self.last_instance if self.last_instance is not None and not self.last_instance.evicted \
                    else next(reversed(self._instances.values()), None)
            instance = self._make(key, binding, source)
            with self._lock:
                instance.users += 1
                self._instances[key] = instance
                self.last_instance = instance
                evicted = []
                while len(self._instances) > self.capacity:
                    _, old = self._instances.popitem(last=False)
                    old.evicted = True
                    if old.users == 0:
                        evicted.append(old)
            for old in evicted:
                old.loaded.unload()
            return instance

    def release(self, instance: Instance) -> None:
        with self._lock:
            instance.users -= 1
            unload = instance.evicted and instance.users == 0
        if unload:
            with self._make_lock:
                instance.loaded.unload()

    def _hit(self, key: tuple[int, ...]) -> Instance | None:
        instance = self._instances.get(key)
        if instance is not None:
            self._instances.move_to_end(key)
            instance.users += 1
        return instance

    def _make(self, key: tuple[int, ...], binding: Mapping[str, int], source: Instance | None) -> Instance:
        values = self.program.evaluate(binding)
        graph, shape_values = self.program.instantiate(values)
        concrete = OptimizedNetwork(self.optimized.network_name, self.optimized.runtime, graph,
                                    self.optimized.preferred)
        def remake(node: Any, backend: Any) -> Any:
            return fuse_again(backend, node, self.program.originals(node, values), graph)

        try:
            loaded = self._load(concrete, [source.loaded] if source is not None else [], remake)
        except (BackendError, PlugnnError) as exc:
            if isinstance(exc, RuntimeClosedError):
                raise
            with self._lock:
                self._refused.add(key)
            raise BindingError(f"network {self.name!r} cannot be loaded at the shapes {dict(binding)}: {exc}") from exc
        self.instances_made += 1
        if source is not None:
            self._note_recreated(loaded, graph)
        log.debug("network %r: instance for %s (%d of %d layers re-sized, %d fused again)", self.name,
                  dict(binding), len(loaded.reshaped_layers), len(graph.nodes), len(loaded.refused_layers))
        return Instance(key, loaded, shape_values)

    def _note_recreated(self, loaded: Any, graph: Any) -> None:
        """Say once per backend that its workloads were created again rather than re-sized."""
        reshaped = set(loaded.reshaped_layers)
        for node in graph.nodes:
            backend = node.backend_id
            if backend is None or node.name in reshaped or backend in self._warned_recreated:
                continue
            self._warned_recreated.add(backend)
            log.info("network %r: backend %r made new workloads for new shapes (layer %r and maybe others) where "
                     "re-sizing was possible only with pn_workload.reshape", self.name, backend, node.name)

    # -- what it holds ---------------------------------------------------------------------

    def instances(self) -> list[Instance]:
        with self._lock:
            return list(self._instances.values())

    def describe(self) -> dict[str, Any]:
        """The symbols, the guards, and the bindings loaded with their arenas' sizes."""
        info = self.program.describe()
        info["instances"] = [{"binding": dict(zip(self._symbols, i.binding)),
                              "arena_bytes": i.loaded.memory_plan.peak_bytes,
                              "reshaped_layers": len(i.loaded.reshaped_layers),
                              "layers": len(i.loaded._graph.nodes)} for i in self.instances()]
        info["instances_made"] = self.instances_made
        return info

    def unload(self) -> None:
        """Unload every instance (those in use when their run ends)."""
        with self._make_lock:
            with self._lock:
                self._loaded = False
                entries = list(self._instances.values())
                self._instances.clear()
                for instance in entries:
                    instance.evicted = True
            for instance in entries:
                if instance.users == 0:
                    instance.loaded.unload()

    def __enter__(self) -> SymbolicLoadedNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unload()

    def __repr__(self) -> str:
        state = f"{len(self._instances)} instance(s)" if self._loaded else "unloaded"
        return f"<plugnn.SymbolicLoadedNetwork {self.name!r} symbols={self.symbols} {state}>"
