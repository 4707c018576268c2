"""OptimizedNetwork.explain() as text: a one-screen summary (placement grouped, fallbacks and
fusions by pattern with counts, removals by reason, names shortened), or every layer with every
backend's answer (verbose)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from plugnn.graph import Graph, Node
from plugnn.naming import clip, short_names

WIDTH = 100
MAX_GROUPS = 8      # runs of consecutive layers on one backend shown one per line; more: per backend
MAX_PATTERNS = 8    # fusion patterns and fallback reasons shown; more: counted in one line
SMALL_NETWORK = 20  # explain() shows a network of at most this many layers in full


def type_words(types: Counter[str] | dict[str, int]) -> list[str]:
    """"Type" or "Type xN" per layer type, most frequent first (a type's own text may hold commas:
    a PRECOMPILED layer's label)."""
    items = types.most_common() if isinstance(types, Counter) else list(types.items())
    return [t if n == 1 else f"{t} x{n}" for t, n in items]


def types_text(types: Counter[str] | dict[str, int]) -> str:
    return ", ".join(type_words(types))


def wrap(first: str, words: Sequence[str], indent: int, width: int = WIDTH, sep: str = ",") -> list[str]:
    """`first` followed by `words` (joined by `sep` and a space), wrapped to `width`, the
    continuation lines indented by `indent` spaces; a word longer than a line is clipped."""
    tokens = [w + sep for w in words[:-1]] + list(words[-1:])
    lines: list[str] = []
    line, fresh = first, True
    for token in tokens:
        if not fresh and len(line) + len(token) > width:
            lines.append(line.rstrip())
            line, fresh = " " * indent, True
        line += token + " "
        fresh = False
    lines.append(line.rstrip())
    return [clip(x, width) for x in lines]


def layer_runs(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """Consecutive layers on one backend: backend, first and last position (1-based), types."""
    runs: list[dict[str, Any]] = []
    for index, node in enumerate(nodes, start=1):
        backend = node.backend_id or "runtime"
        if not runs or runs[-1]["backend"] != backend:
            runs.append({"backend": backend, "first": index, "types": Counter(), "layers": []})
        runs[-1]["last"] = index
        runs[-1]["types"][node.type_name] += 1
        runs[-1]["layers"].append(node.name)
    return runs


def span(first: int, last: int) -> str:
    return f"#{first}" if first == last else f"#{first}-{last}"


def placement_lines(runs: list[dict[str, Any]], width: int = WIDTH) -> list[str]:
    """One line (wrapped) per run when there are few; else one per backend with its runs."""
    lines = []
    if len(runs) <= MAX_GROUPS:
        for run in runs:
            n = len(run["layers"])
            head = f"  {span(run['first'], run['last']):9} {run['backend']:8} {n} layer{'s' if n != 1 else ''}: "
            lines += wrap(head, type_words(run["types"]), indent=len(head), width=width)
        return lines
    by_backend: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_backend.setdefault(run["backend"], []).append(run)
    for backend, its in by_backend.items():
        total = sum(len(r["layers"]) for r in its)
        types: Counter[str] = Counter()
        for r in its:
            types.update(r["types"])
        spans = [span(r["first"], r["last"]) for r in its]
        shown = ", ".join(spans[:6]) + (f", ... ({len(spans) - 6} more)" if len(spans) > 6 else "")
        lines.append(clip(f"  {backend:8} {total} layers in {len(its)} runs: {shown}", width))
        head = " " * 11 + "types: "
        lines += wrap(head, type_words(types), indent=len(head), width=width)
    return lines


def fused_patterns(graph: Graph, nodes: Sequence[Node]) -> dict[str, list[dict[str, Any]]]:
    """Per backend, the layers its subgraph optimization made, grouped by pattern: the new layer's
    type and the types it stands for ("Convolution2d <- Convolution2d + Activation")."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for node in nodes:
        if not node.replaces or not any(a.stage == "optimize_subgraph" and a.accepted for a in node.attempts):
            continue
        parts = Counter(graph.original_types.get(r, "?") for r in node.replaces)
        pattern = f"{node.type_name} <- " + " + ".join(t if n == 1 else f"{t} x{n}" for t, n in parts.items())
        entry = found.setdefault(node.backend_id or "runtime", {}).setdefault(
            pattern, {"pattern": pattern, "count": 0, "stands_for": 0, "layers": []})
        entry["count"] += 1
        entry["stands_for"] += len(node.replaces)
        entry["layers"].append(node.name)
    return {b: sorted(p.values(), key=lambda e: -e["count"]) for b, p in found.items()}


def fallbacks(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """Layers a backend refused, grouped by (who refused, where they ran, why)."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for node in nodes:
        for attempt in node.attempts:
            if attempt.accepted:
                continue
            key = (attempt.backend_id, node.backend_id or "runtime", attempt.reason)
            entry = found.setdefault(key, {"refused_by": key[0], "ran_on": key[1], "reason": key[2],
                                           "stage": attempt.stage, "layers": [], "types": Counter()})
            entry["layers"].append(node.name)
            entry["types"][node.type_name] += 1
    return sorted(found.values(), key=lambda e: -len(e["layers"]))


def removed_kinds(graph: Graph) -> list[tuple[str, Counter[str], list[str]]]:
    """Layers the optimizer removed, by reason: (why, their types, their names)."""
    found: dict[str, tuple[str, Counter[str], list[str]]] = {}
    for name, why in graph.removed:
        kind = "folded into the layer before" if why.startswith("folded into") else why
        entry = found.setdefault(kind, (kind, Counter(), []))
        entry[1][graph.original_types.get(name, "?")] += 1
        entry[2].append(name)
    return list(found.values())


def summary(network_name: str, preferred: Sequence[str], graph: Graph, width: int = WIDTH) -> str:
    nodes = graph.nodes
    short = short_names([n.name for n in nodes] + [name for name, _ in graph.removed])
    lines = [clip(f"network {network_name!r} on preferred backends {list(preferred)}: {len(nodes)} layers run",
                  width)]
    lines.append("placement, in execution order:")
    lines += placement_lines(layer_runs(nodes), width)
    refused = fallbacks(nodes)
    if not refused:
        lines.append("fallbacks: none (every layer runs on the first backend asked)")
    for f in refused[:MAX_PATTERNS]:
        n = len(f["layers"])
        example = short[f["layers"][0]]
        lines.append(clip(f"fallback: {f['refused_by']} refused {n} layer{'s' if n != 1 else ''} "
                          f"({types_text(f['types'])}) -> {f['ran_on']}", width))
        lines.append(clip(f"  why: {f['reason']} (e.g. {example})", width))
    if len(refused) > MAX_PATTERNS:
        lines.append(f"fallback: {len(refused) - MAX_PATTERNS} more reasons (explain(verbose=True))")
    patterns = fused_patterns(graph, nodes)
    shown = 0
    for backend, entries in patterns.items():
        made = sum(e["count"] for e in entries)
        stands = sum(e["stands_for"] for e in entries)
        lines.append(f"fused by {backend}: {made} layers stand for {stands}:")
        for e in entries:
            if shown >= MAX_PATTERNS:
                break
            shown += 1
            made_type, _, parts = e["pattern"].partition(" <- ")
            lines.append(clip(f"  {e['count']:3} x {made_type}", width))
            lines.append(clip(f"        from {parts}; e.g. {short[e['layers'][0]]}", width))
    left = sum(len(entries) for entries in patterns.values()) - shown
    if left > 0:
        lines.append(f"  ... {left} more patterns (explain(verbose=True))")
    for why, types, names in removed_kinds(graph):
        lines.append(clip(f"removed: {types_text(types)} {why} (e.g. {short[names[0]]})", width))
    lines.append("(explain(verbose=True): every layer with every backend's answer; explain(format='dot'): a drawing)")
    return "\n".join(lines)


def verbose(network_name: str, preferred: Sequence[str], graph: Graph) -> str:
    """Every layer with where it went and every attempt, then every removed layer."""
    lines = [f"network {network_name!r} on preferred backends {list(preferred)}:"]
    for node in graph.nodes:
        where = node.backend_id or "the runtime"
        lines.append(f"- {node.name} ({node.type_name}) -> {where}")
        if node.replaces:
            lines.append(f"    stands for: {', '.join(node.replaces)}")
        if node.note:
            lines.append(f"    note: {node.note}")
        for a in node.attempts:
            verdict = "yes" if a.accepted else "no"
            lines.append(f"    {a.stage}: {a.backend_id}: {verdict} ({a.reason})")
    for name, why in graph.removed:
        lines.append(f"- {name}: {why}")
    return "\n".join(lines)
