"""What the runtime hands to a backend: one layer, a subgraph, and what optimization returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plugnn.descriptors import Descriptor, LayerKind
from plugnn.tensor import TensorInfo


@dataclass(frozen=True, eq=False)
class LayerSpec:
    """One layer as a backend sees it.

    `constants` has one entry per input: the input's data (a NumPy array) when it is
    a constant known before the network runs (weights, bias), else None. Ids are set
    inside a Subgraph (tensor ids name the edges) and are 0/empty elsewhere.
    """

    kind: LayerKind
    name: str
    descriptor: Descriptor
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    constants: tuple[Any, ...] = ()
    input_ids: tuple[int, ...] = ()
    output_ids: tuple[int, ...] = ()
    id: int = 0

    def constant(self, index: int) -> Any:
        """The constant data of input `index`, or None."""
        return self.constants[index] if index < len(self.constants) else None


@dataclass(frozen=True)
class SupportResult:
    """The answer of a layer-support query: yes, or no with a reason a person can read."""

    supported: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.supported


@dataclass(frozen=True)
class Subgraph:
    """Consecutive layers assigned to one backend, connected by tensor ids."""

    layers: tuple[LayerSpec, ...]
    input_ids: tuple[int, ...]
    output_ids: tuple[int, ...]


@dataclass(frozen=True)
class Substitution:
    """Layers `replaced_layer_ids` are replaced by `replacement`."""

    replaced_layer_ids: tuple[int, ...]
    replacement: LayerSpec


@dataclass(frozen=True)
class FailedLayer:
    layer_id: int
    reason: str


@dataclass(frozen=True)
class OptimizationResult:
    """What a backend's optimize_subgraph returns: each layer in exactly one list."""

    substitutions: tuple[Substitution, ...] = ()
    failed: tuple[FailedLayer, ...] = ()
    untouched: tuple[int, ...] = field(default=())
