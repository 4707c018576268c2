"""QDQ models as integer operators: `DequantizeLinear -> op -> QuantizeLinear` groups rewritten
into the QOperator form before the walk, as onnxruntime's graph optimizer does when it loads a
QDQ model (its QDQ selectors and actions), so a quantized model computes on 8-bit tensors with
integer kernels instead of dequantizing to float32 around every float op.

`integer_operators(proto, source, owned=...)` (called by `importer.read_model` unless the caller
asks for the graph as written: `plugnn.onnx.load(..., integer_qdq=False)`, onnxruntime's session
config entry "session.disable_quant_qdq" = "1") rewrites, in the main graph:

- **Conv** whose x is a per-tensor DequantizeLinear, whose w is a DequantizeLinear of a constant
  (per tensor, or per output channel: axis 0), whose optional bias is a DequantizeLinear of a
  constant int32 with zero point 0 and scale x_scale * w_scale (so the int32 sums take it as
  they are), and whose output only feeds a per-tensor QuantizeLinear -> **QLinearConv**;
- **MatMul** (a per tensor; b per tensor, or per column of a 2-D b) -> **QLinearMatMul**;
- **Gemm** (beta 1; B constant, per tensor or per output column; C as Conv's bias, then with
  alpha 1) -> com.microsoft **QGemm**, with a quantized output or, when nothing quantizes the
  output (a classifier's logits), a float32 one;
- **Add**, **Mul** -> **QLinearAdd**, **QLinearMul**; **GlobalAveragePool**, **AveragePool** ->
  **QLinearGlobalAveragePool**, **QLinearAveragePool**; **Sigmoid**, **LeakyRelu** ->
  **QLinearSigmoid**, **QLinearLeakyRelu**; **Concat** -> **QLinearConcat** (com.microsoft,
  every operand and the output per tensor and of one 8-bit type);
- **data movement** (MaxPool, Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Slice, Gather,
  DepthToSpace, SpaceToDepth, Expand, Tile) between a DequantizeLinear and a QuantizeLinear of
  the same scale and zero point: the op on the 8-bit tensor itself (moving or taking the max of
  quantized values is exact).

What the rewrite needs is checked on constants only (scales, zero points, weights, biases); a
group that does not qualify stays as written and computes in float32, correct either way. A
DequantizeLinear whose every consumer was rewritten goes; one that also feeds another node stays.
The rewritten nodes keep the op's name. The arithmetic is the QOperator form's
(ops_quantization.py, ops_contrib_quantization.py): exact integer sums, then one float32
requantization, where the graph as written rounds each float op's result; the two differ by at
most one quantization step on an element whose value lies on a rounding boundary, which is also
how onnxruntime's optimized session differs from its unoptimized one.

A model with no QuantizeLinear is returned as it is; otherwise the caller's ModelProto is never
changed (a copy is rewritten, unless `owned`). What was rewritten is logged (INFO, "plugnn").
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugnn.onnx.context import onnx_module
from plugnn.onnx.registry import MICROSOFT_DOMAIN
from plugnn.onnx.tidy import node_reads, owned_copy, set_nodes, sort_nodes

LOG = logging.getLogger("plugnn")

_QDQ_DOMAINS = ("", "ai.onnx", MICROSOFT_DOMAIN)
_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))
# Ops that only move, select or compare values: on quantized values of one scale and zero point
# they give the quantized result exactly. (op, index of the data input, least opset on 8-bit).
_MOVEMENT = {"MaxPool": 12, "Reshape": 5, "Transpose": 1, "Squeeze": 1, "Unsqueeze": 1, "Flatten": 9, "Slice": 1,
             "Gather": 1, "DepthToSpace": 1, "SpaceToDepth": 1, "Expand": 8, "Tile": 6}
_RELATIVE_SCALE = 1e-6  # a bias scale equal to x_scale * w_scale within float32 rounding of the product


@dataclass(frozen=True)
class _Quantized:
    """A tensor as a DequantizeLinear reads it, or as a QuantizeLinear writes it: the 8-bit
    tensor's name, its scale and zero point (names; zero None when the node has none) and their
    values (the zero point's, zeros of the 8-bit type when absent), and the axis of a scale of
    more than one element (normalized against `rank`, None per tensor)."""

    name: str
    scale: str
    zero: str | None
    scale_value: np.ndarray
    zero_value: np.ndarray
    axis: int | None

    @property
    def dtype(self) -> np.dtype:
        return self.zero_value.dtype

    def same_parameters(self, other: _Quantized) -> bool:
        return (self.axis is None and other.axis is None and self.dtype == other.dtype
                and self.scale_value.reshape(-1)[0] == other.scale_value.reshape(-1)[0]
                and self.zero_value.reshape(-1)[0] == other.zero_value.reshape(-1)[0])


@dataclass
class _Rewrite:
    """A node replaced (index `at` in the graph) by `node`, the QuantizeLinear at `quantize`
    (if any) taken into it, and the initializers the new node needs."""

    at: int
    node: Any
    quantize: int | None
    initializers: list[Any]


class _Graph:
    """A graph's producers, consumers and constants, read once."""

    def __init__(self, graph: Any, opset: int, held: Mapping[str, np.ndarray] | None = None) -> None:
        from onnx import numpy_helper

        self.graph = graph
        self.opset = opset
        self._held = held or {}
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[int]] = defaultdict(list)
        for index, node in enumerate(graph.node):
            for name in node.output:
                if name:
                    self.producer[name] = index
            for name in node_reads(node):
                self.consumers[name].append(index)
        self.outputs = {o.name for o in graph.output}
        self._initializers = {t.name: t for t in graph.initializer}
        self._values: dict[str, np.ndarray | None] = {}
        self._to_array = numpy_helper.to_array
        self.names = set(self.producer) | set(self._initializers) | {v.name for v in graph.input}
        self._types = {v.name: v.type.tensor_type.elem_type for v in list(graph.input) + list(graph.value_info)
                       if v.type.HasField("tensor_type")}

    def node(self, index: int) -> Any:
        return self.graph.node[index]

    def constant(self, name: str) -> np.ndarray | None:
        """The value of an initializer or a Constant node's `value`, else None."""
        if name in self._values:
            return self._values[name]
        value = None
        if name in self._held:
            value = self._held[name]
        elif name in self._initializers:
            value = self._read(self._initializers[name])
        elif name in self.producer:
            node = self.node(self.producer[name])
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                attrs = {a.name: a for a in node.attribute}
                if set(attrs) == {"value"}:
                    value = self._read(attrs["value"].t)
        self._values[name] = value
        return value

    def _read(self, tensor: Any) -> np.ndarray | None:
        try:
            return np.asarray(self._to_array(tensor))
        except Exception:  # noqa: BLE001 - a malformed tensor is the walk's to report
            return None

    def eight_bit_type(self, name: str) -> np.dtype | None:
        """The element type of `name` when it is known to be int8 or uint8 (a constant, a
        declared input or value, or a QuantizeLinear's output)."""
        value = self.constant(name)
        if value is not None:
            return value.dtype if value.dtype in _EIGHT_BIT else None
        onnx = onnx_module()
        declared = self._types.get(name)
        if declared in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
            return np.dtype(np.int8 if declared == onnx.TensorProto.INT8 else np.uint8)
        node = self.node(self.producer[name]) if name in self.producer else None
        if node is not None and node.op_type == "QuantizeLinear" and node.domain in _QDQ_DOMAINS:
            if len(node.input) > 2 and node.input[2]:
                zero = self.constant(node.input[2])
                return zero.dtype if zero is not None and zero.dtype in _EIGHT_BIT else None
            return None if _attributes(node).get("output_dtype", 0) else np.dtype(np.uint8)
        return None


def _attributes(node: Any) -> dict[str, Any]:
    onnx = onnx_module()
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _parameters(g: _Graph, node: Any, name: str, rank: int | None,
                types: tuple[np.dtype, ...] = _EIGHT_BIT) -> _Quantized | None:
    """The quantization a DequantizeLinear or QuantizeLinear applies, when its scale and zero
    point are constants of the forms the integer operators take (float32 scales, 8-bit zero
    points (or of `types`), per tensor or per axis, no blocks)."""
    attrs = _attributes(node)
    if set(attrs) - {"axis", "saturate", "output_dtype"} or attrs.get("block_size", 0):
        return None
    scale = g.constant(node.input[1]) if len(node.input) > 1 else None
    if scale is None or scale.dtype != np.float32 or scale.size == 0 or not np.all(scale > 0):
        return None
    zero_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
    if zero_name is not None:
        zero = g.constant(zero_name)
        if zero is None or zero.dtype not in types or (zero.shape != scale.shape and zero.size + scale.size != 2):
            return None
    else:
        dtype = g.eight_bit_type(name) if node.op_type == "DequantizeLinear" else np.dtype(np.uint8)
        constant = g.constant(name) if node.op_type == "DequantizeLinear" else None
        if dtype is None and constant is not None:
            dtype = constant.dtype
        if dtype not in types or attrs.get("output_dtype", 0):
            return None
        zero = np.zeros(scale.shape, dtype)
    if node.op_type == "DequantizeLinear" and attrs.get("output_dtype", 0) not in (0, onnx_module().TensorProto.FLOAT):
        return None
    axis: int | None = None
    if scale.size > 1 or scale.ndim > 1:
        if scale.ndim != 1 or rank is None:
            return None
        axis = int(attrs.get("axis", 1))
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank:
            return None
    return _Quantized(name, node.input[1], zero_name, scale, zero, axis)


def _dequantized(g: _Graph, name: str, rank: int | None = None,
                 types: tuple[np.dtype, ...] = _EIGHT_BIT) -> _Quantized | None:
    """`name` as the output of a DequantizeLinear, with what it dequantizes (a tensor of `types`)."""
    if name not in g.producer:
        return None
    node = g.node(g.producer[name])
    if node.op_type != "DequantizeLinear" or node.domain not in _QDQ_DOMAINS or len(node.input) < 2:
        return None
    if rank is None:
        value = g.constant(node.input[0])
        rank = value.ndim if value is not None else None
    quantized = _parameters(g, node, node.input[0], rank, types)
    if quantized is None or (quantized.dtype in _EIGHT_BIT
                             and g.eight_bit_type(node.input[0]) not in (None, quantized.dtype)):
        return None
    return quantized


def _quantized_output(g: _Graph, name: str) -> tuple[_Quantized, int] | None:
    """The per-tensor QuantizeLinear that is the only reader of `name` (not a graph output),
    and its index."""
    readers = g.consumers.get(name, [])
    if name in g.outputs or len(readers) != 1:
        return None
    node = g.node(readers[0])
    if node.op_type != "QuantizeLinear" or node.domain not in _QDQ_DOMAINS or node.input[0] != name:
        return None
    quantized = _parameters(g, node, node.output[0], None)
    if quantized is None or quantized.axis is not None:
        return None
    return quantized, readers[0]


class _Builder:
    """The operands of a rewritten node: names, with zero points made where a node had none."""

    def __init__(self, g: _Graph, op: Any) -> None:
        self.g = g
        self.op = op
        self.initializers: list[Any] = []

    def zero(self, q: _Quantized, role: str) -> str:
        if q.zero is not None:
            return q.zero
        from onnx import numpy_helper

        base = f"{self.op.name or self.op.op_type}/qdq_{role}_zero_point"
        name, k = base, 1
        while name in self.g.names:
            k += 1
            name = f"{base}_{k}"
        self.g.names.add(name)
        self.initializers.append(numpy_helper.from_array(q.zero_value, name))
        return name

    def operand(self, q: _Quantized, role: str) -> list[str]:
        return [q.name, q.scale, self.zero(q, role)]

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "",
             attributes: Sequence[Any] = ()) -> Any:
        onnx = onnx_module()
        node = onnx.helper.make_node(op_type, list(inputs), list(outputs), name=self.op.name, domain=domain)
        node.attribute.extend(attributes)
        return node


def _per_tensor(q: _Quantized | None) -> bool:
    return q is not None and q.axis is None


def _bias(g: _Graph, name: str, x: _Quantized, w: _Quantized, channels: int) -> str | None:
    """The int32 constant a DequantizeLinear gives a bias from, when its zero point is 0 and its
    scale is x_scale * w_scale (per channel or per tensor): the sums then add it as it is."""
    b = _dequantized(g, name, rank=1, types=(np.dtype(np.int32),))
    data = g.constant(b.name) if b is not None else None
    if b is None or data is None or data.dtype != np.int32 or data.shape != (channels,) or np.any(b.zero_value != 0):
        return None
    scale = np.broadcast_to(b.scale_value.reshape(-1), (channels,))
    product = np.broadcast_to((x.scale_value.reshape(-1)[0] * w.scale_value.reshape(-1)).astype(np.float32),
                              (channels,))
    if not np.allclose(scale, product, rtol=_RELATIVE_SCALE, atol=0):
        return None
    return b.name


def _conv(g: _Graph, op: Any) -> _Rewrite | None:
    if len(op.input) < 2:
        return None
    weights = _dequantized(g, op.input[1])
    data = g.constant(weights.name) if weights is not None else None
    x = _dequantized(g, op.input[0])
    output = _quantized_output(g, op.output[0])
    if not (_per_tensor(x) and weights is not None and data is not None and output is not None) or data.ndim < 3:
        return None
    if weights.axis not in (None, 0) or x.dtype not in _EIGHT_BIT or weights.dtype not in _EIGHT_BIT:
        return None
    y, at = output
    build = _Builder(g, op)
    inputs = build.operand(x, "x") + build.operand(weights, "w") + [y.scale, build.zero(y, "y")]
    if len(op.input) > 2 and op.input[2]:
        bias = _bias(g, op.input[2], x, weights, data.shape[0])
        if bias is None:
            return None
        inputs.append(bias)
    return _Rewrite(g.producer[op.output[0]], build.node("QLinearConv", inputs, [y.name], attributes=op.attribute),
                    at, build.initializers)


def _matmul(g: _Graph, op: Any) -> _Rewrite | None:
    a, output = _dequantized(g, op.input[0]), _quantized_output(g, op.output[0])
    b_value = _b_rank(g, op.input[1])
    b = _dequantized(g, op.input[1], rank=b_value)
    if not (_per_tensor(a) and b is not None and output is not None):
        return None
    if b.axis is not None and not (b_value == 2 and b.axis == 1):
        return None
    y, at = output
    build = _Builder(g, op)
    inputs = build.operand(a, "a") + build.operand(b, "b") + [y.scale, build.zero(y, "y")]
    return _Rewrite(g.producer[op.output[0]], build.node("QLinearMatMul", inputs, [y.name]), at, build.initializers)


def _b_rank(g: _Graph, name: str) -> int | None:
    if name not in g.producer:
        return None
    value = g.constant(g.node(g.producer[name]).input[0])
    return value.ndim if value is not None else None


def _gemm(g: _Graph, op: Any) -> _Rewrite | None:
    attrs = _attributes(op)
    if len(op.input) < 2 or set(attrs) - {"alpha", "beta", "transA", "transB"}:
        return None
    trans_b = int(attrs.get("transB", 0))
    b = _dequantized(g, op.input[1], rank=2)
    data = g.constant(b.name) if b is not None else None
    a = _dequantized(g, op.input[0])
    if not (_per_tensor(a) and b is not None and data is not None) or data.ndim != 2:
        return None
    columns = data.shape[0] if trans_b else data.shape[1]
    if b.axis is not None and b.axis != (0 if trans_b else 1):
        return None
    build = _Builder(g, op)
    inputs = build.operand(a, "a") + build.operand(b, "b")
    has_c = len(op.input) > 2 and bool(op.input[2])
    if has_c:
        if float(attrs.get("beta", 1.0)) != 1.0 or float(attrs.get("alpha", 1.0)) != 1.0:
            return None
        bias = _bias(g, op.input[2], a, b, columns)
        if bias is None:
            return None
        inputs.append(bias)
    output = _quantized_output(g, op.output[0])
    kept = [attr for attr in op.attribute if attr.name != "beta"]
    if output is None:
        return _Rewrite(g.producer[op.output[0]], build.node("QGemm", inputs, [op.output[0]], MICROSOFT_DOMAIN, kept),
                        None, build.initializers)
    y, at = output
    if not has_c:
        inputs.append("")
    inputs += [y.scale, build.zero(y, "y")]
    return _Rewrite(g.producer[op.output[0]], build.node("QGemm", inputs, [y.name], MICROSOFT_DOMAIN, kept), at,
                    build.initializers)


def _operands(g: _Graph, op: Any, count: int | None) -> tuple[list[_Quantized], _Quantized, int] | None:
    """Every input of `op` (or the first `count`) a per-tensor DequantizeLinear of one 8-bit type
    and the output a per-tensor QuantizeLinear of that type."""
    names = list(op.input if count is None else op.input[:count])
    operands = [_dequantized(g, name) for name in names]
    output = _quantized_output(g, op.output[0]) if len(op.output) == 1 else None
    if output is None or not all(_per_tensor(q) for q in operands):
        return None
    y, at = output
    if len({q.dtype for q in operands} | {y.dtype}) != 1:
        return None
    return operands, y, at  # type: ignore[return-value]


def _contrib(op_type: str, arity: int | None, allowed: frozenset[str] = frozenset()) -> Callable[[_Graph, Any],
                                                                                                 _Rewrite | None]:
    """QLinear<op> of com.microsoft: operands (x, scale, zero point)..., then y's."""

    def rewrite(g: _Graph, op: Any) -> _Rewrite | None:
        if set(_attributes(op)) - allowed or (arity is not None and len(op.input) != arity):
            return None
        found = _operands(g, op, arity)
        if found is None:
            return None
        operands, y, at = found
        build = _Builder(g, op)
        inputs = [name for k, q in enumerate(operands) for name in build.operand(q, f"x{k}")]
        attributes = list(op.attribute)
        if op_type in ("QLinearGlobalAveragePool", "QLinearAveragePool"):
            onnx = onnx_module()
            attributes.append(onnx.helper.make_attribute("channels_last", 0))
        node = build.node(op_type, inputs + [y.scale, build.zero(y, "y")], [y.name], MICROSOFT_DOMAIN, attributes)
        return _Rewrite(g.producer[op.output[0]], node, at, build.initializers)

    return rewrite


def _concat(g: _Graph, op: Any) -> _Rewrite | None:
    found = _operands(g, op, None)
    if found is None or set(_attributes(op)) != {"axis"}:
        return None
    operands, y, at = found
    build = _Builder(g, op)
    inputs = [y.scale, build.zero(y, "y")] + [name for k, q in enumerate(operands) for name in build.operand(q, f"x{k}")]
    return _Rewrite(g.producer[op.output[0]], build.node("QLinearConcat", inputs, [y.name], MICROSOFT_DOMAIN,
                                                         op.attribute), at, build.initializers)


def _movement(g: _Graph, op: Any) -> _Rewrite | None:
    if g.opset < _MOVEMENT[op.op_type] or len(op.output) != 1 or not op.input:
        return None
    x = _dequantized(g, op.input[0])
    output = _quantized_output(g, op.output[0])
    if x is None or output is None or not x.same_parameters(output[0]):
        return None
    y, at = output
    build = _Builder(g, op)
    node = build.node(op.op_type, [x.name] + list(op.input[1:]), [y.name], op.domain, op.attribute)
    return _Rewrite(g.producer[op.output[0]], node, at, build.initializers)


_RULES: dict[str, Callable[[_Graph, Any], _Rewrite | None]] = {
    "Conv": _conv,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Add": _contrib("QLinearAdd", 2),
    "Mul": _contrib("QLinearMul", 2),
    "GlobalAveragePool": _contrib("QLinearGlobalAveragePool", 1),
    "AveragePool": _contrib("QLinearAveragePool", 1, frozenset({"auto_pad", "ceil_mode", "count_include_pad",
                                                                "kernel_shape", "pads", "strides"})),
    "Sigmoid": _contrib("QLinearSigmoid", 1),
    "LeakyRelu": _contrib("QLinearLeakyRelu", 1, frozenset({"alpha"})),
    "Concat": _concat,
    **{name: _movement for name in _MOVEMENT},
}


def integer_operators(proto: Any, source: str, *, owned: bool, held: Mapping[str, np.ndarray] | None = None) -> Any:
    """`proto` with its QDQ groups as integer operators (see the module's doc): a copy unless
    `owned`, and `proto` itself when there is nothing to rewrite. `held`: the values of
    main-graph initializers read apart from the proto (importer.read_model's)."""
    graph = proto.graph
    if not any(n.op_type == "QuantizeLinear" and n.domain in _QDQ_DOMAINS for n in graph.node):
        return proto
    versions = {o.domain: o.version for o in proto.opset_import}
    opset = versions.get("", versions.get("ai.onnx", 0))
    if opset < 10:
        return proto
    g = _Graph(graph, opset, held)
    rewrites: list[_Rewrite] = []
    taken: set[int] = set()
    for index, node in enumerate(graph.node):
        rule = _RULES.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if rule is None:
            continue
        rewrite = rule(g, node)
        if rewrite is not None and rewrite.quantize not in taken:
            rewrites.append(rewrite)
            if rewrite.quantize is not None:
                taken.add(rewrite.quantize)
    if not rewrites:
        return proto
    proto = owned_copy(proto, owned)
    _apply(proto, rewrites, taken, source)
    counts = Counter(r.node.op_type for r in rewrites)
    LOG.info("%s: %d QDQ group(s) run as integer operators (%s)", source, len(rewrites),
             ", ".join(f"{op} {n}" for op, n in sorted(counts.items())))
    return proto


def _apply(proto: Any, rewrites: list[_Rewrite], quantizes: set[int], source: str) -> None:
    """Put the rewrites in, drop the QuantizeLinears they took, the DequantizeLinears nothing
    reads any more, the initializers only the dropped nodes read (a bias's float scale), and the
    declared types of the values that are gone."""
    graph = proto.graph
    read_before = {name for node in graph.node for name in node_reads(node)}
    replaced = {r.at: r.node for r in rewrites}
    nodes = [replaced.get(i, node) for i, node in enumerate(graph.node) if i not in quantizes]
    outputs = {o.name for o in graph.output}
    while True:
        read = Counter(name for node in nodes for name in node_reads(node))
        kept = [node for node in nodes if not (node.op_type == "DequantizeLinear" and node.domain in _QDQ_DOMAINS
                                               and not read[node.output[0]] and node.output[0] not in outputs)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    set_nodes(graph, nodes)
    read_after = {name for node in graph.node for name in node_reads(node)} | outputs | {v.name for v in graph.input}
    unread = read_before - read_after
    if any(t.name in unread for t in graph.initializer):
        kept_initializers = [t for t in graph.initializer if t.name not in unread]
        del graph.initializer[:]
        graph.initializer.extend(kept_initializers)
    for rewrite in rewrites:
        graph.initializer.extend(rewrite.initializers)
    produced = {name for node in graph.node for name in node.output}
    values = [v for v in graph.value_info if v.name in produced]
    if len(values) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(values)
    sort_nodes(graph, source)  # a scale read first by the rewritten node may come after it
    if any(node.domain == MICROSOFT_DOMAIN for node in graph.node) and \
            MICROSOFT_DOMAIN not in {o.domain for o in proto.opset_import}:
        proto.opset_import.append(onnx_module().helper.make_opsetid(MICROSOFT_DOMAIN, 1))
