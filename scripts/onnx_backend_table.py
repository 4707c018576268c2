"""Which backend runs each ONNX operator: measured on ONNX's own node tests, not written by hand.

    python scripts/onnx_backend_table.py [--backends CpuAcc,CpuRef] [--only REGEX] [--write docs/onnx.md]

For every node test of the installed onnx package (generated in memory by onnx's loader) (the `_expanded` twins excluded, `_expanded_ver18` too: they test
function bodies, not the operator), the test's model is imported with its first data set's
input shapes (inputs the importer needs as values are bound to the test's values, as
`plugnn.onnx.backend` does) and optimized for the preferred backends; no layer runs. Each test
is filed under its operator (the op_type of the model's first node that is not a Constant) and under the element type of its first input: float32, or "other types". A test
counts for a backend when every layer of its network went there; a test whose layers went to
several backends counts as mixed and lists the layers that fell back with the first backend's
reason. Tests that fold away completely (no layer left) count as folded; tests the importer
refuses or that need the dynamic path (control flow, sequences) are not counted.

Prints one row per operator; with --write, replaces the table between the markers
`<!-- backend-table:start -->` and `<!-- backend-table:end -->` of the given Markdown file.
"""

from __future__ import annotations

import argparse
import collections
import logging
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests

import plugnn
from plugnn.errors import PlugnnError
from plugnn.onnx.importer import DynamicModelError, DynamicShapeError, NeedsConstantError, import_model

START, END = "<!-- backend-table:start -->", "<!-- backend-table:end -->"


@dataclass
class Tally:
    """Where the layers of one operator's tests went, for one group of element types."""
    tests: int = 0
    on: collections.Counter[str] = field(default_factory=collections.Counter)  # all layers on one backend
    mixed: int = 0
    folded: int = 0
    fallbacks: collections.Counter[str] = field(default_factory=collections.Counter)  # "layer type: reason"

    def cell(self, first: str) -> str:
        if self.tests == 0:
            return ""
        parts = [f"{backend} {n}" for backend, n in sorted(self.on.items(), key=lambda kv: (kv[0] != first, kv[0]))]
        if self.mixed:
            parts.append(f"mixed {self.mixed}")
        if self.folded:
            parts.append(f"folded {self.folded}")
        return f"{', '.join(parts)} (of {self.tests})"


def _first_input_type(model: onnx.ModelProto) -> int | None:
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name not in initializers and value.type.HasField("tensor_type"):
            return value.type.tensor_type.elem_type
    return None


def _test_inputs(case: Any, model: onnx.ModelProto) -> dict[str, np.ndarray] | None:
    """The first data set's inputs by name; None when one is not a plain array (sequences, optionals)."""
    if not case.data_sets:
        return None
    initializers = {t.name for t in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in initializers]
    values = {name: numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value
              for name, value in zip(names, case.data_sets[0][0])}
    if not all(isinstance(v, np.ndarray) and v.dtype != object for v in values.values()):
        return None
    return values


def _network(model: onnx.ModelProto, source: str, inputs: dict[str, np.ndarray]) -> Any:
    """Import as plugnn.onnx.backend does: bind the inputs the importer needs as values."""
    bound: dict[str, np.ndarray] = {}
    shapes = {name: value.shape for name, value in inputs.items()}
    while True:
        try:
            return import_model(model, source=source, input_shapes={n: s for n, s in shapes.items() if n not in bound},
                                constants=bound)
        except NeedsConstantError as exc:
            if exc.input_name in bound or exc.input_name not in inputs:
                raise
            bound[exc.input_name] = inputs[exc.input_name]


def survey(backends: list[str], only: str | None) -> dict[str, dict[str, Tally]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy warnings of onnx's test generators (log(0), 0/0)
        cases = sorted(load_model_tests(kind="node"), key=lambda c: c.name)
    table: dict[str, dict[str, Tally]] = collections.defaultdict(lambda: collections.defaultdict(Tally))
    with plugnn.Runtime() as runtime:
        for case in cases:
            if "_expanded" in case.name or (only and not re.search(only, case.name)):
                continue
            model = case.model
            if model is None or not model.graph.node:
                continue
            node = next((n for n in model.graph.node if n.op_type != "Constant"), model.graph.node[0])
            if node.domain not in ("", "ai.onnx"):
                continue
            op_type = node.op_type
            inputs = _test_inputs(case, model)
            if inputs is None:
                continue
            try:
                network = _network(model, case.name, inputs)
                optimized = plugnn.optimize(network, runtime, backends)
            except (DynamicModelError, DynamicShapeError, PlugnnError):
                continue
            group = "float32" if _first_input_type(model) == onnx.TensorProto.FLOAT else "other"
            tally = table[op_type][group]
            tally.tests += 1
            records = optimized.assignments()
            used = {r["backend"] for r in records}
            if not records:
                tally.folded += 1
            elif len(used) == 1:
                tally.on[used.pop()] += 1
            else:
                tally.mixed += 1
            for record in records:
                if record["backend"] != backends[0]:
                    reasons = [a["reason"] for a in record["attempts"] if a["backend"] == backends[0] and a["reason"]]
                    if reasons:
                        tally.fallbacks[f"{record['type']}: {reasons[0]}"] += 1
    return table


def _reason(tally: Tally) -> str:
    if not tally.fallbacks:
        return ""
    text, _ = tally.fallbacks.most_common(1)[0]
    more = len(tally.fallbacks) - 1
    text = text.replace("|", "/").replace("\n", " ")
    return text + (f" (and {more} other reason{'s' * (more > 1)})" if more else "")


def render(table: dict[str, dict[str, Tally]], backends: list[str]) -> str:
    first = backends[0]
    lines = [f"| operator | float32 node tests | other element types | why a layer went past {first} |",
             "| --- | --- | --- | --- |"]
    for op_type in sorted(table):
        f32, other = table[op_type]["float32"], table[op_type]["other"]
        reason = _reason(f32) or _reason(other)
        lines.append(f"| {op_type} | {f32.cell(first)} | {other.cell(first)} | {reason} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="CpuAcc,CpuRef", help="preferred backends, comma-separated")
    parser.add_argument("--only", help="a regular expression on test names")
    parser.add_argument("--write", type=Path, help="a Markdown file whose backend-table markers to fill")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    try:
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        text = render(survey(backends, args.only), backends)
    finally:  # the tests call main() in their process: logging as it was for the tests after them
        logging.disable(logging.NOTSET)
    if args.write is None:
        print(text)
        return 0
    doc = args.write.read_text()
    if START not in doc or END not in doc:
        print(f"{args.write}: no {START} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    args.write.write_text(f"{head}{START}\n{text}\n{END}{tail}")
    print(f"{args.write}: {len(table_rows(text))} operators")
    return 0


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines()[2:] if line.startswith("| ")]


if __name__ == "__main__":
    sys.exit(main())
