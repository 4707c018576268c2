"""The operator registry: op_type -> Converter (filled by the ops_*.py modules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# A converter takes a NodeContext and returns one value per ONNX output (None: not computed).
ConvertFn = Callable[[Any], Sequence[Any]]


@dataclass(frozen=True)
class Converter:
    op_type: str
    convert: ConvertFn
    attributes: tuple[str, ...]
    fold: ConvertFn | None = None  # NumPy evaluation when every input is known (None: not applicable)
    outputs_note: str = ""


OPS: dict[str, Converter] = {}


def op(op_type: str, attributes: Sequence[str] = (), fold: ConvertFn | None = None,
       outputs_note: str = "") -> Callable[[ConvertFn], ConvertFn]:
    def register(fn: ConvertFn) -> ConvertFn:
        OPS[op_type] = Converter(op_type, fn, tuple(attributes), fold, outputs_note)
        return fn

    return register
