"""The per-run cost of running a backend in a worker process (Runtime(isolate=...)) against the
same backend in-process, alternated in one process.

    python scripts/bench_isolation.py [--rounds 15] [--backend CpuAcc] [--threads 1]

Two runtimes are made, one plain and one isolating the backend. Each round times a batch of runs
of every case in-process, then isolated; the figure per case is the median over rounds of the
time per run, and the overhead their difference. Cases: a one-Add network on 4 float32 elements
(the fixed cost of one run: staging the two inputs and the output, one request and its answer),
and the zoo's ResNet-18 (tests/zoo, weights from seed 0) at 1x3x224x224 (every layer in one
request; the arena shared). On a shared machine the rounds interleave with whatever else runs:
compare the two columns of one run of the script, not figures across runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import plugnn

TESTS = Path(__file__).resolve().parent.parent / "tests"


def add_case(runtime: plugnn.Runtime, backend: str) -> Callable[[], object]:
    net = plugnn.Network("add")
    a, b = net.add_input("a", (4,)), net.add_input("b", (4,))
    net.add_output(net.add_add(a, b, name="add"), "y")
    loaded = runtime.load_network(plugnn.optimize(net, runtime, [backend]))
    feeds = {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
    return lambda: loaded.run(feeds)


def resnet_case(runtime: plugnn.Runtime, backend: str) -> Callable[[], object]:
    import plugnn.onnx

    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    from zoo import weights

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == "resnet18")
    filled = weights.materialize(weights.model_path(entry), seed=0)
    network = plugnn.onnx.load(filled, input_shapes=weights.input_shapes(entry, "full", 1))
    loaded = runtime.load_network(plugnn.optimize(network, runtime, [backend]))
    feeds = weights.make_inputs(entry, "full", 1, seed=0)
    return lambda: loaded.run(feeds)


def timed(fn: Callable[[], object], runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--backend", default="CpuAcc")
    parser.add_argument("--threads", type=int, default=1, help="the backend's num_threads (CpuAcc)")
    args = parser.parse_args(argv)
    options = {"CpuAcc": {"num_threads": str(args.threads)}}
    cases = {"one Add": (add_case, 2000), "ResNet-18 1x3x224x224": (resnet_case, 5)}
    with plugnn.Runtime(backend_options=options) as plain, \
            plugnn.Runtime(backend_options=options, isolate={args.backend: "process"}) as isolated:
        made = {name: (make(plain, args.backend), make(isolated, args.backend), runs)
                for name, (make, runs) in cases.items()}
        samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in made}
        for fn_plain, fn_isolated, runs in made.values():  # warm up
            timed(fn_plain, max(1, runs // 10))
            timed(fn_isolated, max(1, runs // 10))
        for _ in range(args.rounds):
            for name, (fn_plain, fn_isolated, runs) in made.items():
                samples[name][0].append(timed(fn_plain, runs))
                samples[name][1].append(timed(fn_isolated, runs))
    print(f"backend {args.backend}, num_threads {args.threads}, {args.rounds} alternated rounds: per run, "
          f"median (fastest round)")
    print(f"{'case':24} {'in-process':>20} {'isolated':>20} {'overhead':>20}")
    for name, (here, there) in samples.items():
        a, b = statistics.median(here), statistics.median(there)
        fa, fb = min(here), min(there)
        unit, scale = ("us", 1e6) if a < 1e-3 else ("ms", 1e3)
        cells = [f"{x * scale:.1f} ({y * scale:.1f}) {unit}" for x, y in ((a, fa), (b, fb))]
        cells.append(f"{(b - a) * scale:+.1f} ({(fb - fa) * scale:+.1f}) {unit}")
        print(f"{name:24} " + " ".join(f"{c:>20}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
