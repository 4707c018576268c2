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
Instances are kept per binding, so alternating shapes cost a lookup each. An instance can also
be re-sized in place into another binding's (LoadedNetwork.resize): only the layers whose shapes
differ between the two bindings (ShapeProgram.changed_layers) are touched, and its arena stays
while their tensors fit. A binding never seen before re-sizes the last instance made when that
one ran only once (a stream of new shapes, as decode steps or requests of varying length, keeps
one instance), and so does any new binding while the runs' recent bindings (the last
2 x `capacity` - 1 before it) are more than `capacity` distinct ones: shapes that come back in a cycle longer
than the table (a second generation of decode steps, lengths drawn at random) would each evict
an instance before it is used again, so making one does not pay. Otherwise a binding seen before
gets an instance of its own (shapes that come back stay loaded); past `capacity` (8) instances,
the least recently used one no run holds is re-sized. Most re-sizes in a stream are steady
(plugnn.steady_resize: new dims written into the bound tensors, when the re-size before that
changed the same shape values kept every workload, step and place in the arena); the last
instance takes any binding a steady re-size reaches, seen before or not.

A binding that breaks a guard of the network (a decision its construction took on the hints
that does not hold at those shapes), or at which a backend refuses a layer, raises
BindingError: the network does not hold there (an InferenceSession then builds another one,
at those shapes).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from plugnn import fork_safety
from plugnn.errors import BackendError, InputError, PlugnnError, RuntimeClosedError
from plugnn.optimized import OptimizedNetwork
from plugnn.placement import fuse_again
from plugnn.shape_program import BindingError, ShapeProgram
from plugnn.symbolic import ShapeEnv

log = logging.getLogger("plugnn")

DEFAULT_INSTANCES = 8

Loader = Callable[..., Any]  # Runtime.load_network(concrete network, reshape_from, remake) -> LoadedNetwork
Base = tuple[Any, dict[str, np.ndarray], tuple[int, ...]]  # a concrete graph, its shape values, its values


class Instance:
    """A symbolic network at one binding: its LoadedNetwork and its shape values' arrays."""

    __slots__ = ("binding", "loaded", "shape_values", "values", "base", "users", "uses", "evicted")

    def __init__(self, binding: tuple[int, ...], loaded: Any, shape_values: dict[str, np.ndarray],
                 values: tuple[int, ...], base: Base) -> None:
        self.binding = binding
        self.loaded = loaded
        self.shape_values = shape_values
        self.values = values  # every expression of the network at this binding (ShapeProgram.evaluate)
        # A concrete graph made for this instance's network (at this binding, or at an earlier
        # one it was re-sized from steadily), its shape values and values: what the concrete
        # graph at another binding is made from (ShapeProgram.instantiate's `since`).
        self.base = base
        self.users = 0  # runs holding it now
        self.uses = 0   # runs it ran, ever
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
        self._by_shapes: dict[tuple[tuple[int, ...], ...], Instance] = {}  # input shapes run -> instance
        self._refused: set[tuple[int, ...]] = set()
        self._seen: OrderedDict[tuple[int, ...], None] = OrderedDict()  # bindings instances were made for
        self._recent: deque[tuple[int, ...]] = deque(maxlen=2 * capacity)  # the bindings of the last runs
        self._lock = threading.Lock()      # the instance table
        self._make_lock = threading.Lock()  # one instance made at a time (reshape's rule)
        fork_safety.fresh_locks_in_child(self, "_lock", "_make_lock")
        self._loaded = True
        self.instances_made = 0
        self.instances_resized = 0  # instances made by re-sizing the least recently used one in place
        self.steady_resizes = 0  # of those, re-sized steadily (plugnn.steady_resize)
        self.last_profile: list[dict[str, Any]] = []
        self.last_instance: Instance | None = None
        shape_value_keys = set(optimized.graph.shape_values)
        self._input_names = [n for n in optimized.graph.inputs if n not in shape_value_keys]
        self._binder = self.program.binder(self._input_names)  # input shapes -> the symbols' values
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

    @property
    def input_names(self) -> list[str]:
        """The inputs, in the order `run(shapes=)` takes their shapes."""
        return list(self._input_names)

    def run(self, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray] | None = None,
            profile: bool = False, stop: Callable[[], bool] | None = None, *,
            shapes: tuple[tuple[int, ...], ...] | None = None) -> dict[str, np.ndarray]:
        """Run once at the inputs' shapes (any binding of the symbols the network holds at);
        `outputs`, `profile` and `stop` as LoadedNetwork.run takes them; `shapes`, the inputs'
        shapes in `input_names`' order when the caller has them at hand. InputError for inputs
        that do not fit the declared ranks and fixed dims; BindingError for shapes the network
        does not hold at."""
        key = shapes
        if key is None:
            try:
                key = tuple([inputs[name].shape for name in self._input_names])
            except (KeyError, AttributeError, TypeError):
                key = None
        instance = self._by_shapes_hit(key) if key is not None else None  # the usual run: shapes seen before
        if instance is None:
            instance = self._bound(inputs, key)
        instance.uses += 1  # a heuristic for _victim (a lost count under threads costs only a choice)
        try:
            feed = inputs if not instance.shape_values else {**inputs, **instance.shape_values}
            results = instance.loaded.run(feed, outputs, profile, stop=stop)
            if profile:
                self.last_profile = instance.loaded.last_profile
            return results
        finally:
            self.release(instance)

    def _by_shapes_hit(self, key: tuple[tuple[int, ...], ...]) -> Instance | None:
        """The instance a run with these inputs' shapes (in `input_names`' order) used before
        (use counted), or None."""
        with self._lock:
            instance = self._by_shapes.get(key)
            if instance is None or instance.evicted:
                return None
            self._instances.move_to_end(instance.binding)
            self._recent.append(instance.binding)
            instance.users += 1
            return instance

    def _bound(self, inputs: Any, key: tuple[tuple[int, ...], ...] | None = None) -> Instance:
        """The instance of the inputs' binding (checked, made if new), remembered by their shapes
        (`key`: those shapes in `input_names`' order, when the caller has them)."""
        symbols = self._binder(key) if key is not None else None
        if symbols is not None:  # shapes that bind every symbol, with nothing to say about them
            instance = self.acquire(dict(zip(self._symbols, symbols)), key=symbols)
            self._remember(key, instance)
            return instance
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
            shapes[name] = tuple(shape)
        instance = self.acquire(self.program.bind(shapes))
        self._remember(tuple(shapes[n] for n in self._input_names), instance)
        return instance

    def _remember(self, key: tuple[tuple[int, ...], ...], instance: Instance) -> None:
        with self._lock:
            if len(self._by_shapes) >= 4 * self.capacity:  # forget shapes of evicted instances
                self._by_shapes = {k: i for k, i in self._by_shapes.items() if not i.evicted}
            self._by_shapes[key] = instance

    def hold_last(self) -> Instance | None:
        """The last instance made, with a use counted (so it is neither re-sized nor unloaded until
        release()), or None: what another network of the same model may re-size its workloads
        from (their prepacked weights shared)."""
        with self._lock:
            instance = self.last_instance
            if instance is None or instance.evicted or not instance.loaded.loaded:
                return None
            instance.users += 1
            return instance

    def acquire(self, binding: Mapping[str, int], donors: Sequence[Any] = (),
                key: tuple[int, ...] | None = None) -> Instance:
        """The instance for `binding` (made if new), with a use counted: release() ends it.
        `donors`: loaded networks of the same model (held loaded by the caller) that a first
        instance re-sizes its workloads from, as Runtime.load_network's reshape_from. `key`:
        the binding's values in the order of `symbols` (given: the binding is complete)."""
        complete = key is not None
        if key is None:
            key = tuple(binding[s] for s in self._symbols)
        with self._lock:
            self._recent.append(key)
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
            values = self.program.evaluate(binding, complete)  # BindingError for a broken guard
            with self._lock:
                victim = self._victim(key, values)
                source = self.last_instance if self.last_instance is not None and not self.last_instance.evicted \
                    else next(reversed(self._instances.values()), None)
            instance = self._resized(key, binding, values, victim) if victim is not None \
                else self._make(key, binding, values, source, donors)
            with self._lock:
                instance.users += 1
                self._instances[key] = instance
                self.last_instance = instance
                self._seen[key] = None
                if len(self._seen) > 8 * self.capacity:
                    self._seen.popitem(last=False)
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

    def _victim(self, key: tuple[int, ...], values: tuple[int, ...] | None = None) -> Instance | None:
        """The instance to re-size into the new binding `key`'s (its `values`), taken out of the
        table (under the table lock), or None to make a new one. The last instance made, when a
        steady re-size takes it there (tens of microseconds: an instance of its own would not
        pay) and no run holds it; also for a new binding when the re-size there would keep every
        changed layer's workload (it is then recorded as a steady re-size). A stream of shapes
        never seen before (decode steps, requests of varying length): the last instance made, if
        it ran once and no run holds it, so such a stream keeps one instance, re-sized at each
        shape; the same for any binding while the recent runs cycle over more bindings than the
        table holds. A binding seen before (shapes that come back) gets an instance of its own.
        When the table is full: its least recently used instance no run holds."""
        last = self.last_instance
        taken = last is not None and values is not None \
            and last.loaded.steady_resize(self.program.changed_slots(last.values, values)) is not None
        if not taken:
            before = list(self._recent)[:-1]  # the runs' bindings before this one's
            cycling = len(before) == self._recent.maxlen - 1 and len(set(before)) > self.capacity
            # a new binding whose re-size would keep every changed layer's workload (so it can be
            # recorded as a steady re-size) takes the last instance however often that one ran
            taken = cycling or (key not in self._seen and last is not None and values is not None
                                and self._keeps_workloads(last, values)) \
                or (key not in self._seen and last is not None and last.uses == 1)
        if last is not None and taken and not last.evicted and last.users == 0 and last.loaded.resizable \
                and self._instances.get(last.binding) is last:
            del self._instances[last.binding]
            last.evicted = True
            return last
        if len(self._instances) < self.capacity:
            return None
        for key, instance in self._instances.items():
            if instance.users == 0 and instance.loaded.resizable:
                del self._instances[key]
                instance.evicted = True  # its shapes no longer find it
                return instance
        return None

    def _keeps_workloads(self, instance: Instance, values: tuple[int, ...]) -> bool:
        """Whether re-sizing `instance` to `values` would keep every changed layer's workload
        (LoadedNetwork.keeps_workloads; a fused Reshape's grouping of axes is left to the
        re-size itself)."""
        slots = self.program.changed_slots(instance.values, values)
        return instance.loaded.keeps_workloads(self.program.changed_layers(instance.values, values),
                                               self.program.described_layers(slots),
                                               self.program.changed_tensors(slots))

    def _concrete(self, values: tuple[int, ...], base: Base | None = None
                  ) -> tuple[OptimizedNetwork, dict[str, np.ndarray], Any]:
        """The network at `values`: concrete (made from `base` where given), its shape values, and
        how to fuse a layer again there."""
        graph, shape_values = self.program.instantiate(values, base)
        concrete = OptimizedNetwork(self.optimized.network_name, self.optimized.runtime, graph,
                                    self.optimized.preferred)

        def remake(node: Any, backend: Any) -> Any:
            return fuse_again(backend, node, self.program.originals(node, values), graph)

        return concrete, shape_values, remake

    def _refuse(self, key: tuple[int, ...], binding: Mapping[str, int], exc: Exception) -> BindingError:
        with self._lock:
            self._refused.add(key)
        return BindingError(f"network {self.name!r} cannot be loaded at the shapes {dict(binding)}: {exc}")

    def _make(self, key: tuple[int, ...], binding: Mapping[str, int], values: tuple[int, ...],
              source: Instance | None, donors: Sequence[Any] = ()) -> Instance:
        concrete, shape_values, remake = self._concrete(values)
        graph = concrete.graph
        try:
            loaded = self._load(concrete, [source.loaded] if source is not None else list(donors), remake)
        except (BackendError, PlugnnError) as exc:
            if isinstance(exc, RuntimeClosedError):
                raise
            raise self._refuse(key, binding, exc) from exc
        self.instances_made += 1
        if source is not None:
            self._note_recreated(loaded, graph)
        log.debug("network %r: instance for %s (%d of %d layers re-sized, %d fused again)", self.name,
                  dict(binding), len(loaded.reshaped_layers), len(graph.nodes), len(loaded.refused_layers))
        return Instance(key, loaded, shape_values, values, (graph, shape_values, values))

    def _resized(self, key: tuple[int, ...], binding: Mapping[str, int], values: tuple[int, ...],
                 victim: Instance) -> Instance:
        """The instance of a new binding made from `victim` (out of the table, held by no run) in
        place: only the layers whose shapes differ between the two bindings are touched. Where
        a steady re-size was recorded for the values that change, it is re-done (LoadedNetwork.
        resize_steady: the concrete graph made only when read); else LoadedNetwork.resize, which
        is recorded as a steady re-size when it is one. The victim is unloaded if that fails."""
        loaded = victim.loaded
        slots = self.program.changed_slots(victim.values, values)
        steady = loaded.steady_resize(slots)
        try:
            if steady is not None:
                base = victim.base

                def materialize() -> tuple[OptimizedNetwork, Any]:
                    concrete, _, remake = self._concrete(values, base)
                    return concrete, remake

                if loaded.resize_steady(steady, values, materialize):
                    self.instances_resized += 1
                    self.steady_resizes += 1
                    shape_values = self.program.shape_value_arrays(values, victim.shape_values, victim.values)
                    return Instance(key, loaded, shape_values, values, base)
            since = (loaded.optimized.graph, victim.shape_values, victim.values)
            concrete, shape_values, remake = self._concrete(values, since)
            changed = self.program.changed_layers(victim.values, values)
            loaded.resize(concrete, changed, remake)
            loaded.record_steady_resize(slots, self.program.dims_rule, values)
        except BaseException as exc:
            loaded.unload()
            if not isinstance(exc, (BackendError, PlugnnError)) or isinstance(exc, RuntimeClosedError):
                raise
            raise self._refuse(key, binding, exc) from exc
        self.instances_resized += 1
        self._note_recreated(loaded, concrete.graph)
        log.debug("network %r: instance for %s re-sized from %s (%d of %d layers changed: %d re-sized, %d fused "
                  "again)", self.name, dict(binding), dict(zip(self._symbols, victim.binding)), len(changed),
                  len(concrete.graph.nodes), len(loaded.reshaped_layers), len(loaded.refused_layers))
        return Instance(key, loaded, shape_values, values, (concrete.graph, shape_values, values))

    def _note_recreated(self, loaded: Any, graph: Any) -> None:
        """Say once per backend that its workloads were created again rather than re-sized."""
        reshaped = set(loaded.reshaped_layers) | set(loaded.kept_layers)
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
        info["instances_resized"] = self.instances_resized
        info["steady_resizes"] = self.steady_resizes
        return info

    def unload(self) -> None:
        """Unload every instance (those in use when their run ends)."""
        with self._make_lock:
            with self._lock:
                self._loaded = False
                entries = list(self._instances.values())
                self._instances.clear()
                self._by_shapes.clear()
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
