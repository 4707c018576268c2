"""Folding with symbolic dims: the shape computations of a symbolic import.

In a symbolic import (plugnn.symbolic) a value known at import that is computed from symbolic
dims (Shape -> Gather -> Unsqueeze -> Concat -> Reshape's target) holds its hints, and the
import keeps its elements as expressions beside it (`ImportState.sym`). A node reading such a
value is folded twice: as usual on the hints, then on the expressions, by a rule of this module
or, for data movement, by the same fold run on the expressions (NumPy moves Python objects as it
moves numbers). The expressions are kept only when they give back the hint fold's result; else
the node's symbolic inputs are pinned to their hints (the network is specialized on them),
which is always correct.

A node whose symbolic input is a shape argument (ConstantOfShape's shape, Range's bounds,
Expand's shape, a Slice's starts and ends on data that is not symbolic itself, ...) is not
folded: its result has a shape that changes with the symbols, so it is converted into layers
(the converters read such arguments with `NodeContext.shape_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import Converter
from plugnn.symbolic import Dim, sym_max, sym_min

# Inputs that are shape arguments: a symbolic one makes the node layers, not a fold.
SHAPE_ARGUMENTS: dict[str, tuple[int, ...]] = {
    "ConstantOfShape": (0,), "Range": (0, 1, 2), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4),
    "Reshape": (1,), "Resize": (1, 2, 3), "Upsample": (1,), "Pad": (1, 2, 3), "OneHot": (1,), "TopK": (1,),
    "Split": (1,), "Trilu": (1,), "CenterCropPad": (1,), "EyeLike": (), "RandomNormalLike": (),
}

# Operators that read only their inputs' shapes (a symbolic value's shape is never symbolic).
SHAPE_ONLY = frozenset({"Shape", "Size"})

# Operators whose fold, run on object arrays of ints and Dims, computes their expressions.
MOVEMENT = frozenset({"Gather", "GatherElements", "GatherND", "Concat", "Slice", "Squeeze", "Unsqueeze", "Reshape",
                      "Flatten", "Transpose", "Identity", "Expand", "Tile", "Split", "ReduceMax", "ReduceMin",
                      "CumSum"})  # ReduceProd, ReduceSum: rules of their own (RULES)


def _elementwise(fn: Callable[..., Any]) -> Callable[[NodeContext, list[Any]], list[Any]]:
    def rule(ctx: NodeContext, values: list[Any]) -> list[Any]:
        operands = [np.asarray(v, dtype=object) for v in values if v is not None]
        return [np.asarray(np.frompyfunc(fn, len(operands), 1)(*operands), dtype=object)]

    return rule


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, float) or isinstance(b, float):
        raise TypeError("a float division")
    if isinstance(a, Dim) or isinstance(b, Dim):
        # ONNX's integer Div truncates toward zero; floor division is the same for operands of
        # one sign, which the guard (or the bounds) establishes
        if (a >= 0) == (b > 0):
            return a // b
        return -((-a) // b)
    return int(np.trunc(a / b)) if b else 0


def _mod(ctx: NodeContext, values: list[Any]) -> list[Any]:
    fmod = int(ctx.attr("fmod", 0))

    def one(a: Any, b: Any) -> Any:
        if isinstance(a, float) or isinstance(b, float):
            raise TypeError("a float modulo")
        if fmod and not (a >= 0 and b > 0):  # C's fmod: the sign of the dividend
            raise TypeError("fmod of operands that may be negative")
        return a % b

    return _elementwise(one)(ctx, values)


def _compare(fn: Callable[[Any, Any], bool]) -> Callable[[NodeContext, list[Any]], list[Any]]:
    def rule(ctx: NodeContext, values: list[Any]) -> list[Any]:
        a, b = (np.asarray(v, dtype=object) for v in values)
        return [np.asarray(np.frompyfunc(lambda x, y: bool(fn(x, y)), 2, 1)(a, b), dtype=bool)]

    return rule


def _variadic(fn: Callable[[Any, Any], Any]) -> Callable[[NodeContext, list[Any]], list[Any]]:
    def rule(ctx: NodeContext, values: list[Any]) -> list[Any]:
        operands = [np.asarray(v, dtype=object) for v in values if v is not None]
        result = operands[0]
        for other in operands[1:]:
            result = np.frompyfunc(fn, 2, 1)(result, other)
        return [np.asarray(result, dtype=object)]

    return rule


def _where(ctx: NodeContext, values: list[Any]) -> list[Any]:
    condition, a, b = values
    return [np.asarray(np.where(np.asarray(condition, dtype=bool), np.asarray(a, dtype=object),
                                np.asarray(b, dtype=object)), dtype=object)]


def _cast(ctx: NodeContext, values: list[Any]) -> list[Any] | None:
    from plugnn.onnx.context import np_dtype

    to = ctx.attr("to")
    target = np_dtype(int(to)) if to is not None else None
    if target is None or target.kind not in "iu":
        return None  # a shape computed in floats (a Resize scale): taken at its hints
    return [np.asarray(values[0], dtype=object)]


def _cast_like(ctx: NodeContext, values: list[Any]) -> list[Any] | None:
    target = ctx.value(1)
    if not np.asarray(target).dtype.kind in "iu":
        return None
    return [np.asarray(values[0], dtype=object)]


def _reduction(ufunc: Any) -> Callable[[NodeContext, list[Any]], list[Any] | None]:
    """ReduceProd / ReduceSum of a shape (an element count: Shape -> ReduceProd), on the
    expressions: axes from the attribute (opset < 18) or input 1, keepdims,
    noop_with_empty_axes."""
    def rule(ctx: NodeContext, values: list[Any]) -> list[Any] | None:
        x = np.asarray(values[0], dtype=object)
        axes_value = values[1] if len(values) > 1 and values[1] is not None else ctx.attr("axes")
        if axes_value is not None and any(isinstance(a, Dim) for a in np.asarray(axes_value, dtype=object).flat):
            return None
        axes = [int(a) for a in np.asarray(axes_value).reshape(-1)] if axes_value is not None else []
        keep = bool(int(ctx.attr("keepdims", 1)))
        if not axes:
            if int(ctx.attr("noop_with_empty_axes", 0)):
                return [x]
            axes = list(range(x.ndim))
        result = ufunc.reduce(x, axis=tuple(a % x.ndim for a in axes), keepdims=keep) if x.ndim else x
        return [np.asarray(result, dtype=object)]

    return rule


RULES: dict[str, Callable[[NodeContext, list[Any]], list[Any] | None]] = {
    "ReduceProd": _reduction(np.multiply),
    "ReduceSum": _reduction(np.add),
    "Add": _elementwise(lambda a, b: a + b),
    "Sub": _elementwise(lambda a, b: a - b),
    "Mul": _elementwise(lambda a, b: a * b),
    "Div": _elementwise(_div),
    "Neg": _elementwise(lambda a: -a),
    "Abs": _elementwise(abs),
    "Mod": _mod,
    "Max": _variadic(sym_max),
    "Min": _variadic(sym_min),
    "Sum": _variadic(lambda a, b: a + b),
    "Equal": _compare(lambda a, b: a == b),
    "Less": _compare(lambda a, b: a < b),
    "LessOrEqual": _compare(lambda a, b: a <= b),
    "Greater": _compare(lambda a, b: a > b),
    "GreaterOrEqual": _compare(lambda a, b: a >= b),
    "Where": _where,
    "Cast": _cast,
    "CastLike": _cast_like,
}


def fold(ctx: NodeContext, converter: Converter, inputs: Sequence[Any]) -> list[Any] | None:
    """The outputs of a foldable node with symbolic inputs (their expressions recorded in the
    import's `sym`), or None when it must be converted into layers instead."""
    importer = ctx.importer
    syms = [ctx.sym(i) for i in range(ctx.num_inputs)]
    symbolic = [i for i, s in enumerate(syms) if s is not None]
    op_type = ctx.op_type
    if op_type in SHAPE_ONLY:
        return converter.fold(ctx)  # type: ignore[misc]
    shape_arguments = SHAPE_ARGUMENTS.get(op_type, ())
    if any(i in shape_arguments for i in symbolic) and (op_type not in MOVEMENT or 0 not in symbolic):
        return None  # a result whose shape follows the symbols: layers
    outputs = converter.fold(ctx)  # type: ignore[misc]
    if outputs is None:
        return None
    values = [s if s is not None else inputs[i] for i, s in enumerate(syms)]
    expressions: list[Any] | None = None
    try:
        rule = RULES.get(op_type)
        if rule is not None:
            expressions = rule(ctx, values)
        elif op_type in MOVEMENT:
            expressions = _refold(ctx, converter, syms)
    except (TypeError, ValueError, ArithmeticError, IndexError, AttributeError):
        expressions = None
    if expressions is None or not _agree(expressions, outputs):
        ctx.pin_symbolic_inputs(f"{op_type} has no symbolic fold for these inputs")
        return outputs
    for j, out_name in enumerate(ctx.node.output):
        if j < len(expressions) and out_name and _holds_dims(expressions[j]):
            importer.sym[out_name] = np.asarray(expressions[j], dtype=object)
    return outputs


def _refold(ctx: NodeContext, converter: Converter, syms: Sequence[np.ndarray | None]) -> list[Any] | None:
    """The node's fold run with its symbolic inputs' expressions in place of their hints."""
    values = ctx.importer.values
    names = ctx.node.input
    saved = {}
    try:
        for i, s in enumerate(syms):
            if s is not None:
                saved[names[i]] = values[names[i]]
                values[names[i]] = s
        return converter.fold(ctx)  # type: ignore[misc]
    finally:
        values.update(saved)


def _agree(expressions: Sequence[Any], outputs: Sequence[Any]) -> bool:
    """True when the expressions, taken at their hints, are the hint fold's outputs."""
    if len(expressions) < len([o for o in outputs if o is not None]):
        return False
    for e, o in zip(expressions, outputs):
        if o is None:
            continue
        e_arr, o_arr = np.asarray(e, dtype=object), np.asarray(o)
        if e_arr.shape != o_arr.shape:
            return False
        hints = [v.hint if isinstance(v, Dim) else v for v in e_arr.reshape(-1)]
        if any(isinstance(h, (float, np.floating)) and o_arr.dtype.kind in "iu" for h in hints):
            return False
        if not np.array_equal(np.asarray(hints, dtype=o_arr.dtype).reshape(o_arr.shape), o_arr):
            return False
    return True


def _holds_dims(value: Any) -> bool:
    return any(isinstance(v, Dim) for v in np.asarray(value, dtype=object).reshape(-1))
