"""Opsets 1 to 6: every node imported in an opset-7 (or newer) form with its old semantics exactly.

plugnn's converters read opsets 7 and newer. In a model of opset 1 to 6, a node whose operator
ONNX did not change between the model's opset and opset 7 is converted as at opset 7 (it is the
same definition). A node whose operator changed is rewritten here into nodes that compute what
its old version defines (`onnx.defs.get_schema(op, opset)`), or refused with the node, the
attribute, the operator version and the opset when no such form exists:

- `consumed_inputs` (a legacy in-place hint of the version-1 operators) is dropped;
- Add, Sub, Mul, Div (1, 6), Pow, And, Or, Xor, Equal, Greater, Less (1): `broadcast` = 0 needs
  equal shapes; `broadcast` = 1 broadcasts B onto A's shape: B has one element, or B's dims
  match the dims of A starting at `axis` (default: A's trailing dims), each equal or 1 (as
  PyTorch's exports of that time use it). B gets its trailing 1s from an Unsqueeze, and the
  opset-7 operator's NumPy broadcasting does the rest;
- Gemm (1, 6): `broadcast` = 0 needs C of shape [M, N]; 1 broadcasts C as Gemm-7 does;
- PRelu (1, 6): a slope of one element, or of C = X.shape[1] elements applied per channel (made
  [C, 1, ...] by an Unsqueeze), or of X's own shape;
- BatchNormalization and Dropout (1, 6): `is_test` = 1 (inference); `is_test` = 0, their default,
  asks for training mode (batch statistics, random dropout) and is refused;
- Cast (1 to 5): `to` names the type as a string ("FLOAT", "INT64", ...);
- Clip (1): `min`/`max` absent mean the input type's lowest / highest value (imported as a Clip of
  opset 11 with bounds of the input's type); Selu (1): its old defaults alpha 1.6732, gamma 1.0507;
- Concat (1 to 3): `axis` defaults to 1; Reshape (1 to 4): the `shape` attribute; Pad (1):
  `paddings`; Split (1): `split` as attribute or as input 1 (known at import), `axis` required
  (Split-1 gives it no default); Tile (1 to 5): inputs `tiles` and `axis` (known at import);
  Upsample (1): `height_scale`, `width_scale` on a 4-D input, `bilinear` read as Upsample-7's
  `linear`; LpPool, GlobalLpPool (1): `p` a float (as plugnn's converters take it); RNN, GRU,
  LSTM (1, 3): `output_sequence` (Y is computed either way); AveragePool (1): no
  `count_include_pad` (0, as opset 7's default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugnn.errors import ModelError
from plugnn.onnx import numeric
from plugnn.onnx.context import NodeContext, onnx_module
from plugnn.onnx.expansion import Expansion, base_name, fresh_node_name, fresh_value

NATIVE_OPSET = 7  # the oldest opset plugnn's converters read directly


class _Rewrite:
    """The rewrite of one old node: its new main node, helper nodes and constants."""

    def __init__(self, ctx: NodeContext, version: int) -> None:
        self.ctx = ctx
        self.version = version  # the operator's version at the model's opset
        self.nodes: list[Any] = []
        self.opsets: list[int] = []
        self.constants: dict[str, np.ndarray] = {}
        self.base = base_name(ctx)

    @property
    def what(self) -> str:
        return f"{self.ctx.op_type}-{self.version}"

    def refuse(self, message: str) -> ModelError:
        return self.ctx.error(f"{message} ({self.what})")

    def attr(self, name: str, default: Any = None) -> Any:
        return self.ctx.attr(name, default)

    def constant(self, role: str, array: np.ndarray) -> str:
        name = fresh_value(self.ctx.importer, f"{self.base}/{role}")
        self.constants[name] = np.asarray(array)
        return name

    def helper(self, op_type: str, inputs: Sequence[str], role: str, opset: int = NATIVE_OPSET,
               **attrs: Any) -> str:
        """A node computing a new value from `inputs` (before the main node); its output's name."""
        helper = onnx_module().helper
        out = fresh_value(self.ctx.importer, f"{self.base}/{role}")
        node = helper.make_node(op_type, list(inputs), [out], name=fresh_node_name(self.ctx.importer,
                                                                                  f"{self.base}/{role}"), **attrs)
        self.nodes.append(node)
        self.opsets.append(opset)
        return out

    def finish(self, drop: Sequence[str] = (), attrs: dict[str, Any] | None = None,
               inputs: Sequence[str] | None = None, opset: int = NATIVE_OPSET) -> Expansion:
        """The expansion: the helpers, then the node itself without `drop`, with `attrs` set and
        `inputs` in place of its own."""
        onnx = onnx_module()
        node = onnx.NodeProto()
        node.CopyFrom(self.ctx.node)
        kept = [a for a in node.attribute if a.name not in drop and a.name not in (attrs or {})]
        del node.attribute[:]
        node.attribute.extend(kept)
        for name, value in (attrs or {}).items():
            node.attribute.append(onnx.helper.make_attribute(name, value))
        if inputs is not None:
            del node.input[:]
            node.input.extend(inputs)
        return Expansion(self.nodes + [node], self.opsets + [opset], note=f"opset {self.ctx.opset}", main=node,
                         constants=self.constants)


def upgrade(ctx: NodeContext) -> Expansion:
    """ctx's node (of a model of opset 1 to 6) as nodes plugnn's converters read."""
    onnx = onnx_module()
    ctx.note = f"opset {ctx.opset}"  # every error about the node says which opset it was read at
    try:
        schema = onnx.defs.get_schema(ctx.op_type, ctx.opset)
    except onnx.defs.SchemaError:
        raise ctx.error(f"operator {ctx.op_type!r} is not defined at opset {ctx.opset}{_defined_from(ctx.op_type)}"
                        ) from None
    try:
        native = onnx.defs.get_schema(ctx.op_type, NATIVE_OPSET).since_version
    except onnx.defs.SchemaError:
        native = None
    version = schema.since_version
    rewrite = _Rewrite(ctx, version)
    _check_signature(rewrite, schema)
    if version == native:  # the same definition as at opset 7
        return rewrite.finish()
    rule = _RULES.get(ctx.op_type)
    if rule is None:
        raise rewrite.refuse(f"{ctx.op_type}-{version} differs from {ctx.op_type}-{native}, the version opset "
                             f"{NATIVE_OPSET} defines, and plugnn has no rule for the difference")
    return rule(rewrite)


def _check_signature(rw: _Rewrite, schema: Any) -> None:
    """The node's attributes and input count are those its operator version defines."""
    node = rw.ctx.node
    for attr in node.attribute:
        if attr.name not in schema.attributes:
            known = ", ".join(sorted(schema.attributes)) or "none"
            raise rw.refuse(f"attribute {attr.name!r} is not one of {rw.ctx.op_type}-{rw.version}'s (they are: "
                            f"{known})")
    count = len(node.input)
    while count and not node.input[count - 1]:
        count -= 1
    if not schema.min_input <= count <= schema.max_input:
        allowed = str(schema.min_input) if schema.min_input == schema.max_input else \
            f"{schema.min_input} to {schema.max_input}"
        raise rw.refuse(f"the node has {count} inputs; {rw.ctx.op_type}-{rw.version} takes {allowed}")


def _defined_from(op_type: str) -> str:
    onnx = onnx_module()
    for opset in range(1, onnx.defs.onnx_opset_version() + 1):
        try:
            onnx.defs.get_schema(op_type, opset)
        except onnx.defs.SchemaError:
            continue
        return f" (ONNX defines it from opset {opset})"
    return ""


# ---- the rules ---------------------------------------------------------------------------------


def _consumed(rw: _Rewrite) -> Expansion:
    return rw.finish(drop=("consumed_inputs",))


def _selu(rw: _Rewrite) -> Expansion:
    onnx = onnx_module()
    schema = onnx.defs.get_schema("Selu", rw.version)
    defaults = {name: onnx.helper.get_attribute_value(schema.attributes[name].default_value)
                for name in ("alpha", "gamma") if not rw.ctx.has(name)}
    return rw.finish(drop=("consumed_inputs",), attrs=defaults)


def _broadcast(rw: _Rewrite) -> Expansion:
    """Add/Sub/Mul/Div/Pow/And/Or/Xor/Equal/Greater/Less before opset 7: B onto A's shape."""
    ctx = rw.ctx
    a, b = tuple(ctx.shape(0)), tuple(ctx.shape(1))
    broadcast, axis = rw.attr("broadcast", 0), rw.attr("axis")
    drop = ("consumed_inputs", "broadcast", "axis")
    if broadcast not in (0, 1):
        raise rw.refuse(f"attribute 'broadcast' = {broadcast!r} is not supported; supported: 0, 1")
    if broadcast == 0:
        if a != b:
            raise rw.refuse(f"inputs A {list(a)} and B {list(b)} differ in shape and attribute 'broadcast' is 0: "
                            f"without broadcast = 1 they must have one shape")
        return rw.finish(drop=drop)
    if len(b) <= len(a) and int(np.prod(b, dtype=np.int64)) == 1:  # one element: NumPy broadcasts it alike
        return rw.finish(drop=drop)
    start = len(a) - len(b) if axis is None else int(axis) + (len(a) if int(axis) < 0 else 0)
    if not 0 <= start <= len(a) - len(b) or any(d not in (1, e) for d, e in zip(b, a[start:])):
        where = "A's trailing dims" if axis is None else f"the dims of A from attribute 'axis' = {axis}"
        raise rw.refuse(f"with broadcast = 1, B {list(b)} must have one element or match {where}, each dim "
                        f"equal or 1 (A is {list(a)}; the result has A's shape)")
    trailing = len(a) - start - len(b)
    if trailing == 0:
        return rw.finish(drop=drop)
    b_name = rw.helper("Unsqueeze", [ctx.input_name(1)], "B_broadcast",
                       axes=list(range(len(b), len(b) + trailing)))
    return rw.finish(drop=drop, inputs=[ctx.input_name(0), b_name])


def _gemm(rw: _Rewrite) -> Expansion:
    ctx = rw.ctx
    broadcast = rw.attr("broadcast", 0)
    if broadcast not in (0, 1):
        raise rw.refuse(f"attribute 'broadcast' = {broadcast!r} is not supported; supported: 0, 1")
    if broadcast == 0 and ctx.has_input(2):
        a, b = tuple(ctx.shape(0)), tuple(ctx.shape(1))
        if len(a) == 2 and len(b) == 2:
            m = a[1] if rw.attr("transA", 0) else a[0]
            n = b[0] if rw.attr("transB", 0) else b[1]
            if tuple(ctx.shape(2)) != (m, n):
                raise rw.refuse(f"input C has shape {list(ctx.shape(2))} and attribute 'broadcast' is 0: C must "
                                f"be [M, N] = {[m, n]}")
    return rw.finish(drop=("broadcast",))


def _prelu(rw: _Rewrite) -> Expansion:
    ctx = rw.ctx
    x, slope = tuple(ctx.shape(0)), tuple(ctx.shape(1))
    drop = ("consumed_inputs",)
    if (len(slope) <= len(x) and int(np.prod(slope, dtype=np.int64)) == 1) or slope == x:
        return rw.finish(drop=drop)
    if len(slope) == 1 and len(x) >= 2 and slope[0] == x[1]:  # one slope per channel
        if len(x) == 2:
            return rw.finish(drop=drop)
        name = rw.helper("Unsqueeze", [ctx.input_name(1)], "slope_per_channel", axes=list(range(1, len(x) - 1)))
        return rw.finish(drop=drop, inputs=[ctx.input_name(0), name])
    raise rw.refuse(f"slope {list(slope)} for X {list(x)}: the slope has one element, one per channel "
                    f"(X.shape[1] elements) or X's shape")


def _is_test(rw: _Rewrite, meaning: str) -> Expansion:
    is_test = rw.attr("is_test", 0)
    if is_test == 0:
        raise rw.refuse(f"attribute 'is_test' = 0 (its default) asks for training mode, {meaning}; plugnn imports "
                        f"inference, is_test = 1")
    return rw.finish(drop=("consumed_inputs", "is_test"))


def _cast(rw: _Rewrite) -> Expansion:
    onnx = onnx_module()
    to = rw.attr("to")
    if to is None:
        raise rw.refuse("attribute 'to' is required")
    if isinstance(to, str):
        try:
            to = onnx.TensorProto.DataType.Value(to.strip().upper())
        except ValueError:
            raise rw.refuse(f"attribute 'to' = {to!r} names no TensorProto data type (e.g. 'FLOAT', "
                            f"'INT64')") from None
    return rw.finish(attrs={"to": int(to)})


def _clip(rw: _Rewrite) -> Expansion:
    ctx = rw.ctx
    dtype = numeric.numpy_dtype(numeric.check_types(ctx, [(0, "input")], numeric.FLOATS))
    limits = np.finfo(dtype)
    low, high = rw.attr("min"), rw.attr("max")
    lo = rw.constant("min", np.asarray(limits.min if low is None else np.float32(low), dtype))
    hi = rw.constant("max", np.asarray(limits.max if high is None else np.float32(high), dtype))
    return rw.finish(drop=("consumed_inputs", "min", "max"), inputs=[ctx.input_name(0), lo, hi], opset=11)


def _concat(rw: _Rewrite) -> Expansion:
    return rw.finish(attrs={} if rw.ctx.has("axis") else {"axis": 1})


def _reshape(rw: _Rewrite) -> Expansion:
    shape = rw.ctx.ints("shape")
    if shape is None:
        raise rw.refuse("attribute 'shape' is required (the new shape)")
    name = rw.constant("shape", np.asarray(shape, np.int64))
    return rw.finish(drop=("consumed_inputs", "shape"), inputs=[rw.ctx.input_name(0), name])


def _pad(rw: _Rewrite) -> Expansion:
    paddings = rw.ctx.ints("paddings")
    if paddings is None:
        raise rw.refuse("attribute 'paddings' is required")
    return rw.finish(drop=("paddings",), attrs={"pads": paddings})


def _integers(rw: _Rewrite, values: np.ndarray, what: str) -> list[int]:
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind not in "iub" and not np.all(np.isfinite(flat) & (flat == np.round(flat))):
        raise rw.refuse(f"{what} {flat.tolist()} are not whole numbers")
    return [int(v) for v in flat]


def _split(rw: _Rewrite) -> Expansion:
    ctx = rw.ctx
    if not ctx.has("axis"):
        raise rw.refuse("attribute 'axis' is missing, and Split-1 gives it no default")
    split = ctx.ints("split")
    if ctx.has_input(1):
        given = _integers(rw, ctx.const(1, "split"), "input 1 (split) values")
        if split is not None and split != given:
            raise rw.refuse(f"attribute 'split' = {split} and input 1 (split) = {given} disagree")
        split = given
    attrs = {"split": split} if split is not None else {}
    return rw.finish(attrs=attrs, inputs=[ctx.input_name(0)])


def _tile(rw: _Rewrite) -> Expansion:
    ctx = rw.ctx
    if ctx.num_inputs != 3:
        raise rw.refuse(f"takes 3 inputs (input, tiles, axis), the node has {ctx.num_inputs}")
    (tiles,) = _scalar(rw, 1, "tiles")
    (axis,) = _scalar(rw, 2, "axis")
    rank = len(ctx.shape(0))
    if not -rank <= axis < rank:
        raise rw.refuse(f"input 2 (axis) = {axis} is out of range for rank {rank}")
    if tiles < 0:
        raise rw.refuse(f"input 1 (tiles) = {tiles} is negative")
    repeats = np.ones(rank, np.int64)
    repeats[axis % rank] = tiles
    return rw.finish(inputs=[ctx.input_name(0), rw.constant("repeats", repeats)])


def _scalar(rw: _Rewrite, i: int, what: str) -> list[int]:
    values = _integers(rw, rw.ctx.const(i, what), f"input {i} ({what})")
    if len(values) != 1:
        raise rw.refuse(f"input {i} ({what}) has {len(values)} values; one expected")
    return values


def _upsample(rw: _Rewrite) -> Expansion:
    ctx = rw.ctx
    shape = ctx.shape(0)
    if len(shape) != 4:
        raise rw.refuse(f"input X has rank {len(shape)}; Upsample-1 takes a 4-D [N, C, H, W] tensor")
    scales = []
    for name in ("height_scale", "width_scale"):
        value = rw.attr(name)
        if value is None:
            raise rw.refuse(f"attribute {name!r} is required")
        scales.append(float(value))
    mode = rw.attr("mode", "nearest")
    modes = {"nearest": "nearest", "bilinear": "linear"}
    if mode not in modes:
        raise rw.refuse(f"attribute 'mode' = {mode!r} is not supported; supported: 'nearest', 'bilinear'")
    return rw.finish(drop=("height_scale", "width_scale"),
                     attrs={"scales": [1.0, 1.0, *scales], "mode": modes[mode]})


def _same(rw: _Rewrite) -> Expansion:
    return rw.finish()


def _recurrent(rw: _Rewrite) -> Expansion:
    return rw.finish(drop=("output_sequence",))


_RULES: dict[str, Callable[[_Rewrite], Expansion]] = {
    **{op: _consumed for op in ("Abs", "Ceil", "Elu", "Exp", "Floor", "HardSigmoid", "InstanceNormalization",
                                "LeakyRelu", "Log", "Max", "Mean", "Min", "Neg", "Reciprocal", "Relu", "Sigmoid",
                                "Sqrt", "Sum", "Tanh")},
    **{op: _broadcast for op in ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater",
                                 "Less")},
    "Selu": _selu,
    "Gemm": _gemm,
    "PRelu": _prelu,
    "BatchNormalization": lambda rw: _is_test(rw, "which normalizes with the batch's own statistics"),
    "Dropout": lambda rw: _is_test(rw, "which drops elements at random"),
    "Cast": _cast,
    "Clip": _clip,
    "Concat": _concat,
    "Reshape": _reshape,
    "Pad": _pad,
    "Split": _split,
    "Tile": _tile,
    "Upsample": _upsample,
    "AveragePool": _same,
    "LpPool": _same,
    "GlobalLpPool": _same,
    "RNN": _recurrent,
    "GRU": _recurrent,
    "LSTM": _recurrent,
}
