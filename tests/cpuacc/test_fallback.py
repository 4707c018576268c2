"""Layers CpuAcc declines run on CpuRef in the same network: the decline carries CpuAcc's reason,
explain() shows it, and the network's output is CpuRef's alone within float32 tolerance.

CpuAcc implements neither Triangular (ONNX Trilu) nor local response normalization; a network with
both, between CpuAcc layers, crosses between the two backends four times.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn import Network

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc was not built on this machine")

RNG = np.random.default_rng(20261124)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def mixed_network() -> Network:
    """triangle (on the graph input) -> conv -> lrn -> relu -> conv -> y."""
    net = Network("mixed")
    x = net.add_input("x", (2, 8, 12, 12))
    y = net.add_triangular(x, upper=True, k=-2, name="tri")
    y = net.add_convolution2d(y, rand(16, 8, 3, 3) * 0.2, rand(16), padding=1, name="conv1")
    y = net.add_lrn(y, 5, alpha=1e-3, beta=0.75, bias=2.0, name="lrn")
    y = net.add_activation(y, "relu", name="relu")
    y = net.add_convolution2d(y, rand(8, 16, 1, 1) * 0.3, name="conv2")
    net.add_output(y, "y")
    return net


def backends_of(optimized: plugnn.OptimizedNetwork) -> dict[str, str]:
    """Original layer name -> the backend that runs it (fused layers count for each they replace)."""
    out = {}
    for node in optimized.graph.nodes:
        for name in node.replaces or (node.name,):
            out[name] = node.backend_id
    return out


def test_declined_layers_fall_back_to_cpuref_with_cpuacc_reason() -> None:
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(mixed_network(), rt, ["CpuAcc", "CpuRef"])
        where = backends_of(optimized)
        assert where["tri"] == where["lrn"] == "CpuRef"
        assert where["conv1"] == where["relu"] == where["conv2"] == "CpuAcc"
        text = optimized.explain()
        for kind in ("Triangular", "LocalResponseNormalization"):
            assert f"preference: CpuAcc: no (CpuAcc has no {kind} kernel)" in text, text
        assert text.count("preference: CpuRef: yes") == 2, text


def test_a_mixed_network_computes_what_cpuref_alone_computes() -> None:
    net = mixed_network()
    x = rand(2, 8, 12, 12)
    with plugnn.Runtime() as rt:
        reference = rt.load_network(plugnn.optimize(net, rt, ["CpuRef"])).run({"x": x})["y"]
        loaded = rt.load_network(plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"]))
        first = loaded.run({"x": x})["y"]
        second = loaded.run({"x": x})["y"]  # the crossings' buffers are reused, not stale
    assert np.isfinite(reference).all() and np.abs(reference).max() > 0.1
    # float32 sums in another order (CpuRef accumulates in double): 1e-5 of the output's scale
    np.testing.assert_allclose(first, reference, rtol=0, atol=1e-5 * np.abs(reference).max())
    np.testing.assert_array_equal(second, first)


def test_a_layer_pinned_to_cpuref_runs_there_and_says_so() -> None:
    net = mixed_network()
    x = rand(2, 8, 12, 12)
    with plugnn.Runtime() as rt:
        pinned = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"], overrides={"conv2": "CpuRef"})
        assert backends_of(pinned)["conv2"] == "CpuRef"
        assert "override: CpuRef: yes" in pinned.explain()
        reference = rt.load_network(plugnn.optimize(net, rt, ["CpuRef"])).run({"x": x})["y"]
        got = rt.load_network(pinned).run({"x": x})["y"]
    np.testing.assert_allclose(got, reference, rtol=0, atol=1e-5 * np.abs(reference).max())
