"""Dropout in training form with a ratio > 0, as onnxruntime runs it at inference: elements
dropped at random.

onnxruntime's Dropout with `training_mode` true zeroes each element with probability `ratio`
and scales the kept ones by 1 / (1 - ratio), in inference sessions too. plugnn imports the node
as RandomUniformLike (plugnn's Philox generator: seeded by the node's `seed`, else fresh values
on every run), GreaterOrEqual with the ratio (the mask: true where kept), and the products:
the same distribution as onnxruntime's, not the same draws (no two generators agree).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.contrib_nodes import Nodes, dtype_of


def training_ratio(ctx: NodeContext) -> float | None:
    """The ratio when ctx's Dropout is in training form with a ratio > 0, else None."""
    if ctx.opset < 12 or not ctx.has_input(2) or not ctx.is_const(2):
        return None
    if not bool(np.asarray(ctx.value(2)).reshape(-1)[0]):
        return None
    if ctx.has_input(1) and not ctx.is_const(1):
        return None  # the converter's checks name the ratio that must be known
    ratio = float(np.asarray(ctx.value(1)).reshape(-1)[0]) if ctx.has_input(1) else 0.5
    return ratio if ratio != 0.0 else None


def training_dropout(ctx: NodeContext, ratio: float) -> Any:
    """The Expansion of a training-form Dropout with `ratio` > 0."""
    if not 0.0 < ratio <= 1.0:
        raise ctx.error(f"ratio {ratio} is outside [0, 1]")
    dtype = dtype_of(ctx, 0)
    if dtype.kind != "f":
        raise ctx.error(f"input 0 (data) is {dtype.name}; training-mode Dropout takes float types")
    nodes = Nodes(ctx)
    seed = {"seed": float(ctx.attr("seed"))} if ctx.has("seed") else {}
    draws = nodes.add("RandomUniformLike", [nodes.input(0)], "uniform", dtype=1, **seed)  # float32 in [0, 1)
    kept = nodes.add("GreaterOrEqual", [draws, nodes.const(ratio, "ratio", np.float32)], "kept",
                     outputs=[nodes.output(1)])
    scaled = nodes.add("Mul", [nodes.input(0), nodes.const(0.0 if ratio == 1.0 else 1.0 / (1.0 - ratio), "scale", dtype)],
                       "scaled")
    zero = nodes.const(0, "zero", dtype)
    nodes.add("Where", [kept, scaled, zero], "dropped", outputs=[nodes.output(0)])
    return nodes.expansion()
