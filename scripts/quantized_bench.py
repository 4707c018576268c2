"""Quantized CNNs: plugnn.InferenceSession against onnxruntime on zoo models (seeded weights)
quantized here by onnxruntime's quantizer (`quant_pre_process`, then `quantize_static`:
per-channel int8 weights, uint8 activations, calibrated on 4 seeded inputs), in both formats
it writes:

  float32    the model as exported (the yardstick);
  QOperator  QLinearConv, QLinearMatMul and com.microsoft's QLinear* nodes;
  QDQ        DequantizeLinear -> Conv -> QuantizeLinear groups, which plugnn rewrites into
             integer operators at load (plugnn.onnx.qdq) as onnxruntime's optimizer does.

For each, both runtimes run the same seeded input in one process, in 3 alternating blocks of
calls each (3 warm-up calls per block): the median time per call (ms) over `--runs` calls, and the largest
difference of the outputs in quantization steps of the output (its last DequantizeLinear's
scale; relative to the output's range for float32). Prints a Markdown table
(docs/performance.md, "Quantized models"). Run from the repository root:

    python scripts/quantized_bench.py [--threads N] [--models resnet18,mobilenet_v2] [--shape full]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 3  # alternating blocks of calls per runtime


def cpu_model() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench.cpu import this_cpu

    return this_cpu().model


def quantized(entry: dict[str, Any], source: Path, target: Path, quant_format: Any, shape_kind: str) -> None:
    from onnxruntime import quantization as oq
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = target.with_suffix(".prepared.onnx")
    quant_pre_process(str(source), str(prepared))
    rng = np.random.default_rng(100)

    class Calibration(oq.CalibrationDataReader):
        def __init__(self) -> None:
            self._feeds = iter([feeds(entry, shape_kind, rng) for _ in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._feeds, None)

    oq.quantize_static(str(prepared), str(target), Calibration(), quant_format=quant_format, per_channel=True,
                       activation_type=oq.QuantType.QUInt8, weight_type=oq.QuantType.QInt8)


def feeds(entry: dict[str, Any], shape_kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    from zoo import weights

    shapes = weights.input_shapes(entry, shape_kind, 1)
    return {spec["name"]: rng.standard_normal(shapes[spec["name"]]).astype(np.float32) for spec in entry["inputs"]}


def output_step(path: Path) -> float | None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    outputs = {o.name for o in model.graph.output}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = [n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] in outputs]
    return float(inits[last[-1].input[1]].reshape(-1)[0]) if last else None


def measure(path: Path, inputs: dict[str, np.ndarray], threads: int, runs: int) -> dict[str, Any]:
    import onnxruntime as ort

    import plugnn

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    data = path.read_bytes()
    reference = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data, backend_options={"CpuAcc": {"num_threads": str(threads)}})
    clock = time.perf_counter
    times: dict[str, list[float]] = {"plugnn": [], "onnxruntime": []}
    results: dict[str, Any] = {}
    # Blocks of calls, alternating: call by call, onnxruntime's threads still spinning after its
    # run would take the second CPU from plugnn's next one (and the other way round).
    for _ in range(ROUNDS):
        for name, run in (("plugnn", session.run), ("onnxruntime", reference.run)):
            for k in range(3 + max(1, runs // ROUNDS)):
                start = clock()
                results[name] = run(None, inputs)[0]
                if k >= 3:
                    times[name].append((clock() - start) * 1e3)
    ours, theirs = results["plugnn"], results["onnxruntime"]
    step = output_step(path)
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    difference = float(diff.max()) / step if step else float(diff.max()) / max(float(np.abs(theirs).max()), 1e-30)
    session.close()
    return {"plugnn_ms": statistics.median(times["plugnn"]), "onnxruntime_ms": statistics.median(times["onnxruntime"]),
            "difference": difference, "in_steps": step is not None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default="resnet18,mobilenet_v2")
    parser.add_argument("--shape", default="full", help="the zoo's shape kind: ci or full")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    logging.getLogger().setLevel(logging.ERROR)
    import onnx
    from onnxruntime import quantization as oq

    from zoo import weights

    manifest = {e["name"]: e for e in weights.load_manifest()["models"]}
    print(f"{args.threads} thread(s), shape {args.shape}, {cpu_model()}, {time.strftime('%Y-%m-%d')}\n")
    print("| model | format | plugnn ms | onnxruntime ms | ratio | max difference |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.models.split(","):
            entry = manifest[name]
            source = Path(scratch) / f"{name}.onnx"
            onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(source))
            inputs = feeds(entry, args.shape, np.random.default_rng(0))
            for label, quant_format in (("float32", None), ("QOperator", oq.QuantFormat.QOperator),
                                        ("QDQ", oq.QuantFormat.QDQ)):
                path = source
                if quant_format is not None:
                    path = Path(scratch) / f"{name}.{label}.onnx"
                    quantized(entry, source, path, quant_format, args.shape)
                r = measure(path, inputs, args.threads, args.runs)
                unit = "steps" if r["in_steps"] else "of the range"
                print(f"| {name} | {label} | {r['plugnn_ms']:.2f} | {r['onnxruntime_ms']:.2f} | "
                      f"{r['plugnn_ms'] / r['onnxruntime_ms']:.2f} | {r['difference']:.3g} {unit} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
