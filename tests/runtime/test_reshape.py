"""pn_workload.reshape (ABI 1.1) and Runtime.load_network(reshape_from=...): a layer of a network
loaded at new shapes gets the workload of the same layer of a loaded network re-sized; CpuRef's
reshape checks it is the same layer reading the same constant buffers; Python backends take part
through Workload.reshape; a backend without reshape gets create_workload."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, Network, PlugnnError, Runtime, optimize

RNG = np.random.default_rng(21)
W = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)
for _array in (W, B):
    _array.setflags(write=False)


def conv_net(batch: int, size: int = 7, weights: np.ndarray = W, padding: int = 1) -> Network:
    net = Network("conv_softmax")
    x = net.add_input("x", (batch, 3, size, size))
    y = net.add_convolution2d(x, net.add_shared_constant(weights, "w"), net.add_shared_constant(B, "b"),
                              padding=padding, name="conv")
    y = net.add_activation(y, "relu", name="relu")
    net.add_output(net.add_softmax(y, axis=1, name="softmax"), "y")
    return net


def reference(x: np.ndarray, padding: int = 1) -> np.ndarray:
    with Runtime() as rt:
        net = conv_net(x.shape[0], x.shape[2], padding=padding)
        with rt.load_network(optimize(net, rt, ["CpuRef"])) as loaded:
            return loaded.run({"x": x})["y"]


def spec_of(network: Network, runtime: Runtime, layer: str) -> plugnn.LayerSpec:
    optimized = optimize(network, runtime, ["CpuRef"])
    node = next(n for n in optimized.layers if n.name == layer)
    return optimized.graph.spec(node)


def test_cpuref_reshapes_a_workload_that_outlives_its_source() -> None:
    x = RNG.standard_normal((3, 3, 7, 7)).astype(np.float32)
    with Runtime() as runtime:
        backend = runtime.backend("CpuRef")
        factory = backend.create_workload_factory()
        source = factory.create_workload(spec_of(conv_net(1), runtime, "conv"))
        reshaped = source.reshape(spec_of(conv_net(3), runtime, "conv"))
        assert reshaped is not None
        source.close()  # the shared state outlives the source (ASan checks the count)
        out = np.empty((3, 6, 7, 7), np.float32)
        reshaped.execute([x, W, B], [out])
        again = reshaped.reshape(spec_of(conv_net(2, 5), runtime, "conv"))  # reshaped again, other shapes
        reshaped.close()
        fresh = factory.create_workload(spec_of(conv_net(3), runtime, "conv"))
        expected = np.empty_like(out)
        fresh.execute([x, W, B], [expected])
        np.testing.assert_array_equal(out, expected)
        small_x = x[:2, :, :5, :5].copy()
        small, small_expected = np.empty((2, 6, 5, 5), np.float32), np.empty((2, 6, 5, 5), np.float32)
        again.execute([small_x, W, B], [small])
        again.close()
        fresh.close()
        fresh = factory.create_workload(spec_of(conv_net(2, 5), runtime, "conv"))
        fresh.execute([small_x, W, B], [small_expected])
        np.testing.assert_array_equal(small, small_expected)
        fresh.close()
        factory.close()


def test_cpuref_refuses_to_reshape_into_another_layer() -> None:
    with Runtime() as runtime:
        factory = runtime.backend("CpuRef").create_workload_factory()
        source = factory.create_workload(spec_of(conv_net(1), runtime, "conv"))
        copied = W.copy()
        copied.setflags(write=False)
        with pytest.raises(BackendError, match=r"reshape\(layer 'conv'\) failed \[PN_ERR_INVALID_ARGUMENT\]: CpuRef "
                                               r"reshape\(layer 'conv'\): not the workload's layer at other shapes: "
                                               r"input 1 is not the constant buffer the workload was made with"):
            source.reshape(spec_of(conv_net(2, weights=copied), runtime, "conv"))
        with pytest.raises(BackendError, match="its descriptor differs"):
            source.reshape(spec_of(conv_net(2, padding=0), runtime, "conv"))
        with pytest.raises(BackendError, match="its kind or number of inputs or outputs differs"):
            source.reshape(spec_of(conv_net(2), runtime, "relu"))
        out = np.empty((1, 6, 7, 7), np.float32)
        x = RNG.standard_normal((1, 3, 7, 7)).astype(np.float32)
        source.execute([x, W, B], [out])  # still usable after the refusals
        source.close()
        factory.close()


def test_load_network_re_sizes_matching_layers_on_native_and_python_backends(runtime: Runtime) -> None:
    py = runtime.backend("PySoftmax")
    first = runtime.load_network(optimize(conv_net(1), runtime, ["PySoftmax", "CpuRef"]))
    second = runtime.load_network(optimize(conv_net(4), runtime, ["PySoftmax", "CpuRef"]), reshape_from=[first])
    assert second.reshaped_layers == ["conv", "relu", "softmax"]
    assert "reshape:softmax" in py.log  # type: ignore[attr-defined]
    third = runtime.load_network(optimize(conv_net(2, 9), runtime, ["PySoftmax", "CpuRef"]), reshape_from=[second])
    assert third.reshaped_layers == ["conv", "relu", "softmax"]
    first.unload()
    second.unload()
    x = RNG.standard_normal((2, 3, 9, 9)).astype(np.float32)
    np.testing.assert_allclose(third.run({"x": x})["y"], reference(x), rtol=1e-6, atol=1e-7)
    third.unload()
    other = optimize(conv_net(1), runtime, ["CpuRef"])
    with Runtime() as elsewhere, elsewhere.load_network(optimize(conv_net(1), elsewhere, ["CpuRef"])) as foreign:
        with pytest.raises(PlugnnError, match="reshape_from: network 'conv_softmax' is not loaded on this runtime"):
            runtime.load_network(other, reshape_from=[foreign])


def test_a_layer_that_changed_gets_a_new_workload() -> None:
    with Runtime() as runtime:
        first = runtime.load_network(optimize(conv_net(1), runtime, ["CpuRef"]))
        other_weights = (W * 2).astype(np.float32)
        other_weights.setflags(write=False)
        second = runtime.load_network(optimize(conv_net(2, weights=other_weights), runtime, ["CpuRef"]),
                                      reshape_from=[first])
        assert second.reshaped_layers == ["relu", "softmax"]  # conv reads other constants
        x = RNG.standard_normal((2, 3, 7, 7)).astype(np.float32)
        first.unload()
        assert second.run({"x": x})["y"].shape == (2, 6, 7, 7)
