"""Activation operators as ACTIVATION layers on every float type: the helper every activation
converter uses (attributes to alpha/beta, the float type check, the NumPy fold with the
formulas of backend_api.h's pn_activation_kind) and the operators added with ABI 1.1: Gelu
(opset 20, approximate none/tanh), Softplus, Softsign, Mish (18), Selu, Celu (12),
ThresholdedRelu (10) and Shrink (9; integer inputs through float64 and back, as ONNX's
reference computes them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugnn.descriptors import ActivationKind
from plugnn.onnx import numeric
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

A = ActivationKind
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# The formulas of pn_activation_kind in float64 (alpha, beta as float32 values: the descriptor's).
FORMULAS: dict[ActivationKind, Callable[[np.ndarray, float, float], np.ndarray]] = {
    A.RELU: lambda x, a, b: np.where(x < 0, 0.0, x),
    A.BOUNDED_RELU: lambda x, a, b: np.minimum(np.maximum(x, a), b),
    A.LEAKY_RELU: lambda x, a, b: np.where(x >= 0, x, a * x),
    A.SIGMOID: lambda x, a, b: _sigmoid(x),
    A.TANH: lambda x, a, b: np.tanh(x),
    A.ELU: lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0))),
    A.HARD_SWISH: lambda x, a, b: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    A.HARD_SIGMOID: lambda x, a, b: np.clip(a * x + b, 0.0, 1.0),
    A.ABS: lambda x, a, b: np.abs(x),
    A.SQRT: lambda x, a, b: np.sqrt(x),
    A.SQUARE: lambda x, a, b: x * x,
    A.LINEAR: lambda x, a, b: a * x + b,
    A.GELU: lambda x, a, b: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    A.GELU_TANH: lambda x, a, b: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    A.SWISH: lambda x, a, b: x * _sigmoid(a * x),
    A.MISH: lambda x, a, b: x * np.tanh(np.logaddexp(0.0, x)),
    A.SOFTPLUS: lambda x, a, b: np.logaddexp(0.0, x),
    A.SOFTSIGN: lambda x, a, b: x / (1.0 + np.abs(x)),
    A.SELU: lambda x, a, b: b * np.where(x > 0, x, a * np.expm1(np.minimum(x, 0.0))),
    A.CELU: lambda x, a, b: np.maximum(0.0, x) + np.minimum(0.0, a * np.expm1(x / a)),
    A.THRESHOLDED_RELU: lambda x, a, b: np.where(x > a, x, 0.0),
    A.SHRINK: lambda x, a, b: np.where(x < -a, x + b, np.where(x > a, x - b, 0.0)),
    A.SCALED_TANH: lambda x, a, b: a * np.tanh(b * x),
}


def _f32(value: float) -> float:
    return float(np.float32(value))


def fold_activation(x: np.ndarray, kind: ActivationKind, alpha: float, beta: float, dtype: DataType) -> np.ndarray:
    """The activation of a known float array, in float64, rounded once to `dtype`."""
    return numeric.float_fold(lambda v: FORMULAS[kind](v, _f32(alpha), _f32(beta)), [x], dtype)


# ONNX attribute -> (its default, whether it is the activation's alpha or beta).
Params = Sequence[tuple[str, float, str]]
Parameters = Callable[[NodeContext], tuple[ActivationKind, float, float]]


def attribute_parameters(kind: ActivationKind, params: Params) -> Parameters:
    """The kind with alpha/beta read from the node's attributes (their ONNX defaults)."""
    def read(ctx: NodeContext) -> tuple[ActivationKind, float, float]:
        values = {"alpha": 0.0, "beta": 0.0}
        for attribute, default, role in params:
            value = ctx.attr(attribute, default)
            try:
                values[role] = float(value)
            except (TypeError, ValueError):
                raise ctx.unsupported_value(attribute, value, "a number") from None
        return kind, values["alpha"], values["beta"]

    return read


def register(op_type: str, parameters: Parameters, attributes: Sequence[str] = (),
             integers_through_float64: bool = False) -> None:
    """An ONNX activation as one ACTIVATION layer on float inputs (with integer inputs cast to
    float64 and back when `integers_through_float64`), folded when the input is known."""
    allowed = numeric.NUMERIC if integers_through_float64 else numeric.FLOATS

    def fold(ctx: NodeContext) -> list[Any]:
        kind, alpha, beta = parameters(ctx)
        dtype = numeric.check_types(ctx, [(0, "X")], allowed)
        x = np.asarray(ctx.value(0))
        if dtype in numeric.FLOATS:
            return [fold_activation(x, kind, alpha, beta, dtype)]
        return [numeric.cast(fold_activation(x, kind, alpha, beta, DataType.FLOAT64), x.dtype)]

    def convert(ctx: NodeContext) -> list[Any]:
        kind, alpha, beta = parameters(ctx)
        dtype = numeric.check_types(ctx, [(0, "X")], allowed)
        x = ctx.tensor(0, "X")
        if dtype in numeric.FLOATS:
            return [ctx.network.add_activation(x, kind, alpha, beta, name=ctx.name())]
        wide = ctx.network.add_cast(x, DataType.FLOAT64, name=ctx.aux("to_float64"))
        y = ctx.network.add_activation(wide, kind, alpha, beta, name=ctx.aux(kind.name.lower()))
        return [ctx.network.add_cast(y, dtype, name=ctx.name())]

    op(op_type, tuple(attributes), fold=fold)(convert)


def activation(op_type: str, kind: ActivationKind, params: Params = ()) -> None:
    register(op_type, attribute_parameters(kind, params), [p[0] for p in params])


# ---- the operators ABI 1.1 brought -----------------------------------------------------------------

activation("Softplus", A.SOFTPLUS)
activation("Softsign", A.SOFTSIGN)
activation("Mish", A.MISH)
activation("Selu", A.SELU, [("alpha", 1.67326319217681884765625, "alpha"),
                            ("gamma", 1.05070102214813232421875, "beta")])
activation("ThresholdedRelu", A.THRESHOLDED_RELU, [("alpha", 1.0, "alpha")])
register("Shrink", attribute_parameters(A.SHRINK, [("lambd", 0.5, "alpha"), ("bias", 0.0, "beta")]),
         ("bias", "lambd"), integers_through_float64=True)


def _gelu(ctx: NodeContext) -> tuple[ActivationKind, float, float]:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.unsupported_value("approximate", approximate, "'none', 'tanh'")
    return (A.GELU if approximate == "none" else A.GELU_TANH), 0.0, 0.0


register("Gelu", _gelu, ("approximate",))


def _celu(ctx: NodeContext) -> tuple[ActivationKind, float, float]:
    kind, alpha, beta = attribute_parameters(A.CELU, [("alpha", 1.0, "alpha")])(ctx)
    if _f32(alpha) == 0.0:
        raise ctx.unsupported_value("alpha", alpha, "a non-zero number (Celu divides by alpha)")
    return kind, alpha, beta


register("Celu", _celu, ("alpha",))
