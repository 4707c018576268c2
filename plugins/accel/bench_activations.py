"""CpuAcc's activation kernels against onnxruntime's operators, in one process.

    python plugins/accel/bench_activations.py [--shape 128,3072] [--threads 1,2] [--rounds 4]

Each kind runs as a one-layer network: plugnn's Activation layer on CpuAcc (Network API, so
kinds the ONNX importer does not map yet are measured too) and the ONNX operator of the same
formula on onnxruntime (Gelu opset 20, approximate "none" and "tanh"; Sigmoid, Tanh, Elu,
Selu, Softplus, Softsign, Mish, HardSwish, Relu; SWISH as x * Sigmoid(x), two nodes), both
reading the same float32 input (standard normal * 3) and writing into a preallocated output.
Timing: `rounds` alternating blocks (onnxruntime, CpuAcc, ...) after a 0.1 s pause each, 50
calls per block; the table gives the median call and the two runtimes' ratio (below 1: CpuAcc
faster), and max |CpuAcc - ort| / max |ort|. The default shape is BERT-base's feed-forward
intermediate at 128 tokens.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import plugnn

# name: (plugnn kind, alpha, beta, onnx op, opset, onnx attributes)
KINDS: list[tuple[str, str, float, float, str, int, dict[str, Any]]] = [
    ("relu", "relu", 0.0, 0.0, "Relu", 17, {}),
    ("sigmoid", "sigmoid", 0.0, 0.0, "Sigmoid", 17, {}),
    ("tanh", "tanh", 0.0, 0.0, "Tanh", 17, {}),
    ("gelu", "gelu", 0.0, 0.0, "Gelu", 20, {}),
    ("gelu_tanh", "gelu_tanh", 0.0, 0.0, "Gelu", 20, {"approximate": "tanh"}),
    ("swish", "swish", 1.0, 0.0, "Swish", 17, {}),
    ("mish", "mish", 0.0, 0.0, "Mish", 18, {}),
    ("softplus", "softplus", 0.0, 0.0, "Softplus", 17, {}),
    ("softsign", "softsign", 0.0, 0.0, "Softsign", 17, {}),
    ("elu", "elu", 1.0, 0.0, "Elu", 17, {"alpha": 1.0}),
    ("selu", "selu", 1.67326319217681884765625, 1.05070102214813232421875, "Selu", 17, {}),
    ("hard_swish", "hard_swish", 0.0, 0.0, "HardSwish", 17, {}),
]


def ort_session(op: str, opset: int, attrs: dict[str, Any], shape: list[int], threads: int) -> Any:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    if op == "Swish":  # x * Sigmoid(x)
        nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    else:
        nodes = [helper.make_node(op, ["x"], ["y"], **attrs)]
    graph = helper.make_graph(nodes, op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def timed_blocks(fns: list[Callable[[], object]], rounds: int, calls: int) -> list[float]:
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, samples):
            time.sleep(0.1)
            fn()
            for _ in range(calls):
                start = time.perf_counter()
                fn()
                out.append(time.perf_counter() - start)
    return [statistics.median(s) for s in samples]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="128,3072")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--calls", type=int, default=50)
    args = p.parse_args()
    shape = [int(v) for v in args.shape.split(",")]
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(np.float32)
    print("| kind | threads | onnxruntime us | CpuAcc us | CpuAcc / ort | max diff / max ort |")
    print("| --- | --- | --- | --- | --- | --- |")
    for threads in (int(t) for t in args.threads.split(",")):
        with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": str(threads)}}) as rt:
            for name, kind, alpha, beta, op, opset, attrs in KINDS:
                session = ort_session(op, opset, attrs, shape, threads)
                binding = session.io_binding()
                binding.bind_cpu_input("x", x)
                y_ort = np.empty(shape, np.float32)
                binding.bind_output("y", "cpu", 0, np.float32, shape, y_ort.ctypes.data)
                net = plugnn.Network(name)
                net.add_output(net.add_activation(net.add_input("x", shape), kind, alpha, beta, name=name), "y")
                optimized = plugnn.optimize(net, rt, ["CpuAcc"])
                y = np.empty(shape, np.float32)
                with rt.load_network(optimized) as loaded:
                    def run_ort() -> None:
                        session.run_with_iobinding(binding)

                    def run_plugnn() -> None:
                        loaded.run({"x": x}, outputs={"y": y})

                    t_ort, t_pl = timed_blocks([run_ort, run_plugnn], args.rounds, args.calls)
                    diff = float(np.max(np.abs(y.astype(np.float64) - y_ort)) / np.max(np.abs(y_ort)))
                print(f"| {name} | {threads} | {t_ort * 1e6:.1f} | {t_pl * 1e6:.1f} | {t_pl / t_ort:.2f} | {diff:.1e} |",
                      flush=True)


if __name__ == "__main__":
    main()
