"""A backend that writes into its input must not change the caller's array: a graph input that
a backend plugnn does not ship reads is copied per run into a buffer of the network's own
(loaded.py); inputs read only by the bundled backends stay zero-copy."""

from __future__ import annotations

import mmap

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendRegistry, Network
from plugnn.layers import LayerSpec

from pybackends import PySoftmax, SoftmaxFactory, SoftmaxWorkload


class ScribblingWorkload(SoftmaxWorkload):
    """Softmax that then writes zeros over its input (a careless plugin)."""

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        super().execute(inputs, outputs, workspace)
        inputs[0][...] = 0


class ScribblingFactory(SoftmaxFactory):
    def create_workload(self, layer: LayerSpec) -> ScribblingWorkload:
        return ScribblingWorkload(layer, self.log)


class PyScribbler(PySoftmax):
    def create_workload_factory(self, memory_manager: Any = None) -> ScribblingFactory:
        return ScribblingFactory(self.log)


@pytest.fixture
def runtime(no_static_backends: None) -> Any:
    BackendRegistry.register("PyScribbler", PyScribbler)
    with plugnn.Runtime() as rt:
        yield rt


def softmax_network() -> Network:
    net = Network("scribbled")
    x = net.add_input("x", (2, 5))
    net.add_output(net.add_softmax(x, name="softmax"), "y")
    return net


def test_a_backend_writing_into_its_input_leaves_the_callers_array(runtime: Any) -> None:
    loaded = runtime.load_network(plugnn.optimize(softmax_network(), runtime, ["PyScribbler"]))
    x = np.random.default_rng(5).standard_normal((2, 5)).astype(np.float32)
    before = x.copy()
    for _ in range(2):
        y = loaded.run({"x": x})["y"]
        assert np.array_equal(x, before)
        e = np.exp(before - before.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)


def test_inputs_of_bundled_backends_stay_zero_copy(runtime: Any) -> None:
    loaded = runtime.load_network(plugnn.optimize(softmax_network(), runtime, ["CpuRef"]))
    x = np.ones((2, 5), np.float32)
    loaded.run({"x": x})
    assert loaded._staging == {} and any(b is x for b in loaded._bound)


class LeakingWorkload(SoftmaxWorkload):
    """Softmax that keeps 512 KiB on every call: fresh pages of its own (mmap), each written, so
    resident; not malloc's, which a test process with freed memory would serve from pages already
    resident."""

    kept: list[mmap.mmap] = []

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        super().execute(inputs, outputs, workspace)
        pages = mmap.mmap(-1, 512 << 10)
        pages.write(bytes(range(256)) * 2048)
        self.kept.append(pages)


class LeakingFactory(SoftmaxFactory):
    def create_workload(self, layer: LayerSpec) -> LeakingWorkload:
        return LeakingWorkload(layer, self.log)


class PyLeaker(PySoftmax):
    def create_workload_factory(self, memory_manager: Any = None) -> LeakingFactory:
        return LeakingFactory(self.log)


def test_a_backend_leaking_per_call_gets_one_warning(no_static_backends: None, caplog: pytest.LogCaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """512 KiB kept per call, a threshold of 8 MiB: the resident size read at runs 64, 128, ...
    grows by 32 MiB between two readings (far more than what the tests before may give back to
    the system meanwhile): warned once."""
    monkeypatch.setenv("PLUGNN_LEAK_WARNING_BYTES", str(8 << 20))
    BackendRegistry.register("PyLeaker", PyLeaker)
    try:
        with plugnn.Runtime() as runtime:
            loaded = runtime.load_network(plugnn.optimize(softmax_network(), runtime, ["PyLeaker"]))
            x = np.ones((2, 5), np.float32)
            with caplog.at_level("WARNING", logger="plugnn"):
                for _ in range(200):
                    loaded.run({"x": x})
    finally:
        for pages in LeakingWorkload.kept:
            pages.close()
        LeakingWorkload.kept.clear()
    warnings = [r.getMessage() for r in caplog.records if "grew by" in r.getMessage()]
    assert len(warnings) == 1
    assert "network 'scribbled' (backends PyLeaker)" in warnings[0]
