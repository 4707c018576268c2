"""optimize(): assignment with fallback both ways, overrides, explanations, graph passes,
subgraph substitution and refusal, copies between memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from plugnn import Network, NetworkError, OptimizationError, Runtime, UnknownBackendError, optimize
from plugnn.backend import Backend, MemoryManager, Workload, WorkloadFactory
from plugnn.descriptors import LayerKind
from plugnn.layers import LayerSpec, SupportResult
from plugnn.registry import BackendRegistry

RNG = np.random.default_rng(7)


def small_net(softmax_dtype: str = "float32") -> Network:
    net = Network("small")
    x = net.add_input("x", (2, 6), softmax_dtype)
    if softmax_dtype == "float32":
        h = net.add_fully_connected(x, RNG.standard_normal((6, 4)), RNG.standard_normal(4), name="fc")
        h = net.add_activation(h, "relu", name="relu")
    else:
        h = x
    net.add_output(net.add_softmax(h, name="softmax"), "y")
    return net


def backend_of(optimized, layer: str) -> str:  # type: ignore[no-untyped-def]
    return next(r["backend"] for r in optimized.assignments() if r["layer"] == layer)


def test_first_supporting_backend_wins_and_others_fall_back(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["PySoftmax", "CpuRef"])
    assert [(r["layer"], r["backend"]) for r in optimized.assignments()] == [
        ("fc", "CpuRef"), ("relu", "CpuRef"), ("softmax", "PySoftmax")]
    fc = optimized.assignments()[0]
    assert [(a["backend"], a["accepted"]) for a in fc["attempts"]] == [("PySoftmax", False), ("CpuRef", True)]
    assert fc["attempts"][0]["reason"] == "PySoftmax runs Softmax only, not FULLY_CONNECTED"


def test_without_a_preference_the_runtime_order_is_used(runtime: Runtime) -> None:
    bundled = [b for b in ("CpuAcc", "CpuRef") if b in runtime.backend_ids]
    assert runtime.preferred_backends == bundled + ["PySoftmax", "PyRefuser", "PyDevice"]
    optimized = optimize(small_net(), runtime)
    assert optimized.preferred == runtime.preferred_backends
    assert {r["backend"] for r in optimized.assignments()} == {bundled[0]}


class PyDequantize(Backend):
    """Casts quantized int8 inputs to float32 (real = scale * (q - zero point)): what CpuRef does
    not compute."""

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if layer.kind is not LayerKind.CAST or not layer.inputs[0].quant_scale:
            return SupportResult(False, f"{self.backend_id} dequantizes only")
        return SupportResult(True)

    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> WorkloadFactory:
        return _DequantizeFactory()


class _DequantizeFactory(WorkloadFactory):
    def create_workload(self, layer: LayerSpec) -> Workload:
        info = layer.inputs[0]
        return _Dequantize(info.quant_scale, info.quant_zero_point)


class _Dequantize(Workload):
    def __init__(self, scale: float, zero_point: int) -> None:
        self.scale, self.zero_point = scale, zero_point

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        outputs[0][...] = self.scale * (inputs[0].astype(np.float32) - self.zero_point)


def test_fallback_from_cpuref_to_a_python_backend(no_static_backends: None) -> None:
    """CpuRef computes with plain integers only: a cast of a quantized input goes to the next backend."""
    BackendRegistry.register("PyDequantize", PyDequantize)
    net = Network("dequantize")
    q = net.add_input("q", (4,), "int8", quant_scale=0.5, quant_zero_point=3)
    net.add_output(net.add_cast(q, "float32", name="dequantize"), "y")
    with Runtime() as runtime:
        optimized = optimize(net, runtime, ["CpuRef", "PyDequantize"])
        (record,) = optimized.assignments()
        assert record["backend"] == "PyDequantize"
        first = record["attempts"][0]
        assert first["backend"] == "CpuRef" and not first["accepted"]
        assert first["reason"] == ("CpuRef runs Cast on plain tensors only; input 0 is quantized int8 (quant_scale "
                                   "0.5, zero point 3), which it does not compute with")
        with runtime.load_network(optimized) as loaded:
            y = loaded.run({"q": np.array([3, 5, -1, 127], np.int8)})["y"]
    np.testing.assert_array_equal(y, np.array([0.0, 1.0, -2.0, 62.0], np.float32))


def test_only_int8_and_uint8_inputs_are_quantized() -> None:
    with pytest.raises(NetworkError, match="input 'x': only int8 and uint8 tensors are quantized, not int32"):
        Network("n").add_input("x", (2,), "int32", quant_scale=0.5)


def test_explain_and_table(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["PySoftmax", "CpuRef"])
    text = optimized.explain()
    assert "- fc (FullyConnected) -> CpuRef" in text
    assert "preference: PySoftmax: no (PySoftmax runs Softmax only, not FULLY_CONNECTED)" in text
    assert "preference: CpuRef: yes (supported)" in text
    table = optimized.table().splitlines()
    assert table[0].split() == ["layer", "type", "backend"]
    assert table[2].split() == ["fc", "FullyConnected", "CpuRef"]
    assert str(optimized) == optimized.table()


def test_override_pins_a_layer(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["CpuRef"], overrides={"softmax": "PySoftmax"})
    record = optimized.assignments()[-1]
    assert record["backend"] == "PySoftmax"
    assert record["attempts"][0] == {"backend": "PySoftmax", "accepted": True, "reason": "supported",
                                     "stage": "override"}


def test_override_that_cannot_run_the_layer_falls_back(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["CpuRef"], overrides={"fc": "PySoftmax"})
    attempts = optimized.assignments()[0]["attempts"]
    assert [(a["backend"], a["stage"], a["accepted"]) for a in attempts] == [
        ("PySoftmax", "override", False), ("CpuRef", "preference", True)]


def test_no_backend_supports_a_layer(runtime: Runtime) -> None:
    with pytest.raises(OptimizationError) as info:
        optimize(small_net(), runtime, ["PySoftmax"])
    message = str(info.value)
    assert "no preferred backend can run layer 'fc' (FullyConnected" in message
    assert "PySoftmax: PySoftmax runs Softmax only" in message


@pytest.mark.parametrize("backends, overrides, error, message", [
    ([], None, OptimizationError, "preferred backend list is empty; this runtime has: PySoftmax, PyRefuser, "
                                  "PyDevice, Cpu"),  # then the bundled CpuAcc/CpuRef
    (["GpuAcc"], None, UnknownBackendError, "unknown backend 'GpuAcc'; available backends: PySoftmax"),
    (["CpuRef"], {"fc": "Nope"}, UnknownBackendError, "unknown backend 'Nope'"),
    (["CpuRef"], {"missing_layer": "CpuRef"}, NetworkError, "overrides name layers that network 'small' does not "
                                                             "have: missing_layer"),
])
def test_bad_preferences(runtime: Runtime, backends, overrides, error, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        optimize(small_net(), runtime, backends, overrides)


def test_network_without_outputs(runtime: Runtime) -> None:
    net = Network("empty")
    net.add_input("x", (1,))
    with pytest.raises(OptimizationError, match="has no outputs"):
        optimize(net, runtime, ["CpuRef"])


def test_batch_norm_folded_dropout_removed_constants_folded(runtime: Runtime) -> None:
    net = Network("passes")
    x = net.add_input("x", (1, 2, 5, 5))
    y = net.add_convolution2d(x, RNG.standard_normal((3, 2, 3, 3)), name="conv")
    y = net.add_batch_normalization(y, RNG.random(3) + 0.5, RNG.random(3), RNG.random(3), RNG.random(3) + 0.5,
                                    name="bn")
    y = net.add_dropout(y, name="drop")
    # an addend that varies over the pixels: not a per-channel shift, so the Add stays
    bias = net.add_mul(np.full((1, 3, 3, 3), 2.0), np.full((1, 3, 3, 3), 3.0), name="const_mul")
    y = net.add_add(y, bias, name="add")
    net.add_output(y, "y")
    optimized = optimize(net, runtime, ["CpuRef"])
    layers = [(n.name, n.type_name) for n in optimized.layers]
    assert layers == [("conv", "Convolution2d"), ("add", "ElementwiseBinary")]
    assert optimized.layers[0].replaces == ("bn",)
    removed = {r["layer"]: r["why"] for r in optimized.removed()}
    assert removed == {"drop": "identity/dropout removed", "bn": "folded into 'conv'",
                       "const_mul": "constant-folded on CpuRef"}
    np.testing.assert_array_equal(optimized.graph.constants["const_mul"], np.full((1, 3, 3, 3), 6.0))


def test_subgraph_refusal_moves_layers_to_the_next_backend(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["PyRefuser", "CpuRef"])
    record = optimized.assignments()[-1]
    assert record["backend"] == "CpuRef"
    assert [(a["backend"], a["stage"], a["accepted"]) for a in record["attempts"]] == [
        ("PyRefuser", "preference", True), ("PyRefuser", "optimize_subgraph", False), ("CpuRef", "fallback", True)]
    assert "changed my mind" in record["attempts"][1]["reason"]


def test_host_memory_backends_share_buffers_without_copies(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["PySoftmax", "CpuRef"])
    assert not [n for n in optimized.layers if n.kind is LayerKind.COPY]


def test_copies_around_a_backend_without_host_memory(runtime: Runtime) -> None:
    optimized = optimize(small_net(), runtime, ["PyDevice", "CpuRef"])
    names = [(n.name, n.backend_id) for n in optimized.layers]
    assert names == [("fc", "CpuRef"), ("relu", "CpuRef"), ("copy relu to PyDevice", None),
                     ("softmax", "PyDevice"), ("copy softmax to host", None)]
    assert "runtime copy from host memory to PyDevice memory" in optimized.explain()
