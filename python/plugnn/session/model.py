"""What a session keeps of its model: the graph without its weights, the weights read once as
read-only arrays, and the inputs and outputs as onnxruntime describes them (NodeArg)."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from plugnn.errors import ModelError, SessionError
from plugnn.onnx.context import np_dtype, onnx_module
from plugnn.onnx.functions import PREVIEW_DOMAIN, has_body
from plugnn.onnx.importer import (foreign_operator_message, read_initializers, read_model, supported_operators,
                                  unsupported_hint)
from plugnn.onnx.registry import ORT_DEFAULT_DOMAIN, converter_for
from plugnn.session.ort_errors import InvalidProtobuf, NoSuchFile, OperatorNotImplemented

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
    if kind == "map_type":  # ZipMap's maps: "map(int64,tensor(float))"
        key = onnx_type(ttype.map_type.key_type)
        return f"map({key[len('tensor('):-1]},{_type_text(ttype.map_type.value_type)})"
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


@dataclass(frozen=True)
class ModelMetadata:
    """onnxruntime's ModelMetadata: what the model's header says about it."""

    producer_name: str
    graph_name: str
    domain: str
    description: str
    graph_description: str
    version: int
    custom_metadata_map: dict[str, str]


def _external_from_memory(tensor: Any, files: Mapping[str, memoryview], source: str) -> None:
    """Fill `tensor`'s data from the in-memory file its external data names, if one was given."""
    onnx = onnx_module()
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return
    info = {entry.key: entry.value for entry in tensor.external_data}
    data = files.get(info.get("location", ""))
    if data is None:
        return
    offset = int(info.get("offset", 0))
    length = int(info["length"]) if "length" in info else data.nbytes - offset
    if offset < 0 or length < 0 or offset + length > data.nbytes:
        raise ModelError(f"{source}: initializer {tensor.name!r} reads bytes {offset}..{offset + length} of external "
                         f"file {info['location']!r}, which was given with {data.nbytes} bytes")
    tensor.raw_data = bytes(data[offset:offset + length])
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT


def _override_dims(proto: Any, by_name: Mapping[str, int], by_denotation: Mapping[str, int], skip: set[str]) -> None:
    """Fix the graph inputs' symbolic dims named in `by_name` or denoted in `by_denotation`."""
    if not by_name and not by_denotation:
        return
    for value in proto.graph.input:
        if value.name in skip or not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            fixed = by_denotation.get(dim.denotation) if dim.denotation else None
            if fixed is None and dim.HasField("dim_param"):
                fixed = by_name.get(dim.dim_param)
            if fixed is not None:
                dim.dim_value = fixed


class SessionModel:
    """A model read once: `proto` is its graph with the initializers removed (they live, read
    only, in `initializers`, which every build's network references), `inputs` and
    `outputs` its NodeArgs. Fails with ModelError on what plugnn cannot import at any shape
    (an unreadable file, an operator plugnn does not have): NoSuchFile for a missing file,
    InvalidProtobuf for bytes that are not a model, NotImplemented for a missing operator.

    `dims_by_name` / `dims_by_denotation` fix the inputs' symbolic dims of that name (or
    denotation); `initializers` replace the model's initializers of those names (read-only
    arrays of the same type and shape; an initializer whose external data is missing may be
    given this way). A QDQ model's groups become integer operators (plugnn.onnx.qdq) unless
    `integer_qdq` is False."""

    def __init__(self, model: Any, dims_by_name: Mapping[str, int] | None = None,
                 dims_by_denotation: Mapping[str, int] | None = None,
                 initializers: Mapping[str, np.ndarray] | None = None,
                 external_files: Mapping[str, memoryview] | None = None, integer_qdq: bool = True) -> None:
        onnx = onnx_module()
        self._integer_qdq = integer_qdq
        if isinstance(model, (str, os.PathLike)) and not Path(model).exists():
            raise NoSuchFile(f"{model}: no such file (Load model from {model} failed. File doesn't exist)")
        replaced = dict(initializers or {})
        held: dict[str, np.ndarray] = {}
        try:
            if replaced or external_files:
                proto, self.source = self._read_replacing(model, replaced, external_files or {})
            else:
                proto, self.source = read_model(model, integer_qdq=integer_qdq, held=held)
        except ModelError as exc:
            if isinstance(model, (bytes, bytearray, memoryview)) and "not an ONNX model" in str(exc):
                raise InvalidProtobuf(str(exc)) from None
            raise
        self.name = proto.graph.name or (Path(model).stem if isinstance(model, (str, os.PathLike)) else "onnx_model")
        self.metadata = ModelMetadata(proto.producer_name, proto.graph.name, proto.domain, proto.doc_string,
                                      proto.graph.doc_string, int(proto.model_version),
                                      {p.key: p.value for p in proto.metadata_props})
        self.initializers = read_initializers(proto, self.source, held)
        self.initializers.update(replaced)
        # onnxruntime's overridable initializers: those the graph also lists as inputs (IR < 4 style).
        self.overridable = [_node_arg(v) for v in proto.graph.input if v.name in self.initializers]
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
        _override_dims(self.proto, dims_by_name or {}, dims_by_denotation or {}, known)
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

    def _read_replacing(self, model: Any, replaced: dict[str, np.ndarray],
                        files: Mapping[str, memoryview]) -> tuple[Any, str]:
        """read_model, with the initializers in `replaced` removed first (their data, external
        or not, is never read) after checking each replacement's type and shape, and the
        external data of the files in `files` taken from memory."""
        onnx = onnx_module()
        base_dir = None
        if isinstance(model, (str, os.PathLike)):
            proto = onnx.load(str(model), load_external_data=False)
            base_dir, source = Path(model).parent, str(model)
        elif isinstance(model, onnx.ModelProto):
            proto = onnx.ModelProto()
            proto.CopyFrom(model)
            source = f"<ModelProto {model.graph.name!r}>"
        else:
            proto, source = read_model(model, integer_qdq=False)
        by_name = {t.name: t for t in proto.graph.initializer}
        for name, array in replaced.items():
            tensor = by_name.get(name)
            if tensor is None:
                raise SessionError(f"{source}: add_initializer({name!r}): the model has no initializer of that name "
                                   f"(its initializers: {', '.join(sorted(by_name)) or 'none'})")
            want = (np_dtype(tensor.data_type), tuple(tensor.dims))
            if (array.dtype, array.shape) != want:
                raise SessionError(f"{source}: add_initializer({name!r}): {array.dtype} {list(array.shape)} does not "
                                   f"replace the model's {want[0]} {list(want[1])}")
        kept = [t for t in proto.graph.initializer if t.name not in replaced]
        del proto.graph.initializer[:]
        proto.graph.initializer.extend(kept)
        for tensor in proto.graph.initializer:
            _external_from_memory(tensor, files, source)
        proto, _ = read_model(proto, base_dir=base_dir, integer_qdq=self._integer_qdq)
        return proto, source

    def save(self, path: str, external_file: str | None = None, min_external_bytes: int = 1024) -> None:
        """Write the model as the session runs it (dims fixed, initializers replaced) to `path`;
        with `external_file`, initializers of `min_external_bytes` or more go to that file
        (relative to `path`'s folder, written anew)."""
        onnx = onnx_module()
        from onnx import numpy_helper

        out = onnx.ModelProto()
        out.CopyFrom(self.proto)
        out.graph.initializer.extend(numpy_helper.from_array(np.asarray(a), name) for name, a in self.initializers.items())
        folder = Path(path).resolve().parent
        folder.mkdir(parents=True, exist_ok=True)
        if external_file:
            target = folder / external_file
            if target.exists():
                target.unlink()  # onnx appends to an existing file
            onnx.save_model(out, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                            location=external_file, size_threshold=min_external_bytes, convert_attribute=False)
        else:
            onnx.save_model(out, str(path))

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
            raise OperatorNotImplemented(f"{self.source}: {'; '.join(parts)}")

    @property
    def needs_program(self) -> bool:
        """True when an input or output is a sequence or an optional: the model runs on the dynamic
        path (plugnn.dynamic) from the start."""
        return any(not a.type.startswith("tensor(") for a in self.inputs + self.outputs)

    def overriding(self, names: frozenset[str]) -> SessionModel:
        """The model with the overridable initializers `names` as inputs (onnxruntime's
        overridable initializers fed in a run): its inputs in the graph's input order, its
        initializers without those; an overridden initializer that is also a graph output is
        passed through as fed. Shares everything else (the stripped graph, the other weights)."""
        unknown = names - {a.name for a in self.overridable}
        if unknown:
            raise SessionError(f"{self.source}: {', '.join(sorted(unknown))} are not overridable initializers")
        variant = copy.copy(self)
        variant.initializers = {k: v for k, v in self.initializers.items() if k not in names}
        args = {a.name: a for a in self.inputs} | {a.name: a for a in self.overridable if a.name in names}
        variant.inputs = [args[v.name] for v in self.proto.graph.input if v.name in args]
        variant.overridable = [a for a in self.overridable if a.name not in names]
        passed = [o for o in self.computed_outputs if o in names]
        if passed:
            variant.proto = type(self.proto)()
            variant.proto.CopyFrom(self.proto)
            kept = [o for o in variant.proto.graph.output if o.name not in names]
            del variant.proto.graph.output[:]
            variant.proto.graph.output.extend(kept)
            variant.passthrough = self.passthrough + passed
            variant.computed_outputs = [o for o in self.computed_outputs if o not in names]
        return variant

    @property
    def dynamic(self) -> bool:
        """True when some input's shape has a dim that is not fixed (or is not declared)."""
        return any(i.shape is None or any(not isinstance(d, int) for d in i.shape) for i in self.inputs)

    def weight_bytes(self) -> int:
        return sum(a.nbytes for a in self.initializers.values())
