"""Data movement in place: tensors planned as views inside other tensors, so a Concat's inputs are
written straight into its output by their producers, and a Slice's or Split's output is read where
it lies in the input; the layer then copies nothing.

A layer of a backend with PN_BACKEND_MOVES_IN_PLACE (`Backend.moves_in_place`) qualifies when the
part it moves is one contiguous block: a Concat whose output has only 1s before the axis (batch
1, channel concatenation: each input is one block of the output), a Split likewise (each output
one block of the input), a Slice whose box is one run of the input (1s before its first partial
axis, whole axes after it, step 1). Each block must start on a multiple of `ALIGNMENT` bytes, and
a view is only made between intermediate tensors in host memory (no graph input, output or
constant, no data-dependent output), each tensor inside at most one other.

Layers are taken from the last to the first, so DenseNet's dense blocks (the k-th layer
concatenates the block's input and the k features so far, each feature read by every later
Concat) chain: the last Concat of a block owns the features, and an earlier Concat whose inputs
all sit in one tensor at its own layout (a prefix of it) becomes a view there too: no Concat of
the block copies anything.

Two kinds of layer become views whatever their backend, and are then not called at all
(`elided_layers`, `LoadedNetwork.elided_layers`: there is nothing to copy):
- a Reshape (Flatten, Squeeze and Unsqueeze import as one) keeps the bytes as they are, so its
  output and input are planned as the same bytes (a view at offset 0, either way round: the
  output inside the input, or the input inside a tensor the output already sits in);
- a Gather (TAKE) of one constant index along an axis with only 1s before it is one block of
  its data (the attention of a Swin or timm ViT export picks q, k and v out of one tensor so):
  its output is planned inside the data.
Both need the tensors to be eligible (below); the Gather's block must start on the alignment.

`movement_views` returns, for every tensor planned inside another, the tensor that owns the bytes
(the root, itself no view) and the byte offset; the memory plan gives the root one block alive
from the first write of any of its views to the last read of any, and every view its part. The
result is verified: no layer writes bytes it reads, except such a layer whose input and output
are the same bytes at exactly its block; if that ever failed, no views are made (the plan
without them is always correct).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugnn.descriptors import GatherOp, LayerKind
from plugnn.graph import Node
from plugnn.tensor import TensorInfo

MOVES = (LayerKind.CONCAT, LayerKind.SPLIT, LayerKind.SLICE)


@dataclass(frozen=True)
class View:
    root: str    # the tensor that owns the bytes
    offset: int  # byte offset inside it


def _axis_blocks(whole: TensorInfo, parts: Sequence[TensorInfo], axis: int) -> list[int] | None:
    """Byte offsets of `parts`, consecutive along `axis` of `whole`, or None when a part is not one
    contiguous block (a dim before the axis other than 1)."""
    rank = len(whole.shape)
    axis = axis + rank if axis < 0 else axis
    if any(d != 1 for d in whole.shape[:axis]):
        return None
    inner = whole.dtype.itemsize
    for d in whole.shape[axis + 1:]:
        inner *= d
    offsets, at = [], 0
    for part in parts:
        offsets.append(at)
        at += part.shape[axis] * inner
    return offsets


def _slice_block(x: TensorInfo, y: TensorInfo, starts: Sequence[int], steps: Sequence[int]) -> int | None:
    """The byte offset of a Slice's output in its input when it is one contiguous run, else None."""
    partial = False
    offset, stride = 0, x.dtype.itemsize
    for dim, n, start, step in reversed(list(zip(x.shape, y.shape, starts, steps))):
        if partial and n != 1:
            return None  # an axis outside the run's first partial axis must be 1 long
        if n != dim or (n > 1 and step != 1):
            if n > 1 and step != 1:
                return None
            partial = True
        offset += (start if n > 0 else 0) * stride
        stride *= dim
    return offset


def _blocks(node: Node, infos: Mapping[str, TensorInfo]) -> list[int] | None:
    """Per moved part (a Concat's inputs, a Split's outputs, a Slice's output): its byte offset in
    the whole tensor (the Concat's output, the input), or None when some part is not a block."""
    if node.kind is LayerKind.CONCAT:
        return _axis_blocks(infos[node.outputs[0]], [infos[k] for k in node.inputs], node.descriptor.axis)  # type: ignore[union-attr]
    if node.kind is LayerKind.SPLIT:
        return _axis_blocks(infos[node.inputs[0]], [infos[k] for k in node.outputs], node.descriptor.axis)  # type: ignore[union-attr]
    d = node.descriptor
    at = _slice_block(infos[node.inputs[0]], infos[node.outputs[0]], d.starts, d.steps)  # type: ignore[union-attr]
    return None if at is None else [at]


def _parts(node: Node) -> tuple[str, list[str]]:
    """The whole tensor and the parts of a moving layer."""
    if node.kind is LayerKind.CONCAT:
        return node.outputs[0], list(node.inputs)
    return node.inputs[0], list(node.outputs)


def _gather_block(node: Node, infos: Mapping[str, TensorInfo], constant: Callable[[str], Any]) -> int | None:
    """The byte offset of a Gather's output in its data when it is one block of it (TAKE of one
    constant index, only 1s before the axis), else None."""
    d = node.descriptor
    if node.kind is not LayerKind.GATHER or d.op is not GatherOp.TAKE or d.batch_dims != 0 \
            or len(node.inputs) != 2 or len(node.outputs) != 1:  # type: ignore[union-attr]
        return None
    indices = constant(node.inputs[1])
    data = infos[node.inputs[0]]
    rank = len(data.shape)
    axis = d.axis + rank if d.axis < 0 else d.axis  # type: ignore[union-attr]
    if indices is None or np.size(indices) != 1 or not 0 <= axis < rank or any(n != 1 for n in data.shape[:axis]):
        return None
    index = int(np.asarray(indices).reshape(-1)[0])
    extent = data.shape[axis]
    index = index + extent if index < 0 else index
    if not 0 <= index < extent:
        return None  # out of range: the layer's own error at run time
    inner = data.dtype.itemsize
    for n in data.shape[axis + 1:]:
        inner *= n
    return index * inner if infos[node.outputs[0]].num_bytes == inner else None


def _alias(node: Node, infos: Mapping[str, TensorInfo], eligible: Callable[[str], bool]) -> tuple[str, str] | None:
    """A Reshape's (input, output) when the two may be the same bytes: one input, one output, both
    eligible, the same non-zero size."""
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        return None
    x, y = node.inputs[0], node.outputs[0]
    size = infos[x].num_bytes
    if x == y or size == 0 or infos[y].num_bytes != size or not (eligible(x) and eligible(y)):
        return None
    return x, y


def _elided(node: Node, infos: Mapping[str, TensorInfo], constant: Callable[[str], Any],
            views: Mapping[str, View]) -> bool:
    """Whether `node` is a Reshape whose output and input are planned as the same bytes, or a
    Gather whose output is planned at its block of the data: a layer the runtime need not call."""
    def at(key: str) -> tuple[str, int]:
        view = views.get(key)
        return (view.root, view.offset) if view else (key, 0)

    if node.kind is LayerKind.RESHAPE and len(node.inputs) == 1 and len(node.outputs) == 1:
        x, y = node.inputs[0], node.outputs[0]
        return (x in views or y in views) and at(x) == at(y)
    if node.kind is LayerKind.GATHER and node.outputs and node.outputs[0] in views:
        block = _gather_block(node, infos, constant)
        root, offset = at(node.inputs[0])
        return block is not None and at(node.outputs[0]) == (root, offset + block)
    return False


def elided_layers(nodes: Sequence[Node], infos: Mapping[str, TensorInfo], constant: Callable[[str], Any],
                  views: Mapping[str, View]) -> list[str]:
    """The layers `views` makes pointless to call (see the module's text), in order."""
    return [node.name for node in nodes if _elided(node, infos, constant, views)]


def movement_views(nodes: Sequence[Node], infos: Mapping[str, TensorInfo], eligible: Callable[[str], bool],
                   in_place: Callable[[Node], bool], alignment: int,
                   constant: Callable[[str], Any] = lambda key: None) -> dict[str, View]:
    """The views (see the module's text): `eligible(key)` says whether a tensor may live inside
    another or hold others (an intermediate in host memory, not a graph input, output or
    constant, not data-dependent), `in_place(node)` whether a node's backend moves in place,
    `constant(key)` a constant tensor's array (None for others)."""
    parent: dict[str, tuple[str, int]] = {}

    def resolve(key: str) -> tuple[str, int]:
        offset = 0
        while key in parent:
            key, step = parent[key]
            offset += step
        return key, offset

    for node in reversed(nodes):
        if node.kind is LayerKind.RESHAPE:
            alias = _alias(node, infos, eligible)
            if alias is not None:
                x, y = alias
                if y not in parent and resolve(x)[0] != y:
                    parent[y] = (x, 0)
                elif x not in parent and resolve(y)[0] != x:
                    parent[x] = (y, 0)
            continue
        if node.kind is LayerKind.GATHER:
            block = _gather_block(node, infos, constant)
            x, y = node.inputs[0], node.outputs[0]
            if block is not None and block % alignment == 0 and eligible(x) and eligible(y) \
                    and y not in parent and resolve(x)[0] != y:
                parent[y] = (x, block)
            continue
        if node.kind not in MOVES or not in_place(node):
            continue
        whole, parts = _parts(node)
        offsets = _blocks(node, infos)
        if offsets is None or not eligible(whole) or len(set(parts)) != len(parts) or whole in parts:
            continue
        if node.kind is LayerKind.CONCAT and whole not in parent and all(k in parent for k in parts):
            # every input already sits in one tensor: the output is a view there if they sit at
            # its own layout
            placed = [resolve(k) for k in parts]
            roots = {root for root, _ in placed}
            base = placed[0][1] - offsets[0]
            if len(roots) == 1 and whole not in roots and base % alignment == 0 and \
                    all(at - off == base for (_, at), off in zip(placed, offsets)):
                parent[whole] = (placed[0][0], base)
            continue
        for key, offset in zip(parts, offsets):
            if key not in parent and eligible(key) and offset % alignment == 0 and infos[key].num_bytes > 0 \
                    and resolve(whole)[0] != key:
                parent[key] = (whole, offset)
    views = {key: View(*resolve(key)) for key in parent}
    return views if views and _verified(nodes, infos, views, in_place, constant) else {}


def _verified(nodes: Sequence[Node], infos: Mapping[str, TensorInfo], views: Mapping[str, View],
              in_place: Callable[[Node], bool], constant: Callable[[str], Any]) -> bool:
    """No layer writes bytes it reads, but for a moving layer's part at exactly its block (and a
    layer not called, which writes nothing)."""
    def span(key: str) -> tuple[str, int, int]:
        view = views.get(key)
        root, start = (view.root, view.offset) if view else (key, 0)
        return root, start, start + infos[key].num_bytes

    for node in nodes:
        if _elided(node, infos, constant, views):
            continue
        exact: set[tuple[str, str]] = set()  # (input, output) pairs that may be the same bytes
        if node.kind in MOVES and in_place(node):
            whole, parts = _parts(node)
            offsets = _blocks(node, infos)
            if offsets is not None:
                w_root, w_start, _ = span(whole)
                for key, offset in zip(parts, offsets):
                    root, start, _ = span(key)
                    if root == w_root and start == w_start + offset:
                        exact.add((key, whole) if node.kind is LayerKind.CONCAT else (whole, key))
        for out in node.outputs:
            o_root, o_start, o_end = span(out)
            for key in node.inputs:
                root, start, end = span(key)
                if root != o_root or end <= o_start or o_end <= start or start == end or (key, out) in exact:
                    continue
                return False
    return True
