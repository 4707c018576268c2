"""Normalizations: LayerNormalization (17), RMSNormalization (23), GroupNormalization (18, 21),
InstanceNormalization (7 on), LpNormalization (7 on), MeanVarianceNormalization (9, 13).

- LayerNormalization and RMSNormalization: one NORMALIZATION layer (LAYER, RMS) over x's dims
  from `axis` on. A Scale or B broadcasting to those dims maps as is (leading size-1 dims
  dropped); one that broadcasts to x only through the dims before `axis` is applied by a
  broadcast multiplication and addition after the normalization. LayerNormalization's optional
  Mean and InvStdDev outputs (of the stash type), when used, are computed by their own layers:
  a REDUCE MEAN, and 1 / sqrt(REDUCE SUM_SQUARE(x - mean) / n + epsilon). RMSNormalization's
  Scale may have another type than X (ONNX's V): X is then cast to it first.
- GroupNormalization: one NORMALIZATION GROUP layer. Opset 18 gives Scale and B per group
  ([num_groups]; each channel takes its group's value), opset 21 per channel ([C]).
- InstanceNormalization: GROUP with num_groups = C.
- LpNormalization: one NORMALIZATION LP layer (p = 1 or 2; a zero norm gives 0).
- MeanVarianceNormalization: its function body, (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9)
  over `axes`, from REDUCE MEAN, a subtraction, REDUCE L2, a LINEAR activation (1 / sqrt(n),
  + 1e-9) and a division. The variance is taken of x - mean, as the header's (the function's
  E[x^2] - E[x]^2 is the same value computed with more rounding).

Every node whose inputs are all known at import time is folded with NumPy (float64, rounded once
to the output type).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from plugnn import shapes
from plugnn.network import Tensor
from plugnn.onnx import folding
from plugnn.onnx.context import NodeContext, np_dtype, type_name
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

_FLOAT_TYPES = ("float16", "float32", "float64", "bfloat16")


def _numpy_dtype(value: Any) -> np.dtype:
    return np.dtype(value.dtype if isinstance(value, np.ndarray) else value.dtype.numpy_dtype)


def _float_input(ctx: NodeContext, i: int, what: str) -> np.dtype:
    dtype = _numpy_dtype(ctx.value(i))
    if dtype.name not in _FLOAT_TYPES:
        raise ctx.error(f"input {i} ({what}) has element type {dtype.name}; {ctx.op_type} takes float types")
    return dtype


def _epsilon(ctx: NodeContext, default: float = 1e-5) -> float:
    eps = float(ctx.attr("epsilon", default))
    if not (math.isfinite(eps) and eps >= 0):
        raise ctx.unsupported_value("epsilon", eps, "a finite number >= 0")
    return eps


def _axis(ctx: NodeContext, rank: int, default: int = -1) -> int:
    axis = int(ctx.attr("axis", default))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank}")
    return axis % rank


def _stash_type(ctx: NodeContext) -> np.dtype:
    stash = int(ctx.attr("stash_type", 1))
    dtype = np_dtype(stash)
    if dtype.name not in _FLOAT_TYPES:
        raise ctx.unsupported_value("stash_type", f"{stash} ({type_name(stash)})",
                                    "a float type: 1 (float), 10 (float16), 11 (double), 16 (bfloat16)")
    return dtype


# ---- NumPy evaluation (folds) ------------------------------------------------------------------------


def _moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axes, keepdims=True)
    return mean, ((x - mean) ** 2).mean(axes, keepdims=True)


def _numpy_trailing(x: np.ndarray, axis: int, eps: float, centered: bool) -> tuple[np.ndarray, ...]:
    """(normalized x, mean, 1 / sqrt(var + eps)) over dims [axis, rank), in float64."""
    wide = x.astype(np.float64)
    axes = tuple(range(axis, x.ndim))
    if centered:
        mean, var = _moments(wide, axes)
    else:
        mean, var = np.zeros_like(wide.sum(axes, keepdims=True)), (wide * wide).mean(axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    return (wide - mean) * inv, mean, inv


# ---- Scale and bias ---------------------------------------------------------------------------------


def _fits_trailing(shape: tuple[int, ...], normalized: tuple[int, ...]) -> tuple[int, ...] | None:
    """`shape` without its leading size-1 dims when it broadcasts to `normalized`, else None."""
    trimmed = tuple(shape)
    while len(trimmed) > len(normalized) and trimmed[0] == 1:
        trimmed = trimmed[1:]
    try:
        return trimmed if len(trimmed) <= len(normalized) and \
            shapes.broadcast_shapes(trimmed, normalized) == normalized else None
    except ValueError:
        return None


def _parameter(ctx: NodeContext, i: int, what: str, x_shape: tuple[int, ...], axis: int,
               dtype: np.dtype) -> tuple[Any, bool]:
    """Input i as a NORMALIZATION input (True) or, when it broadcasts to x only through the dims
    before axis, as is for a multiplication or addition after it (False)."""
    value = ctx.value(i)
    if _numpy_dtype(value) != dtype:
        raise ctx.error(f"input {i} ({what}) has element type {_numpy_dtype(value).name}, input 0 (X) "
                        f"{dtype.name}; they must be the same")
    shape = tuple(value.shape)
    try:
        if shapes.broadcast_shapes(shape, x_shape) != x_shape:
            raise ValueError
    except ValueError:
        raise ctx.error(f"input {i} ({what}) of shape {list(shape)} does not broadcast to X's shape "
                        f"{list(x_shape)}") from None
    trimmed = _fits_trailing(shape, x_shape[axis:])
    if trimmed is None:
        return ctx.tensor(i, what), False
    if trimmed == shape:
        return ctx.tensor(i, what), True
    if isinstance(value, np.ndarray):
        return ctx.array_tensor(value.reshape(trimmed), what.lower()), True
    return ctx.network.add_reshape(ctx.tensor(i, what), trimmed, name=ctx.aux(f"{what.lower()}_trimmed")), True


def _affine_trailing(ctx: NodeContext, kind: str, x: Tensor, axis: int, eps: float, scale_index: int,
                     bias_index: int | None) -> Tensor:
    """NORMALIZATION `kind` over dims [axis, rank) with Scale (and B) mapped as _parameter says."""
    dtype = x.dtype.numpy_dtype
    scale, scale_fits = _parameter(ctx, scale_index, "Scale", x.shape, axis, dtype)
    bias, bias_fits = (None, True) if bias_index is None else _parameter(ctx, bias_index, "B", x.shape, axis, dtype)
    if scale_fits and bias_fits:
        return ctx.network.add_normalization(kind, x, scale, bias, axis=axis, epsilon=eps, name=ctx.name())
    ones = ctx.array_tensor(np.ones((1,), dtype), "unit_scale", dtype=x.dtype)
    y = ctx.network.add_normalization(kind, x, ones, None, axis=axis, epsilon=eps, name=ctx.aux("normalized"))
    y = ctx.network.add_mul(y, scale, name=ctx.name() if bias is None else ctx.aux("scaled"))
    return y if bias is None else ctx.network.add_add(y, bias, name=ctx.name())


# ---- LayerNormalization --------------------------------------------------------------------------------


def _onnxruntime_output_type(ctx: NodeContext) -> np.dtype | None:
    """Below opset 17 LayerNormalization is onnxruntime's own operator, whose X and Scale may differ
    in type and whose Y has Scale's: that type when it differs from X's, else None."""
    if ctx.opset >= 17:
        return None
    scale = _float_input(ctx, 1, "Scale")
    return scale if scale != _float_input(ctx, 0, "X") else None


def _fold_layer_normalization(ctx: NodeContext) -> list[Any]:
    x = np.asarray(ctx.value(0))
    _float_input(ctx, 0, "X")
    wanted = _onnxruntime_output_type(ctx)
    x = x if wanted is None else x.astype(wanted)
    axis, eps, stash = _axis(ctx, x.ndim), _epsilon(ctx), _stash_type(ctx)
    normalized, mean, inv = _numpy_trailing(x, axis, eps, True)
    y = normalized * np.asarray(ctx.value(1), np.float64)
    if ctx.has_input(2):
        y = y + np.asarray(ctx.value(2), np.float64)
    return [y.astype(x.dtype), mean.astype(stash), inv.astype(stash)]


@op("LayerNormalization", ("axis", "epsilon", "stash_type"), fold=_fold_layer_normalization,
    unchecked_attributes_below=1 << 30)  # onnxruntime's LayerNormalization schema allows unchecked attributes
def layer_normalization(ctx: NodeContext) -> list[Any]:
    _float_input(ctx, 0, "X")
    x = ctx.tensor(0, "X")
    wanted = _onnxruntime_output_type(ctx)
    if wanted is not None:  # onnxruntime's operator: Y in Scale's type
        x = ctx.network.add_cast(x, DataType.from_any(wanted), name=ctx.aux("as_scale_type"))
    rank = len(x.shape)
    axis, eps, stash = _axis(ctx, rank), _epsilon(ctx), _stash_type(ctx)
    y = _affine_trailing(ctx, "layer", x, axis, eps, 1, 2 if ctx.has_input(2) else None)
    if not (ctx.output_used(1) or ctx.output_used(2)):
        return [y, None, None]
    return [y, *_layer_statistics(ctx, x, axis, eps, stash)]


def _layer_statistics(ctx: NodeContext, x: Tensor, axis: int, eps: float, stash: np.dtype) -> list[Any]:
    """LayerNormalization's Mean and InvStdDev, of the stash type, shaped x.shape[:axis] + 1s."""
    net = ctx.network
    stash_type = DataType.from_any(stash)
    xs = x if x.dtype is stash_type else net.add_cast(x, stash_type, name=ctx.aux("stash"))
    axes = tuple(range(axis, len(x.shape)))
    mean = net.add_reduce("mean", xs, axes, keep_dims=True, name=ctx.aux("mean"))
    if not ctx.output_used(2):
        return [mean, None]
    count = int(np.prod(x.shape[axis:], dtype=np.int64))
    deviation = net.add_sub(xs, mean, name=ctx.aux("deviation"))
    squares = net.add_reduce("sum_square", deviation, axes, keep_dims=True, name=ctx.aux("sum_square"))
    variance = net.add_activation(squares, "linear", 1.0 / count if count else math.nan, eps,
                                  name=ctx.aux("variance_plus_epsilon"))
    std = net.add_activation(variance, "sqrt", name=ctx.aux("std"))
    one = ctx.array_tensor(np.ones((), stash), "one", dtype=stash_type)
    return [mean, net.add_div(one, std, name=ctx.aux("inv_std_dev"))]


# ---- RMSNormalization ------------------------------------------------------------------------------------


def _fold_rms_normalization(ctx: NodeContext) -> list[Any]:
    x = np.asarray(ctx.value(0))
    _float_input(ctx, 0, "X")
    scale = np.asarray(ctx.value(1))
    axis, eps = _axis(ctx, x.ndim), _epsilon(ctx)
    _stash_type(ctx)
    normalized, _, _ = _numpy_trailing(x.astype(scale.dtype), axis, eps, False)
    return [(normalized * scale.astype(np.float64)).astype(scale.dtype)]


@op("RMSNormalization", ("axis", "epsilon", "stash_type"), fold=_fold_rms_normalization)
def rms_normalization(ctx: NodeContext) -> list[Any]:
    _float_input(ctx, 0, "X")
    scale_dtype = _float_input(ctx, 1, "scale")
    x = ctx.tensor(0, "X")
    axis, eps = _axis(ctx, len(x.shape)), _epsilon(ctx)
    _stash_type(ctx)
    target = DataType.from_any(scale_dtype)
    if x.dtype is not target:  # Y has the scale's type (ONNX's V)
        x = ctx.network.add_cast(x, target, name=ctx.aux("as_scale_type"))
    return [_affine_trailing(ctx, "rms", x, axis, eps, 1, None)]


# ---- GroupNormalization, InstanceNormalization -------------------------------------------------------------


def _per_channel(ctx: NodeContext, i: int, what: str, channels: int, groups: int, per_group: bool,
                 dtype: np.dtype) -> Any:
    """Input i ([C], or [num_groups] with per_group: each channel takes its group's value) as [C]."""
    value = ctx.value(i)
    if _numpy_dtype(value) != dtype:
        raise ctx.error(f"input {i} ({what}) has element type {_numpy_dtype(value).name}, input 0 (X) "
                        f"{dtype.name}; they must be the same")
    expected = groups if per_group else channels
    if tuple(value.shape) != (expected,):
        per = "per group: [num_groups]" if per_group else "per channel: [C]"
        raise ctx.error(f"input {i} ({what}) has shape {list(value.shape)}; {ctx.op_type} at opset {ctx.opset} "
                        f"takes it {per} = [{expected}]")
    if not per_group or groups == channels:
        return ctx.tensor(i, what)
    if isinstance(value, np.ndarray):
        return ctx.array_tensor(np.repeat(value, channels // groups), what.lower())
    net = ctx.network
    column = net.add_reshape(ctx.tensor(i, what), (groups, 1), name=ctx.aux(f"{what.lower()}_per_group"))
    ones = ctx.array_tensor(np.ones((1, channels // groups), dtype), f"{what.lower()}_spread",
                            dtype=DataType.from_any(dtype))
    spread = net.add_mul(column, ones, name=ctx.aux(f"{what.lower()}_spread"))
    return net.add_reshape(spread, (channels,), name=ctx.aux(f"{what.lower()}_per_channel"))


def _groups(ctx: NodeContext, instance: bool) -> tuple[int, int, np.dtype, float]:
    dtype = _float_input(ctx, 0, "X" if not instance else "input")
    shape = tuple(ctx.value(0).shape)
    if len(shape) < 2:
        raise ctx.error(f"input 0 has shape {list(shape)}; {ctx.op_type} takes [N, C, ...] (rank >= 2)")
    channels = shape[1]
    if instance:
        return channels, channels, dtype, _epsilon(ctx)
    if not ctx.has("num_groups"):
        raise ctx.error("attribute 'num_groups' is required")
    if ctx.has("stash_type") and ctx.opset < 21:
        raise ctx.error(f"attribute 'stash_type' exists from opset 21; the model's opset is {ctx.opset}")
    _stash_type(ctx)
    groups = int(ctx.attr("num_groups"))
    if groups < 1 or channels % groups:
        raise ctx.unsupported_value("num_groups", groups, f"a divisor of the {channels} channels")
    return channels, groups, dtype, _epsilon(ctx)


def _fold_groups(ctx: NodeContext, instance: bool) -> list[Any]:
    channels, groups, dtype, eps = _groups(ctx, instance)
    x = np.asarray(ctx.value(0)).astype(np.float64)
    n = x.shape[0]
    grouped = x.reshape(n, groups, -1) if x.size else x.reshape(n, groups, 0)
    with np.errstate(invalid="ignore"):
        mean, var = _moments(grouped, (2,))
    y = ((grouped - mean) / np.sqrt(var + eps)).reshape(x.shape)
    per_group = not instance and ctx.opset < 21
    params = []
    for i in (1, 2):
        p = np.asarray(ctx.value(i), np.float64)
        params.append((np.repeat(p, channels // groups) if per_group else p).reshape((1, channels) + (1,) * (x.ndim - 2)))
    return [(y * params[0] + params[1]).astype(dtype)]


def _group_normalization(ctx: NodeContext, instance: bool) -> list[Any]:
    channels, groups, dtype, eps = _groups(ctx, instance)
    per_group = not instance and ctx.opset < 21
    names = ("scale", "B") if instance else ("scale", "bias")
    scale = _per_channel(ctx, 1, names[0], channels, groups, per_group, dtype)
    bias = _per_channel(ctx, 2, names[1], channels, groups, per_group, dtype)
    x = ctx.tensor(0, "input" if instance else "X")
    return [ctx.network.add_normalization("group", x, scale, bias, num_groups=groups, epsilon=eps, name=ctx.name())]


@op("GroupNormalization", ("epsilon", "num_groups", "stash_type"), fold=lambda ctx: _fold_groups(ctx, False))
def group_normalization(ctx: NodeContext) -> list[Any]:
    return _group_normalization(ctx, False)


@op("InstanceNormalization", ("epsilon",), fold=lambda ctx: _fold_groups(ctx, True))
def instance_normalization(ctx: NodeContext) -> list[Any]:
    return _group_normalization(ctx, True)


# ---- LpNormalization --------------------------------------------------------------------------------------


def _lp(ctx: NodeContext) -> tuple[int, int]:
    _float_input(ctx, 0, "input")
    rank = len(ctx.value(0).shape)
    if rank == 0:
        raise ctx.error("input 0 (input) is a scalar; LpNormalization needs rank >= 1")
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.unsupported_value("p", p, "1, 2")
    return _axis(ctx, rank), p


def _fold_lp(ctx: NodeContext) -> list[Any]:
    axis, p = _lp(ctx)
    x = np.asarray(ctx.value(0))
    wide = x.astype(np.float64)
    norm = np.abs(wide).sum(axis, keepdims=True) if p == 1 else np.sqrt((wide * wide).sum(axis, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return [np.where(norm == 0, 0.0, wide / norm).astype(x.dtype)]


@op("LpNormalization", ("axis", "p"), fold=_fold_lp)
def lp_normalization(ctx: NodeContext) -> list[Any]:
    axis, p = _lp(ctx)
    return [ctx.network.add_normalization("lp", ctx.tensor(0, "input"), axis=axis, num_groups=p, name=ctx.name())]


# ---- MeanVarianceNormalization ------------------------------------------------------------------------------

_MVN_EPSILON = 1e-9  # the function body's


def _mvn_axes(ctx: NodeContext) -> tuple[int, ...]:
    _float_input(ctx, 0, "X")
    rank = len(ctx.value(0).shape)
    return tuple(sorted(folding.normalize_axes(ctx, ctx.ints("axes", [0, 2, 3]), rank)))


def _fold_mvn(ctx: NodeContext) -> list[Any]:
    axes = _mvn_axes(ctx)
    x = np.asarray(ctx.value(0))
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean, var = _moments(wide, axes)
        return [((wide - mean) / (np.sqrt(var) + _MVN_EPSILON)).astype(x.dtype)]


@op("MeanVarianceNormalization", ("axes",), fold=_fold_mvn)
def mean_variance_normalization(ctx: NodeContext) -> list[Any]:
    axes = _mvn_axes(ctx)
    net = ctx.network
    x = ctx.tensor(0, "X")
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    mean = net.add_reduce("mean", x, axes, keep_dims=True, name=ctx.aux("mean"))
    deviation = net.add_sub(x, mean, name=ctx.aux("deviation"))
    norm = net.add_reduce("l2", deviation, axes, keep_dims=True, name=ctx.aux("l2"))
    std = net.add_activation(norm, "linear", 1.0 / math.sqrt(count) if count else math.nan, _MVN_EPSILON,
                             name=ctx.aux("std_plus_epsilon"))
    return [net.add_div(deviation, std, name=ctx.name())]
