"""What a new user waits for before the first answer: session creation and the first run, each in
a fresh process, plugnn side by side with onnxruntime (and OpenVINO when installed).

    python scripts/session_start_bench.py [--models resnet50,bert_tiny] [--repeat 7] [--threads 1]

Each sample is a fresh interpreter that imports the runtime's package (timed: "import", for
plugnn with the onnx package it reads models with; numpy is imported before, all need it), creates a session on the zoo's model with seeded
weights (written once to a temporary directory as a plain .onnx file: "create") and runs it
twice on the manifest's full-size inputs ("first" and "second"). "setup" is what the runtime
spends before the first answer beyond one run: create + first - second. plugnn builds its
network at the first run (import, optimize, load: its stages are printed), onnxruntime and
OpenVINO at creation. Medians over --repeat processes, alternating runtime by runtime.

plugnn's modules are byte-compiled first (as `pip install` does for an installed package, and as
the peers' installed packages are): an editable checkout run with PYTHONDONTWRITEBYTECODE would
otherwise compile every edited module in every child.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

CHILD = r"""
import json, sys, time
import numpy as np
runtime, path, inputs_path, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
feed = dict(np.load(inputs_path))
clock = time.perf_counter
t0 = clock()
if runtime == "plugnn":
    import onnx  # plugnn reads models with the onnx package: its import is plugnn's import
    import plugnn
    import plugnn.session  # imported lazily by plugnn.InferenceSession: counted as the import
    t1 = clock()
    session = plugnn.InferenceSession(path, providers=["CpuAcc", "CpuRef"],
                                      backend_options={"CpuAcc": {"num_threads": str(threads)}})
    run = lambda: session.run(None, feed)
elif runtime == "onnxruntime":
    import onnxruntime
    t1 = clock()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    run = lambda: session.run(None, feed)
else:
    import openvino
    t1 = clock()
    core = openvino.Core()
    compiled = core.compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    run = lambda: request.infer(feed)
t2 = clock()
run()
t3 = clock()
run()
t4 = clock()
out = {"import": t1 - t0, "create": t2 - t1, "first": t3 - t2, "second": t4 - t3}
if runtime == "plugnn":
    stages = session.networks()[0]["stages_ms"]
    out.update({f"build {k}": v / 1e3 for k, v in stages.items()})
print(json.dumps({k: v * 1e3 for k, v in out.items()}))
"""


def available(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def prepare(names: list[str], workdir: Path) -> dict[str, tuple[Path, Path]]:
    import numpy as np
    import onnx
    from zoo import weights

    manifest = {e["name"]: e for e in weights.load_manifest()["models"]}
    files = {}
    for name in names:
        if name not in manifest:
            raise SystemExit(f"{name}: not in tests/zoo/manifest.json (its models: {', '.join(sorted(manifest))})")
        entry = manifest[name]
        model = workdir / f"{name}.onnx"
        onnx.save(weights.materialize(weights.model_path(entry), 0), str(model))
        feed = workdir / f"{name}.npz"
        np.savez(feed, **weights.make_inputs(entry, "full", 1, 0))
        files[name] = (model, feed)
    return files


def sample(runtime: str, model: Path, feed: Path, threads: int) -> dict[str, float]:
    result = subprocess.run([sys.executable, "-c", CHILD, runtime, str(model), str(feed), str(threads)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{runtime} on {model.name} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet50,bert_tiny")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runtimes = ["plugnn"] + [r for r in ("onnxruntime", "openvino") if available(r)]
    import plugnn

    compileall.compile_dir(str(Path(plugnn.__file__).parent), quiet=1)
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = prepare(args.models.split(","), Path(tmp))
        for name, (model, feed) in files.items():
            samples: dict[str, list[dict[str, float]]] = {r: [] for r in runtimes}
            for _ in range(args.repeat):
                for runtime in runtimes:
                    samples[runtime].append(sample(runtime, model, feed, args.threads))
            results[name] = {}
            for runtime, rows in samples.items():
                medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
                medians["setup"] = statistics.median(r["create"] + r["first"] - r["second"] for r in rows)
                results[name][runtime] = medians
    if args.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "threads": args.threads,
                          "results": results}, indent=2))
        return 0
    print(f"python {platform.python_version()}, {args.threads} thread(s), median of {args.repeat} fresh processes "
          f"per row, ms")
    columns = ["import", "create", "first", "second", "setup"]
    print(f"{'model':14} {'runtime':12} " + " ".join(f"{c:>8}" for c in columns) + "   plugnn's build stages")
    for name, by_runtime in results.items():
        for runtime, m in by_runtime.items():
            stages = ", ".join(f"{k.removeprefix('build ')} {v:.1f}" for k, v in m.items() if k.startswith("build "))
            print(f"{name:14} {runtime:12} " + " ".join(f"{m[c]:8.1f}" for c in columns) + f"   {stages}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
