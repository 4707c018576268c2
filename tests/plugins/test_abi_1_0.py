"""A plugin built against the 1.0 header keeps loading and running under the 1.3 runtime, and
refuses, with its own reason, what 1.1 and 1.2 added (the work falls back to the next backend)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import plugnn
from plugnn import Network, Runtime, optimize

pytestmark = pytest.mark.plugins

PluginDir = Callable[..., Path]


def _runtime(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    bundled = Path(plugnn.loader.BUNDLED_DIR)
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", f"{plugin_dir('abi_1_0')}:{bundled}")
    return Runtime()


def test_a_1_0_plugin_loads_under_the_1_3_runtime(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    assert plugnn.BACKEND_API_VERSION == (1, 3)
    with _runtime(plugin_dir, monkeypatch) as runtime:
        backend = runtime.backend("MockAbi10")
        assert backend.version == (1, 0)
        record = next(r for r in runtime.load_report if r.backend_id == "MockAbi10")
        assert (record.status, record.version) == ("loaded", "1.0")


def test_a_1_0_plugin_runs_its_layers(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(10)
    a, b = (rng.standard_normal((2, 5)).astype(np.float32) for _ in range(2))
    net = Network("abi10")
    x, y = net.add_input("a", a.shape), net.add_input("b", b.shape)
    net.add_output(net.add_activation(net.add_add(x, y, name="add"), "relu", name="relu"), "out")
    with _runtime(plugin_dir, monkeypatch) as runtime:
        optimized = optimize(net, runtime, ["MockAbi10", "CpuRef"])
        assert {r["layer"]: r["backend"] for r in optimized.assignments()} == {"add": "MockAbi10", "relu": "MockAbi10"}
        with runtime.load_network(optimized) as loaded:
            for _ in range(2):
                np.testing.assert_array_equal(loaded.run({"a": a, "b": b})["out"], np.maximum(a + b, 0))
            # its workloads end before 1.3's flags: none takes shapes at execute
            assert not any(w.shapes_at_execute for w in loaded._workloads)  # noqa: SLF001


def test_what_1_1_added_is_refused_by_the_1_0_plugin(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    net = Network("new")
    x = net.add_input("x", (3,))
    i = net.add_input("i", (3,), "int64")
    net.add_output(net.add_unary("exp", x, name="exp"), "e")              # a 1.1 kind
    net.add_output(net.add_activation(x, "gelu", name="gelu"), "g")       # a 1.1 activation
    net.add_output(net.add_elementwise("mod", x, x, name="mod"), "m")     # a 1.1 operation
    net.add_output(net.add_add(i, i, name="int_add"), "s")                # an element type CpuRef... and 1.0 know
    with _runtime(plugin_dir, monkeypatch) as runtime:
        optimized = optimize(net, runtime, ["MockAbi10", "CpuRef"])
        records = {r["layer"]: r for r in optimized.assignments()}
        for layer, reason in [("exp", "runs Activation and ElementwiseBinary only, not layer kind 16"),
                              ("gelu", "runs the RELU activation only, not kind 13"),
                              ("mod", "runs ADD without a fused activation only, not operation 9"),
                              ("int_add", "runs float32 tensors of one shape only")]:
            first = records[layer]["attempts"][0]
            assert (first["backend"], first["accepted"]) == ("MockAbi10", False)
            assert reason in first["reason"]
            assert records[layer]["backend"] == "CpuRef"


def test_a_1_2_kind_is_refused_by_the_1_0_plugin(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    """TREE_ENSEMBLE (1.2) reaches a 1.0 plugin as a kind it does not know: refused, run by CpuRef."""
    net = Network("trees")
    x = net.add_input("x", (2, 1))
    (scores,) = net.add_tree_ensemble(x, tree_offsets=[0, 3], node_modes=[1, 7, 7], node_features=[0, 0, 0],
                                      node_thresholds=[0.5, 0, 0], node_true=[1, 0, 1], node_false=[2, 1, 1],
                                      leaf_targets=[0, 0], leaf_weights=[1.0, 2.0], base_values=[0.0], name="trees")
    net.add_output(scores, "y")
    with _runtime(plugin_dir, monkeypatch) as runtime:
        optimized = optimize(net, runtime, ["MockAbi10", "CpuRef"])
        record = {r["layer"]: r for r in optimized.assignments()}["trees"]
        assert (record["attempts"][0]["backend"], record["attempts"][0]["accepted"]) == ("MockAbi10", False)
        assert "kind 46" in record["attempts"][0]["reason"]
        assert record["backend"] == "CpuRef"
        with runtime.load_network(optimized) as loaded:
            out = loaded.run({"x": np.array([[0.0], [1.0]], np.float32)})["y"]
        np.testing.assert_array_equal(out, [[1.0], [2.0]])


def test_a_1_0_plugin_gets_new_workloads_where_a_1_1_one_re_sizes(plugin_dir: PluginDir,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """pn_workload.reshape lies past the struct_size a 1.0 plugin writes: the runtime never calls
    it and creates the workload instead; CpuRef's layers of the same network are re-sized."""
    def network(batch: int) -> Network:
        net = Network("abi10_shapes")
        x = net.add_input("x", (batch, 5))
        y = net.add_activation(net.add_add(x, x, name="add"), "relu", name="relu")
        net.add_output(net.add_softmax(y, name="softmax"), "out")
        return net

    rng = np.random.default_rng(12)
    with _runtime(plugin_dir, monkeypatch) as runtime:
        first = runtime.load_network(optimize(network(1), runtime, ["MockAbi10", "CpuRef"]))
        second = runtime.load_network(optimize(network(3), runtime, ["MockAbi10", "CpuRef"]), reshape_from=[first])
        assert second.reshaped_layers == ["softmax"]  # add and relu run on MockAbi10
        first.unload()
        x = rng.standard_normal((3, 5)).astype(np.float32)
        y = np.maximum(2 * x, 0)
        expected = np.exp(y - y.max(axis=1, keepdims=True))
        np.testing.assert_allclose(second.run({"x": x})["out"], expected / expected.sum(axis=1, keepdims=True),
                                   rtol=1e-6)
        second.unload()
