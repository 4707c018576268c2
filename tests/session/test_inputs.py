"""What a session says about its model, and how it refuses what does not fit: onnxruntime's
NodeArgs (symbolic dims as strings, unknown as None, "tensor(...)" types) and plugnn's typed
errors, each checked against onnxruntime refusing the same feed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import plugnn
from plugnn import InputError, ModelError, SessionError
from session import models

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zoo import weights  # noqa: E402


def describe(args: list[Any]) -> list[tuple[str, Any, str]]:
    return [(a.name, a.shape, a.type) for a in args]


def zoo_model(name: str, tmp_path: Path) -> Path:
    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == name)
    path = tmp_path / f"{name}.onnx"
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(path))
    return path


@pytest.mark.parametrize("name", ["resnet18", "lstm_bidir", "gru_seq_first"])
def test_inputs_and_outputs_are_described_as_onnxruntime_does(name: str, tmp_path: Path) -> None:
    """Zoo models with symbolic batch, spatial and sequence dims."""
    path = zoo_model(name, tmp_path)
    reference = ort.InferenceSession(str(path))
    with plugnn.InferenceSession(str(path), backends=["CpuRef"]) as session:
        assert describe(session.get_inputs()) == describe(reference.get_inputs())
        assert describe(session.get_outputs()) == describe(reference.get_outputs())
    assert any(isinstance(d, str) for i in reference.get_inputs() for d in i.shape)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[plugnn.InferenceSession, Any]]:
    path = tmp_path_factory.mktemp("two") / "two.onnx"
    onnx.save(models.two_inputs(), str(path))
    with plugnn.InferenceSession(str(path), backends=["CpuRef"]) as session:
        yield session, ort.InferenceSession(str(path))


A = np.ones((2, 5), np.float32)


@pytest.mark.parametrize("feed, message", [
    ({"a": A}, "missing input(s) 'b'; the model's inputs are 'a' (tensor(float) ['batch', 5]), 'b' "),
    ({"a": A, "b": A, "c": A}, "unknown input(s) 'c'"),
    ({"a": A, "B": A}, "missing input(s) 'b'; unknown input(s) 'B'"),
    ({"a": A, "b": A.astype(np.float64)}, "input 'b' has dtype float64, the model takes tensor(float) (float32): "
                                          "convert it with .astype(numpy.float32)"),
    ({"a": A, "b": A[None]}, "input 'b' has rank 3 (shape (1, 2, 5)), the model declares rank 2: ['batch', 5]"),
    ({"a": A, "b": np.ones((2, 4), np.float32)}, "input 'b' dim 1 is 4, the model fixes it to 5"),
    ({"a": A, "b": np.ones((3, 5), np.float32)}, "dim 'batch' is 2 in input 'a' and 3 in input 'b'"),
    ({"a": A, "b": [[1.0] * 5, [1.0] * 4]}, "input 'b' (tensor(float)) was given a list that is not a tensor"),
    ({"a": A, "b": {"x": 1.0}}, "input 'b' must be a numpy.ndarray of tensor(float) (or a list), got dict"),
    ([A, A], "input_feed must be a dict"),
])
def test_a_feed_that_does_not_fit_is_an_input_error(pair: Any, feed: Any, message: str) -> None:
    session, reference = pair
    with pytest.raises(InputError) as caught:
        session.run(None, feed)
    assert message in str(caught.value)
    assert "model 'two_inputs'" in str(caught.value)
    if isinstance(feed, dict) and "c" not in feed and not any(isinstance(v, list) for v in feed.values()):
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime refuses it too, with its own types
            reference.run(None, feed)


def test_outputs_come_in_the_order_asked(pair: Any) -> None:
    session, reference = pair
    rng = np.random.default_rng(3)
    feed = {"a": rng.standard_normal((4, 5)).astype(np.float32), "b": rng.standard_normal((4, 5)).astype(np.float32)}
    for names in (None, [], ["z", "y"], ["y"], ["z", "z"]):
        ours, theirs = session.run(names, feed), reference.run(names, feed)
        assert [o.shape for o in ours] == [t.shape for t in theirs]
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6)
    with pytest.raises(InputError, match="unknown output.*'w'; the model's outputs are 'y' "):
        session.run(["y", "w"], feed)


def test_non_contiguous_inputs_are_accepted(pair: Any) -> None:
    session, reference = pair
    big = np.random.default_rng(4).standard_normal((5, 4)).astype(np.float32)
    feed = {"a": big.T, "b": big.T[::-1]}
    np.testing.assert_allclose(session.run(["y"], feed)[0], reference.run(["y"], feed)[0], rtol=1e-5, atol=1e-6)


def test_model_forms_and_arguments(tmp_path: Path) -> None:
    model = models.cnn()
    before = model.SerializeToString()
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    image = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(np.float32)
    results = []
    for form in (str(path), path, before, model):
        with plugnn.InferenceSession(form, providers=["CPUExecutionProvider"]) as session:
            results.append(session.run(None, {"image": image})[0])
    assert model.SerializeToString() == before  # the caller's ModelProto is never changed
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    with pytest.raises(plugnn.UnknownBackendError, match="unknown backend 'Nope'"):
        plugnn.InferenceSession(model, backends=["Nope"])
    with pytest.raises(plugnn.UnknownBackendError, match="Unknown Provider Type: Nope; plugnn's providers are Cpu"):
        plugnn.InferenceSession(model, providers=["Nope"])
    with pytest.raises(SessionError, match="either backends= .* or providers="):
        plugnn.InferenceSession(model, backends=["CpuRef"], providers=["CPUExecutionProvider"])
    with pytest.raises(SessionError, match="max_specializations must be an integer >= 1"):
        plugnn.InferenceSession(model, max_specializations=0)
    with pytest.raises(ModelError, match="no such file"):
        plugnn.InferenceSession(str(tmp_path / "missing.onnx"))


def test_an_unsupported_operator_is_named_at_construction() -> None:
    """Named before any run (a model with symbolic dims is imported only at the first run)."""
    nodes = [helper.make_node("NotAnOperator", ["x"], ["y"], name="odd"),
             helper.make_node("Foo", ["y"], ["z"], name="foreign", domain="com.example")]
    graph = helper.make_graph(nodes, "odd", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(ModelError, match=r"operator\(s\) NotAnOperator are not supported; operator\(s\) "
                                         r"com.example.Foo are outside the default ai.onnx domain; plugnn imports \d+ operators of the default "
                                         r"domain \(plugnn.onnx.OPERATORS, docs/onnx.md\)"):
        plugnn.InferenceSession(model)


def test_a_closed_session_says_so(pair: Any, tmp_path: Path) -> None:
    session = plugnn.InferenceSession(models.cnn(), backends=["CpuRef"])
    session.close()
    with pytest.raises(SessionError, match="the session is closed"):
        session.run(None, {"image": np.zeros((1, 3, 4, 4), np.float32)})
    with pytest.raises(SessionError, match="run_options must be a plugnn.RunOptions or None, got object"):
        pair[0].run(None, {"a": A, "b": A}, run_options=object())
