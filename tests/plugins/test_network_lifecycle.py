"""Networks on a dynamically loaded C plugin next to CpuRef: conv+relu fused by the plugin's
subgraph optimization end to end, the exact order of context, memory-manager and workload
calls, and failures that leave the runtime usable."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from plugnn import BackendError, Network, Runtime, optimize
from plugnn.loader import default_backend_paths

pytestmark = [pytest.mark.plugins, pytest.mark.usefixtures("no_static_backends")]

RNG = np.random.default_rng(5)
WEIGHTS = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)


@pytest.fixture
def runtime(plugin_dir: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    # CpuRef from the usual search list (the sanitized build under scripts/sanitize.sh), then the mock.
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", ":".join([*default_backend_paths(), str(plugin_dir("valid"))]))
    with Runtime() as rt:
        assert rt.backend_ids[-1] == "MockValid" and "CpuRef" in rt.backend_ids[:-1]
        yield rt


def events(runtime: Runtime) -> list[str]:
    return runtime.backend("MockValid").get_option("events").split(",")


def conv_relu_net() -> Network:
    net = Network("convrelu")
    x = net.add_input("x", (1, 3, 6, 6))
    y = net.add_convolution2d(x, WEIGHTS, padding=1, name="conv")
    y = net.add_activation(y, "relu", name="relu")
    y = net.add_global_pooling2d(y, name="gap")
    net.add_output(y, "y")
    return net


def test_plugin_fuses_conv_and_relu_end_to_end(runtime: Runtime) -> None:
    optimized = optimize(conv_relu_net(), runtime, ["MockValid", "CpuRef"])
    assert [(n.name, n.type_name, n.backend_id) for n in optimized.layers] == [
        ("conv+relu", "Convolution2d", "MockValid"), ("gap", "Pooling2d", "CpuRef")]
    fused = optimized.layers[0]
    assert fused.replaces == ("conv", "relu")
    assert fused.descriptor.fused_activation.kind.name == "RELU"
    assert "substituted 'conv', 'relu'" in optimized.explain()
    reference = optimize(conv_relu_net(), runtime, ["CpuRef"])
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    with runtime.load_network(optimized) as fused_net, runtime.load_network(reference) as ref_net:
        np.testing.assert_allclose(fused_net.run({"x": x})["y"], ref_net.run({"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_lifecycle_order(runtime: Runtime) -> None:
    optimized = optimize(conv_relu_net(), runtime, ["MockValid", "CpuRef"])
    start = len(events(runtime))
    loaded = runtime.load_network(optimized)
    x = np.zeros((1, 3, 6, 6), np.float32)
    loaded.run({"x": x})
    loaded.run({"x": x})
    loaded.unload()
    assert events(runtime)[start:] == [
        "before_load_network:1", "create_memory_manager", "create_workload_factory",
        "create_workload:conv+relu", "after_load_network:1",
        "acquire", "execute:conv+relu", "execute:conv+relu",
        "before_unload_network:1", "release", "destroy_workload:conv+relu", "destroy_workload_factory",
        "destroy_memory_manager", "after_unload_network:1"]


def test_failing_workload_names_layer_and_backend_and_network_stays_usable(runtime: Runtime) -> None:
    loaded = runtime.load_network(optimize(conv_relu_net(), runtime, ["MockValid", "CpuRef"]))
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    good = loaded.run({"x": x})["y"]
    runtime.backend("MockValid").set_option("fail", "execute")
    with pytest.raises(BackendError, match=r"backend 'MockValid': execute\(layer 'conv\+relu'\) failed "
                                           r"\[PN_ERR_INTERNAL\]: MockValid: injected failure in execute"):
        loaded.run({"x": x})
    np.testing.assert_array_equal(loaded.run({"x": x})["y"], good)


@pytest.mark.parametrize("function", ["create_workload", "before_load_network", "create_memory_manager"])
def test_failed_load_leaves_the_runtime_usable(runtime: Runtime, function: str) -> None:
    optimized = optimize(conv_relu_net(), runtime, ["MockValid", "CpuRef"])
    runtime.backend("MockValid").set_option("fail", function)
    with pytest.raises(BackendError, match=f"injected failure in {function}"):
        runtime.load_network(optimized)
    assert runtime.loaded_networks == []
    log = events(runtime)
    if function == "before_load_network":  # the context refused: nothing to undo
        assert log[-1] == "before_load_network:1"
    else:  # a context that accepted the load hears that it was abandoned
        assert log[-1] == "after_unload_network:1"
    assert log.count("create_workload_factory") == log.count("destroy_workload_factory")
    with runtime.load_network(optimized) as loaded:
        assert loaded.run({"x": np.zeros((1, 3, 6, 6), np.float32)})["y"].shape == (1, 4, 1, 1)


def test_failed_acquire_is_reported_and_retried(runtime: Runtime) -> None:
    loaded = runtime.load_network(optimize(conv_relu_net(), runtime, ["MockValid", "CpuRef"]))
    runtime.backend("MockValid").set_option("fail", "acquire")
    x = np.zeros((1, 3, 6, 6), np.float32)
    with pytest.raises(BackendError, match="injected failure in acquire"):
        loaded.run({"x": x})
    assert loaded.run({"x": x})["y"].shape == (1, 4, 1, 1)
