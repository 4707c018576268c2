"""Programs: an ONNX graph run as segments (specialized networks) and runtime steps.

`DynamicModel` is a whole model on the dynamic path (what `InferenceSession` and
`plugnn.onnx.backend` use for a model `plugnn.onnx.load` cannot build as one Network); its
`Engine` holds what every program of the model shares (runtime, backends, the loaded segments,
a lock), and each `Program` runs one graph: the model's, an If branch, a Loop or Scan body, a
function body. A program keeps, per node index where a segment starts, the segments imported
there, keyed by the shapes (and bound values) of what they read, least recently used evicted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from plugnn.dynamic.control import run_node
from plugnn.dynamic.segments import Imported, Rebind, RuntimeNode, SegmentImporter, outer_reads
from plugnn.dynamic.strings import as_string_input
from plugnn.dynamic.values import dense, describe
from plugnn import fork_safety
from plugnn.errors import InputError, ModelError, PlugnnError, RunStoppedError
from plugnn.loaded import LoadedNetwork
from plugnn.network import Network
from plugnn.onnx.context import GraphTables
from plugnn.optimized import OptimizedNetwork
from plugnn.optimizer import optimize
from plugnn.loaded_symbolic import SymbolicLoadedNetwork
from plugnn.symbolic import evaluate_key

log = logging.getLogger("plugnn")

DEFAULT_SEGMENT_CAPACITY = 16  # specializations kept per variant of a segment (LRU)
_STRING = 8  # onnx.TensorProto.STRING


class Engine:
    """What every program of one model shares: the runtime and preferred backends, the loaded
    segments (unloaded by `close`), the lock that serializes runs, and counters."""

    def __init__(self, runtime: Any, backends: Sequence[str] | None, source: str, name: str,
                 capacity: int = DEFAULT_SEGMENT_CAPACITY) -> None:
        self.runtime = runtime
        self.backends = list(backends) if backends is not None else None
        self.source = source
        self.name = name
        self.capacity = capacity
        self.lock = threading.RLock()
        fork_safety.fresh_locks_in_child(self, "lock")
        self.loaded: dict[int, LoadedNetwork] = {}
        self.segments_made = 0
        self.closed = False
        # The current run's stop request (DynamicModel.run(stop=...)), asked before each segment
        # and runtime node of every program, and passed to each segment's LoadedNetwork.run.
        self.stop: Callable[[], bool] | None = None
        # The current run's profile (DynamicModel.run(profile=...)): (segment's OptimizedNetwork,
        # its LoadedNetwork.last_profile) per segment run, in order; None: not profiling.
        self.profile: list[tuple[OptimizedNetwork, list[dict[str, Any]]]] | None = None

    def check_stop(self, before: str) -> None:
        if self.stop is not None and self.stop():
            raise RunStoppedError(f"{self.source}: the run was stopped before {before} (RunOptions.terminate)")

    def load(self, network: Network) -> tuple[OptimizedNetwork, LoadedNetwork]:
        optimized = optimize(network, self.runtime, self.backends)
        loaded = self.runtime.load_network(optimized)
        self.loaded[id(loaded)] = loaded
        self.segments_made += 1
        return optimized, loaded

    def unload(self, loaded: LoadedNetwork) -> None:
        self.loaded.pop(id(loaded), None)
        loaded.unload()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for loaded in list(self.loaded.values()):
                try:
                    loaded.unload()
                except PlugnnError as exc:  # closing goes on
                    log.error("unloading segment %r: %s", loaded.name, exc)
            self.loaded.clear()


@dataclass
class Instance:
    """One segment specialized for one environment: its network loaded (or None), where it stops.
    A symbolic instance (`imported.env` holds symbols) serves every environment whose values
    differ from `shapes` only in the symbols' axes: its network is a SymbolicLoadedNetwork,
    re-sized at each new binding."""

    imported: Imported
    optimized: OptimizedNetwork | None
    loaded: LoadedNetwork | None
    shapes: dict[str, tuple[int, ...]]
    milliseconds: float
    start: int = 0

    @property
    def stop(self) -> int:
        return self.imported.stop

    @property
    def symbolic(self) -> bool:
        return bool(self.imported.symbols)

    @cached_property
    def computes_dims(self) -> bool:
        """Whether an output is a value computed from the symbols (evaluated at each binding)."""
        return any(kind == "dims" for _, (kind, _) in self.imported.outputs)

    def binding(self, values: Mapping[str, Any]) -> dict[str, int]:
        return {symbol: int(values[name].shape[axis]) for symbol, (name, axis) in self.imported.symbols.items()}


class Unfit(Exception):
    """A symbolic instance does not hold for this environment (a guard breaks): the segment is
    specialized for it instead."""


@dataclass
class Variant:
    """The segments at one start index that read the same values (`reads`), the `bound` ones by
    contents, the others by shape and element type."""

    reads: tuple[str, ...]
    bound: frozenset[str]
    entries: OrderedDict[tuple[Any, ...], Instance] = field(default_factory=OrderedDict)
    # The axes of the unbound values that took more than one size in this variant's
    # environments (learned from its entries): a segment imported with those axes as symbols
    # serves every size of them (`symbolic`, by symbolic_key; None: the symbolic import failed).
    axes: dict[str, frozenset[int]] = field(default_factory=dict)
    symbolic: dict[tuple[Any, ...], Instance | None] = field(default_factory=dict)

    def key(self, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        parts: list[Any] = []
        for name in self.reads:
            value = values.get(name)
            if not isinstance(value, np.ndarray):
                return None
            if name in self.bound:
                parts.append((value.dtype.str, value.shape, value.tobytes()))
            else:
                parts.append((value.dtype.str, value.shape))
        return tuple(parts)

    def symbolic_key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """`key` with the sizes of the symbolic axes left out (a 0 kept: no symbol is 0)."""
        parts: list[Any] = []
        for name, part in zip(self.reads, key):
            axes = self.axes.get(name)
            if axes and name not in self.bound:
                part = (part[0], tuple(None if a in axes and d >= 1 else d for a, d in enumerate(part[1])))
            parts.append(part)
        return tuple(parts)

    def learn(self, key: tuple[Any, ...]) -> bool:
        """Adds to `axes` the axes where `key` differs from an entry's key of the same element
        types, ranks and bound contents; True when it added one."""
        added = False
        for other in self.entries:
            if len(other) != len(key):
                continue
            differ: dict[str, set[int]] = {}
            for name, mine, theirs in zip(self.reads, key, other):
                if name in self.bound:
                    if mine != theirs:
                        break
                    continue
                if mine[0] != theirs[0] or len(mine[1]) != len(theirs[1]):
                    break
                axes = {a for a, (x, y) in enumerate(zip(mine[1], theirs[1])) if x != y and x >= 1 and y >= 1}
                if axes:
                    differ[name] = axes
            else:
                for name, axes in differ.items():
                    merged = self.axes.get(name, frozenset()) | axes
                    if merged != self.axes.get(name):
                        self.axes[name] = frozenset(merged)
                        added = True
        return added


class Program:
    """One graph run as segments and runtime steps over an environment of values.

    `nodes` in order, read at `opset`; `inputs` the names the caller binds (a body's formal
    inputs; the model's graph inputs), `outputs` the names returned; `constants` the arrays known
    for every run (initializers of this graph and the graphs around it); `label` the node path
    that every error of this program starts with (empty for a model's graph)."""

    def __init__(self, engine: Engine, graph: Any, nodes: Sequence[Any], opset: int, inputs: Sequence[str],
                 outputs: Sequence[str], constants: Mapping[str, np.ndarray], label: str,
                 declared: Sequence[Any] = ()) -> None:
        self.engine = engine
        self.graph = graph
        self.nodes = list(nodes)
        self.opset = opset
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.constants = dict(constants)
        self.label = label
        self.declared = list(declared)
        self.source = f"{engine.source}: {label}" if label else engine.source
        self.network_name = engine.name
        end = len(self.nodes)
        self.last_use: dict[str, int] = {}
        self.outer_reads: dict[str, int] = {}
        for index, node in enumerate(self.nodes):
            for name in node.input:
                if name:
                    self.last_use[name] = index
            for name, count in outer_reads(node).items():
                self.last_use[name] = index
                self.outer_reads[name] = self.outer_reads.get(name, 0) + count
        for name in self.outputs:
            self.last_use[name] = end
        self._variants: dict[int, list[Variant]] = {}
        self._binds: dict[int, set[str]] = {}
        self._runtime: dict[int, ModelError] = {}
        self.subprograms: dict[Any, Program] = {}
        self.outer_names: list[str] | None = None  # what it reads from outside (control.py fills it)
        self._tables: GraphTables | None = None

    @property
    def tables(self) -> GraphTables:
        """The graph's name tables, made once for every segment's import."""
        if self._tables is None:
            self._tables = GraphTables.of(self.graph)
        return self._tables

    # -- running -------------------------------------------------------------------------------

    def run(self, env: Mapping[str, Any]) -> list[Any]:
        """Run the graph on `env` (every input, and the outer values the graph reads); returns
        the outputs in order."""
        values = dict(env)
        index = 0
        count = len(self.nodes)
        while index < count:
            self.engine.check_stop(f"node {self.nodes[index].name or index!r}")
            cause = self._runtime.get(index)
            if cause is None:
                instance = self._segment(index, values)
                if instance is not None:
                    try:
                        self._run_instance(instance, values)
                    except Unfit:
                        instance = self._make_segment(index, values, symbolic=False)
                        assert instance is not None  # the symbolic import of this start made one
                        self._run_instance(instance, values)
                    index = instance.stop
                    continue
                cause = self._runtime[index]
            run_node(self, index, cause, values)
            index += 1
        try:
            return [values[name] if name else None for name in self.outputs]
        except KeyError as exc:
            raise ModelError(f"{self.source}: output {exc.args[0]!r} is produced by no node, initializer or input") \
                from None

    def _run_instance(self, instance: Instance, values: dict[str, Any]) -> None:
        """Runs the instance's network on `values` and puts its outputs there; Unfit when a
        symbolic instance does not hold at these values' shapes (nothing is put)."""
        results: dict[str, Any] = {}
        binding = None
        if instance.symbolic:  # a SymbolicLoadedNetwork checks its guards itself (BindingError)
            checks = not isinstance(instance.loaded, SymbolicLoadedNetwork)
            if checks or instance.computes_dims:
                binding = instance.binding(values)
            if checks and instance.imported.env is not None and instance.imported.env.broken_guard(binding) is not None:
                raise Unfit()
        if instance.loaded is not None:
            feed = {name: dense(values[name]) for name in instance.imported.feeds}
            try:
                profiled = self.engine.profile is not None
                results = instance.loaded.run(feed, stop=self.engine.stop, profile=profiled)
                if profiled and instance.optimized is not None:
                    self.engine.profile.append((instance.optimized, list(instance.loaded.last_profile)))
            except RunStoppedError:
                raise
            except InputError:  # BindingError, or a network the symbols did not reach at other sizes
                if not instance.symbolic:
                    raise
                raise Unfit() from None
            except PlugnnError as exc:
                raise self.located(exc) from None
        for name, (kind, source) in instance.imported.outputs:
            if kind == "network":
                values[name] = results[source]
            elif kind == "env":
                values[name] = values[source]
            elif kind == "dims":
                exprs, dtype = source
                values[name] = np.array([e if isinstance(e, int) else evaluate_key(e.key, binding)
                                         for e in exprs.flat], dtype).reshape(exprs.shape)
            else:
                values[name] = source

    def located(self, exc: PlugnnError) -> PlugnnError:
        """`exc` with this program's node path in front (once: inner programs name theirs)."""
        if self.label and not getattr(exc, "plugnn_located", False):
            exc.args = (f"{self.label}: {exc}",) + tuple(exc.args[1:])
            exc.plugnn_located = True  # type: ignore[attr-defined]
        return exc

    # -- segments --------------------------------------------------------------------------------

    def _segment(self, start: int, values: dict[str, Any]) -> Instance | None:
        for variant in self._variants.get(start, ()):
            key = variant.key(values)
            if key is None:
                continue
            instance = variant.entries.get(key)
            if instance is not None:
                variant.entries.move_to_end(key)
                return instance
            if variant.axes:
                instance = variant.symbolic.get(variant.symbolic_key(key))
                if instance is not None:
                    return instance
        return self._make_segment(start, values)

    def _make_segment(self, start: int, values: dict[str, Any], symbolic: bool = True) -> Instance | None:
        """Imports, optimizes and loads the segment starting at `start` for `values`. When an
        earlier segment of the same variant read values of other sizes, the axes whose sizes
        changed become symbols (`symbolic`, unless False): the one symbolic network then serves
        every size of them."""
        clock = time.perf_counter()
        bound = self._binds.setdefault(start, set())
        for variant in self._variants.get(start, ()):
            key = variant.key(values)
            if not symbolic or key is None or not variant.learn(key) and not variant.axes:
                continue
            symbolic_key = variant.symbolic_key(key)
            if symbolic_key in variant.symbolic:  # tried: it failed, or does not hold here
                continue
            instance = self._make_symbolic(start, values, variant, clock)
            variant.symbolic[symbolic_key] = instance
            if instance is not None:
                return instance
        while True:
            importer = SegmentImporter(self, values, bound)
            try:
                imported = importer.import_segment(start)
            except Rebind as rebind:
                if rebind.name in bound:
                    raise ModelError(f"{self.source}: value {rebind.name!r} is bound and still needed at run time") \
                        from None
                bound.add(rebind.name)
                continue
            except RuntimeNode as runtime:
                self._runtime[start] = runtime.cause
                return None
            break
        reads = imported.reads
        bound_here = frozenset(n for n in reads if n in bound)
        variant = next((v for v in self._variants.get(start, ()) if v.reads == reads and v.bound == bound_here), None)
        if variant is None:
            variant = Variant(reads, bound_here)
            self._variants.setdefault(start, []).append(variant)
        key = variant.key(values)
        optimized = loaded = None
        if imported.network is not None:
            optimized, loaded = self.engine.load(imported.network)
        shapes = {n: tuple(values[n].shape) for n in reads if isinstance(values.get(n), np.ndarray)}
        instance = Instance(imported, optimized, loaded, shapes, (time.perf_counter() - clock) * 1e3, start)
        log.info("%s: segment of nodes %d..%d specialized for %s in %.1f ms", self.source, start, imported.stop - 1,
                 shapes, instance.milliseconds)
        if key is not None:
            variant.entries[key] = instance
            while len(variant.entries) > self.engine.capacity:
                _, old = variant.entries.popitem(last=False)
                if old.loaded is not None:
                    self.engine.unload(old.loaded)
        return instance

    def _make_symbolic(self, start: int, values: dict[str, Any], variant: Variant, clock: float) -> Instance | None:
        """The segment at `start` imported with `variant.axes` as symbols (hints: `values`'
        sizes), or None when that import fails, reads other values or ends elsewhere than the
        variant's segments (the segment is then specialized per size, as before)."""
        bound = set(variant.bound)
        try:
            imported = SegmentImporter(self, values, bound, variant.axes).import_segment(start)
        except (Rebind, RuntimeNode, PlugnnError) as exc:
            log.debug("%s: segment at node %d: no symbolic import (%s: %s)", self.source, start,
                      type(exc).__name__, exc)
            return None
        first = next(iter(variant.entries.values()), None)
        if imported.reads != variant.reads or (first is not None and imported.stop != first.stop) \
                or not imported.symbols:
            return None
        optimized = loaded = None
        if imported.network is not None:
            try:
                optimized, loaded = self.engine.load(imported.network)
            except PlugnnError as exc:
                log.debug("%s: segment at node %d: the symbolic network does not load (%s)", self.source, start, exc)
                return None
        shapes = {n: tuple(values[n].shape) for n in imported.reads if isinstance(values.get(n), np.ndarray)}
        instance = Instance(imported, optimized, loaded, shapes, (time.perf_counter() - clock) * 1e3, start)
        log.info("%s: segment of nodes %d..%d imported with symbols %s (sizes %s) in %.1f ms", self.source, start,
                 imported.stop - 1, sorted(imported.symbols), shapes, instance.milliseconds)
        return instance

    def child(self, key: Any, graph: Any, nodes: Sequence[Any], opset: int, inputs: Sequence[str],
              outputs: Sequence[str], constants: Mapping[str, np.ndarray], label: str,
              declared: Sequence[Any] = ()) -> Program:
        """The sub-program `key` of this one (made on first use): a branch, a body, a function."""
        sub = self.subprograms.get(key)
        if sub is None:
            sub = Program(self.engine, graph, nodes, opset, inputs, outputs, {**self.constants, **constants},
                          f"{self.label}: {label}" if self.label else label, declared)
            self.subprograms[key] = sub
        return sub

    # -- what it holds -----------------------------------------------------------------------

    def instances(self) -> list[tuple[int, Instance]]:
        return [(start, instance) for start in sorted(self._variants) for variant in self._variants[start]
                for instance in [*variant.entries.values(), *(i for i in variant.symbolic.values() if i is not None)]]

    def explain(self, verbose: bool | None = False) -> str:
        """Every loaded segment's placement (OptimizedNetwork.explain), then the sub-programs'."""
        lines: list[str] = []
        where = self.label or f"model {self.engine.name!r}"
        for start, instance in self.instances():
            stop = instance.stop
            shapes = ", ".join(f"{n}={list(s)}" for n, s in instance.shapes.items()) or "no run-time inputs"
            how = f"with symbols {', '.join(sorted(instance.imported.symbols))} (first sizes {shapes})" \
                if instance.symbolic else f"specialized for {shapes}"
            lines.append(f"== {where}: nodes #{start}..#{stop - 1} ({self.nodes[start].op_type} .. "
                         f"{self.nodes[stop - 1].op_type}), {how}")
            if instance.optimized is None:
                lines.append("   every value known at import: no layer runs")
            else:
                lines.append(instance.optimized.explain(verbose=verbose))
        for index, cause in sorted(self._runtime.items()):
            node = self.nodes[index]
            lines.append(f"== {where}: node #{index} ({node.op_type}) runs in the runtime")
        for sub in self.subprograms.values():
            text = sub.explain(verbose)
            if text:
                lines.append(text)
        return "\n".join(lines)


class DynamicModel:
    """A whole ONNX model on the dynamic path: `run(feed)` takes a dict of input name to value
    (a numpy.ndarray - of dtype object holding str for a string tensor -, a list of arrays for a
    sequence, None for an empty optional) and returns the outputs in graph order (arrays, lists,
    None)."""

    def __init__(self, proto: Any, source: str, runtime: Any, backends: Sequence[str] | None, *,
                 name: str | None = None, initializers: Mapping[str, np.ndarray] | None = None,
                 constants: Mapping[str, np.ndarray] | None = None,
                 capacity: int = DEFAULT_SEGMENT_CAPACITY) -> None:
        from plugnn.onnx.importer import opset_of, read_initializers

        graph = proto.graph
        self.proto = proto
        self.name = name or graph.name or "onnx_model"
        self.engine = Engine(runtime, backends, source, self.name, capacity)
        known = dict(initializers) if initializers is not None else read_initializers(proto, source)
        known.update(constants or {})
        self.input_names = [v.name for v in graph.input if v.name not in known]
        self.output_names = [v.name for v in graph.output]
        self.string_inputs = {v.name for v in graph.input if v.type.HasField("tensor_type")
                              and v.type.tensor_type.elem_type == _STRING}
        self.program = Program(self.engine, graph, graph.node, opset_of(proto, source), self.input_names,
                               self.output_names, known, "")

    def run(self, feed: Mapping[str, Any], stop: Callable[[], bool] | None = None,
            profile: list[tuple[OptimizedNetwork, list[dict[str, Any]]]] | None = None) -> list[Any]:
        """`stop`: asked before each segment, runtime node and layer; when it returns True the
        run ends with RunStoppedError (RunOptions.terminate). `profile`: a list that receives,
        per segment run, its OptimizedNetwork and LoadedNetwork.last_profile (layers timed)."""
        missing = [n for n in self.input_names if n not in feed]
        unknown = [n for n in feed if n not in self.input_names]
        if missing or unknown:
            raise InputError(f"{self.engine.source}: the model takes inputs {self.input_names}"
                             + (f"; missing {missing}" if missing else "")
                             + (f"; unknown {unknown}" if unknown else ""))
        env = {name: _value(feed[name], name, self.engine.source) for name in self.input_names}
        for name in self.string_inputs.intersection(env):
            env[name] = as_string_input(env[name], f"{self.engine.source}: input {name!r}")
        with self.engine.lock:
            if self.engine.closed:
                raise PlugnnError(f"{self.engine.source}: the model was closed")
            self.engine.stop, self.engine.profile = stop, profile
            try:
                return self.program.run(env)
            finally:
                self.engine.stop = self.engine.profile = None

    def explain(self, verbose: bool | None = False) -> str:
        """Where every segment loaded so far runs (each one's OptimizedNetwork.explain)."""
        with self.engine.lock:
            return self.program.explain(verbose)

    @property
    def segments_made(self) -> int:
        return self.engine.segments_made

    def close(self) -> None:
        self.engine.close()


def _value(value: Any, name: str, source: str) -> Any:
    """A run() value as a program holds it: an array (C-contiguous), a list of them, or None."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_value(v, f"{name}[{i}]", source) for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return dense(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    raise InputError(f"{source}: input {name!r} must be a numpy.ndarray, a list of them (a sequence) or None (an "
                     f"empty optional), got {describe(value)}")
