"""OptimizedNetwork: every layer with its backend and the attempts that led there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plugnn.backend import BackendProvider
from plugnn.errors import PlugnnError
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

    def explain(self, verbose: bool | None = None, format: str = "text") -> str:
        """Why each layer went where it went.

        `format="text"`: with `verbose=True`, every layer with every backend's answer and every
        removed layer; with `verbose=False`, a summary that fits one screen whatever the
        network's size (placement grouped, fallbacks and fusions by pattern with counts,
        removals by reason, long generated names shortened); None (the default) is verbose for
        networks of at most 20 layers, the summary above that.
        `format="dot"`: Graphviz's dot language, layers coloured by backend, fallbacks and fused
        layers marked (render it with `dot -Tsvg`, or `plugnn run --graph FILE.svg`)."""
        from plugnn import explain as text

        if format == "dot":
            from plugnn.graph_dot import to_dot

            return to_dot(self.network_name, self.preferred, self.graph)
        if format != "text":
            raise PlugnnError(f"explain(format=...) takes 'text' or 'dot', not {format!r}")
        if verbose is None:
            verbose = len(self.graph.nodes) <= text.SMALL_NETWORK
        if verbose:
            return text.verbose(self.network_name, self.preferred, self.graph)
        return text.summary(self.network_name, self.preferred, self.graph)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<plugnn.OptimizedNetwork {self.network_name!r}: {len(self.graph.nodes)} layers on {self.backends_used}>"
