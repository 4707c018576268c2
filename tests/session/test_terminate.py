"""RunOptions.terminate set while a run is under way stops it before its next layer.

A Python backend runs the model's two relus; the first one's workload sets the RunOptions'
terminate flag (as another thread would), so the second never runs, the run ends with
RunTerminated (onnxruntime's Fail), and the same session then runs to the end once the flag is
cleared."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import plugnn
from plugnn.capi.onnxruntime_pybind11_state import Fail

RUN_OPTIONS = plugnn.RunOptions()
EXECUTED: list[str] = []


@pytest.fixture
def tripping_backend() -> Iterator[None]:
    """"PyTrip": runs relus; executing the layer named "first" sets RUN_OPTIONS.terminate."""
    from plugnn import Backend, BackendRegistry, SupportResult, Workload, WorkloadFactory
    from plugnn.descriptors import LayerKind

    class ReluWorkload(Workload):
        def __init__(self, name: str) -> None:
            self.name = name

        def execute(self, inputs: Any, outputs: Any, workspace: Any = None) -> None:
            EXECUTED.append(self.name)
            np.maximum(inputs[0], 0, out=outputs[0])
            if self.name == "first":
                RUN_OPTIONS.terminate = True

    class Factory(WorkloadFactory):
        def create_workload(self, layer: Any) -> Workload:
            return ReluWorkload(layer.name)

    class PyTrip(Backend):
        def is_layer_supported(self, layer: Any) -> SupportResult:
            ok = layer.kind is LayerKind.ACTIVATION and layer.descriptor.kind.name == "RELU"
            return SupportResult(ok, "" if ok else "PyTrip runs relu only")

        def create_workload_factory(self, memory_manager: Any = None) -> WorkloadFactory:
            return Factory()

    BackendRegistry.register("PyTrip", PyTrip)
    yield
    BackendRegistry.deregister("PyTrip")


def model() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node("Sigmoid", ["a"], ["b"], name="middle"),
             helper.make_node("Relu", ["b"], ["y"], name="second")]
    graph = helper.make_graph(nodes, "trip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_terminate_set_during_a_run_stops_it_before_the_next_layer(tripping_backend: None) -> None:
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    with plugnn.InferenceSession(model(), backends=["PyTrip", "CpuRef"]) as session:
        EXECUTED.clear()
        RUN_OPTIONS.terminate = False
        with pytest.raises(Fail, match="terminate flag being set to true.*stopped before layer 'middle'"):
            session.run(None, {"x": x}, RUN_OPTIONS)
        assert EXECUTED == ["first"]
        RUN_OPTIONS.terminate = False
        EXECUTED.clear()
        # "first" sets the flag again: cleared by a fresh RunOptions, the run goes to the end
        (y,) = session.run(None, {"x": x}, plugnn.RunOptions())
        assert EXECUTED == ["first", "second"]
        np.testing.assert_allclose(y, 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)


def test_terminate_on_the_dynamic_path() -> None:
    """A model with a sequence runs on the dynamic path: the flag is asked before each segment
    and runtime node (and each layer of a segment), and the model stays usable."""
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"], name="construct"),
             helper.make_node("SequenceAt", ["s", "i"], ["picked"], name="at"),
             helper.make_node("Relu", ["picked"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "sequence", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3]),
                            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [helper.make_tensor("i", TensorProto.INT64, [], [1])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feed = {"a": np.ones(3, np.float32), "b": np.array([-1, 0, 2], np.float32)}
    with plugnn.InferenceSession(proto) as session:
        np.testing.assert_array_equal(session.run(None, feed)[0], [0, 0, 2])
        assert session.dynamic is not None
        asked: list[int] = []

        def stop() -> bool:
            asked.append(1)
            return len(asked) == 2

        with pytest.raises(plugnn.errors.RunStoppedError, match="stopped before"):
            session.dynamic.run(feed, stop=stop)
        assert len(asked) == 2
        ro = plugnn.RunOptions()
        ro.terminate = True
        with pytest.raises(Fail, match="terminate flag"):
            session.run(None, feed, ro)
        ro.terminate = False
        np.testing.assert_array_equal(session.run(None, feed, ro)[0], [0, 0, 2])


def test_a_loop_with_a_trip_count_from_the_data_is_stopped_by_terminate_from_another_thread() -> None:
    """Loop M = 2**62 from an input, a body carrying one value and no scan outputs (memory stays
    flat, so only the clock bounds it): RunOptions.terminate set by a timer thread ends the run
    between iterations, and the session runs again afterwards."""
    import threading
    import time

    body = helper.make_graph(
        [helper.make_node("Add", ["v", "one"], ["v_out"], name="step"),
         helper.make_node("Identity", ["cond"], ["cond_out"], name="keep")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "v0"], ["v"], name="loop", body=body)], "long_loop",
        [helper.make_tensor_value_info("trips", TensorProto.INT64, []),
         helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    v0 = np.zeros(1, np.float32)
    with plugnn.InferenceSession(proto) as session:
        np.testing.assert_array_equal(session.run(None, {"trips": np.array(5, np.int64), "v0": v0})[0], [5])
        ro = plugnn.RunOptions()
        timer = threading.Timer(0.5, lambda: setattr(ro, "terminate", True))
        start = time.monotonic()
        timer.start()
        try:
            with pytest.raises(Fail, match="terminate flag"):
                session.run(None, {"trips": np.array(2 ** 62, np.int64), "v0": v0}, ro)
        finally:
            timer.cancel()
        assert time.monotonic() - start < 600  # a hang detector, not a timing check
        np.testing.assert_array_equal(session.run(None, {"trips": np.array(3, np.int64), "v0": v0})[0], [3])
