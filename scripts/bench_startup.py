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
BUNDLED = subprocess.run([sys.executable, "-c", "from plugnn import loader; print(loader.BUNDLED_DIR)"],
                         capture_output=True, text=True).stdout.strip()

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


PROBE_COST = """
import glob, json, os, sys, tempfile, time
from plugnn import loader, probe
files = sorted(glob.glob(os.path.join(sys.argv[1], '*_backend.so')))[:int(sys.argv[2])]
repeat = int(sys.argv[3])
def best(fn):
    times = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); times.append((time.perf_counter() - t) * 1e3)
    return min(times), sorted(times)[len(times) // 2]
def first():
    os.environ['XDG_CACHE_HOME'] = tempfile.mkdtemp(); probe.forget(); probe.probe_files(files)
def from_disk():
    probe.forget(); probe.probe_files(files)
first()  # the disk cache of the last directory stays for from_disk
out = {'first': best(first), 'disk': best(from_disk), 'memory': best(lambda: probe.probe_files(files)),
       'entry_points': best(lambda: loader.installed_backends())}
print(json.dumps(out))
"""


def probe_cost(directory: Path, count: int, repeat: int) -> dict[str, list[float]]:
    """In one process: the minimum and median over `repeat` of probing `count` plugins with an empty
    cache (first), from the disk cache (a new process's case), from memory, and of scanning the
    entry points of the installed distributions."""
    result = subprocess.run([sys.executable, "-c", PROBE_COST, str(directory), str(count), str(repeat)],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


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
    costs: dict[int, dict[str, list[float]]] = {}
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
            costs[count] = probe_cost(directory, count, args.repeat)
        costs[2] = probe_cost(Path(BUNDLED), 2, args.repeat)

    results = {name: None if t is None else {"median_ms": statistics.median(t), "min_ms": min(t), "max_ms": max(t)}
               for name, t in rows.items()}
    if args.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "results": results,
                          "probe_cost_ms": costs}, indent=2))
        return 0
    print(f"python {platform.python_version()} on {platform.machine()}, {args.repeat} fresh processes per row")
    print(f"{'measurement':48} {'median ms':>10} {'min':>8} {'max':>8}")
    for name, r in results.items():
        if r is None:
            print(f"{name:48} {'not available (not installed or failed)':>28}")
        else:
            print(f"{name:48} {r['median_ms']:10.1f} {r['min_ms']:8.1f} {r['max_ms']:8.1f}")
    print(f"\nthe probe alone, in one process, {args.repeat} times each: min / median ms")
    print(f"{'plugins':>8} {'first (probed)':>18} {'cached on disk':>18} {'in memory':>14} {'entry points':>14}")
    for count, c in sorted(costs.items()):
        print(f"{count:8} " + " ".join(f"{c[k][0]:8.2f} /{c[k][1]:7.2f}" for k in ("first", "disk", "memory",
                                                                                  "entry_points")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
