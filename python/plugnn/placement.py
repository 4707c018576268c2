"""Placement: each layer to the first backend (override, then preference order) that
supports it, every answer recorded; rounds of each backend's optimize_subgraph over the
consecutive layers it got (substitutions, refusals that move a layer to the next backend);
copies where a tensor crosses into or out of memory that is not host memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plugnn import descriptors as d
from plugnn.backend import Backend, BackendProvider
from plugnn.errors import OptimizationError, PlugnnError, UnknownBackendError
from plugnn.graph import Attempt, Graph, Node
from plugnn.layers import LayerSpec, OptimizationResult, Subgraph


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
    readers: dict[Any, set[int]] = {}  # tensor -> positions of the group's layers reading it
    for position, n in enumerate(group):
        for k in n.inputs:
            readers.setdefault(k, set()).add(position)
    for s in result.substitutions:
        replaced_at = {i - 1 for i in s.replaced_layer_ids}
        replaced = [group[i] for i in sorted(replaced_at)]
        produced = {k for n in replaced for k in n.outputs}
        consumed = {k for n in replaced for k in n.inputs}
        needed = {k for k in produced if k in used_outside or readers.get(k, set()) - replaced_at}
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
            fused=tuple(replaced),
            note="; ".join(dict.fromkeys(n.note for n in replaced if n.note)))  # each note once
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


def fuse_again(backend: Backend, node: Node, originals: Sequence[Node], graph: Graph) -> Node | None:
    """`node`'s layers (`originals`, at `graph`'s shapes) offered to its backend's
    optimize_subgraph again, for a symbolic network's binding where the fusion made at the hints
    does not fit: the layer the backend makes of all of them (same name, producing the node's
    outputs from tensors outside them), or None when it does not fuse them all into one."""
    keys = sorted({k for n in originals for k in n.inputs + n.outputs})
    ids = {k: i + 1 for i, k in enumerate(keys)}
    produced = {k for n in originals for k in n.outputs}
    if not set(node.outputs) <= produced:
        return None
    subgraph = Subgraph(layers=tuple(graph.spec(n, ids, i + 1) for i, n in enumerate(originals)),
                        input_ids=tuple(ids[k] for k in keys if k not in produced),
                        output_ids=tuple(ids[k] for k in node.outputs))
    result = backend.optimize_subgraph(subgraph)
    if result is None or len(result.substitutions) != 1 or result.failed or result.untouched:
        return None
    substitution = result.substitutions[0]
    key_of = {v: k for k, v in ids.items()}
    inputs = [key_of.get(i) for i in substitution.replacement.input_ids]
    outputs = [key_of.get(i) for i in substitution.replacement.output_ids]
    if None in inputs or None in outputs or any(k in produced for k in inputs) \
            or set(outputs) != set(node.outputs):
        return None
    return Node(node.name, substitution.replacement.kind, substitution.replacement.descriptor,
                inputs, outputs, node.backend_id, node.attempts, node.replaces, node.note, False, node.fused)  # type: ignore[arg-type]


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


def resolve_backends(runtime: BackendProvider, backends: Sequence[str] | str | None,
                     overrides: Mapping[str, str] | None) -> tuple[list[Backend], dict[str, Backend]]:
    """The preferred backends (None: the runtime's own preference order) and the overrides,
    as backend instances; UnknownBackendError names an id the runtime does not have."""
    if backends is None:
        backends = runtime.preferred_backends
    elif isinstance(backends, str):
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
