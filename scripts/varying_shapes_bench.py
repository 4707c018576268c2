"""Requests of changing shapes: plugnn.InferenceSession against onnxruntime on the zoo's BERT-like
model (bert_tiny, seeded weights), as an embedding or classification service sees them:

  lengths   60 requests of random length 8..128 tokens at batch 1 (seeded);
  batches   batches 1..16 in random order at length 128, twice each.

For each, both runtimes are created and run one warm-up request at a shape outside the set (what
a service does before it takes traffic; plugnn builds its network at its first run, onnxruntime
in its constructor: "start" is creation plus that request, for each, the first session of the
process, both packages imported before), then run the same requests
in one process, alternating request by request: the mean time per request, the first call at a
shape (what a new shape costs) against the same shape's next call, the outputs compared, and how
many times plugnn imported the model (`session.networks_built`: 1 means one network served every
shape). Prints a Markdown report
(docs/performance.md, "Run-time shapes"). Run from the repository root:

    python scripts/varying_shapes_bench.py [--threads N] [--model bert_tiny] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench.cpu import this_cpu

    return this_cpu().model


def feed(entry: dict[str, Any], batch: int, length: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for spec in entry["inputs"]:
        shape = (batch, length)
        values = spec["values"]
        if values["kind"] == "integers":
            out[spec["name"]] = rng.integers(values["low"], values["high"], size=shape).astype(spec["dtype"])
        else:
            out[spec["name"]] = np.ones(shape, spec["dtype"])
    return out


def measure(name: str, requests: list[tuple[int, int]], warm_up: tuple[int, int], entry: dict[str, Any],
            model: bytes, threads: int) -> dict[str, Any]:
    import onnxruntime as ort

    from plugnn.session import InferenceSession  # imported before the clocks, as onnxruntime is

    rng = np.random.default_rng(0)
    clock = time.perf_counter
    first_inputs = feed(entry, *warm_up, rng)
    start = clock()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    reference = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    reference.run(None, first_inputs)
    reference_start_ms = (clock() - start) * 1e3
    start = clock()
    session = InferenceSession(model, backend_options={"CpuAcc": {"num_threads": str(threads)}})
    session.run(None, first_inputs)
    start_ms = (clock() - start) * 1e3
    times: dict[str, list[float]] = {"plugnn": [], "onnxruntime": []}
    first: list[tuple[float, float]] = []  # plugnn's first call at a shape, its second call
    seen: set[tuple[int, int]] = set()
    worst = 0.0
    for batch, length in requests:
        inputs = feed(entry, batch, length, rng)
        start = clock()
        ours = session.run(None, inputs)
        ours_ms = (clock() - start) * 1e3
        start = clock()
        theirs = reference.run(None, inputs)
        times["onnxruntime"].append((clock() - start) * 1e3)
        times["plugnn"].append(ours_ms)
        if (batch, length) not in seen:
            seen.add((batch, length))
            start = clock()
            session.run(None, inputs)
            first.append((ours_ms, (clock() - start) * 1e3))
        for a, b in zip(ours, theirs):
            worst = max(worst, float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30)))
    ratios = [f / s for f, s in first]
    result = {
        "workload": name, "requests": len(requests), "distinct_shapes": len(seen),
        "plugnn_mean_ms": statistics.fmean(times["plugnn"]),
        "onnxruntime_mean_ms": statistics.fmean(times["onnxruntime"]),
        "first_call_over_steady_median": statistics.median(ratios), "first_call_over_steady_max": max(ratios),
        "first_call_ms_median": statistics.median(f for f, _ in first),
        "networks_built": session.networks_built, "max_relative_difference": worst,
        "warm_up": list(warm_up), "plugnn_start_ms": start_ms, "onnxruntime_start_ms": reference_start_ms,
        "steady_resizes": session.networks()[0].get("steady_resizes", 0) if session.networks() else 0,
    }
    session.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default="bert_tiny")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from zoo import weights

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == args.model)
    model = weights.materialize(weights.model_path(entry), seed=0).SerializeToString()
    rng = np.random.default_rng(42)
    lengths = [(1, int(n)) for n in rng.integers(8, 129, size=60)]
    order = list(range(1, 17)) * 2
    rng.shuffle(order)
    batches = [(int(b), 128) for b in order]
    results = [measure("lengths 8..128, batch 1", lengths, (1, 7), entry, model, args.threads),
               measure("batches 1..16, length 128", batches, (1, 64), entry, model, args.threads)]
    if args.json:
        print(json.dumps({"cpu": cpu_model(), "threads": args.threads, "model": args.model, "results": results},
                         indent=2))
        return 0
    print(f"{args.model}, {args.threads} thread(s), {cpu_model()}, {time.strftime('%Y-%m-%d')}\n")
    print("| workload | requests (shapes) | plugnn ms/request | onnxruntime ms/request | ratio | first call / "
          "steady (median, max) | start ms plugnn / onnxruntime | networks built | steady re-sizes | "
          "max rel. diff |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['workload']} | {r['requests']} ({r['distinct_shapes']}) | {r['plugnn_mean_ms']:.3f} | "
              f"{r['onnxruntime_mean_ms']:.3f} | {r['plugnn_mean_ms'] / r['onnxruntime_mean_ms']:.2f} | "
              f"{r['first_call_over_steady_median']:.1f}, {r['first_call_over_steady_max']:.1f} | "
              f"{r['plugnn_start_ms']:.0f} / {r['onnxruntime_start_ms']:.0f} | "
              f"{r['networks_built']} | {r['steady_resizes']} | {r['max_relative_difference']:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
