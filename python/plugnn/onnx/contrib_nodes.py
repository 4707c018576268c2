"""How onnxruntime's com.microsoft operators import: each node as default-domain ONNX nodes.

A contrib converter (ops_contrib_*.py) describes its node with `Nodes`: the ONNX nodes
(MatMul, Add, LayerNormalization, Softmax, ...) that compute what onnxruntime's kernel computes,
read at `CONTRIB_OPSET`, with the arrays it derives at import (reshaped weights, dequantized
4-bit weights, masks) as constants. It returns `Nodes.expansion()`, which the importer walks
like a function body (expansion.py): every node goes through its own converter, so types, folds
and errors are those of the default domain, layers are named `<node>/<role>`, and CpuAcc sees the
unfused forms its pattern fusion already knows (GELU, LayerNorm, attention, biased products).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext, PendingInput, onnx_module
from plugnn.onnx.expansion import Expansion, base_name, fresh_node_name, fresh_value

CONTRIB_OPSET = 23  # the default-domain opset the nodes are read at (RMSNormalization is 23's)
NOTE = "onnxruntime's com.microsoft operator, imported as ONNX nodes"
FLOAT_TYPES = ("float32", "float16", "bfloat16", "float64")


def dtype_of(ctx: NodeContext, i: int) -> np.dtype:
    value = ctx.value(i)
    if isinstance(value, Tensor):
        return np.dtype(value.dtype.numpy_dtype)
    if isinstance(value, PendingInput):
        return value.dtype
    return np.asarray(value).dtype


def check_float(ctx: NodeContext, i: int, what: str, allowed: Sequence[str] = FLOAT_TYPES) -> np.dtype:
    """Input i's element type, which must be one of `allowed` (float types)."""
    dtype = dtype_of(ctx, i)
    if dtype.name not in allowed:
        raise ctx.error(f"input {i} ({what}) is {dtype.name}; {ctx.op_type} takes {', '.join(allowed)}")
    return dtype


def check_same(ctx: NodeContext, i: int, what: str, dtype: np.dtype) -> None:
    got = dtype_of(ctx, i)
    if got != dtype:
        raise ctx.error(f"input {i} ({what}) is {got.name} but input 0 is {dtype.name}; {ctx.op_type} takes one "
                        f"element type for them")


def check_int(ctx: NodeContext, i: int, what: str, allowed: Sequence[str] = ("int32",)) -> np.dtype:
    dtype = dtype_of(ctx, i)
    if dtype.name not in allowed:
        raise ctx.error(f"input {i} ({what}) is {dtype.name}; {ctx.op_type} takes {', '.join(allowed)} there")
    return dtype


def shape_of(ctx: NodeContext, i: int, what: str, ranks: Sequence[int]) -> tuple[int, ...]:
    shape = ctx.shape(i)
    if len(shape) not in ranks:
        text = " or ".join(str(r) for r in ranks)
        raise ctx.error(f"input {i} ({what}) has shape {list(shape)}; {ctx.op_type} takes rank {text} there")
    return shape


def refuse_outputs(ctx: NodeContext, indices: Sequence[int], why: str) -> None:
    """A ModelError when one of the outputs `indices` is used (plugnn does not compute them)."""
    for i in indices:
        if ctx.output_used(i):
            raise ctx.error(f"output {i} ({ctx.node.output[i]!r}) is used; {why}")


class Nodes:
    """The default-domain nodes standing for ctx's node, built in order."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self.importer = ctx.importer
        self.base = base_name(ctx)
        self.nodes: list[Any] = []
        self.constants: dict[str, np.ndarray] = {}

    def input(self, i: int) -> str:
        """The node's input i ("" when it is absent)."""
        return self.ctx.node.input[i] if self.ctx.has_input(i) else ""

    def output(self, i: int) -> str | None:
        """The node's output i, or None when the node does not name it."""
        outputs = self.ctx.node.output
        return outputs[i] if i < len(outputs) and outputs[i] else None

    def const(self, array: Any, role: str, dtype: Any = None) -> str:
        name = fresh_value(self.importer, f"{self.base}/{role}")
        value = np.asarray(array, dtype=dtype)
        value.setflags(write=False)
        self.constants[name] = value
        return name

    def ints(self, values: Sequence[int], role: str) -> str:
        return self.const(np.asarray(list(values), np.int64), role)

    def add(self, op_type: str, inputs: Sequence[str], role: str, *, outputs: int | Sequence[str | None] = 1,
            **attributes: Any) -> Any:
        """Append one node; its output name (a list of them when it has several).
        An output given as a name (the node's own output) is written there; None: a fresh name."""
        onnx = onnx_module()
        wanted = [None] * outputs if isinstance(outputs, int) else list(outputs)
        names = [w if w else fresh_value(self.importer, f"{self.base}/{role}" + (f"_{k}" if k else ""))
                 for k, w in enumerate(wanted)]
        node = onnx.helper.make_node(op_type, list(inputs), names,
                                     name=fresh_node_name(self.importer, f"{self.base}/{role}"), **attributes)
        self.nodes.append(node)
        return names if len(names) > 1 else names[0]

    def expansion(self) -> Expansion:
        return Expansion(self.nodes, [CONTRIB_OPSET] * len(self.nodes), note=NOTE, constants=self.constants)
