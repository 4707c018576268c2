"""Det (opsets 11 and 22): one LINEAR_ALGEBRA layer (DETERMINANT).

Its own layer kind because no composition of existing layers computes it: elimination with
pivoting chooses rows by the data, step after step, which no fixed sequence of layers can.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import LinearAlgebraOp
from plugnn.onnx.context import NodeContext
from plugnn.onnx.ops_sampling import since
from plugnn.onnx.registry import op


def _check(ctx: NodeContext, shape: tuple[int, ...]) -> None:
    since(ctx, 11)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"X must be square matrices [..., M, M], got shape {list(shape)}")


def _fold(ctx: NodeContext) -> list[Any] | None:
    x = np.asarray(ctx.value(0))
    _check(ctx, x.shape)
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        return None
    return [np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype)]


@op("Det", (), fold=_fold)
def det(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    _check(ctx, tuple(x.shape))
    if not x.dtype.is_float:
        raise ctx.error(f"X is {x.dtype.numpy_name}; Det takes float types")
    return [ctx.network.add_linear_algebra(LinearAlgebraOp.DETERMINANT, x, name=ctx.name())]
