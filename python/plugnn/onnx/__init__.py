"""ONNX import: `plugnn.onnx.load(model)` turns an ONNX model into a `plugnn.Network`.

`onnx` is imported lazily (install it with `pip install onnx` or the `plugnn[onnx]` extra).
The ONNX backend (`onnx.backend.base.Backend`) lives in `plugnn.onnx.backend`.
See docs/onnx.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["load", "OPERATORS"]


def load(model: Any, *, name: str | None = None, input_shapes: Any = None, base_dir: Any = None,
         hints: Any = None, integer_qdq: bool = True) -> Any:
    """Import an ONNX model (a path, the serialized bytes or an `onnx.ModelProto`) as a Network.

    `input_shapes` maps input names to shapes that fix their dynamic (symbolic) dims; the dims it
    does not fix stay symbols (plugnn.symbolic), and the loaded network runs at any of their
    values. `hints` maps a symbol (a dim's dim_param, or `<input>:<axis>`) to its typical value,
    at which backends are asked at optimize time (default 1). `base_dir` is where external tensor
    data lives when `model` is bytes or a ModelProto. A QDQ model's `DequantizeLinear -> op ->
    QuantizeLinear` groups import as integer operators (QLinearConv, QLinearMatMul, ...), as
    onnxruntime's optimizer rewrites them; `integer_qdq=False` imports the graph as written
    (float32 ops between the quantize and dequantize nodes).
    Raises `plugnn.errors.ModelError` naming the file, node, operator and attribute at fault.
    """
    from plugnn.onnx.importer import load as _load

    return _load(model, name=name, input_shapes=input_shapes, base_dir=base_dir, hints=hints, integer_qdq=integer_qdq)


def __getattr__(name: str) -> Any:
    if name == "OPERATORS":
        from plugnn.onnx.importer import supported_operators

        return supported_operators()
    if name == "backend":
        import importlib

        return importlib.import_module("plugnn.onnx.backend")
    raise AttributeError(f"module 'plugnn.onnx' has no attribute {name!r}")


if TYPE_CHECKING:
    from plugnn.onnx import backend  # noqa: F401
