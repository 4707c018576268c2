"""Control flow (If, Loop, Scan), sequences and optionals: what the importer does with them.

The runtime runs them (plugnn.dynamic): a Loop's body, a Scan's body, an If's branches and the
sequence and optional operators are steps of a `plugnn.dynamic.Program`, not layers of a static
Network. The importer's part:

- If whose condition is known at import (a constant, or computed from static shapes: ONNX's
  AffineGrid body tests the rank of its `size`) imports its chosen branch in its place, like a
  function body (expansion.py): the branch's values get fresh names, its outputs become the If's
  outputs through Identity, and an error inside names the If and the branch node;
- every other node of these operators is a `DynamicModelError` naming the node: the model needs
  the dynamic path (`plugnn.onnx.load` builds one static Network and says so).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx import expansion
from plugnn.onnx.context import DynamicModelError, NodeContext, onnx_module
from plugnn.onnx.registry import op

INLINED = "condition known at import: {branch} imported in its place"

# Operators the runtime runs (plugnn.dynamic): they move tensors and run subgraphs, no layer.
SEQUENCE_OPS = ("SequenceConstruct", "SequenceEmpty", "SequenceAt", "SequenceInsert", "SequenceErase",
                "SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap")
OPTIONAL_OPS = ("Optional", "OptionalHasElement", "OptionalGetElement")
CONTROL_OPS = ("If", "Loop", "Scan")
RUNTIME_OPS = frozenset(SEQUENCE_OPS + OPTIONAL_OPS + CONTROL_OPS)


def needs_runtime(ctx: NodeContext, why: str) -> DynamicModelError:
    """The error for a node the runtime runs: it names the node and says where such models run."""
    return DynamicModelError(
        f"{ctx.importer.source}: {ctx.label}: {why}; the runtime runs it (plugnn.dynamic), so the model needs "
        f"plugnn's dynamic path: plugnn.InferenceSession or plugnn.onnx.backend (plugnn.onnx.load builds one "
        f"static Network)")


# ---- If ---------------------------------------------------------------------------------------


def _condition(ctx: NodeContext) -> bool | None:
    """The If's condition when it is known at import, else None."""
    value = ctx.value(0)
    if not isinstance(value, np.ndarray):
        return None
    if value.size != 1:
        raise ctx.error(f"input 0 (cond) must hold one element, got shape {list(value.shape)}")
    return bool(value.reshape(-1)[0])


def inline_branch(ctx: NodeContext, branch: Any, label: str) -> expansion.Expansion:
    """The nodes of `branch` (a GraphProto without inputs) in the If's place: internal values
    renamed fresh, initializers bound as constants, one Identity per If output."""
    onnx = onnx_module()
    from onnx import numpy_helper

    importer = ctx.importer
    base = expansion.base_name(ctx)
    renamed: dict[str, str] = {}
    for tensor in branch.initializer:
        renamed[tensor.name] = expansion.fresh_value(importer, f"{base}/{tensor.name}")
    for node in branch.node:
        for name in node.output:
            if name:
                renamed[name] = expansion.fresh_value(importer, f"{base}/{name}")
    constants = {renamed[t.name]: numpy_helper.to_array(t) for t in branch.initializer}
    nodes = []
    for k, node in enumerate(branch.node):
        new = onnx.NodeProto()
        new.CopyFrom(node)
        _rename(new, renamed)
        new.name = expansion.fresh_node_name(importer, f"{base}/{label}/{node.name or f'{node.op_type}_{k}'}")
        nodes.append(new)
    if len(branch.output) != len(ctx.node.output):
        raise ctx.error(f"the {label} has {len(branch.output)} outputs, the node {len(ctx.node.output)}")
    for k, (out, target) in enumerate(zip(branch.output, ctx.node.output)):
        if not target:
            continue
        nodes.append(onnx.helper.make_node("Identity", [renamed.get(out.name, out.name)], [target],
                                           name=expansion.fresh_node_name(importer, f"{base}/{label}/output_{k}")))
    return expansion.Expansion(nodes, [ctx.opset] * len(nodes), note=INLINED.format(branch=label),
                               constants=constants)


def _rename(node: Any, renamed: dict[str, str]) -> None:
    """Rename node's values (and those of its subgraphs) that `renamed` maps."""
    inputs = [renamed.get(n, n) for n in node.input]
    outputs = [renamed.get(n, n) for n in node.output]
    del node.input[:]
    node.input.extend(inputs)
    del node.output[:]
    node.output.extend(outputs)
    for attr in node.attribute:
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            for sub in graph.node:
                _rename(sub, renamed)
            for value in graph.output:
                value.name = renamed.get(value.name, value.name)


@op("If", ("then_branch", "else_branch"))
def if_(ctx: NodeContext) -> list[Any]:
    condition = _condition(ctx)
    if condition is None:
        raise needs_runtime(ctx, "its condition is computed at run time")
    label = "then_branch" if condition else "else_branch"
    branch = ctx.attr(label)
    if branch is None:
        raise ctx.error(f"attribute {label!r} is missing")
    importer = ctx.importer
    body = inline_branch(ctx, branch, label)
    expansion.walk(ctx, body, importer._convert)  # type: ignore[attr-defined]
    return [importer.values[name] if name else None for name in ctx.node.output]


# ---- the operators the runtime runs --------------------------------------------------------


def _runtime(op_type: str, attributes: tuple[str, ...], why: str) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        raise needs_runtime(ctx, why)

    op(op_type, attributes)(convert)


_runtime("Loop", ("body",), "a Loop runs its body once per iteration")
_runtime("Scan", ("body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
                  "scan_output_directions", "directions"), "a Scan runs its body once per slice")
for _name in SEQUENCE_OPS:
    _runtime(_name, ("dtype", "axis", "keepdims", "new_axis", "body"), "it works on a sequence of tensors")
for _name in OPTIONAL_OPS:
    _runtime(_name, ("type",), "it works on an optional value")
