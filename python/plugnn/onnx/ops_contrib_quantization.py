"""onnxruntime's com.microsoft quantized operators, the ones its quantizer
(`onnxruntime.quantization`) writes in the QOperator format and for dynamic quantization, imported
as ONNX nodes (contrib_nodes.py) that compute what onnxruntime's CPU kernels compute, in the same
order of float32 operations where that order decides the rounding:

- QuantizeLinear, DequantizeLinear (x, scale[, zero_point]; axis): ONNX's (8- and 16-bit; the
  4-bit types are refused naming the tensor, as in the default domain).
- QLinearAdd (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale[, C_zero_point]),
  broadcasting: with rA = A_scale / C_scale and rB = B_scale / C_scale, float32
  A * rA + (B * rB + (C_zero_point - (rA * A_zero_point + rB * B_zero_point))), rounded half to
  even and saturated. onnxruntime's AVX2 kernel fuses the two outer multiply-adds (FMA), which
  plugnn rounds separately: a result on a rounding boundary can differ by one step.
- QLinearMul: the exact integer product (A - A_zp)(B - B_zp) in float32 times
  (A_scale * B_scale) / C_scale, plus C_zero_point, rounded half to even, saturated.
- QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp; channels_last): the exact sum over
  the spatial dims minus x_zp * size (in float32 while every partial sum is an integer below 2^24,
  else in int32), times x_scale / (y_scale * size) in float32, rounded,
  plus y_zp, saturated.
- QLinearAveragePool (auto_pad, ceil_mode, channels_last, count_include_pad, kernel_shape, pads,
  strides): X dequantized to float32, ONNX AveragePool, then y / y_scale + y_zp rounded half to
  even and saturated (onnxruntime adds the zero point before rounding).
- QLinearSigmoid, QLinearLeakyRelu (alpha 0.01), QLinearSoftmax (axis, opset: below 13 the dims
  from axis on are one, as Softmax-1): dequantize, the float op, QuantizeLinear (onnxruntime's
  tables hold the same values; its Sigmoid is MLAS's approximation and its Softmax sums a table
  of exponentials, so a value on a rounding boundary can differ by one step).
- QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per input; axis): each
  input requantized to Y's parameters (passed through when they are the same constants), then
  Concat.
- QLinearWhere (condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale, z_zp): X and Y
  requantized to z's parameters, then Where.
- QGemm (A, a_scale, a_zp, B, b_scale, b_zp[, C][, y_scale][, y_zp]; alpha, transA, transB):
  MatMulInteger (+ the int32 bias C), times the float32 scale (alpha * a_scale * b_scale[n]) /
  y_scale; with y_zero_point the result is rounded half to even, plus y_zp, saturated (8-bit
  output), else it is the float32 output.
- MatMulIntegerToFloat (A, B, a_scale, b_scale[, a_zp][, b_zp][, bias]): MatMulInteger, the
  int32 sums in float times a_scale * b_scale (+ bias).
- DynamicQuantizeMatMul (A, B, b_scale[, b_zp][, bias]): DynamicQuantizeLinear of A, then as
  MatMulIntegerToFloat.
- QAttention (input, weight, bias, input_scale, weight_scale[, mask_index][, input_zp]
  [, weight_zp][, past]; num_heads, unidirectional, mask_filter_value, scale): the Q, K, V
  projection as MatMulIntegerToFloat (weight's parameters per tensor or per column), then
  Attention's float32 attention (ops_contrib_attention.py) with that mask and past.
- DynamicQuantizeLSTM (X, W, R[, B][, sequence_lens][, initial_h][, initial_c][, P], W_scale,
  W_zero_point, R_scale, R_zero_point; ONNX LSTM's attributes): W and R ([D, input, 4h] and
  [D, h, 4h], parameters per direction or per direction and gate column) dequantized to float32
  and transposed to ONNX's layout, then ONNX LSTM. onnxruntime also quantizes X and each step's
  hidden state to uint8 for its integer products; plugnn keeps them float32, so the two differ by
  that quantization's error (the documented equations are LSTM's).
- QEmbedLayerNormalization (input_ids, segment_ids, the 8-bit word, position and segment
  embeddings, gamma and beta, mask, then their scales and zero points; epsilon): each 8-bit
  tensor dequantized (scale * (q - zero point), float32), then EmbedLayerNormalization.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.contrib_nodes import Nodes, check_float, dtype_of
from plugnn.onnx.ops_contrib_attention import attention_shapes, qkv_sizes, self_attention
from plugnn.onnx.registry import MICROSOFT_DOMAIN, op

EIGHT_BIT = ("uint8", "int8")
ONNX_FLOAT, ONNX_INT32 = 1, 6  # TensorProto element types for Cast's `to`


# ---- shared pieces ----------------------------------------------------------------------------------


def _required(ctx: NodeContext, names: tuple[str, ...], optional: frozenset[int] = frozenset()) -> None:
    """Every input of `names` not in `optional` present; no more inputs than `names`."""
    if ctx.num_inputs > len(names):
        raise ctx.error(f"{ctx.op_type} takes at most {len(names)} inputs ({', '.join(names)}); the node has "
                        f"{ctx.num_inputs}")
    for i, name in enumerate(names):
        if i not in optional and not ctx.has_input(i):
            raise ctx.error(f"input {i} ({name}) is absent; {ctx.op_type} needs it")


def _eight_bit(ctx: NodeContext, i: int, what: str) -> np.dtype:
    dtype = dtype_of(ctx, i)
    if dtype.name not in EIGHT_BIT:
        raise ctx.error(f"input {i} ({what}) is {dtype.name}; {ctx.op_type} takes uint8 or int8 there")
    return dtype


def _zero_point_of(ctx: NodeContext, i: int, what: str, operand: np.dtype) -> None:
    if ctx.has_input(i) and dtype_of(ctx, i) != operand:
        raise ctx.error(f"input {i} ({what}) is {dtype_of(ctx, i).name} but its tensor is {operand.name}; "
                        f"they have one type")


def _per_tensor(ctx: NodeContext, i: int, what: str) -> None:
    shape = ctx.shape(i)
    if int(np.prod(shape)) != 1 or len(shape) > 1:
        raise ctx.error(f"input {i} ({what}) has shape {list(shape)}; {ctx.op_type} takes a scalar or a "
                        f"one-element vector there")


def _scale(ctx: NodeContext, nodes: Nodes, i: int, what: str) -> str:
    """A per-tensor float32 scale as a rank-0 value."""
    check_float(ctx, i, what, ("float32",))
    _per_tensor(ctx, i, what)
    return nodes.add("Reshape", [nodes.input(i), nodes.ints([], "scalar")], f"{what}_scalar")


def _zero_point(ctx: NodeContext, nodes: Nodes, i: int, what: str, operand: np.dtype) -> str:
    """A per-tensor zero point as a rank-0 value of `operand`'s type (0 when absent)."""
    if not ctx.has_input(i):
        return nodes.const(np.zeros((), operand), what)
    _zero_point_of(ctx, i, what, operand)
    _per_tensor(ctx, i, what)
    return nodes.add("Reshape", [nodes.input(i), nodes.ints([], "scalar")], f"{what}_scalar")


def _as_float(nodes: Nodes, name: str, role: str) -> str:
    return nodes.add("Cast", [name], role, to=ONNX_FLOAT)


def _round_saturate(nodes: Nodes, value: str, dtype: np.dtype, output: str | None, zero_point: str | None = None
                    ) -> str:
    """saturate(round_half_even(value) + zero_point) of `dtype`: QuantizeLinear with scale 1 (the
    division by 1 is exact)."""
    zero = zero_point or nodes.const(np.zeros((), dtype), "zero")
    return nodes.add("QuantizeLinear", [value, nodes.const(np.float32(1.0), "one"), zero], "quantize",
                     outputs=[output])


def _dequantize(nodes: Nodes, x: str, scale: str, zero: str, role: str) -> str:
    """scale * (x - zero) in float32 (onnxruntime's dequantization)."""
    return nodes.add("DequantizeLinear", [x, scale, zero], role)


def _unary(ctx: NodeContext, float_op: Any) -> Any:
    """X, X_scale[, X_zp], Y_scale[, Y_zp]: dequantize, `float_op`, quantize."""
    _required(ctx, ("X", "X_scale", "X_zero_point", "Y_scale", "Y_zero_point"), frozenset({2, 4}))
    nodes = Nodes(ctx)
    dtype = _eight_bit(ctx, 0, "X")
    x = _dequantize(nodes, nodes.input(0), _scale(ctx, nodes, 1, "X_scale"),
                    _zero_point(ctx, nodes, 2, "X_zero_point", dtype), "dequantize")
    y = float_op(nodes, x)
    y_scale, y_zero = _scale(ctx, nodes, 3, "Y_scale"), _zero_point(ctx, nodes, 4, "Y_zero_point", dtype)
    nodes.add("QuantizeLinear", [y, y_scale, y_zero], "quantize", outputs=[nodes.output(0)])
    return nodes.expansion()


# ---- QuantizeLinear, DequantizeLinear ---------------------------------------------------------------


@op("QuantizeLinear", ("axis",), domain=MICROSOFT_DOMAIN)
def quantize_linear(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    inputs = [nodes.input(i) for i in range(min(ctx.num_inputs, 3))]
    nodes.add("QuantizeLinear", inputs, "quantize", outputs=[nodes.output(0)], axis=int(ctx.attr("axis", 1)))
    return nodes.expansion()


@op("DequantizeLinear", ("axis",), domain=MICROSOFT_DOMAIN)
def dequantize_linear(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    inputs = [nodes.input(i) for i in range(min(ctx.num_inputs, 3))]
    nodes.add("DequantizeLinear", inputs, "dequantize", outputs=[nodes.output(0)], axis=int(ctx.attr("axis", 1)))
    return nodes.expansion()


# ---- QLinearAdd, QLinearMul -------------------------------------------------------------------------

_BINARY_NAMES = ("A", "A_scale", "A_zero_point", "B", "B_scale", "B_zero_point", "C_scale", "C_zero_point")


def _binary_setup(ctx: NodeContext, nodes: Nodes) -> tuple[np.dtype, list[str]]:
    """The operand type and A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp as names (scales
    and zero points rank 0, absent zero points 0)."""
    _required(ctx, _BINARY_NAMES, frozenset({2, 5, 7}))
    dtype = _eight_bit(ctx, 0, "A")
    if _eight_bit(ctx, 3, "B") != dtype:
        raise ctx.error(f"input 3 (B) is {dtype_of(ctx, 3).name} but input 0 (A) is {dtype.name}; {ctx.op_type} "
                        f"takes one type for them")
    names = [nodes.input(0), _scale(ctx, nodes, 1, "A_scale"), _zero_point(ctx, nodes, 2, "A_zero_point", dtype),
             nodes.input(3), _scale(ctx, nodes, 4, "B_scale"), _zero_point(ctx, nodes, 5, "B_zero_point", dtype),
             _scale(ctx, nodes, 6, "C_scale"), _zero_point(ctx, nodes, 7, "C_zero_point", dtype)]
    return dtype, names


@op("QLinearAdd", domain=MICROSOFT_DOMAIN)
def qlinear_add(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype, (a, a_scale, a_zero, b, b_scale, b_zero, c_scale, c_zero) = _binary_setup(ctx, nodes)
    ratio_a = nodes.add("Div", [a_scale, c_scale], "ratio_a")
    ratio_b = nodes.add("Div", [b_scale, c_scale], "ratio_b")
    shifts = nodes.add("Add", [nodes.add("Mul", [ratio_a, _as_float(nodes, a_zero, "a_zero_f")], "shift_a"),
                               nodes.add("Mul", [ratio_b, _as_float(nodes, b_zero, "b_zero_f")], "shift_b")], "shifts")
    fixed = nodes.add("Sub", [_as_float(nodes, c_zero, "c_zero_f"), shifts], "fixed")
    partial = nodes.add("Add", [nodes.add("Mul", [_as_float(nodes, b, "b_f"), ratio_b], "b_scaled"), fixed], "b_part")
    total = nodes.add("Add", [nodes.add("Mul", [_as_float(nodes, a, "a_f"), ratio_a], "a_scaled"), partial], "sum")
    _round_saturate(nodes, total, dtype, nodes.output(0))
    return nodes.expansion()


@op("QLinearMul", domain=MICROSOFT_DOMAIN)
def qlinear_mul(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype, (a, a_scale, a_zero, b, b_scale, b_zero, c_scale, c_zero) = _binary_setup(ctx, nodes)

    # In float32: the centred 8-bit values and their product (at most 256^2) are integers below
    # 2^24, exact, as their int32 forms would be (and the float kinds run on every backend).
    def centred(x: str, zero: str, role: str) -> str:
        return nodes.add("Sub", [_as_float(nodes, x, f"{role}_f"), _as_float(nodes, zero, f"{role}_zero_f")],
                         f"{role}_centred")

    product = nodes.add("Mul", [centred(a, a_zero, "a"), centred(b, b_zero, "b")], "product_f")
    ratio = nodes.add("Div", [nodes.add("Mul", [a_scale, b_scale], "scales"), c_scale], "ratio")
    value = nodes.add("Add", [nodes.add("Mul", [product, ratio], "scaled"),
                              _as_float(nodes, c_zero, "c_zero_f")], "shifted")
    _round_saturate(nodes, value, dtype, nodes.output(0))
    return nodes.expansion()


# ---- pooling ----------------------------------------------------------------------------------------


def _spatial_axes(ctx: NodeContext, channels_last: bool) -> list[int]:
    rank = len(ctx.shape(0))
    if rank < 3:
        raise ctx.error(f"input 0 (X) has shape {list(ctx.shape(0))}; {ctx.op_type} takes rank 3 or more "
                        f"(N, C and spatial dims)")
    return list(range(1, rank - 1)) if channels_last else list(range(2, rank))


def _channels_last_attr(ctx: NodeContext) -> bool:
    value = int(ctx.attr("channels_last", 0))
    if value not in (0, 1):
        raise ctx.unsupported_value("channels_last", value, "0, 1")
    return bool(value)


@op("QLinearGlobalAveragePool", ("channels_last",), domain=MICROSOFT_DOMAIN)
def qlinear_global_average_pool(ctx: NodeContext) -> Any:
    _required(ctx, ("X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"))
    nodes = Nodes(ctx)
    dtype = _eight_bit(ctx, 0, "X")
    axes = _spatial_axes(ctx, _channels_last_attr(ctx))
    size = int(np.prod([ctx.shape(0)[a] for a in axes]))
    x_zero = _zero_point(ctx, nodes, 2, "x_zero_point", dtype)
    if size * 256 <= 1 << 24:
        # Every partial sum of 8-bit values is an integer below 2^24, so float32 sums them
        # exactly in any order (and the float kinds run on every backend).
        sums = nodes.add("ReduceSum", [_as_float(nodes, nodes.input(0), "x_f"), nodes.ints(axes, "axes")], "sum",
                         keepdims=1)
        offset = nodes.add("Mul", [_as_float(nodes, x_zero, "x_zero_f"), nodes.const(np.float32(size), "size_f")],
                           "offset")
        centred = nodes.add("Sub", [sums, offset], "centred_f")
    else:
        sums = nodes.add("ReduceSum", [nodes.add("Cast", [nodes.input(0)], "x_i32", to=ONNX_INT32),
                                       nodes.ints(axes, "axes")], "sum", keepdims=1)
        offset = nodes.add("Mul", [nodes.add("Cast", [x_zero], "x_zero_i32", to=ONNX_INT32),
                                   nodes.const(np.int32(size), "size_i32")], "offset")
        centred = _as_float(nodes, nodes.add("Sub", [sums, offset], "centred"), "centred_f")
    denominator = nodes.add("Mul", [_scale(ctx, nodes, 3, "y_scale"), nodes.const(np.float32(size), "size")],
                            "denominator")
    scale = nodes.add("Div", [_scale(ctx, nodes, 1, "x_scale"), denominator], "scale")
    value = nodes.add("Mul", [centred, scale], "scaled")
    _round_saturate(nodes, value, dtype, nodes.output(0), _zero_point(ctx, nodes, 4, "y_zero_point", dtype))
    return nodes.expansion()


_POOL_ATTRIBUTES = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")


@op("QLinearAveragePool", _POOL_ATTRIBUTES + ("channels_last",), domain=MICROSOFT_DOMAIN)
def qlinear_average_pool(ctx: NodeContext) -> Any:
    _required(ctx, ("X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"), frozenset({2, 4}))
    nodes = Nodes(ctx)
    dtype = _eight_bit(ctx, 0, "X")
    channels_last = _channels_last_attr(ctx)
    rank = len(ctx.shape(0))
    _spatial_axes(ctx, channels_last)
    x = _dequantize(nodes, nodes.input(0), _scale(ctx, nodes, 1, "x_scale"),
                    _zero_point(ctx, nodes, 2, "x_zero_point", dtype), "dequantize")
    if channels_last:
        x = nodes.add("Transpose", [x], "to_channels_first", perm=[0, rank - 1] + list(range(1, rank - 1)))
    attrs = {k: ctx.attr(k) for k in _POOL_ATTRIBUTES if ctx.has(k)}
    y = nodes.add("AveragePool", [x], "pool", **attrs)
    if channels_last:
        y = nodes.add("Transpose", [y], "to_channels_last", perm=[0] + list(range(2, rank)) + [1])
    quotient = nodes.add("Div", [y, _scale(ctx, nodes, 3, "y_scale")], "divided")
    shifted = nodes.add("Add", [quotient, _as_float(nodes, _zero_point(ctx, nodes, 4, "y_zero_point", dtype),
                                                    "y_zero_f")], "shifted")
    _round_saturate(nodes, shifted, dtype, nodes.output(0))
    return nodes.expansion()


# ---- table-driven activations -----------------------------------------------------------------------


@op("QLinearSigmoid", domain=MICROSOFT_DOMAIN)
def qlinear_sigmoid(ctx: NodeContext) -> Any:
    return _unary(ctx, lambda nodes, x: nodes.add("Sigmoid", [x], "sigmoid"))


@op("QLinearLeakyRelu", ("alpha",), domain=MICROSOFT_DOMAIN)
def qlinear_leaky_relu(ctx: NodeContext) -> Any:
    alpha = float(ctx.attr("alpha", 0.01))
    return _unary(ctx, lambda nodes, x: nodes.add("LeakyRelu", [x], "leaky_relu", alpha=alpha))


@op("QLinearSoftmax", ("axis", "opset"), domain=MICROSOFT_DOMAIN)
def qlinear_softmax(ctx: NodeContext) -> Any:
    if not ctx.has("opset"):
        raise ctx.error("attribute 'opset' is absent; QLinearSoftmax needs it (the Softmax opset whose axis "
                        "semantics apply)")
    if not ctx.has_input(4):
        raise ctx.error("input 4 (y_zero_point) is absent; QLinearSoftmax needs it")
    opset = int(ctx.attr("opset"))
    shape = ctx.shape(0)
    rank = len(shape)
    axis = int(ctx.attr("axis", 1 if opset < 13 else -1))
    if not -rank <= axis < max(rank, 1):
        raise ctx.unsupported_value("axis", axis, f"an axis of X's rank {rank}")
    axis %= max(rank, 1)

    def softmax(nodes: Nodes, x: str) -> str:
        if opset >= 13 or axis == rank - 1:
            return nodes.add("Softmax", [x], "softmax", axis=axis)
        rows = int(np.prod(shape[:axis]))
        flat = nodes.add("Reshape", [x, nodes.ints([rows, -1], "flat_shape")], "flatten")
        y = nodes.add("Softmax", [flat], "softmax", axis=1)
        return nodes.add("Reshape", [y, nodes.ints(list(shape), "shape")], "unflatten")

    return _unary(ctx, softmax)


# ---- QLinearConcat, QLinearWhere --------------------------------------------------------------------


def _same_constants(ctx: NodeContext, pairs: tuple[tuple[int, int], tuple[int, int]]) -> bool:
    """Whether inputs (i, j) of each pair are constants of equal value (a requantization is a copy)."""
    for i, j in pairs:
        if not (ctx.has_input(i) and ctx.has_input(j) and ctx.is_const(i) and ctx.is_const(j)):
            return False
        if not np.array_equal(np.asarray(ctx.value(i)).reshape(-1), np.asarray(ctx.value(j)).reshape(-1)):
            return False
    return True


def _requantized(ctx: NodeContext, nodes: Nodes, x: int, role: str, to: tuple[int, int], dtype: np.dtype) -> str:
    """Input x (with its scale at x + 1 and zero point at x + 2) in the parameters at `to`."""
    if _eight_bit(ctx, x, role) != dtype:
        raise ctx.error(f"input {x} ({role}) is {dtype_of(ctx, x).name} but the output is {dtype.name}; "
                        f"{ctx.op_type} takes one type")
    if _same_constants(ctx, ((x + 1, to[0]), (x + 2, to[1]))):
        return nodes.input(x)
    value = _dequantize(nodes, nodes.input(x), _scale(ctx, nodes, x + 1, f"{role}_scale"),
                        _zero_point(ctx, nodes, x + 2, f"{role}_zero_point", dtype), f"{role}_dequantize")
    return nodes.add("QuantizeLinear", [value, _scale(ctx, nodes, to[0], "out_scale"),
                                        _zero_point(ctx, nodes, to[1], "out_zero_point", dtype)],
                     f"{role}_requantize")


@op("QLinearConcat", ("axis",), domain=MICROSOFT_DOMAIN)
def qlinear_concat(ctx: NodeContext) -> Any:
    if not ctx.has("axis"):
        raise ctx.error("attribute 'axis' is absent; QLinearConcat needs it")
    count = ctx.num_inputs - 2
    if count < 3 or count % 3 or not ctx.has_input(0) or not ctx.has_input(1):
        raise ctx.error(f"QLinearConcat takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) per input; "
                        f"the node has {ctx.num_inputs} inputs")
    for i in range(2, ctx.num_inputs):
        if not ctx.has_input(i):
            raise ctx.error(f"input {i} is absent; every QLinearConcat input is needed")
    nodes = Nodes(ctx)
    dtype = _eight_bit(ctx, 1, "Y_zero_point")
    parts = [_requantized(ctx, nodes, x, f"input{(x - 2) // 3}", (0, 1), dtype) for x in range(2, ctx.num_inputs, 3)]
    nodes.add("Concat", parts, "concat", outputs=[nodes.output(0)], axis=int(ctx.attr("axis")))
    return nodes.expansion()


@op("QLinearWhere", domain=MICROSOFT_DOMAIN)
def qlinear_where(ctx: NodeContext) -> Any:
    _required(ctx, ("condition", "X", "x_scale", "x_zero_point", "Y", "y_scale", "y_zero_point", "z_scale",
                    "z_zero_point"))
    nodes = Nodes(ctx)
    if dtype_of(ctx, 0).name != "bool":
        raise ctx.error(f"input 0 (condition) is {dtype_of(ctx, 0).name}; QLinearWhere takes bool there")
    dtype = _eight_bit(ctx, 8, "z_zero_point")
    x = _requantized(ctx, nodes, 1, "X", (7, 8), dtype)
    y = _requantized(ctx, nodes, 4, "Y", (7, 8), dtype)
    nodes.add("Where", [nodes.input(0), x, y], "where", outputs=[nodes.output(0)])
    return nodes.expansion()


# ---- QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul --------------------------------------------


def _column_parameter(ctx: NodeContext, i: int, what: str, columns: int) -> None:
    shape = ctx.shape(i)
    if not (len(shape) == 0 or (len(shape) == 1 and shape[0] in (1, columns))):
        raise ctx.error(f"input {i} ({what}) has shape {list(shape)}; {ctx.op_type} takes a scalar or a vector of "
                        f"1 or N = {columns} there")


def _scaled_sums(ctx: NodeContext, nodes: Nodes, sums: str, scale: str, bias: int | None, output: str | None) -> None:
    """float(sums) * scale (+ input `bias`) into `output`."""
    value = nodes.add("Mul", [_as_float(nodes, sums, "sums_f"), scale], "scaled",
                      outputs=[None if bias is not None else output])
    if bias is not None:
        check_float(ctx, bias, "bias", ("float32",))
        nodes.add("Add", [value, nodes.input(bias)], "bias", outputs=[output])


@op("QGemm", ("alpha", "transA", "transB"), domain=MICROSOFT_DOMAIN)
def qgemm(ctx: NodeContext) -> Any:
    _required(ctx, ("A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point", "C", "y_scale",
                    "y_zero_point"), frozenset({6, 7, 8}))
    nodes = Nodes(ctx)
    a_type, b_type = _eight_bit(ctx, 0, "A"), _eight_bit(ctx, 3, "B")
    for i, what in ((0, "A"), (3, "B")):
        if len(ctx.shape(i)) != 2:
            raise ctx.error(f"input {i} ({what}) has shape {list(ctx.shape(i))}; QGemm takes a matrix there")
    trans_a, trans_b = bool(ctx.attr("transA", 0)), bool(ctx.attr("transB", 0))
    columns = ctx.shape(3)[0 if trans_b else 1]
    _zero_point_of(ctx, 5, "b_zero_point", b_type)
    _column_parameter(ctx, 4, "b_scale", columns)
    _column_parameter(ctx, 5, "b_zero_point", columns)
    check_float(ctx, 4, "b_scale", ("float32",))
    a = nodes.input(0) if not trans_a else nodes.add("Transpose", [nodes.input(0)], "transpose_a", perm=[1, 0])
    b = nodes.input(3) if not trans_b else nodes.add("Transpose", [nodes.input(3)], "transpose_b", perm=[1, 0])
    sums = nodes.add("MatMulInteger", [a, b, _zero_point(ctx, nodes, 2, "a_zero_point", a_type), nodes.input(5)],
                     "matmul")
    if ctx.has_input(6):
        if dtype_of(ctx, 6).name != "int32":
            raise ctx.error(f"input 6 (C) is {dtype_of(ctx, 6).name}; QGemm takes int32 there")
        sums = nodes.add("Add", [sums, nodes.input(6)], "bias")
    scale = nodes.add("Mul", [nodes.add("Mul", [nodes.const(np.float32(ctx.attr("alpha", 1.0)), "alpha"),
                                                _scale(ctx, nodes, 1, "a_scale")], "alpha_a"), nodes.input(4)],
                      "product_scale")
    if ctx.has_input(7):
        scale = nodes.add("Div", [scale, _scale(ctx, nodes, 7, "y_scale")], "output_scale")
    if ctx.has_input(8):
        if not ctx.has_input(7):
            raise ctx.error("input 8 (y_zero_point) is given without input 7 (y_scale); QGemm needs both for an "
                            "8-bit output")
        y_type = _eight_bit(ctx, 8, "y_zero_point")
        value = nodes.add("Mul", [_as_float(nodes, sums, "sums_f"), scale], "scaled")
        _round_saturate(nodes, value, y_type, nodes.output(0), _zero_point(ctx, nodes, 8, "y_zero_point", y_type))
    else:
        _scaled_sums(ctx, nodes, sums, scale, None, nodes.output(0))
    return nodes.expansion()


def _float_matmul_checks(ctx: NodeContext, a: int, b: int, b_zero: int) -> None:
    b_type = _eight_bit(ctx, b, "B")
    _zero_point_of(ctx, b_zero, "b_zero_point", b_type)
    if len(ctx.shape(b)) < 1 or len(ctx.shape(a)) < 1:
        raise ctx.error(f"inputs A and B have shapes {list(ctx.shape(a))} and {list(ctx.shape(b))}; {ctx.op_type} "
                        f"takes tensors of rank 1 or more")


@op("MatMulIntegerToFloat", domain=MICROSOFT_DOMAIN)
def matmul_integer_to_float(ctx: NodeContext) -> Any:
    _required(ctx, ("A", "B", "a_scale", "b_scale", "a_zero_point", "b_zero_point", "bias"), frozenset({4, 5, 6}))
    nodes = Nodes(ctx)
    a_type = _eight_bit(ctx, 0, "A")
    _zero_point_of(ctx, 4, "a_zero_point", a_type)
    _float_matmul_checks(ctx, 0, 1, 5)
    check_float(ctx, 2, "a_scale", ("float32",))
    check_float(ctx, 3, "b_scale", ("float32",))
    sums = nodes.add("MatMulInteger", [nodes.input(0), nodes.input(1), nodes.input(4), nodes.input(5)], "matmul")
    scale = nodes.add("Mul", [nodes.input(2), nodes.input(3)], "scale")
    _scaled_sums(ctx, nodes, sums, scale, 6 if ctx.has_input(6) else None, nodes.output(0))
    return nodes.expansion()


@op("DynamicQuantizeMatMul", domain=MICROSOFT_DOMAIN)
def dynamic_quantize_matmul(ctx: NodeContext) -> Any:
    _required(ctx, ("A", "B", "b_scale", "b_zero_point", "bias"), frozenset({3, 4}))
    nodes = Nodes(ctx)
    check_float(ctx, 0, "A", ("float32",))
    check_float(ctx, 2, "b_scale", ("float32",))
    _float_matmul_checks(ctx, 0, 1, 3)
    q, a_scale, a_zero = nodes.add("DynamicQuantizeLinear", [nodes.input(0)], "quantize_a", outputs=3)
    sums = nodes.add("MatMulInteger", [q, nodes.input(1), a_zero, nodes.input(3)], "matmul")
    scale = nodes.add("Mul", [a_scale, nodes.input(2)], "scale")
    _scaled_sums(ctx, nodes, sums, scale, 4 if ctx.has_input(4) else None, nodes.output(0))
    return nodes.expansion()


@op("QAttention", ("num_heads", "unidirectional", "mask_filter_value", "scale", "do_rotary",
                   "past_present_share_buffer"), domain=MICROSOFT_DOMAIN)
def qattention(ctx: NodeContext) -> Any:
    _required(ctx, ("input", "weight", "bias", "input_scale", "weight_scale", "mask_index", "input_zero_point",
                    "weight_zero_point", "past"), frozenset({5, 6, 7, 8}))
    nodes = Nodes(ctx)
    input_type = _eight_bit(ctx, 0, "input")
    weight_type = _eight_bit(ctx, 1, "weight")
    _zero_point_of(ctx, 6, "input_zero_point", input_type)
    _zero_point_of(ctx, 7, "weight_zero_point", weight_type)
    sizes = qkv_sizes(ctx, attention_shapes(ctx, "weight"))
    columns = sum(sizes)
    check_float(ctx, 2, "bias", ("float32",))
    if tuple(ctx.shape(2)) != (columns,):
        raise ctx.error(f"input 2 (bias) has shape {list(ctx.shape(2))}; QAttention takes [{columns}] there")
    check_float(ctx, 4, "weight_scale", ("float32",))
    _column_parameter(ctx, 4, "weight_scale", columns)
    if ctx.has_input(7):
        _column_parameter(ctx, 7, "weight_zero_point", columns)
    input_zero = _zero_point(ctx, nodes, 6, "input_zero_point", input_type)
    sums = nodes.add("MatMulInteger", [nodes.input(0), nodes.input(1), input_zero, nodes.input(7)], "qkv_integer")
    scale = nodes.add("Mul", [_scale(ctx, nodes, 3, "input_scale"), nodes.input(4)], "qkv_scale")
    scaled = nodes.add("Mul", [_as_float(nodes, sums, "qkv_sums_f"), scale], "qkv_scaled")
    projected = nodes.add("Add", [scaled, nodes.input(2)], "qkv")
    return self_attention(ctx, nodes, projected, np.dtype(np.float32), sizes, past=8, mask=5, attention_bias=-1)


_LSTM_ATTRIBUTES = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
                    "input_forget")
_LSTM_NAMES = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P", "W_scale", "W_zero_point",
               "R_scale", "R_zero_point")


def _dequantized_weights(ctx: NodeContext, nodes: Nodes, i: int, what: str, directions: int, columns: int) -> str:
    """Input i ([D, rows, 4h], 8-bit) with its scale (i + 8 ... as given) dequantized and
    transposed to ONNX LSTM's [D, 4h, rows]."""
    dtype = _eight_bit(ctx, i, what)
    shape = ctx.shape(i)
    if len(shape) != 3 or shape[0] != directions or shape[2] != columns:
        raise ctx.error(f"input {i} ({what}) has shape {list(shape)}; DynamicQuantizeLSTM takes "
                        f"[num_directions = {directions}, rows, 4 * hidden_size = {columns}] there")
    scale_i, zero_i = {1: (8, 9), 2: (10, 11)}[i]
    check_float(ctx, scale_i, f"{what}_scale", ("float32",))
    _zero_point_of(ctx, zero_i, f"{what}_zero_point", dtype)
    parameters = []
    for index, role in ((scale_i, f"{what}_scale"), (zero_i, f"{what}_zero_point")):
        given = tuple(ctx.shape(index))
        if given in ((directions,), (directions, 1)):
            target = [directions, 1, 1]
        elif given == (directions, columns):
            target = [directions, 1, columns]
        else:
            raise ctx.error(f"input {index} ({role}) has shape {list(given)}; DynamicQuantizeLSTM takes "
                            f"[{directions}] or [{directions}, {columns}] there")
        parameters.append(nodes.add("Reshape", [nodes.input(index), nodes.ints(target, f"{role}_shape")],
                                    f"{role}_broadcast"))
    scale, zero = parameters
    values, zero_f = _as_float(nodes, nodes.input(i), f"{what}_f"), _as_float(nodes, zero, f"{what}_zero_f")
    centred = nodes.add("Sub", [values, zero_f], f"{what}_centred")
    weights = nodes.add("Mul", [centred, scale], f"{what}_dequantized")
    return nodes.add("Transpose", [weights], f"{what}_onnx_layout", perm=[0, 2, 1])


@op("DynamicQuantizeLSTM", _LSTM_ATTRIBUTES, domain=MICROSOFT_DOMAIN)
def dynamic_quantize_lstm(ctx: NodeContext) -> Any:
    _required(ctx, _LSTM_NAMES, frozenset({3, 4, 5, 6, 7}))
    nodes = Nodes(ctx)
    check_float(ctx, 0, "X", ("float32",))
    hidden = ctx.attr("hidden_size")
    if hidden is None or int(hidden) <= 0:
        raise ctx.error(f"attribute 'hidden_size' must be given and positive (got {hidden!r})")
    direction = ctx.attr("direction", "forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    directions = 2 if direction == "bidirectional" else 1
    columns = 4 * int(hidden)
    w = _dequantized_weights(ctx, nodes, 1, "W", directions, columns)
    r = _dequantized_weights(ctx, nodes, 2, "R", directions, columns)
    inputs = [nodes.input(0), w, r] + [nodes.input(i) for i in range(3, 8)]
    while inputs and not inputs[-1]:
        inputs.pop()
    attrs = {k: ctx.attr(k) for k in _LSTM_ATTRIBUTES if ctx.has(k)}
    outputs = [nodes.output(i) for i in range(len(ctx.node.output))]
    nodes.add("LSTM", inputs, "lstm", outputs=outputs, **attrs)
    return nodes.expansion()


_QEMBED_QUANTIZED = ((2, "word_embedding"), (3, "position_embedding"), (4, "segment_embedding"), (5, "gamma"),
                     (6, "beta"))


@op("QEmbedLayerNormalization", ("epsilon",), domain=MICROSOFT_DOMAIN)
def qembed_layer_normalization(ctx: NodeContext) -> Any:
    names = ("input_ids", "segment_ids", "word_embedding_quant", "position_embedding_quant", "segment_embedding",
             "gamma_quant", "beta_quant", "mask") + tuple(f"{r}_scale" for _, r in _QEMBED_QUANTIZED) + \
        tuple(f"{r}_zero_point" for _, r in _QEMBED_QUANTIZED)
    _required(ctx, names, frozenset({1, 4, 7, 10, 15}))
    if ctx.has_input(4) != ctx.has_input(10) or ctx.has_input(4) != ctx.has_input(15):
        raise ctx.error("inputs 4 (segment_embedding), 10 (its scale) and 15 (its zero point) are given together or "
                        "not at all")
    nodes = Nodes(ctx)
    floats = {}
    for i, role in _QEMBED_QUANTIZED:
        if not ctx.has_input(i):
            continue
        dtype = _eight_bit(ctx, i, role)
        floats[i] = _dequantize(nodes, nodes.input(i), _scale(ctx, nodes, i + 6, f"{role}_scale"),
                                _zero_point(ctx, nodes, i + 11, f"{role}_zero_point", dtype), f"{role}_dequantize")
    inputs = [nodes.input(0), nodes.input(1)] + [floats.get(i, "") for i, _ in _QEMBED_QUANTIZED] + [nodes.input(7)]
    while not inputs[-1]:
        inputs.pop()
    attrs = {"epsilon": float(ctx.attr("epsilon"))} if ctx.has("epsilon") else {}
    outputs = [nodes.output(i) for i in range(len(ctx.node.output))]
    nodes.add("EmbedLayerNormalization", inputs, "embed_layer_norm", outputs=outputs, domain=MICROSOFT_DOMAIN,
              **attrs)
    return nodes.expansion()
