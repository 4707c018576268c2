"""Gemm, MatMul, Softmax, BatchNormalization, LRN."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import UnaryOp
from plugnn.onnx import numeric
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op


@op("Gemm", ("alpha", "beta", "transA", "transB"))
def gemm(ctx: NodeContext) -> list[Any]:
    a, b = ctx.tensor(0, "A"), ctx.tensor(1, "B")
    c = ctx.tensor(2, "C") if ctx.has_input(2) else None
    flags = {}
    for attr in ("transA", "transB"):
        flags[attr] = int(ctx.attr(attr, 0))
        if flags[attr] not in (0, 1):
            raise ctx.unsupported_value(attr, flags[attr], "0, 1")
    return [ctx.network.add_fully_connected(
        a, b, c, alpha=float(ctx.attr("alpha", 1.0)), beta=float(ctx.attr("beta", 1.0)),
        transpose_a=bool(flags["transA"]), transpose_b=bool(flags["transB"]), name=ctx.name())]


def _fold_matmul(ctx: NodeContext) -> list[Any]:
    dtype = numeric.check_types(ctx, [(0, "A"), (1, "B")], numeric.NUMERIC)
    a, b = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if a.ndim == 0 or b.ndim == 0:
        raise ctx.error(f"MatMul inputs must have rank >= 1, got shapes {list(a.shape)} and {list(b.shape)}")
    try:
        if dtype in numeric.FLOATS:
            return [numeric.float_fold(np.matmul, [a, b], dtype)]
        return [numeric.same_dtype(numeric.wrapping(np.matmul, a, b), a)]  # integers wrap
    except ValueError as exc:
        raise ctx.error(f"cannot multiply {list(a.shape)} by {list(b.shape)}: {exc}") from None


@op("MatMul", fold=_fold_matmul)
def matmul(ctx: NodeContext) -> list[Any]:
    numeric.check_types(ctx, [(0, "A"), (1, "B")], numeric.NUMERIC)
    return [ctx.network.add_matmul(ctx.tensor(0, "A"), ctx.tensor(1, "B"), name=ctx.name())]


@op("Softmax", ("axis",))
def softmax(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0)
    rank = len(x.shape)
    if ctx.opset >= 13:
        axis = int(ctx.attr("axis", -1))
        if not -rank <= axis < rank:
            raise ctx.error(f"axis {axis} is out of range for rank {rank}")
        return [ctx.network.add_softmax(x, axis, name=ctx.name())]
    # Opset < 13: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])], softmax runs
    # over the second dimension, and the result has the input's shape.
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis < rank if rank else axis != 0:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    axis = axis % rank if rank else 0
    if axis == rank - 1:  # the coerced softmax is the softmax over the last axis: no reshapes needed
        return [ctx.network.add_softmax(x, -1, name=ctx.name())]
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis:], dtype=np.int64))
    flat = ctx.network.add_reshape(x, (outer, inner), name=ctx.aux("coerce_2d"))
    y = ctx.network.add_softmax(flat, 1, name=ctx.name())
    return [ctx.network.add_reshape(y, x.shape, name=ctx.aux("restore_shape"))]


@op("BatchNormalization", ("epsilon", "momentum", "spatial", "training_mode"),
    outputs_note="inference form: the running mean/var and saved statistics outputs are not produced")
def batch_normalization(ctx: NodeContext) -> list[Any]:
    training = int(ctx.attr("training_mode", 0))
    if training not in (0, 1):
        raise ctx.unsupported_value("training_mode", training, "0 (inference), 1 (training: batch statistics)")
    if training == 1:
        return _batch_normalization_training(ctx)
    spatial = int(ctx.attr("spatial", 1))
    if spatial != 1:
        raise ctx.unsupported_value("spatial", spatial, "1 (per-channel statistics)")
    for i, what in ((1, "running mean"), (2, "running var"), (3, "saved mean"), (4, "saved var")):
        if ctx.output_used(i):
            raise ctx.error(f"output {i} ({what}) is used; plugnn imports BatchNormalization in inference form, "
                            f"which has one output")
    x = ctx.tensor(0, "X")
    params = [ctx.tensor(i, what) for i, what in ((1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var"))]
    shape = tuple(x.shape)
    if len(shape) > 4:  # the layer takes rank 2 to 4: [N, C, D1, D2, ...] as [N, C, D1 * D2 * ...]
        x = ctx.network.add_reshape(x, (shape[0], shape[1], int(np.prod(shape[2:]))), name=ctx.aux("to_3d"))
    y = ctx.network.add_batch_normalization(x, *params, epsilon=float(ctx.attr("epsilon", 1e-5)), name=ctx.name())
    if len(shape) > 4:
        y = ctx.network.add_reshape(y, shape, name=ctx.aux("restore_shape"))
    return [y, None, None, None, None]


def _batch_normalization_training(ctx: NodeContext) -> list[Any]:
    """training_mode=1 (opset 14+), ONNX's definition from existing layers: Y normalized with the
    batch's mean and population variance over every axis but 1; running_mean / running_var =
    input * momentum + batch statistic * (1 - momentum)."""
    net = ctx.network
    x = ctx.tensor(0, "X")
    if not x.dtype.is_float:
        raise ctx.error(f"input 0 (X) is {x.dtype.numpy_name}; training-mode BatchNormalization takes float types")
    if len(x.shape) < 2:
        raise ctx.error(f"input 0 (X) has rank {len(x.shape)}; BatchNormalization needs [N, C, ...]")
    dtype = np.dtype(x.dtype.numpy_name)
    channels = x.shape[1]
    axes = [a for a in range(len(x.shape)) if a != 1]
    stat_shape = (channels,) + (1,) * (len(x.shape) - 2)
    momentum = float(ctx.attr("momentum", 0.9))
    epsilon = float(ctx.attr("epsilon", 1e-5))
    params = [net.add_reshape(ctx.tensor(i, what), stat_shape, name=ctx.aux(f"{what}_per_channel"))
              for i, what in ((1, "scale"), (2, "B"))]
    mean = net.add_reduce("mean", x, axes=axes, keep_dims=True, name=ctx.aux("batch_mean"))
    centred = net.add_sub(x, mean, name=ctx.aux("centred"))
    var = net.add_reduce("mean", net.add_mul(centred, centred, name=ctx.aux("squares")), axes=axes, keep_dims=True,
                         name=ctx.aux("batch_var"))
    std = net.add_unary(UnaryOp.SQRT, net.add_add(var, ctx.array_tensor(np.array(epsilon, dtype), "epsilon"),
                                                  name=ctx.aux("var_eps")), name=ctx.aux("std"))
    y = net.add_add(net.add_mul(net.add_div(centred, std, name=ctx.aux("normalized")), params[0],
                                name=ctx.aux("scaled")), params[1], name=ctx.name())
    outputs: list[Any] = [y]
    for i, (stat, what) in enumerate(((mean, "mean"), (var, "var")), start=1):
        if not ctx.output_used(i):
            outputs.append(None)
            continue
        batch = net.add_reshape(stat, (channels,), name=ctx.aux(f"batch_{what}_c"))
        kept = net.add_mul(ctx.tensor(2 + i, f"input_{what}"), ctx.array_tensor(np.array(momentum, dtype), "momentum"),
                           name=ctx.aux(f"kept_{what}"))
        new = net.add_mul(batch, ctx.array_tensor(np.array(1.0 - momentum, dtype), "one_minus_momentum"),
                          name=ctx.aux(f"new_{what}"))
        outputs.append(net.add_add(kept, new, name=ctx.aux(f"running_{what}")))
    for i, what in ((3, "saved mean"), (4, "saved var")):
        if ctx.output_used(i):
            raise ctx.error(f"output {i} ({what}) is used; ONNX's BatchNormalization has no such output from "
                            f"opset 14 (training_mode's first opset)")
    return outputs + [None, None]


@op("LRN", ("alpha", "beta", "bias", "size"))
def lrn(ctx: NodeContext) -> list[Any]:
    if not ctx.has("size"):
        raise ctx.error("attribute 'size' is required")
    size = int(ctx.attr("size"))
    if size < 1:
        raise ctx.unsupported_value("size", size, "an integer >= 1")
    return [ctx.network.add_lrn(ctx.tensor(0, "X"), size, float(ctx.attr("alpha", 1e-4)),
                                float(ctx.attr("beta", 0.75)), float(ctx.attr("bias", 1.0)), name=ctx.name())]
