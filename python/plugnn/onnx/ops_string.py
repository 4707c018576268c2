"""The string operators: StringNormalizer (10), StringConcat (20), StringSplit (20), RegexFullMatch
(20). String tensors are run-time values of plugnn's dynamic path (plugnn.dynamic.strings runs
these operators, and Equal, Cast and CastLike on strings), never layers: the importer's part is
to say that a model holding one needs that path (plugnn.InferenceSession, plugnn.onnx.backend).
"""

from __future__ import annotations

from typing import Any

from plugnn.onnx.context import NodeContext
from plugnn.onnx.ops_control import needs_runtime
from plugnn.onnx.registry import op

WHY = "string tensors are run-time values, not layers: the runtime runs the string operators"


def _runtime(op_type: str, attributes: tuple[str, ...]) -> None:
    def convert(ctx: NodeContext) -> list[Any]:
        raise needs_runtime(ctx, WHY)

    op(op_type, attributes)(convert)


_runtime("StringNormalizer", ("case_change_action", "is_case_sensitive", "locale", "stopwords"))
_runtime("StringConcat", ())
_runtime("StringSplit", ("delimiter", "maxsplit"))
_runtime("RegexFullMatch", ("pattern",))
