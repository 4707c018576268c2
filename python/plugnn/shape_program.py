"""The shape program of a symbolic optimized network: from the inputs' shapes at a run to the
concrete network of that binding.

An optimized network built with symbolic dims (plugnn.symbolic) holds, in its tensor infos,
its layer descriptors and its shape values, ints and expressions of the symbols. Its shape
program binds the symbols from the shapes of one run's inputs, checks the guards its
construction recorded (the decisions taken on the hints that must hold again), evaluates
every expression at once (one generated function) and makes the concrete graph: the same
layers, backends, payloads and constant arrays, at that binding's shapes, with the shape
values as extra inputs holding their values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from plugnn.errors import InputError
from plugnn.graph import Graph, Node
from plugnn.symbolic import Dim, Guard, ShapeEnv
from plugnn.tensor import TensorInfo

Binding = dict[str, int]


def graph_env(graph: Graph) -> ShapeEnv | None:
    """The ShapeEnv of a graph whose inputs, shape values or tensors hold symbolic dims, else None."""
    for key in list(graph.inputs.values()) + list(graph.shape_values) + list(graph.infos):
        for dim in graph.infos[key].shape:
            if isinstance(dim, Dim):
                return dim.env
    return None


class BindingError(InputError):
    """The inputs' shapes bind no value to a symbol (two inputs disagree on it) or break a fixed
    dim; or (`guard` set) they break a guard: the network does not hold at those shapes."""

    def __init__(self, message: str, guard: Guard | None = None) -> None:
        super().__init__(message)
        self.guard = guard


class ShapeProgram:
    """Binding, guards and evaluation for one symbolic graph (see the module's text)."""

    def __init__(self, graph: Graph, env: ShapeEnv, name: str) -> None:
        self.graph = graph
        self.env = env
        self.name = name
        self.inputs = [(input_name, key, graph.infos[key].shape) for input_name, key in graph.inputs.items()]
        # per input, per dim: the symbol it is (a plain symbol), else None
        self._input_symbols = [tuple(_symbol(d) if isinstance(d, Dim) else None for d in declared)
                               for _, _, declared in self.inputs]
        dims: list[Dim] = []
        slot: dict[int, int] = {}  # id(Dim) -> its index in `dims`

        def index(value: Any) -> Any:
            if not isinstance(value, Dim):
                return value
            i = slot.get(id(value))
            if i is None:
                i = slot[id(value)] = len(dims)
                dims.append(value)
            return _Slot(i)

        self._infos = [(key, info, tuple(index(d) for d in info.shape)) for key, info in graph.infos.items()
                       if info.symbolic]
        self._descriptors = []
        for position, node in enumerate(graph.nodes):
            fields = _symbolic_fields(node.descriptor)
            if fields:
                self._descriptors.append((position, {f: _map(v, index) for f, v in fields.items()}))
        # the layers backends fused, by id: their symbolic descriptor fields (to fuse them again)
        self._fused: dict[int, dict[str, Any]] = {}
        pending = [n for node in graph.nodes for n in node.fused]
        while pending:
            node = pending.pop()
            pending.extend(node.fused)
            fields = _symbolic_fields(node.descriptor)
            if fields:
                self._fused[id(node)] = {f: _map(v, index) for f, v in fields.items()}
        self._shape_values = [(key, np.vectorize(index, otypes=[object])(exprs) if exprs.size else exprs)
                              for key, exprs in graph.shape_values.items()]
        # per descriptor entry, the evaluated values its fields hold
        self._descriptor_slots = [frozenset(v.i for value in fields.values()
                                            for v in (value if isinstance(value, tuple) else (value,))
                                            if isinstance(v, _Slot))
                                  for _, fields in self._descriptors]
        self._dims = dims
        self._program = env.compile(dims)
        self._layers_of_slot = _layers_of_slots(graph, self._infos, self._descriptors, self._fused)
        # per evaluated value, the tensor infos and shape values holding it (instantiate's `since`)
        self._infos_of_slot = _entries_of_slots(dims for _, _, dims in self._infos)
        self._shape_values_of_slot = _entries_of_slots(exprs.reshape(-1) for _, exprs in self._shape_values)
        self._changed: dict[tuple[int, ...], frozenset[int]] = {}
        self._last_changed: tuple[Any, Any, tuple[int, ...]] = ((), (), ())
        self._described: dict[tuple[int, ...], frozenset[int]] = {}  # described_layers' answers
        # per set of changed values: the shape values holding one, with their dtype, shape and
        # elements as rules over the values (dims_rule's encoding)
        self._shape_value_entries: dict[tuple[int, ...], list[tuple[str, Any, tuple[int, ...], tuple[int, ...]]]] = {}
        self._rules = {key: tuple(-1 - d.i if type(d) is _Slot else int(d) for d in dims)
                       for key, _, dims in self._infos}

    # -- binding ---------------------------------------------------------------------------

    def bind(self, shapes: Mapping[str, Sequence[int]]) -> Binding:
        """The symbols' values from the inputs' shapes; BindingError where they contradict."""
        binding: Binding = {}
        for (input_name, _, declared), symbols in zip(self.inputs, self._input_symbols):
            shape = shapes.get(input_name)
            if shape is None:
                raise InputError(f"network {self.name!r}: missing input {input_name!r}")
            if len(shape) != len(declared):
                raise InputError(f"network {self.name!r}: input {input_name!r} must have rank {len(declared)} "
                                 f"{_text(declared)}, got shape {tuple(shape)}")
            for axis, (dim, size) in enumerate(zip(declared, shape)):
                if isinstance(dim, Dim):
                    symbol = symbols[axis]
                    if symbol is None:  # pragma: no cover - inputs hold plain symbols
                        raise BindingError(f"network {self.name!r}: input {input_name!r} dim {axis} is {dim}")
                    known = binding.setdefault(symbol, int(size))
                    if known != size:
                        raise BindingError(f"network {self.name!r}: symbol {symbol!r} is {known} in one input "
                                           f"and {size} in input {input_name!r} (dim {axis})")
                elif dim != size:
                    raise InputError(f"network {self.name!r}: input {input_name!r} must have shape "
                                     f"{_text(declared)}, got {tuple(shape)} (dim {axis} is fixed to {dim})")
        return binding

    def binder(self, order: Sequence[str]) -> Callable[[Sequence[Sequence[int]]], tuple[int, ...] | None]:
        """A function of the inputs' shapes in `order` (the input names) to the symbols' values in
        the order of `env.hints`, as `bind` finds them; None where `bind` would find something to
        say (a rank, a fixed dim, two inputs disagreeing) or would not bind every symbol: ask
        `bind` then. One generated function: a run at new shapes pays a few comparisons."""
        where = {name: k for k, name in enumerate(order)}
        symbols = list(self.env.hints)
        first: dict[str, str] = {}  # symbol -> the expression of its first dim
        lines = ["def binder(s):", f"    if len(s) != {len(order)}:", "        return None"]
        for (input_name, _, declared), input_symbols in zip(self.inputs, self._input_symbols):
            k = where.get(input_name)
            if k is None:
                return lambda shapes: None
            tests = [f"len(x{k}) != {len(declared)}"]
            for axis, (dim, symbol) in enumerate(zip(declared, input_symbols)):
                if not isinstance(dim, Dim):
                    tests.append(f"x{k}[{axis}] != {int(dim)}")
                elif symbol is None:
                    return lambda shapes: None
                elif symbol in first:
                    tests.append(f"x{k}[{axis}] != {first[symbol]}")
                else:
                    first[symbol] = f"x{k}[{axis}]"
            lines += [f"    x{k} = s[{k}]", f"    if {' or '.join(tests)}:", "        return None"]
        if set(first) != set(symbols):
            return lambda shapes: None
        texts = [first[symbol] for symbol in symbols]
        lines.append(f"    return ({', '.join(texts)}{',' if len(texts) == 1 else ''})")
        scope: dict[str, Any] = {}
        exec("\n".join(lines), scope)  # noqa: S102 - source generated here from the declared shapes
        return scope["binder"]

    def evaluate(self, binding: Mapping[str, int], complete: bool = False) -> tuple[int, ...]:
        """Every expression at `binding`; BindingError naming the guard it breaks. `complete`:
        the binding is known to give every symbol a value (a binder's)."""
        values = self._program(binding) if complete else None
        if values is not None:
            return values
        if set(binding) != set(self.env.hints):
            missing = sorted(set(self.env.hints) - set(binding))
            raise BindingError(f"network {self.name!r}: no value for symbol(s) {missing}")
        values = self._program(binding)
        if values is None:
            low = [s for s, v in binding.items() if v < 1]
            if low:
                raise BindingError(f"network {self.name!r}: symbol(s) {low} are below 1 at {dict(binding)}")
            guard = self.env.broken_guard(binding)
            what = guard.describe() if guard is not None else "a guard"
            reason = f" ({guard.reason})" if guard is not None else ""
            raise BindingError(f"network {self.name!r} was built where {what}{reason}; the shapes "
                               f"{dict(binding)} break it", guard)
        return values

    def instantiate(self, values: Sequence[int],
                    since: tuple[Graph, dict[str, np.ndarray], Sequence[int]] | None = None
                    ) -> tuple[Graph, dict[str, np.ndarray]]:
        """The concrete graph at `values` (from `evaluate`) and its shape values' arrays (extra
        inputs of the graph, by tensor key). `since`: the concrete graph, shape values and values
        of another binding, whose tensor infos, shape values and layers are taken where they do
        not change (only those holding a changed value are made again)."""
        source = self.graph
        graph = Graph()
        changed: list[int] = []
        if since is None:
            graph.infos = dict(source.infos)
            entries: Any = self._infos
            value_entries: Any = self._shape_values
        else:
            base, base_values, before = since
            changed = [i for i, (a, b) in enumerate(zip(before, values)) if a != b]
            graph.infos = dict(base.infos)
            entries = [self._infos[j] for j in sorted({j for i in changed for j in self._infos_of_slot.get(i, ())})]
            kept = {j for i in changed for j in self._shape_values_of_slot.get(i, ())}
            value_entries = [e for j, e in enumerate(self._shape_values) if j in kept]
        for key, info, dims in entries:
            graph.infos[key] = info.at(tuple([values[d.i] if type(d) is _Slot else d for d in dims]))
        graph.nodes = list(source.nodes)  # shared: a loaded network reads its nodes, never changes them
        moved = set(changed) if since is not None else None
        for (position, fields), slots in zip(self._descriptors, self._descriptor_slots):
            if moved is not None and moved.isdisjoint(slots):
                graph.nodes[position] = since[0].nodes[position]  # its values did not change: the same layer
                continue
            node = _copy(graph.nodes[position])
            node.descriptor = dataclasses.replace(node.descriptor, **{f: _unmap(v, values) for f, v in fields.items()})
            graph.nodes[position] = node
        graph.constants = source.constants
        graph.inputs = dict(source.inputs)
        arrays: dict[str, np.ndarray] = dict(since[1]) if since is not None else {}
        for key, _ in self._shape_values:
            graph.inputs[key] = key
        self._fill_shape_values(arrays, value_entries, values)
        graph.outputs = dict(source.outputs)
        graph.removed = source.removed
        graph.copies = source.copies
        graph.original_types = source.original_types
        return graph, arrays

    def shape_value_arrays(self, values: Sequence[int], since: dict[str, np.ndarray], before: Sequence[int]
                           ) -> dict[str, np.ndarray]:
        """The shape values' arrays at `values`, from those (`since`) at another binding's values
        `before`: only the arrays holding a changed value are made again (instantiate's)."""
        if not self._shape_values:
            return since
        slots = self.changed_slots(before, values)
        entries = self._shape_value_entries.get(slots)
        if entries is None:
            kept = sorted({j for i in slots for j in self._shape_values_of_slot.get(i, ())})
            entries = [(key, self.graph.infos[key].dtype.numpy_dtype, exprs.shape,
                        tuple(-1 - v.i if isinstance(v, _Slot) else int(v) for v in exprs.reshape(-1)))
                       for key, exprs in (self._shape_values[j] for j in kept)]
            if len(self._shape_value_entries) < 256:
                self._shape_value_entries[slots] = entries
        if not entries:
            return since
        arrays = dict(since)
        for key, dtype, shape, rule in entries:
            array = np.array([values[-1 - d] if d < 0 else d for d in rule], dtype).reshape(shape)
            array.setflags(write=False)
            arrays[key] = array
        return arrays

    def _fill_shape_values(self, arrays: dict[str, np.ndarray], entries: Sequence[tuple[str, np.ndarray]],
                           values: Sequence[int]) -> None:
        for key, exprs in entries:
            dtype = self.graph.infos[key].dtype.numpy_dtype
            flat = [values[v.i] if isinstance(v, _Slot) else int(v) for v in exprs.reshape(-1)]
            array = np.asarray(flat, dtype=dtype).reshape(exprs.shape)
            array.setflags(write=False)
            arrays[key] = array

    def dims_rule(self, key: str) -> tuple[int, ...] | None:
        """How tensor `key`'s dims follow from `evaluate`'s values: per dim, the size (>= 0) or
        -1 - i for values[i] (pnr_dims_rule's encoding); None for a tensor of fixed shape."""
        return self._rules.get(key)

    def changed_slots(self, before: Sequence[int], after: Sequence[int]) -> tuple[int, ...]:
        """The indices of the values (from `evaluate`) that differ between two bindings (the
        last answer kept: a re-size asks it several times of the same two)."""
        last = self._last_changed
        if last[0] is before and last[1] is after:
            return last[2]
        slots = tuple([i for i, (a, b) in enumerate(zip(before, after)) if a != b])
        self._last_changed = (before, after, slots)
        return slots

    def described_layers(self, slots: Sequence[int]) -> frozenset[int]:
        """The positions of the layers whose own descriptor holds one of the values `slots`
        (a layer a backend fused: not its members' descriptors)."""
        key = tuple(slots)
        found = self._described.get(key)
        if found is None:
            moved = set(slots)
            found = frozenset(position for (position, _), held in zip(self._descriptors, self._descriptor_slots)
                              if not moved.isdisjoint(held))
            if len(self._described) < 256:
                self._described[key] = found
        return found

    def changed_tensors(self, slots: Sequence[int]) -> frozenset[str]:
        """The tensors with a dim among the values `slots`."""
        return frozenset(self._infos[j][0] for i in slots for j in self._infos_of_slot.get(i, ()))

    def changed_layers(self, before: Sequence[int], after: Sequence[int]) -> frozenset[int]:
        """The positions of the layers whose shapes or descriptors differ between two bindings'
        values (from `evaluate`): a layer reading or writing a tensor with a dim that changed, or
        whose descriptor (or that of a layer it fused) holds one. The rest are the same layers at
        both bindings."""
        slots = self.changed_slots(before, after)
        found = self._changed.get(slots)
        if found is None:
            layers: set[int] = set()
            for i in slots:
                layers.update(self._layers_of_slot.get(i, ()))
            found = frozenset(layers)
            if len(self._changed) < 256:
                self._changed[slots] = found
        return found

    def originals(self, node: Node, values: Sequence[int]) -> list[Node]:
        """The layers a backend fused into `node` (through every round of fusion), in an order
        that runs them, with their descriptors at `values` (from `evaluate`)."""
        found: list[Node] = []
        pending = list(node.fused)
        while pending:
            first = pending.pop(0)
            if first.fused:
                pending[:0] = list(first.fused)
                continue
            fields = self._fused.get(id(first))
            if fields is not None:
                first = _copy(first)
                first.descriptor = dataclasses.replace(first.descriptor,
                                                       **{f: _unmap(v, values) for f, v in fields.items()})
            found.append(first)
        return _in_order(found)

    def describe(self) -> dict[str, Any]:
        """The symbols with their hints, and the guards (what the network was built assuming)."""
        return {"symbols": dict(self.env.hints), "guards": [g.describe() for g in self.env.guards.values()],
                "specialized": dict(self.env.specialized)}


class _Slot:
    """The position of a Dim in the evaluated values."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def _layers_of_slots(graph: Graph, infos: Sequence[tuple[str, TensorInfo, tuple[Any, ...]]],
                     descriptors: Sequence[tuple[int, dict[str, Any]]], fused: Mapping[int, dict[str, Any]]
                     ) -> dict[int, set[int]]:
    """For each evaluated value (slot), the positions of the layers it sizes or describes."""
    readers: dict[str, list[int]] = {}
    for position, node in enumerate(graph.nodes):
        keys = {*node.inputs, *node.outputs}
        pending = list(node.fused)  # a fused layer's inner tensors size it too
        while pending:
            inner = pending.pop()
            pending.extend(inner.fused)
            keys.update(inner.inputs)
            keys.update(inner.outputs)
        for key in keys:
            readers.setdefault(key, []).append(position)
    found: dict[int, set[int]] = {}

    def note(value: Any, position: int) -> None:
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, _Slot):
                found.setdefault(v.i, set()).add(position)

    for key, _, dims in infos:
        for position in readers.get(key, ()):
            note(dims, position)
    for position, fields in descriptors:
        for value in fields.values():
            note(value, position)
    for position, node in enumerate(graph.nodes):
        pending = list(node.fused) if fused else []
        while pending:
            inner = pending.pop()
            pending.extend(inner.fused)
            for value in fused.get(id(inner), {}).values():
                note(value, position)
    return found


def _entries_of_slots(entries: Any) -> dict[int, list[int]]:
    """For each evaluated value (slot), the indices of the entries (sequences of dims) holding it."""
    found: dict[int, list[int]] = {}
    for j, dims in enumerate(entries):
        for v in dims:
            if isinstance(v, _Slot) and (not found.get(v.i) or found[v.i][-1] != j):
                found.setdefault(v.i, []).append(j)
    return found


def _symbol(dim: Dim) -> str | None:
    const, terms = dim.key
    if const == 0 and len(terms) == 1 and terms[0][1] == 1 and len(terms[0][0]) == 1 \
            and isinstance(terms[0][0][0], str):
        return terms[0][0][0]
    return None


def _text(shape: Sequence[Any]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _symbolic_fields(descriptor: Any) -> dict[str, Any]:
    if descriptor is None or not dataclasses.is_dataclass(descriptor):
        return {}
    found = {}
    for f in dataclasses.fields(descriptor):
        value = getattr(descriptor, f.name)
        if isinstance(value, Dim) or (isinstance(value, tuple) and any(isinstance(v, Dim) for v in value)):
            found[f.name] = value
    return found


def _map(value: Any, index: Any) -> Any:
    return tuple(index(v) for v in value) if isinstance(value, tuple) else index(value)


def _unmap(value: Any, values: Sequence[int]) -> Any:
    if isinstance(value, tuple):
        return tuple(values[v.i] if isinstance(v, _Slot) else v for v in value)
    return values[value.i] if isinstance(value, _Slot) else value


def _copy(node: Node) -> Node:
    return Node(node.name, node.kind, node.descriptor, list(node.inputs), list(node.outputs), node.backend_id,
                node.attempts, node.replaces, node.note, node.pending, node.fused)


def _in_order(nodes: list[Node]) -> list[Node]:
    """`nodes` ordered so that each comes after the producers of its inputs among them (stable)."""
    produced = {key for n in nodes for key in n.outputs}
    done: set[str] = set()
    ordered: list[Node] = []
    left = list(nodes)
    while left:
        for i, n in enumerate(left):
            if all(k not in produced or k in done for k in n.inputs):
                ordered.append(left.pop(i))
                done.update(n.outputs)
                break
        else:  # pragma: no cover - fused layers come from an acyclic graph
            ordered.extend(left)
            break
    return ordered


__all__ = ["BindingError", "ShapeProgram", "graph_env"]
