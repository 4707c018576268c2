"""What a session keeps of its model: the graph without its weights, the weights read once as
read-only arrays, and the inputs and outputs as onnxruntime describes them (NodeArg)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from plugnn.errors import ModelError
from plugnn.onnx.context import np_dtype, onnx_module
from plugnn.onnx.functions import PREVIEW_DOMAIN, has_body
from plugnn.onnx.importer import (foreign_operator_message, read_initializers, read_model, supported_operators,
                                  unsupported_hint)
from plugnn.onnx.registry import ORT_DEFAULT_DOMAIN, converter_for

Dim = int | str | None


@dataclass(frozen=True)
class NodeArg:
    """An input or output of a model, as onnxruntime's `NodeArg`: `name`, `shape` (a list: an
    int for a fixed dim, the dim's symbol for a symbolic one, None for an unknown one; None for
    a tensor whose shape the model does not declare) and `type` ("tensor(float)", ...)."""

    name: str
    shape: list[Dim] | None
    type: str

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of `type` (object for types plugnn tensors cannot hold)."""
        return _NUMPY_OF_TYPE.get(self.type, np.dtype(object))

    def describe(self) -> str:
        """`name` with its type and shape, as error messages show it: "'x' (tensor(float) ['N', 3])"."""
        shape = "unknown shape" if self.shape is None else str(self.shape)
        return f"{self.name!r} ({self.type} {shape})"


_NUMPY_OF_TYPE: dict[str, np.dtype] = {}


def onnx_type(elem_type: int) -> str:
    """onnxruntime's name of an ONNX element type: "tensor(float)", "tensor(int64)", ..."""
    onnx = onnx_module()
    try:
        name = onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        name = f"unknown({elem_type})"
    text = f"tensor({name})"
    if text not in _NUMPY_OF_TYPE:
        _NUMPY_OF_TYPE[text] = np_dtype(elem_type)
    return text


def _type_text(ttype: Any) -> str:
    """onnxruntime's name of a type: "tensor(float)", "seq(tensor(float))", "optional(...)"."""
    kind = ttype.WhichOneof("value")
    if kind == "tensor_type":
        return onnx_type(ttype.tensor_type.elem_type)
    if kind == "sequence_type":
        return f"seq({_type_text(ttype.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_text(ttype.optional_type.elem_type)})"
    return kind or "undefined"


def _node_arg(value_info: Any) -> NodeArg:
    ttype = value_info.type
    if not ttype.HasField("tensor_type"):
        return NodeArg(value_info.name, None, _type_text(ttype))
    tensor = ttype.tensor_type
    shape: list[Dim] | None = None
    if tensor.HasField("shape"):
        shape = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
            elif dim.dim_param:
                shape.append(dim.dim_param)
            else:
                shape.append(None)
    return NodeArg(value_info.name, shape, onnx_type(tensor.elem_type))


class SessionModel:
    """A model read once: `proto` is its graph with the initializers removed (they live, read
    only, in `initializers`, which every specialization's network references), `inputs` and
    `outputs` its NodeArgs. Fails with ModelError on what plugnn cannot import at any shape
    (an unreadable file, an operator plugnn does not have)."""

    def __init__(self, model: Any) -> None:
        onnx = onnx_module()
        proto, self.source = read_model(model)
        self.name = proto.graph.name or (Path(model).stem if isinstance(model, (str, os.PathLike)) else "onnx_model")
        self.initializers = read_initializers(proto, self.source)
        if proto is model:  # the caller's object: never changed, so strip a copy
            stripped = onnx.ModelProto()
            stripped.CopyFrom(proto)
            proto = stripped
        del proto.graph.initializer[:]
        # A fresh copy of the stripped graph: the parsed weights' memory goes with the original
        # (protobuf keeps removed fields' bytes until the whole message is freed).
        self.proto = onnx.ModelProto()
        self.proto.ParseFromString(proto.SerializeToString())
        del proto
        known = set(self.initializers)
        self.inputs = [_node_arg(v) for v in self.proto.graph.input if v.name not in known]
        self.outputs = [_node_arg(v) for v in self.proto.graph.output]
        # Graph outputs that are graph inputs (a valid model; a Network names its inputs and
        # outputs in one namespace): the session returns the fed value, as onnxruntime does, and
        # the graph it imports leaves them out.
        fed = {a.name for a in self.inputs}
        self.passthrough = [o.name for o in self.outputs if o.name in fed]
        if self.passthrough:
            kept = [o for o in self.proto.graph.output if o.name not in fed]
            del self.proto.graph.output[:]
            self.proto.graph.output.extend(kept)
        self.computed_outputs = [o.name for o in self.proto.graph.output]
        self._check_operators()

    def _check_operators(self) -> None:
        supported = set(supported_operators()) | set(supported_operators(ORT_DEFAULT_DOMAIN))
        opset = next((o.version for o in self.proto.opset_import if o.domain in ("", "ai.onnx")), 1)
        missing = sorted({n.op_type for n in self.proto.graph.node if n.domain in ("", "ai.onnx")
                          and n.op_type not in supported and not has_body(n.op_type, opset)})
        foreign: dict[str, set[str]] = {}
        for n in self.proto.graph.node:
            if n.domain not in ("", "ai.onnx") and converter_for(n.domain, n.op_type) is None \
                    and not (n.domain == PREVIEW_DOMAIN and has_body(n.op_type, 1, n.domain)):
                foreign.setdefault(n.domain, set()).add(n.op_type)
        if missing or foreign:
            parts = []
            if missing:
                parts.append(f"operator(s) {', '.join(missing)} are not supported; {unsupported_hint(missing)}")
            parts.extend(foreign_operator_message(domain, sorted(ops)) for domain, ops in sorted(foreign.items()))
            raise ModelError(f"{self.source}: {'; '.join(parts)}")

    @property
    def needs_program(self) -> bool:
        """True when an input or output is a sequence or an optional: the model runs on the dynamic
        path (plugnn.dynamic) from the start."""
        return any(not a.type.startswith("tensor(") for a in self.inputs + self.outputs)

    @property
    def dynamic(self) -> bool:
        """True when some input's shape has a dim that is not fixed (or is not declared)."""
        return any(i.shape is None or any(not isinstance(d, int) for d in i.shape) for i in self.inputs)

    def weight_bytes(self) -> int:
        return sum(a.nbytes for a in self.initializers.values())
