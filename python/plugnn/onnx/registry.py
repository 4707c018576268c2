"""The operator registry: op_type -> Converter for the default domain (`OPS`), (domain, op_type)
-> Converter for the other domains plugnn imports (`DOMAIN_OPS`); filled by the ops_*.py modules."""

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
DOMAIN_OPS: dict[tuple[str, str], Converter] = {}
DEFAULT_DOMAINS = ("", "ai.onnx")


def op(op_type: str, attributes: Sequence[str] = (), fold: ConvertFn | None = None,
       outputs_note: str = "", domain: str = "") -> Callable[[ConvertFn], ConvertFn]:
    def register(fn: ConvertFn) -> ConvertFn:
        converter = Converter(op_type, fn, tuple(attributes), fold, outputs_note)
        if domain in DEFAULT_DOMAINS:
            OPS[op_type] = converter
        else:
            DOMAIN_OPS[(domain, op_type)] = converter
        return fn

    return register


def domain_converter(domain: str, op_type: str) -> Converter | None:
    """The converter of an operator of another domain than the default one, or None."""
    return DOMAIN_OPS.get((domain, op_type))
