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
