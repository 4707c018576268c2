"""Run-time values of the dynamic path: a tensor is a numpy.ndarray, a sequence a Python list of
arrays, an empty optional None (an optional holding a value is that value). Describing them in
errors, and checking one against the type a subgraph declares for it."""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.errors import RunError


def describe(value: Any) -> str:
    """"float32 [2, 3]", "a sequence of 2 tensors", "an empty optional", ..."""
    if value is None:
        return "an empty optional (None)"
    if isinstance(value, list):
        return f"a sequence of {len(value)} tensor{'s' if len(value) != 1 else ''}"
    if isinstance(value, np.ndarray):
        return f"{value.dtype} {list(value.shape)}"
    return type(value).__name__


def _type_text(type_proto: Any) -> str:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        from plugnn.onnx.context import type_name

        tensor = type_proto.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]
        return f"{type_name(tensor.elem_type)} {dims if tensor.HasField('shape') else '(any shape)'}"
    if kind == "sequence_type":
        return f"a sequence of {_type_text(type_proto.sequence_type.elem_type)}"
    if kind == "optional_type":
        return f"an optional {_type_text(type_proto.optional_type.elem_type)}"
    return kind or "undefined"


def check_declared(value: Any, type_proto: Any, what: str) -> None:
    """RunError when `value` does not fit the declared type: the kind (tensor, sequence,
    optional), a tensor's element type, and the fixed dims of a tensor declared with rank >= 1
    (graphs often declare a scalar where a body passes any shape, so rank 0 is not checked)."""
    kind = type_proto.WhichOneof("value")
    if kind is None:
        return
    problem = _misfit(value, type_proto, top=True)
    if problem:
        raise RunError(f"{what} is {describe(value)}, declared {_type_text(type_proto)}: {problem}")


def _misfit(value: Any, type_proto: Any, top: bool) -> str:
    from plugnn.onnx.context import np_dtype

    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        return "" if value is None else _misfit(value, type_proto.optional_type.elem_type, top)
    if kind == "sequence_type":
        if not isinstance(value, list):
            return "a sequence was expected"
        for element in value:
            problem = _misfit(element, type_proto.sequence_type.elem_type, False)
            if problem:
                return f"element {describe(element)}: {problem}"
        return ""
    if kind != "tensor_type":
        return ""
    if not isinstance(value, np.ndarray):
        return "a tensor was expected"
    tensor = type_proto.tensor_type
    if tensor.elem_type and np_dtype(tensor.elem_type) != value.dtype:
        return "another element type"
    if top and tensor.HasField("shape") and len(tensor.shape.dim) >= 1:
        dims = tensor.shape.dim
        if len(dims) != value.ndim:
            return "another rank"
        for axis, (dim, size) in enumerate(zip(dims, value.shape)):
            if dim.HasField("dim_value") and dim.dim_value != size:
                return f"dim {axis} is {size}, declared {dim.dim_value}"
    return ""


def dense(value: Any) -> np.ndarray:
    """`value` as a C-contiguous array of its own rank (np.ascontiguousarray makes a scalar 1-D)."""
    array = np.asarray(value)
    return array if array.flags.c_contiguous else np.array(array, order="C")
