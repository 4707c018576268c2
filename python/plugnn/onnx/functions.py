"""Operators ONNX defines as functions, imported through their function body.

For an operator plugnn has no converter for, whose schema at the node's opset has a function body
(`schema.has_function`) or builds one for the node (`schema.has_context_dependent_function`: the
body depends on the node's attributes and its inputs' types), the importer converts the body's
nodes in the node's place (expansion.py walks them):

- the body's formal inputs are the node's inputs (a missing optional input is the empty name),
  its formal outputs the node's outputs; every other value gets a fresh name `<node>/<value>`
  that no graph value has;
- an attribute that refers to one of the function's attributes (`ref_attr_name`) takes the
  node's attribute of that name, else the function's default, else the schema's default, else
  it is left out (as ONNX defines), in subgraphs too;
- each body node is named `<node>/<its name>`, or `<node>/<op_type>_<index>` when unnamed, so
  its layers (and `explain()`) show where they come from; it is read at the opset the function
  body imports;
- a body node whose operator has no converter but a function body expands the same way.

A converter always wins over the body: only operators plugnn has no converter for expand. An
operator of ONNX's preview domain (`ai.onnx.preview`: FlexAttention) imports only this way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext, PendingInput, onnx_module
from plugnn.onnx.expansion import Expansion, base_name, fresh_node_name, fresh_value

NOTE = "imported through its ONNX function body"
PREVIEW_DOMAIN = "ai.onnx.preview"  # ONNX's preview operators: imported through their bodies only


def has_body(op_type: str, opset: int, domain: str = "") -> bool:
    """Whether the operator (default domain, or `domain`) has a (context-dependent) function body at `opset`."""
    schema = _schema(op_type, opset, domain)
    return schema is not None and bool(schema.has_function or schema.has_context_dependent_function)


def _schema(op_type: str, opset: int, domain: str = "") -> Any:
    onnx = onnx_module()
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def domain_version(ctx: NodeContext, domain: str) -> int:
    """The model's opset of `domain` (1 when the model does not say: a segment's graph)."""
    imports = getattr(ctx.importer.proto, "opset_import", ())
    return next((int(o.version) for o in imports if o.domain == domain), 1)


def body(ctx: NodeContext, domain: str = "") -> Expansion | None:
    """The nodes of ctx's operator's function body bound to ctx's node, or None when ONNX gives
    the operator at ctx's opset no function body. `domain` PREVIEW_DOMAIN: an operator of ONNX's
    preview domain (FlexAttention), read at the model's opset of that domain."""
    version = domain_version(ctx, domain) if domain == PREVIEW_DOMAIN else ctx.opset
    schema = _schema(ctx.op_type, version, domain if domain == PREVIEW_DOMAIN else "")
    if schema is None or not (schema.has_function or schema.has_context_dependent_function):
        return None
    for attr in ctx.node.attribute:
        if attr.name not in schema.attributes:
            known = ", ".join(sorted(schema.attributes)) or "none"
            raise ctx.error(f"attribute {attr.name!r} is not one of {ctx.op_type}-{schema.since_version}'s (they are: "
                            f"{known})")
    function = _function(ctx, schema, version)
    onnx = onnx_module()
    opset = next((o.version for o in function.opset_import if o.domain in ("", "ai.onnx")), ctx.opset)
    attributes = _attributes(ctx, schema, function)
    names = _Names(ctx, function)
    base = names.base
    nodes = []
    for k, node in enumerate(function.node):
        new = onnx.NodeProto()
        new.CopyFrom(node)
        _bind(new, names.rename, attributes)
        new.name = fresh_node_name(ctx.importer, f"{base}/{node.name or f'{node.op_type}_{k}'}")
        nodes.append(new)
    return Expansion(nodes, [opset] * len(nodes), note=NOTE)


def _function(ctx: NodeContext, schema: Any, version: int) -> Any:
    onnx = onnx_module()
    function = onnx.FunctionProto()
    try:
        if schema.has_function:
            function.ParseFromString(schema.get_function_with_opset_version(version))
        else:
            types = [_type_proto(ctx, i).SerializeToString() for i in range(ctx.num_inputs)]
            function.ParseFromString(schema.get_context_dependent_function_with_opset_version(
                version, ctx.node.SerializeToString(), types))
    except Exception as exc:  # noqa: BLE001 - onnx raises its own C++ errors for malformed nodes
        raise ctx.error(f"ONNX cannot build its function body for this node: {exc}") from None
    if not function.node:
        raise ctx.error(f"ONNX gives {ctx.op_type} at opset {ctx.opset} no function body for this node")
    return function


def _type_proto(ctx: NodeContext, i: int) -> Any:
    """Input i's type for a context-dependent function (an empty TypeProto for a missing input)."""
    onnx = onnx_module()
    if not ctx.has_input(i):
        return onnx.TypeProto()
    value = ctx.value(i)
    if isinstance(value, Tensor):
        dtype = np.dtype(value.dtype.numpy_dtype)
    elif isinstance(value, PendingInput):
        dtype = value.dtype
    else:
        dtype = np.asarray(value).dtype
    try:
        elem = onnx.helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, TypeError, ValueError):
        elem = onnx.TensorProto.UNDEFINED
    return onnx.helper.make_tensor_type_proto(elem, list(value.shape))


def _attributes(ctx: NodeContext, schema: Any, function: Any) -> dict[str, Any]:
    """What a reference to a function attribute resolves to: the node's attribute, the function's
    default, the schema's default (absent names: the attribute is left out)."""
    resolved: dict[str, Any] = {}
    for name, attr in schema.attributes.items():
        if attr.default_value.name:
            resolved[name] = attr.default_value
    for attr in function.attribute_proto:
        resolved[attr.name] = attr
    for attr in ctx.node.attribute:
        resolved[attr.name] = attr
    return resolved


class _Names:
    """The body's value names bound to the node's: formal inputs and outputs to the node's, the
    rest to fresh names under the node's."""

    def __init__(self, ctx: NodeContext, function: Any) -> None:
        node = ctx.node
        self.ctx = ctx
        self.base = base_name(ctx)
        self.bound: dict[str, str] = {"": ""}
        for i, formal in enumerate(function.input):
            self.bound[formal] = node.input[i] if i < len(node.input) else ""
        for i, formal in enumerate(function.output):
            if i < len(node.output) and node.output[i]:
                self.bound[formal] = node.output[i]

    def rename(self, name: str) -> str:
        if name not in self.bound:
            self.bound[name] = fresh_value(self.ctx.importer, f"{self.base}/{name}")
        return self.bound[name]


def _bind(node: Any, rename: Callable[[str], str], attributes: dict[str, Any]) -> None:
    """Rename node's values and resolve its attribute references, in its subgraphs too."""
    onnx = onnx_module()
    inputs, outputs = [rename(n) for n in node.input], [rename(n) for n in node.output]
    del node.input[:]
    node.input.extend(inputs)
    del node.output[:]
    node.output.extend(outputs)
    kept = []
    for attr in node.attribute:
        if attr.ref_attr_name:
            source = attributes.get(attr.ref_attr_name)
            if source is None:
                continue
            resolved = onnx.AttributeProto()
            resolved.CopyFrom(source)
            resolved.name = attr.name
            attr = resolved
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            _bind_graph(graph, rename, attributes)
        kept.append(attr)
    copies = []
    for attr in kept:
        copy = onnx.AttributeProto()
        copy.CopyFrom(attr)
        copies.append(copy)
    del node.attribute[:]
    node.attribute.extend(copies)


bind_node = _bind  # tidy.py inlines model-local functions with it


def _bind_graph(graph: Any, rename: Callable[[str], str], attributes: dict[str, Any]) -> None:
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        value.name = rename(value.name)
    for tensor in graph.initializer:
        tensor.name = rename(tensor.name)
    for node in graph.node:
        _bind(node, rename, attributes)
