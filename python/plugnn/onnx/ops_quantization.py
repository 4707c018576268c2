"""The quantization operators: QuantizeLinear and DequantizeLinear (opsets 10 to the newest:
per tensor, per axis from 13, blocked, int16/uint16, output_dtype from 21, precision from 23),
DynamicQuantizeLinear (11), QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger (10; float16
and bfloat16 scales from 21), each one layer of the QUANTIZATION, QUANTIZED_CONVOLUTION or
QUANTIZED_MATMUL kind (backend_api.h, "Quantization").

A zero point ONNX leaves out is a constant 0 of the type it implies. QuantizeLinear divides in
ONNX's reference's type (the `precision` attribute, else NumPy's promotion of x's and y_scale's
types: float64 when one is int32), DequantizeLinear multiplies in float32 (float64 for int32 x).
`saturate` applies to float8 outputs only (ONNX), which plugnn has none of: both values are
accepted. The float8, float6, float4, int4 and int2 types have no plugnn element type: a node
using one is refused naming it. A per-row zero point or scale of QLinearMatMul's or
MatMulInteger's a given as an [M] vector (ONNX's 2-D form) becomes [M, 1]. A one-element zero
point whose shape differs from its one-element scale's ([] and [1], as onnxruntime's quantizer
writes for biases) takes the scale's shape, as onnxruntime accepts it. When every input is
known at import, each operator is folded with quant_numeric.py (the layer's arithmetic in NumPy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn import shapes
from plugnn.descriptors import QuantizationDescriptor, QuantizedConvolutionDescriptor, QuantizedOp
from plugnn.network import Tensor
from plugnn.onnx import numeric, ops_conv
from plugnn.onnx import quant_numeric as qn
from plugnn.onnx.context import NodeContext, PendingInput, np_dtype, type_name
from plugnn.onnx.registry import op
from plugnn.tensor import DataType, TensorInfo

T = DataType
QUANTIZED = frozenset({T.INT8, T.UINT8, T.INT16, T.UINT16})
EIGHT_BIT = frozenset({T.INT8, T.UINT8})
HIGH_PRECISION = frozenset({T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT32})  # QuantizeLinear's x and y_scale
SCALES = frozenset({T.FLOAT32, T.FLOAT16, T.BFLOAT16})

_SINCE = {"axis": 13, "saturate": 19, "block_size": 21, "output_dtype": 21, "precision": 23}


# ---- element types ---------------------------------------------------------------------------------


def _why_not(name: str) -> str:
    if name.startswith(("float8", "float6", "float4")):
        return "the 8-, 6- and 4-bit float types are out of plugnn's scope (no plugnn element type holds them)"
    if name in ("int4", "uint4", "int2", "uint2"):
        return "4- and 2-bit integers are out of plugnn's scope (no plugnn element type holds them)"
    return "plugnn tensors hold numeric and bool element types only"


# The opset from which an operator's input takes a type (the types of its first version need none).
_TYPES_SINCE: dict[tuple[str, str], dict[DataType, int]] = {
    ("QuantizeLinear", "x"): {T.FLOAT16: 19, T.BFLOAT16: 19},
    ("QuantizeLinear", "y_scale"): {T.FLOAT16: 19, T.BFLOAT16: 19, T.INT32: 23},
    ("QuantizeLinear", "y_zero_point"): {T.INT16: 21, T.UINT16: 21},
    ("DequantizeLinear", "x"): {T.INT16: 21, T.UINT16: 21},
    ("DequantizeLinear", "x_scale"): {T.FLOAT16: 19, T.BFLOAT16: 19},
    ("DequantizeLinear", "x_zero_point"): {T.INT16: 21, T.UINT16: 21},
    ("QLinearMatMul", "a_scale"): {T.FLOAT16: 21, T.BFLOAT16: 21},
}


def _type(ctx: NodeContext, i: int, what: str, allowed: frozenset[DataType]) -> DataType:
    """Input i's plugnn element type, which must be in `allowed` (at the model's opset); a type
    plugnn has not is refused naming it and why."""
    value = ctx.value(i)
    if isinstance(value, Tensor):
        dtype = value.dtype
    else:
        raw = np.dtype(value.dtype) if isinstance(value, PendingInput) else np.asarray(value).dtype
        try:
            dtype = DataType.from_any(raw)
        except ValueError:
            raise ctx.error(f"input {i} ({what}) {ctx.input_name(i)!r} is {raw.name}: {_why_not(raw.name)}") from None
    if dtype not in allowed:
        raise ctx.error(f"input {i} ({what}) is {dtype.numpy_name}; {ctx.op_type} takes "
                        f"{numeric.type_names(allowed)}")
    since = _TYPES_SINCE.get((ctx.op_type, what), {}).get(dtype, 0)
    if ctx.opset < since:
        raise ctx.error(f"input {i} ({what}) is {dtype.numpy_name}, which {ctx.op_type} takes from opset {since}; "
                        f"the model's opset is {ctx.opset}")
    return dtype


def _attribute_type(ctx: NodeContext, name: str, allowed: frozenset[DataType]) -> DataType | None:
    """An element-type attribute (output_dtype, precision) as a plugnn type in `allowed`, or None."""
    if not ctx.has(name):
        return None
    elem = int(ctx.attr(name))
    label = type_name(elem)
    try:
        dtype = DataType.from_any(np_dtype(elem))
    except ValueError:
        raise ctx.error(f"attribute {name!r} = {elem} is {label}: {_why_not(label)}") from None
    if dtype not in allowed:
        raise ctx.unsupported_value(name, f"{elem} ({label})", numeric.type_names(allowed))
    return dtype


def _check_opset(ctx: NodeContext) -> None:
    for name, since in _SINCE.items():
        if ctx.has(name) and ctx.opset < since:
            raise ctx.error(f"attribute {name!r} is {ctx.op_type}'s from opset {since}; the model's opset is "
                            f"{ctx.opset}")


def _granularity(ctx: NodeContext) -> tuple[int, int]:
    """axis and block_size (>= 0)."""
    _check_opset(ctx)
    block_size = int(ctx.attr("block_size", 0))
    if block_size < 0:
        raise ctx.unsupported_value("block_size", block_size, "0 (per tensor or per axis) or a block size >= 1")
    return int(ctx.attr("axis", 1)), block_size


def _value(ctx: NodeContext, i: int, what: str) -> Any:
    """Input i: its array when it is known at import, else its tensor."""
    return ctx.value(i) if ctx.is_const(i) else ctx.tensor(i, what)


def _zero_like_scale(ctx: NodeContext, zero: Any, scale: Any, role: str) -> Any:
    """A one-element zero point in the shape of a one-element scale when they differ ([] and [1]:
    onnxruntime's quantizer writes such pairs for biases, and onnxruntime accepts them)."""
    z_shape, s_shape = tuple(zero.shape), tuple(scale.shape)
    if z_shape == s_shape or int(np.prod(z_shape)) != 1 or int(np.prod(s_shape)) != 1 or len(s_shape) > 1:
        return zero
    if isinstance(zero, Tensor):
        return ctx.network.add_reshape(zero, s_shape, name=ctx.aux(role))
    return np.asarray(zero).reshape(s_shape)


# ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ---------------------------------------


def _quantize_setup(ctx: NodeContext) -> tuple[int, int, DataType, DataType | None, bool]:
    """axis, block_size, the output type, the division's precision (None: the builder's
    default, NumPy's promotion) and whether x and y_scale are first cast to int32 (precision
    int32, as ONNX's reference's astype)."""
    axis, block_size = _granularity(ctx)
    saturate = int(ctx.attr("saturate", 1))
    if saturate not in (0, 1):
        raise ctx.unsupported_value("saturate", saturate, "0, 1 (it applies to float8 outputs only)")
    _type(ctx, 0, "x", HIGH_PRECISION)
    _type(ctx, 1, "y_scale", HIGH_PRECISION)
    output = _attribute_type(ctx, "output_dtype", QUANTIZED)
    if ctx.has_input(2):
        zero = _type(ctx, 2, "y_zero_point", QUANTIZED)
        if output is not None and output is not zero:
            raise ctx.error(f"attribute 'output_dtype' is {output.numpy_name} but y_zero_point is {zero.numpy_name}; "
                            f"they must agree")
        output = zero
    precision = _attribute_type(ctx, "precision", HIGH_PRECISION | {T.FLOAT64})
    truncate = precision is T.INT32
    return axis, block_size, output or T.UINT8, T.FLOAT64 if truncate else precision, truncate


def _as_int32(ctx: NodeContext, value: Any, role: str) -> Any:
    """x or y_scale cast to int32 (truncated toward zero) for precision int32."""
    if isinstance(value, Tensor):
        return value if value.dtype is T.INT32 else ctx.network.add_cast(value, T.INT32, name=ctx.aux(role))
    return numeric.cast(np.asarray(value), np.dtype(np.int32))


def _fold_quantize(ctx: NodeContext) -> list[Any]:
    axis, block_size, output, precision, truncate = _quantize_setup(ctx)
    x, scale = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if truncate:
        x, scale = _as_int32(ctx, x, "x"), _as_int32(ctx, scale, "y_scale")
    zero = np.asarray(ctx.value(2)) if ctx.has_input(2) else np.zeros(scale.shape, output.numpy_dtype)
    zero = _zero_like_scale(ctx, zero, scale, "y_zero_point")
    _check_fold_shapes(ctx, x, scale, zero, axis, block_size)
    chosen = precision or shapes.promote_float(DataType.from_any(x.dtype), DataType.from_any(scale.dtype))
    return [qn.quantize(x, scale, zero, axis, block_size, chosen)]


@op("QuantizeLinear", tuple(_SINCE), fold=_fold_quantize)
def quantize_linear(ctx: NodeContext) -> list[Any]:
    axis, block_size, output, precision, truncate = _quantize_setup(ctx)
    x, scale = _value(ctx, 0, "x"), _value(ctx, 1, "y_scale")
    if truncate:
        x, scale = _as_int32(ctx, x, "x_int32"), _as_int32(ctx, scale, "y_scale_int32")
    zero = _zero_like_scale(ctx, _value(ctx, 2, "y_zero_point"), scale, "y_zero_point") if ctx.has_input(2) else None
    return [ctx.network.add_quantize_linear(x, scale, zero, axis=axis, block_size=block_size, dtype=output,
                                            precision=precision, name=ctx.name())]


def _dequantize_setup(ctx: NodeContext) -> tuple[int, int, DataType]:
    """axis, block_size and the output type."""
    axis, block_size = _granularity(ctx)
    x = _type(ctx, 0, "x", QUANTIZED | {T.INT32})
    scale = _type(ctx, 1, "x_scale", SCALES)
    if ctx.has_input(2):
        zero = _type(ctx, 2, "x_zero_point", QUANTIZED | {T.INT32})
        if zero is not x:
            raise ctx.error(f"input 2 (x_zero_point) is {zero.numpy_name} but x is {x.numpy_name}; they have one type")
    return axis, block_size, _attribute_type(ctx, "output_dtype", SCALES) or scale


def _fold_dequantize(ctx: NodeContext) -> list[Any]:
    axis, block_size, output = _dequantize_setup(ctx)
    x, scale = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    zero = np.asarray(ctx.value(2)) if ctx.has_input(2) else np.zeros(scale.shape, x.dtype)
    zero = _zero_like_scale(ctx, zero, scale, "x_zero_point")
    _check_fold_shapes(ctx, x, scale, zero, axis, block_size)
    precision = shapes.promote_float(shapes.promote_float(T.FLOAT32, DataType.from_any(x.dtype)),
                                     DataType.from_any(scale.dtype))
    return [qn.dequantize(x, scale, zero, axis, block_size, precision, output)]


@op("DequantizeLinear", ("axis", "block_size", "output_dtype"), fold=_fold_dequantize)
def dequantize_linear(ctx: NodeContext) -> list[Any]:
    axis, block_size, output = _dequantize_setup(ctx)
    scale = _value(ctx, 1, "x_scale")
    zero = _zero_like_scale(ctx, _value(ctx, 2, "x_zero_point"), scale, "x_zero_point") if ctx.has_input(2) else None
    return [ctx.network.add_dequantize_linear(_value(ctx, 0, "x"), scale, zero, axis=axis,
                                              block_size=block_size, dtype=output, name=ctx.name())]


def _check_fold_shapes(ctx: NodeContext, x: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: int,
                       block_size: int) -> None:
    """The layer's shape rules for a fold (the same sentences as a layer would give)."""
    def info(a: np.ndarray) -> TensorInfo:
        return TensorInfo(a.shape, DataType.from_any(a.dtype))

    try:
        shapes.quantization_granularity(QuantizationDescriptor("quantize_linear", axis, block_size), info(x),
                                        info(scale), info(zero))
    except ValueError as exc:
        raise ctx.error(str(exc)) from None


def _fold_dynamic(ctx: NodeContext) -> list[Any]:
    _type(ctx, 0, "x", frozenset({T.FLOAT32}))
    return list(qn.dynamic_quantize(np.asarray(ctx.value(0))))


@op("DynamicQuantizeLinear", fold=_fold_dynamic)
def dynamic_quantize_linear(ctx: NodeContext) -> list[Any]:
    _type(ctx, 0, "x", frozenset({T.FLOAT32}))
    return list(ctx.network.add_dynamic_quantize_linear(ctx.tensor(0, "x"), name=ctx.name()))


# ---- ConvInteger, QLinearConv -----------------------------------------------------------------------

_CONV_ATTRIBUTES = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def _conv_geometry(ctx: NodeContext, x: int, w: int, op_: QuantizedOp, has_bias: bool
                   ) -> QuantizedConvolutionDescriptor:
    x_shape, w_shape = ctx.shape(x), ctx.shape(w)
    spatial = ops_conv._spatial_rank(ctx, len(x_shape), "x")
    kernel = ops_conv._kernel(ctx, w_shape, spatial)
    group = ops_conv._group(ctx)
    strides, dilations, begins, ends = ops_conv._window_params(ctx, tuple(x_shape[2:]), kernel)
    return QuantizedConvolutionDescriptor(op_, tuple(strides), tuple(begins), tuple(ends), tuple(dilations), group,
                                          has_bias)


def _zero(ctx: NodeContext, i: int, what: str, like: DataType) -> Any:
    """An optional zero point: its value, or a constant 0 of `like`."""
    if ctx.has_input(i):
        return _value(ctx, i, what)
    return np.zeros((), like.numpy_dtype)


def _integer_types(ctx: NodeContext, operands: tuple[tuple[int, str], tuple[int, str]],
                   zeros: tuple[tuple[int, str], tuple[int, str]]) -> tuple[DataType, DataType]:
    """The 8-bit types of the two operands, their zero points (when given) of the same types."""
    types = []
    for (i, what), (zi, zwhat) in zip(operands, zeros):
        dtype = _type(ctx, i, what, EIGHT_BIT)
        if ctx.has_input(zi) and _type(ctx, zi, zwhat, EIGHT_BIT) is not dtype:
            raise ctx.error(f"input {zi} ({zwhat}) is {_type(ctx, zi, zwhat, EIGHT_BIT).numpy_name} but {what} is "
                            f"{dtype.numpy_name}; they have one type")
        types.append(dtype)
    return types[0], types[1]


def _conv_integer_inputs(ctx: NodeContext) -> list[Any]:
    xt, wt = _integer_types(ctx, ((0, "x"), (1, "w")), ((2, "x_zero_point"), (3, "w_zero_point")))
    return [_value(ctx, 0, "x"), _zero(ctx, 2, "x_zero_point", xt), _value(ctx, 1, "w"),
            _zero(ctx, 3, "w_zero_point", wt)]


def _fold_conv_integer(ctx: NodeContext) -> list[Any]:
    desc = _conv_geometry(ctx, 0, 1, QuantizedOp.INTEGER, False)
    x, xz, w, wz = (np.asarray(v) for v in _conv_integer_inputs(ctx))
    return [qn.wrap_int32(_fold_conv_sums(x, xz, w, wz, desc))]


def _fold_conv_sums(x: np.ndarray, xz: np.ndarray, w: np.ndarray, wz: np.ndarray,
                    desc: QuantizedConvolutionDescriptor) -> np.ndarray:
    wz = wz.astype(np.int64).reshape((-1,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wz.astype(np.int64).reshape(())
    return qn.convolve(x.astype(np.int64) - xz.astype(np.int64).reshape(()), w.astype(np.int64) - wz, desc.strides,
                       desc.pads_begin, desc.pads_end, desc.dilations, desc.groups)


@op("ConvInteger", _CONV_ATTRIBUTES, fold=_fold_conv_integer)
def conv_integer(ctx: NodeContext) -> list[Any]:
    desc = _conv_geometry(ctx, 0, 1, QuantizedOp.INTEGER, False)
    return [ctx.network.add_quantized_convolution(_conv_integer_inputs(ctx), desc, name=ctx.name())]


def _qlinear_types(ctx: NodeContext, names: tuple[str, str], scales: frozenset[DataType]) -> None:
    """QLinear*'s element types: 8-bit operands and zero points, one type of `scales` for the scales."""
    a, b = names
    _integer_types(ctx, ((0, a), (3, b)), ((2, f"{a}_zero_point"), (5, f"{b}_zero_point")))
    _type(ctx, 7, "y_zero_point", EIGHT_BIT)
    scale = _type(ctx, 1, f"{a}_scale", scales)
    for i, what in ((4, f"{b}_scale"), (6, "y_scale")):
        if _type(ctx, i, what, scales) is not scale:
            raise ctx.error(f"input {i} ({what}) is {_type(ctx, i, what, SCALES).numpy_name} but input 1 "
                            f"({a}_scale) is {scale.numpy_name}; the scales have one type")


_QLINEAR_CONV_NAMES = ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B")


def _qlinear_conv_inputs(ctx: NodeContext) -> list[Any]:
    if ctx.num_inputs < 8 or not all(ctx.has_input(i) for i in range(8)):
        raise ctx.error("QLinearConv takes 8 inputs (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, "
                        "y_zero_point) and an optional bias B")
    _qlinear_types(ctx, ("x", "w"), frozenset({T.FLOAT32}))
    if ctx.has_input(8):
        _type(ctx, 8, "B", frozenset({T.INT32}))
    return [_value(ctx, i, name) for i, name in enumerate(_QLINEAR_CONV_NAMES) if ctx.has_input(i)]


def _fold_qlinear_conv(ctx: NodeContext) -> list[Any]:
    values = [np.asarray(v) for v in _qlinear_conv_inputs(ctx)]
    desc = _conv_geometry(ctx, 0, 3, QuantizedOp.QLINEAR, len(values) == 9)
    x, xs, xz, w, ws, wz, ys, yz = values[:8]
    acc = qn.wrap_int32(_fold_conv_sums(x, xz, w, wz, desc))
    channels = (1, -1) + (1,) * (x.ndim - 2)
    if len(values) == 9:
        acc = qn.wrap_int32(acc.astype(np.int64) + values[8].astype(np.int64).reshape(channels))
    m = qn.multiplier(xs.reshape(()), ws.reshape(channels) if ws.size > 1 else ws.reshape(()), ys)
    return [qn.requantize(acc, m, yz)]


@op("QLinearConv", _CONV_ATTRIBUTES, fold=_fold_qlinear_conv)
def qlinear_conv(ctx: NodeContext) -> list[Any]:
    inputs = _qlinear_conv_inputs(ctx)
    desc = _conv_geometry(ctx, 0, 3, QuantizedOp.QLINEAR, len(inputs) == 9)
    return [ctx.network.add_quantized_convolution(inputs, desc, name=ctx.name())]


# ---- MatMulInteger, QLinearMatMul -------------------------------------------------------------------


def _per_row(ctx: NodeContext, value: Any, a_rank: int, role: str) -> Any:
    """A parameter of a given as ONNX's per-row [M] vector (a of rank >= 2) as [M, 1]."""
    shape = tuple(value.shape)
    if a_rank < 2 or len(shape) != 1 or shape[0] == 1:
        return value
    if isinstance(value, Tensor):
        return ctx.network.add_reshape(value, (shape[0], 1), name=ctx.aux(role))
    return np.asarray(value).reshape(shape[0], 1)


def _matmul_integer_inputs(ctx: NodeContext) -> list[Any]:
    at, bt = _integer_types(ctx, ((0, "A"), (1, "B")), ((2, "a_zero_point"), (3, "b_zero_point")))
    a_rank = len(ctx.shape(0))
    return [_value(ctx, 0, "A"), _per_row(ctx, _zero(ctx, 2, "a_zero_point", at), a_rank, "a_zero_point"),
            _value(ctx, 1, "B"), _zero(ctx, 3, "b_zero_point", bt)]


def _fold_matmul_sums(a: np.ndarray, az: np.ndarray, b: np.ndarray, bz: np.ndarray) -> np.ndarray:
    return qn.wrap_int32(np.matmul(a.astype(np.int64) - az.astype(np.int64), b.astype(np.int64) - bz.astype(np.int64)))


def _fold_matmul_integer(ctx: NodeContext) -> list[Any]:
    a, az, b, bz = (np.asarray(v) for v in _matmul_integer_inputs(ctx))
    return [_fold_matmul_sums(a, az, b, bz)]


@op("MatMulInteger", fold=_fold_matmul_integer)
def matmul_integer(ctx: NodeContext) -> list[Any]:
    return [ctx.network.add_quantized_matmul(_matmul_integer_inputs(ctx), "integer", name=ctx.name())]


_QLINEAR_MATMUL_NAMES = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")


def _qlinear_matmul_inputs(ctx: NodeContext) -> list[Any]:
    if ctx.num_inputs != 8 or not all(ctx.has_input(i) for i in range(8)):
        raise ctx.error("QLinearMatMul takes 8 inputs (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, "
                        "y_zero_point)")
    _qlinear_types(ctx, ("a", "b"), SCALES)
    values = [_value(ctx, i, name) for i, name in enumerate(_QLINEAR_MATMUL_NAMES)]
    a_rank = len(ctx.shape(0))
    values[1] = _per_row(ctx, values[1], a_rank, "a_scale")
    values[2] = _per_row(ctx, values[2], a_rank, "a_zero_point")
    return values


def _row_or_column(param: np.ndarray, operand: np.ndarray, row: bool) -> np.ndarray:
    """A per-row (a's) or per-column (b's) parameter as [batch..., M] or [batch..., N] (rank-1
    operands: one value)."""
    full = np.broadcast_to(param, operand.shape)
    if operand.ndim == 1:
        return full[0]
    return full[..., :, 0] if row else full[..., 0, :]


def _fold_qlinear_matmul(ctx: NodeContext) -> list[Any]:
    a, a_scale, az, b, b_scale, bz, ys, yz = (np.asarray(v) for v in _qlinear_matmul_inputs(ctx))
    acc = _fold_matmul_sums(a, az, b, bz)
    rows, columns = _row_or_column(a_scale, a, True), _row_or_column(b_scale, b, False)
    if a.ndim >= 2 and b.ndim >= 2:
        rows, columns = rows[..., :, None], columns[..., None, :]
    return [qn.requantize(acc, qn.multiplier(rows, columns, ys), yz)]


@op("QLinearMatMul", fold=_fold_qlinear_matmul)
def qlinear_matmul(ctx: NodeContext) -> list[Any]:
    return [ctx.network.add_quantized_matmul(_qlinear_matmul_inputs(ctx), "qlinear", name=ctx.name())]
