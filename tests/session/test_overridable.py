"""Runs that feed overridable initializers (initializers the graph also lists as inputs): the fed
value replaces the initializer for that run only, as onnxruntime does; the default stays the
initializer; bad feeds name the input; nothing leaks into later runs or other sessions."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.errors import InputError
from tests.session import models

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 6)).astype(np.float32)


def _both(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    data = model.SerializeToString()
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    ours = plugnn.InferenceSession(data).run(None, feed)
    return ours, theirs


def _model(*, w_is_output: bool = False, both_inputs: bool = False) -> onnx.ModelProto:
    """y = relu(x * w + b), w and b initializers; b (and with both_inputs w) also a graph input."""
    w = RNG.standard_normal(6).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [6])]
    if both_inputs:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [6]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6])]
    if w_is_output:
        outputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [6]))
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
                               helper.make_node("Relu", ["a"], ["y"])], "overridable", inputs, outputs,
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _numpy(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(x * w + b, 0)


def test_fed_initializer_replaces_it_for_that_run_only() -> None:
    model = _model()
    w, b = (numpy_helper.to_array(t) for t in model.graph.initializer)
    b2 = np.linspace(-2, 2, 6).astype(np.float32)
    session = plugnn.InferenceSession(model.SerializeToString())
    assert [a.name for a in session.get_inputs()] == ["x"]
    assert [a.name for a in session.get_overridable_initializers()] == ["b"]
    np.testing.assert_allclose(session.run(None, {"x": X})[0], _numpy(X, w, b), rtol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": X, "b": b2})[0], _numpy(X, w, b2), rtol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": X})[0], _numpy(X, w, b), rtol=1e-6)  # default again
    b3 = -b2
    x5 = RNG.standard_normal((5, 6)).astype(np.float32)  # another batch through the overriding network
    np.testing.assert_allclose(session.run(["y"], {"x": x5, "b": b3})[0], _numpy(x5, w, b3), rtol=1e-6)
    np.testing.assert_array_equal(numpy_helper.to_array(model.graph.initializer[1]), b)  # caller's model unchanged


def test_same_as_onnxruntime() -> None:
    model = _model(both_inputs=True)
    feed = {"x": X, "b": np.full(6, 0.5, np.float32), "w": np.arange(6, dtype=np.float32) - 2}
    for fed in ({"x": X}, {"x": X, "b": feed["b"]}, {"x": X, "w": feed["w"]}, feed):
        ours, theirs = _both(model, fed)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)


def test_each_set_of_fed_initializers_is_its_own_network() -> None:
    model = _model(both_inputs=True)
    w, b = (numpy_helper.to_array(t) for t in model.graph.initializer)
    session = plugnn.InferenceSession(model.SerializeToString())
    ones = np.ones(6, np.float32)
    np.testing.assert_allclose(session.run(None, {"x": X, "w": ones})[0], _numpy(X, ones, b), rtol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": X, "b": ones})[0], _numpy(X, w, ones), rtol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": X, "w": ones, "b": ones})[0], _numpy(X, ones, ones), rtol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": X, "w": 2 * ones})[0], _numpy(X, 2 * ones, b), rtol=1e-6)


def test_fed_initializer_that_is_an_output_comes_back_as_fed() -> None:
    model = _model(w_is_output=True)
    b2 = np.full(6, 3.0, np.float32)
    ours, theirs = _both(model, {"x": X, "b": b2})
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_array_equal(ours[1], b2)
    np.testing.assert_array_equal(theirs[1], b2)
    ours, theirs = _both(model, {"x": X})
    np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("value, message", [
    (np.ones(5, np.float32), r"'b'"),
    (np.ones(6, np.float64), r"'b'"),
    (np.ones((1, 6), np.float32), r"'b'"),
])
def test_bad_fed_initializer_names_it_and_leaves_the_session_usable(value: np.ndarray, message: str) -> None:
    model = _model()
    w, b = (numpy_helper.to_array(t) for t in model.graph.initializer)
    session = plugnn.InferenceSession(model.SerializeToString())
    with pytest.raises(InputError, match=message):
        session.run(None, {"x": X, "b": value})
    np.testing.assert_allclose(session.run(None, {"x": X})[0], _numpy(X, w, b), rtol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": X, "b": b + 1})[0], _numpy(X, w, b + 1), rtol=1e-6)


def test_a_name_that_is_neither_input_nor_overridable_is_still_refused() -> None:
    session = plugnn.InferenceSession(_model().SerializeToString())
    with pytest.raises(InputError, match="unknown input.*'w'"):
        session.run(None, {"x": X, "w": np.ones(6, np.float32)})  # w is an initializer, not a graph input


def test_overriding_on_the_dynamic_path() -> None:
    """A NonZero puts the model on the dynamic path: y = x[nonzero(x > t)] + b, b overridable."""
    b = np.float32(0.25)
    nodes = [helper.make_node("Greater", ["x", "t"], ["mask"]), helper.make_node("NonZero", ["mask"], ["idx"]),
             helper.make_node("Transpose", ["idx"], ["idx_t"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx_t"], ["picked"]), helper.make_node("Add", ["picked", "b"], ["y"])]
    graph = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6]),
                                             helper.make_tensor_value_info("b", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(0.0, np.float32), "t"),
                               numpy_helper.from_array(np.array(b), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = plugnn.InferenceSession(model.SerializeToString())
    np.testing.assert_allclose(session.run(None, {"x": X})[0], X[X > 0] + b, rtol=1e-6)
    assert session.dynamic is not None
    fed = np.array(-4.0, np.float32)
    np.testing.assert_allclose(session.run(None, {"x": X, "b": fed})[0], X[X > 0] - 4, rtol=1e-6)
    ours, theirs = _both(model, {"x": X, "b": fed})
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    session.close()


def test_close_unloads_the_overriding_networks() -> None:
    session = plugnn.InferenceSession(_model().SerializeToString())
    session.run(None, {"x": X, "b": np.ones(6, np.float32)})
    variants = list(session._variants.values())
    assert variants and variants[0].networks.builds()
    session.close()
    assert not session._variants and not variants[0].networks.builds()
    with pytest.raises(plugnn.errors.SessionError, match="closed"):
        session.run(None, {"x": X, "b": np.ones(6, np.float32)})


def test_scaled_model_of_the_session_tests() -> None:
    model = models.scaled()
    ours, theirs = _both(model, {"x": X, "b": np.full(6, -0.5, np.float32)})
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
