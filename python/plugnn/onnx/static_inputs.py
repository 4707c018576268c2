"""Inputs an operator needs at import time (shapes, pads, starts, repeats, ...), with the error
that says why when one is computed at run time: plugnn builds networks of static shapes, so a
value the output shape depends on must be known when the network is built."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext


def dtype_of(value: Any) -> np.dtype:
    """The NumPy element type of an array or a network Tensor."""
    if isinstance(value, Tensor):
        return np.dtype(value.dtype.numpy_dtype)
    return np.dtype(value.dtype)


def static_array(ctx: NodeContext, i: int, what: str, why: str) -> np.ndarray:
    """Input i's value, which must be known at import time. A graph input raises
    NeedsConstantError (the ONNX backend binds it); a value computed at run time a ModelError
    saying `why` it is needed (e.g. "the output shape depends on it")."""
    value = ctx.value(i)
    if isinstance(value, Tensor) and ctx.input_name(i) not in ctx.importer.graph_inputs:
        raise ctx.run_time_error(i, f"input {i} ({what}) {ctx.input_name(i)!r} is computed at run time, but {why}; "
                                    f"plugnn builds static shapes, so it must be known at import time (a constant, or "
                                    f"computed from constants and static shapes)")
    return np.asarray(ctx.const(i, what))


def static_ints(ctx: NodeContext, i: int, what: str, why: str, integral: bool = True) -> list[int]:
    """static_array as a flat list of Python ints (integer element types only, unless not `integral`)."""
    array = static_array(ctx, i, what, why)
    if integral and array.dtype.kind not in "iu":
        raise ctx.error(f"input {i} ({what}) has element type {array.dtype}; an integer type is expected")
    if array.dtype.kind not in "iuf":
        raise ctx.error(f"input {i} ({what}) has element type {array.dtype}; a numeric type is expected")
    return [int(v) for v in array.reshape(-1)]


def static_dims(ctx: NodeContext, i: int, what: str, why: str) -> list[Any]:
    """static_ints for a value that may be computed from symbolic dims (a shape, a slice's
    bounds): its elements as ints and plugnn.symbolic Dims, kept as expressions."""
    if ctx.sym(i) is not None:
        return ctx.shape_values(i, what)
    return static_ints(ctx, i, what, why)
