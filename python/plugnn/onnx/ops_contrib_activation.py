"""onnxruntime's com.microsoft activations (its ContribOperators document's semantics), imported
as ONNX nodes (contrib_nodes.py): Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd.

- Gelu: ONNX Gelu (erf form). BiasGelu(A, B): Gelu(A + B).
- FastGelu(X[, bias]): the tanh approximation 0.5 x (1 + tanh(0.797885 x + 0.035677 x^3)) of
  X (+ bias): ONNX Gelu with approximate "tanh".
- QuickGelu(X; alpha 1.702): X * Sigmoid(alpha * X).
- BiasAdd(X, bias, skip): X + bias + skip.
"""

from __future__ import annotations

from typing import Any

from plugnn.onnx.context import NodeContext
from plugnn.onnx.contrib_nodes import Nodes, check_float, check_same
from plugnn.onnx.registry import MICROSOFT_DOMAIN, op


def _biased(ctx: NodeContext, nodes: Nodes, bias_index: int) -> str:
    dtype = check_float(ctx, 0, "X")
    if not ctx.has_input(bias_index):
        return nodes.input(0)
    check_same(ctx, bias_index, "bias", dtype)
    return nodes.add("Add", [nodes.input(0), nodes.input(bias_index)], "bias_add")


@op("Gelu", domain=MICROSOFT_DOMAIN)
def gelu(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    check_float(ctx, 0, "X")
    nodes.add("Gelu", [nodes.input(0)], "gelu", outputs=[nodes.output(0)])
    return nodes.expansion()


@op("BiasGelu", domain=MICROSOFT_DOMAIN)
def bias_gelu(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    nodes.add("Gelu", [_biased(ctx, nodes, 1)], "gelu", outputs=[nodes.output(0)])
    return nodes.expansion()


@op("FastGelu", domain=MICROSOFT_DOMAIN)
def fast_gelu(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    nodes.add("Gelu", [_biased(ctx, nodes, 1)], "gelu", outputs=[nodes.output(0)], approximate="tanh")
    return nodes.expansion()


@op("QuickGelu", ("alpha",), domain=MICROSOFT_DOMAIN)
def quick_gelu(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype = check_float(ctx, 0, "X")
    alpha = float(ctx.attr("alpha", 1.702))
    x = nodes.input(0)
    scaled = x if alpha == 1.0 else nodes.add("Mul", [x, nodes.const(alpha, "alpha", dtype)], "scaled")
    gate = nodes.add("Sigmoid", [scaled], "sigmoid")
    nodes.add("Mul", [x, gate], "mul", outputs=[nodes.output(0)])
    return nodes.expansion()


@op("BiasAdd", domain=MICROSOFT_DOMAIN)
def bias_add(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype = check_float(ctx, 0, "X", ("float32", "float16"))
    check_same(ctx, 1, "bias", dtype)
    check_same(ctx, 2, "skip", dtype)
    biased = nodes.add("Add", [nodes.input(0), nodes.input(1)], "bias_add")
    nodes.add("Add", [biased, nodes.input(2)], "skip_add", outputs=[nodes.output(0)])
    return nodes.expansion()
