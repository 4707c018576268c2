"""The ONNX graph walk: read the model, check opset and types, convert node by node.

Every ONNX value is, during the walk, either a NumPy array (known at import time: an
initializer, a Constant, a folded shape computation) or a `plugnn.Tensor` (computed at run
time). Converters (ops_*.py, registered in `registry`; a module is imported at the first node
that needs one of its operators) turn one node into Network layers; nodes whose inputs are all
known and whose operator is pure metadata are evaluated with NumPy (folding.py). Anything the importer cannot represent exactly is a ModelError.

Some nodes import as several (expansion.py): a node of opsets 1 to 6 in its opset-7 form
(legacy.py), and a node whose operator has no converter through its ONNX function body
(functions.py).
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from plugnn.errors import ModelError, NetworkError, PlugnnError
from plugnn.network import Network, Tensor
from plugnn.onnx.context import (
    DynamicModelError,
    DynamicShapeError,
    ImportState,
    NeedsConstantError,
    NodeContext,
    PendingInput,
    RunTimeValueError,
    Value,
    np_dtype,
    onnx_module,
    type_name,
)
from plugnn.onnx import expansion, functions, legacy, qdq, symbolic_folds, tidy, validation, wire
from plugnn.onnx import registry
from plugnn.onnx.registry import MICROSOFT_DOMAIN, ORT_DEFAULT_DOMAIN, converter_for
from plugnn.symbolic import ShapeEnv
from plugnn.tensor import MAX_DIMS, DataType

__all__ = ["DynamicModelError", "DynamicShapeError", "NeedsConstantError", "RunTimeValueError", "foreign_operator_message",
           "import_model", "load", "read_initializers", "read_model", "supported_operators", "unsupported_hint"]

MIN_OPSET = 1


def supported_operators(domain: str = "") -> list[str]:
    """The operators plugnn imports in `domain` ("": ONNX's default domain; the names onnxruntime
    adds to the default domain are under registry.ORT_DEFAULT_DOMAIN)."""
    return registry.operators(domain)


def foreign_operator_message(domain: str, op_types: Sequence[str]) -> str:
    """What an error about operators of a domain other than the default one says."""
    names = ", ".join(sorted(set(op_types)))
    if domain in registry.domains() and domain != ORT_DEFAULT_DOMAIN:
        return (f"operator(s) {names} of domain {domain!r} are not supported; plugnn imports "
                f"{len(supported_operators(domain))} operators of {domain} ({', '.join(supported_operators(domain))}; "
                f"docs/onnx.md)")
    others = sorted(d for d in registry.domains() if d not in ("", ORT_DEFAULT_DOMAIN, MICROSOFT_DOMAIN))
    return (f"operator domain {domain!r} is not supported (operator(s) {names}): plugnn imports the default ai.onnx "
            f"domain, onnxruntime's {MICROSOFT_DOMAIN} operators listed in docs/onnx.md, "
            + "".join(f"{d}, " for d in others)
            + f"{functions.PREVIEW_DOMAIN}'s operators with an ONNX function body, and the model's own local functions")


def unsupported_hint(op_types: Sequence[str]) -> str:
    """What an error about operators plugnn does not import adds: how many it does import, where
    they are listed, and the nearest names (a misspelling, a neighbour of the same family)."""
    supported = supported_operators()
    near = sorted({m for op_type in op_types for m in difflib.get_close_matches(op_type, supported, n=3, cutoff=0.6)})
    text = f"plugnn imports {len(supported)} operators of the default domain (plugnn.onnx.OPERATORS, docs/onnx.md)"
    return text + (f"; nearest: {', '.join(near)}" if near else "")


# ---- reading --------------------------------------------------------------------------------


def read_model(model: Any, base_dir: str | os.PathLike[str] | None = None, *,
               integer_qdq: bool = True, held: dict[str, np.ndarray] | None = None) -> tuple[Any, str]:
    """(ModelProto with external data loaded, tidied (tidy.py) and, unless `integer_qdq` is
    False, with its QDQ groups as integer operators (qdq.py); a description of the source for
    messages).

    With `held` (an empty dict) a model given as a path or bytes has its large main-graph
    weights read once, straight into arrays (plugnn.onnx.wire), which go into `held` by
    initializer name; those initializers stay in the proto with their name, type and dims but
    no data, so read them with `read_initializers(proto, source, held)` (or pass the arrays
    to `import_model(initializers=...)`), never with numpy_helper."""
    onnx = onnx_module()
    from google.protobuf.message import DecodeError

    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        source = str(path)
        if not path.exists():
            raise ModelError(f"{source}: no such file")
        if path.is_dir():
            raise ModelError(f"{source}: is a directory, not an ONNX model file")
        proto = _parse_file_holding(path, held) if held is not None else None
        if proto is None:
            try:
                proto = onnx.load(str(path), load_external_data=False)
            except (DecodeError, RuntimeError, ValueError, OSError) as exc:
                raise ModelError(f"{source}: not an ONNX model ({type(exc).__name__}: {exc})") from None
        if base_dir is None:
            base_dir = path.parent
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source = "<bytes>"
        proto = _parse_holding(model, None, held) if held is not None else None
        if proto is None:
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
    validation.check_model(proto, source)
    loaded = _load_external_data(proto, base_dir, source, copy=proto is model, held=held)
    _refuse_high_ranks(loaded, source)
    tidied = tidy.tidy(loaded, source, owned=loaded is not model)
    if integer_qdq:
        tidied = qdq.integer_operators(tidied, source, owned=tidied is not model, held=held)
    return tidied, source


def _parse_file_holding(path: Path, held: dict[str, np.ndarray]) -> Any | None:
    """The model file parsed with its large weights read into `held` (plugnn.onnx.wire), or
    None when the file is empty or the wire walk cannot follow it (then onnx.load reads it)."""
    import mmap

    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                view = memoryview(mapped)
                try:
                    return _parse_holding(view, f.fileno(), held)
                finally:
                    view.release()
    except (OSError, ValueError):
        return None  # onnx.load reports it in its words


def _parse_holding(data: Any, fd: int | None, held: dict[str, np.ndarray]) -> Any | None:
    """`data` (a serialized model) parsed without the raw_data of its large main-graph
    initializers, which are read (from the file `fd` when given, else from `data`) into `held`;
    None when nothing is held or the walk cannot follow `data`, or protobuf refuses the
    stripped bytes (the caller then parses `data` whole and reports)."""
    from google.protobuf.message import DecodeError

    split = wire.split_weights(data)
    if split is None:
        return None
    stripped, weights = split
    proto = onnx_module().ModelProto()
    try:
        proto.ParseFromString(stripped)
    except DecodeError:
        return None
    initializers = proto.graph.initializer
    for weight, array in zip(weights, wire.read_held(fd if fd is not None else data, weights)):
        held[initializers[weight.index].name] = array
    return proto


def _refuse_high_ranks(proto: Any, source: str) -> None:
    """A ModelError for a graph input or initializer of rank above plugnn's maximum (the C ABI's
    PN_MAX_DIMS; why it stays 8 is written beside it in backend_api.h)."""
    graph = proto.graph
    ranked = [("initializer", t.name, len(t.dims)) for t in graph.initializer]
    ranked += [("input", v.name, len(v.type.tensor_type.shape.dim)) for v in graph.input
               if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")]
    for what, name, rank in ranked:
        if rank > MAX_DIMS:
            raise ModelError(f"{source}: {what} {name!r} has rank {rank}; plugnn tensors have at most {MAX_DIMS} dims "
                             f"(PN_MAX_DIMS, fixed for the 1.x backend ABI: native/include/plugnn/backend_api.h)")


def _all_tensors(proto: Any) -> list[Any]:
    onnx = onnx_module()
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


def _load_external_data(proto: Any, base_dir: Any, source: str, copy: bool,
                        held: dict[str, np.ndarray] | None = None) -> Any:
    onnx = onnx_module()
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
        location = Path(validation.external_location(str(base), str(info.location), tensor.name, source))
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
    if held is not None:
        _hold_external(proto, base, source, held)
    try:
        onnx.external_data_helper.load_external_data_for_model(proto, str(base))
    except Exception as exc:  # noqa: BLE001 - onnx raises several types here
        raise ModelError(f"{source}: loading external tensor data from {str(base)!r} failed: {exc}") from None
    return proto


def _hold_external(proto: Any, base: Path, source: str, held: dict[str, np.ndarray]) -> None:
    """Main-graph initializers whose data is in external files, of a plain numeric type, read
    straight into arrays (`held`, as read_model's): their tensors keep name, type and dims and
    lose the external reference (checked by _load_external_data before)."""
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    files: dict[Path, int] = {}
    try:
        for tensor in proto.graph.initializer:
            if not uses_external_data(tensor) or tensor.data_type not in wire.RAW_TYPES:
                continue
            info = ExternalDataInfo(tensor)
            location = Path(validation.external_location(str(base), str(info.location), tensor.name, source))
            dtype = np.dtype(wire.RAW_TYPES[tensor.data_type])
            dims = tuple(int(d) for d in tensor.dims)
            length = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
            if info.length and int(info.length) != length:
                continue  # onnx's loader and numpy_helper report the mismatch
            if location not in files:
                files[location] = os.open(location, os.O_RDONLY)
            weight = wire.HeldWeight(0, wire.RAW_TYPES[tensor.data_type], dims, int(info.offset or 0), length)
            try:
                (array,) = wire.read_held(files[location], [weight])
            except OSError as exc:
                raise ModelError(f"{source}: tensor {tensor.name!r}: reading {length} bytes at offset {weight.offset} "
                                 f"of external file {str(location)!r} failed: {exc}") from None
            held[tensor.name] = array
            del tensor.external_data[:]
            tensor.ClearField("data_location")
    finally:
        for fd in files.values():
            os.close(fd)


# ---- the walk --------------------------------------------------------------------------------


def load(model: Any, *, name: str | None = None, input_shapes: Mapping[str, Sequence[int]] | None = None,
         base_dir: Any = None, hints: Mapping[str, int] | None = None, integer_qdq: bool = True) -> Network:
    """The model as a Network. Dims the model leaves dynamic and `input_shapes` does not fix stay
    symbols (plugnn.symbolic): the network runs at every binding of them that keeps the guards its
    import recorded. A symbol's hint (its value when backends are asked, at optimize) is
    `hints[name]` (name: the dim's dim_param, or `<input>:<axis>` for an unnamed dim), else 1.
    A QDQ model's `DequantizeLinear -> op -> QuantizeLinear` groups import as integer operators
    (plugnn.onnx.qdq) unless `integer_qdq` is False (the graph as written, in float32)."""
    held: dict[str, np.ndarray] = {}
    proto, source = read_model(model, base_dir, integer_qdq=integer_qdq, held=held)
    initializers = read_initializers(proto, source, held) if held else None
    if name is None and isinstance(model, (str, os.PathLike)):
        name = proto.graph.name or Path(model).stem
    hint_shapes = _symbolic_hints(proto, input_shapes or {}, hints or {}, source)
    if hint_shapes is None:
        return import_model(proto, source=source, name=name, input_shapes=input_shapes, initializers=initializers)
    env = ShapeEnv()
    try:
        return import_model(proto, source=source, name=name, input_shapes=hint_shapes, shape_env=env,
                            fixed_inputs=set(input_shapes or {}), initializers=initializers)
    except DynamicModelError:
        raise
    except ModelError as exc:
        at = ", ".join(f"{k}={v}" for k, v in env.hints.items())
        raise ModelError(f"{exc} (imported with its symbolic dims at the hints {at}: pass hints={{...}} to "
                         f"plugnn.onnx.load for typical sizes, or input_shapes= to fix them)") from None


def _symbolic_hints(proto: Any, input_shapes: Mapping[str, Sequence[int]], hints: Mapping[str, int],
                    source: str) -> dict[str, tuple[int, ...]] | None:
    """Every input's shape at the hints when some input keeps a dynamic dim (`input_shapes`
    fixes the inputs it names), else None (a static import)."""
    initializers = {t.name for t in proto.graph.initializer}
    if set(input_shapes) - {v.name for v in proto.graph.input}:
        return None  # the static import names what does not exist
    shapes: dict[str, tuple[int, ...]] = {}
    dynamic = False
    used: set[str] = set()
    for value_info in proto.graph.input:
        name = value_info.name
        if name in initializers or not value_info.type.HasField("tensor_type"):
            continue
        if name in input_shapes:
            shapes[name] = tuple(int(d) for d in input_shapes[name])
            continue
        tensor_type = value_info.type.tensor_type
        if not tensor_type.HasField("shape"):
            return None  # no declared shape: the static import says what to pass
        shape = []
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                shape.append(int(dim.dim_value))
                continue
            dynamic = True
            symbol = dim.dim_param or f"{name}:{axis}"
            used.add(symbol)
            shape.append(int(hints.get(symbol, 1)))
        shapes[name] = tuple(shape)
    unknown = sorted(set(hints) - used)
    if unknown:
        raise ModelError(f"{source}: hints name {', '.join(map(repr, unknown))}, which are no dynamic dims of the "
                         f"model's inputs; its symbols: {', '.join(sorted(used)) or 'none'}")
    bad = sorted(k for k, v in hints.items() if isinstance(v, bool) or not isinstance(v, int) or v < 1)
    if bad:
        raise ModelError(f"{source}: hints must be integers >= 1, got {', '.join(f'{k}={hints[k]!r}' for k in bad)}")
    return shapes if dynamic else None


def opset_of(proto: Any, source: str) -> int:
    onnx = onnx_module()
    versions = {o.domain: o.version for o in proto.opset_import}
    if "" not in versions and "ai.onnx" not in versions:
        if proto.opset_import and all(n.domain not in ("", "ai.onnx") for n in proto.graph.node):
            return onnx.defs.onnx_opset_version()  # no default-domain node (an XGBoost model's one ai.onnx.ml node)
        if proto.ir_version >= 3 or proto.opset_import:
            raise ModelError(f"{source}: the model imports no default-domain (ai.onnx) opset")
        return 1
    opset = versions.get("", versions.get("ai.onnx", 0))
    newest = onnx.defs.onnx_opset_version()
    if opset < MIN_OPSET:
        raise ModelError(f"{source}: the default-domain opset is {opset}; ONNX's opsets start at {MIN_OPSET}")
    if opset > newest:
        raise ModelError(f"{source}: opset {opset} is newer than the installed onnx {onnx.__version__} knows "
                         f"({newest}); upgrade onnx")
    return opset


def import_model(proto: Any, *, source: str = "<model>", name: str | None = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 constants: Mapping[str, np.ndarray] | None = None,
                 initializers: Mapping[str, np.ndarray] | None = None,
                 shape_env: ShapeEnv | None = None, fixed_inputs: Any = ()) -> Network:
    """Convert a read ModelProto. `constants` binds graph inputs to fixed values (the ONNX
    backend uses it for shape-like inputs); they are then not network inputs.

    With `shape_env` the import is symbolic: every dim the model leaves dynamic is a symbol of
    `shape_env` (plugnn.symbolic) whose hint is its dim in `input_shapes` (which must give every
    input's shape), and the network holds for every binding of the symbols that keeps the
    guards the import recorded in `shape_env`; the inputs named in `fixed_inputs` keep their
    `input_shapes` as fixed dims.

    `initializers` (see `read_initializers`) replaces the initializers of `proto`, which are then
    not read: the network's constants reference these arrays instead of copies, so networks
    imported from one model at several input shapes share its weights."""
    opset = opset_of(proto, source)
    importer = _Importer(proto, source, opset, name, input_shapes or {}, constants or {}, shape_env)
    importer.fixed_inputs = set(fixed_inputs)
    importer.shared_initializers = dict(initializers) if initializers is not None else None
    return importer.run()


def read_initializers(proto: Any, source: str = "<model>",
                      held: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Every initializer of `proto`'s main graph as a read-only, C-contiguous array (read once;
    pass them to `import_model(initializers=...)`); those in `held` (read_model's) as they are."""
    from onnx import numpy_helper

    arrays: dict[str, np.ndarray] = {}
    held = held or {}
    for tensor in proto.graph.initializer:
        if tensor.name in held:
            arrays[tensor.name] = held[tensor.name]
            continue
        try:
            # np.asarray(order="C"), not np.ascontiguousarray: that one makes a rank-0 tensor 1-D
            array = np.asarray(numpy_helper.to_array(tensor), order="C")
        except Exception as exc:  # noqa: BLE001 - malformed tensor data
            raise ModelError(f"{source}: initializer {tensor.name!r} cannot be read: {exc}") from None
        array.setflags(write=False)
        arrays[tensor.name] = array
    for sparse in proto.graph.sparse_initializer:
        raise ModelError(f"{source}: sparse initializer {sparse.values.name!r} is not supported")
    return arrays


class _Importer(ImportState):
    """The walk: initializers, graph inputs, every node in order, graph outputs."""

    # -- inputs and initializers --------------------------------------------------------

    shared_initializers: dict[str, np.ndarray] | None = None
    fixed_inputs: set[str] = set()  # a symbolic import's inputs whose input_shapes fix their dims

    def _initializers(self) -> None:
        from onnx import numpy_helper

        if self.shared_initializers is not None:
            self.values.update(self.shared_initializers)
            self.shared_ids = {id(array) for array in self.shared_initializers.values()}
            return
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
                raise DynamicModelError(f"{self.source}: input {name!r} is not a tensor ({ttype.WhichOneof('value')}); "
                                        f"sequences and optionals need plugnn's dynamic path (plugnn.InferenceSession "
                                        f"or plugnn.onnx.backend; plugnn.onnx.load builds a Network of tensors)")
            if ttype.tensor_type.elem_type == onnx_module().TensorProto.STRING:
                raise DynamicModelError(f"{self.source}: input {name!r} is a string tensor; string tensors are "
                                        f"run-time values of plugnn's dynamic path (plugnn.InferenceSession or "
                                        f"plugnn.onnx.backend; plugnn.onnx.load builds a Network of numeric tensors)")
            shape = self._input_shape(value_info)
            dtype = np_dtype(ttype.tensor_type.elem_type)
            try:
                plugnn_type = DataType.from_any(dtype)
            except ValueError:  # strings, complex numbers, ...: usable only if bound as a constant
                self.values[name] = PendingInput(name, dtype, shape)
                continue
            self.values[name] = self.network.add_input(name, shape, plugnn_type)
            self.used_names.add(name)
            self.graph_inputs.add(name)

    def _input_shape(self, value_info: Any) -> tuple[int, ...]:
        name = value_info.name
        tensor_type = value_info.type.tensor_type
        given = self.input_shapes.get(name)
        if not tensor_type.HasField("shape") and self.shape_env is not None and given is not None \
                and name not in self.fixed_inputs:
            return tuple(self.shape_env.symbol(f"{name}:{i}", d) for i, d in enumerate(given))
        if not tensor_type.HasField("shape"):
            if given is None:
                raise DynamicShapeError(f"{self.source}: input {name!r} has no shape in the model; pass "
                                        f"input_shapes={{{name!r}: (...)}} to plugnn.onnx.load", name)
            return given
        dims = list(tensor_type.shape.dim)
        if given is not None and (self.shape_env is None or name in self.fixed_inputs):
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
        if self.shape_env is not None:
            return self._symbolic_shape(name, dims, given)
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

    def _symbolic_shape(self, name: str, dims: list[Any], given: Sequence[int] | None) -> tuple[Any, ...]:
        """A symbolic import's input shape: fixed dims as ints, the others symbols (named by the
        model's dim_param, shared by every input naming it, else `<input>:<axis>`) whose hints are
        `given`'s dims (the shapes of the run the network is built at)."""
        if given is None or len(given) != len(dims):
            rank = "no shape" if given is None else f"rank {len(given)} {list(given)}"
            raise DynamicShapeError(f"{self.source}: input {name!r}: the symbolic import needs its shape at the "
                                    f"run it is built for; it got {rank}, the model declares rank {len(dims)}", name)
        shape: list[Any] = []
        for i, (dim, g) in enumerate(zip(dims, given)):
            g = int(g)
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                if dim.dim_value != g:
                    raise ModelError(f"{self.source}: input {name!r} dim {i} is {g}, the model fixes it to "
                                     f"{dim.dim_value}")
                shape.append(int(dim.dim_value))
            elif g < 1:
                shape.append(g)  # 0 (or a bad -1) is no symbol: the network is specialized on it
            else:
                symbol = dim.dim_param if dim.dim_param else f"{name}:{i}"
                if symbol in self.shape_env.hints and self.shape_env.hints[symbol] != g:
                    symbol = f"{name}:{i}"  # the feed disagrees with the shared name: its own symbol
                shape.append(self.shape_env.symbol(symbol, g))
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
        self._convert(NodeContext(self, index, node))

    def _convert(self, ctx: NodeContext) -> None:
        """Convert one node; then check it against its schema (validation.check_node: extra
        inputs a converter ignored, attributes of the wrong type), which also explains a
        converter's failure on what it could not foresee (a missing input, an attribute of
        another type)."""
        # The model's own nodes, not those plugnn made (an old opset's form, a function body).
        own = ctx.note is None and ctx.depth == 0
        label = f"{self.source}: {ctx.label}"
        try:
            self._convert_node(ctx)
        except PlugnnError:
            raise
        except MemoryError as exc:
            raise ctx.error(f"computing it at import needs more memory than there is ({exc})") from None
        except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
            if own:
                validation.check_node(ctx.node, ctx.opset, label)
            raise ctx.error(f"cannot be imported: {type(exc).__name__}: {exc}") from exc
        if own:
            validation.check_node(ctx.node, ctx.opset, label)

    def _convert_node(self, ctx: NodeContext) -> None:
        node = ctx.node
        default_domain = node.domain in ("", "ai.onnx")
        converter = converter_for(node.domain, node.op_type)
        if not default_domain and converter is None:
            preview = functions.body(ctx, node.domain) if node.domain == functions.PREVIEW_DOMAIN else None
            if preview is None:
                raise ctx.error(foreign_operator_message(node.domain, [node.op_type]))
            expansion.walk(ctx, preview, self._convert)
            return
        inputs = [self.values.get(n) if n else None for n in node.input]
        for i, (n, v) in enumerate(zip(node.input, inputs)):
            if n and v is None:
                raise ctx.error(f"input {i} {n!r} is produced by no earlier node, initializer or graph input")
            if isinstance(v, Tensor) and v.data_dependent:
                raise DynamicModelError(
                    f"{self.source}: {ctx.label}: input {i} {n!r} is the output of data-dependent layer "
                    f"{v.producer!r}, whose shape is known only at run time; a node reading it needs plugnn's dynamic "
                    f"path (plugnn.InferenceSession or plugnn.onnx.backend run the network in segments)")
        if default_domain and ctx.opset < legacy.NATIVE_OPSET:  # opsets 1 to 6: the node in its opset-7 form
            expansion.walk(ctx, legacy.upgrade(ctx), self._convert)
            return
        if converter is None:
            body = functions.body(ctx)
            if body is not None:
                expansion.walk(ctx, body, self._convert)
                return
            converter = converter_for(ORT_DEFAULT_DOMAIN, node.op_type)  # onnxruntime's additions
            if converter is None:
                raise ctx.error(f"operator {node.op_type!r} is not supported; {unsupported_hint([node.op_type])}")
        ctx.check_attributes(converter)
        outputs: Sequence[Value] | None = None
        symbolic = bool(self.sym) and any(n in self.sym for n in node.input if n)
        try:
            if converter.fold is not None and all(v is None or isinstance(v, np.ndarray) for v in inputs):
                outputs = symbolic_folds.fold(ctx, converter, inputs) if symbolic else converter.fold(ctx)
            if outputs is None:
                outputs = converter.convert(ctx)
                if symbolic and node.op_type not in symbolic_folds.SHAPE_ONLY:
                    # what the converter did not read as expressions holds at the hints only
                    ctx.pin_symbolic_inputs(f"{node.op_type} read it at its hints", skip=ctx.symbolic_reads)
        except NetworkError as exc:
            raise ctx.error(str(exc)) from None
        if isinstance(outputs, expansion.Expansion):  # a converter that imports the node as others
            expansion.walk(ctx, outputs, self._convert)
            return
        for i, out_name in enumerate(node.output):
            if not out_name:
                continue
            self.producers.setdefault(out_name, tuple(node.input))  # an inlined If's: its branch's nodes
            if i >= len(outputs) or outputs[i] is None:
                if self.consumers.get(out_name):
                    raise ctx.error(f"output {i} ({out_name!r}) is used, and plugnn does not compute it "
                                    f"({converter.outputs_note or 'only the first output is supported'})")
                continue
            value = outputs[i]
            if isinstance(value, Tensor):  # a layer's output: refused at import when it cannot fit
                ctx.check_result_size(value.shape, value.dtype.numpy_dtype, f"output {i} ({out_name!r})")
            self.values[out_name] = np.asarray(value) if isinstance(value, (np.generic, int, float)) else value

    def _outputs(self) -> None:
        from onnx import TensorProto

        added: set[str] = set()
        for value_info in self.graph.output:
            name = value_info.name
            if name in added:  # declared twice (onnxruntime accepts it): one output layer
                continue
            added.add(name)
            if name not in self.values:
                raise ModelError(f"{self.source}: graph output {name!r} is produced by no node, initializer or input")
            if name in self.graph_inputs:
                value: Any = self.network.add_identity(self.values[name], name=self.free_name(f"{name}/identity"))
            else:
                value = self.values[name]
            if isinstance(value, PendingInput):
                raise ModelError(f"{self.source}: graph output {name!r} is the graph input of type "
                                 f"{value.dtype}, which plugnn tensors cannot hold")
            declared = value_info.type.tensor_type if value_info.type.HasField("tensor_type") else None
            dtype = value.dtype.numpy_name if isinstance(value, Tensor) else value.dtype.name
            shape = tuple(value.shape)
            if declared is not None and declared.elem_type not in (0,):
                want = np_dtype(declared.elem_type)
                if want != np.dtype(dtype) and declared.elem_type != TensorProto.UNDEFINED:
                    raise ModelError(f"{self.source}: graph output {name!r} is declared {type_name(declared.elem_type)}, "
                                     f"plugnn computes {dtype}")
            if declared is not None and declared.HasField("shape") and not (isinstance(value, Tensor)
                                                                          and value.data_dependent):
                dims = declared.shape.dim
                bad = len(dims) != len(shape) or any(
                    d.HasField("dim_value") and d.dim_value != s for d, s in zip(dims, shape))
                if bad:  # onnxruntime warns and keeps the computed shape; so does plugnn
                    text = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
                    logging.getLogger("plugnn").warning(
                        "%s: graph output %r is declared with shape %s, plugnn computes %s; the computed shape is "
                        "kept", self.source, name, text, list(shape))
            if isinstance(value, np.ndarray):
                if value.dtype == np.dtype(object):
                    raise DynamicModelError(f"{self.source}: graph output {name!r} is a string tensor, a run-time "
                                            f"value of plugnn's dynamic path (plugnn.InferenceSession, "
                                            f"plugnn.onnx.backend)")
                try:
                    DataType.from_any(value.dtype)
                except ValueError:
                    raise ModelError(f"{self.source}: graph output {name!r} is a constant of type {value.dtype}, "
                                     f"which plugnn tensors cannot hold") from None
                if name in self.sym:  # computed from symbolic dims: computed at each binding
                    value = self.network.add_shape_value(self.sym[name], value.dtype,
                                                         name=self.free_name(f"{name}/shape_value"))
                else:
                    value = self.network.add_constant(value, name=self.free_name(f"{name}/constant"),
                                                      dtype=value.dtype)
            self.network.add_output(value, name)
