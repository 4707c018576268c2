"""onnxruntime's record of which execution provider runs each node
(`session.get_provider_graph_assignment_info()`), from plugnn's placement.

Each layer of a loaded network is one `OrtEpAssignedSubgraph`: `ep_name` is the backend that
runs it (a plugnn backend id, such as "CpuAcc"), `get_nodes()` the model's nodes it computes
(one, or several when a backend fused them, as CpuAcc's blocked chains do, or when the
optimizer folded a batch normalization into a convolution). Nodes the optimizer computed away
(constant subgraphs) run on no backend and are in no subgraph.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OrtEpAssignedNode:
    """A model node: its operator's domain ("" for ai.onnx), type and name."""

    domain: str
    op_type: str
    name: str


@dataclass(frozen=True)
class OrtEpAssignedSubgraph:
    """The nodes one backend runs as one layer."""

    ep_name: str
    nodes: tuple[OrtEpAssignedNode, ...]

    def get_nodes(self) -> list[OrtEpAssignedNode]:
        return list(self.nodes)


def assignment(layers: Iterable[Any], model_nodes: Sequence[Any]) -> list[OrtEpAssignedSubgraph]:
    """`layers` (an OptimizedNetwork's graph nodes: name, backend_id, replaces) as subgraphs of
    the `model_nodes` (ONNX NodeProtos) each computes, in the layers' order."""
    by_name: Mapping[str, Any] = {n.name: n for n in model_nodes if n.name}
    subgraphs = []
    for layer in layers:
        if layer.backend_id is None:
            continue  # a runtime copy between backends' memories
        names = [layer.name, *layer.replaces]
        nodes = tuple(OrtEpAssignedNode(by_name[n].domain, by_name[n].op_type, n)
                      for n in dict.fromkeys(names) if n in by_name)
        if nodes:
            subgraphs.append(OrtEpAssignedSubgraph(layer.backend_id, nodes))
    return subgraphs
