"""Backends written in Python, registered statically, used next to dynamic ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendRegistry, LayerSpec, Runtime, SupportResult
from plugnn.backend import Backend, BackendContext, Workload, WorkloadFactory
from plugnn.descriptors import ActivationDescriptor, LayerKind
from plugnn.errors import BackendOptionError, RegistryError, UnknownBackendError
from plugnn.tensor import TensorInfo

pytestmark = pytest.mark.usefixtures("no_static_backends")


class NegateWorkload(Workload):
    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        np.negative(inputs[0], out=outputs[0])


class NegateFactory(WorkloadFactory):
    def create_workload(self, layer: LayerSpec) -> Workload:
        return NegateWorkload()


class Recorder(BackendContext):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def before_load_network(self, network_id: int) -> None:
        self.log.append(f"before_load:{network_id}")

    def close(self) -> None:
        self.log.append("context_closed")


class PyBackend(Backend):
    """Supports only LINEAR activations (used as negation in this test)."""

    def __init__(self) -> None:
        self.options: dict[str, str] = {}
        self.log: list[str] = []

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if layer.kind is LayerKind.ACTIVATION:
            return SupportResult(True)
        return SupportResult(False, f"PyBackend only runs activations, not {layer.kind.name}")

    def create_workload_factory(self, memory_manager: Any = None) -> WorkloadFactory:
        return NegateFactory()

    def create_context(self) -> BackendContext:
        return Recorder(self.log)

    def set_option(self, key: str, value: str) -> None:
        if key != "mode":
            super().set_option(key, value)
        self.options[key] = value

    def close(self) -> None:
        self.log.append("backend_closed")


def test_registered_backend_appears_in_every_new_runtime() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    with Runtime(dynamic_backends=False) as r1, Runtime(dynamic_backends=False) as r2:
        assert r1.backend_ids == r2.backend_ids == ["PyNeg"]
        assert r1.backend("PyNeg") is not r2.backend("PyNeg")
        assert r1.describe() == [{"backend_id": "PyNeg", "version": "0.0", "origin": "static", "source": "",
                                 "host_memory": True, "isolation": "", "failed": ""}]
        assert r1.load_report[0].kind == "static" and r1.load_report[0].status == "loaded"


def test_static_backends_come_before_dynamic_ones() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    with Runtime() as runtime:
        dynamic = [d["backend_id"] for d in runtime.describe() if d["origin"] != "static"]
        assert "CpuRef" in dynamic
        assert runtime.backend_ids == ["PyNeg", *dynamic]


def test_static_backend_runs_a_workload() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    with Runtime(dynamic_backends=False) as runtime:
        backend = runtime.backend("PyNeg")
        layer = LayerSpec(LayerKind.ACTIVATION, "neg", ActivationDescriptor("linear", -1.0, 0.0),
                          (TensorInfo((3,)),), (TensorInfo((3,)),))
        assert backend.is_layer_supported(layer)
        softmax = LayerSpec(LayerKind.SOFTMAX, "sm", None, (TensorInfo((3,)),), (TensorInfo((3,)),))
        assert backend.is_layer_supported(softmax).reason == "PyBackend only runs activations, not SOFTMAX"
        out = np.zeros(3, np.float32)
        backend.create_workload_factory().create_workload(layer).execute([np.ones(3, np.float32)], [out])
        np.testing.assert_array_equal(out, -np.ones(3))


def test_options_reach_the_backend_before_use_and_context_and_close_are_called() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    runtime = Runtime(dynamic_backends=False, backend_options={"PyNeg": {"mode": "fast"}})
    backend = runtime.backend("PyNeg")
    assert backend.options == {"mode": "fast"}
    runtime.context("PyNeg").before_load_network(7)
    runtime.close()
    assert backend.log == ["before_load:7", "context_closed", "backend_closed"]


def test_unknown_option_is_an_error_naming_backend_and_key() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    with pytest.raises(BackendOptionError, match=r"backend 'PyNeg': set_option\('speed'\) failed.*unknown option"):
        Runtime(dynamic_backends=False, backend_options={"PyNeg": {"speed": "1"}})


def test_options_for_an_unknown_backend_list_what_exists() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    with pytest.raises(UnknownBackendError, match="unknown backend 'Nope'; available backends: PyNeg"):
        Runtime(dynamic_backends=False, backend_options={"Nope": {"x": "1"}})


def test_broken_static_factory_is_reported_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> Backend:
        raise RuntimeError("no device")

    BackendRegistry.register("Broken", broken)
    BackendRegistry.register("NotABackend", lambda: object())  # type: ignore[arg-type,return-value]
    BackendRegistry.register("PyNeg", PyBackend)
    with caplog.at_level("WARNING", logger="plugnn"), Runtime(dynamic_backends=False) as runtime:
        assert runtime.backend_ids == ["PyNeg"]
        report = {r.backend_id: r for r in runtime.load_report}
        assert report["Broken"].status == "rejected" and "no device" in report["Broken"].reason
        assert "not a plugnn Backend" in report["NotABackend"].reason
    assert "Broken" in caplog.text


@pytest.mark.parametrize("backend_id", ["", "bad id", "Host", "1abc"])
def test_register_rejects_bad_ids(backend_id: str) -> None:
    with pytest.raises(RegistryError, match="cannot register backend"):
        BackendRegistry.register(backend_id, PyBackend)


def test_register_rejects_duplicates_and_non_callables() -> None:
    BackendRegistry.register("PyNeg", PyBackend)
    with pytest.raises(RegistryError, match="already registered"):
        BackendRegistry.register("PyNeg", PyBackend)
    with pytest.raises(RegistryError, match="not callable"):
        BackendRegistry.register("Other", 42)  # type: ignore[arg-type]
    assert BackendRegistry.registered_ids() == ["PyNeg"]


def test_deregister_unknown_lists_registered() -> None:
    with pytest.raises(UnknownBackendError, match="unknown backend 'Nope'"):
        BackendRegistry.deregister("Nope")


def test_closed_runtime_is_a_clear_error() -> None:
    runtime = Runtime(dynamic_backends=False)
    runtime.close()
    runtime.close()  # idempotent
    with pytest.raises(plugnn.RuntimeClosedError, match="closed"):
        runtime.backend_ids


def test_runtime_with_no_backends_starts_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="plugnn"), Runtime(dynamic_backends=False) as runtime:
        assert runtime.backend_ids == []
    assert "no backends" in caplog.text
    with pytest.raises(UnknownBackendError, match="available backends: none"):
        Runtime(dynamic_backends=False).backend("CpuRef")
