"""The operator registry: per operator domain, op_type -> Converter (filled by the ops_*.py modules).

`OPS` is the default domain's (ai.onnx) table, as it always was; `DOMAINS` maps every domain
plugnn imports to its table (`OPS` under ""), and `ORT_DEFAULT_DOMAIN` holds the operators
onnxruntime adds to the default domain under names ONNX does not define
(SimplifiedLayerNormalization), consulted only when ONNX has no operator of that name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# A converter takes a NodeContext and returns one value per ONNX output (None: not computed).
ConvertFn = Callable[[Any], Sequence[Any]]

MICROSOFT_DOMAIN = "com.microsoft"
ORT_DEFAULT_DOMAIN = "onnxruntime:ai.onnx"  # a table's key, not a domain a model names


@dataclass(frozen=True)
class Converter:
    op_type: str
    convert: ConvertFn
    attributes: tuple[str, ...]
    fold: ConvertFn | None = None  # NumPy evaluation when every input is known (None: not applicable)
    outputs_note: str = ""
    domain: str = ""
    # Attributes not listed are warned about and ignored (not refused) for nodes read at an opset
    # below this: onnxruntime's own schemas of the operator allow unchecked attributes.
    unchecked_attributes_below: int = 0


OPS: dict[str, Converter] = {}
DOMAINS: dict[str, dict[str, Converter]] = {"": OPS, MICROSOFT_DOMAIN: {}, ORT_DEFAULT_DOMAIN: {}}


def op(op_type: str, attributes: Sequence[str] = (), fold: ConvertFn | None = None,
       outputs_note: str = "", *, domain: str = "", unchecked_attributes_below: int = 0
       ) -> Callable[[ConvertFn], ConvertFn]:
    def register(fn: ConvertFn) -> ConvertFn:
        DOMAINS.setdefault(domain, {})[op_type] = Converter(op_type, fn, tuple(attributes), fold, outputs_note,
                                                            domain, unchecked_attributes_below)
        return fn

    return register


def converter_for(domain: str, op_type: str) -> Converter | None:
    """The converter of `op_type` in `domain` ("" and "ai.onnx" are the default domain), or None."""
    if domain in ("", "ai.onnx"):
        return OPS.get(op_type)
    return DOMAINS.get(domain, {}).get(op_type)
