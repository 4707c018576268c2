"""What the importer makes of a model before the walk, as onnxruntime does when it loads one.

`tidy(proto, source)` (called by `importer.read_model`, so every path reads models this way:
`plugnn.onnx.load`, `plugnn.InferenceSession`, the ONNX backend):

- **model-local functions inlined**: a node calling one of the model's own `FunctionProto`s (a
  torch dynamo export's modules, a custom domain's helper) is replaced by the function's nodes:
  its formal inputs and outputs bound to the node's, every other value renamed
  `<node>/<value>` (no graph value has that name), attribute references resolved to the node's
  attribute or the function's default (else left out), node names `<node>/<body node>`; calls
  inside a function's body and in subgraphs are inlined too (at most `MAX_DEPTH` levels);
- **nodes sorted topologically**, in every graph and subgraph: the ONNX IR asks for the order,
  but graph-surgery tools and hand edits leave nodes after their consumers. The sort is stable
  (nodes already in order keep it; among ready nodes the earlier one goes first) and counts a
  subgraph's references to the enclosing scope as inputs. A real cycle is a ModelError naming
  the nodes on it;
- **negative declared dims read as unknown** (a `dim_value` of -1 in a graph input, output or
  value_info: onnxruntime treats it as a free dim), with a warning;
- **sparse initializers made dense** (onnxruntime densifies them at load);
- **a Loop body's condition output declared [1]** is not checked against its computed shape
  (onnxruntime takes [] or [1]; the runtime feeds the iteration number and condition in the rank
  the body declares them, plugnn.dynamic.control).

A model needing none of this is returned as it is; otherwise the caller's ModelProto is never
changed (a copy is tidied). Warnings go to the "plugnn" logger.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from plugnn.errors import ModelError
from plugnn.onnx.context import onnx_module
from plugnn.onnx.functions import bind_node

LOG = logging.getLogger("plugnn")

MAX_DEPTH = 16  # local functions calling local functions, at most


def tidy(proto: Any, source: str, *, owned: bool) -> Any:
    """`proto` inlined, sorted and with negative dims unknown (see the module's doc); a copy
    unless `owned` (the proto is the importer's own), and `proto` itself when nothing changes."""
    functions = _local_functions(proto)
    graphs = list(_graphs(proto.graph))
    called = bool(functions) and any(_calls(graph, functions) for graph in graphs)
    negative = any(_negative_dims(graph) for graph in graphs)
    conditions = any(_loop_conditions(graph) for graph in graphs)
    sparse = any(graph.sparse_initializer for graph in graphs)
    unsorted = any(_order(graph, outer, source) is not None for graph, outer in _scoped_graphs(proto.graph))
    if not (called or negative or unsorted or conditions or sparse):
        return proto
    proto = owned_copy(proto, owned)
    if called:
        _Inliner(proto, source, functions).graph(proto.graph, 0)
    if negative:
        for graph in _graphs(proto.graph):
            for value_info, axis, dim in _negative_dims(graph):
                LOG.warning("%s: %s declares dim %d as %d; read as an unknown dim (as onnxruntime does)",
                            source, repr(value_info.name), axis, dim.dim_value)
                dim.ClearField("dim_value")
    if sparse:
        for graph in _graphs(proto.graph):
            _densify(graph, source)
    if conditions:
        for graph in _graphs(proto.graph):
            for value_info in _loop_conditions(graph):
                value_info.type.tensor_type.ClearField("shape")
    for graph, outer in _scoped_graphs(proto.graph):
        if sort_nodes(graph, source, outer):
            LOG.info("%s: graph %r: nodes sorted topologically (%d nodes)", source, graph.name, len(graph.node))
    return proto


def sort_nodes(graph: Any, source: str, outer: frozenset[str] = frozenset()) -> bool:
    """Put `graph`'s nodes in their stable topological order, in place; whether they moved.
    ModelError names a cycle."""
    order = _order(graph, outer, source)
    if order is None:
        return False
    set_nodes(graph, [graph.node[i] for i in order])
    return True


def set_nodes(graph: Any, nodes: Sequence[Any]) -> None:
    """`graph`'s nodes become copies of `nodes` (which may be its own, in another order)."""
    onnx = onnx_module()
    copies = []
    for node in nodes:
        copy_node = onnx.NodeProto()
        copy_node.CopyFrom(node)
        copies.append(copy_node)
    del graph.node[:]
    graph.node.extend(copies)


def owned_copy(proto: Any, owned: bool) -> Any:
    """`proto` itself when the caller owns it, else a copy to change."""
    if owned:
        return proto
    onnx = onnx_module()
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return copy


# ---- graphs and their scopes --------------------------------------------------------------------


_GRAPH, _GRAPHS = 5, 10  # AttributeProto.GRAPH, AttributeProto.GRAPHS


def _subgraphs(node: Any) -> list[Any]:
    graphs = []
    for attr in node.attribute:
        if attr.type == _GRAPH:
            graphs.append(attr.g)
        elif attr.type == _GRAPHS:
            graphs.extend(attr.graphs)
    return graphs


def _graphs(graph: Any) -> Iterator[Any]:
    """The graph and every subgraph in it, outermost first."""
    yield graph
    for node in graph.node:
        for sub in _subgraphs(node):
            yield from _graphs(sub)


def _defined(graph: Any) -> set[str]:
    """The names a graph defines itself: inputs, initializers, node outputs."""
    names = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    names |= {s.values.name for s in graph.sparse_initializer}
    for node in graph.node:
        names.update(n for n in node.output if n)
    return names


def _scoped_graphs(graph: Any, outer: frozenset[str] = frozenset()) -> Iterator[tuple[Any, frozenset[str]]]:
    """(graph, the names of its enclosing scopes) for the graph and every subgraph. Computed
    lazily, so a graph sorted before its subgraphs are visited is seen in its new order."""
    yield graph, outer
    inner = outer | _defined(graph)
    for node in graph.node:
        for sub in _subgraphs(node):
            yield from _scoped_graphs(sub, inner)


def _free_names(graph: Any) -> set[str]:
    """The names a subgraph reads from its enclosing scopes."""
    defined = _defined(graph)
    free: set[str] = set()
    for node in graph.node:
        free.update(n for n in node.input if n and n not in defined)
        for sub in _subgraphs(node):
            free.update(n for n in _free_names(sub) if n not in defined)
    return free


def node_reads(node: Any) -> set[str]:
    """The names a node reads: its inputs and what its subgraphs read from the enclosing scopes."""
    names = {n for n in node.input if n}
    for sub in _subgraphs(node):
        names |= _free_names(sub)
    return names


# ---- the topological order --------------------------------------------------------------------


def _label(graph: Any, index: int) -> str:
    node = graph.node[index]
    if node.name:
        return f"node {node.name!r} (#{index}, {node.op_type})"
    return f"node #{index} ({node.op_type}, unnamed, output {node.output[0] if node.output else '?'!r})"


def _order(graph: Any, outer: frozenset[str], source: str) -> list[int] | None:
    """The stable topological order of graph's nodes, or None when they are in order already.
    A name no node of this graph produces (an input, an initializer, an outer-scope value, or
    one nothing defines: the importer names that) is ready from the start."""
    nodes = list(graph.node)
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in node.output:
            if name:
                producer.setdefault(name, i)
    needs: list[set[int]] = []
    in_order = True
    for i, node in enumerate(nodes):
        names = {n for n in node.input if n}
        for sub in _subgraphs(node):
            names |= _free_names(sub)
        deps = {producer[n] for n in names if n in producer}
        in_order = in_order and all(d < i for d in deps)
        needs.append(deps)
    if in_order:
        return None
    waiting = [len(d) for d in needs]
    users: list[list[int]] = [[] for _ in nodes]
    for i, deps in enumerate(needs):
        for d in deps:
            users[d].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for user in users[i]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < len(nodes):
        raise ModelError(f"{source}: {_cycle_text(graph, needs, set(order))}")
    return order


def _cycle_text(graph: Any, needs: list[set[int]], done: set[int]) -> str:
    """What a cycle error says: the nodes on one cycle, each with the value it waits for."""
    start = min(i for i in range(len(needs)) if i not in done)
    path: list[int] = []
    seen: dict[int, int] = {}
    current = start
    while current not in seen:
        seen[current] = len(path)
        path.append(current)
        current = min(d for d in needs[current] if d not in done)
    cycle = path[seen[current]:] + [current]
    steps = []
    for a, b in zip(cycle, cycle[1:]):
        produced = set(graph.node[b].output)
        value = next((n for n in graph.node[a].input if n in produced), None)
        via = f"input {value!r}" if value else "a subgraph's value"
        steps.append(f"{_label(graph, a)} reads {via} of {_label(graph, b)}")
    where = f"the nodes of graph {graph.name!r}" if graph.name else "the graph's nodes"
    return f"{where} form a cycle, so no order computes them: " + "; ".join(steps)


# ---- negative dims --------------------------------------------------------------------------------


def _negative_dims(graph: Any) -> list[tuple[Any, int, Any]]:
    found = []
    for value_info in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value_info.type.HasField("tensor_type") and value_info.type.tensor_type.HasField("shape"):
            for axis, dim in enumerate(value_info.type.tensor_type.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value < 0:
                    found.append((value_info, axis, dim))
    return found


# ---- sparse initializers ----------------------------------------------------------------------------


def _densify(graph: Any, source: str) -> None:
    """Every sparse initializer of `graph` as a dense one (onnxruntime densifies them too)."""
    import numpy as np
    from onnx import numpy_helper

    for sparse in graph.sparse_initializer:
        name = sparse.values.name
        try:
            values = numpy_helper.to_array(sparse.values).reshape(-1)
            indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
            shape = tuple(int(d) for d in sparse.dims)
            dense = np.zeros(shape, values.dtype)
            if indices.ndim == 2:  # [NNZ, rank] coordinates
                dense[tuple(indices.T)] = values
            else:  # [NNZ] positions in the flattened tensor
                dense.reshape(-1)[indices.reshape(-1)] = values
        except Exception as exc:  # noqa: BLE001 - malformed sparse data: say which tensor
            raise ModelError(f"{source}: sparse initializer {name!r} cannot be read: {exc}") from None
        graph.initializer.append(numpy_helper.from_array(dense, name))
    del graph.sparse_initializer[:]


# ---- Loop conditions ------------------------------------------------------------------------------


def _loop_conditions(graph: Any) -> list[Any]:
    """The condition outputs of graph's Loop bodies declared [1] (onnxruntime takes a condition of
    shape [] or [1] whatever the body declares): their shape is then not checked."""
    found = []
    for node in graph.node:
        if node.op_type != "Loop" or node.domain not in ("", "ai.onnx"):
            continue
        for attr in node.attribute:
            if attr.name == "body" and attr.HasField("g") and attr.g.output:
                ttype = attr.g.output[0].type
                if ttype.HasField("tensor_type") and ttype.tensor_type.HasField("shape"):
                    dims = ttype.tensor_type.shape.dim
                    if len(dims) == 1 and dims[0].HasField("dim_value") and dims[0].dim_value == 1:
                        found.append(attr.g.output[0])
    return found


# ---- local functions --------------------------------------------------------------------------------


def _local_functions(proto: Any) -> dict[tuple[str, str, str], Any]:
    return {(f.domain, f.name, getattr(f, "overload", "")): f for f in proto.functions}


def _key(node: Any) -> tuple[str, str, str]:
    return node.domain, node.op_type, getattr(node, "overload", "")


def _calls(graph: Any, functions: dict[tuple[str, str, str], Any]) -> bool:
    return any(_key(node) in functions for node in graph.node)


class _Inliner:
    """Replaces every call of a local function by the function's nodes, in every graph."""

    def __init__(self, proto: Any, source: str, functions: dict[tuple[str, str, str], Any]) -> None:
        self.source = source
        self.functions = functions
        self.value_names: set[str] = set()
        self.node_names: set[str] = set()
        for graph in _graphs(proto.graph):
            self._names_of(graph)
        for function in functions.values():
            self.value_names.update(function.input)
            self.value_names.update(function.output)
            for node in function.node:
                self.node_names.add(node.name)

    def _names_of(self, graph: Any) -> None:
        self.value_names |= _defined(graph) | {v.name for v in graph.output}
        for node in graph.node:
            self.value_names.update(node.input)
            self.node_names.add(node.name)

    def fresh(self, base: str, taken: set[str]) -> str:
        candidate, k = base, 1
        while candidate in taken:
            candidate = f"{base}_{k}"
            k += 1
        taken.add(candidate)
        return candidate

    def graph(self, graph: Any, depth: int) -> None:
        nodes = []
        for node in graph.node:
            nodes.extend(self.node(node, depth))
        del graph.node[:]
        graph.node.extend(nodes)

    def node(self, node: Any, depth: int) -> list[Any]:
        """The nodes standing for `node`: the function's when it calls one, else itself (its
        subgraphs inlined)."""
        function = self.functions.get(_key(node))
        if function is None:
            onnx = onnx_module()
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            for sub in _subgraphs(copy):
                self.graph(sub, depth)
            return [copy]
        label = f"node {node.name!r} ({node.domain}.{node.op_type})" if node.name else \
            f"node ({node.domain}.{node.op_type}, output {node.output[0] if node.output else '?'!r})"
        if depth >= MAX_DEPTH:
            raise ModelError(f"{self.source}: {label}: inlining model-local functions goes {MAX_DEPTH} levels deep "
                             f"(a function that calls itself?); plugnn stops there")
        if len(node.input) > len(function.input) or len(node.output) > len(function.output):
            raise ModelError(f"{self.source}: {label}: calls local function {function.name!r} with "
                             f"{len(node.input)} inputs and {len(node.output)} outputs; it takes "
                             f"{len(function.input)} and gives {len(function.output)}")
        return self.inline(node, function, depth)

    def inline(self, node: Any, function: Any, depth: int) -> list[Any]:
        onnx = onnx_module()
        base = node.name or f"{node.op_type}_{node.output[0] if node.output and node.output[0] else 'call'}"
        bound: dict[str, str] = {"": ""}
        for i, formal in enumerate(function.input):
            bound[formal] = node.input[i] if i < len(node.input) else ""
        for i, formal in enumerate(function.output):
            if i < len(node.output) and node.output[i]:
                bound[formal] = node.output[i]

        def rename(name: str) -> str:
            if name not in bound:
                bound[name] = self.fresh(f"{base}/{name}", self.value_names)
            return bound[name]

        attributes: dict[str, Any] = {a.name: a for a in function.attribute_proto}
        attributes.update({a.name: a for a in node.attribute})
        result = []
        for k, body_node in enumerate(function.node):
            new = onnx.NodeProto()
            new.CopyFrom(body_node)
            bind_node(new, rename, attributes)
            new.name = self.fresh(f"{base}/{body_node.name or f'{body_node.op_type}_{k}'}", self.node_names)
            result.extend(self.node(new, depth + 1))
        return result
