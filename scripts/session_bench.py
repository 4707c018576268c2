"""Measures plugnn.InferenceSession against onnxruntime on the zoo's ResNet-50 (seeded weights):

  specialization  the time to make each new specialization (batch 1, 2, 4, 8 at 224x224), its
                  stages, and how many layers were re-sized from an earlier one;
  memory          the process's RSS after the session is made, after 1 and after 4
                  specializations (each run once), in a fresh process per configuration;
                  onnxruntime's after the same runs;
  overhead        steady-state time per run: ResNet-50 at batch 1 (session.run, the
                  specialization's LoadedNetwork.run alone, onnxruntime), and a one-Add model of
                  4 elements with a symbolic batch, where a run is nearly all overhead.

Prints a Markdown report (docs/performance.md "Sessions"). Run from the repository root:
    python scripts/session_bench.py [--repeats N] [--json]
Each configuration runs in its own subprocess (`--child ...`), so RSS figures do not mix.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (1, 2, 4, 8)


def rss_mb() -> float:
    gc.collect()
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def materialize(out_dir: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    import onnx
    from zoo import weights

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == "resnet50")
    path = out_dir / "resnet50.onnx"
    if not path.exists():
        onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(path))
    return path


def image(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)


# ---- children (one configuration each) ---------------------------------------------------------


def child_plugnn(model: str, backends: list[str] | None, run: bool) -> dict[str, Any]:
    import onnx  # noqa: F401 - imported before the first reading, like the session does

    import plugnn

    base = rss_mb()
    session = plugnn.InferenceSession(model, backends=backends, max_specializations=8)
    made = rss_mb()
    rss = []
    for batch in BATCHES:
        feed = {"image": image(batch)}
        if run:
            session.run(None, feed)
        else:  # specialize without running (CpuRef would take minutes per run at 224x224)
            session._cache.release(session._cache.acquire((feed["image"].shape,)))  # noqa: SLF001
        rss.append(rss_mb())
    specs = sorted(session.specializations(), key=lambda s: s["shapes"]["image"][0])
    session.close()
    return {"base_mb": base, "session_mb": made, "rss_mb": rss, "ran": run,
            "specializations": [{"batch": s["shapes"]["image"][0], "ms": s["milliseconds"], "stages_ms": s["stages_ms"],
                                 "layers": s["layers"], "reshaped": s["reshaped_layers"]} for s in specs]}


def child_ort(model: str) -> dict[str, Any]:
    import onnxruntime as ort

    base = rss_mb()
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    made = rss_mb()
    rss = []
    for batch in BATCHES:
        session.run(None, {"image": image(batch)})
        rss.append(rss_mb())
    return {"base_mb": base, "session_mb": made, "rss_mb": rss, "version": ort.__version__}


def median_us(fn: Any, repeats: int, inner: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(samples)


def child_overhead(model: str, repeats: int) -> dict[str, Any]:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    import plugnn

    add = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "one_add",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["n", 4])]),
        opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(add)
    a = np.ones((1, 4), np.float32)
    feed = {"a": a, "b": a}
    ours = plugnn.InferenceSession(add.SerializeToString())
    theirs = ort.InferenceSession(add.SerializeToString(), providers=["CPUExecutionProvider"])
    ours.run(None, feed)
    loaded = ours.specialization({"a": (1, 4), "b": (1, 4)}).loaded  # type: ignore[union-attr]
    tiny = {"session_us": median_us(lambda: ours.run(None, feed), repeats, 2000),
            "loaded_us": median_us(lambda: loaded.run(feed), repeats, 2000),
            "ort_us": median_us(lambda: theirs.run(None, feed), repeats, 2000)}
    big = plugnn.InferenceSession(model)
    big_ort = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = {"image": image(1)}
    big.run(None, x)
    big_loaded = big.specialization({"image": (1, 3, 224, 224)}).loaded  # type: ignore[union-attr]
    resnet = {"session_ms": median_us(lambda: big.run(None, x), repeats, 3) / 1e3,
              "loaded_ms": median_us(lambda: big_loaded.run(x), repeats, 3) / 1e3,
              "ort_ms": median_us(lambda: big_ort.run(None, x), repeats, 3) / 1e3}
    return {"one_add": tiny, "resnet50_batch1": resnet}


# ---- the parent -------------------------------------------------------------------------------


def run_child(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: dict[str, Any]) -> str:
    lines = [f"ResNet-50 (zoo, seed 0, {results['weights_mb']:.0f} MB of float32 weights), 224x224, "
             f"batches {', '.join(map(str, BATCHES))} in that order; onnxruntime {results['ort']['version']}; "
             f"{results['machine']}.", ""]
    lines.append("| configuration | batch | specialization ms (import / optimize / load) | layers re-sized |")
    lines.append("| --- | --- | --- | --- |")
    for label in ("CpuAcc+CpuRef", "CpuRef"):
        for s in results[label]["specializations"]:
            st = s["stages_ms"]
            lines.append(f"| {label} | {s['batch']} | {s['ms']:.0f} ({st['import']:.0f} / {st['optimize']:.0f} / "
                         f"{st['load']:.0f}) | {s['reshaped']} of {s['layers']} |")
    lines += ["", "| configuration | RSS before | session made | 1 specialization | 4 specializations |",
              "| --- | --- | --- | --- | --- |"]
    for label in ("CpuAcc+CpuRef", "CpuRef", "ort"):
        r = results[label]
        name = f"onnxruntime {r['version']}" if label == "ort" else f"plugnn {label}" + ("" if r.get("ran", True)
                                                                                         else " (loaded, not run)")
        lines.append(f"| {name} | {r['base_mb']:.0f} MB | {r['session_mb']:.0f} MB | {r['rss_mb'][0]:.0f} MB | "
                     f"{r['rss_mb'][-1]:.0f} MB |")
    o = results["overhead"]
    t, b = o["one_add"], o["resnet50_batch1"]
    lines += ["", "| steady state, median per run | plugnn session.run | LoadedNetwork.run alone | onnxruntime |",
              "| --- | --- | --- | --- |",
              f"| one Add of [1, 4] (symbolic batch) | {t['session_us']:.1f} us | {t['loaded_us']:.1f} us | "
              f"{t['ort_us']:.1f} us |",
              f"| ResNet-50, batch 1, CpuAcc+CpuRef | {b['session_ms']:.1f} ms | {b['loaded_ms']:.1f} ms | "
              f"{b['ort_ms']:.1f} ms |"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, model, *rest = args.child
        if kind == "plugnn":
            backends = None if rest[0] == "default" else rest[0].split(",")
            result = child_plugnn(model, backends, run=rest[1] == "run")
        elif kind == "ort":
            result = child_ort(model)
        else:
            result = child_overhead(model, int(rest[0]))
        print(json.dumps(result))
        return
    work = Path(os.environ.get("PLUGNN_SESSION_BENCH_DIR", tempfile.gettempdir())) / "plugnn_session_bench"
    work.mkdir(parents=True, exist_ok=True)
    model = str(materialize(work))
    import onnx

    weights_mb = sum(np.prod(t.dims) * 4 for t in onnx.load(model).graph.initializer) / 2**20
    results = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "weights_mb": float(weights_mb),
        "CpuAcc+CpuRef": run_child("plugnn", model, "default", "run"),
        "CpuRef": run_child("plugnn", model, "CpuRef", "load"),
        "ort": run_child("ort", model),
        "overhead": run_child("overhead", model, str(args.repeats)),
    }
    print(json.dumps(results, indent=2) if args.json else report(results))


if __name__ == "__main__":
    main()
