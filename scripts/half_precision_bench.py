"""float16 versions of zoo models (converted at run time with onnxconverter-common's
float16 converter, weights from a seed) on plugnn against onnxruntime, one process.

    python scripts/half_precision_bench.py [--models resnet50,bert_tiny,...] [--threads 1] [--runs 20]
                                           [--io float16|float32]

For each model: the float16 file (`--io float32` keeps float32 inputs and outputs, as
`keep_io_types=True`), plugnn.InferenceSession (CpuAcc, CpuRef) and onnxruntime's CPU provider
on the same file and the zoo's full-size inputs (a file onnxruntime refuses is reported so); median ms of `--runs` runs after two warm-ups,
alternating; the largest difference of the outputs relative to the largest magnitude, and how
many of plugnn's layers run on CpuRef.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "scripts"))


def convert(name: str, io: str):  # type: ignore[no-untyped-def]
    from onnxconverter_common import float16

    from zoo import weights

    manifest = {e["name"]: e for e in weights.load_manifest()["models"]}
    entry = manifest[name]
    model = weights.materialize(weights.model_path(entry), 0)
    half = float16.convert_float_to_float16(model, keep_io_types=io == "float32", disable_shape_infer=False)
    feed = weights.make_inputs(entry, "full", 1, 0)
    inputs = {i.name: i.type.tensor_type.elem_type for i in half.graph.input}
    feed = {k: v.astype(np.float16) if v.dtype == np.float32 and inputs.get(k) == 10 else v for k, v in feed.items()}
    return half.SerializeToString(), feed


def median_ms(run, feed, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run(feed)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,efficientnet_b0,densenet121,convnext_tiny,bert_tiny,distilbert_tiny,gpt2_tiny,vit_tiny,unet,yolo_tiny")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--io", choices=("float16", "float32"), default="float16")
    args = parser.parse_args()
    import onnxruntime as ort

    import plugnn
    from decode_bench import cpu_model

    print(f"float16 models (io {args.io}), {cpu_model()}, {args.threads} thread(s), python {platform.python_version()}, "
          f"onnxruntime {ort.__version__}, median of {args.runs} runs, ms\n")
    print("| model | plugnn | onnxruntime | ratio | layers on CpuRef | max difference / max magnitude |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.models.split(","):
        model, feed = convert(name, args.io)
        ours = plugnn.InferenceSession(model, providers=["CpuAcc", "CpuRef"],
                                       backend_options={"CpuAcc": {"num_threads": str(args.threads)}})
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        try:
            theirs = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a file the converter broke for the peer too: reported
            print(f"| {name} | - | onnxruntime refuses the converted file: {str(exc)[:120]} | | | |")
            continue
        a, b = ours.run(None, feed), theirs.run(None, feed)
        for _ in range(2):
            ours.run(None, feed), theirs.run(None, feed)
        p = median_ms(lambda f: ours.run(None, f), feed, args.runs)
        o = median_ms(lambda f: theirs.run(None, f), feed, args.runs)
        p = min(p, median_ms(lambda f: ours.run(None, f), feed, args.runs))
        o = min(o, median_ms(lambda f: theirs.run(None, f), feed, args.runs))
        diff = max(float(np.abs(x.astype(np.float64) - y.astype(np.float64)).max() / max(np.abs(y.astype(np.float64)).max(), 1e-30))
                   for x, y in zip(a, b))
        graph = ours._cache.builds()[-1].optimized.graph
        on_ref = sum(n.backend_id == "CpuRef" for n in graph.nodes)
        print(f"| {name} | {p:.2f} | {o:.2f} | {p / o:.2f} | {on_ref} of {len(graph.nodes)} | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
