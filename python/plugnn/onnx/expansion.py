"""Importing one ONNX node as several: the nodes an operator's ONNX function body holds
(functions.py), or the opset-7 form of a node of opsets 1 to 6 (legacy.py).

An `Expansion` is a list of NodeProtos in place of the node, each read at its own opset, with the
arrays some of them take as inputs. The walk converts them in order like graph nodes: a node whose
operator has no converter expands again (nested function bodies, up to `MAX_DEPTH` levels). Their
internal values get fresh names no graph value has, their layers names under the node's layer
name (`<node>/<body node>`), and an error inside names the node and the expanded node:
"node 'loss' (#3, NegativeLogLikelihoodLoss, imported through its ONNX function body): node
'loss/Gather_2' (Gather): ...".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plugnn.onnx.context import ImportState, NodeContext

MAX_DEPTH = 16  # function bodies within function bodies, at most


@dataclass
class Expansion:
    """The nodes standing for one node, in order.

    `main` is the node (among `nodes`) that keeps the original node's name, index and outputs (an
    old opset's node rewritten in its new form), or None (a function body: every node is new).
    `opsets[i]` is the opset nodes[i] is read at; `constants` binds value names to arrays;
    `note` is what the original node's label says about the expansion."""

    nodes: list[Any]
    opsets: list[int]
    note: str
    main: Any = None
    constants: dict[str, np.ndarray] = field(default_factory=dict)


def fresh_value(importer: ImportState, base: str) -> str:
    """A value name no graph value and no earlier expansion has: `base`, else `base_1`, ..."""
    candidate, k = base, 1
    while candidate in importer.value_names:
        candidate = f"{base}_{k}"
        k += 1
    importer.value_names.add(candidate)
    return candidate


def fresh_node_name(importer: ImportState, base: str) -> str:
    """A node name for an expanded node that no graph node and no layer has taken."""
    candidate, k = base, 1
    while candidate in importer.node_name_counts or candidate in importer.used_names or \
            candidate in importer.reserved:
        candidate = f"{base}_{k}"
        k += 1
    importer.node_name_counts[candidate] = 1
    return candidate


def base_name(ctx: NodeContext) -> str:
    """What an expansion's node names and value names start with: the node's name, or
    `<op_type>_<first output>` for an unnamed node (as its layer would be named)."""
    node = ctx.node
    if node.name:
        return str(node.name)
    return f"{node.op_type}_{node.output[0] if node.output and node.output[0] else ctx.index}"


def walk(ctx: NodeContext, expansion: Expansion, convert: Callable[[NodeContext], None]) -> None:
    """Convert the nodes of `expansion` in place of ctx's node, each through `convert`."""
    importer = ctx.importer
    if ctx.depth >= MAX_DEPTH:
        raise ctx.error(f"expanding it goes {MAX_DEPTH} levels deep (a function body that uses itself?); "
                        f"plugnn stops there")
    importer.values.update(expansion.constants)
    for node in expansion.nodes:
        for name in node.input:
            if name:
                importer.consumers[name] = importer.consumers.get(name, 0) + 1
    within = ctx.noted_label(expansion.note)
    for node, opset in zip(expansion.nodes, expansion.opsets):
        if node is expansion.main:
            sub = NodeContext(importer, ctx.index, node, opset=opset, within=ctx.within, note=expansion.note,
                              depth=ctx.depth + 1)
        else:
            sub = NodeContext(importer, None, node, opset=opset, within=within, depth=ctx.depth + 1)
        convert(sub)
