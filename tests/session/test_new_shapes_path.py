"""A run at shapes a session has not seen goes straight to its last symbolic network, which binds
them with one generated function (ShapeProgram.binder); whatever that function cannot take is
handled as before: errors worded by the session's feed checks, a guard broken builds anew."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

import plugnn
from plugnn.errors import InputError
from plugnn.shape_program import BindingError


def _model() -> bytes:
    """x [batch, seq, 4] + y [batch, 1, 4] -> z; w [seq, 4] (seq shared with x) * 2 -> v."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1, 4])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, ["seq", 4])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"]), helper.make_node("Mul", ["w", "two"], ["v"])],
                              "binder", [x, y, w],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "seq", 4]),
                               helper.make_tensor_value_info("v", TensorProto.FLOAT, ["seq", 4])], [two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _feed(batch: int, seq: int, rng: np.random.Generator, *, y1: int = 1, wseq: int | None = None) -> dict:
    return {"x": rng.standard_normal((batch, seq, 4)).astype(np.float32),
            "y": rng.standard_normal((batch, y1, 4)).astype(np.float32),
            "w": rng.standard_normal((seq if wseq is None else wseq, 4)).astype(np.float32)}


def _network(session: plugnn.InferenceSession):
    return session._cache.builds()[-1].network


def test_binder_agrees_with_bind_on_every_shape() -> None:
    session = plugnn.InferenceSession(_model(), providers=["CpuRef"])
    rng = np.random.default_rng(0)
    session.run(None, _feed(2, 3, rng))
    network = _network(session)
    program, order = network.program, network.input_names
    for bx, sx, by, y1, sw, rank in itertools.product((1, 2), (3, 5), (1, 2), (1, 2), (3, 5), (3, 2)):
        shapes = {"x": (bx, sx, 4)[:rank], "y": (by, y1, 4), "w": (sw, 4)}
        fast = network._binder(tuple(shapes[n] for n in order))
        try:
            slow = program.bind(shapes)
        except InputError:
            assert fast is None, shapes
            continue
        assert fast is not None and dict(zip(network._symbols, fast)) == slow, shapes
    assert network._binder(((2, 3, 4), (2, 1, 4))) is None  # too few inputs
    assert network._binder(((2, 3, 5), (2, 1, 4), (3, 4))) is None  # a fixed dim


def test_new_shapes_run_right_and_keep_one_network() -> None:
    session = plugnn.InferenceSession(_model(), providers=["CpuAcc", "CpuRef"])
    rng = np.random.default_rng(1)
    for batch, seq in [(1, 2), (2, 3), (3, 7), (1, 9), (2, 3)]:
        feed = _feed(batch, seq, rng)
        z, v = session.run(None, feed)
        np.testing.assert_array_equal(z, feed["x"] + feed["y"])
        np.testing.assert_array_equal(v, feed["w"] * 2)
    assert session.networks_built == 1


@pytest.mark.parametrize("bad, message", [
    (dict(y1=2), r"input 'y' dim 1 is 2, the model fixes it to 1"),
    (dict(wseq=4), r"dim 'seq' is 5 in input 'x' and 4 in input 'w'"),
])
def test_bad_new_shapes_are_worded_by_the_session_checks(bad: dict, message: str) -> None:
    session = plugnn.InferenceSession(_model(), providers=["CpuRef"])
    rng = np.random.default_rng(2)
    session.run(None, _feed(2, 3, rng))
    with pytest.raises(plugnn.errors.InputError, match=message) as caught:
        session.run(None, _feed(1, 5, rng, **bad))
    assert not isinstance(caught.value, BindingError)
    feed = _feed(1, 5, rng)  # and the session goes on
    np.testing.assert_array_equal(session.run(None, feed)[0], feed["x"] + feed["y"])
    assert session.networks_built == 1


def test_a_wrong_rank_at_new_shapes() -> None:
    session = plugnn.InferenceSession(_model(), providers=["CpuRef"])
    rng = np.random.default_rng(3)
    session.run(None, _feed(2, 3, rng))
    feed = _feed(2, 4, rng)
    feed["x"] = feed["x"][0]
    with pytest.raises(plugnn.errors.InputError, match="input 'x' has rank 2"):
        session.run(None, feed)
