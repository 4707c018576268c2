"""Per-run and per-layer runtime overhead of plugnn, side by side with onnxruntime.

    python scripts/bench_overhead.py [--runs 20000]

A one-Add network on 4 float32 elements measures the cost of one run() (input checks,
binding, one workload call, output allocation); a chain of N one-element relu layers gives
the added cost per layer, (t(N) - t(1)) / (N - 1). onnxruntime runs the same one-Add model
built with onnx.helper in the same process (install the bench extra: pip install '.[bench]').
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

import plugnn


def per_call_us(fn: Callable[[], object], runs: int, repeats: int = 5) -> float:
    for _ in range(min(1000, runs)):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        samples.append((time.perf_counter() - start) / runs * 1e6)
    return statistics.median(samples)


def plugnn_add(runtime: plugnn.Runtime, backend: str) -> Callable[[], object]:
    net = plugnn.Network("add")
    a, b = net.add_input("a", (4,)), net.add_input("b", (4,))
    net.add_output(net.add_add(a, b), "y")
    loaded = runtime.load_network(plugnn.optimize(net, runtime, [backend]))
    feeds = {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
    return lambda: loaded.run(feeds)


def plugnn_chain(runtime: plugnn.Runtime, backend: str, layers: int) -> Callable[[], object]:
    net = plugnn.Network(f"chain{layers}")
    x = net.add_input("x", (1,))
    for i in range(layers):
        x = net.add_activation(x, "relu", name=f"relu{i}")
    net.add_output(x, "y")
    loaded = runtime.load_network(plugnn.optimize(net, runtime, [backend]))
    feeds = {"x": np.ones(1, np.float32)}
    return lambda: loaded.run(feeds)


def onnxruntime_add() -> Callable[[], object] | None:
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])], "add",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
    return lambda: session.run(None, feeds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--backend", default="CpuRef")
    parser.add_argument("--chain", type=int, default=64)
    args = parser.parse_args()
    with plugnn.Runtime() as runtime:
        rows = [("plugnn one-Add run()", per_call_us(plugnn_add(runtime, args.backend), args.runs))]
        one = per_call_us(plugnn_chain(runtime, args.backend, 1), args.runs)
        many = per_call_us(plugnn_chain(runtime, args.backend, args.chain), max(args.runs // args.chain, 200))
        rows.append((f"plugnn per layer ({args.chain}-layer relu chain)", (many - one) / (args.chain - 1)))
    ort_add = onnxruntime_add()
    rows.append(("onnxruntime one-Add session.run()", per_call_us(ort_add, args.runs) if ort_add else float("nan")))
    print(f"backend {args.backend}; median of 5 repeats of {args.runs} calls")
    for name, value in rows:
        print(f"{name:45} {value:8.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
