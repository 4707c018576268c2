"""Elementwise operators: Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean, PRelu and the
activations Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Elu, Clip."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx import folding
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op

# ---- binary ------------------------------------------------------------------------------------


def _binary(op_type: str, kind: str, integer_fold: bool) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        a, b = ctx.tensor(0, "A"), ctx.tensor(1, "B")
        return [ctx.network.add_elementwise(kind, a, b, name=ctx.name())]

    fold = (lambda ctx: folding.integer_binary(ctx, op_type)) if integer_fold else None
    op(op_type, (), fold=fold)(convert)


_binary("Add", "add", True)
_binary("Sub", "sub", True)
_binary("Mul", "mul", True)
_binary("Div", "div", True)
_binary("Pow", "power", False)


@op("PRelu")
def prelu(ctx: NodeContext) -> list[Any]:
    x, slope = ctx.tensor(0, "X"), ctx.tensor(1, "slope")
    return [ctx.network.add_elementwise("prelu", x, slope, name=ctx.name())]


# ---- variadic ----------------------------------------------------------------------------------


def _variadic(op_type: str, kind: str) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        tensors = [ctx.tensor(i, f"data_{i}") for i in range(ctx.num_inputs) if ctx.has_input(i)]
        if not tensors:
            raise ctx.error("needs at least one input")
        return [ctx.network.add_variadic(kind, tensors, name=ctx.name())]

    op(op_type)(convert)


_variadic("Max", "maximum")
_variadic("Min", "minimum")
_variadic("Sum", "sum")
_variadic("Mean", "mean")


# ---- activations -------------------------------------------------------------------------------


def _activation(op_type: str, kind: str, attributes: tuple[str, ...] = (), alpha: float | None = None,
                beta: float | None = None) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        a = float(ctx.attr("alpha", alpha)) if alpha is not None else 0.0
        b = float(ctx.attr("beta", beta)) if beta is not None else 0.0
        return [ctx.network.add_activation(ctx.tensor(0, "X"), kind, a, b, name=ctx.name())]

    op(op_type, attributes)(convert)


_activation("Relu", "relu")
_activation("LeakyRelu", "leaky_relu", ("alpha",), alpha=0.01)
_activation("Sigmoid", "sigmoid")
_activation("HardSigmoid", "hard_sigmoid", ("alpha", "beta"), alpha=0.2, beta=0.5)
_activation("HardSwish", "hard_swish")
_activation("Tanh", "tanh")
_activation("Elu", "elu", ("alpha",), alpha=1.0)


def _bound(ctx: NodeContext, i: int, what: str) -> float | None:
    if not ctx.has_input(i):
        return None
    value = np.asarray(ctx.const(i, what))
    if value.size != 1:
        raise ctx.error(f"input {i} ({what}) must be a scalar, got shape {list(value.shape)}")
    if value.dtype != np.float32:
        raise ctx.error(f"input {i} ({what}) has element type {value.dtype}; plugnn imports float32 only "
                        f"(other types until quantized support exists)")
    return float(value.reshape(-1)[0])


@op("Clip", ("min", "max"))
def clip(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "input")
    if ctx.opset < 11:
        low = float(ctx.attr("min", float(np.finfo(np.float32).min)))
        high = float(ctx.attr("max", float(np.finfo(np.float32).max)))
    else:
        low, high = _bound(ctx, 1, "min"), _bound(ctx, 2, "max")
        low = -np.inf if low is None else low
        high = np.inf if high is None else high
    return [ctx.network.add_activation(x, "bounded_relu", low, high, name=ctx.name())]
