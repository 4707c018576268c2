"""Concatenation in place: tensors planned as views inside a Concat's output, so the layers that
produce a Concat's inputs write straight into it and the Concat copies nothing.

A Concat layer of a backend with PN_BACKEND_CONCAT_IN_PLACE (`Backend.concat_in_place`) whose
output has only 1s before the axis (batch 1, channel concatenation: each input is one contiguous
block of the output) takes each input as a view at its block, when the input is an intermediate
tensor in host memory that is no graph input, output or constant and not already a view, and
the block starts on a multiple of `ALIGNMENT` bytes. Concats are taken from the last to the first,
so DenseNet's blocks (the k-th layer concatenates the block's input and the k features so far, each
feature read by every later Concat) chain: the last Concat of a block owns the features; an
earlier Concat whose inputs all sit in one tensor at its own layout (a prefix of it) becomes a view
there too, and no Concat of the block copies anything.

`concat_views` returns, for every tensor planned inside another, the tensor that owns the bytes
(the root, itself no view) and the byte offset; the memory plan then gives the root one block
alive from the first write of any of its views to the last read of any, and every view its part.
Each view region is verified: a layer never writes a tensor whose bytes overlap one it reads,
except a Concat whose input is exactly its block of the output; if that ever failed, no views are
made (the plan without them is always correct).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from plugnn.descriptors import LayerKind
from plugnn.graph import Node
from plugnn.tensor import TensorInfo


@dataclass(frozen=True)
class View:
    root: str    # the tensor that owns the bytes
    offset: int  # byte offset inside it


def _blocks(node: Node, infos: Mapping[str, TensorInfo]) -> list[int] | None:
    """The byte offset of each input's block in the Concat's output, or None when a block is not
    contiguous (a dim before the axis other than 1)."""
    out = infos[node.outputs[0]]
    rank = len(out.shape)
    axis = int(node.descriptor.axis)  # type: ignore[union-attr]
    axis = axis + rank if axis < 0 else axis
    if any(d != 1 for d in out.shape[:axis]):
        return None
    inner = out.dtype.itemsize
    for d in out.shape[axis + 1:]:
        inner *= d
    offsets, at = [], 0
    for key in node.inputs:
        offsets.append(at)
        at += infos[key].shape[axis] * inner
    return offsets


def concat_views(nodes: Sequence[Node], infos: Mapping[str, TensorInfo], eligible: Callable[[str], bool],
                 in_place: Callable[[Node], bool], alignment: int) -> dict[str, View]:
    """The views (see the module's text): `eligible(key)` says whether a tensor may live inside
    another (an intermediate in host memory, not a graph input, output or constant, not bounded),
    `in_place(node)` whether a Concat node's backend leaves inputs in place."""
    parent: dict[str, tuple[str, int]] = {}

    def resolve(key: str) -> tuple[str, int]:
        offset = 0
        while key in parent:
            key, step = parent[key]
            offset += step
        return key, offset

    for node in reversed(nodes):
        if node.kind is not LayerKind.CONCAT or not in_place(node) or not eligible(node.outputs[0]):
            continue
        offsets = _blocks(node, infos)
        out = node.outputs[0]
        if offsets is None or len(set(node.inputs)) != len(node.inputs):
            continue
        if out not in parent and all(k in parent for k in node.inputs):
            # every input already sits in one tensor: the output is a view there if they sit at
            # its own layout
            placed = [resolve(k) for k in node.inputs]
            roots = {root for root, _ in placed}
            base = placed[0][1] - offsets[0]
            if len(roots) == 1 and out not in roots and base % alignment == 0 and \
                    all(at - off == base for (_, at), off in zip(placed, offsets)):
                parent[out] = (placed[0][0], base)
            continue
        for key, offset in zip(node.inputs, offsets):
            if key not in parent and eligible(key) and offset % alignment == 0 and infos[key].num_bytes > 0:
                parent[key] = (out, offset)
    views = {key: View(*resolve(key)) for key in parent}
    return views if views and _verified(nodes, infos, views, in_place) else {}


def _verified(nodes: Sequence[Node], infos: Mapping[str, TensorInfo], views: Mapping[str, View],
              in_place: Callable[[Node], bool]) -> bool:
    """No layer writes bytes it reads, but for a Concat's input at exactly its block."""
    def span(key: str) -> tuple[str, int, int]:
        view = views.get(key)
        root, start = (view.root, view.offset) if view else (key, 0)
        return root, start, start + infos[key].num_bytes

    for node in nodes:
        blocks = _blocks(node, infos) if node.kind is LayerKind.CONCAT and in_place(node) else None
        for out in node.outputs:
            o_root, o_start, o_end = span(out)
            for i, key in enumerate(node.inputs):
                root, start, end = span(key)
                if root != o_root or end <= o_start or o_end <= start or start == end:
                    continue
                if blocks is not None and start == o_start + blocks[i] and end - start == infos[key].num_bytes:
                    continue  # the input in place: the Concat leaves it
                return False
    return True
