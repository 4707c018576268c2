"""LoadedNetwork: workloads created, memory planned and bound; run() executes them in order.

Load follows Arm NN's order: every runtime context hears before_load_network; each backend
used gets a memory manager, then a workload factory using it, then one workload per layer;
intermediate tensors get offsets in one arena (tensors with disjoint lifetimes share bytes);
every native workload is bound to its buffers once; contexts hear after_load_network. The
first run acquires the memory managers; unload releases them, destroys everything in reverse
and notifies the contexts around it.

Inputs: a graph input read only by backends plugnn ships (CpuRef, CpuAcc) is bound zero-copy to
the caller's array. One that another backend reads (a plugin of another vendor, a Python backend)
is copied per run into a buffer of the network's own, bound once, so a backend writing into its
input can never change the caller's array (NumPy's read-only flag would not stop C code): one
memcpy of that input per run. An isolated backend (plugnn.isolation) already runs on its
worker's copy: its inputs are not staged again.

Memory growth: every 64th run reads the process's resident size (/proc/self/statm, 17 us on
the shared test machine: 0.3 us a run); when it has grown by more than PLUGNN_LEAK_WARNING_BYTES
(default 256 MiB) since the 64th run, a warning (logger "plugnn") names the network and its backends, once: a backend
leaking memory per call is the usual cause (the process's other work may be too).

Runs on one loaded network are serialized by a lock (several threads may call run(); each
call executes alone); C kernels run with the GIL released. In a child forked while another
thread ran, the lock is new and every input and output is bound anew (plugnn.fork_safety).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, MutableSequence, Sequence
from typing import Any, NoReturn

import numpy as np

from plugnn.backend import Backend, BackendContext, DeviceBuffer, MemoryManager, Workload, WorkloadFactory
from plugnn.descriptors import LayerKind
from plugnn import fork_safety
from plugnn.errors import BackendError, InputError, NetworkError, PlugnnError, RunStoppedError, RuntimeClosedError
from plugnn.limits import MAX_TENSOR_BYTES_ENV, human_bytes, max_tensor_bytes
from plugnn.loader import is_bundled
from plugnn.graph import Node
from plugnn.memory_plan import ALIGNMENT, Block, MemoryPlan, plan
from plugnn.movement_views import MOVES, elided_layers, movement_views
from plugnn.native import BoundExecution
from plugnn.runner_library import runner_library
from plugnn.steady_resize import Materialize, SteadyResize, shape_at
from plugnn.step_runner import NativeRun, batched
from plugnn.optimized import OptimizedNetwork
from plugnn.reshape_groups import follows_grouping
from plugnn.shapes import DATA_DEPENDENT_KINDS


log = logging.getLogger("plugnn")

LEAK_WARNING_ENV = "PLUGNN_LEAK_WARNING_BYTES"
DEFAULT_LEAK_WARNING_BYTES = 256 << 20
_WATCH_EVERY = 64  # runs between two readings of the resident size (17 us each here)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident_bytes() -> int | None:
    """The process's resident set size now (Linux: /proc/self/statm), or None."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 128).split()[1]) * _PAGE
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        return None


def _leak_warning_bytes() -> int:
    raw = os.environ.get(LEAK_WARNING_ENV, "")
    try:
        return int(raw) if raw else DEFAULT_LEAK_WARNING_BYTES
    except ValueError:
        return DEFAULT_LEAK_WARNING_BYTES


class _Step:
    """One thing run() does: a prepared workload, or a runtime copy. `inputs` and `outputs`
    hold its bound buffers; assigning an item rebinds it (graph inputs and outputs, per run)."""

    __slots__ = ("name", "backend_id", "call", "inputs", "outputs", "output_shapes", "profiled_call")

    def __init__(self, name: str, backend_id: str, call: Callable[[], None], inputs: MutableSequence[Any],
                 outputs: MutableSequence[Any], output_shapes: Callable[[], Any] | None = None,
                 profiled_call: Callable[[], Callable[[], list[tuple[str, float]] | None] | None] | None = None
                 ) -> None:
        self.name = name
        self.backend_id = backend_id
        self.call = call
        self.inputs = inputs
        self.outputs = outputs
        # A data-dependent layer's: the outputs' actual shapes its last call reported.
        self.output_shapes = output_shapes
        # A workload's: call once timing its parts (PreparedWorkload.profiled_call), None for a copy.
        self.profiled_call = profiled_call


def _workload_step(node: Node, workload: Workload, inputs: list[Any], outputs: list[Any], workspace: Any) -> _Step:
    prepared = workload.prepare(inputs, outputs, workspace)
    backend_id = node.backend_id or "?"
    shapes = prepared.output_shapes if node.kind in DATA_DEPENDENT_KINDS else None
    if prepared.raises_plugnn_errors:
        return _Step(node.name, backend_id, prepared, prepared.inputs, prepared.outputs, shapes,
                     prepared.profiled_call)

    def call() -> None:
        try:
            prepared()
        except PlugnnError:
            raise
        except Exception as exc:  # a Python backend's failure, named like a native one
            raise BackendError(backend_id, f"execute(layer {node.name!r})", str(exc)) from exc

    def profiled_call() -> Callable[[], list[tuple[str, float]] | None] | None:
        try:
            read = prepared.profiled_call()
        except PlugnnError:
            raise
        except Exception as exc:
            raise BackendError(backend_id, f"execute(layer {node.name!r})", str(exc)) from exc
        if read is None:
            return None

        def parts() -> list[tuple[str, float]] | None:
            try:
                return read()
            except PlugnnError:
                raise
            except Exception as exc:
                raise BackendError(backend_id, f"read_profile(layer {node.name!r})", str(exc)) from exc

        return parts

    return _Step(node.name, backend_id, call, prepared.inputs, prepared.outputs, shapes, profiled_call)


class _MadeWhenRead:
    """An attribute of a LoadedNetwork that a steady re-size leaves at older shapes: reading it
    makes the concrete network at the new ones first (LoadedNetwork._materialize). The value is
    kept in the instance's `<name>_now`, which code that knows it reads a tensor a steady re-size
    never changes reads directly."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = name + "_now"

    def __get__(self, network: Any, owner: type | None = None) -> Any:
        if network is None:
            return self
        if network._pending is not None:
            network._materialize()
        return network.__dict__[self.slot]

    def __set__(self, network: Any, value: Any) -> None:
        network.__dict__[self.slot] = value


class LoadedNetwork:
    """A network ready to run on its backends. Create it with `Runtime.load_network`.

    It receives what loading needs: the backends that run its layers (by id), the runtime's
    backend contexts to notify, and `on_unload`, called once when it is unloaded."""

    def __init__(self, optimized: OptimizedNetwork, network_id: int, backends: Mapping[str, Backend],
                 contexts: Sequence[BackendContext], on_unload: Callable[[LoadedNetwork], None],
                 reshape_from: Sequence[LoadedNetwork] = (),
                 remake: Callable[[Node, Backend], Node | None] | None = None) -> None:
        self.network_id = network_id
        self.name = optimized.network_name
        # A steady re-size leaves the concrete graph at the new shapes to be made when read
        # (_materialize): until then, `_pending` makes it and `_stale_keys` are the tensors whose
        # buffers and bound views still have older shapes (their pn_tensor_info the new ones).
        self._pending: Materialize | None = None
        self._stale_keys: set[str] = set()
        # The steady re-sizes recorded (SteadyResize), by the values they change; valid while the
        # arena and the steps stay (cleared by _bind and by a re-size that replaces steps).
        self._steady: dict[Any, SteadyResize] = {}
        self._steady_record: tuple[tuple[int, ...], frozenset[str]] | None = None
        self._backends = dict(backends)
        self._contexts = list(contexts)
        self._on_unload = on_unload
        self._optimized = optimized
        self._graph = optimized.graph
        # Re-entrant: reading the graph inside a run (an error message) may make it (_materialize).
        self._lock = threading.RLock()
        self._managers: dict[str, MemoryManager] = {}
        self._factories: dict[str, WorkloadFactory] = {}
        self._workloads: list[Workload] = []
        self._device: list[tuple[Any, DeviceBuffer]] = []
        self._steps: list[_Step] = []
        self._acquired = False
        self._loaded = False
        self._runs = 0
        self._resident_at_start: int | None = None  # at the 64th run (after warm-up)
        self._growth_warned = False
        self.last_profile: list[dict[str, Any]] = []
        self._reshape_from = [n for n in reshape_from if n._loaded]
        # A symbolic network's instance: a fused layer whose workload its backend refuses at these
        # shapes is made again from the layers it fused (plugnn.loaded_symbolic).
        self._remake = remake
        self.refused_layers: list[str] = []
        # The layers whose workload was made by reshaping another loaded network's (pn_workload.reshape).
        self.reshaped_layers: list[str] = []
        # The layers a resize left as they were (their shapes did not change).
        self.kept_layers: list[str] = []
        # The layers a resize kept with their workloads, their tensors bound at the new shapes (ABI 1.3).
        self.rebound_layers: list[str] = []
        self.elided_layers: list[str] = []  # Reshapes and Gathers planned as views: never called (movement_views)
        self._load()
        self._reshape_from = []
        fork_safety.fresh_locks_in_child(self, "_lock")
        fork_safety.call_in_child(self, "_after_fork_in_child")

    def _after_fork_in_child(self) -> None:
        # A run in flight in another thread of the parent may have bound some of its arrays and
        # not yet recorded them: the child's first run binds every input and output again.
        self._bound = [None] * len(self._bound)

    # -- the concrete graph, made when read after a steady re-size -------------------------

    # The concrete graph, the optimized network and the buffers: made when read while a steady
    # re-size left them pending (_materialize); stored as `_graph_now` and so on.
    _graph = _MadeWhenRead()
    _optimized = _MadeWhenRead()
    _buffers = _MadeWhenRead()

    def _materialize(self) -> None:
        """Make the concrete graph a steady re-size left pending, and the buffers and bound views
        of its tensors at their new shapes (the same bytes: the arena stayed). Under the run lock:
        another network may read this one's graph (reshape_from) while a thread runs it."""
        with self._lock:
            pending = self._pending
            if pending is None:
                return
            optimized, remake = pending()
            graph = optimized.graph
            graph.nodes = list(self._graph_now.nodes)  # every changed layer kept its workload
            buffers = dict(self._buffers_now)
            offsets = self.memory_plan.offsets
            stale = self._stale_keys
            for key in stale:
                info = graph.infos[key]
                if key in offsets:
                    buffers[key] = self._arena_view(offsets[key], info)
                elif key in self._staging:  # a staged input: its buffer (resize_steady made it)
                    buffers[key] = self._staging[key]
                else:  # bound per run; a placeholder until then
                    buffers[key] = np.zeros(info.shape, info.dtype.numpy_dtype)
            for node, step in zip(graph.nodes, self._steps):
                for bound, names in ((step.inputs, node.inputs), (step.outputs, node.outputs)):
                    for index, key in enumerate(names):
                        if key in stale:
                            bound.rebind(index, buffers[key])
            self._graph_now, self._optimized_now, self._remake, self._buffers_now = graph, optimized, remake, buffers
            self._bound = [None] * len(self._bound)  # the placeholders replaced the callers' arrays
            self._stale_keys = set()
            self._pending = None

    # -- loading ------------------------------------------------------------------------

    def _backend(self, backend_id: str) -> Backend:
        return self._backends[backend_id]

    def _load(self) -> None:
        contexts = self._contexts
        notified = []
        try:
            for context in contexts:
                context.before_load_network(self.network_id)
                notified.append(context)
            self._create_workloads()
            self._bind()
            self._loaded = True
            for context in contexts:
                context.after_load_network(self.network_id)
        except BaseException:
            self._destroy()
            for context in notified:
                _quietly(context.after_unload_network, self.network_id)
            raise

    def _create_workloads(self) -> None:
        graph = self._graph
        self._node_workloads: dict[str, Workload] = {}
        for node in graph.nodes:
            if node.backend_id is None:
                continue  # runtime copy
            backend_id = node.backend_id
            if backend_id not in self._factories:
                backend = self._backend(backend_id)
                manager = backend.create_memory_manager()
                if manager is not None:
                    self._managers[backend_id] = manager
                self._factories[backend_id] = backend.create_workload_factory(manager)
            spec = graph.spec(node)
            workload = self._reshaped(node, spec)
            if workload is None:
                try:
                    workload = self._factories[backend_id].create_workload(spec)
                except BackendError:
                    again = self._remake(node, self._backend(backend_id)) if self._remake and node.fused else None
                    if again is None:
                        raise
                    graph.nodes[graph.nodes.index(node)] = node = again
                    self.refused_layers.append(node.name)
                    spec = graph.spec(node)
                    workload = self._reshaped(node, spec)  # the new fusion re-sized from the old: weights shared
                    if workload is None:
                        workload = self._factories[backend_id].create_workload(spec)
                    else:
                        self.reshaped_layers.append(node.name)
            else:
                self.reshaped_layers.append(node.name)
            self._workloads.append(workload)
            self._node_workloads[node.name] = workload

    def _reshaped(self, node: Node, spec: Any) -> Workload | None:
        """The workload of the same layer in a network of `reshape_from`, re-sized to this one's
        shapes (Workload.reshape), or None: no such layer, or its workload cannot be re-sized."""
        for source in self._reshape_from:
            old = source._graph_node(node.name)
            workload = source._node_workloads.get(node.name)
            if old is None or workload is None or not _same_layer_but_shapes(source._graph, old, self._graph, node):
                continue
            try:
                reshaped = workload.reshape(spec)
            except BackendError:  # refused (e.g. a fused layer made for other shapes): create_workload judges
                continue
            if reshaped is not None:
                return reshaped
        return None

    # -- re-sizing in place ---------------------------------------------------------------------

    @property
    def resizable(self) -> bool:
        """Whether `resize` can take this network to other shapes (all its tensors in host memory)."""
        return self._loaded and not self._device

    def resize(self, optimized: OptimizedNetwork, layers: Collection[int],
               remake: Callable[[Node, Backend], Node | None] | None = None) -> None:
        """Become the same network at other shapes, in place: a symbolic network's instance taken
        to another binding (plugnn.loaded_symbolic). `optimized` holds the same layers in the same
        order at the new shapes; only those at positions `layers` differ from this network's
        (their tensors' shapes or their descriptors); `remake` fuses a layer again at the new
        shapes, as at load. Those layers' workloads are re-sized (pn_workload.reshape), else
        created, else fused again; every other workload, step and buffer stays. The arena stays
        where every changed tensor fits the bytes planned for it; else it is planned again with
        twice the room for the changed tensors (as onnxruntime's arena grows by powers of two), so
        a tensor that grows by a little each run (a KV cache) is planned again a logarithmic
        number of times. On an error nothing has
        changed: the network still runs at its old shapes, and the error is raised."""
        with self._lock:
            if not self.resizable:
                raise RuntimeClosedError(f"network {self.name!r} (id {self.network_id}) cannot be resized: "
                                         + ("it was unloaded" if not self._loaded else "it holds device memory"))
            old = self._graph
            graph = optimized.graph
            changed = sorted(layers)
            moved = set(changed)
            graph.nodes = [node if p in moved else old.nodes[p] for p, node in enumerate(graph.nodes)]
            made: list[tuple[int, Workload, str]] = []  # position, its new workload, "reshaped" | "created" | "fused again"
            # the layers whose workloads take the new shapes at execute: kept, their tensors re-bound
            at_execute = {p for p in changed if self._takes_shapes_at_execute(old, old.nodes[p], graph, graph.nodes[p])}
            for p in at_execute:  # a layer fused again at the old shapes stays that one (its workload's)
                graph.nodes[p] = old.nodes[p]
            try:
                for p in changed:
                    if graph.nodes[p].backend_id is not None and p not in at_execute:
                        workload, how = self._resized_workload(old, old.nodes[p], graph, p, remake)
                        made.append((p, workload, how))
            except BaseException:
                for _, workload, _ in made:
                    _quietly(workload.close, None)
                raise
            saved = dict(self.__dict__)
            try:
                retired = self._swap_workloads(old, graph, made)
                self._graph, self._optimized, self._remake = graph, optimized, remake
                self.__dict__.pop("_nodes_by_name", None)
                kept = self._rebind(old, graph, changed, at_execute)
            except BaseException:
                self.__dict__.clear()
                self.__dict__.update(saved)
                for _, workload, _ in made:
                    _quietly(workload.close, None)
                raise
            for workload in retired:
                _quietly(workload.close, None)
            self.reshaped_layers = [graph.nodes[p].name for p, _, how in made if how == "reshaped"]
            self.refused_layers = [graph.nodes[p].name for p, _, how in made if how == "fused again"]
            self.kept_layers = [n.name for p, n in enumerate(graph.nodes) if p not in moved and n.backend_id is not None]
            self.rebound_layers = [graph.nodes[p].name for p in sorted(at_execute)]
            steady = kept is not None and not made and all(p in at_execute for p in changed)
            self._steady_record = (tuple(changed), kept) if steady and kept is not None else None

    def keeps_workloads(self, layers: Collection[int], described: Collection[int], tensors: Collection[str]) -> bool:
        """Whether a re-size that changes layers `layers` (positions), the descriptors of
        `described` and the shapes of `tensors` would keep every changed layer's workload, as
        far as that follows from what changes (resize judges the rest: the grouping of axes of
        the Reshapes a fused layer absorbed): each a native workload that takes its tensors'
        shapes at execute, not data-dependent, its descriptor unchanged (a fused layer's payload
        stands for its descriptor) and no input it keeps fixed among `tensors`."""
        nodes = self._graph_now.nodes
        for p in layers:
            node = nodes[p]
            workload = self._node_workloads.get(node.name) if node.backend_id is not None else None
            if not _at_execute(workload, node) or (node.kind is not LayerKind.PRECOMPILED and p in described):
                return False
            if _fixed_input_changes(workload, node, lambda k: k in tensors):
                return False
        return True

    def steady_resize(self, slots: Any) -> SteadyResize | None:
        """The steady re-size recorded for `slots` (see record_steady_resize), or None."""
        return self._steady.get(slots)

    def record_steady_resize(self, slots: Any, rule_of: Callable[[str], tuple[int, ...] | None],
                             values: Sequence[int]) -> SteadyResize | None:
        """Record the last re-size as a SteadyResize under `slots` (the values it changed) when it
        kept every changed layer's workload, step, buffer place and movement view; `rule_of`
        gives a tensor's dims as a rule over `values`, the evaluated values of the shapes this
        network is at now (ShapeProgram.dims_rule). None when that re-size was not one."""
        record, self._steady_record = self._steady_record, None
        library = runner_library()
        if record is None or library is None or not self._loaded:
            return None
        changed, keys = record
        graph = self._graph
        offsets, views, blocks = self.memory_plan.offsets, self.movement_views, self._block_bytes
        if keys & set(self._bounded_at):
            return None
        rules = []
        for key in sorted(keys):
            rule, info = rule_of(key), graph.infos[key]
            if rule is None or shape_at(rule, values) != info.shape:
                return None
            if key in offsets:
                view = views.get(key)
                limit = blocks[view.root] - view.offset if view is not None else blocks[key]
            elif key in self._externals:
                limit = 0
            else:
                return None
            rules.append((key, rule, info.dtype.itemsize, limit))
        targets, regroups = [], []
        staged: dict[str, list[tuple[Any, int]]] = {key: [] for key in keys & self._staged}
        for p in changed:
            node, step = graph.nodes[p], self._steps[p]
            if type(step.call) is not BoundExecution:
                return None
            for bound, names in ((step.inputs, node.inputs), (step.outputs, node.outputs)):
                targets.extend((bound.info_pointer(index), key) for index, key in enumerate(names) if key in keys)
                for index, key in enumerate(names):
                    if key in staged:
                        staged[key].append((bound, index))
            if node.kind is LayerKind.PRECOMPILED:
                for member in _fused_reshapes(node):
                    pair = [rule_of(k) or tuple(graph.infos[k].shape) for k in (member.inputs[0], member.outputs[0])]
                    regroups.append((pair[0], pair[1]))
        entries = [(key, "input", i) for i, (_, _, key, *_) in enumerate(self._input_plan) if key in keys]
        for i, (_, _, key, _, _, _, source) in enumerate(self._output_plan):
            if key in keys:
                if source is not None and source[0] not in ("in", "out"):
                    return None
                entries.append((key, "output", i))
        plan = SteadyResize(library, values, rules, targets, entries, regroups, list(self.kept_layers),
                            list(self.rebound_layers), staged)
        self._steady[slots] = plan
        return plan

    def resize_steady(self, plan: SteadyResize, values: Sequence[int], materialize: Materialize) -> bool:
        """Re-do the steady re-size `plan` (recorded on this network) at `values`, the evaluated
        values of the new shapes; `materialize` makes the concrete network at the new shapes
        when something reads it. False, and nothing changed,
        when the new shapes need more than the plan does (a tensor outgrows its place in the
        arena or becomes empty, a fused Reshape groups axes otherwise): re-size with `resize`."""
        with self._lock:
            if not self.resizable:
                raise RuntimeClosedError(f"network {self.name!r} (id {self.network_id}) cannot be resized: "
                                         + ("it was unloaded" if not self._loaded else "it holds device memory"))
            if not plan.holds(values) or not plan.write(values):
                return False
            inputs, outputs, bound = list(self._input_plan), list(self._output_plan), self._bound
            for _, side, index, shape in plan.shapes(values):
                table = inputs if side == "input" else outputs
                entry = table[index]
                table[index] = (*entry[:4], shape, *entry[5:])
                bound[entry[0]] = None
            self._input_plan, self._output_plan = inputs, outputs
            if plan.staged:  # a staged input's buffer at its new shape, bound to its readers
                staging = self._staging = dict(self._staging)
                for key, shape, readers in plan.staged_shapes(values):
                    buffer = staging[key] = np.zeros(shape, staging[key].dtype)
                    for bound, index in readers:
                        bound[index] = buffer
            self._pending = materialize
            self._stale_keys |= plan.keys
            self.reshaped_layers, self.refused_layers = [], []
            self.kept_layers, self.rebound_layers = plan.kept_layers, plan.rebound_layers
            return True

    def _takes_shapes_at_execute(self, old_graph: Any, old_node: Node, graph: Any, node: Node) -> bool:
        """Whether layer `node` (at the new shapes) can keep `old_node`'s workload: the same layer
        but shapes (ranks, and the dims of the inputs it keeps fixed, included), a native workload
        that takes its tensors' shapes at execute (ABI 1.3), and not a data-dependent layer
        (whose outputs stay at their bounds). A fused layer is kept as `old_node` (which may be
        `node`'s layers fused again at the old shapes) where each Reshape it absorbed groups axes
        at the new shapes as at the old ones (backend_api.h, PN_WORKLOAD_SHAPES_AT_EXECUTE)."""
        workload = self._node_workloads.get(old_node.name)
        if not _at_execute(workload, node):
            return False
        if node.kind is LayerKind.PRECOMPILED:
            if node is not old_node and not (node.fused and node.fused is old_node.fused):
                return False  # another payload, not these layers fused again
            if not _same_layer_but_shapes(old_graph, old_node, graph, old_node) \
                    or not _reshapes_regroup(old_graph, graph, old_node):
                return False
            node = old_node
        elif not _same_layer_but_shapes(old_graph, old_node, graph, node):
            return False
        if _fixed_input_changes(workload, node, lambda k: graph.infos[k].shape != old_graph.infos[k].shape):
            return False  # an input it reads at the dims it was made for changes
        return all(graph.infos[k].rank == old_graph.infos[k].rank for k in (*node.inputs, *node.outputs))

    def _resized_workload(self, old_graph: Any, old_node: Node, graph: Any, position: int,
                          remake: Callable[[Node, Backend], Node | None] | None) -> tuple[Workload, str]:
        """The workload of layer `position` of `graph`: this network's re-sized, else a new one,
        else (a fused layer its backend refuses at these shapes) one of the layer fused again
        (which `graph` then holds)."""
        node = graph.nodes[position]
        source = self._node_workloads.get(old_node.name)

        def reshaped(node: Node, spec: Any) -> Workload | None:
            if source is None or not _same_layer_but_shapes(old_graph, old_node, graph, node):
                return None
            try:
                return source.reshape(spec)
            except BackendError:  # refused: create_workload judges
                return None

        spec = graph.spec(node)
        workload = reshaped(node, spec)
        if workload is not None:
            return workload, "reshaped"
        factory = self._factories[node.backend_id]
        try:
            return factory.create_workload(spec), "created"
        except BackendError:
            again = remake(node, self._backend(node.backend_id)) if remake is not None and node.fused else None
            if again is None:
                raise
            graph.nodes[position] = again
            spec = graph.spec(again)
            workload = reshaped(again, spec)
            return (workload if workload is not None else factory.create_workload(spec)), "fused again"

    def _swap_workloads(self, old: Any, graph: Any, made: Sequence[tuple[int, Workload, str]]) -> list[Workload]:
        """Put the new workloads in place of the old ones; the old ones, to close."""
        index = {id(w): i for i, w in enumerate(self._workloads)}
        retired = []
        workloads = list(self._workloads)
        by_name = dict(self._node_workloads)
        for p, workload, _ in made:
            previous = by_name.pop(old.nodes[p].name)
            workloads[index[id(previous)]] = workload
            by_name[graph.nodes[p].name] = workload
            retired.append(previous)
        self._workloads, self._node_workloads = workloads, by_name
        return retired

    def _rebind(self, old: Any, graph: Any, changed: Sequence[int], at_execute: Collection[int] = ()
                ) -> frozenset[str] | None:
        """Bind the changed layers' steps to their tensors at the new shapes, in the arena as it
        is planned when they fit, else planned again (see resize). The steps of the layers
        `at_execute` stay: their tensors are bound again at the new shapes (_BoundTensors.rebind);
        the others get new steps, put in place in the batched runs. Returns the tensors whose
        shapes changed when no step was replaced and no movement view can move with the shapes
        (a steady re-size can be recorded: record_steady_resize), else None."""
        keys = {k for p in changed for n in (old.nodes[p], graph.nodes[p]) for k in (*n.inputs, *n.outputs)
                if graph.infos[k] is not old.infos.get(k) and graph.infos[k] != old.infos.get(k)}
        views = self.movement_views
        roots = {v.root for v in views.values()}
        offsets = self.memory_plan.offsets
        need = max((w.workspace_bytes for w in self._workloads), default=0)
        have = self._workspace.nbytes if self._workspace is not None else 0
        fits = not any(k in self._bounded_at for k in keys)
        moving = self._views_may_change(old, graph, changed)
        if fits and moving:  # the views must be the same ones
            fits = self._movement_views(graph, self._location, self._externals, self._location,
                                        self._bounded_at) == views
        blocks = self._block_bytes
        fits = fits and all(graph.infos[k].num_bytes + (views[k].offset if k in views else 0)
                            <= blocks[views[k].root if k in views else k] for k in keys if k in offsets)
        if fits and need > have:
            fits = self._grow_workspace(need)
        if not fits:
            planned = dict(self._block_bytes)
            for k in keys:
                if k in offsets:
                    grown = graph.infos[k].num_bytes
                    planned[k] = max(planned.get(k, 0), -(-2 * grown // ALIGNMENT) * ALIGNMENT)
            self._bind(planned)
            return frozenset(keys) if not moving else None
        buffers = self._buffers = dict(self._buffers)  # new containers: resize restores the old on an error
        self._staging = dict(self._staging)
        for k in keys:
            info = graph.infos[k]
            if k in offsets:
                buffers[k] = self._arena_view(offsets[k], info)
            elif k in self._externals:  # bound per run; a placeholder until then (a staged input's buffer)
                buffers[k] = np.zeros(info.shape, info.dtype.numpy_dtype)
                if k in self._staging:
                    self._staging[k] = buffers[k]
        steps = self._steps = list(self._steps)
        replaced = []
        for p in changed:
            node = graph.nodes[p]
            if p in at_execute:
                step = steps[p]
                for bound, names in ((step.inputs, node.inputs), (step.outputs, node.outputs)):
                    for index, key in enumerate(names):
                        if key in keys:
                            bound.rebind(index, buffers[key])
            else:
                replaced.append((p, steps[p]))
                steps[p] = self._step(node)
        if replaced:
            self._steady.clear()  # the recorded re-sizes point at the steps replaced
        if not self._replace_calls(replaced):
            self._plan_runs()
        else:
            self._plan_binding()
        return frozenset(keys) if not replaced and not moving else None

    def _arena_view(self, offset: int, info: Any) -> np.ndarray:
        """The arena's bytes at `offset` as a tensor of `info`."""
        return self._arena[offset:offset + info.num_bytes].view(info.dtype.numpy_dtype).reshape(info.shape)

    def _grow_workspace(self, need: int) -> bool:
        """A workspace of twice `need` bytes in place of the one every step is bound to (a layer
        re-sized to larger shapes asks for more, as a fused attention over a longer KV cache),
        the native steps pointed at it; False (nothing changed) when a step of a Python backend
        holds the old one."""
        steps = [step for step in self._steps if step.backend_id != "runtime"]
        if any(not isinstance(step.call, BoundExecution) for step in steps):
            return False
        workspace = self._host_memory(-(-2 * need // ALIGNMENT) * ALIGNMENT)
        for step in steps:
            step.call.bind_workspace(workspace)
        self._workspace = workspace
        return True

    def _views_may_change(self, old: Any, graph: Any, changed: Sequence[int]) -> bool:
        """Whether the movement views can differ at the new shapes: only a changed Concat, Split,
        Slice or Gather (of a constant index) places views by shapes (offsets, contiguous blocks), and only where both
        the tensor holding the bytes (a Concat's output, the others' data input) and one it
        holds are in the arena; a changed Reshape only where a size becomes or stops being 0."""
        def in_arena(key: str) -> bool:
            return self._location.get(key) == "host" and key not in self._externals \
                and key not in graph.constants and key not in self._bounded_at

        for p in changed:
            node = graph.nodes[p]
            if node.kind is LayerKind.GATHER and (len(node.inputs) < 2 or node.inputs[1] not in graph.constants):
                continue  # a view of a Gather is one block at a constant index
            if node.kind in MOVES or node.kind is LayerKind.GATHER:
                roots, held = (node.outputs, node.inputs) if node.kind is LayerKind.CONCAT \
                    else (node.inputs[:1], node.outputs)
                if any(in_arena(k) for k in roots) and any(in_arena(k) for k in held):
                    return True
            elif node.kind is LayerKind.RESHAPE:
                if any((graph.infos[k].num_bytes == 0) != (old.infos[k].num_bytes == 0)
                       for k in (*node.inputs, *node.outputs) if k in old.infos):
                    return True
        return False

    def _graph_node(self, name: str) -> Node | None:
        if not hasattr(self, "_nodes_by_name"):
            self._nodes_by_name = {n.name: n for n in self._graph.nodes}
        return self._nodes_by_name.get(name)

    def _locations(self) -> dict[str, str]:
        """For each tensor a layer produces: 'host' or the id of the non-host backend holding it."""
        where: dict[str, str] = {}
        for node in self._graph.nodes:
            if node.backend_id is None:
                place = self._graph.copies[node.name][1]
            else:
                place = "host" if self._backend(node.backend_id).host_memory else node.backend_id
            for key in node.outputs:
                where[key] = place
        return where

    def _bind(self, planned: Mapping[str, int] | None = None) -> None:
        """Plan the arena (a tensor in `planned` gets at least that many bytes: room a resized
        network keeps for tensors that grow), bind every step to its buffers, plan the runs."""
        graph = self._graph
        planned = planned or {}
        nodes = graph.nodes
        # Outputs of data-dependent layers live in the arena at their upper bound; run() returns
        # a copy of the part the layer reports it wrote (backend_api.h, "Data-dependent layers").
        bounded = {key: (i, k) for i, node in enumerate(nodes) if node.kind in DATA_DEPENDENT_KINDS
                   for k, key in enumerate(node.outputs)}
        # A constant exported as an output is copied from its array, never rebound: a layer may read it.
        externals = (set(graph.inputs.values()) | set(graph.outputs.values())) - set(bounded) - set(graph.constants)
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for i, node in enumerate(nodes):
            for key in node.outputs:
                first[key] = last[key] = i
            for key in node.inputs:
                last[key] = i
        location = self._locations()
        # Graph inputs a backend plugnn does not ship reads: copied into a staging buffer per run.
        # (An isolated backend's worker reads its own copy of the inputs: nothing to stage.)
        untrusted = {b for b in {n.backend_id for n in nodes} if b is not None and not is_bundled(self._backend(b))
                     and not self._backend(b).isolation}
        staged = {key for node in nodes if node.backend_id in untrusted for key in node.inputs
                  if key in externals and key in set(graph.inputs.values())}
        for key, (i, _) in bounded.items():
            if location[key] != "host":
                raise PlugnnError(f"network {self.name!r}: data-dependent layer {nodes[i].name!r} runs on "
                                  f"{location[key]!r}, whose memory is not host memory; plugnn sizes such outputs "
                                  f"in host memory only")
        def in_arena(key: str) -> bool:
            return key not in externals and location[key] == "host" and key not in graph.constants

        # Concat inputs its producers write into the output, Slice and Split outputs read in place
        # from the input (plugnn.movement_views).
        views = self._movement_views(graph, first, externals, location, bounded)
        for key, view in views.items():  # the root lives while any of its views does
            first[view.root] = min(first[view.root], first[key])
            last[view.root] = max(last[view.root], last[key])
        host_blocks = []
        for key in first:
            info = graph.infos[key]
            if key in externals or location[key] != "host" or key in views:
                continue
            end = len(nodes) if key in bounded else last[key]  # read by run() after the last step
            host_blocks.append(Block(key, max(info.num_bytes, planned.get(key, 0)), first[key], end))
        self._block_bytes = {block.key: block.size for block in host_blocks}
        self._steady = {}  # the recorded steady re-sizes knew the arena planned before
        self.memory_plan: MemoryPlan = plan(host_blocks)
        if views:
            offsets = dict(self.memory_plan.offsets)
            offsets.update({key: offsets[v.root] + v.offset for key, v in views.items()})
            self.memory_plan = MemoryPlan(offsets, self.memory_plan.peak_bytes, self.memory_plan.naive_bytes +
                                          sum(graph.infos[key].num_bytes for key in views))
        self.movement_views = views
        _check_arena(self.name, self.memory_plan.peak_bytes, host_blocks)
        raw = self._host_memory(self.memory_plan.peak_bytes + ALIGNMENT)
        start = (-raw.ctypes.data) % ALIGNMENT
        self._arena = raw[start:start + self.memory_plan.peak_bytes]
        buffers: dict[str, Any] = {}
        for key, offset in self.memory_plan.offsets.items():
            info = graph.infos[key]
            buffers[key] = self._arena_view(offset, info)
        for key in first:
            where = location[key]
            if where != "host" and key not in buffers:
                manager = self._managers[where]
                device = manager.allocate(graph.infos[key])
                self._device.append((manager, device))
                buffers[key] = device
        for key, value in graph.constants.items():
            buffers[key] = value
        for key in externals:  # bound per run; a placeholder until then (a staged input's buffer)
            info = graph.infos[key]
            buffers.setdefault(key, np.zeros(info.shape, info.dtype.numpy_dtype))
        self._staging = {key: buffers[key] for key in staged}
        self._buffers = buffers
        sizes = [w.workspace_bytes for w in self._workloads]
        self._workspace = self._host_memory(max(sizes, default=0)) if any(sizes) else None
        self._externals, self._staged, self._bounded_at, self._location = externals, staged, bounded, location
        self._steps = [self._step(node) for node in nodes]
        # A Reshape or Gather planned as its input's bytes has nothing to do: not called (its step
        # stays, for the profile).
        self.elided_layers = elided_layers(nodes, graph.infos, graph.constants.get, views)
        self._plan_runs()

    def _movement_views(self, graph: Any, produced: Collection[str], externals: Collection[str],
                        location: Mapping[str, str], bounded: Collection[str]) -> dict[str, Any]:
        """Concat inputs its producers write into the output, Slice and Split outputs read in place
        from the input (plugnn.movement_views), among the tensors layers produce in the arena."""
        def eligible(key: str) -> bool:
            return key in produced and key not in externals and location[key] == "host" \
                and key not in graph.constants and key not in bounded

        return movement_views(graph.nodes, graph.infos, eligible,
                              lambda node: node.backend_id is not None and self._backend(node.backend_id).moves_in_place,
                              ALIGNMENT, graph.constants.get)

    def _plan_runs(self) -> None:
        """The batched calls of the steps, and what each run binds (from the bound steps)."""
        skipped = set(self.elided_layers)
        self._calls = batched([step.call for step in self._steps if step.name not in skipped])
        self._plan_binding()

    def _replace_calls(self, replaced: Sequence[tuple[int, _Step]]) -> bool:
        """Put the new steps at positions `replaced` (with the steps they replace) in place of
        the old ones in the batched calls; False when one cannot be (the calls are then to be
        planned again): a step that was elided, or that is not a native step where the old one was."""
        if not replaced:
            return True
        skipped = set(self.elided_layers)
        where: dict[int, tuple[Any, int]] = {}
        for j, call in enumerate(self._calls):
            if isinstance(call, NativeRun):
                for i, step in enumerate(call.steps):
                    where[id(step)] = (call, i)
            else:
                where[id(call)] = (None, j)
        for p, old_step in replaced:
            new = self._steps[p]
            if new.name in skipped:
                return False
            run, index = where.get(id(old_step.call), (False, -1))
            if run is False or type(new.call) is not type(old_step.call):
                return False
            if run is None:
                continue
        for p, old_step in replaced:
            run, index = where[id(old_step.call)]
            if run is None:
                self._calls[index] = self._steps[p].call
            else:
                run.replace(index, self._steps[p].call)
        return True

    def _plan_binding(self) -> None:
        """What each run binds (from the bound steps)."""
        graph = self._graph
        nodes = graph.nodes
        bounded = self._bounded_at
        slots: dict[str, list[tuple[MutableSequence[Any], int]]] = {k: [] for k in self._externals - self._staged}
        for node, step in zip(nodes, self._steps):
            for bound, keys in ((step.inputs, node.inputs), (step.outputs, node.outputs)):
                for index, key in enumerate(keys):
                    if key in slots:
                        slots[key].append((bound, index))
        # What each run binds, per input then output: (slot, name, key, dtype, shape, the step
        # buffers (bound sequence, index) to point at the caller's array, source). An output's
        # source is where run() copies it from when it cannot be bound: ("in", input name) for a
        # graph input exported as an output, ("out", output name) for a tensor exported twice,
        # ("buffer", key) for a constant or a tensor no step writes; None when the output is
        # bound to the caller's array.
        def plan_of(slot: int, name: str, key: str, source: tuple[str, str] | None) -> tuple[Any, ...]:
            info = graph.infos[key]
            return slot, name, key, info.dtype.numpy_dtype, info.shape, slots.get(key, []), source

        self._input_plan = [plan_of(slot, name, key, None) for slot, (name, key) in enumerate(graph.inputs.items())]
        input_of_key = {key: name for name, key in graph.inputs.items()}
        bound_output_of_key: dict[str, str] = {}
        self._output_plan: list[tuple[Any, ...]] = []
        for slot, (name, key) in enumerate(graph.outputs.items(), start=len(self._input_plan)):
            source: tuple[str, Any] | None = None
            if key in bounded:
                step_index, index = bounded[key]
                source = ("bounded", (self._steps[step_index], index, key))
            elif key in input_of_key:
                source = ("in", input_of_key[key])
            elif key in bound_output_of_key:
                source = ("out", bound_output_of_key[key])
            elif not slots.get(key):
                source = ("buffer", key)
            else:
                bound_output_of_key[key] = name
            self._output_plan.append(plan_of(slot, name, key, source))
        # The array bound at each input then output of the plan by the last run.
        self._bound: list[Any] = [None] * (len(self._input_plan) + len(self._output_plan))
        self._bounded_outputs = [(name, source[1]) for _, name, _, _, _, _, source in self._output_plan
                                 if source is not None and source[0] == "bounded"]

    def _host_memory(self, num_bytes: int) -> np.ndarray:
        """`num_bytes` of host memory for the arena or the workspace: where a backend wants it
        (Backend.host_arena: an isolated backend's shared memory), else anywhere."""
        for backend in self._backends.values():
            memory = backend.host_arena(num_bytes)
            if memory is not None:
                return memory
        return np.empty(num_bytes, np.uint8)

    def _step(self, node: Node) -> _Step:
        inputs = [self._buffers[k] for k in node.inputs]
        outputs = [self._buffers[k] for k in node.outputs]
        if node.backend_id is None:
            return self._copy_step(node, inputs, outputs)
        return _workload_step(node, self._node_workloads[node.name], inputs, outputs, self._workspace)

    def _copy_step(self, node: Node, inputs: list[Any], outputs: list[Any]) -> _Step:
        source, target = self._graph.copies[node.name]

        def call() -> None:
            src, dst = inputs[0], outputs[0]
            if source == "host":
                self._managers[target].copy_from_host(dst, src)
            elif target == "host":
                self._managers[source].copy_to_host(dst, src)
            else:
                staging = np.empty(dst.info.shape, dst.info.dtype.numpy_dtype)
                self._managers[source].copy_to_host(staging, src)
                self._managers[target].copy_from_host(dst, staging)

        return _Step(node.name, "runtime", call, inputs, outputs)

    # -- running ---------------------------------------------------------------------------

    @property
    def optimized(self) -> OptimizedNetwork:
        """The optimized network this was loaded from."""
        return self._optimized

    @property
    def input_infos(self) -> dict[str, Any]:
        return {name: self._graph.infos[key] for name, key in self._graph.inputs.items()}

    @property
    def output_infos(self) -> dict[str, Any]:
        return {name: self._graph.infos[key] for name, key in self._graph.outputs.items()}

    def run(self, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray] | None = None,
            profile: bool = False, stop: Callable[[], bool] | None = None) -> dict[str, np.ndarray]:
        """Run once. `inputs` maps every input name to a C-contiguous array of its shape and
        dtype; `outputs` may give preallocated arrays to write into. Returns every output.

        `profile`: time every layer (`last_profile`). `stop`: called before each layer (the
        layers are then called one by one, not batched); when it returns True the run ends
        with RunStoppedError, the network stays loaded and usable."""
        with self._lock:
            if not self._loaded:
                raise RuntimeClosedError(f"network {self.name!r} (id {self.network_id}) was unloaded")
            results, copies = self._bind_run(inputs, outputs)
            if not self._acquired:
                for manager in self._managers.values():
                    manager.acquire()
                self._acquired = True
            if profile or stop is not None:
                self._run_one_by_one(profile, stop)
            else:
                for call in self._calls:
                    call()
            for destination, source in copies:
                np.copyto(destination, source)
            for name, (step, index, key) in self._bounded_outputs:
                results[name] = self._actual(step, index, key)
            self._runs += 1
            if self._runs % _WATCH_EVERY == 0 and not self._growth_warned:
                self._watch_growth()
            return results

    def _watch_growth(self) -> None:
        resident = _resident_bytes()
        if resident is None:
            return
        if self._resident_at_start is None:
            self._resident_at_start = resident
            return
        grown = resident - self._resident_at_start
        if grown > _leak_warning_bytes():
            self._growth_warned = True
            backends = sorted({n.backend_id for n in self._graph_now.nodes if n.backend_id is not None})
            log.warning("plugnn: the process grew by %s over %d runs of network %r (backends %s); a backend that "
                        "leaks memory on every call is the usual cause (%s sets the threshold)",
                        human_bytes(grown), self._runs - _WATCH_EVERY, self.name, ", ".join(backends),
                        LEAK_WARNING_ENV)

    def _actual(self, step: _Step, index: int, key: str) -> np.ndarray:
        """A copy of the part of data-dependent output `index` of `step` its last run reported."""
        shapes = step.output_shapes() if step.output_shapes is not None else None
        bound = self._graph_now.infos[key]  # never a tensor a steady re-size changes
        if shapes is None or index >= len(shapes):
            raise BackendError(step.backend_id, f"execute(layer {step.name!r})",
                               "a data-dependent layer reported no output shapes")
        shape = tuple(shapes[index])
        if len(shape) != bound.rank or any(not 0 <= s <= b for s, b in zip(shape, bound.shape)):
            raise BackendError(step.backend_id, f"execute(layer {step.name!r})",
                               f"output {index} reported shape {list(shape)}, not within its bound {list(bound.shape)}")
        count = int(np.prod(shape, dtype=np.int64))
        return self._buffers_now[key].reshape(-1)[:count].reshape(shape).copy()

    def _run_one_by_one(self, profile: bool, stop: Callable[[], bool] | None) -> None:
        """Each step called on its own: timed (`last_profile`: layer, backend, seconds, and
        `start_ns`, time.perf_counter_ns() at its start; for a fused layer whose workload breaks
        its time down, `nodes`: per original layer inside it, {"layer", "seconds"}) and/or after
        asking `stop`."""
        records = []
        clock = time.perf_counter_ns
        skipped = set(self.elided_layers)
        for step in self._steps:
            if stop is not None and stop():
                raise RunStoppedError(f"network {self.name!r}: the run was stopped before layer {step.name!r} "
                                      f"(RunOptions.terminate)")
            start = clock()
            read = None
            if step.name not in skipped:
                if profile and step.profiled_call is not None:
                    read = step.profiled_call()
                else:
                    step.call()
            if profile:
                record: dict[str, Any] = {"layer": step.name, "backend": step.backend_id,
                                          "seconds": (clock() - start) * 1e-9, "start_ns": start}
                parts = read() if read is not None else None  # after the clock stopped
                if parts:
                    record["nodes"] = [{"layer": name, "seconds": seconds} for name, seconds in parts]
                records.append(record)
        if profile:
            self.last_profile = records

    def _bind_run(self, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray] | None
                  ) -> tuple[dict[str, np.ndarray], list[tuple[np.ndarray, Any]]]:
        """Check the caller's arrays and point the bound step buffers at them (no copies).

        An array that is the very object bound at the same place by the previous run, with the
        same shape, dtype and contiguity, is still bound: the steps keep pointing at it (a
        native step's view of it holds NumPy's export lock, so its memory cannot move)."""
        # Every plan name looked up and as many names given as the plan has: the names match
        # (an unknown or missing name fails a lookup or the count).
        if len(inputs) != len(self._input_plan):
            self._name_error(inputs, outputs or {})
        bound = self._bound
        for slot, name, key, dtype, shape, targets, _ in self._input_plan:
            try:
                array = inputs[name]
            except KeyError:
                self._name_error(inputs, outputs or {})
            if type(array) is not np.ndarray or (array.dtype is not dtype and array.dtype != dtype) \
                    or array.shape != shape or not array.flags.c_contiguous:
                _checked(array, self._graph.infos[key], f"input {name!r}", writable=False)
            staging = self._staging.get(key)
            if staging is not None:
                np.copyto(staging, array)
                continue
            if bound[slot] is array:
                continue
            for target, index in targets:
                target[index] = array
            bound[slot] = array
        results: dict[str, np.ndarray] = {}
        copies: list[tuple[np.ndarray, Any]] = []
        given = 0
        for slot, name, key, dtype, shape, targets, source in self._output_plan:
            if source is not None and source[0] == "bounded":
                if outputs and outputs.get(name) is not None:
                    raise InputError(f"output {name!r} of network {self.name!r} has a data-dependent shape (at "
                                     f"most {shape}): it cannot be given preallocated")
                continue
            array = outputs.get(name) if outputs else None
            if array is None:
                array = np.empty(shape, dtype)
            else:
                given += 1
                if type(array) is not np.ndarray or (array.dtype is not dtype and array.dtype != dtype) \
                        or array.shape != shape or not array.flags.c_contiguous or not array.flags.writeable:
                    _checked(array, self._graph.infos[key], f"output {name!r}", writable=True)
            results[name] = array
            if source is not None:
                kind, where = source
                copies.append((array, inputs[where] if kind == "in" else results[where] if kind == "out"
                               else self._buffers_now[where]))  # never a tensor a steady re-size changes
            elif bound[slot] is not array:
                for target, index in targets:
                    target[index] = array
                bound[slot] = array
        if outputs and given != len(outputs):  # a name not in the plan (or given as None)
            if not set(self._graph.outputs).issuperset(outputs):
                self._name_error(inputs, outputs)
        return results, copies

    def _name_error(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> NoReturn:
        graph = self._graph
        missing, unknown = set(graph.inputs) - set(inputs), set(inputs) - set(graph.inputs)
        if missing or unknown:
            raise InputError(f"network {self.name!r} takes inputs {sorted(graph.inputs)}"
                             + (f"; missing {sorted(missing)}" if missing else "")
                             + (f"; unknown {sorted(unknown)}" if unknown else ""))
        unknown = set(outputs) - set(graph.outputs)
        raise InputError(f"network {self.name!r} has outputs {sorted(graph.outputs)}; unknown {sorted(unknown)}")

    # -- unloading -----------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._loaded

    def unload(self) -> None:
        """Release memory, destroy workloads, factories and managers; contexts are notified."""
        with self._lock:
            if not self._loaded:
                return
            self._loaded = False
            self._bound = [None] * len(self._bound)
            contexts = self._contexts
            errors: list[str] = []
            for context in contexts:
                _quietly(context.before_unload_network, self.network_id, errors)
            self._destroy(errors)
            for context in contexts:
                _quietly(context.after_unload_network, self.network_id, errors)
            self._on_unload(self)
            if errors:
                raise PlugnnError(f"unloading network {self.name!r}: " + "; ".join(errors))

    def _destroy(self, errors: list[str] | None = None) -> None:
        errors = [] if errors is None else errors
        if self._acquired:
            for manager in self._managers.values():
                _quietly(manager.release, None, errors)
            self._acquired = False
        self._steps = []
        for manager, device in reversed(self._device):
            _quietly(manager.free, device, errors)
        self._device = []
        for workload in reversed(self._workloads):
            _quietly(workload.close, None, errors)
        self._workloads = []
        for factory in reversed(list(self._factories.values())):
            _quietly(factory.close, None, errors)
        self._factories = {}
        for manager in reversed(list(self._managers.values())):
            _quietly(manager.close, None, errors)
        self._managers = {}

    def __enter__(self) -> LoadedNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unload()

    def __repr__(self) -> str:
        state = "loaded" if self._loaded else "unloaded"
        return f"<plugnn.LoadedNetwork {self.name!r} id={self.network_id} {state}>"


def _reshapes_regroup(old_graph: Any, graph: Any, node: Node) -> bool:
    """Whether every Reshape fused into `node` (through every round of fusion) that reads one of
    `node`'s inputs reshapes it at `graph`'s shapes by the same grouping of axes as at
    `old_graph`'s (plugnn.reshape_groups): what a fused layer that reads an input through one may
    assume when it takes other dims at execute (backend_api.h, PN_WORKLOAD_SHAPES_AT_EXECUTE)."""
    for member in _fused_reshapes(node):
        source, result = member.inputs[0], member.outputs[0]
        old_in, old_out = old_graph.infos[source].shape, old_graph.infos[result].shape
        new_in, new_out = graph.infos[source].shape, graph.infos[result].shape
        if (new_in != old_in or new_out != old_out) and not follows_grouping(old_in, old_out, new_in, new_out):
            return False
    return True


def _at_execute(workload: Workload | None, node: Node) -> bool:
    """Whether `workload` takes its tensors' shapes at execute for `node` (ABI 1.3; not for a
    data-dependent layer, whose outputs stay at their bounds)."""
    return workload is not None and workload.shapes_at_execute and node.kind not in DATA_DEPENDENT_KINDS


def _fixed_input_changes(workload: Workload, node: Node, changes: Callable[[str], bool]) -> bool:
    """Whether an input `workload` keeps at the dims it was made for (fixed_inputs) changes."""
    fixed = workload.fixed_inputs
    return bool(fixed) and any(fixed >> min(i, 31) & 1 and changes(k) for i, k in enumerate(node.inputs))


def _fused_reshapes(node: Node) -> list[Node]:
    """The Reshapes fused into `node` (through every round of fusion) that read one of its inputs."""
    inputs = set(node.inputs)
    found, pending = [], list(node.fused)
    while pending:
        member = pending.pop()
        pending.extend(member.fused)
        if member.kind is LayerKind.RESHAPE and member.inputs[0] in inputs:
            found.append(member)
    return found


def _same_layer_but_shapes(old_graph: Any, old: Node, new_graph: Any, new: Node) -> bool:
    """True when `new` is `old` at other shapes: the same name, backend, kind, descriptor,
    element types, and the very same constant arrays (only computed inputs and outputs may
    change shape), so a workload of `old` may be reshaped into one of `new`."""
    if (old.name != new.name or old.backend_id != new.backend_id or old.kind is not new.kind
            or len(old.inputs) != len(new.inputs) or len(old.outputs) != len(new.outputs)):
        return False
    if old.kind is LayerKind.PRECOMPILED:
        # A backend's own layer, made again by its optimize_subgraph for each specialization:
        # its payload is new every time, so the label stands for the descriptor (with the name,
        # the constant arrays below and the element types); the backend's reshape judges the
        # new payload itself and answers PN_ERR_UNSUPPORTED when it cannot re-size to it.
        if getattr(old.descriptor, "label", None) != getattr(new.descriptor, "label", None):
            return False
    else:
        try:
            if old.descriptor != new.descriptor:
                return False
        except Exception:  # noqa: BLE001 - a descriptor that cannot be compared is not the same one
            return False
    for a, b in zip(old.inputs, new.inputs):
        ca, cb = old_graph.constants.get(a), new_graph.constants.get(b)
        if ca is not cb or old_graph.infos[a].dtype is not new_graph.infos[b].dtype:
            return False
    return all(old_graph.infos[a].dtype is new_graph.infos[b].dtype for a, b in zip(old.outputs, new.outputs))


def _check_arena(network: str, peak: int, blocks: Sequence[Block]) -> None:
    """A NetworkError (before allocating) when the arena exceeds plugnn.limits.max_tensor_bytes."""
    limit = max_tensor_bytes()
    if peak > limit:
        largest = max(blocks, key=lambda b: b.size)
        raise NetworkError(f"network {network!r}: its intermediate tensors need {human_bytes(peak)} ({peak} bytes), "
                           f"more than the limit of {human_bytes(limit)} ({MAX_TENSOR_BYTES_ENV}); the largest is "
                           f"{largest.key!r} of {human_bytes(largest.size)}")


def _checked(array: Any, info: Any, what: str, writable: bool) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise InputError(f"{what} must be a numpy.ndarray of {info}, got {type(array).__name__}")
    if array.dtype != info.dtype.numpy_dtype:
        raise InputError(f"{what} must have dtype {info.dtype.numpy_name}, got {array.dtype} "
                         f"(convert with .astype({info.dtype.numpy_spelling}))")
    if array.shape != info.shape:
        raise InputError(f"{what} must have shape {info.shape}, got {array.shape}")
    if not array.flags.c_contiguous:
        raise InputError(f"{what} must be C-contiguous (use numpy.ascontiguousarray)")
    if writable and not array.flags.writeable:
        raise InputError(f"{what} must be writable")
    return array


def _quietly(fn: Callable[..., Any], arg: Any, errors: list[str] | None = None) -> None:
    try:
        fn() if arg is None else fn(arg)
    except Exception as exc:  # teardown goes on; the errors are reported together
        if errors is not None:
            errors.append(str(exc))

