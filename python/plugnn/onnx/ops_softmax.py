"""LogSoftmax and Hardmax (opset 7 on); Softmax itself is in ops_linear.py.

Before opset 13 both coerce x to 2-D [prod(dims[:axis]), prod(dims[axis:])] and work along the
second dimension, that is over all the dims from `axis` on (default axis 1); from opset 13 they
work along the one dim `axis` (default -1).

LogSoftmax is x - log(sum(exp(x))) over those dims: a REDUCE LOG_SUM_EXP layer (keep_dims, which
takes the max out first, so nothing overflows) and a broadcast subtraction, exact where a log of
a softmax would round tiny probabilities to log(0) = -inf.

Hardmax is 1 at the first largest value of each line (a NaN counting as the largest, as
NumPy's argmax and ONNX's reference) and 0 elsewhere: a REDUCE ARG_MAX layer and a ONE_HOT layer
of x's type (through a reshape to 2-D when the coerced dims are more than the last one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op


def _numpy_dtype(value: Any) -> Any:
    return value.dtype if isinstance(value, np.ndarray) else value.dtype.numpy_dtype


def _axes(ctx: NodeContext) -> tuple[int, ...]:
    """The dims the operator works over: (axis,) from opset 13, dims[axis:] before."""
    value = ctx.value(0)
    rank = len(value.shape)
    dtype = np.dtype(_numpy_dtype(value))
    if not (dtype.kind == "f" or dtype.name == "bfloat16"):
        raise ctx.error(f"input 0 (input) has element type {dtype.name}; {ctx.op_type} takes float types")
    if rank == 0:
        raise ctx.error(f"input 0 (input) is a scalar; {ctx.op_type} needs rank >= 1")
    axis = int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1))
    if not -rank <= axis < rank:
        raise ctx.error(f"attribute 'axis' = {axis} is out of range for rank {rank}")
    axis %= rank
    return (axis,) if ctx.opset >= 13 else tuple(range(axis, rank))


# ---- LogSoftmax -----------------------------------------------------------------------------------


def _fold_log_softmax(ctx: NodeContext) -> list[Any]:
    axes = _axes(ctx)
    x = np.asarray(ctx.value(0))
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        shift = np.max(wide, axes, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(shift), shift, 0.0)
        lse = shift + np.log(np.exp(wide - shift).sum(axes, keepdims=True))
        return [(wide - lse).astype(x.dtype)]


@op("LogSoftmax", ("axis",), fold=_fold_log_softmax)
def log_softmax(ctx: NodeContext) -> list[Any]:
    axes = _axes(ctx)
    x = ctx.tensor(0, "input")
    lse = ctx.network.add_reduce("log_sum_exp", x, axes, keep_dims=True, name=ctx.aux("log_sum_exp"))
    return [ctx.network.add_sub(x, lse, name=ctx.name())]


# ---- Hardmax --------------------------------------------------------------------------------------


def _fold_hardmax(ctx: NodeContext) -> list[Any]:
    axes = _axes(ctx)
    x = np.asarray(ctx.value(0))
    if not x.size:
        return [np.zeros_like(x)]
    lines = x.reshape(x.shape[:axes[0]] + (-1,) + x.shape[axes[-1] + 1:])
    wide = lines.astype(np.float64)
    found = np.expand_dims(np.argmax(wide, axes[0]), axes[0])
    y = np.zeros(wide.shape, x.dtype)
    np.put_along_axis(y, found, 1, axes[0])
    return [y.reshape(x.shape)]


@op("Hardmax", ("axis",), fold=_fold_hardmax)
def hardmax(ctx: NodeContext) -> list[Any]:
    axes = _axes(ctx)
    x = ctx.tensor(0, "input")
    shape = tuple(x.shape)
    lines = x
    if len(axes) > 1:  # coerced to 2-D: the line is every dim from axis on
        outer = int(np.prod(shape[:axes[0]], dtype=np.int64))
        lines = ctx.network.add_reshape(x, (outer, int(np.prod(shape[axes[0]:], dtype=np.int64))),
                                        name=ctx.aux("coerce_2d"))
    axis = axes[0] if len(axes) == 1 else 1
    depth = lines.shape[axis]
    if 0 in shape:  # nothing to pick: the (empty) result is known
        return [np.zeros(shape, x.dtype.numpy_dtype)]
    found = ctx.network.add_reduce("arg_max", lines, (axis,), keep_dims=False, name=ctx.aux("arg_max"))
    values = ctx.array_tensor(np.array([0, 1], x.dtype.numpy_dtype), "off_on", dtype=x.dtype)
    if len(axes) == 1:
        return [ctx.network.add_one_hot(found, depth, values, axis, name=ctx.name())]
    y = ctx.network.add_one_hot(found, depth, values, axis, name=ctx.aux("one_hot"))
    return [ctx.network.add_reshape(y, shape, name=ctx.name())]
