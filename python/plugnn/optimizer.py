"""optimize(): from a Network to an OptimizedNetwork whose every layer has a backend.

Steps (Arm NN's Optimize): backend-independent passes (drop identity/dropout, fold batch
normalization into the convolution or fully connected layer before it, fold constant
subgraphs), assignment (per-layer override first, then the preferred backends in order,
every attempt recorded with its reason), backend-specific optimization (consecutive layers
on one backend form a subgraph that the backend may substitute, fuse or refuse; refused
layers move to the next preferred backend), and copies where a tensor crosses into or
out of a backend whose memory is not host memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from plugnn import descriptors as d
from plugnn.errors import OptimizationError, PlugnnError, UnknownBackendError
from plugnn.layers import LayerSpec, OptimizationResult, Subgraph
from plugnn.network import GraphKind, Kind, Network, kind_name
from plugnn.tensor import TensorInfo

if TYPE_CHECKING:
    from plugnn.backend import Backend
    from plugnn.runtime import Runtime


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

    def consumers(self, key: str) -> list[Node]:
        return [n for n in self.nodes if key in n.inputs]

    def producer(self, key: str) -> Node | None:
        return next((n for n in self.nodes if key in n.outputs), None)

    def is_graph_output(self, key: str) -> bool:
        return key in self.outputs.values()

    def spec(self, node: Node, ids: Mapping[str, int] | None = None, node_id: int = 0) -> LayerSpec:
        return LayerSpec(
            kind=node.kind, name=node.name, descriptor=node.descriptor,  # type: ignore[arg-type]
            inputs=tuple(self.infos[k] for k in node.inputs),
            outputs=tuple(self.infos[k] for k in node.outputs),
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


# ---- from Network ---------------------------------------------------------------------


def graph_from_network(network: Network) -> Graph:
    graph = Graph()
    alias: dict[str, str] = {}

    def key(tensor: Any) -> str:
        name = tensor.name
        return alias.get(name, name)

    for layer in network:
        out_keys = [layer.name if i == 0 else f"{layer.name}:{i}" for i in range(len(layer.outputs))]
        if layer.kind is GraphKind.INPUT:
            graph.inputs[layer.name] = out_keys[0]
            graph.infos[out_keys[0]] = layer.outputs[0]
        elif layer.kind is GraphKind.CONSTANT:
            graph.constants[out_keys[0]] = layer.value
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


# ---- backend-independent passes -----------------------------------------------------------


def fold_batch_norms(graph: Graph) -> None:
    """y = BN(conv(x)) or BN(fc(x)) with constant parameters becomes one layer with new weights."""
    for bn in [n for n in graph.nodes if n.kind is d.LayerKind.BATCH_NORMALIZATION]:
        producer = graph.producer(bn.inputs[0])
        if producer is None or producer.kind not in (d.LayerKind.CONVOLUTION_2D, d.LayerKind.FULLY_CONNECTED):
            continue
        params = [graph.constants.get(k) for k in bn.inputs[1:]]
        weights = [graph.constants.get(k) for k in producer.inputs[1:]]
        if any(p is None for p in params) or any(w is None for w in weights):
            continue
        if len(graph.consumers(bn.inputs[0])) != 1 or graph.is_graph_output(bn.inputs[0]):
            continue
        if producer.kind is d.LayerKind.CONVOLUTION_2D:
            desc: Any = producer.descriptor
            if desc.layout != bn.descriptor.layout or desc.fused_activation or desc.has_addend:  # type: ignore[union-attr]
                continue
            folded = _fold_into_conv(graph, producer, bn, params, weights)
        else:
            folded = _fold_into_fc(graph, producer, bn, params, weights)
        if folded:
            producer.outputs = bn.outputs
            producer.replaces += (bn.name,)
            producer.note = (producer.note + "; " if producer.note else "") + f"batch normalization {bn.name!r} folded in"
            graph.nodes.remove(bn)
            graph.removed.append((bn.name, f"folded into {producer.name!r}"))


def _bn_scale_shift(bn: Node, params: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    scale, bias, mean, var = (p.astype(np.float64) for p in params)
    s = scale / np.sqrt(var + float(bn.descriptor.epsilon))  # type: ignore[union-attr]
    return s, bias - mean * s


def _fold_into_conv(graph: Graph, conv: Node, bn: Node, params: list[np.ndarray], weights: list[np.ndarray]) -> bool:
    s, shift = _bn_scale_shift(bn, params)
    w = weights[0].astype(np.float64) * s[:, None, None, None]
    b = (weights[1].astype(np.float64) if len(weights) > 1 else 0.0) * s + shift
    w_key = graph.add_constant(f"{conv.name}/folded_weights", w.astype(np.float32))
    b_key = graph.add_constant(f"{conv.name}/folded_bias", b.astype(np.float32))
    conv.inputs = [conv.inputs[0], w_key, b_key]
    desc: d.Convolution2dDescriptor = conv.descriptor  # type: ignore[assignment]
    conv.descriptor = d.Convolution2dDescriptor(desc.stride, desc.padding, desc.dilation, desc.groups, desc.layout,
                                                has_bias=True)
    return True


def _fold_into_fc(graph: Graph, fc: Node, bn: Node, params: list[np.ndarray], weights: list[np.ndarray]) -> bool:
    desc: d.FullyConnectedDescriptor = fc.descriptor  # type: ignore[assignment]
    if desc.fused_activation is not None or graph.infos[fc.outputs[0]].rank != 2:
        return False
    s, shift = _bn_scale_shift(bn, params)
    b = weights[0].astype(np.float64)
    b = b * s[:, None] if desc.transpose_b else b * s[None, :]
    c = (desc.beta * weights[1].astype(np.float64) if desc.has_bias else 0.0) * s + shift
    b_key = graph.add_constant(f"{fc.name}/folded_b", b.astype(np.float32))
    c_key = graph.add_constant(f"{fc.name}/folded_c", np.asarray(c, np.float32))
    fc.inputs = [fc.inputs[0], b_key, c_key]
    fc.descriptor = d.FullyConnectedDescriptor(desc.transpose_a, desc.transpose_b, desc.alpha, 1.0, True)
    return True


def fold_constants(graph: Graph, backends: Sequence[Backend]) -> None:
    """Compute, once, every layer whose inputs are all constants, on the first preferred backend
    that supports it; its output becomes a constant."""
    for node in list(graph.nodes):
        if not node.inputs or any(k not in graph.constants for k in node.inputs):
            continue
        spec = graph.spec(node)
        backend = next((b for b in backends if b.is_layer_supported(spec)), None)
        if backend is None:
            continue  # assignment reports it with every backend's reason
        outputs = [np.empty(graph.infos[k].shape, graph.infos[k].dtype.numpy_name) for k in node.outputs]
        factory = backend.create_workload_factory()
        try:
            workload = factory.create_workload(spec)
            workspace = np.empty(workload.workspace_bytes, np.uint8) if workload.workspace_bytes else None
            workload.execute([graph.constants[k] for k in node.inputs], outputs, workspace)
            workload.close()
        finally:
            factory.close()
        for key, value in zip(node.outputs, outputs):
            value.setflags(write=False)
            graph.constants[key] = value
        graph.nodes.remove(node)
        graph.removed.append((node.name, f"constant-folded on {backend.backend_id}"))


# ---- assignment ----------------------------------------------------------------------------


def _ask(backend: Backend, spec: LayerSpec) -> tuple[bool, str]:
    try:
        result = backend.is_layer_supported(spec)
    except PlugnnError as exc:
        return False, f"support query failed: {exc}"
    return result.supported, "supported" if result.supported else (result.reason or "no reason given")


def assign(graph: Graph, preferred: Sequence[Backend], overrides: Mapping[str, Backend], node: Node,
           start: int = 0, stage: str = "preference") -> None:
    """Give `node` the first backend (override, then preferred[start:]) that supports it."""
    spec = graph.spec(node)
    names = [node.name, *node.replaces]
    override = next((overrides[n] for n in names if n in overrides), None)
    candidates: list[tuple[Backend, str]] = []
    if override is not None and start == 0:
        candidates.append((override, "override"))
    candidates += [(b, stage) for b in preferred[start:] if b is not override or start > 0]
    for backend, why in candidates:
        ok, reason = _ask(backend, spec)
        node.attempts.append(Attempt(backend.backend_id, ok, reason, why))
        if ok:
            node.backend_id = backend.backend_id
            node.pending = True
            return
    tried = "; ".join(f"{a.backend_id}: {a.reason}" for a in node.attempts if not a.accepted)
    raise OptimizationError(f"no preferred backend can run layer {node.name!r} ({node.type_name} "
                            f"{', '.join(str(graph.infos[k]) for k in node.inputs)}): {tried}")


# ---- backend-specific optimization ------------------------------------------------------------


def _groups(graph: Graph) -> list[list[Node]]:
    groups: list[list[Node]] = []
    for node in graph.nodes:
        if groups and groups[-1][0].backend_id == node.backend_id:
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups


def optimize_subgraphs(graph: Graph, preferred: Sequence[Backend], by_id: Mapping[str, Backend]) -> None:
    """Rounds of optimize_subgraph until every layer was seen by the backend it ends on."""
    while any(n.pending for n in graph.nodes):
        for group in _groups(graph):
            if not any(n.pending for n in group):
                continue
            backend = by_id[group[0].backend_id]  # type: ignore[index]
            for node in group:
                node.pending = False
            result, ids = _optimize_group(graph, group, backend)
            if result is not None:
                _apply(graph, group, backend, result, ids, preferred)
        graph.topological_sort("optimize_subgraph")


def _optimize_group(graph: Graph, group: list[Node], backend: Backend
                    ) -> tuple[OptimizationResult | None, dict[str, int]]:
    """Offer `group` to its backend; returns the validated result and the tensor ids used."""
    keys = sorted({k for n in group for k in n.inputs + n.outputs})
    ids = {k: i + 1 for i, k in enumerate(keys)}
    inside = {k for n in group for k in n.outputs}
    members = set(map(id, group))
    used_outside = {k for k in inside if graph.is_graph_output(k)
                    or any(id(c) not in members for c in graph.consumers(k))}
    subgraph = Subgraph(
        layers=tuple(graph.spec(n, ids, i + 1) for i, n in enumerate(group)),
        input_ids=tuple(ids[k] for k in keys if k not in inside),
        output_ids=tuple(ids[k] for k in keys if k in used_outside))
    result = backend.optimize_subgraph(subgraph)
    if result is not None:
        result = _validated(result, group, ids, used_outside, backend.backend_id)
    return result, ids


def _validated(result: OptimizationResult, group: list[Node], ids: dict[str, int], used_outside: set[str],
               backend_id: str) -> OptimizationResult:
    def fail(why: str) -> OptimizationError:
        return OptimizationError(f"backend {backend_id!r} returned an invalid subgraph optimization: {why}")

    seen: list[int] = [i for s in result.substitutions for i in s.replaced_layer_ids]
    seen += [f.layer_id for f in result.failed] + list(result.untouched)
    if sorted(seen) != list(range(1, len(group) + 1)):
        raise fail(f"every layer id 1..{len(group)} must appear exactly once, got {sorted(seen)}")
    key_of = {v: k for k, v in ids.items()}
    for s in result.substitutions:
        replaced = [group[i - 1] for i in s.replaced_layer_ids]
        produced = {k for n in replaced for k in n.outputs}
        consumed = {k for n in replaced for k in n.inputs}
        needed = {k for k in produced if k in used_outside or any(
            k in n.inputs for n in group if n not in replaced)}
        inputs = [key_of.get(i) for i in s.replacement.input_ids]
        outputs = [key_of.get(i) for i in s.replacement.output_ids]
        if None in inputs or None in outputs:
            raise fail(f"substitution {s.replacement.name!r} names unknown tensor ids")
        if not set(inputs) <= (consumed - produced) or not needed <= set(outputs) or not set(outputs) <= produced:
            raise fail(f"substitution {s.replacement.name!r} must read tensors from outside the replaced layers "
                       f"and produce every tensor used outside them")
    return result


def _apply(graph: Graph, group: list[Node], backend: Backend, result: OptimizationResult,
           ids: dict[str, int], preferred: Sequence[Backend]) -> None:
    key_of = {v: k for k, v in ids.items()}
    for s in result.substitutions:
        replaced = [group[i - 1] for i in s.replaced_layer_ids]
        replacement = Node(
            name=_unique_name(graph, s.replacement.name or "+".join(n.name for n in replaced), replaced),
            kind=s.replacement.kind, descriptor=s.replacement.descriptor,
            inputs=[key_of[i] for i in s.replacement.input_ids],
            outputs=[key_of[i] for i in s.replacement.output_ids],
            backend_id=backend.backend_id, pending=False,
            # the replaced layers' answers, each once (they are often the same "supported")
            attempts=list(dict.fromkeys(a for n in replaced for a in n.attempts)),
            replaces=tuple(r for n in replaced for r in (n.name, *n.replaces)),
            note="; ".join(n.note for n in replaced if n.note))
        replacement.attempts.append(Attempt(
            backend.backend_id, True,
            f"substituted {', '.join(repr(n.name) for n in replaced)} by {_describe(replacement)}",
            "optimize_subgraph"))
        at = graph.nodes.index(replaced[-1])
        graph.nodes.insert(at + 1, replacement)
        for n in replaced:
            graph.nodes.remove(n)
    for failed in result.failed:
        node = group[failed.layer_id - 1]
        node.attempts.append(Attempt(backend.backend_id, False, f"refused in optimize_subgraph: {failed.reason}",
                                     "optimize_subgraph"))
        start = next(i for i, b in enumerate(preferred) if b.backend_id == backend.backend_id) + 1 \
            if any(b.backend_id == backend.backend_id for b in preferred) else 0
        assign(graph, preferred, {}, node, start=start, stage="fallback")


def _unique_name(graph: Graph, name: str, replaced: list[Node]) -> str:
    """`name`, or `name#2`, `name#3`, ... when a layer that stays already has it (a backend sees
    only its subgraph, and the loaded network tells layers apart by name)."""
    taken = {n.name for n in graph.nodes} - {n.name for n in replaced}
    unique, i = name, 1
    while unique in taken:
        i += 1
        unique = f"{name}#{i}"
    return unique


def _describe(node: Node) -> str:
    """What a substitution made, for explain(): "one Convolution2d with addend and fused relu"."""
    desc: Any = node.descriptor
    parts = ["addend"] if getattr(desc, "has_addend", False) else []
    act = getattr(desc, "fused_activation", None)
    if act is not None:
        args = f"({act.alpha:g}, {act.beta:g})" if act.alpha or act.beta else ""
        parts.append(f"fused {act.kind.name.lower()}{args}")
    return f"one {node.type_name}" + (f" with {' and '.join(parts)}" if parts else "")


# ---- copies between memories ---------------------------------------------------------------------


def insert_copies(graph: Graph, by_id: Mapping[str, Backend]) -> None:
    """A tensor read by a layer on a backend whose memory is not host memory, and produced
    elsewhere (or the other way round), passes through a Copy layer run by the runtime."""

    def location(backend_id: str | None) -> str:
        return backend_id if backend_id is not None and not by_id[backend_id].host_memory else "host"

    producer_location = {k: location(n.backend_id) for n in graph.nodes for k in n.outputs}
    copies: dict[tuple[str, str], str] = {}
    for node in list(graph.nodes):
        here = location(node.backend_id)
        for i, key in enumerate(node.inputs):
            there = producer_location.get(key, "host")
            if there != here:
                node.inputs[i] = _copy(graph, copies, key, there, here)
    for name, key in list(graph.outputs.items()):
        if producer_location.get(key, "host") != "host":
            graph.outputs[name] = _copy(graph, copies, key, producer_location[key], "host")
    graph.topological_sort("copy insertion")


def _copy(graph: Graph, copies: dict[tuple[str, str], str], key: str, source: str, target: str) -> str:
    if (key, target) not in copies:
        new_key = f"{key}@{target}"
        graph.infos[new_key] = graph.infos[key]
        name = f"copy {key} to {target}"
        graph.nodes.append(Node(name, d.LayerKind.COPY, None, [key], [new_key], backend_id=None, pending=False,
                                note=f"runtime copy from {source} memory to {target} memory"))
        graph.copies[name] = (source, target)
        copies[(key, target)] = new_key
    return copies[(key, target)]


# ---- entry point -------------------------------------------------------------------------------------


def resolve_backends(runtime: Runtime, backends: Sequence[str], overrides: Mapping[str, str] | None
                     ) -> tuple[list[Backend], dict[str, Backend]]:
    if isinstance(backends, str):
        backends = [backends]
    if not backends:
        raise OptimizationError(f"the preferred backend list is empty; this runtime has: "
                                f"{', '.join(runtime.backend_ids) or 'none (see Runtime.load_report)'}")
    preferred = [runtime.backend(b) for b in dict.fromkeys(backends)]
    resolved_overrides: dict[str, Backend] = {}
    for layer, backend_id in (overrides or {}).items():
        try:
            resolved_overrides[layer] = runtime.backend(backend_id)
        except UnknownBackendError as exc:
            raise UnknownBackendError(backend_id, exc.available,
                                      f"(override for layer {layer!r}) {str(exc).split('. ', 1)[-1]}") from None
    return preferred, resolved_overrides
