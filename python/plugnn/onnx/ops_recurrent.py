"""RNN, GRU and LSTM (opset 7 on; `layout` from opset 14): one RECURRENT layer each.

The inputs map one to one (X, W, R, then the optional B, sequence_lens, initial_h, initial_c, P,
each flagged in the descriptor when given); the layer computes every output (Y, Y_h and, for
LSTM, Y_c), so any of them may be unused. Activation names are ONNX's (any case); their alphas
and betas are taken from `activation_alpha` / `activation_beta` in order, one value for each
function that has such a parameter (as onnxruntime does), and default to those of the ONNX
operator of the same name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import ActivationDescriptor, ActivationKind, RecurrentCell, RecurrentDescriptor
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

_COMMON = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout")

# ONNX name (lower case) -> (kind, default alpha, default beta); None: the function has no such
# parameter; ... : it has one and ONNX gives no default (ScaledTanh), so the model must.
_FUNCTIONS: dict[str, tuple[ActivationKind, Any, Any]] = {
    "relu": (ActivationKind.RELU, None, None),
    "tanh": (ActivationKind.TANH, None, None),
    "sigmoid": (ActivationKind.SIGMOID, None, None),
    "affine": (ActivationKind.LINEAR, 1.0, 0.0),
    "leakyrelu": (ActivationKind.LEAKY_RELU, 0.01, None),
    "thresholdedrelu": (ActivationKind.THRESHOLDED_RELU, 1.0, None),
    "scaledtanh": (ActivationKind.SCALED_TANH, ..., ...),
    "hardsigmoid": (ActivationKind.HARD_SIGMOID, 0.2, 0.5),
    "elu": (ActivationKind.ELU, 1.0, None),
    "softsign": (ActivationKind.SOFTSIGN, None, None),
    "softplus": (ActivationKind.SOFTPLUS, None, None),
}
_NAMES = "Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus"

# The cell's functions per direction, by default.
_DEFAULTS = {
    RecurrentCell.RNN: ("Tanh",),
    RecurrentCell.GRU: ("Sigmoid", "Tanh"),
    RecurrentCell.LSTM: ("Sigmoid", "Tanh", "Tanh"),
}

_DIRECTIONS = ("forward", "reverse", "bidirectional")


@op("RNN", _COMMON)
def rnn(ctx: NodeContext) -> list[Any]:
    return _recurrent(ctx, RecurrentCell.RNN)


@op("GRU", (*_COMMON, "linear_before_reset"))
def gru(ctx: NodeContext) -> list[Any]:
    return _recurrent(ctx, RecurrentCell.GRU)


@op("LSTM", (*_COMMON, "input_forget"))
def lstm(ctx: NodeContext) -> list[Any]:
    return _recurrent(ctx, RecurrentCell.LSTM)


def _flag(ctx: NodeContext, name: str) -> bool:
    value = int(ctx.attr(name, 0))
    if value not in (0, 1):
        raise ctx.unsupported_value(name, value, "0, 1")
    return bool(value)


def _activations(ctx: NodeContext, cell: RecurrentCell, dirs: int) -> tuple[ActivationDescriptor, ...]:
    """The activations of every direction (a per-direction list serves both directions)."""
    per_direction = len(_DEFAULTS[cell])
    names = [str(n) for n in ctx.attr("activations", list(_DEFAULTS[cell]) * dirs)]
    if len(names) not in (per_direction, per_direction * dirs):
        raise ctx.unsupported_value("activations", names, f"{per_direction * dirs} function names "
                                    f"({per_direction} per direction)")
    alphas = [float(v) for v in ctx.attr("activation_alpha", [])]
    betas = [float(v) for v in ctx.attr("activation_beta", [])]
    used = {"activation_alpha": 0, "activation_beta": 0}

    def parameter(attr: str, values: list[float], default: Any, function: str) -> float:
        if default is None:
            return 0.0
        if used[attr] < len(values):
            used[attr] += 1
            return values[used[attr] - 1]
        if default is ...:
            raise ctx.error(f"attribute {attr!r} has no value left for activation {function!r}, which needs one "
                            f"(ONNX gives it no default)")
        return float(default)

    acts = []
    for name in names:
        entry = _FUNCTIONS.get(name.lower())
        if entry is None:
            raise ctx.unsupported_value("activations", name, _NAMES)
        kind, alpha, beta = entry
        acts.append(ActivationDescriptor(kind, parameter("activation_alpha", alphas, alpha, name),
                                         parameter("activation_beta", betas, beta, name)))
    for attr, values in (("activation_alpha", alphas), ("activation_beta", betas)):
        if used[attr] != len(values):
            raise ctx.error(f"attribute {attr!r} has {len(values)} values, but the activations {names} take "
                            f"{used[attr]}")
    return tuple(acts) * (per_direction * dirs // len(acts))


def _sequence_lens(ctx: NodeContext) -> Any:
    """sequence_lens as an int32 tensor (a constant is converted, its values checked)."""
    if not ctx.is_const(4):
        lens = ctx.tensor(4, "sequence_lens")
        if lens.dtype is not DataType.INT32:
            raise ctx.error(f"input 4 (sequence_lens) is {lens.dtype.numpy_name}; ONNX and plugnn take int32")
        return lens
    values = np.asarray(ctx.const(4, "sequence_lens"))
    if not np.issubdtype(values.dtype, np.integer):
        raise ctx.error(f"input 4 (sequence_lens) is {values.dtype}, not an integer type")
    if values.size and (values.min() < 0 or values.max() > np.iinfo(np.int32).max):
        raise ctx.error(f"input 4 (sequence_lens) = {values.tolist()}: lengths are >= 0 and fit int32")
    return ctx.array_tensor(values.astype(np.int32), "sequence_lens")


def _recurrent(ctx: NodeContext, cell: RecurrentCell) -> list[Any]:
    direction = str(ctx.attr("direction", "forward"))
    if direction not in _DIRECTIONS:
        raise ctx.unsupported_value("direction", direction, ", ".join(_DIRECTIONS))
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    if ctx.has("layout") and ctx.opset < 14:
        raise ctx.error(f"attribute 'layout' exists from opset 14; the model's opset is {ctx.opset}")
    if layout not in (0, 1):
        raise ctx.unsupported_value("layout", layout, "0 (sequence first), 1 (batch first)")
    clip = float(ctx.attr("clip", 0.0))
    if ctx.has("clip") and not clip > 0:
        raise ctx.unsupported_value("clip", clip, "a threshold > 0")
    x, w, r = ctx.tensor(0, "X"), ctx.tensor(1, "W"), ctx.tensor(2, "R")
    hidden = int(ctx.attr("hidden_size", r.shape[-1] if r.shape else 0))  # R is [dirs, gates * hidden, hidden]
    if hidden < 1:
        raise ctx.unsupported_value("hidden_size", hidden, "an integer >= 1")
    optional = [(3, "B"), (4, "sequence_lens"), (5, "initial_h")]
    if cell is RecurrentCell.LSTM:
        optional += [(6, "initial_c"), (7, "P")]
    if ctx.num_inputs > 3 + len(optional):
        raise ctx.error(f"{ctx.op_type} takes at most {3 + len(optional)} inputs, got {ctx.num_inputs}")
    present = {name: ctx.has_input(i) for i, name in optional}
    inputs = [x, w, r] + [_sequence_lens(ctx) if name == "sequence_lens" else ctx.tensor(i, name)
                          for i, name in optional if present[name]]
    try:
        descriptor = RecurrentDescriptor(
            cell, hidden, direction, _activations(ctx, cell, dirs), has_bias=present["B"],
            has_sequence_lens=present["sequence_lens"], has_initial_h=present["initial_h"],
            has_initial_c=present.get("initial_c", False), has_peepholes=present.get("P", False),
            batch_major=bool(layout), clip=clip,
            linear_before_reset=cell is RecurrentCell.GRU and _flag(ctx, "linear_before_reset"),
            input_forget=cell is RecurrentCell.LSTM and _flag(ctx, "input_forget"))
    except ValueError as exc:
        raise ctx.error(str(exc)) from None
    return list(ctx.network.add_recurrent(inputs, descriptor, name=ctx.name()))
