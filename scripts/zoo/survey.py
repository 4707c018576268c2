"""Survey: how far plugnn gets on each zoo model, against onnxruntime.

    python scripts/zoo/survey.py                    # every model, CI shape, batch 1
    python scripts/zoo/survey.py --batch 4 --only resnet18 --json survey.json

Per model (filled from seed 0, inputs from make_inputs(seed=0)) and per backend list (CpuAcc then
CpuRef, and CpuRef alone): plugnn.onnx.load(model, input_shapes=...), plugnn.optimize(net, runtime,
backends=[...]), runtime.load_network, loaded.run, then max |plugnn - onnxruntime| / max |onnxruntime|
over the outputs. Prints a Markdown table: the first error (stage and shortened message) or the
agreement, and the operators the model uses that plugnn.onnx.OPERATORS does not list.
Needs the plugnn venv (plugnn, onnx, onnxruntime); never torch.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "zoo"))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import weights  # noqa: E402  (tests/zoo/weights.py)

import plugnn  # noqa: E402
import plugnn.onnx  # noqa: E402

BACKEND_SETS = {"CpuAcc+CpuRef": ["CpuAcc", "CpuRef"], "CpuRef": ["CpuRef"]}


def shorten(message: str, limit: int = 110) -> str:
    message = message.splitlines()[0] if message else message
    message = re.sub(r"^<ModelProto[^>]*>: ", "", message)
    message = re.sub(r"; plugnn imports: .*", "", message)
    message = re.sub(r"^node ('[^']*' )?\(#\d+, ", "node (", message)
    return message if len(message) <= limit else message[: limit - 3] + "..."


def run_plugnn(runtime: Any, model: Any, entry: dict[str, Any], inputs: dict[str, np.ndarray], batch: int,
               backends: list[str]) -> tuple[str, dict[str, np.ndarray] | None]:
    stage = "import"
    try:
        network = plugnn.onnx.load(model, input_shapes=weights.input_shapes(entry, "ci", batch))
        stage = "optimize"
        optimized = plugnn.optimize(network, runtime, backends=backends)
        stage = "load"
        with runtime.load_network(optimized) as loaded:
            stage = "run"
            outputs = loaded.run(inputs)
    except Exception as exc:  # the survey reports every failure, whatever its type
        return f"{stage}: {type(exc).__name__}: {shorten(str(exc))}", None
    return "runs", outputs


def survey(entries: list[dict[str, Any]], batch: int) -> list[dict[str, Any]]:
    supported = set(plugnn.onnx.OPERATORS)
    rows = []
    with plugnn.Runtime() as runtime:
        available = set(runtime.backend_ids)
        for entry in entries:
            started = time.perf_counter()
            filled = weights.materialize(weights.model_path(entry), seed=0)
            inputs = weights.make_inputs(entry, "ci", batch, seed=0)
            session = ort.InferenceSession(filled.SerializeToString(), providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            reference = dict(zip(names, session.run(None, inputs)))
            row: dict[str, Any] = {"name": entry["name"], "family": entry["family"], "opset": entry["opset"],
                                   "operators": entry["operators"],
                                   "missing": [op for op in entry["operators"] if op not in supported]}
            for label, backends in BACKEND_SETS.items():
                backends = [b for b in backends if b in available]
                status, outputs = run_plugnn(runtime, filled, entry, inputs, batch, backends)
                difference = None
                if outputs is not None:
                    try:
                        difference = max(weights.relative_difference(outputs[n], reference[n]) for n in names)
                    except Exception as exc:  # a missing output or a shape mismatch
                        status = f"compare: {type(exc).__name__}: {shorten(str(exc))}"
                row[label] = {"status": status, "relative_difference": difference}
            row["seconds"] = round(time.perf_counter() - started, 1)
            rows.append(row)
            print(f"{entry['name']:30s} {row['CpuAcc+CpuRef']['status'][:100]}", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | opset | CpuAcc+CpuRef | max rel diff | CpuRef alone | max rel diff | operators not imported |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        cells = []
        for label in BACKEND_SETS:
            d = r[label]["relative_difference"]
            status = r[label]["status"]
            if label != "CpuAcc+CpuRef" and status == r["CpuAcc+CpuRef"]["status"] and status != "runs":
                status = "same"
            cells += [status.replace("|", "\\|"), "-" if d is None else f"{d:.2g}"]
        lines.append(f"| {r['name']} | {r['opset']} | " + " | ".join(cells) + f" | {', '.join(r['missing']) or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--only", action="append", metavar="NAME")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    entries = weights.load_manifest()["models"]
    if args.only:
        unknown = set(args.only) - {e["name"] for e in entries}
        if unknown:
            parser.error(f"unknown model(s) {sorted(unknown)}")
        entries = [e for e in entries if e["name"] in args.only]
    rows = survey(entries, args.batch)
    print(table(rows))
    runs = sum(r["CpuAcc+CpuRef"]["status"] == "runs" for r in rows)
    print(f"\n{runs} of {len(rows)} models run on CpuAcc+CpuRef at the CI shape, batch {args.batch}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
