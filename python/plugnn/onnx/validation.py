"""What the importer checks before it converts anything: the model's names and declared sizes
(`check_model`, once per model read) and each node against its operator's ONNX schema
(`check_node`, before its converter runs). Each failure is a ModelError naming the node,
attribute, tensor or value at fault, so a malformed model never reaches a converter as an
IndexError, KeyError or TypeError, and the models onnx.checker rejects for duplicate names or
wrong arity are rejected here too (onnxruntime rejects them as well).

Sizes: a tensor the model declares (an initializer's dims), that folding at import would
compute, or that a layer would compute at run time, may hold at most plugnn.limits.
max_tensor_bytes() bytes (PLUGNN_MAX_TENSOR_BYTES, by default half the physical memory). A
larger one is refused before anything is allocated, with its size in the message.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from plugnn.errors import ModelError
from plugnn.limits import MAX_TENSOR_BYTES_ENV, human_bytes, max_tensor_bytes
from plugnn.onnx import schema_table
from plugnn.onnx.registry import MICROSOFT_DOMAIN

def check_size(shape: Sequence[int], itemsize: int, what: str) -> None:
    """ModelError when a tensor of `shape` (`itemsize` bytes per element) exceeds the limit;
    `what` names it ("<source>: node 'x' (Expand): output 0")."""
    if not all(isinstance(d, (int, np.integer)) for d in shape):
        return  # a symbolic dim (a network for every shape, plugnn.symbolic): checked when bound
    count = 1
    for d in shape:
        count *= max(int(d), 0)
    size = count * max(int(itemsize), 1)
    limit = max_tensor_bytes()
    if size > limit:
        raise ModelError(f"{what}: shape {list(shape)} holds {human_bytes(size)} ({size} bytes), more than the "
                         f"limit of {human_bytes(limit)} ({MAX_TENSOR_BYTES_ENV})")


# ---- the model -----------------------------------------------------------------------------------


def _text(value: Any, what: str, source: str) -> str:
    if isinstance(value, str):
        return value
    raise ModelError(f"{source}: {what} {value!r} is not UTF-8 text")


def check_model(proto: Any, source: str) -> None:
    """Names and declared sizes of the main graph and every subgraph."""
    _check_graph(proto.graph, source, "graph", set())


def _check_graph(graph: Any, source: str, where: str, outer: set[str]) -> None:
    from onnx import AttributeProto

    initializers: set[str] = set()
    for tensor in graph.initializer:
        name = _text(tensor.name, f"{where}: an initializer name", source)
        if name in initializers:
            raise ModelError(f"{source}: {where}: two initializers are named {name!r}")
        initializers.add(name)
        _check_dims(tensor, f"{source}: {where}: initializer {name!r}")
    inputs: set[str] = set()
    for value_info in graph.input:
        name = _text(value_info.name, f"{where}: a graph input name", source)
        if name in inputs:
            raise ModelError(f"{source}: {where}: two graph inputs are named {name!r}")
        inputs.add(name)
    defined = initializers | inputs
    for index, node in enumerate(graph.node):
        op_type = _text(node.op_type, f"{where}: node #{index}: op_type", source)
        label = f"{source}: {where}: node {node.name!r} (#{index}, {op_type})" if isinstance(node.name, str) and node.name \
            else f"{source}: {where}: node #{index} ({op_type})"
        for kind, names in (("input", node.input), ("output", node.output)):
            for k, name in enumerate(names):
                _text(name, f"{kind} {k}", label)
        _text(node.domain, "its domain", label)
        for attr in node.attribute:
            _text(attr.name, "an attribute name", label)
            if attr.type == AttributeProto.TENSOR:
                _check_dims(attr.t, f"{label}: attribute {attr.name!r}")
            for sub in ([attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)):
                _check_graph(sub, source, f"{where}: {label.removeprefix(source + ': ')}: attribute {attr.name!r}",
                             outer | defined)
        for k, name in enumerate(node.output):
            if not name:
                continue
            if name in defined:
                raise ModelError(f"{label}: output {k} {name!r} is already defined (by an earlier node, an "
                                 f"initializer or a graph input); ONNX graphs assign each value once")
            defined.add(name)


def _check_dims(tensor: Any, what: str) -> None:
    from onnx import helper

    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise ModelError(f"{what}: dims {dims} has a negative dim")
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        itemsize = 1  # strings, unknown types: read (and refused) later
    check_size(dims, itemsize, what)


# ---- one node against its schema -----------------------------------------------------------------


class Schema(NamedTuple):
    """What check_node reads of an operator's ONNX schema at one version."""

    since_version: int
    attributes: dict[str, int]  # name -> AttributeProto type
    min_input: int
    max_input: int
    min_output: int
    max_output: int
    inputs: tuple[tuple[str, bool], ...]  # formal inputs: (name, required: its option is Single)


@functools.lru_cache(maxsize=4096)
def _schema(op_type: str, opset: int, domain: str) -> Schema | None:
    """ONNX's schema of the operator at `opset` (the newest version at or below it; immutable:
    kept per operator and opset), None where ONNX defines no such operator. Read from
    schema_table (generated from onnx's schemas) when it covers `opset` of `domain`, which spares
    a process onnx's schema registry (12-13 ms at its first use); from onnx itself above that."""
    if domain == MICROSOFT_DOMAIN:
        return None  # onnxruntime's operators: onnx holds no schema of them
    if opset <= schema_table.OPSETS.get(domain, -1):
        rows = schema_table.SCHEMAS.get(domain, {}).get(op_type, ())
        for since, attributes, *arity, inputs in reversed(rows):
            if since <= opset:
                return Schema(since, dict(attributes), *arity, inputs)
        return None
    from onnx import defs

    try:
        schema = defs.get_schema(op_type, opset, domain)
    except Exception:  # noqa: BLE001 - SchemaError: an operator ONNX does not define at this opset
        return None
    single = defs.OpSchema.FormalParameterOption.Single
    return Schema(int(schema.since_version), {name: int(a.type) for name, a in schema.attributes.items()},
                  int(schema.min_input), int(schema.max_input), int(schema.min_output), int(schema.max_output),
                  tuple((formal.name, formal.option == single) for formal in schema.inputs))


def check_attribute_names(node: Any, label: str) -> None:
    """No attribute given twice, none without a value."""
    from onnx import AttributeProto

    seen: set[str] = set()
    for attr in node.attribute:
        if attr.name in seen:
            raise ModelError(f"{label}: attribute {attr.name!r} is given twice")
        seen.add(attr.name)
        if attr.type == AttributeProto.UNDEFINED and not attr.ref_attr_name:
            raise ModelError(f"{label}: attribute {attr.name!r} has no type (no value)")


def check_node(node: Any, opset: int, label: str) -> None:
    """The node against its operator's schema at `opset`: attributes of the types it gives,
    as many inputs and outputs as it allows, no required input named ''. The importer runs it
    after the node's converter (whose messages about a node it refuses say more) succeeded,
    and when the converter failed on what it could not foresee."""
    from onnx import AttributeProto

    check_attribute_names(node, label)
    schema = _schema(node.op_type, opset, "" if node.domain == "ai.onnx" else node.domain)
    if schema is None:
        return
    for attr in node.attribute:
        want = schema.attributes.get(attr.name)
        if want is None or attr.ref_attr_name:
            continue
        if want != int(AttributeProto.UNDEFINED) and int(attr.type) != want:
            raise ModelError(f"{label}: attribute {attr.name!r} is of type {AttributeProto.AttributeType.Name(attr.type)}, "
                             f"{node.op_type} takes {AttributeProto.AttributeType.Name(want)}")
    n_in = len(node.input)
    if n_in < schema.min_input or n_in > schema.max_input:
        raise ModelError(f"{label}: {n_in} input(s); {node.op_type}-{schema.since_version} takes "
                         f"{_arity(schema.min_input, schema.max_input)}")
    n_out = len(node.output)
    if n_out < schema.min_output or n_out > schema.max_output:
        raise ModelError(f"{label}: {n_out} output(s); {node.op_type}-{schema.since_version} has "
                         f"{_arity(schema.min_output, schema.max_output)}")
    for k, (name, (formal, required)) in enumerate(zip(node.input, _formals(schema.inputs, n_in))):
        if not name and required:
            raise ModelError(f"{label}: input {k} ({formal}) is required, and its name is empty ('')")


def _formals(formals: Sequence[Any], count: int) -> Iterable[Any]:
    """The formal parameter of each of `count` actual ones (the last, variadic, repeats)."""
    for k in range(count):
        if formals:
            yield formals[min(k, len(formals) - 1)]


def _arity(low: int, high: int) -> str:
    if high >= 2**31 - 1:
        return f"at least {low}"
    return f"{low}" if low == high else f"{low} to {high}"


# ---- external data -------------------------------------------------------------------------------


def external_location(base: str, location: str, tensor: str, source: str) -> str:
    """The path of an external data file, refused unless it is a relative path that stays in
    the model's directory `base` (after symlinks). Checked before the file is looked at, and
    every refused path gets the same message: it tells nothing of whether a file exists there
    or what it holds."""
    refused = ModelError(f"{source}: tensor {tensor!r}: external data location {location!r} is refused: it must be "
                         f"a relative path to a file in the model's directory")
    if not location or "\0" in location or os.path.isabs(location) or location.startswith(("\\", "~")):
        raise refused
    parts = location.replace("\\", "/").split("/")
    if any(part in ("..", "") for part in parts) and location not in (".",):
        raise refused
    root = os.path.realpath(base)
    target = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, target]) != root or target == root:
        raise refused
    return target
