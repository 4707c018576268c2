"""Throughput of plugnn.ray.Predictor on a local Ray cluster with 1 and 2 workers: the zoo's
ResNet-18 (seed 0) on seeded 224x224 images, batch 32, each worker with 1 CPU (1 CpuAcc
thread). Also, for scale, one process running the same batches through an InferenceSession with
1 and 2 CpuAcc threads, and onnxruntime (1 and 2 intra-op threads).

Wall time of the whole pass (`take_all`), actor start and model load included, and the
throughput of the pass; then the time of a pass over one batch (start-up) and the throughput of
the whole pass past that start-up; printed as a Markdown table (docs/performance.md). Run from the
repository root: python scripts/ray_throughput.py [--images N]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def model_path(work: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    import onnx
    from zoo import weights

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == "resnet18")
    path = work / "resnet18.onnx"
    if not path.exists():
        onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(path))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    work = Path(tempfile.gettempdir()) / "plugnn_ray_throughput"
    work.mkdir(exist_ok=True)
    model = model_path(work)
    images = np.random.default_rng(0).standard_normal((args.images, 3, 224, 224)).astype(np.float32)
    rows: list[tuple[str, float]] = []
    steady: list[tuple[int, float, float]] = []

    import onnxruntime as ort

    import plugnn

    for threads in (1, 2):
        session = plugnn.InferenceSession(str(model), backend_options={"CpuAcc": {"num_threads": str(threads)}})
        session.run(None, {"image": images[: args.batch]})
        start = time.perf_counter()
        for i in range(0, args.images, args.batch):
            session.run(None, {"image": images[i:i + args.batch]})
        rows.append((f"one process, InferenceSession, {threads} CpuAcc thread(s)", time.perf_counter() - start))
        session.close()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        reference = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        reference.run(None, {"image": images[: args.batch]})
        start = time.perf_counter()
        for i in range(0, args.images, args.batch):
            reference.run(None, {"image": images[i:i + args.batch]})
        rows.append((f"one process, onnxruntime {ort.__version__}, {threads} thread(s)", time.perf_counter() - start))

    import ray

    from plugnn.ray import predict

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        dataset = ray.data.from_numpy(images).materialize()  # column "data"
        one_batch = ray.data.from_numpy(images[: args.batch]).materialize()
        for workers in (1, 2):
            start = time.perf_counter()
            predict(one_batch, model, workers=workers, cpus_per_worker=1, batch_size=args.batch,
                    input_columns={"image": "data"}).take_all()
            startup = time.perf_counter() - start
            start = time.perf_counter()
            out = predict(dataset, model, workers=workers, cpus_per_worker=1, batch_size=args.batch,
                          input_columns={"image": "data"}).take_all()
            elapsed = time.perf_counter() - start
            assert len(out) == args.images
            rows.append((f"Ray Data, {workers} worker(s) x 1 CPU, whole pass (start and model load included)",
                         elapsed))
            steady.append((workers, startup, (args.images - args.batch) / max(elapsed - startup, 1e-9)))
    finally:
        ray.shutdown()
    print(f"ResNet-18 (zoo, seed 0), {args.images} images 3x224x224, batches of {args.batch}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs\n")
    print("| configuration | wall time | images/s |")
    print("| --- | --- | --- |")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} s | {args.images / seconds:.1f} |")
    print()
    print("| Ray workers | a one-batch pass (start-up: actors, imports, model load, one batch) | "
          "images/s past the start-up |")
    print("| --- | --- | --- |")
    for workers, startup, rate in steady:
        print(f"| {workers} | {startup:.2f} s | {rate:.1f} |")


if __name__ == "__main__":
    main()
