"""What converting one ONNX node needs: the import's state (values by name, layer names,
the network being built) and `NodeContext`, the view of one node a converter receives, with
helpers that name the node in every error."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugnn.errors import ModelError
from plugnn.network import Network, Tensor
from plugnn.onnx import validation
from plugnn.onnx.registry import Converter
from plugnn.symbolic import Dim, ShapeEnv, pin
from plugnn.tensor import DataType


_HAND_OVER_BYTES = 1 << 20  # arrays this large the import hands to the network without a copy


class DynamicModelError(ModelError):
    """The model needs plugnn's dynamic path (plugnn.dynamic: control flow, sequences, values the
    import needs that are computed at run time, data-dependent shapes feeding further nodes);
    `plugnn.onnx.load` builds one static Network and cannot import it. `plugnn.InferenceSession`
    and `plugnn.onnx.backend` run such models."""


class RunTimeValueError(DynamicModelError):
    """A value the importer needs at import time (a shape, axes, pads, ...) is computed at run
    time: `value_name` is that value (the dynamic path ends a segment before the node, or binds
    the value when it is a segment input)."""

    def __init__(self, message: str, value_name: str) -> None:
        super().__init__(message)
        self.value_name = value_name


class NeedsConstantError(RunTimeValueError):
    """A value the importer needs at import time is a graph input, or computed from graph inputs
    and constants only (`input_name`, the first such graph input: the ONNX backend binds it);
    `value_name` is the value the node needs."""

    def __init__(self, message: str, input_name: str, value_name: str | None = None) -> None:
        super().__init__(message, input_name if value_name is None else value_name)
        self.input_name = input_name


class DynamicShapeError(ModelError):
    """A graph input has dynamic dims and input_shapes does not fix them."""

    def __init__(self, message: str, input_name: str) -> None:
        super().__init__(message)
        self.input_name = input_name


def onnx_module() -> Any:
    """The onnx package, or a ModelError saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise ModelError("importing ONNX models needs the onnx package: pip install onnx "
                         "(or pip install 'plugnn[onnx]')") from None
    return onnx


class PendingInput:
    """A graph input that is not float32: usable only as a constant (which it is not)."""

    def __init__(self, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape


Value = Any  # np.ndarray | Tensor | PendingInput


def np_dtype(elem_type: int) -> np.dtype:
    onnx = onnx_module()
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return np.dtype(object)


def type_name(elem_type: int) -> str:
    onnx = onnx_module()
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"element type {elem_type}"


class ImportState:
    """One import's state: the graph, every value by name (NumPy array known at import, Tensor
    computed at run time, or PendingInput), the layer names taken, and the Network built."""

    def __init__(self, proto: Any, source: str, opset: int, name: str | None,
                 input_shapes: Mapping[str, Sequence[int]], constants: Mapping[str, np.ndarray],
                 shape_env: ShapeEnv | None = None, tables: GraphTables | None = None) -> None:
        self.proto = proto
        self.graph = proto.graph
        self.source = source
        self.opset = opset
        self.network = Network(name or proto.graph.name or "onnx_model")
        self.input_shapes = {k: tuple(int(d) for d in v) for k, v in input_shapes.items()}
        self.bound = dict(constants)
        self.values: dict[str, Value] = {}
        # With a ShapeEnv the import is symbolic: the inputs' dynamic dims are symbols whose hints
        # are `input_shapes`' dims, and `sym` holds, for an integer value known at import that is
        # computed from symbolic dims (Shape -> Gather -> Concat ...), its elements as ints and
        # Dims (an object array of the value's shape); the value itself holds the hints.
        self.shape_env = shape_env
        self.sym: dict[str, np.ndarray] = {}
        self.const_tensors: dict[str, Tensor] = {}  # value name -> constant layer made for it
        self.shared_ids: set[int] = set()  # ids of the shared initializer arrays (referenced, not copied)
        self.graph_inputs: set[str] = set()
        self.used_names: set[str] = set()
        # the graph's name tables, copied (the import adds to them): `tables` when the caller
        # imports the same graph many times (plugnn.dynamic's segments), else made here
        tables = tables if tables is not None else GraphTables.of(self.graph)
        self.reserved = set(tables.reserved)
        self.node_name_counts = dict(tables.node_name_counts)
        self.consumers: dict[str, int] = dict(tables.consumers)
        # every value name of the graph: the names an expanded node's internal values must avoid
        self.value_names = set(tables.value_names)
        # value name -> the input names of the node that computed it (graph and expanded nodes)
        self.producers: dict[str, tuple[str, ...]] = {}

    def graph_inputs_behind(self, name: str) -> list[str]:
        """The graph inputs a run-time value is computed from, when it is computed from graph inputs
        and values known at import only (then binding those inputs makes it known); else []."""
        found: set[str] = set()
        seen: set[str] = set()
        pending = [name]
        while pending:
            current = pending.pop()
            if not current or current in seen:
                continue
            seen.add(current)
            value = self.values.get(current)
            if isinstance(value, np.ndarray):
                continue
            if current in self.graph_inputs or isinstance(value, PendingInput):
                found.add(current)
            elif current in self.producers:
                pending.extend(self.producers[current])
            else:
                return []
        return sorted(found)

    def free_name(self, base: str) -> str:
        """`base`, or `base_1`, `base_2`, ...: a layer name no other layer or graph value has."""
        candidate, k = base, 1
        while candidate in self.used_names or candidate in self.reserved:
            candidate = f"{base}_{k}"
            k += 1
        self.used_names.add(candidate)
        return candidate


@dataclass(frozen=True)
class GraphTables:
    """What an import of a graph looks up about all of it: the graph's input and output names
    (`reserved`), how many nodes carry each node name, how many readers each value has (graph
    outputs count), and every value name of the graph and its subgraphs."""

    reserved: frozenset[str]
    node_name_counts: Mapping[str, int]
    consumers: Mapping[str, int]
    value_names: frozenset[str]

    @staticmethod
    def of(graph: Any) -> GraphTables:
        counts: dict[str, int] = {}
        consumers: dict[str, int] = {}
        for node in graph.node:
            counts[node.name] = counts.get(node.name, 0) + 1
            for i in node.input:
                consumers[i] = consumers.get(i, 0) + 1
        for out in graph.output:
            consumers[out.name] = consumers.get(out.name, 0) + 1
        return GraphTables(frozenset({i.name for i in graph.input} | {o.name for o in graph.output}), counts,
                           consumers, frozenset(_value_names(graph)))


def _value_names(graph: Any) -> set[str]:
    names = {v.name for v in graph.input} | {v.name for v in graph.output} | {t.name for t in graph.initializer}
    for node in graph.node:
        names.update(node.input)
        names.update(node.output)
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                names |= _value_names(sub)
    return names


class NodeContext:
    """What a converter sees: the node, its inputs, attributes and helpers that name it in errors.

    A node of an expansion (expansion.py: a function body, an old opset's form) has no index in
    the graph (`index` None); `within` is the label of the node it stands in for, `opset` the
    opset its operator is read at, `note` a remark the label carries, `depth` how deep it is."""

    def __init__(self, importer: ImportState, index: int | None, node: Any, *, opset: int | None = None,
                 within: str | None = None, note: str | None = None, depth: int = 0) -> None:
        self.importer = importer
        self.index = index
        self.node = node
        self.op_type = node.op_type
        self.opset = importer.opset if opset is None else opset
        self.network = importer.network
        self.within = within
        self.note = note
        self.depth = depth
        self._attrs = {a.name: a for a in node.attribute}
        self._main_name: str | None = None
        self.symbolic_reads: set[int] = set()  # inputs read keeping their Dims (shape_values, tensor)

    # -- errors --------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return self.noted_label(self.note)

    def noted_label(self, note: str | None) -> str:
        """The label, with `note` added in its parentheses."""
        node = self.node
        extra = f", {note}" if note else ""
        if self.index is None:
            own = f"node {node.name!r} ({node.op_type}{extra})"
        elif node.name:
            own = f"node {node.name!r} (#{self.index}, {node.op_type}{extra})"
        else:
            first = node.output[0] if node.output else "?"
            own = f"node #{self.index} ({node.op_type}, unnamed, output {first!r}{extra})"
        return f"{self.within}: {own}" if self.within else own

    def error(self, message: str) -> ModelError:
        return ModelError(f"{self.importer.source}: {self.label}: {message}")

    def check_result_size(self, shape: Sequence[int], dtype: Any, what: str = "output 0") -> None:
        """A ModelError naming the node and the size when a result of `shape` and `dtype` would
        exceed the limit (validation.max_tensor_bytes): checked before it is computed."""
        validation.check_size(shape, np.dtype(dtype).itemsize, f"{self.importer.source}: {self.label}: {what}")

    def unsupported_value(self, attribute: str, value: Any, supported: str) -> ModelError:
        return self.error(f"attribute {attribute!r} = {value!r} is not supported; supported: {supported}")

    # -- attributes ----------------------------------------------------------------------

    def check_attributes(self, converter: Converter) -> None:
        """No attribute given twice or without a value (validation.check_attribute_names),
        and each one supported by the converter."""
        validation.check_attribute_names(self.node, f"{self.importer.source}: {self.label}")
        for attr_name, attr in self._attrs.items():
            if attr.ref_attr_name:
                raise self.error(f"attribute {attr_name!r} refers to a function attribute; not supported")
            if attr_name not in converter.attributes and self.opset < converter.unchecked_attributes_below:
                logging.getLogger("plugnn").warning(
                    "%s: %s: attribute %r is not one of the operator's (%s); ignored, as onnxruntime does",
                    self.importer.source, self.label, attr_name, ", ".join(converter.attributes) or "none")
                continue
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
            validation.check_size(attr.t.dims, 1, f"{self.importer.source}: {self.label}: attribute {name!r}")
            try:
                return numpy_helper.to_array(attr.t)
            except Exception as exc:  # noqa: BLE001 - data disagreeing with its dims or type
                raise self.error(f"attribute {name!r}: tensor cannot be read: {exc}") from None
        try:
            value = helper.get_attribute_value(attr)
        except Exception as exc:  # noqa: BLE001 - an attribute without a value of its type
            raise self.error(f"attribute {name!r} cannot be read: {exc}") from None
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

    def sym(self, i: int) -> np.ndarray | None:
        """In a symbolic import, input i's elements as ints and Dims (an object array) when it is
        a value known at import computed from symbolic dims; else None."""
        if not self.importer.sym or not self.has_input(i):
            return None
        return self.importer.sym.get(self.node.input[i])

    def shape_values(self, i: int, what: str) -> list[Any]:
        """Input i, known at import, as a flat list of ints and (in a symbolic import) Dims: for
        converters that put it into a descriptor or a shape, where a Dim is kept as it is."""
        exprs = self.sym(i)
        self.symbolic_reads.add(i)
        if exprs is not None:
            return [v if isinstance(v, Dim) else int(v) for v in exprs.reshape(-1)]
        return [int(v) for v in np.asarray(self.const(i, what)).reshape(-1)]

    def set_sym(self, j: int, exprs: np.ndarray) -> None:
        """Record output j's elements as expressions (a value computed from symbolic dims)."""
        if j < len(self.node.output) and self.node.output[j]:
            self.importer.sym[self.node.output[j]] = exprs

    def pin_symbolic_inputs(self, why: str, skip: Any = ()) -> None:
        """Record that this node's result holds only at the hints of its symbolic inputs (every
        Dim they hold equals its hint): the network is specialized on their symbols."""
        for i in range(self.num_inputs):
            exprs = self.sym(i)
            if exprs is not None and i not in skip:
                pin(exprs, f"{self.label}: {why}")

    def const(self, i: int, what: str) -> np.ndarray:
        """Input i's value, which must be known at import time (in a symbolic import, a value
        computed from symbolic dims is taken at its hints: the network is specialized on them)."""
        name = self.node.input[i]
        value = self.value(i)
        if isinstance(value, np.ndarray):
            exprs = self.sym(i)
            if exprs is not None and i not in self.symbolic_reads:
                pin(exprs, f"{self.label}: input {i} ({what}) is needed as a constant")
            return value
        if isinstance(value, PendingInput) or name in self.importer.graph_inputs:
            raise NeedsConstantError(
                f"{self.importer.source}: {self.label}: input {i} ({what}) {name!r} must be known at import time, "
                f"but it is a graph input; make it an initializer (a constant)", name)
        raise self.run_time_error(i, f"input {i} ({what}) {name!r} must be known at import time (a constant, or "
                                     f"computed from constants and static shapes), but it is computed at run time")

    def run_time_error(self, i: int, message: str) -> ModelError:
        """The error for input i, computed at run time where a value known at import is needed.
        When it is computed from graph inputs (and constants) only, a NeedsConstantError naming
        them: the ONNX backend binds them, and the value folds."""
        name = self.node.input[i]
        behind = self.importer.graph_inputs_behind(name)
        if not behind:
            return RunTimeValueError(f"{self.importer.source}: {self.label}: {message}; a model computing it "
                                     f"needs plugnn's dynamic path (plugnn.InferenceSession or plugnn.onnx.backend "
                                     f"run the network in segments)", name)
        return NeedsConstantError(
            f"{self.importer.source}: {self.label}: {message}; it is computed from graph input(s) "
            f"{', '.join(map(repr, behind))}: make them initializers (constants), or run the model on plugnn's "
            f"dynamic path (plugnn.InferenceSession, plugnn.onnx.backend), which computes it first", behind[0], name)

    def tensor(self, i: int, what: str = "input") -> Tensor:
        """Input i as a Tensor of the network (a constant layer of its exact type when it is known)."""
        return self.importer_tensor(self.node.input[i], what, i)

    def importer_tensor(self, name: str, what: str, i: int | None = None) -> Tensor:
        importer = self.importer
        value = importer.values[name]
        where = f"input {i} ({what})" if i is not None else what
        if isinstance(value, Tensor):
            return value
        exprs = importer.sym.get(name)
        if exprs is not None:  # computed from symbolic dims: the runtime computes it per binding
            if i is not None:
                self.symbolic_reads.add(i)
            cached = importer.const_tensors.get(name)
            if cached is None:
                cached = self.network.add_shape_value(exprs, value.dtype, name=importer.free_name(name))
                importer.const_tensors[name] = cached
            return cached
        if isinstance(value, PendingInput):
            raise self.error(f"{where}: graph input {name!r} has element type {value.dtype}, which plugnn "
                             f"tensors cannot hold")
        try:
            dtype = DataType.from_any(value.dtype)
        except ValueError:
            raise self.error(f"{where}: tensor {name!r} has element type {value.dtype}, which plugnn tensors "
                             f"cannot hold") from None
        cached = importer.const_tensors.get(name)
        if cached is None and id(value) in importer.shared_ids:
            cached = self.network.add_shared_constant(value, name=importer.free_name(name))
        if cached is None and value.nbytes >= _HAND_OVER_BYTES and value.base is None and value.flags.c_contiguous \
                and value.dtype == dtype.numpy_dtype:
            # A large array the import made (read or folded) and alone holds: the network takes
            # it, made read-only, instead of a copy (a 1 GiB fold peaked at 2 GiB, now 1 GiB).
            value.setflags(write=False)
            cached = self.network.add_shared_constant(value, name=importer.free_name(name))
            importer.const_tensors[name] = cached
        if cached is None:
            cached = self.network.add_constant(value, name=importer.free_name(name), dtype=dtype)
            importer.const_tensors[name] = cached
        return cached

    def array_tensor(self, array: np.ndarray, role: str, dtype: Any = None) -> Tensor:
        """A constant layer for an array the converter computed (e.g. reshaped weights), of
        element type `dtype` (default: the array's)."""
        array = np.asarray(array)
        return self.network.add_constant(array, name=self.importer.free_name(f"{self.name()}/{role}"),
                                         dtype=array.dtype if dtype is None else dtype)

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
