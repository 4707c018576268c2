"""Where every layer runs: consecutive layers on one backend as groups; fallbacks, fusions and removals."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugnn import Network, OptimizedNetwork


def placement(optimized: OptimizedNetwork, network: Network) -> dict[str, Any]:
    """The report's "placement": groups, fallbacks, fused and removed layers, and every layer's record."""
    nodes = optimized.layers
    groups: list[dict[str, Any]] = []
    for index, node in enumerate(nodes, start=1):
        backend = node.backend_id or "runtime"
        if groups and groups[-1]["backend"] == backend:
            group = groups[-1]
        else:
            group = {"backend": backend, "first": index, "types": Counter(), "layers": []}
            groups.append(group)
        group["last"] = index
        group["types"][node.type_name] += 1
        group["layers"].append(node.name)
    for group in groups:
        group["count"] = len(group["layers"])
        group["types"] = dict(group["types"].most_common())
    fallbacks: dict[tuple[str, str, str], dict[str, Any]] = {}
    fused = []
    original_types = {layer.name: layer.type_name for layer in network}
    for node in nodes:
        refused = [a for a in node.attempts if not a.accepted]
        for attempt in refused:
            key = (attempt.backend_id, node.backend_id or "runtime", attempt.reason)
            entry = fallbacks.setdefault(key, {"refused_by": key[0], "ran_on": key[1], "reason": key[2],
                                               "stage": attempt.stage, "layers": [], "types": Counter()})
            entry["layers"].append(node.name)
            entry["types"][node.type_name] += 1
        if node.replaces and any(a.stage == "optimize_subgraph" and a.accepted for a in node.attempts):
            parts = Counter(original_types.get(r, "?") for r in node.replaces)
            pattern = f"{node.type_name} <- " + " + ".join(t if n == 1 else f"{t} x{n}" for t, n in parts.items())
            fused.append({"layer": node.name, "type": node.type_name, "backend": node.backend_id,
                          "replaces": list(node.replaces), "pattern": pattern})
    for entry in fallbacks.values():
        entry["types"] = dict(entry["types"].most_common())
    removed: dict[str, dict[str, Any]] = {}
    original = {layer.name: layer.type_name for layer in network}
    for item in optimized.removed():
        name, why = item["layer"], item["why"]
        kind = "folded into the layer before" if why.startswith("folded into") else why
        entry = removed.setdefault(kind, {"why": kind, "layers": [], "types": Counter()})
        entry["layers"].append(name)
        entry["types"][original.get(name, "?")] += 1
    for entry in removed.values():
        entry["types"] = dict(entry["types"].most_common())
    return {
        "groups": groups,
        "fallbacks": list(fallbacks.values()),
        "fused": fused,
        "removed": list(removed.values()),
        "layers": optimized.assignments(),
    }
