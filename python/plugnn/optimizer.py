"""optimize(): from a Network to an OptimizedNetwork whose every layer has a backend.

The steps, in order (Arm NN's Optimize): the graph is read from the network (identity and
dropout dropped), backend-independent passes run (batch normalization folded into the
convolution or fully connected layer before it, constant subgraphs computed), half-precision
layers the first backend runs only in float32 are rewritten to float32 regions with casts at
their edges (half_precision.py), every layer is
placed on the first backend that supports it (per-layer override first, then the preferred
backends in order, every answer recorded), each backend may substitute, fuse or refuse the
consecutive layers it got (refused layers move on down the preference list), and copies are
inserted where a tensor crosses into or out of memory that is not host memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugnn.backend import BackendProvider
from plugnn.errors import NetworkError
from plugnn.graph import graph_from_network
from plugnn.half_precision import compute_half_in_float32
from plugnn.network import Network
from plugnn.optimized import OptimizedNetwork
from plugnn.passes import fold_batch_norms, fold_channel_affine, fold_constants
from plugnn.placement import assign, insert_copies, optimize_subgraphs, resolve_backends


def optimize(network: Network, runtime: BackendProvider, backends: Sequence[str] | None = None,
             overrides: Mapping[str, str] | None = None) -> OptimizedNetwork:
    """Assign every layer of `network` to one of `backends` (in order of preference; None: the
    runtime's own order, `runtime.preferred_backends`).

    `overrides` maps a layer name to the backend that should run it (tried first; the
    preferred list remains the fallback). Raises OptimizationError naming the layer,
    its type and every backend's reason when no backend can run a layer.
    """
    preferred, by_override = resolve_backends(runtime, backends, overrides)
    unknown_layers = set(overrides or {}) - {layer.name for layer in network}
    if unknown_layers:
        raise NetworkError(f"overrides name layers that network {network.name!r} does not have: "
                           f"{', '.join(sorted(unknown_layers))}")
    graph = graph_from_network(network)
    fold_batch_norms(graph)
    fold_constants(graph, preferred)
    fold_channel_affine(graph)
    compute_half_in_float32(graph, preferred)
    graph.drop_unused_constants()
    for node in graph.nodes:
        assign(graph, preferred, by_override, node)
    by_id = {b.backend_id: b for b in [*preferred, *by_override.values()]}
    optimize_subgraphs(graph, preferred, by_id)
    insert_copies(graph, by_id)
    return OptimizedNetwork(network.name, runtime, graph, [b.backend_id for b in preferred])
