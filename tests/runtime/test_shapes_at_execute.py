"""Workloads that take their tensors' shapes at execute (ABI 1.3, PN_WORKLOAD_SHAPES_AT_EXECUTE):
CpuRef's and CpuAcc's workloads (plugin_common's skeleton, pn_plugin_create_shaped_workload) run
at dims other than the layer's they were made for, giving what a workload made at those dims
gives, bit for bit; other ranks, element types or constant dims are refused with
PN_ERR_INVALID_ARGUMENT, dims the layer does not hold at by the kind's own validation, and a
refused call leaves the workload running at any valid dims. Scratch beyond the first
workload's workspace is the workload's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, Network, Runtime, optimize

RNG = np.random.default_rng(33)
W = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)
S = RNG.standard_normal(6).astype(np.float32)
S4 = S.reshape(1, 6, 1, 1)
for _array in (W, B, S4):
    _array.setflags(write=False)
BACKENDS = ["CpuRef", "CpuAcc"]


def single(layer: str, batch: int, size: int) -> Network:
    """One layer alone (so no backend fuses it): conv (constant weights, bias), relu, add of a
    broadcast constant, softmax over channels."""
    net = Network(layer)
    x = net.add_input("x", (batch, 3 if layer == "conv" else 6, size, size))
    if layer == "conv":
        y = net.add_convolution2d(x, net.add_shared_constant(W, "w"), net.add_shared_constant(B, "b"), padding=1,
                                  name="conv")
    elif layer == "relu":
        y = net.add_activation(x, "relu", name="relu")
    elif layer == "add":
        y = net.add_add(x, net.add_shared_constant(S4, "s"), name="add")
    else:
        y = net.add_softmax(x, axis=1, name="softmax")
    net.add_output(y, "y")
    return net


def spec_of(runtime: Runtime, backend: str, layer: str, batch: int, size: int) -> plugnn.LayerSpec:
    optimized = optimize(single(layer, batch, size), runtime, [backend])
    node, = optimized.layers
    assert node.name == layer
    return optimized.graph.spec(node)


def operands(layer: str, batch: int, size: int) -> tuple[list[np.ndarray], tuple[int, ...]]:
    rng = np.random.default_rng(batch * 100 + size)
    x = rng.standard_normal((batch, 3 if layer == "conv" else 6, size, size)).astype(np.float32)
    constants = {"conv": [W, B], "add": [S4], "relu": [], "softmax": []}[layer]
    return [x, *constants], (batch, 6, size, size)


def made_at(runtime: Runtime, backend: str, factory: Any, layer: str, batch: int, size: int) -> np.ndarray:
    """What a workload made at these dims computes from operands(layer, batch, size)."""
    inputs, out_shape = operands(layer, batch, size)
    fresh = factory.create_workload(spec_of(runtime, backend, layer, batch, size))
    want = np.full(out_shape, np.nan, np.float32)
    fresh.execute(inputs, [want])
    fresh.close()
    return want


@pytest.fixture(scope="module")
def runtime() -> Iterator[Runtime]:
    with Runtime() as rt:
        yield rt


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layer", ["conv", "relu", "add", "softmax"])
def test_a_workload_runs_at_other_dims_as_one_made_at_them(runtime: Runtime, backend: str, layer: str) -> None:
    factory = runtime.backend(backend).create_workload_factory()
    workload = factory.create_workload(spec_of(runtime, backend, layer, 1, 5))
    assert workload.shapes_at_execute
    for batch, size in ((1, 5), (3, 5), (2, 17), (1, 1), (4, 9), (1, 5)):  # back and forth, larger and smaller
        inputs, out_shape = operands(layer, batch, size)
        got = np.full(out_shape, np.nan, np.float32)
        workload.execute(inputs, [got])
        np.testing.assert_array_equal(got, made_at(runtime, backend, factory, layer, batch, size),
                                      err_msg=f"{backend} {layer} at batch {batch}, size {size}")
    workload.close()
    factory.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_scratch_beyond_the_first_workspace_is_the_workloads_own(runtime: Runtime, backend: str) -> None:
    factory = runtime.backend(backend).create_workload_factory()
    small = factory.create_workload(spec_of(runtime, backend, "conv", 1, 2))
    large = factory.create_workload(spec_of(runtime, backend, "conv", 2, 40))
    assert small.workspace_bytes <= large.workspace_bytes
    inputs, out_shape = operands("conv", 2, 40)
    got, want = np.empty(out_shape, np.float32), np.empty(out_shape, np.float32)
    small.execute(inputs, [got], bytearray(max(small.workspace_bytes, 1)))  # the runtime passes the first size
    large.execute(inputs, [want])
    np.testing.assert_array_equal(got, want)
    for w in (small, large, factory):
        w.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_other_ranks_types_constants_or_shapes_are_refused_and_the_workload_goes_on(runtime: Runtime,
                                                                                   backend: str) -> None:
    factory = runtime.backend(backend).create_workload_factory()
    workload = factory.create_workload(spec_of(runtime, backend, "conv", 1, 5))
    inputs, out_shape = operands("conv", 2, 6)
    out = np.empty(out_shape, np.float32)
    x, w, b = inputs
    with pytest.raises(BackendError, match=r"PN_ERR_INVALID_ARGUMENT.*layer 'conv': execute\(\) input 0 is float32 of "
                                           r"rank 3, the layer's float32 of rank 4 \(only dims may change"):
        workload.execute([x[0], w, b], [out[0]])
    with pytest.raises(BackendError, match=r"PN_ERR_INVALID_ARGUMENT.*input 0 is float64 of rank 4, the layer's float32"):
        workload.execute([x.astype(np.float64), w, b], [out])
    with pytest.raises(BackendError, match=r"PN_ERR_INVALID_ARGUMENT.*gives input 1, whose dims are fixed \(a constant"):
        workload.execute([x, np.ascontiguousarray(w[:4]), b], [np.empty((2, 4, 6, 6), np.float32)])
    with pytest.raises(BackendError, match="PN_ERR_INVALID_ARGUMENT"):  # an output that does not follow the input
        workload.execute([x, w, b], [np.empty((2, 6, 5, 5), np.float32)])
    got = np.empty(out_shape, np.float32)
    workload.execute(inputs, [got])  # still runs, at new dims as at old
    np.testing.assert_array_equal(got, made_at(runtime, backend, factory, "conv", 2, 6))
    workload.close()
    factory.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reshaped_workload_takes_shapes_at_execute_too(runtime: Runtime, backend: str) -> None:
    factory = runtime.backend(backend).create_workload_factory()
    source = factory.create_workload(spec_of(runtime, backend, "conv", 1, 5))
    reshaped = source.reshape(spec_of(runtime, backend, "conv", 3, 7))
    assert reshaped is not None and reshaped.shapes_at_execute
    source.close()  # the reshaped one outlives its source (prepacked weights shared)
    inputs, out_shape = operands("conv", 2, 11)
    got = np.empty(out_shape, np.float32)
    reshaped.execute(inputs, [got])
    np.testing.assert_array_equal(got, made_at(runtime, backend, factory, "conv", 2, 11))
    reshaped.close()
    factory.close()


def test_a_fused_or_data_dependent_layer_keeps_its_dims(runtime: Runtime) -> None:
    """PRECOMPILED payloads and data-dependent layers are made for their dims: no flag."""
    net = Network("fused")
    x = net.add_input("x", (1, 3, 6, 6))
    y = net.add_convolution2d(x, net.add_shared_constant(W, "w"), net.add_shared_constant(B, "b"), padding=1,
                              name="conv")
    net.add_output(net.add_activation(y, "relu", name="relu"), "y")
    optimized = optimize(net, runtime, ["CpuAcc"])
    with runtime.load_network(optimized) as loaded:
        flags = {n.name: loaded._node_workloads[n.name].shapes_at_execute  # noqa: SLF001
                 for n in optimized.layers}
    fused = [n.name for n in optimized.layers if n.kind.name == "PRECOMPILED"]
    assert all(not flags[name] for name in fused)
    assert all(flags[n.name] for n in optimized.layers if n.kind.name != "PRECOMPILED")
