"""plugnn.Network: build a graph of typed layers; shapes are inferred and checked as you add.

Every `add_*` method returns the `Tensor` (or tensors) it produces. Weights, biases and
other parameters may be NumPy arrays (they become constant layers) or tensors of the
network. Errors are NetworkError naming the layer and what does not fit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plugnn import descriptors as d
from plugnn import shapes
from plugnn.errors import NetworkError
from plugnn.symbolic import as_dim
from plugnn.tensor import DataType, TensorInfo


class GraphKind(enum.Enum):
    """Layers that exist only in the graph: the runtime handles them, no backend runs them."""

    INPUT = "Input"
    OUTPUT = "Output"
    CONSTANT = "Constant"
    IDENTITY = "Identity"  # dropout and identity: removed by optimize()
    # A small integer tensor whose elements are expressions of the network's symbols
    # (plugnn.symbolic): the runtime computes it at each binding of the symbols, like an input.
    SHAPE_VALUE = "ShapeValue"


Kind = d.LayerKind | GraphKind


def kind_name(kind: Kind) -> str:
    if isinstance(kind, GraphKind):
        return kind.value
    return "".join(part.capitalize() for part in kind.name.split("_"))


@dataclass(eq=False)
class Tensor:
    """A value in a network: output `index` of layer `producer`."""

    network: Network = field(repr=False)
    producer: str
    index: int
    info: TensorInfo

    @property
    def name(self) -> str:
        return self.producer if self.index == 0 else f"{self.producer}:{self.index}"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.info.shape

    @property
    def dtype(self) -> DataType:
        return self.info.dtype

    @property
    def data_dependent(self) -> bool:
        """True for an output of a data-dependent layer (shapes.DATA_DEPENDENT_KINDS): its shape
        is an upper bound, the actual one is known when the layer has run."""
        producer = self.network._layers.get(self.producer)
        return producer is not None and producer.kind in shapes.DATA_DEPENDENT_KINDS


@dataclass(eq=False)
class Layer:
    name: str
    kind: Kind
    descriptor: d.Descriptor
    inputs: list[Tensor]
    outputs: list[TensorInfo]
    value: Any = None  # a constant's array

    @property
    def type_name(self) -> str:
        return kind_name(self.kind)


TensorLike = Any  # Tensor, or anything np.asarray accepts (becomes a constant)


class Network:
    """A directed acyclic graph of layers, built in topological order."""

    def __init__(self, name: str = "network") -> None:
        self.name = name
        self._layers: dict[str, Layer] = {}
        self._counter = itertools.count()

    # -- structure -------------------------------------------------------------------

    @property
    def layers(self) -> list[Layer]:
        """Every layer, in the order added (a topological order)."""
        return list(self._layers.values())

    def layer(self, name: str) -> Layer:
        try:
            return self._layers[name]
        except KeyError:
            raise NetworkError(f"network {self.name!r} has no layer {name!r}") from None

    @property
    def inputs(self) -> list[Layer]:
        return [layer for layer in self._layers.values() if layer.kind is GraphKind.INPUT]

    @property
    def outputs(self) -> list[Layer]:
        return [layer for layer in self._layers.values() if layer.kind is GraphKind.OUTPUT]

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._layers.values())

    def __len__(self) -> int:
        return len(self._layers)

    def _name(self, name: str | None, kind: Kind) -> str:
        if name is None:
            base = kind_name(kind).lower()
            while True:
                candidate = f"{base}_{next(self._counter)}"
                if candidate not in self._layers:
                    return candidate
        if not isinstance(name, str) or not name:
            raise NetworkError(f"layer name must be a non-empty string, got {name!r}")
        if name in self._layers:
            raise NetworkError(f"layer name {name!r} is already used in network {self.name!r}")
        return name

    def _tensor(self, value: TensorLike, layer_name: str, role: str) -> Tensor:
        if isinstance(value, Tensor):
            if value.network is not self:
                raise NetworkError(f"layer {layer_name!r}: {role} tensor {value.name!r} belongs to another network")
            return value
        try:
            array = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - anything NumPy cannot take
            raise NetworkError(f"layer {layer_name!r}: {role} is neither a Tensor nor array-like ({exc})") from None
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        constant_name = f"{layer_name}/{role}"
        return self.add_constant(array, name=None if constant_name in self._layers else constant_name)

    def _add(self, kind: Kind, descriptor: d.Descriptor, inputs: Sequence[Tensor], name: str | None,
             outputs: list[TensorInfo] | None = None, value: Any = None) -> Layer:
        """Add a layer: its outputs inferred (shapes.INFER), or stated and checked (shapes.CHECK)."""
        layer_name = self._name(name, kind)
        if isinstance(kind, d.LayerKind):
            infos = [t.info for t in inputs]
            try:
                if kind in shapes.CHECK:
                    if outputs is None:
                        raise ValueError("the outputs must be given")
                    shapes.CHECK[kind](descriptor, infos, outputs)
                else:
                    outputs = shapes.INFER[kind](descriptor, infos)
            except ValueError as exc:
                shapes_text = ", ".join(str(t.info) for t in inputs)
                raise NetworkError(f"layer {layer_name!r} ({kind_name(kind)}) with inputs ({shapes_text}): {exc}") \
                    from None
        assert outputs is not None
        if kind is not GraphKind.OUTPUT:
            for tensor in inputs:
                if tensor.data_dependent:
                    raise NetworkError(
                        f"layer {layer_name!r} ({kind_name(kind)}) reads {tensor.name!r}, an output of data-dependent "
                        f"layer {tensor.producer!r} whose shape ({tensor.info} is its upper bound) is known only at "
                        f"run time: in a Network it can only be a graph output (plugnn.dynamic runs further layers "
                        f"in a segment specialized for the actual shape)")
        layer = Layer(layer_name, kind, descriptor, list(inputs), outputs, value)
        self._layers[layer_name] = layer
        return layer

    def _one(self, layer: Layer) -> Tensor:
        return Tensor(self, layer.name, 0, layer.outputs[0])

    def _all(self, layer: Layer) -> tuple[Tensor, ...]:
        return tuple(Tensor(self, layer.name, i, info) for i, info in enumerate(layer.outputs))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A failing add leaves no trace (e.g. the constants made for its weights)."""
        before = set(self._layers)
        try:
            yield
        except BaseException:
            for name in [n for n in self._layers if n not in before]:
                del self._layers[name]
            raise

    def _build(self, kind: d.LayerKind, make: Any, inputs: Sequence[TensorLike], roles: Sequence[str],
               name: str | None) -> Tensor:
        """Create the descriptor (errors name the layer) and the layer."""
        return self._build_layer(kind, make, inputs, roles, name)[0]

    def _build_layer(self, kind: d.LayerKind, make: Any, inputs: Sequence[TensorLike], roles: Sequence[str],
                     name: str | None, outputs: Any = None) -> tuple[Tensor, ...]:
        """Create the descriptor (errors name the layer) and the layer; `outputs` (for the kinds
        whose outputs are stated, shapes.CHECK) is called with the input infos to give them."""
        layer_name = self._name(name, kind)
        try:
            descriptor = make()
        except (TypeError, ValueError) as exc:
            raise NetworkError(f"layer {layer_name!r} ({kind_name(kind)}): {exc}") from None
        with self._transaction():
            tensors = [self._tensor(t, layer_name, role) for t, role in zip(inputs, roles)]
            stated = None
            if outputs is not None:
                try:
                    stated = outputs([t.info for t in tensors])
                except (TypeError, ValueError) as exc:
                    raise NetworkError(f"layer {layer_name!r} ({kind_name(kind)}): {exc}") from None
            return self._all(self._add(kind, descriptor, tensors, layer_name, stated))

    # -- graph layers -------------------------------------------------------------------

    def add_input(self, name: str, shape: Sequence[int], dtype: Any = DataType.FLOAT32, *,
                  quant_scale: float = 0.0, quant_zero_point: int = 0) -> Tensor:
        """A graph input; `name` is the key of `run()`'s input dictionary. An int8 or uint8 input
        with quant_scale != 0 holds quantized values (real = quant_scale * (q - quant_zero_point),
        backend_api.h); a backend refuses the layers it cannot compute with them."""
        try:
            info = TensorInfo(tuple(shape), dtype, float(quant_scale), int(quant_zero_point))
            if (info.quant_scale or info.quant_zero_point) and info.dtype not in (DataType.INT8, DataType.UINT8):
                raise ValueError(f"only int8 and uint8 tensors are quantized, not {info.dtype.numpy_name}")
        except (TypeError, ValueError) as exc:
            raise NetworkError(f"input {name!r}: {exc}") from None
        return self._one(self._add(GraphKind.INPUT, None, [], name, [info]))

    def add_output(self, tensor: Tensor, name: str) -> None:
        """Mark `tensor` as a graph output named `name` (the key in `run()`'s result)."""
        source = self._tensor(tensor, name, "output")
        self._add(GraphKind.OUTPUT, None, [source], name, [source.info])

    def add_constant(self, value: Any, name: str | None = None, dtype: Any = None) -> Tensor:
        """A constant tensor (weights, biases, any fixed array), stored as a contiguous copy of
        element type `dtype` (default: the array's, float64 becoming float32)."""
        array = np.array(value, copy=True, order="C")
        if dtype is not None:
            try:
                array = array.astype(DataType.from_any(dtype).numpy_dtype, copy=False)
            except ValueError as exc:
                raise NetworkError(f"constant {name!r}: {exc}") from None
        elif array.dtype == np.float64:
            array = array.astype(np.float32)
        try:
            info = TensorInfo(array.shape, DataType.from_any(array.dtype))
        except ValueError as exc:
            raise NetworkError(f"constant {name!r}: {exc}") from None
        array.setflags(write=False)
        return self._one(self._add(GraphKind.CONSTANT, None, [], name, [info], value=array))

    def add_shared_constant(self, array: np.ndarray, name: str | None = None) -> Tensor:
        """A constant that references `array` instead of copying it, so several networks (a
        session's specializations for different input shapes) hold one copy of a model's
        weights. `array` must be a read-only, C-contiguous NumPy array of an element type
        plugnn has, and its owner must never change its contents."""
        if not isinstance(array, np.ndarray) or array.flags.writeable or not array.flags.c_contiguous:
            raise NetworkError(f"constant {name!r}: a shared constant must be a read-only C-contiguous "
                               f"numpy.ndarray (add_constant copies anything else)")
        try:
            info = TensorInfo(array.shape, DataType.from_any(array.dtype))
        except ValueError as exc:
            raise NetworkError(f"constant {name!r}: {exc}") from None
        return self._one(self._add(GraphKind.CONSTANT, None, [], name, [info], value=array))

    def add_shape_value(self, values: np.ndarray, dtype: Any = DataType.INT64, name: str | None = None) -> Tensor:
        """A tensor of integers that are expressions of the network's symbols (an object array of
        ints and plugnn.symbolic.Dim), e.g. a sequence length a position index is computed from:
        each run computes it from the inputs' shapes."""
        exprs = np.asarray(values, dtype=object)
        try:
            info = TensorInfo(exprs.shape, DataType.from_any(dtype))
            if not info.dtype.is_integer:
                raise ValueError(f"a shape value is an integer tensor, not {info.dtype.numpy_name}")
        except ValueError as exc:
            raise NetworkError(f"shape value {name!r}: {exc}") from None
        return self._one(self._add(GraphKind.SHAPE_VALUE, None, [], name, [info], value=exprs))

    def add_identity(self, x: Tensor, name: str | None = None) -> Tensor:
        """Identity (also dropout at inference): removed by optimize()."""
        source = self._tensor(x, name or "identity", "input")
        return self._one(self._add(GraphKind.IDENTITY, None, [source], name, [source.info]))

    add_dropout = add_identity

    # -- compute layers -----------------------------------------------------------------

    def add_convolution2d(self, x: Tensor, weights: TensorLike, bias: TensorLike | None = None, *,
                          stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
                          layout: Any = "NCHW", name: str | None = None) -> Tensor:
        """2-D convolution; weights [out, in/groups, kh, kw]; padding int, (h, w) or (top, left, bottom, right)."""
        inputs = [x, weights] + ([bias] if bias is not None else [])
        return self._build(d.LayerKind.CONVOLUTION_2D, lambda: d.Convolution2dDescriptor(
            stride=stride, padding=padding, dilation=dilation, groups=int(groups), layout=layout,
            has_bias=bias is not None), inputs, ("input", "weights", "bias"), name)

    def add_pooling2d(self, x: Tensor, kind: Any, kernel: Any, *, stride: Any = None, padding: Any = 0,
                      dilation: Any = 1, ceil_mode: bool = False, count_include_pad: bool = False,
                      layout: Any = "NCHW", p: float = 2.0, name: str | None = None) -> Tensor:
        """Max, average or Lp pooling; stride defaults to the kernel."""
        return self._build(d.LayerKind.POOLING_2D, lambda: d.Pooling2dDescriptor(
            kind=kind, kernel=kernel, stride=kernel if stride is None else stride, padding=padding,
            dilation=dilation, rounding="ceil" if ceil_mode else "floor",
            padding_method="include" if count_include_pad else "exclude", layout=layout, p=p),
            [x], ("input",), name)

    def add_global_pooling2d(self, x: Tensor, kind: Any = "average", *, layout: Any = "NCHW", p: float = 2.0,
                             name: str | None = None) -> Tensor:
        """Pooling over the whole spatial extent (output H = W = 1)."""
        layout_enum = d._enum(d.DataLayout, layout, "layout")
        if not isinstance(x, Tensor) or x.info.rank != 4:
            raise NetworkError(f"layer {name!r} (GlobalPooling2d): input must be a rank-4 tensor")
        h, w = (x.shape[2], x.shape[3]) if layout_enum is d.DataLayout.NCHW else (x.shape[1], x.shape[2])
        return self.add_pooling2d(x, kind, (h, w), stride=1, layout=layout_enum, p=p, name=name)

    def add_elementwise(self, op: Any, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        """add, sub, mul, div, maximum, minimum, power or prelu with NumPy broadcasting."""
        return self._build(d.LayerKind.ELEMENTWISE_BINARY, lambda: d.ElementwiseBinaryDescriptor(op),
                           [a, b], ("a", "b"), name)

    def add_add(self, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        return self.add_elementwise("add", a, b, name)

    def add_sub(self, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        return self.add_elementwise("sub", a, b, name)

    def add_mul(self, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        return self.add_elementwise("mul", a, b, name)

    def add_div(self, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        return self.add_elementwise("div", a, b, name)

    def add_variadic(self, op: Any, inputs: Sequence[TensorLike], name: str | None = None) -> Tensor:
        """sum, maximum, minimum or mean of any number of inputs, broadcast together."""
        return self._build(d.LayerKind.ELEMENTWISE_VARIADIC, lambda: d.ElementwiseVariadicDescriptor(op),
                           list(inputs), [f"input{i}" for i in range(len(inputs))], name)

    def add_sum(self, inputs: Sequence[TensorLike], name: str | None = None) -> Tensor:
        return self.add_variadic("sum", inputs, name)

    def add_activation(self, x: Tensor, kind: Any, alpha: float = 0.0, beta: float = 0.0,
                       name: str | None = None) -> Tensor:
        """relu, bounded_relu (clip to [alpha, beta]), leaky_relu, sigmoid, tanh, elu, hard_swish,
        hard_sigmoid, abs, sqrt, square, linear (alpha * x + beta)."""
        return self._build(d.LayerKind.ACTIVATION, lambda: d.ActivationDescriptor(kind, float(alpha), float(beta)),
                           [x], ("input",), name)

    def add_fully_connected(self, a: TensorLike, b: TensorLike, c: TensorLike | None = None, *,
                            alpha: float = 1.0, beta: float = 1.0, transpose_a: bool = False,
                            transpose_b: bool = False, name: str | None = None) -> Tensor:
        """ONNX Gemm: alpha * op(a) @ op(b) + beta * c."""
        inputs = [a, b] + ([c] if c is not None else [])
        return self._build(d.LayerKind.FULLY_CONNECTED, lambda: d.FullyConnectedDescriptor(
            bool(transpose_a), bool(transpose_b), float(alpha), float(beta), c is not None),
            inputs, ("a", "b", "c"), name)

    def add_matmul(self, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        """NumPy matmul (batch broadcasting, rank-1 promotion)."""
        return self._build(d.LayerKind.MATMUL, lambda: None, [a, b], ("a", "b"), name)

    def add_softmax(self, x: Tensor, axis: int = -1, name: str | None = None) -> Tensor:
        return self._build(d.LayerKind.SOFTMAX, lambda: d.SoftmaxDescriptor(int(axis)), [x], ("input",), name)

    def add_batch_normalization(self, x: Tensor, scale: TensorLike, bias: TensorLike, mean: TensorLike,
                                var: TensorLike, epsilon: float = 1e-5, *, layout: Any = "NCHW",
                                name: str | None = None) -> Tensor:
        return self._build(d.LayerKind.BATCH_NORMALIZATION,
                           lambda: d.BatchNormalizationDescriptor(float(epsilon), layout),
                           [x, scale, bias, mean, var], ("input", "scale", "bias", "mean", "var"), name)

    def add_lrn(self, x: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0, *,
                layout: Any = "NCHW", name: str | None = None) -> Tensor:
        """Local response normalization across channels (ONNX LRN)."""
        return self._build(d.LayerKind.LOCAL_RESPONSE_NORMALIZATION,
                           lambda: d.LrnDescriptor(int(size), float(alpha), float(beta), float(bias), layout),
                           [x], ("input",), name)

    def add_concat(self, inputs: Sequence[TensorLike], axis: int, name: str | None = None) -> Tensor:
        return self._build(d.LayerKind.CONCAT, lambda: d.ConcatDescriptor(int(axis)), list(inputs),
                           [f"input{i}" for i in range(len(inputs))], name)

    def add_transpose(self, x: Tensor, perm: Sequence[int], name: str | None = None) -> Tensor:
        return self._build(d.LayerKind.TRANSPOSE, lambda: d.TransposeDescriptor(tuple(perm)), [x], ("input",), name)

    def add_reshape(self, x: Tensor, shape: Sequence[int], name: str | None = None) -> Tensor:
        """Reshape; one -1 is inferred."""
        layer_name = self._name(name, d.LayerKind.RESHAPE)
        if not isinstance(x, Tensor):
            raise NetworkError(f"layer {layer_name!r} (Reshape): the input must be a Tensor of this network")
        source = self._tensor(x, layer_name, "input")
        try:
            new_shape = shapes.resolve_reshape(source.shape, shape)
        except ValueError as exc:
            raise NetworkError(f"layer {layer_name!r} (Reshape) of {source.info}: {exc}") from None
        return self._one(self._add(d.LayerKind.RESHAPE, None, [source], layer_name,
                                   [TensorInfo(new_shape, source.dtype)]))

    def add_flatten(self, x: Tensor, axis: int = 1, name: str | None = None) -> Tensor:
        """ONNX Flatten: [d0 * ... * d(axis-1), d(axis) * ... * dn]."""
        rank = x.info.rank
        if not -rank <= axis <= rank:
            raise NetworkError(f"layer {name!r} (Flatten): axis {axis} out of range for rank {rank}")
        if axis < 0:  # ONNX: a negative axis counts from the end (-1 is rank - 1)
            axis += rank
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        return self.add_reshape(x, (outer, -1) if outer else (0, int(np.prod(x.shape[axis:], dtype=np.int64))),
                                name)

    def add_squeeze(self, x: Tensor, axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        rank = x.info.rank
        try:
            picked = {a % rank for a in axes} if axes is not None else {i for i, s in enumerate(x.shape) if s == 1}
            if any(not -rank <= a < rank for a in (axes or ())) or any(x.shape[a] != 1 for a in picked):
                raise ValueError(f"axes {axes} must name dimensions of size 1 in {x.shape}")
        except ValueError as exc:
            raise NetworkError(f"layer {name!r} (Squeeze): {exc}") from None
        return self.add_reshape(x, [s for i, s in enumerate(x.shape) if i not in picked], name)

    def add_unsqueeze(self, x: Tensor, axes: Sequence[int], name: str | None = None) -> Tensor:
        rank = x.info.rank + len(axes)
        normalized = sorted(a % rank for a in axes)
        if len(set(normalized)) != len(normalized) or any(not -rank <= a < rank for a in axes):
            raise NetworkError(f"layer {name!r} (Unsqueeze): bad axes {tuple(axes)} for output rank {rank}")
        shape = list(x.shape)
        for a in normalized:
            shape.insert(a, 1)
        return self.add_reshape(x, shape, name)

    # -- since ABI 1.1 -------------------------------------------------------------------

    def add_layer(self, kind: Any, descriptor: d.Descriptor, inputs: Sequence[TensorLike],
                  outputs: Sequence[TensorInfo] | None = None, name: str | None = None) -> tuple[Tensor, ...]:
        """Any layer kind from its descriptor; `outputs` only for the kinds whose outputs are
        stated (a slice's counts, a cast's type; shapes.CHECK). Returns every output."""
        kind = d._enum(d.LayerKind, kind, "layer kind")
        given = None if outputs is None else [TensorInfo(o.shape, o.dtype) for o in outputs]
        return self._build_layer(kind, lambda: descriptor, list(inputs), [f"input{i}" for i in range(len(inputs))],
                                 name, None if given is None else (lambda infos: given))

    def add_unary(self, op: Any, x: TensorLike, name: str | None = None) -> Tensor:
        """abs, neg, sign, reciprocal, sqrt, rsqrt, exp, log, erf, trigonometric and hyperbolic
        functions and their inverses, floor, ceil, round, is_nan, is_inf, is_pos_inf, is_neg_inf,
        logical_not, bitwise_not."""
        return self._build(d.LayerKind.ELEMENTWISE_UNARY, lambda: d.ElementwiseUnaryDescriptor(op), [x], ("input",),
                           name)

    def add_select(self, condition: TensorLike, a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
        """condition ? a : b, broadcast (ONNX Where)."""
        return self._build(d.LayerKind.SELECT, lambda: None, [condition, a, b], ("condition", "a", "b"), name)

    def add_reduce(self, op: Any, x: Tensor, axes: Sequence[int] | None = None, keep_dims: bool = True,
                   select_last_index: bool = False, name: str | None = None) -> Tensor:
        """sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square, arg_max, arg_min over
        `axes` (negative count from the end; None: all)."""
        rank = x.info.rank if isinstance(x, Tensor) else 0
        picked = sorted({a % rank for a in axes} if axes is not None and rank else set(range(rank)))
        if axes is not None and any(not -rank <= a < rank for a in axes):
            raise NetworkError(f"layer {name!r} (Reduce): axes {tuple(axes)} out of range for rank {rank}")
        return self._build(d.LayerKind.REDUCE, lambda: d.ReduceDescriptor(op, tuple(picked), bool(keep_dims),
                                                                           bool(select_last_index)),
                           [x], ("input",), name)

    def add_normalization(self, op: Any, x: Tensor, scale: TensorLike | None = None, bias: TensorLike | None = None,
                          *, axis: int = -1, num_groups: int = 0, epsilon: float = 1e-5,
                          name: str | None = None) -> Tensor:
        """layer, rms, group (instance: num_groups = C) or lp (num_groups holds p) normalization."""
        inputs = [x] + ([scale] if scale is not None else []) + ([bias] if bias is not None else [])
        return self._build(d.LayerKind.NORMALIZATION, lambda: d.NormalizationDescriptor(
            op, int(axis), int(num_groups), float(epsilon), bias is not None), inputs, ("input", "scale", "bias"), name)

    def add_gather(self, data: TensorLike, indices: TensorLike, axis: int = 0, op: Any = "take", batch_dims: int = 0,
                   name: str | None = None) -> Tensor:
        """ONNX Gather (op take), GatherElements (elements) or GatherND (nd)."""
        return self._build(d.LayerKind.GATHER, lambda: d.GatherDescriptor(op, int(axis), int(batch_dims)),
                           [data, indices], ("data", "indices"), name)

    def add_scatter(self, data: TensorLike, indices: TensorLike, updates: TensorLike, axis: int = 0,
                    op: Any = "elements", reduction: Any = "none", name: str | None = None) -> Tensor:
        """ONNX ScatterElements (op elements) or ScatterND (nd), with a reduction."""
        return self._build(d.LayerKind.SCATTER, lambda: d.ScatterDescriptor(op, reduction, int(axis)),
                           [data, indices, updates], ("data", "indices", "updates"), name)

    def add_slice(self, x: Tensor, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None = None,
                  steps: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """NumPy/ONNX slicing: per listed axis x[start:end:step] (clamped as Python does)."""
        def resolved() -> tuple[d.SliceDescriptor, TensorInfo]:
            rank = x.info.rank
            chosen = list(range(len(starts))) if axes is None else [int(a) for a in axes]
            step_list = [1] * len(starts) if steps is None else [int(v) for v in steps]
            if not len(starts) == len(ends) == len(chosen) == len(step_list):
                raise ValueError("starts, ends, axes and steps must have the same length")
            first, by, shape = [0] * rank, [1] * rank, list(x.shape)
            for start, end, axis, step in zip(starts, ends, chosen, step_list):
                if not -rank <= axis < rank or step == 0:
                    raise ValueError(f"axis {axis} (rank {rank}) or step {step} is invalid")
                axis %= rank
                begin, count = shapes.slice_span(as_dim(start), as_dim(end), step, x.shape[axis])
                first[axis], by[axis], shape[axis] = begin, step, count
            return d.SliceDescriptor(tuple(first), tuple(by)), TensorInfo(tuple(shape), x.dtype)

        layer_name = self._name(name, d.LayerKind.SLICE)
        try:
            descriptor, out = resolved()
        except (TypeError, ValueError, AttributeError) as exc:
            raise NetworkError(f"layer {layer_name!r} (Slice): {exc}") from None
        return self._build_layer(d.LayerKind.SLICE, lambda: descriptor, [x], ("input",), layer_name,
                                 lambda infos: [out])[0]

    def add_split(self, x: Tensor, sizes: Sequence[int], axis: int = 0, name: str | None = None) -> tuple[Tensor, ...]:
        """Consecutive pieces of `sizes` along `axis`."""
        def outputs(infos: list[TensorInfo]) -> list[TensorInfo]:
            rank = infos[0].rank
            a = axis % rank if -rank <= axis < rank else axis
            return [TensorInfo(infos[0].shape[:a] + (int(n),) + infos[0].shape[a + 1:], infos[0].dtype) for n in sizes]

        return self._build_layer(d.LayerKind.SPLIT, lambda: d.SplitDescriptor(int(axis)), [x], ("input",), name,
                                 outputs)

    def add_pad(self, x: Tensor, pads_begin: Sequence[int], pads_end: Sequence[int], mode: Any = "constant",
                value: TensorLike | None = None, name: str | None = None) -> Tensor:
        """constant (value, default 0), reflect, edge or wrap padding; negative pads crop."""
        inputs = [x] + ([value] if value is not None else [])
        return self._build(d.LayerKind.PAD, lambda: d.PadDescriptor(mode, tuple(pads_begin), tuple(pads_end)),
                           inputs, ("input", "value"), name)

    def add_expand(self, x: Tensor, shape: Sequence[int], name: str | None = None) -> Tensor:
        """x broadcast with `shape` (ONNX Expand: the output is their NumPy broadcast)."""
        return self._build_layer(d.LayerKind.EXPAND, lambda: None, [x], ("input",), name, lambda infos: [
            TensorInfo(shapes.broadcast_shapes(infos[0].shape, tuple(as_dim(v) for v in shape)), infos[0].dtype)])[0]

    def add_resize(self, x: Tensor, sizes: Sequence[int], descriptor: d.ResizeDescriptor,
                   name: str | None = None) -> Tensor:
        """Resize to `sizes` (one per dim) with ONNX Resize's modes (the descriptor)."""
        return self._build_layer(d.LayerKind.RESIZE, lambda: descriptor, [x], ("input",), name, lambda infos: [
            TensorInfo(tuple(as_dim(v) for v in sizes), infos[0].dtype)])[0]

    def add_cast(self, x: TensorLike, dtype: Any, saturate: bool = False, name: str | None = None) -> Tensor:
        """Convert to element type `dtype` (same shape), by ONNX Cast's rules (backend_api.h's
        pn_cast_desc); `saturate`: out-of-range values become the largest finite value of a float
        target instead of infinities."""
        return self._build_layer(d.LayerKind.CAST, lambda: d.CastDescriptor(bool(saturate)), [x], ("input",), name,
                                 lambda infos: [TensorInfo(infos[0].shape, dtype)])[0]

    def add_convolution(self, x: Tensor, weights: TensorLike, bias: TensorLike | None = None, *,
                        descriptor: d.ConvolutionDescriptor, name: str | None = None) -> Tensor:
        """1-, 2- or 3-D convolution, forward or transposed (NC[D]HW)."""
        desc = dataclasses.replace(descriptor, has_bias=bias is not None)
        inputs = [x, weights] + ([bias] if bias is not None else [])
        return self._build(d.LayerKind.CONVOLUTION, lambda: desc, inputs, ("input", "weights", "bias"), name)

    def add_pooling(self, x: Tensor, descriptor: d.PoolingDescriptor, name: str | None = None) -> Tensor:
        """1-, 2- or 3-D pooling (NC[D]HW)."""
        return self._build(d.LayerKind.POOLING, lambda: descriptor, [x], ("input",), name)

    def add_recurrent(self, inputs: Sequence[TensorLike], descriptor: d.RecurrentDescriptor,
                      name: str | None = None) -> tuple[Tensor, ...]:
        """ONNX RNN, GRU or LSTM: inputs x, w, r, then the optional ones the descriptor's flags
        name, in order; returns y, y_h (and y_c for LSTM)."""
        roles = [f"input{i}" for i in range(len(inputs))]
        return self._build_layer(d.LayerKind.RECURRENT, lambda: descriptor, list(inputs), roles, name)

    def add_top_k(self, x: Tensor, k: int, axis: int = -1, largest: bool = True, sorted: bool = True,
                  name: str | None = None) -> tuple[Tensor, Tensor]:
        """The k largest (or smallest) values along `axis` and their int64 indices."""
        def outputs(infos: list[TensorInfo]) -> list[TensorInfo]:
            info = infos[0]
            a = axis % info.rank if -info.rank <= axis < info.rank else axis
            shape = info.shape[:a] + (int(k),) + info.shape[a + 1:]
            return [TensorInfo(shape, info.dtype), TensorInfo(shape, DataType.INT64)]

        values, indices = self._build_layer(d.LayerKind.TOP_K, lambda: d.TopKDescriptor(int(axis), bool(largest),
                                                                                          bool(sorted)),
                                            [x], ("input",), name, outputs)
        return values, indices

    def add_cumulative(self, op: Any, x: Tensor, axis: int, exclusive: bool = False, reverse: bool = False,
                       name: str | None = None) -> Tensor:
        """Cumulative sum or product along `axis`."""
        return self._build(d.LayerKind.CUMULATIVE, lambda: d.CumulativeDescriptor(op, int(axis), bool(exclusive),
                                                                                   bool(reverse)),
                           [x], ("input",), name)

    def add_one_hot(self, indices: TensorLike, depth: int, values: TensorLike, axis: int = -1,
                    name: str | None = None) -> Tensor:
        """One-hot rows of `depth` at a new axis `axis`, from values [off, on]."""
        def outputs(infos: list[TensorInfo]) -> list[TensorInfo]:
            shape = list(infos[0].shape)
            rank = len(shape) + 1
            shape.insert(axis % rank if -rank <= axis < rank else axis, int(depth))
            return [TensorInfo(tuple(shape), infos[1].dtype)]

        return self._build_layer(d.LayerKind.ONE_HOT, lambda: d.OneHotDescriptor(int(axis)), [indices, values],
                                 ("indices", "values"), name, outputs)[0]

    def add_triangular(self, x: Tensor, upper: bool = True, k: int = 0, name: str | None = None) -> Tensor:
        """Keep the upper (or lower) triangle of the last two dims from diagonal k (ONNX Trilu)."""
        return self._build(d.LayerKind.TRIANGULAR, lambda: d.TriangularDescriptor(bool(upper), int(k)), [x],
                           ("input",), name)

    # -- quantization (backend_api.h, "Quantization") -----------------------------------

    def add_quantize_linear(self, x: TensorLike, scale: TensorLike, zero_point: TensorLike | None = None, *,
                            axis: int = 1, block_size: int = 0, dtype: Any = DataType.UINT8,
                            precision: Any = None, name: str | None = None) -> Tensor:
        """saturate(round(x / scale) + zero_point) (ONNX QuantizeLinear): per tensor (one scale),
        per axis (scale [x.shape[axis]]) or blocked (block_size >= 1). The output has zero_point's
        type (int8, uint8, int16, uint16), or `dtype` with a zero zero_point when it is None.
        precision: the float type of the division (default: NumPy's promotion of x's and scale's
        types, as ONNX's reference; float64 when one is int32)."""
        def make() -> d.QuantizationDescriptor:
            chosen = precision if precision is not None else shapes.promote_float(_dtype_of(x), _dtype_of(scale))
            return d.QuantizationDescriptor("quantize_linear", int(axis), int(block_size), chosen)

        zero = zero_point if zero_point is not None else _zeros_like(scale, dtype)
        return self._build_layer(d.LayerKind.QUANTIZATION, make, [x, scale, zero], ("input", "scale", "zero_point"),
                                 name, lambda infos: [TensorInfo(infos[0].shape, infos[2].dtype)])[0]

    def add_dequantize_linear(self, x: TensorLike, scale: TensorLike, zero_point: TensorLike | None = None, *,
                              axis: int = 1, block_size: int = 0, dtype: Any = None, precision: Any = None,
                              name: str | None = None) -> Tensor:
        """(x - zero_point) * scale (ONNX DequantizeLinear), with the granularities of
        add_quantize_linear; x int8, uint8, int16, uint16 or int32 (zero_point of its type, 0
        when None). The output has `dtype` (default: scale's type). precision: the float type of
        the product (default: float32, float64 for int32 x or a float64 scale, as ONNX's reference)."""
        def make() -> d.QuantizationDescriptor:
            chosen = precision if precision is not None else shapes.promote_float(
                shapes.promote_float(DataType.FLOAT32, _dtype_of(x)), _dtype_of(scale))
            return d.QuantizationDescriptor("dequantize_linear", int(axis), int(block_size), chosen)

        zero = zero_point if zero_point is not None else _zeros_like(scale, _dtype_of(x))
        return self._build_layer(d.LayerKind.QUANTIZATION, make, [x, scale, zero], ("input", "scale", "zero_point"),
                                 name, lambda infos: [TensorInfo(infos[0].shape, dtype if dtype is not None
                                                                 else infos[1].dtype)])[0]

    def add_dynamic_quantize_linear(self, x: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """ONNX DynamicQuantizeLinear of a float32 x: (y uint8, scale float32 [], zero_point uint8 [])."""
        y, scale, zero_point = self._build_layer(
            d.LayerKind.QUANTIZATION, lambda: d.QuantizationDescriptor("dynamic_quantize_linear"), [x], ("input",),
            name, lambda infos: [TensorInfo(infos[0].shape, DataType.UINT8), TensorInfo((), DataType.FLOAT32),
                                 TensorInfo((), DataType.UINT8)])
        return y, scale, zero_point

    def add_quantized_convolution(self, inputs: Sequence[TensorLike], descriptor: d.QuantizedConvolutionDescriptor,
                                  name: str | None = None) -> Tensor:
        """ONNX ConvInteger (op integer: inputs x, x_zero_point, w, w_zero_point; int32 output)
        or QLinearConv (op qlinear: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
        y_zero_point and an optional int32 bias [O]); has_bias follows the inputs given."""
        desc = dataclasses.replace(descriptor, has_bias=descriptor.op is d.QuantizedOp.QLINEAR and len(inputs) == 9)
        roles = ("x", "x_zero_point", "w", "w_zero_point") if desc.op is d.QuantizedOp.INTEGER else (
            "x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "bias")
        return self._build(d.LayerKind.QUANTIZED_CONVOLUTION, lambda: desc, list(inputs), roles, name)

    def add_quantized_matmul(self, inputs: Sequence[TensorLike], op: Any = "integer",
                             name: str | None = None) -> Tensor:
        """ONNX MatMulInteger (op integer: inputs a, a_zero_point, b, b_zero_point; int32 output)
        or QLinearMatMul (op qlinear: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
        y_zero_point). A zero point or scale of a is per tensor or per row ([M, 1], [..., M, 1]),
        of b per tensor or per column ([N], [..., 1, N])."""
        desc = d.QuantizedMatMulDescriptor(op) if not isinstance(op, d.QuantizedMatMulDescriptor) else op
        roles = ("a", "a_zero_point", "b", "b_zero_point") if desc.op is d.QuantizedOp.INTEGER else (
            "a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")
        return self._build(d.LayerKind.QUANTIZED_MATMUL, lambda: desc, list(inputs), roles, name)

    def add_grid_sample(self, x: Tensor, grid: TensorLike, mode: Any = "linear", padding: Any = "zeros",
                        align_corners: bool = False, name: str | None = None) -> Tensor:
        """ONNX GridSample: x [N, C, spatial...] sampled at grid [N, out..., r] (normalized
        coordinates, last axis first), mode nearest, linear or cubic."""
        return self._build(d.LayerKind.GRID_SAMPLE,
                           lambda: d.GridSampleDescriptor(mode, padding, bool(align_corners)),
                           [x, grid], ("input", "grid"), name)

    def add_roi_align(self, x: Tensor, rois: TensorLike, batch_indices: TensorLike,
                      descriptor: d.RoiAlignDescriptor, name: str | None = None) -> Tensor:
        """ONNX RoiAlign: [R, C, output_height, output_width] from x [N, C, H, W]."""
        return self._build(d.LayerKind.ROI_ALIGN, lambda: descriptor, [x, rois, batch_indices],
                           ("input", "rois", "batch_indices"), name)

    def add_deformable_convolution(self, x: Tensor, weights: TensorLike, offset: TensorLike,
                                   bias: TensorLike | None = None, mask: TensorLike | None = None, *,
                                   descriptor: d.DeformableConvolutionDescriptor,
                                   name: str | None = None) -> Tensor:
        """ONNX DeformConv (1 to 3 spatial axes)."""
        desc = dataclasses.replace(descriptor, has_bias=bias is not None, has_mask=mask is not None)
        inputs = [x, weights, offset] + [v for v in (bias, mask) if v is not None]
        roles = ["input", "weights", "offset"] + [r for r, v in (("bias", bias), ("mask", mask)) if v is not None]
        return self._build(d.LayerKind.DEFORMABLE_CONVOLUTION, lambda: desc, inputs, roles, name)

    def add_spectral(self, x: Tensor, descriptor: d.SpectralDescriptor, window: TensorLike | None = None,
                     name: str | None = None) -> Tensor:
        """ONNX DFT or STFT (complex values as a trailing dim of 2)."""
        desc = dataclasses.replace(descriptor, has_window=window is not None)
        inputs = [x] + ([window] if window is not None else [])
        return self._build(d.LayerKind.SPECTRAL, lambda: desc, inputs, ("input", "window"), name)

    def add_linear_algebra(self, op: Any, x: Tensor, name: str | None = None) -> Tensor:
        """Matrix functions of the last two dims (determinant)."""
        return self._build(d.LayerKind.LINEAR_ALGEBRA, lambda: d.LinearAlgebraDescriptor(op), [x], ("input",), name)

    def add_bitcast(self, x: TensorLike, dtype: Any, name: str | None = None) -> Tensor:
        """The bits of x as elements of `dtype` (of x's element size; ONNX BitCast)."""
        return self._build_layer(d.LayerKind.BITCAST, lambda: None, [x], ("input",), name,
                                 lambda infos: [TensorInfo(infos[0].shape, dtype)])[0]

    def add_random(self, descriptor: d.RandomDescriptor, shape: Sequence[int], dtype: Any = DataType.FLOAT32,
                   logits: TensorLike | None = None, name: str | None = None) -> Tensor:
        """Philox values (backend_api.h): uniform or normal of `shape` and `dtype`; multinomial
        class indices [rows, samples] (`shape`, int32 or int64) drawn from `logits`."""
        inputs = [] if logits is None else [logits]
        return self._build_layer(d.LayerKind.RANDOM, lambda: descriptor, inputs, ("logits",), name,
                                 lambda infos: [TensorInfo(tuple(int(v) for v in shape), dtype)])[0]

    def add_data_dependent(self, op: Any, inputs: Sequence[TensorLike], *, axis: int | None = None,
                           sorted: bool = False, center_point_box: bool = False,
                           name: str | None = None) -> tuple[Tensor, ...]:
        """A layer whose output shapes depend on the data (backend_api.h, "Data-dependent layers"):
        op non_zero (x), unique (x; outputs y, indices, inverse_indices, counts; `axis` None
        flattens, `sorted`), non_max_suppression (boxes, scores[, max_output_boxes_per_class[,
        iou_threshold[, score_threshold]]]; `center_point_box`) or compress (x, condition; `axis`
        None flattens). Each output's shape is an upper bound; run() returns the actual ones. Such
        outputs can only be graph outputs of a Network (plugnn.dynamic runs later layers)."""
        def make() -> d.DataDependentDescriptor:
            return d.DataDependentDescriptor(op, axis is not None, int(axis or 0), bool(sorted), bool(center_point_box))

        return self._build_layer(d.LayerKind.DATA_DEPENDENT, make, list(inputs),
                                 [f"input{i}" for i in range(len(inputs))], name)

    def __repr__(self) -> str:
        return f"<plugnn.Network {self.name!r}: {len(self._layers)} layers>"


def _dtype_of(value: TensorLike) -> DataType:
    """The element type a tensor or an array-like will have in the network (float64 arrays
    become float32 constants)."""
    if isinstance(value, Tensor):
        return value.dtype
    array = np.asarray(value)
    return DataType.FLOAT32 if array.dtype == np.float64 else DataType.from_any(array.dtype)


def _zeros_like(scale: TensorLike, dtype: Any) -> np.ndarray:
    """A zero point of zeros shaped like `scale`, of element type `dtype`."""
    shape = scale.shape if isinstance(scale, Tensor) else np.shape(scale)
    return np.zeros(shape, DataType.from_any(dtype).numpy_dtype)
