"""Segments: runs of a program's nodes imported as one Network at the shapes and values met.

`import_segment` imports the nodes of a program from a start index with the importer of
plugnn.onnx (`SegmentImporter`), the values of earlier steps standing as network inputs (their
shapes known) or, where the import needs a value (Reshape's shape, Slice's starts, TopK's k),
bound as constants. Every value the import reads from the environment is recorded: a segment is
reused for any later environment whose recorded values have the same shapes and element types
(and, for the bound ones, the same contents).

The walk stops before the first node that
- the runtime runs (If with a run-time condition, Loop, Scan, sequences and optionals, the string
  operators, a function whose body holds one: the converters raise DynamicModelError), or reads a
  sequence, an optional or a string tensor;
- needs at import a value computed in this segment (RunTimeValueError): the next segment starts
  there with the value computed, and binds it;
- reads an output of a data-dependent layer of this segment (its shape is known after running).
A failed node's layers are removed (the network is as it was before the node).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plugnn.dynamic.strings import is_string_array
from plugnn.errors import ModelError
from plugnn.network import GraphKind, Network, Tensor
from plugnn.onnx.context import DynamicModelError, ImportState, NodeContext, RunTimeValueError
from plugnn.onnx.importer import _Importer
from plugnn.symbolic import Dim, ShapeEnv
from plugnn.tensor import DataType

Program = Any  # plugnn.dynamic.program.Program (which imports this module)


class Rebind(Exception):
    """The import needs the value of environment value `name` (bind it and import again)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class RuntimeNode(Exception):
    """The segment's first node is one the runtime runs; `cause` is the importer's error."""

    def __init__(self, cause: ModelError) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass
class Imported:
    """What importing a segment gave: the network (None when every output is known at import),
    where it stops, and per live value its source: ("network", output layer name), ("env", the
    environment value it equals), ("constant", array) or, in a symbolic import, ("dims",
    (object array of ints and Dims, dtype)): a value computed from the symbols, evaluated at
    each run's binding. `env` is the symbolic import's ShapeEnv (None: concrete), `symbols`
    where each of its symbols is read: symbol -> (environment value, axis)."""

    network: Network | None
    stop: int
    outputs: list[tuple[str, tuple[str, Any]]]
    reads: tuple[str, ...]
    feeds: list[str] = field(default_factory=list)
    env: ShapeEnv | None = None
    symbols: dict[str, tuple[str, int]] = field(default_factory=dict)


class _LazyValues(dict):  # type: ignore[type-arg]
    """The importer's values: environment values come in when first read (recorded): a NumPy
    array bound as a constant, or a network input of its shape; the program's constants as
    themselves (not recorded: they are the same for every run)."""

    def __init__(self, importer: SegmentImporter, env: Mapping[str, Any], constants: Mapping[str, np.ndarray],
                 bound: set[str]) -> None:
        super().__init__()
        self.importer = importer
        self.env = env
        self.constants = constants
        self.bound = bound
        self.reads: dict[str, None] = {}

    def __missing__(self, key: str) -> Any:
        if key in self.constants:
            value = self.constants[key]
        elif key in self.env:
            value = self.importer.bring_in(key, self.env[key], key in self.bound)
            self.reads[key] = None
        else:
            raise KeyError(key)
        self[key] = value
        return value

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.constants or key in self.env


class _Journal(set):  # type: ignore[type-arg]
    """A set that remembers the order of what was added, so a failed node's names can be taken
    back (the importer only ever adds to its name sets)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.added: list[str] = []

    def add(self, item: str) -> None:
        if item not in self:
            self.added.append(item)
            super().add(item)

    def undo_to(self, mark: int) -> None:
        for item in self.added[mark:]:
            self.discard(item)
        del self.added[mark:]


class SegmentImporter(_Importer):
    """plugnn.onnx's importer walking a program's nodes from one index, over an environment."""

    def __init__(self, program: Program, env: Mapping[str, Any], bound: set[str],
                 axes: Mapping[str, frozenset[int]] | None = None) -> None:
        holder = types.SimpleNamespace(graph=program.graph)
        super().__init__(holder, program.source, program.opset, program.network_name, {}, {},
                         ShapeEnv() if axes else None, program.tables)
        self.axes = dict(axes or {})  # the environment values' axes that are symbols (a symbolic import)
        self.symbols: dict[str, tuple[str, int]] = {}
        self.program = program
        self.values = _LazyValues(self, env, program.constants, bound)  # type: ignore[assignment]
        self.env = env
        self.fed: set[str] = set()
        self.used_names = _Journal(self.used_names | {n for n in env if isinstance(n, str)})
        self.graph_inputs = _Journal(self.graph_inputs)
        for name, count in program.outer_reads.items():
            self.consumers[name] = self.consumers.get(name, 0) + count

    def bring_in(self, name: str, value: Any, bound: bool) -> Any:
        """An environment value as the import sees it."""
        if not isinstance(value, np.ndarray):
            return value  # a sequence or optional: the walk stops before any node reading it
        if bound:
            return value
        try:
            dtype = DataType.from_any(value.dtype)
        except ValueError:
            raise ModelError(f"{self.source}: value {name!r} has element type {value.dtype}, which plugnn tensors "
                             f"cannot hold") from None
        shape: tuple[Any, ...] = tuple(value.shape)
        if self.shape_env is not None and name in self.axes:
            dims: list[Any] = []
            for axis, size in enumerate(shape):
                if axis in self.axes[name] and size >= 1:  # 0 is no symbol: specialized on it
                    symbol = f"{name}:{axis}"
                    self.symbols[symbol] = (name, axis)
                    dims.append(self.shape_env.symbol(symbol, int(size)))
                else:
                    dims.append(size)
            shape = tuple(dims)
        tensor = self.network.add_input(name, shape, dtype)
        self.graph_inputs.add(name)
        self.fed.add(name)
        return tensor

    # -- the walk ----------------------------------------------------------------------------

    def import_segment(self, start: int) -> Imported:
        nodes = self.program.nodes
        stop = start
        while stop < len(nodes):
            node = nodes[stop]
            if self._reads_dynamic(node):
                break
            mark = self._mark()
            try:
                self._convert(NodeContext(self, stop, node, opset=self.program.opset))
            except RunTimeValueError as exc:
                if exc.value_name in self.fed:
                    raise Rebind(exc.value_name) from None
                self._undo(mark)
                if stop == start:
                    raise RuntimeNode(exc) from None
                break
            except DynamicModelError as exc:
                self._undo(mark)
                if stop == start:
                    raise RuntimeNode(exc) from None
                break
            stop += 1
        if stop == start:
            raise RuntimeNode(DynamicModelError(f"{self.source}: node #{start} ({nodes[start].op_type}) reads a "
                                                f"sequence, an optional or a string tensor"))
        return self._finish(start, stop)

    def _reads_dynamic(self, node: Any) -> bool:
        """Whether node reads a sequence, an optional, a string tensor (strings.py: the runtime runs
        what reads one), or an output of a data-dependent layer."""
        for name in node.input:
            if not name:
                continue
            if name in self.env and (not isinstance(self.env[name], np.ndarray) or is_string_array(self.env[name])):
                return True
            value = dict.get(self.values, name)
            if isinstance(value, Tensor) and value.data_dependent:
                return True
            if is_string_array(value) or (value is None and is_string_array(self.program.constants.get(name))):
                return True
        return False

    def _mark(self) -> tuple[int, ...]:
        """Where the import stands before a node: counts of what only grows during a node."""
        return (len(self.network._layers), len(self.values), len(self.const_tensors),
                len(self.used_names.added), len(self.graph_inputs.added), len(self.values.reads))

    def _undo(self, mark: tuple[int, ...]) -> None:
        """Take back everything a failed node added (its layers, values, names, inputs)."""
        layers, values, consts, used, inputs, reads = mark
        for name in list(self.network._layers)[layers:]:
            del self.network._layers[name]
        for name in list(self.values)[values:]:
            dict.__delitem__(self.values, name)
        for name in list(self.const_tensors)[consts:]:
            del self.const_tensors[name]
        self.used_names.undo_to(used)
        self.graph_inputs.undo_to(inputs)
        for name in list(self.values.reads)[reads:]:
            del self.values.reads[name]
            self.fed.discard(name)

    def _finish(self, start: int, stop: int) -> Imported:
        program = self.program
        outputs: list[tuple[str, tuple[str, Any]]] = []
        network_outputs = 0
        for node in program.nodes[start:stop]:
            for name in node.output:
                if not name or program.last_use.get(name, -1) < stop:
                    continue
                value = dict.get(self.values, name)
                exprs = self.sym.get(name) if self.shape_env is not None else None
                if isinstance(value, np.ndarray) and exprs is not None and any(isinstance(e, Dim) for e in exprs.flat):
                    outputs.append((name, ("dims", (exprs, value.dtype))))
                elif isinstance(value, np.ndarray):
                    outputs.append((name, ("constant", value)))
                elif isinstance(value, Tensor):
                    producer = self.network.layer(value.producer)
                    if producer.kind is GraphKind.INPUT:
                        outputs.append((name, ("env", producer.name)))
                        continue
                    out_name = self.free_name(f"{name}")
                    self.network.add_output(value, out_name)
                    outputs.append((name, ("network", out_name)))
                    network_outputs += 1
                elif value is not None:
                    raise ModelError(f"{self.source}: value {name!r} is not a tensor ({type(value).__name__})")
        network = self.network if network_outputs else None
        feeds = [layer.name for layer in self.network.inputs] if network is not None else []
        return Imported(network, stop, outputs, tuple(self.values.reads), feeds, self.shape_env,
                        {k: v for k, v in self.symbols.items() if self.shape_env is not None})


def _reads(graph: Any) -> tuple[dict[str, int], set[str]]:
    """(names read by graph's nodes and subgraphs -> count, names defined in it)."""
    read: dict[str, int] = {}
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        for name in node.input:
            if name:
                read[name] = read.get(name, 0) + 1
        defined.update(n for n in node.output if n)
        for name, count in outer_reads(node).items():
            read[name] = read.get(name, 0) + count
    for value in graph.output:
        read[value.name] = read.get(value.name, 0) + 1
    return read, defined


def outer_reads(node: Any) -> dict[str, int]:
    """The names node's subgraphs read from outside them (outer-scope captures), with counts."""
    outer: dict[str, int] = {}
    for attr in node.attribute:
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            read, defined = _reads(graph)
            for name, count in read.items():
                if name not in defined:
                    outer[name] = outer.get(name, 0) + count
    return outer


def function_body(program: Program, index: int, node: Any, env: Mapping[str, Any]
                  ) -> tuple[list[Any], int, dict[str, np.ndarray], str] | None:
    """The ONNX function body of `node` (an operator without a converter) for the types of its
    inputs in `env`: (nodes, their opset, constants they read, the label's note), or None."""
    from plugnn.onnx import functions

    holder = types.SimpleNamespace(graph=program.graph)
    state = ImportState(holder, program.source, program.opset, program.network_name, {}, {})
    state.values = {**program.constants, **env}
    ctx = NodeContext(state, index, node, opset=program.opset)
    expansion = functions.body(ctx)
    if expansion is None:
        return None
    opset = expansion.opsets[0] if expansion.opsets else program.opset
    return expansion.nodes, opset, dict(expansion.constants), functions.NOTE
