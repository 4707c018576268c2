"""The optimizer's graph: nodes (layers with their backend and the attempts that led there),
tensor infos and constants, built from a Network and rewritten by the optimization steps."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plugnn import descriptors as d
from plugnn.errors import OptimizationError
from plugnn.layers import LayerSpec
from plugnn.network import GraphKind, Kind, Network, kind_name
from plugnn.symbolic import Dim, hint_of, hints_of, symbolic_descriptor
from plugnn.tensor import TensorInfo


@dataclass(frozen=True)
class Attempt:
    """One question asked of one backend about one layer, and its answer."""

    backend_id: str
    accepted: bool
    reason: str
    stage: str  # "override", "preference" or "optimize_subgraph"


@dataclass(eq=False)
class Node:
    """A layer of the optimized graph; inputs and outputs are tensor keys."""

    name: str
    kind: Kind
    descriptor: d.Descriptor
    inputs: list[str]
    outputs: list[str]
    backend_id: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    replaces: tuple[str, ...] = ()
    note: str = ""
    pending: bool = True  # not yet seen by its backend's optimize_subgraph
    # The layers its backend's optimize_subgraph replaced by this one, as they were: offered to the
    # backend again at the shapes of a binding where this layer's workload cannot be made
    # (a symbolic network, plugnn.symbolic: a fusion decided at the hints).
    fused: tuple[Node, ...] = ()

    @property
    def type_name(self) -> str:
        if self.kind is d.LayerKind.PRECOMPILED and isinstance(self.descriptor, d.PrecompiledDescriptor):
            return f"Precompiled({self.descriptor.label})"
        return kind_name(self.kind)


class Graph:
    """The optimizer's working copy: nodes in topological order, tensor infos, constants."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.infos: dict[str, TensorInfo] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.inputs: dict[str, str] = {}   # graph input name -> tensor key
        self.outputs: dict[str, str] = {}  # graph output name -> tensor key
        self.removed: list[tuple[str, str]] = []  # (layer name, why it no longer exists)
        self.copies: dict[str, tuple[str, str]] = {}  # copy layer name -> (source, target) memory
        self.original_types: dict[str, str] = {}  # layer name in the network -> its type name
        # tensor key -> the expressions (plugnn.symbolic) of a shape value: an input the runtime
        # computes at each binding of a symbolic network's symbols
        self.shape_values: dict[str, np.ndarray] = {}

    def consumers(self, key: str) -> list[Node]:
        return [n for n in self.nodes if key in n.inputs]

    def producer(self, key: str) -> Node | None:
        return next((n for n in self.nodes if key in n.outputs), None)

    def is_graph_output(self, key: str) -> bool:
        return key in self.outputs.values()

    def spec(self, node: Node, ids: Mapping[str, int] | None = None, node_id: int = 0) -> LayerSpec:
        """The layer as a backend sees it. In a symbolic graph (plugnn.symbolic) a backend is asked
        at the hints, recording no guard: it is asked again at every binding, when the workloads
        of that binding are created or re-sized."""
        return LayerSpec(
            kind=node.kind, name=node.name, descriptor=_at_hints(node.descriptor),  # type: ignore[arg-type]
            inputs=tuple(_info_at_hints(self.infos[k]) for k in node.inputs),
            outputs=tuple(_info_at_hints(self.infos[k]) for k in node.outputs),
            constants=tuple(self.constants.get(k) for k in node.inputs),
            input_ids=tuple(ids[k] for k in node.inputs) if ids else (),
            output_ids=tuple(ids[k] for k in node.outputs) if ids else (),
            id=node_id)

    def add_constant(self, key: str, value: np.ndarray) -> str:
        while key in self.infos:
            key += "'"
        value = np.ascontiguousarray(value)
        value.setflags(write=False)
        self.constants[key] = value
        self.infos[key] = TensorInfo(value.shape, value.dtype)
        return key

    def drop_unused_constants(self) -> None:
        """Forget the constants no layer reads and no output is (weights replaced by folding), so
        a loaded network does not hold them."""
        used = {k for n in self.nodes for k in n.inputs} | set(self.outputs.values())
        for key in [k for k in self.constants if k not in used]:
            del self.constants[key]

    def topological_sort(self, culprit: str) -> None:
        """Reorder nodes so each comes after the producers of its inputs (stable)."""
        produced_by = {key: node for node in self.nodes for key in node.outputs}
        ordered: list[Node] = []
        state: dict[int, int] = {}

        def visit(node: Node) -> None:
            mark = state.get(id(node), 0)
            if mark == 2:
                return
            if mark == 1:
                raise OptimizationError(f"{culprit} made the graph cyclic at layer {node.name!r}")
            state[id(node)] = 1
            for key in node.inputs:
                if key in produced_by:
                    visit(produced_by[key])
            state[id(node)] = 2
            ordered.append(node)

        for node in self.nodes:
            visit(node)
        self.nodes = ordered


def graph_from_network(network: Network) -> Graph:
    graph = Graph()
    alias: dict[str, str] = {}

    def key(tensor: Any) -> str:
        name = tensor.name
        return alias.get(name, name)

    for layer in network:
        graph.original_types[layer.name] = layer.type_name
        out_keys = [layer.name if i == 0 else f"{layer.name}:{i}" for i in range(len(layer.outputs))]
        if layer.kind is GraphKind.INPUT:
            graph.inputs[layer.name] = out_keys[0]
            graph.infos[out_keys[0]] = layer.outputs[0]
        elif layer.kind is GraphKind.CONSTANT:
            graph.constants[out_keys[0]] = layer.value
            graph.infos[out_keys[0]] = layer.outputs[0]
        elif layer.kind is GraphKind.SHAPE_VALUE:
            graph.shape_values[out_keys[0]] = layer.value
            graph.infos[out_keys[0]] = layer.outputs[0]
        elif layer.kind is GraphKind.OUTPUT:
            graph.outputs[layer.name] = key(layer.inputs[0])
        elif layer.kind is GraphKind.IDENTITY:
            alias[out_keys[0]] = key(layer.inputs[0])
            graph.removed.append((layer.name, "identity/dropout removed"))
        else:
            for k, info in zip(out_keys, layer.outputs):
                graph.infos[k] = info
            graph.nodes.append(Node(layer.name, layer.kind, layer.descriptor, [key(t) for t in layer.inputs], out_keys))
    if not graph.outputs:
        raise OptimizationError(f"network {network.name!r} has no outputs: mark results with add_output()")
    return graph


def _info_at_hints(info: TensorInfo) -> TensorInfo:
    if not info.symbolic:
        return info
    return TensorInfo(hints_of(info.shape), info.dtype, info.quant_scale, info.quant_zero_point)


def _at_hints(descriptor: Any) -> Any:
    if not symbolic_descriptor(descriptor):
        return descriptor
    changes = {}
    for name in descriptor.__dataclass_fields__:
        value = getattr(descriptor, name)
        if isinstance(value, tuple):
            changes[name] = tuple(hint_of(v) if isinstance(v, Dim) else v for v in value)
        elif isinstance(value, Dim):
            changes[name] = value.hint
    return dataclasses.replace(descriptor, **changes)
