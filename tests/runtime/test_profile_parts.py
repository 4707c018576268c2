"""A Python backend's Workload.read_profile (the Python side of ABI 1.2's pn_workload.read_profile):
a profiled run records what it reports as the layer's `nodes`; a failure in it is a
BackendError naming the backend and the layer; a plain run never calls it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from plugnn import BackendError, BackendRegistry, Network, Runtime, optimize
from plugnn.backend import Workload, WorkloadFactory
from plugnn.layers import LayerSpec
from pybackends import PySoftmax, SoftmaxWorkload


class PartsWorkload(SoftmaxWorkload):
    """A softmax that says it ran as two original layers (exp, then the normalization)."""

    reads = 0

    def read_profile(self) -> list[tuple[str, float]] | None:
        PartsWorkload.reads += 1
        return [("exp", 1e-6), ("normalize", 2e-6)]


class BrokenWorkload(SoftmaxWorkload):
    def read_profile(self) -> list[tuple[str, float]] | None:
        raise RuntimeError("my timers broke")


class Factory(WorkloadFactory):
    def __init__(self, cls: type[SoftmaxWorkload], log: list[str]) -> None:
        self.cls, self.log = cls, log

    def create_workload(self, layer: LayerSpec) -> Workload:
        return self.cls(layer, self.log)


class PyParts(PySoftmax):
    workload: type[SoftmaxWorkload] = PartsWorkload

    def create_workload_factory(self, memory_manager: Any = None) -> WorkloadFactory:
        return Factory(self.workload, self.log)


class PyBrokenParts(PyParts):
    workload = BrokenWorkload


@pytest.fixture
def runtime(no_static_backends: None) -> Iterator[Runtime]:
    BackendRegistry.register("PyParts", PyParts)
    BackendRegistry.register("PyBrokenParts", PyBrokenParts)
    with Runtime() as rt:
        yield rt


def softmax_net() -> Network:
    net = Network("softmax")
    x = net.add_input("x", (2, 5))
    net.add_output(net.add_softmax(net.add_activation(x, "abs", name="abs"), name="softmax"), "y")
    return net


def test_a_profiled_run_records_the_parts(runtime: Runtime) -> None:
    x = np.zeros((2, 5), np.float32)
    with runtime.load_network(optimize(softmax_net(), runtime, ["PyParts", "CpuRef"])) as loaded:
        PartsWorkload.reads = 0
        loaded.run({"x": x})
        assert PartsWorkload.reads == 0  # not profiled: never asked
        loaded.run({"x": x}, profile=True)
        records = {r["layer"]: r for r in loaded.last_profile}
        assert records["softmax"]["nodes"] == [{"layer": "exp", "seconds": 1e-6}, {"layer": "normalize", "seconds": 2e-6}]
        assert "nodes" not in records["abs"]  # CpuRef's layer: no breakdown


def test_a_failing_read_profile_is_a_backend_error(runtime: Runtime) -> None:
    x = np.zeros((2, 5), np.float32)
    with runtime.load_network(optimize(softmax_net(), runtime, ["PyBrokenParts", "CpuRef"])) as loaded:
        with pytest.raises(BackendError, match=r"PyBrokenParts.*read_profile\(layer 'softmax'\).*my timers broke"):
            loaded.run({"x": x}, profile=True)
        loaded.run({"x": x})  # still usable
        np.testing.assert_allclose(loaded.run({"x": x})["y"], np.full((2, 5), 0.2, np.float32), rtol=1e-6)
