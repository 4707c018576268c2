"""Half-precision layers computed in float32 where the first preferred backend has float32
kernels only (onnxruntime's CPU provider does the same: casts around the nodes it has no
float16 kernel for, the regions between them computed in float32).

A layer with a float16 or bfloat16 tensor that the first preferred backend refuses as it is,
but takes with each of those tensors in float32, is rewritten to that float32 form. Its
half-precision inputs are cast to float32 once each (a constant is converted here, exactly),
and its half-precision outputs stay float32 for every reader that is rewritten too: a run of
such layers is one float32 region, and a Cast back to the half type is inserted only where the
tensor leaves the region (a layer that keeps the half type, a graph output). A region's values
are therefore rounded to the half type at its edges, not after every layer: the result is as
onnxruntime's, and closer to the exact one than CpuRef's (which rounds each layer's result to
the half type once). A layer that only moves elements (Reshape, Transpose, Concat, Slice, ...)
joins the region of the layers that produce its half-precision inputs even where the first
backend would move the half type (no casts around a Reshape inside a region: one rounding less
than onnxruntime, whose Reshape keeps float16). Other layers the first backend takes in the half
type, and layers whose descriptor names an element type (a Cast, random values), are left as
they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from plugnn import descriptors as d
from plugnn.backend import Backend
from plugnn.errors import PlugnnError
from plugnn.graph import Graph, Node
from plugnn.tensor import DataType, TensorInfo

HALF_TYPES = frozenset({DataType.FLOAT16, DataType.BFLOAT16})
# layers that only move elements: in a region, they move its float32 values
MOVEMENT = frozenset({d.LayerKind.RESHAPE, d.LayerKind.TRANSPOSE, d.LayerKind.CONCAT, d.LayerKind.SLICE,
                      d.LayerKind.SPLIT, d.LayerKind.EXPAND, d.LayerKind.GATHER, d.LayerKind.COPY})


def compute_half_in_float32(graph: Graph, preferred: Sequence[Backend]) -> None:
    """Rewrite, in `graph`, the half-precision layers `preferred[0]` runs only in float32 (see
    the module's text); nothing changes when no layer needs it."""
    if not preferred or not any(info.dtype in HALF_TYPES for info in graph.infos.values()):
        return
    first = preferred[0]
    chosen: set[int] = set()
    produced_in: set[str] = set()  # half tensors a chosen layer produces
    for node in graph.nodes:
        halves = [k for k in node.inputs if graph.infos[k].dtype in HALF_TYPES and k not in graph.constants]
        inside = node.kind in MOVEMENT and halves and all(k in produced_in for k in halves)
        if _takes_float32(graph, first, node, inside):
            chosen.add(id(node))
            produced_in.update(k for k in node.outputs if graph.infos[k].dtype in HALF_TYPES)
    if not chosen:
        return
    wide: dict[str, str] = {}  # half tensor key -> its float32 key
    readers: dict[str, list[Node]] = {}
    for node in graph.nodes:
        for key in node.inputs:
            readers.setdefault(key, []).append(node)
    outputs = set(graph.outputs.values())
    nodes: list[Node] = []
    for node in graph.nodes:
        if id(node) not in chosen:
            nodes.append(node)
            continue
        inputs = []
        for position, key in enumerate(node.inputs):
            if graph.infos[key].dtype not in HALF_TYPES:
                inputs.append(key)
                continue
            if key not in wide:
                if key in graph.constants:
                    wide[key] = graph.add_constant(f"{key}/float32", graph.constants[key].astype(np.float32))
                else:  # produced outside a region (a graph input, a layer kept in half precision)
                    wide[key] = _new_key(graph, f"{key}/float32", graph.infos[key])
                    nodes.append(_cast(f"{node.name}/input_{position}_to_float32", key, wide[key]))
            inputs.append(wide[key])
        results = []
        back: list[Node] = []
        for position, key in enumerate(node.outputs):
            if graph.infos[key].dtype not in HALF_TYPES:
                results.append(key)
                continue
            wide[key] = _new_key(graph, f"{key}/float32", graph.infos[key])
            results.append(wide[key])
            if key in outputs or any(id(r) not in chosen for r in readers.get(key, ())):
                back.append(_cast(f"{node.name}/output_{position}_to_{graph.infos[key].dtype.numpy_name}",
                                  wide[key], key))
        nodes.append(dataclasses.replace(node, inputs=inputs, outputs=results, attempts=[],
                                         note=_noted(node.note, graph, node)))
        nodes.extend(back)
    graph.nodes = nodes
    graph.drop_unused_constants()


def _takes_float32(graph: Graph, backend: Backend, node: Node, inside: bool) -> bool:
    """Whether `node` becomes float32: `backend` takes its float32 form, and it refuses the layer
    as it is or (`inside`) the layer moves values of a region."""
    keys = [*node.inputs, *node.outputs]
    if node.kind in (d.LayerKind.CAST, d.LayerKind.PRECOMPILED) \
            or not any(graph.infos[k].dtype in HALF_TYPES for k in keys) \
            or any(isinstance(v, DataType) for v in _fields(node.descriptor)):
        return False
    try:
        if not inside and backend.is_layer_supported(graph.spec(node)).supported:
            return False
        wide = Graph()
        wide.infos = {k: _as_float32(graph.infos[k]) for k in keys}
        wide.constants = {k: graph.constants[k].astype(np.float32) for k in node.inputs
                          if k in graph.constants and graph.infos[k].dtype in HALF_TYPES}
        wide.constants.update({k: graph.constants[k] for k in node.inputs
                               if k in graph.constants and k not in wide.constants})
        return backend.is_layer_supported(wide.spec(node)).supported
    except PlugnnError:
        return False  # a backend that cannot answer keeps the layer as it is (assignment asks again)


def _fields(descriptor: object) -> list[object]:
    if descriptor is None or not dataclasses.is_dataclass(descriptor):
        return []
    return [getattr(descriptor, f.name) for f in dataclasses.fields(descriptor)]


def _as_float32(info: TensorInfo) -> TensorInfo:
    return dataclasses.replace(info, dtype=DataType.FLOAT32) if info.dtype in HALF_TYPES else info


def _new_key(graph: Graph, key: str, like: TensorInfo) -> str:
    while key in graph.infos:
        key += "'"
    graph.infos[key] = _as_float32(like)
    return key


def _cast(name: str, source: str, target: str) -> Node:
    return Node(name=name, kind=d.LayerKind.CAST, descriptor=d.CastDescriptor(), inputs=[source], outputs=[target],
                note="half precision to and from the float32 layers around it")


def _noted(note: str, graph: Graph, node: Node) -> str:
    types = sorted({graph.infos[k].dtype.numpy_name for k in [*node.inputs, *node.outputs]
                    if graph.infos[k].dtype in HALF_TYPES})
    text = f"computed in float32 ({', '.join(types)} cast at the region's edges)"
    return f"{note}; {text}" if note else text


__all__ = ["HALF_TYPES", "compute_half_in_float32"]
