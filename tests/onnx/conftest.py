"""Helpers for the ONNX import tests: tiny models built with onnx.helper, run on plugnn (CpuRef)
and on onnxruntime's CPU provider."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import plugnn  # noqa: E402
import plugnn.onnx  # noqa: E402

# IR versions onnxruntime accepts for each opset.
_IR = {7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10}


def make_model(nodes: Sequence[Any], inputs: Mapping[str, Any], outputs: Sequence[str] | Mapping[str, Any],
               initializers: Mapping[str, np.ndarray] | None = None, opset: int = 17,
               name: str = "test") -> Any:
    """inputs: name -> shape (float32) or (shape, TensorProto type); outputs: names (untyped) or name -> shape."""
    def info(n: str, spec: Any) -> Any:
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], int) and isinstance(spec[0], (list, tuple)):
            return helper.make_tensor_value_info(n, spec[1], spec[0])
        return helper.make_tensor_value_info(n, TensorProto.FLOAT, spec)

    graph_inputs = [info(n, s) for n, s in inputs.items()]
    if isinstance(outputs, Mapping):
        graph_outputs = [info(n, s) for n, s in outputs.items()]
    else:
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in (initializers or {}).items()]
    graph = helper.make_graph(list(nodes), name, graph_inputs, graph_outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=_IR.get(opset, 10))


@pytest.fixture(scope="session")
def runtime() -> Iterator[Any]:
    with plugnn.Runtime() as rt:
        yield rt


def run_plugnn(runtime: Any, model: Any, feeds: Mapping[str, np.ndarray], **load_kwargs: Any) -> dict[str, np.ndarray]:
    network = plugnn.onnx.load(model, **load_kwargs)
    with runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"])) as loaded:
        return {k: np.array(v) for k, v in loaded.run(dict(feeds)).items()}


def run_ort(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(feeds))))


def random_feeds(model: Any, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def relu_add_in_fresh_process(before: str = "", after: str = "") -> str:
    """Runs, in a fresh interpreter, `before`, then `import plugnn` and a session on y = relu(x) + x
    (opset 17, CpuRef) that must give 2 for ones, then `after`; returns the last line printed."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, onnx\n"
        "from onnx import helper, TensorProto, defs\n"
        f"{before}\n"
        "import plugnn\n"
        "x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 3])\n"
        "y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 3])\n"
        "g = helper.make_graph([helper.make_node('Relu', ['x'], ['r']), helper.make_node('Add', ['r', 'x'], ['y'])],"
        " 'g', [x], [y])\n"
        "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])\n"
        "s = plugnn.InferenceSession(m.SerializeToString(), providers=['CpuRef'])\n"
        "out = s.run(None, {'x': np.ones((2, 3), np.float32)})[0]\n"
        "assert (out == 2).all(), out\n"
        f"{after}\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]
