"""Start-up cost of plugnn, measured in fresh processes, side by side with onnxruntime.

    python scripts/bench_startup.py [--repeat 15] [--plugins 100]

Reports the median (and min/max) of: `import plugnn`; `plugnn.Runtime()` with the
bundled backends; a Runtime scanning a directory of N valid plugins (built here with
plugnn_add_backend from plugins/mocks); and `import onnxruntime` when it is installed.
The Runtime rows are taken three ways: probe="none" (plugins loaded unprobed), the
first start (every plugin probed by plugnn-probe: a cache directory of the process's own,
empty) and a cached start (the verdicts on disk from an earlier process).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SNIPPETS = {
    "import plugnn": "import time; t = time.perf_counter(); import plugnn; print(time.perf_counter() - t)",
    "import onnxruntime": (
        "import time; t = time.perf_counter(); import onnxruntime; print(time.perf_counter() - t)"),
}


FRESH_CACHE = "import os, tempfile; os.environ['XDG_CACHE_HOME'] = tempfile.mkdtemp(); "


def runtime_snippet(arguments: str, expected: int | None, prefix: str = "") -> str:
    check = f"assert len(r.backend_ids) == {expected}, r.backend_ids; " if expected is not None else ""
    return (f"{prefix}import plugnn, time; t = time.perf_counter(); r = plugnn.Runtime({arguments}); "
            f"d = time.perf_counter() - t; {check}print(d)")


def measure(code: str, repeat: int, env: dict[str, str] | None = None) -> list[float] | None:
    times = []
    for _ in range(repeat):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            return None
        times.append(float(result.stdout.strip().splitlines()[-1]) * 1e3)
    return times


def build_plugins(count: int, workdir: Path) -> Path:
    cmake_dir = subprocess.run([sys.executable, "-m", "plugnn", "--cmake-dir"], check=True,
                               capture_output=True, text=True).stdout.strip()
    build = workdir / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(REPO / "plugins" / "mocks"), "-B", str(build), f"-Dplugnn_DIR={cmake_dir}",
                    f"-DMOCK_SCALE_COUNT={count}", "-DCMAKE_BUILD_TYPE=Release", *generator],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "--parallel"], check=True, capture_output=True)
    return build / "out" / "scale"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--plugins", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows: dict[str, list[float] | None] = {name: measure(code, args.repeat) for name, code in SNIPPETS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        env = dict(os.environ, XDG_CACHE_HOME=str(cache))
        bundled_only = dict(env, PLUGNN_DYNAMIC_BACKEND_PATHS="{bundled}")
        rows["Runtime(), bundled, probe='none'"] = measure(runtime_snippet("probe='none'", None), args.repeat, env)
        rows["Runtime(), bundled, first (probed)"] = measure(runtime_snippet("", None, FRESH_CACHE), args.repeat, env)
        measure(runtime_snippet("", None), 1, env)  # the verdicts on disk
        rows["Runtime(), bundled, cached"] = measure(runtime_snippet("", None), args.repeat, env)
        rows["Runtime(), bundled, cached, no {installed}"] = measure(runtime_snippet("", None), args.repeat,
                                                                     bundled_only)
        for count in sorted({10, args.plugins}):
            directory = build_plugins(count, Path(tmp) / f"plugins{count}")
            where = f"dynamic_backends_path={str(directory)!r}"
            rows[f"Runtime(), {count} plugins, probe='none'"] = measure(
                runtime_snippet(f"{where}, probe='none'", count), args.repeat, env)
            rows[f"Runtime(), {count} plugins, first (probed)"] = measure(
                runtime_snippet(where, count, FRESH_CACHE), args.repeat, env)
            measure(runtime_snippet(where, count), 1, env)
            rows[f"Runtime(), {count} plugins, cached"] = measure(runtime_snippet(where, count), args.repeat, env)

    results = {name: None if t is None else {"median_ms": statistics.median(t), "min_ms": min(t), "max_ms": max(t)}
               for name, t in rows.items()}
    if args.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "results": results}, indent=2))
        return 0
    print(f"python {platform.python_version()} on {platform.machine()}, {args.repeat} fresh processes per row")
    print(f"{'measurement':48} {'median ms':>10} {'min':>8} {'max':>8}")
    for name, r in results.items():
        if r is None:
            print(f"{name:48} {'not available (not installed or failed)':>28}")
        else:
            print(f"{name:48} {r['median_ms']:10.1f} {r['min_ms']:8.1f} {r['max_ms']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
