"""Shape and data-movement operators: Reshape, Flatten, Transpose, Concat, Squeeze,
Unsqueeze, Identity, Dropout, Constant, ConstantOfShape, Shape, Cast, CastLike (Gather and
Slice are in ops_indexing.py and ops_movement.py).

Cast and CastLike take every pair of plugnn's element types: a CAST layer for tensors computed
at run time (ONNX Cast's rules, backend_api.h's pn_cast_desc), a NumPy fold for values known at
import; the float8/float6/float4, int4/int2 types are refused with the reason. A cast to or from
string is a runtime step of the dynamic path (plugnn.dynamic.strings)."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx import folding, numeric
from plugnn.onnx.context import NodeContext, PendingInput, np_dtype, type_name
from plugnn.onnx.ops_control import needs_runtime
from plugnn.onnx.registry import op
from plugnn.symbolic import any_symbolic, hints_of
from plugnn.tensor import DataType


def _dtype_of(value: Any) -> np.dtype:
    if isinstance(value, Tensor):
        return np.dtype(value.dtype.numpy_name)
    return np.dtype(value.dtype)


# ---- Reshape, Flatten, Transpose, Concat, Squeeze, Unsqueeze ------------------------------------


def _fold_reshape(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [data.reshape(folding.reshape_target(ctx, data.shape))]


@op("Reshape", ("allowzero",), fold=_fold_reshape)
def reshape(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "data")
    return [ctx.network.add_reshape(x, folding.reshape_target(ctx, x.shape), name=ctx.name())]


def _fold_flatten(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [data.reshape(folding.flatten_shape(ctx, data.shape))]


@op("Flatten", ("axis",), fold=_fold_flatten)
def flatten(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0)
    return [ctx.network.add_reshape(x, folding.flatten_shape(ctx, x.shape), name=ctx.name())]


def _perm(ctx: NodeContext, rank: int) -> list[int]:
    perm = ctx.ints("perm")
    if perm is None:
        return list(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise ctx.unsupported_value("perm", perm, f"a permutation of 0..{rank - 1} (the input rank is {rank})")
    return perm


def _fold_transpose(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [np.ascontiguousarray(np.transpose(data, _perm(ctx, data.ndim)))]


@op("Transpose", ("perm",), fold=_fold_transpose)
def transpose(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0)
    return [ctx.network.add_transpose(x, _perm(ctx, len(x.shape)), name=ctx.name())]


def _concat_axis(ctx: NodeContext, rank: int) -> int:
    if not ctx.has("axis"):
        raise ctx.error("attribute 'axis' is required")
    axis = int(ctx.attr("axis"))
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis


def _fold_concat(ctx: NodeContext) -> list[Any]:
    arrays = [ctx.value(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    axis = _concat_axis(ctx, arrays[0].ndim)
    try:
        return [np.concatenate(arrays, axis=axis)]
    except ValueError as exc:
        raise ctx.error(f"cannot concatenate {[list(a.shape) for a in arrays]}: {exc}") from None


@op("Concat", ("axis",), fold=_fold_concat)
def concat(ctx: NodeContext) -> list[Any]:
    tensors = [ctx.tensor(i, f"input{i}") for i in range(ctx.num_inputs) if ctx.has_input(i)]
    axis = _concat_axis(ctx, len(tensors[0].shape))
    return [ctx.network.add_concat(tensors, axis, name=ctx.name())]


def _fold_squeeze(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [data.reshape(folding.squeeze_shape(ctx, data.shape, folding.axes_of(ctx, 13, required=False)))]


@op("Squeeze", ("axes",), fold=_fold_squeeze)
def squeeze(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "data")
    shape = folding.squeeze_shape(ctx, x.shape, folding.axes_of(ctx, 13, required=False))
    return [ctx.network.add_reshape(x, shape, name=ctx.name())]


def _fold_unsqueeze(ctx: NodeContext) -> list[Any]:
    data = ctx.value(0)
    return [data.reshape(folding.unsqueeze_shape(ctx, data.shape, folding.axes_of(ctx, 13)))]


@op("Unsqueeze", ("axes",), fold=_fold_unsqueeze)
def unsqueeze(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "data")
    shape = folding.unsqueeze_shape(ctx, x.shape, folding.axes_of(ctx, 13))
    return [ctx.network.add_reshape(x, shape, name=ctx.name())]


# ---- Identity, Dropout ------------------------------------------------------------------------


@op("Identity", (), fold=lambda ctx: [ctx.value(0)])
def identity(ctx: NodeContext) -> list[Any]:
    return [ctx.network.add_identity(ctx.tensor(0), name=ctx.name())]


def _dropout_checks(ctx: NodeContext) -> None:
    """Dropout as plugnn runs it: inference form, or training form with ratio 0 (both the identity)."""
    if ctx.opset >= 12 and ctx.has_input(1):
        ratio = ctx.value(1)  # ignored at inference, but it must be a float tensor
        if _dtype_of(ratio).kind != "f":
            raise ctx.error(f"ratio has element type {_dtype_of(ratio)}")
    if ctx.opset >= 12 and ctx.has_input(2):
        training = ctx.const(2, "training_mode")
        if bool(np.asarray(training).reshape(-1)[0]):
            ratio = float(np.asarray(ctx.const(1, "ratio")).reshape(-1)[0]) if ctx.has_input(1) else 0.5
            if ratio != 0.0:
                raise ctx.error(f"training_mode is true with ratio {ratio}: training dropout zeroes elements at "
                                f"random; plugnn runs Dropout in inference form, or in training form with ratio 0 "
                                f"(both the identity with a mask of ones)")


def _dropout_mask(ctx: NodeContext, x: Any) -> np.ndarray | None:
    """The mask output (ones: nothing dropped), bool from opset 10, the data's type before."""
    if not ctx.output_used(1):
        return None
    dtype = np.dtype(np.bool_) if ctx.opset >= 10 else _dtype_of(x)
    return np.ones(tuple(x.shape), dtype)


def _fold_dropout(ctx: NodeContext) -> list[Any]:
    _dropout_checks(ctx)
    return [ctx.value(0), _dropout_mask(ctx, ctx.value(0))]


@op("Dropout", ("ratio", "seed"), fold=_fold_dropout)
def dropout(ctx: NodeContext) -> list[Any]:
    _dropout_checks(ctx)
    x = ctx.tensor(0, "data")
    return [ctx.network.add_dropout(x, name=ctx.name()), _dropout_mask(ctx, x)]


# ---- Constant, ConstantOfShape, Shape ----------------------------------------------------------

_CONSTANT_FORMS = ("value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                   "value_strings", "sparse_value")


@op("Constant", _CONSTANT_FORMS)
def constant(ctx: NodeContext) -> list[Any]:
    given = [form for form in _CONSTANT_FORMS if ctx.has(form)]
    if len(given) != 1:
        raise ctx.error(f"exactly one of {', '.join(_CONSTANT_FORMS)} must be set, got {given or 'none'}")
    form = given[0]
    if form == "sparse_value":
        raise ctx.unsupported_value(form, "...", "value, value_float(s), value_int(s), value_string(s) (no sparse)")
    value = ctx.attr(form)
    if form.startswith("value_string"):  # a string tensor: a run-time value of the dynamic path
        texts = [v.decode() if isinstance(v, bytes) else str(v) for v in (value if form == "value_strings"
                                                                           else [value])]
        array = np.empty(len(texts), object)
        array[:] = texts
        return [array if form == "value_strings" else array.reshape(())]
    if form == "value":
        return [np.asarray(value)]
    if form.startswith("value_float"):
        return [np.asarray(value, np.float32)]
    return [np.asarray(value, np.int64)]


@op("ConstantOfShape", ("value",))
def constant_of_shape(ctx: NodeContext) -> list[Any]:
    shape = ctx.shape_values(0, "shape")
    if any(s < 0 for s in shape):
        raise ctx.error(f"shape {shape} has a negative dimension")
    fill = ctx.attr("value")
    fill = np.zeros(1, np.float32) if fill is None else np.asarray(fill)
    if fill.size != 1:
        raise ctx.unsupported_value("value", fill.tolist(), "a one-element tensor")
    if any_symbolic(shape):  # a shape that follows the symbols: the fill value expanded at run time
        one = ctx.array_tensor(fill.reshape((1,) * len(shape)), "value")
        return [ctx.network.add_expand(one, shape, name=ctx.name())]
    return [np.full(shape, fill.reshape(-1)[0], fill.dtype)]


@op("Shape", ("start", "end"))
def shape(ctx: NodeContext) -> list[Any]:
    for name in ("start", "end"):
        if ctx.has(name) and ctx.opset < 15:
            raise ctx.error(f"attribute {name!r} is Shape's from opset 15 (the model's opset is {ctx.opset})")
    dims = list(ctx.value(0).shape)
    rank = len(dims)
    start = int(ctx.attr("start", 0))
    end = int(ctx.attr("end", rank))
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    picked = dims[start:end]
    if any_symbolic(picked):  # a symbolic import: the hints, and the dims as expressions beside them
        ctx.set_sym(0, np.asarray(picked, dtype=object))
    return [np.asarray(hints_of(picked), np.int64)]


# ---- Cast, CastLike -------------------------------------------------------------------------------


def _target(ctx: NodeContext, elem_type: int, where: str) -> DataType:
    """The plugnn element type of an ONNX element type, or an error naming why there is none."""
    name = type_name(elem_type)
    try:
        return DataType.from_any(np_dtype(elem_type))
    except ValueError:
        pass
    if name == "string":
        raise needs_runtime(ctx, f"{where} is string; string tensors are run-time values, and the runtime casts "
                                 f"to and from them")
    if name.startswith(("float8", "float4", "float6")):
        why = "the 8-, 6- and 4-bit float types are out of plugnn's scope (no plugnn element type holds them)"
    elif name in ("int4", "uint4", "int2", "uint2"):
        why = "4- and 2-bit integers are out of plugnn's scope (no plugnn element type holds them)"
    else:
        why = "plugnn tensors hold numeric and bool element types only"
    raise ctx.error(f"{where} is {name}: {why}")


def _cast_attributes(ctx: NodeContext) -> None:
    saturate = int(ctx.attr("saturate", 1))
    if saturate not in (0, 1):
        raise ctx.unsupported_value("saturate", saturate, "0, 1")
    round_mode = ctx.attr("round_mode", "up")
    if round_mode not in ("up", "down", "nearest"):
        raise ctx.unsupported_value("round_mode", round_mode, "'up', 'down', 'nearest'")
    # Both apply to float8 targets only (ONNX), which plugnn has none of.


def _cast_target(ctx: NodeContext) -> DataType:
    _cast_attributes(ctx)
    to = ctx.attr("to")
    if to is None:
        raise ctx.error("attribute 'to' is required")
    return _target(ctx, int(to), f"attribute 'to' = {int(to)}")


def _like_target(ctx: NodeContext) -> DataType:
    _cast_attributes(ctx)
    value = ctx.value(1)
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (np.ndarray, PendingInput)) and np.dtype(value.dtype) == np.dtype(object):
        raise needs_runtime(ctx, f"input 1 (target_type) {ctx.input_name(1)!r} is a string tensor, a run-time "
                                 f"value; the runtime casts to and from strings")
    if isinstance(value, np.ndarray):
        try:
            return DataType.from_any(value.dtype)
        except ValueError:
            raise ctx.error(f"input 1 (target_type) {ctx.input_name(1)!r} has element type {value.dtype}, which "
                            f"plugnn tensors cannot hold") from None
    raise ctx.error(f"input 1 (target_type) {ctx.input_name(1)!r} is a graph input of element type {value.dtype}, "
                    f"which plugnn tensors cannot hold")


def _fold_cast(ctx: NodeContext, target: DataType) -> list[Any]:
    value = np.asarray(ctx.value(0))
    if value.dtype == np.dtype(object):
        raise needs_runtime(ctx, f"input 0 (input) {ctx.input_name(0)!r} is a string tensor, a run-time value; the "
                                 f"runtime casts to and from strings")
    try:
        DataType.from_any(value.dtype)
    except ValueError:
        raise ctx.error(f"input 0 (input) {ctx.input_name(0)!r} has element type {value.dtype}; plugnn casts "
                        f"numeric and bool values only") from None
    return [numeric.cast(value, target.numpy_dtype)]


def _cast(ctx: NodeContext, target: DataType) -> list[Any]:
    x = ctx.tensor(0, "input")
    if x.dtype == target:
        return [ctx.network.add_identity(x, name=ctx.name())]
    return [ctx.network.add_cast(x, target, name=ctx.name())]


@op("Cast", ("to", "saturate", "round_mode"), fold=lambda ctx: _fold_cast(ctx, _cast_target(ctx)))
def cast(ctx: NodeContext) -> list[Any]:
    return _cast(ctx, _cast_target(ctx))


@op("CastLike", ("saturate", "round_mode"), fold=lambda ctx: _fold_cast(ctx, _like_target(ctx)))
def cast_like(ctx: NodeContext) -> list[Any]:
    return _cast(ctx, _like_target(ctx))
