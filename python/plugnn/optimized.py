"""OptimizedNetwork: every layer with its backend and the attempts that led there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plugnn.backend import BackendProvider
from plugnn.graph import Graph, Node


class OptimizedNetwork:
    """The result of `plugnn.optimize`: load it with `runtime.load_network(optimized)`.

    `runtime` is the runtime (backend provider) it was optimized for; only that one loads it."""

    def __init__(self, network_name: str, runtime: BackendProvider, graph: Graph, preferred: Sequence[str]) -> None:
        self.network_name = network_name
        self.runtime = runtime
        self.graph = graph
        self.preferred = list(preferred)

    @property
    def layers(self) -> list[Node]:
        """The layers that run, in execution order (graph inputs, outputs and constants excluded)."""
        return list(self.graph.nodes)

    @property
    def backends_used(self) -> list[str]:
        return list(dict.fromkeys(n.backend_id for n in self.graph.nodes if n.backend_id is not None))

    def assignments(self) -> list[dict[str, Any]]:
        """One record per layer: name, type, backend, the original layers it stands for, attempts."""
        return [{
            "layer": node.name,
            "type": node.type_name,
            "backend": node.backend_id or "runtime",
            "replaces": list(node.replaces),
            "note": node.note,
            "attempts": [{"backend": a.backend_id, "accepted": a.accepted, "reason": a.reason, "stage": a.stage}
                         for a in node.attempts],
        } for node in self.graph.nodes]

    def removed(self) -> list[dict[str, str]]:
        """The layers that no longer exist after optimization, and why (folded, dropped, computed)."""
        return [{"layer": name, "why": why} for name, why in self.graph.removed]

    def table(self) -> str:
        """A table of layer, type and backend, grouped in execution order."""
        rows = [(n.name, n.type_name, n.backend_id or "runtime") for n in self.graph.nodes]
        widths = [max(len(r[i]) for r in [("layer", "type", "backend"), *rows]) for i in range(3)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(("layer", "type", "backend"), widths)).rstrip(),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        return "\n".join(lines)

    def explain(self) -> str:
        """Why each layer went where it went, in words."""
        lines = [f"network {self.network_name!r} on preferred backends {self.preferred}:"]
        for node in self.graph.nodes:
            where = node.backend_id or "the runtime"
            lines.append(f"- {node.name} ({node.type_name}) -> {where}")
            if node.replaces:
                lines.append(f"    stands for: {', '.join(node.replaces)}")
            if node.note:
                lines.append(f"    note: {node.note}")
            for a in node.attempts:
                verdict = "yes" if a.accepted else "no"
                lines.append(f"    {a.stage}: {a.backend_id}: {verdict} ({a.reason})")
        for name, why in self.graph.removed:
            lines.append(f"- {name}: {why}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<plugnn.OptimizedNetwork {self.network_name!r}: {len(self.graph.nodes)} layers on {self.backends_used}>"
