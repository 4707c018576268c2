"""The step runner (python/plugnn/step_runner.py, native/runner/plugnn_runner.c): consecutive native
workloads run in one call from Python, with the same results as when each is called on its own
(the profiled run calls them one by one), a failing layer named as before, the later layers not
called, the network usable afterwards; Python backends' steps split the runs; without the
library every step is called on its own, with a warning."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, BackendRegistry, Network
from plugnn import runner_library, step_runner
from plugnn.native import BoundExecution
from plugnn.step_runner import NativeRun

from pybackends import PySoftmax

RNG = np.random.default_rng(2711)


def gather_net() -> Network:
    """x -> relu -> gather(rows i) -> abs -> sigmoid -> y: four native layers, one that can fail."""
    net = Network("gather")
    x = net.add_input("x", (4, 3))
    rows = net.add_input("i", (2,), "int64")
    a = net.add_activation(x, "relu", name="a")
    g = net.add_gather(a, rows, axis=0, name="gather")
    b = net.add_activation(g, "abs", name="b")
    net.add_output(net.add_activation(b, "sigmoid", name="c"), "y")
    return net


def expected(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.abs(np.maximum(x.astype(np.float64), 0)[rows])))


def test_native_steps_run_in_one_call_and_compute_the_same() -> None:
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    rows = np.array([3, 1])
    with plugnn.Runtime() as rt:
        loaded = rt.load_network(plugnn.optimize(gather_net(), rt, ["CpuRef"]))
        assert len(loaded._calls) == 1 and isinstance(loaded._calls[0], NativeRun)
        assert [s._workload.layer_name for s in loaded._calls[0].steps] == ["a", "gather", "b", "c"]
        batched = loaded.run({"x": x, "i": rows})["y"]
        one_by_one = loaded.run({"x": x, "i": rows}, profile=True)["y"]
        np.testing.assert_array_equal(batched, one_by_one)
        np.testing.assert_allclose(batched, expected(x, rows), rtol=1e-6)


def test_a_failing_layer_is_named_the_rest_not_run_and_the_network_stays_usable() -> None:
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    with plugnn.Runtime() as rt:
        loaded = rt.load_network(plugnn.optimize(gather_net(), rt, ["CpuRef"]))
        sentinel = np.full((2, 3), 7.0, np.float32)
        with pytest.raises(BackendError, match=r"execute\(layer 'gather'\).*index 9 is out of range"):
            loaded.run({"x": x, "i": np.array([0, 9])}, outputs={"y": sentinel})
        np.testing.assert_array_equal(sentinel, 7.0)  # the layers after gather did not run
        np.testing.assert_allclose(loaded.run({"x": x, "i": np.array([2, 0])})["y"], expected(x, np.array([2, 0])),
                                   rtol=1e-6)


@pytest.fixture
def with_pysoftmax(no_static_backends: None) -> Iterator[plugnn.Runtime]:
    BackendRegistry.register("PySoftmax", PySoftmax)
    with plugnn.Runtime() as rt:
        yield rt


def test_python_steps_split_the_native_runs(with_pysoftmax: plugnn.Runtime) -> None:
    net = Network("mixed")
    x = net.add_input("x", (2, 5))
    a = net.add_activation(net.add_activation(x, "relu", name="a1"), "abs", name="a2")
    s = net.add_softmax(a, axis=1, name="s")
    net.add_output(net.add_activation(net.add_activation(s, "sigmoid", name="b1"), "tanh", name="b2"), "y")
    v = RNG.standard_normal((2, 5)).astype(np.float32)
    loaded = with_pysoftmax.load_network(plugnn.optimize(net, with_pysoftmax, ["PySoftmax", "CpuRef"]))
    kinds = [type(call).__name__ for call in loaded._calls]
    assert kinds[0] == kinds[2] == "NativeRun" and len(kinds) == 3 and kinds[1] != "NativeRun"
    r = np.abs(np.maximum(v.astype(np.float64), 0))
    e = np.exp(r - r.max(axis=1, keepdims=True))
    want = np.tanh(1 / (1 + np.exp(-(e / e.sum(axis=1, keepdims=True)))))
    np.testing.assert_allclose(loaded.run({"x": v})["y"], want, rtol=1e-6)


def test_a_single_native_step_is_called_on_its_own() -> None:
    net = Network("one")
    net.add_output(net.add_activation(net.add_input("x", (3,)), "relu", name="a"), "y")
    with plugnn.Runtime() as rt:
        loaded = rt.load_network(plugnn.optimize(net, rt, ["CpuRef"]))
        assert len(loaded._calls) == 1 and type(loaded._calls[0]) is BoundExecution
        np.testing.assert_array_equal(loaded.run({"x": np.array([-1, 0, 2], np.float32)})["y"], [0, 0, 2])


def test_without_the_library_each_step_is_called_on_its_own(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(runner_library, "LIBRARY", "/nonexistent/libplugnn_runner.so")
    monkeypatch.setattr(runner_library, "_library", None)
    monkeypatch.setattr(runner_library, "_loaded", False)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    with caplog.at_level(logging.WARNING, logger="plugnn"), plugnn.Runtime() as rt:
        loaded = rt.load_network(plugnn.optimize(gather_net(), rt, ["CpuRef"]))
        assert all(type(call) is BoundExecution for call in loaded._calls) and len(loaded._calls) == 4
        np.testing.assert_allclose(loaded.run({"x": x, "i": np.array([1, 1])})["y"], expected(x, np.array([1, 1])),
                                   rtol=1e-6)
    assert any("/nonexistent/libplugnn_runner.so did not load" in r.getMessage() for r in caplog.records)
