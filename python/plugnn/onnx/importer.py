"""The ONNX graph walk: read the model, check opset and types, convert node by node.

Every ONNX value is, during the walk, either a NumPy array (known at import time: an
initializer, a Constant, a folded shape computation) or a `plugnn.Tensor` (computed at run
time). Converters (ops_*.py, registered in `registry.OPS`) turn one node into Network layers;
nodes whose inputs are all known and whose operator is pure metadata are evaluated with NumPy
(folding.py). Anything the importer cannot represent exactly is a ModelError.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from plugnn.errors import ModelError, NetworkError
from plugnn.network import Network, Tensor
from plugnn.onnx.registry import OPS, Converter
from plugnn.tensor import DataType

MIN_OPSET = 7


class NeedsConstantError(ModelError):
    """A value the importer needs at import time is a graph input (the ONNX backend binds it)."""

    def __init__(self, message: str, input_name: str) -> None:
        super().__init__(message)
        self.input_name = input_name


class DynamicShapeError(ModelError):
    """A graph input has dynamic dims and input_shapes does not fix them."""

    def __init__(self, message: str, input_name: str) -> None:
        super().__init__(message)
        self.input_name = input_name


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ModelError("importing ONNX models needs the onnx package: pip install onnx "
                         "(or pip install 'plugnn[onnx]')") from None
    return onnx


def supported_operators() -> list[str]:
    _register_all()
    return sorted(OPS)


def _register_all() -> None:
    from plugnn.onnx import ops_conv, ops_elementwise, ops_linear, ops_shape  # noqa: F401


# ---- reading --------------------------------------------------------------------------------


def read_model(model: Any, base_dir: str | os.PathLike[str] | None = None) -> tuple[Any, str]:
    """(ModelProto with external data loaded, a description of the source for messages)."""
    onnx = _onnx()
    from google.protobuf.message import DecodeError

    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        source = str(path)
        if not path.exists():
            raise ModelError(f"{source}: no such file")
        if path.is_dir():
            raise ModelError(f"{source}: is a directory, not an ONNX model file")
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except (DecodeError, RuntimeError, ValueError, OSError) as exc:
            raise ModelError(f"{source}: not an ONNX model ({type(exc).__name__}: {exc})") from None
        if base_dir is None:
            base_dir = path.parent
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source = "<bytes>"
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(bytes(model))
        except DecodeError as exc:
            raise ModelError(f"{source}: not an ONNX model (protobuf: {exc})") from None
    elif isinstance(model, onnx.ModelProto):
        source = f"<ModelProto {model.graph.name!r}>" if model.graph.name else "<ModelProto>"
        proto = model
    else:
        raise ModelError(f"plugnn.onnx.load takes a path, bytes or an onnx.ModelProto, got {type(model).__name__}")
    if proto.ir_version == 0 or not proto.HasField("graph"):
        raise ModelError(f"{source}: not an ONNX model (no ir_version or no graph)")
    proto = _load_external_data(proto, base_dir, source, copy=proto is model)
    return proto, source


def _all_tensors(proto: Any) -> list[Any]:
    onnx = _onnx()
    tensors = []

    def graph_tensors(graph: Any) -> None:
        tensors.extend(graph.initializer)
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    tensors.append(attr.t)
                elif attr.type == onnx.AttributeProto.GRAPH:
                    graph_tensors(attr.g)

    graph_tensors(proto.graph)
    return tensors


def _load_external_data(proto: Any, base_dir: Any, source: str, copy: bool) -> Any:
    onnx = _onnx()
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    external = [t for t in _all_tensors(proto) if uses_external_data(t)]
    if not external:
        return proto
    if base_dir is None:
        names = ", ".join(repr(t.name) for t in external[:5]) + (" ..." if len(external) > 5 else "")
        raise ModelError(f"{source}: tensor(s) {names} keep their data in external files, and the directory "
                         f"holding them is unknown: load the model from its path, or pass base_dir=")
    base = Path(base_dir)
    for tensor in external:
        info = ExternalDataInfo(tensor)
        location = base / info.location
        if not location.is_file():
            raise ModelError(f"{source}: tensor {tensor.name!r} keeps its data in external file "
                             f"{str(location)!r}, which does not exist")
        size = location.stat().st_size
        offset = int(info.offset or 0)
        length = int(info.length) if info.length else None
        if offset > size or (length is not None and offset + length > size):
            raise ModelError(f"{source}: tensor {tensor.name!r}: external file {str(location)!r} holds {size} bytes, "
                             f"the tensor needs offset {offset} + length {length}")
    if copy:
        clone = onnx.ModelProto()
        clone.CopyFrom(proto)
        proto = clone
    try:
        onnx.external_data_helper.load_external_data_for_model(proto, str(base))
    except Exception as exc:  # noqa: BLE001 - onnx raises several types here
        raise ModelError(f"{source}: loading external tensor data from {str(base)!r} failed: {exc}") from None
    return proto


# ---- the walk --------------------------------------------------------------------------------


def load(model: Any, *, name: str | None = None, input_shapes: Mapping[str, Sequence[int]] | None = None,
         base_dir: Any = None) -> Network:
    proto, source = read_model(model, base_dir)
    if name is None and isinstance(model, (str, os.PathLike)):
        name = proto.graph.name or Path(model).stem
    return import_model(proto, source=source, name=name, input_shapes=input_shapes)


def opset_of(proto: Any, source: str) -> int:
    onnx = _onnx()
    versions = {o.domain: o.version for o in proto.opset_import}
    if "" not in versions and "ai.onnx" not in versions:
        if proto.ir_version >= 3 or proto.opset_import:
            raise ModelError(f"{source}: the model imports no default-domain (ai.onnx) opset")
        return 1
    opset = versions.get("", versions.get("ai.onnx", 0))
    newest = onnx.defs.onnx_opset_version()
    if opset < MIN_OPSET:
        raise ModelError(f"{source}: opset {opset} is older than {MIN_OPSET}, the oldest plugnn imports; convert it "
                         f"with onnx.version_converter.convert_version(model, {MIN_OPSET}) or newer")
    if opset > newest:
        raise ModelError(f"{source}: opset {opset} is newer than the installed onnx {onnx.__version__} knows "
                         f"({newest}); upgrade onnx")
    return opset


def import_model(proto: Any, *, source: str = "<model>", name: str | None = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 constants: Mapping[str, np.ndarray] | None = None) -> Network:
    """Convert a read ModelProto. `constants` binds graph inputs to fixed values (the ONNX
    backend uses it for shape-like inputs); they are then not network inputs."""
    _register_all()
    opset = opset_of(proto, source)
    return _Importer(proto, source, opset, name, input_shapes or {}, constants or {}).run()


class _PendingInput:
    """A graph input that is not float32: usable only as a constant (which it is not)."""

    def __init__(self, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape


Value = Any  # np.ndarray | Tensor | _PendingInput


def np_dtype(elem_type: int) -> np.dtype:
    onnx = _onnx()
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return np.dtype(object)


def type_name(elem_type: int) -> str:
    onnx = _onnx()
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"element type {elem_type}"


class _Importer:
    def __init__(self, proto: Any, source: str, opset: int, name: str | None,
                 input_shapes: Mapping[str, Sequence[int]], constants: Mapping[str, np.ndarray]) -> None:
        self.proto = proto
        self.graph = proto.graph
        self.source = source
        self.opset = opset
        self.network = Network(name or proto.graph.name or "onnx_model")
        self.input_shapes = {k: tuple(int(d) for d in v) for k, v in input_shapes.items()}
        self.bound = dict(constants)
        self.values: dict[str, Value] = {}
        self.const_tensors: dict[str, Tensor] = {}  # value name -> constant layer made for it
        self.graph_inputs: set[str] = set()
        self.used_names: set[str] = set()
        self.reserved = {i.name for i in self.graph.input} | {o.name for o in self.graph.output}
        counts: dict[str, int] = {}
        for node in self.graph.node:
            counts[node.name] = counts.get(node.name, 0) + 1
        self.node_name_counts = counts
        self.consumers: dict[str, int] = {}
        for node in self.graph.node:
            for i in node.input:
                self.consumers[i] = self.consumers.get(i, 0) + 1
        for out in self.graph.output:
            self.consumers[out.name] = self.consumers.get(out.name, 0) + 1

    # -- names --------------------------------------------------------------------------

    def free_name(self, base: str) -> str:
        candidate, k = base, 1
        while candidate in self.used_names or candidate in self.reserved:
            candidate = f"{base}_{k}"
            k += 1
        self.used_names.add(candidate)
        return candidate

    # -- inputs and initializers --------------------------------------------------------

    def _initializers(self) -> None:
        from onnx import numpy_helper

        for tensor in self.graph.initializer:
            try:
                self.values[tensor.name] = numpy_helper.to_array(tensor)
            except Exception as exc:  # noqa: BLE001 - malformed tensor data
                raise ModelError(f"{self.source}: initializer {tensor.name!r} cannot be read: {exc}") from None
        for sparse in self.graph.sparse_initializer:
            raise ModelError(f"{self.source}: sparse initializer {sparse.values.name!r} is not supported")

    def _inputs(self) -> None:
        unknown = set(self.input_shapes) - {i.name for i in self.graph.input}
        if unknown:
            raise ModelError(f"{self.source}: input_shapes names {sorted(unknown)}, which are not graph inputs; "
                             f"the inputs are {[i.name for i in self.graph.input]}")
        for value_info in self.graph.input:
            name = value_info.name
            if name in self.values:  # an initializer: a constant (its default value)
                continue
            if name in self.bound:
                self.values[name] = np.asarray(self.bound[name])
                continue
            ttype = value_info.type
            if not ttype.HasField("tensor_type"):
                raise ModelError(f"{self.source}: input {name!r} is not a tensor ({ttype.WhichOneof('value')}); "
                                 f"plugnn imports tensor inputs only")
            shape = self._input_shape(value_info)
            elem = ttype.tensor_type.elem_type
            if elem == 1:
                tensor = self.network.add_input(name, shape)
                self.used_names.add(name)
                self.values[name] = tensor
                self.graph_inputs.add(name)
            else:
                self.values[name] = _PendingInput(name, np_dtype(elem), shape)

    def _input_shape(self, value_info: Any) -> tuple[int, ...]:
        name = value_info.name
        tensor_type = value_info.type.tensor_type
        given = self.input_shapes.get(name)
        if not tensor_type.HasField("shape"):
            if given is None:
                raise DynamicShapeError(f"{self.source}: input {name!r} has no shape in the model; pass "
                                        f"input_shapes={{{name!r}: (...)}} to plugnn.onnx.load", name)
            return given
        dims = list(tensor_type.shape.dim)
        if given is not None:
            if len(given) != len(dims):
                raise ModelError(f"{self.source}: input_shapes gives {name!r} rank {len(given)} {given}, the model "
                                 f"declares rank {len(dims)}")
            for i, (g, dim) in enumerate(zip(given, dims)):
                if dim.HasField("dim_value") and dim.dim_value != g:
                    raise ModelError(f"{self.source}: input_shapes gives {name!r} dim {i} = {g}, the model fixes it "
                                     f"to {dim.dim_value}")
                if g < 0:
                    raise ModelError(f"{self.source}: input_shapes gives {name!r} a negative dim {g}")
            return tuple(given)
        shape, dynamic = [], []
        for i, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                shape.append(int(dim.dim_value))
            else:
                shape.append(-1)
                dynamic.append(f"{i} ({dim.dim_param!r})" if dim.dim_param else str(i))
        if dynamic:
            text = ", ".join(str(d) if d >= 0 else (dims[i].dim_param or "?") for i, d in enumerate(shape))
            raise DynamicShapeError(
                f"{self.source}: input {name!r} has dynamic dimension(s) {', '.join(dynamic)} in shape [{text}]; "
                f"plugnn needs static shapes: pass input_shapes={{{name!r}: (...)}} to plugnn.onnx.load", name)
        return tuple(shape)

    # -- the walk ------------------------------------------------------------------------

    def run(self) -> Network:
        self._initializers()
        self._inputs()
        for index, node in enumerate(self.graph.node):
            self._node(index, node)
        self._outputs()
        return self.network

    def _node(self, index: int, node: Any) -> None:
        ctx = NodeContext(self, index, node)
        if node.domain not in ("", "ai.onnx"):
            raise ctx.error(f"operator domain {node.domain!r} is not supported (only the default ai.onnx domain)")
        converter = OPS.get(node.op_type)
        inputs = [self.values.get(n) if n else None for n in node.input]
        for i, (n, v) in enumerate(zip(node.input, inputs)):
            if n and v is None:
                raise ctx.error(f"input {i} {n!r} is produced by no earlier node, initializer or graph input")
        if converter is None:
            raise ctx.error(f"operator {node.op_type!r} is not supported; plugnn imports: "
                            f"{', '.join(supported_operators())}")
        ctx.check_attributes(converter)
        outputs: Sequence[Value] | None = None
        try:
            if converter.fold is not None and all(v is None or isinstance(v, np.ndarray) for v in inputs):
                outputs = converter.fold(ctx)
            if outputs is None:
                outputs = converter.convert(ctx)
        except NetworkError as exc:
            raise ctx.error(str(exc)) from None
        for i, out_name in enumerate(node.output):
            if not out_name:
                continue
            if i >= len(outputs) or outputs[i] is None:
                if self.consumers.get(out_name):
                    raise ctx.error(f"output {i} ({out_name!r}) is used, and plugnn does not compute it "
                                    f"({converter.outputs_note or 'only the first output is supported'})")
                continue
            value = outputs[i]
            self.values[out_name] = np.asarray(value) if isinstance(value, (np.generic, int, float)) else value

    def _outputs(self) -> None:
        from onnx import TensorProto

        for value_info in self.graph.output:
            name = value_info.name
            if name not in self.values:
                raise ModelError(f"{self.source}: graph output {name!r} is produced by no node, initializer or input")
            if name in self.graph_inputs:
                value: Any = self.network.add_identity(self.values[name], name=self.free_name(f"{name}/identity"))
            else:
                value = self.values[name]
            if isinstance(value, _PendingInput):
                raise ModelError(f"{self.source}: graph output {name!r} is the graph input of type "
                                 f"{value.dtype}; plugnn imports float32 inputs only")
            declared = value_info.type.tensor_type if value_info.type.HasField("tensor_type") else None
            dtype = value.dtype.numpy_name if isinstance(value, Tensor) else value.dtype.name
            shape = tuple(value.shape)
            if declared is not None and declared.elem_type not in (0,):
                want = np_dtype(declared.elem_type)
                if want != np.dtype(dtype) and declared.elem_type != TensorProto.UNDEFINED:
                    raise ModelError(f"{self.source}: graph output {name!r} is declared {type_name(declared.elem_type)}, "
                                     f"plugnn computes {dtype}")
            if declared is not None and declared.HasField("shape"):
                dims = declared.shape.dim
                bad = len(dims) != len(shape) or any(
                    d.HasField("dim_value") and d.dim_value != s for d, s in zip(dims, shape))
                if bad:
                    text = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
                    raise ModelError(f"{self.source}: graph output {name!r} is declared with shape {text}, "
                                     f"plugnn computes {list(shape)}")
            if isinstance(value, np.ndarray):
                try:
                    DataType.from_any(value.dtype)
                except ValueError:
                    raise ModelError(f"{self.source}: graph output {name!r} is a constant of type {value.dtype}, "
                                     f"which plugnn tensors cannot hold") from None
                value = self.network.add_constant(value, name=self.free_name(f"{name}/constant"))
            self.network.add_output(value, name)


class NodeContext:
    """What a converter sees: the node, its inputs, attributes and helpers that name it in errors."""

    def __init__(self, importer: _Importer, index: int, node: Any) -> None:
        self.importer = importer
        self.index = index
        self.node = node
        self.op_type = node.op_type
        self.opset = importer.opset
        self.network = importer.network
        self._attrs = {a.name: a for a in node.attribute}
        self._main_name: str | None = None

    # -- errors --------------------------------------------------------------------------

    @property
    def label(self) -> str:
        node = self.node
        if node.name:
            return f"node {node.name!r} (#{self.index}, {node.op_type})"
        first = node.output[0] if node.output else "?"
        return f"node #{self.index} ({node.op_type}, unnamed, output {first!r})"

    def error(self, message: str) -> ModelError:
        return ModelError(f"{self.importer.source}: {self.label}: {message}")

    def unsupported_value(self, attribute: str, value: Any, supported: str) -> ModelError:
        return self.error(f"attribute {attribute!r} = {value!r} is not supported; supported: {supported}")

    # -- attributes ----------------------------------------------------------------------

    def check_attributes(self, converter: Converter) -> None:
        for attr_name, attr in self._attrs.items():
            if attr.ref_attr_name:
                raise self.error(f"attribute {attr_name!r} refers to a function attribute; not supported")
            if attr_name not in converter.attributes:
                listed = ", ".join(converter.attributes) or "none"
                raise self.error(f"attribute {attr_name!r} is not supported by plugnn's {self.op_type} import; "
                                 f"supported attributes: {listed}")

    def has(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        attr = self._attrs.get(name)
        if attr is None:
            return default
        from onnx import helper, numpy_helper

        if attr.type == attr.TENSOR:
            return numpy_helper.to_array(attr.t)
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list):
            return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        return value

    def ints(self, name: str, default: Any = None) -> list[int] | None:
        value = self.attr(name)
        return default if value is None else [int(v) for v in value]

    # -- inputs --------------------------------------------------------------------------

    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.input) and bool(self.node.input[i])

    def input_name(self, i: int) -> str:
        return self.node.input[i]

    def value(self, i: int) -> Value:
        return self.importer.values[self.node.input[i]]

    def output_used(self, i: int) -> bool:
        return i < len(self.node.output) and bool(self.node.output[i]) and \
            bool(self.importer.consumers.get(self.node.output[i]))

    def is_const(self, i: int) -> bool:
        return isinstance(self.value(i), np.ndarray)

    def shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.value(i).shape)

    def const(self, i: int, what: str) -> np.ndarray:
        """Input i's value, which must be known at import time."""
        name = self.node.input[i]
        value = self.value(i)
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, _PendingInput) or name in self.importer.graph_inputs:
            raise NeedsConstantError(
                f"{self.importer.source}: {self.label}: input {i} ({what}) {name!r} must be known at import time, "
                f"but it is a graph input; make it an initializer (a constant)", name)
        raise self.error(f"input {i} ({what}) {name!r} must be known at import time (a constant, or computed from "
                         f"constants and static shapes), but it is computed at run time")

    def tensor(self, i: int, what: str = "input") -> Tensor:
        """Input i as a float32 Tensor of the network (a constant layer when it is known)."""
        return self.importer_tensor(self.node.input[i], what, i)

    def importer_tensor(self, name: str, what: str, i: int | None = None) -> Tensor:
        importer = self.importer
        value = importer.values[name]
        where = f"input {i} ({what})" if i is not None else what
        if isinstance(value, Tensor):
            if value.dtype is not DataType.FLOAT32:
                raise self.error(f"{where} {name!r} has element type {value.dtype.numpy_name}; plugnn imports "
                                 f"float32 tensors only (other types until quantized support exists)")
            return value
        dtype = value.dtype
        if dtype != np.float32:
            kind = "graph input" if isinstance(value, _PendingInput) else "tensor"
            raise self.error(f"{where}: {kind} {name!r} has element type {dtype}; plugnn computes in float32 only "
                             f"(other types until quantized support exists)")
        if isinstance(value, _PendingInput):  # pragma: no cover - float32 inputs are never pending
            raise self.error(f"{where} {name!r} is not available")
        cached = importer.const_tensors.get(name)
        if cached is None:
            cached = self.network.add_constant(value, name=importer.free_name(name))
            importer.const_tensors[name] = cached
        return cached

    def array_tensor(self, array: np.ndarray, role: str) -> Tensor:
        """A constant layer for an array the converter computed (e.g. reshaped weights)."""
        return self.network.add_constant(np.asarray(array, np.float32), name=self.importer.free_name(
            f"{self.name()}/{role}"))

    # -- layer names -----------------------------------------------------------------------

    def name(self, suffix: str | None = None) -> str:
        """The node's layer name (its ONNX name when unique), or `<name>/<suffix>` for helper layers."""
        importer = self.importer
        if self._main_name is None:
            node = self.node
            if node.name and importer.node_name_counts.get(node.name) == 1 and node.name not in importer.reserved \
                    and node.name not in importer.used_names:
                importer.used_names.add(node.name)
                self._main_name = node.name
            else:
                out = node.output[0] if node.output and node.output[0] else str(self.index)
                self._main_name = importer.free_name(f"{node.op_type}_{out}")
        if suffix is None:
            return self._main_name
        return importer.free_name(f"{self._main_name}/{suffix}")

    def aux(self, suffix: str) -> str:
        """A helper layer name that does not take the node's own name."""
        if self._main_name is None:
            node = self.node
            base = node.name or f"{node.op_type}_{node.output[0] if node.output else self.index}"
            return self.importer.free_name(f"{base}/{suffix}")
        return self.name(suffix)
