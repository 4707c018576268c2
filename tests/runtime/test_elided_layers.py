"""Layers the runtime does not call (python/plugnn/movement_views.py, `LoadedNetwork.elided_layers`):
a Reshape between two intermediate host-memory tensors is planned as the same bytes as its
input, and a Gather of one constant index along an axis with only 1s before it as its block of
the data, on every backend; the results are those of NumPy, bit for bit where nothing else
computes. A Reshape of a graph input or to a graph output still runs, as does a Gather that is
no aligned block; a Reshape into a Concat's input or out of a Split's output rides on those
views."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendRegistry, Network
from plugnn.backend import Backend, MemoryManager, Workload, WorkloadFactory
from plugnn.descriptors import LayerKind
from plugnn.layers import LayerSpec, SupportResult

from pybackends import PyDevice

RNG = np.random.default_rng(2711)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def native_backends() -> list[str]:
    with plugnn.Runtime() as rt:
        return [b for b in ("CpuRef", "CpuAcc") if b in rt.backend_ids]


def load_and_run(net: Network, feeds: dict[str, np.ndarray], backends: Sequence[str], runtime: Any = None,
                 overrides: dict[str, str] | None = None) -> tuple[dict[str, np.ndarray], list[str], int]:
    """(outputs of two runs, checked equal; the elided layers; how many tensors are views)."""
    own = runtime is None
    rt = plugnn.Runtime() if own else runtime
    try:
        optimized = plugnn.optimize(net, rt, list(backends), overrides=overrides or {})
        with rt.load_network(optimized) as loaded:
            first = loaded.run(feeds)
            second = loaded.run(feeds, profile=True)
            for k in first:
                np.testing.assert_array_equal(first[k], second[k])
            assert [p["layer"] for p in loaded.last_profile] == [s.name for s in loaded._steps]
            return first, list(loaded.elided_layers), len(loaded.movement_views)
    finally:
        if own:
            rt.close()


@pytest.mark.parametrize("backend", native_backends())
def test_reshape_between_layers_is_not_called(backend: str) -> None:
    net = Network("flat")
    a = net.add_activation(net.add_input("x", (2, 3, 4, 5)), "relu", name="a")
    r1 = net.add_reshape(a, (2, 60), name="r1")
    r2 = net.add_reshape(r1, (6, 20), name="r2")  # a chain of two: both are a's bytes
    net.add_output(net.add_activation(r2, "abs", name="b"), "y")
    x = rand(2, 3, 4, 5)
    out, elided, views = load_and_run(net, {"x": x}, [backend])
    assert sorted(elided) == ["r1", "r2"] and views == 2
    np.testing.assert_array_equal(out["y"], np.abs(np.maximum(x, 0)).reshape(6, 20))


@pytest.mark.parametrize("backend", native_backends())
def test_reshape_of_a_graph_input_or_to_a_graph_output_runs(backend: str) -> None:
    net = Network("edges")
    x_in = net.add_input("x", (4, 6))
    r_in = net.add_reshape(x_in, (24,), name="of_input")
    a = net.add_activation(r_in, "relu", name="a")
    net.add_output(net.add_reshape(a, (2, 12), name="to_output"), "y")
    net.add_output(a, "a_out")
    x = rand(4, 6)
    out, elided, _ = load_and_run(net, {"x": x}, [backend])
    assert elided == []
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0).reshape(2, 12))
    np.testing.assert_array_equal(out["a_out"], np.maximum(x, 0).reshape(24))


@pytest.mark.parametrize("backend", native_backends())
def test_a_reshaped_tensor_read_by_several_layers(backend: str) -> None:
    """The reshape's input is read again after the reshape's readers: both stay intact."""
    net = Network("fan")
    a = net.add_activation(net.add_input("x", (1, 8, 4)), "relu", name="a")
    r = net.add_reshape(a, (1, 32), name="r")
    s = net.add_activation(r, "sigmoid", name="s")
    t = net.add_activation(a, "tanh", name="t")
    net.add_output(s, "s_out")
    net.add_output(t, "t_out")
    x = rand(1, 8, 4)
    out, elided, _ = load_and_run(net, {"x": x}, [backend])
    assert elided == ["r"]
    relu = np.maximum(x, 0).astype(np.float64)
    np.testing.assert_allclose(out["s_out"], (1 / (1 + np.exp(-relu))).reshape(1, 32), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out["t_out"], np.tanh(relu), rtol=1e-6, atol=1e-7)


@pytest.mark.skipif("CpuAcc" not in native_backends(), reason="CpuAcc is not built")
def test_reshape_into_a_concat_and_out_of_a_split() -> None:
    """On CpuAcc (moves in place): the Reshape's input is written straight into the Concat's
    output, and a Split's piece is reshaped where it lies; the same as with every movement on
    CpuRef (which copies), bit for bit."""
    net = Network("mixed")
    x = net.add_input("x", (1, 16, 4, 4))
    a = net.add_activation(x, "relu", name="a")
    flat = net.add_reshape(net.add_activation(x, "abs", name="b"), (1, 16, 16), name="to_rows")
    rows = net.add_reshape(a, (1, 16, 16), name="a_rows")
    cat = net.add_concat([rows, flat], axis=1, name="cat")
    first, second = net.add_split(net.add_activation(cat, "tanh", name="t"), [16, 16], axis=1, name="halves")
    back = net.add_reshape(second, (1, 16, 4, 4), name="back")
    net.add_output(net.add_add(net.add_activation(back, "sigmoid", name="s"),
                               net.add_reshape(first, (1, 16, 4, 4), name="back1"), name="sum"), "y")
    feeds = {"x": rand(1, 16, 4, 4)}
    movers = {"cat": "CpuRef", "halves": "CpuRef"}
    ours, elided, views = load_and_run(net, feeds, ["CpuAcc", "CpuRef"])
    copied, _, _ = load_and_run(net, feeds, ["CpuAcc", "CpuRef"], overrides=movers)
    assert sorted(elided) == ["a_rows", "back", "back1", "to_rows"]
    # a, its rows, b and its rows inside cat; the halves inside t; back and back1 inside the halves
    assert views == 8
    np.testing.assert_array_equal(ours["y"], copied["y"])
    v = np.concatenate([np.maximum(feeds["x"], 0), np.abs(feeds["x"])], axis=1).astype(np.float64)
    t = np.tanh(v)
    want = 1 / (1 + np.exp(-t[:, 16:])) + t[:, :16]
    np.testing.assert_allclose(ours["y"], want, rtol=1e-5, atol=1e-6)


# ---- a Python backend that counts its Reshape calls -------------------------------------------------


class CountingReshape(Workload):
    def __init__(self, calls: list[str], name: str) -> None:
        self.calls, self.name = calls, name

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        self.calls.append(self.name)
        outputs[0][...] = inputs[0].reshape(outputs[0].shape)


class CountingFactory(WorkloadFactory):
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def create_workload(self, layer: LayerSpec) -> Workload:
        return CountingReshape(self.calls, layer.name)


class PyReshape(Backend):
    """Runs Reshape only, in host memory, logging every call."""

    calls: list[str] = []

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if layer.kind is not LayerKind.RESHAPE:
            return SupportResult(False, f"{self.backend_id} runs Reshape only")
        return SupportResult(True)

    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> WorkloadFactory:
        return CountingFactory(PyReshape.calls)


@pytest.fixture
def py_runtime(no_static_backends: None) -> Iterator[plugnn.Runtime]:
    BackendRegistry.register("PyReshape", PyReshape)
    BackendRegistry.register("PyDevice", PyDevice)
    PyReshape.calls.clear()
    with plugnn.Runtime() as rt:
        yield rt


def test_an_elided_reshape_is_never_executed_but_profiled(py_runtime: plugnn.Runtime) -> None:
    net = Network("py")
    a = net.add_activation(net.add_input("x", (3, 4)), "relu", name="a")
    r = net.add_reshape(a, (12,), name="r")
    net.add_output(net.add_activation(r, "abs", name="b"), "y")
    x = rand(3, 4)
    out, elided, _ = load_and_run(net, {"x": x}, ["PyReshape", "CpuRef"], runtime=py_runtime)
    assert elided == ["r"] and PyReshape.calls == []
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0).reshape(12))


def test_a_reshape_after_a_device_layer_reads_the_host_copy(py_runtime: plugnn.Runtime) -> None:
    """A softmax on a device backend, then a Reshape on a host backend: the runtime copies the
    softmax's output to the host, and the Reshape is that copy's bytes (never the device
    tensor's)."""
    net = Network("device")
    s = net.add_softmax(net.add_input("x", (2, 5)), axis=1, name="s")
    net.add_output(net.add_activation(net.add_reshape(s, (10,), name="r"), "abs", name="b"), "y")
    x = rand(2, 5)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    out, elided, views = load_and_run(net, {"x": x}, ["PyDevice", "PyReshape", "CpuRef"], runtime=py_runtime)
    assert elided == ["r"] and views == 1 and PyReshape.calls == []
    np.testing.assert_allclose(out["y"], (e / e.sum(axis=1, keepdims=True)).reshape(10), rtol=1e-6)


# ---- Gather of one constant index ---------------------------------------------------------------------


def gather_net(shape: tuple[int, ...], axis: int, index: object, export: bool = False) -> Network:
    """x -> relu -> gather(constant index along axis) -> abs -> y (and the gather's output as "g")."""
    net = Network("take")
    a = net.add_activation(net.add_input("x", shape), "relu", name="a")
    g = net.add_gather(a, np.asarray(index, np.int64), axis=axis, name="take")
    net.add_output(net.add_activation(g, "abs", name="b"), "y")
    if export:
        net.add_output(g, "g")
    return net


@pytest.mark.parametrize("backend", native_backends())
@pytest.mark.parametrize("shape, axis, index, elide", [
    ((3, 4, 8), 0, 1, True),            # q, k, v out of one tensor: a block of 128 bytes
    ((3, 4, 8), 0, -1, True),           # counted from the end
    ((3, 4, 8), 0, [2], True),          # a one-element index keeps the axis
    ((1, 3, 16), 1, 2, True),           # only 1s before the axis
    ((2, 3, 16), 1, 2, False),          # a 2 before the axis: not one block
    ((3, 4, 8), 1, 1, False),           # likewise
    ((3, 4, 8), 0, [0, 2], False),      # two indices
    ((3, 5), 0, 1, False),              # a block at byte 20: not aligned
    ((3, 5), 0, 0, True),               # ... but the first one is
], ids=["axis0", "negative", "one-element", "leading-1s", "not-a-block", "inner-axis", "two-indices",
        "unaligned", "aligned-first"])
def test_gather_of_one_constant_index_is_a_view(backend: str, shape: tuple[int, ...], axis: int, index: object,
                                                elide: bool) -> None:
    x = rand(*shape)
    out, elided, _ = load_and_run(gather_net(shape, axis, index), {"x": x}, [backend])
    assert elided == (["take"] if elide else [])
    np.testing.assert_array_equal(out["y"], np.take(np.maximum(x, 0), np.asarray(index), axis=axis))


@pytest.mark.parametrize("backend", native_backends())
def test_gather_to_a_graph_output_or_by_runtime_indices_runs(backend: str) -> None:
    x = rand(3, 4, 8)
    out, elided, _ = load_and_run(gather_net((3, 4, 8), 0, 1, export=True), {"x": x}, [backend])
    assert elided == []
    np.testing.assert_array_equal(out["g"], np.maximum(x, 0)[1])
    net = Network("runtime_index")
    a = net.add_activation(net.add_input("x", (3, 4, 8)), "relu", name="a")
    g = net.add_gather(a, net.add_input("i", (), "int64"), axis=0, name="take")
    net.add_output(net.add_activation(g, "abs", name="b"), "y")
    out2, elided2, _ = load_and_run(net, {"x": x, "i": np.array(2, np.int64)}, [backend])
    assert elided2 == []
    np.testing.assert_array_equal(out2["y"], np.maximum(x, 0)[2])


@pytest.mark.parametrize("backend", native_backends())
def test_gather_views_beside_each_other_and_their_data_read_again(backend: str) -> None:
    """Swin's q, k, v: three Gathers of one tensor, all views, and the tensor itself read later."""
    net = Network("qkv")
    qkv = net.add_activation(net.add_input("x", (3, 2, 16)), "relu", name="qkv")
    parts = [net.add_gather(qkv, np.int64(i), axis=0, name=f"take{i}") for i in range(3)]
    s = net.add_add(net.add_mul(parts[0], parts[1], name="qk"), parts[2], name="qkv_sum")
    net.add_output(net.add_activation(s, "abs", name="y_abs"), "y")
    net.add_output(net.add_activation(qkv, "tanh", name="tanh"), "t")
    x = rand(3, 2, 16)
    out, elided, _ = load_and_run(net, {"x": x}, [backend])
    assert elided == ["take0", "take1", "take2"]
    r = np.maximum(x, 0)
    np.testing.assert_array_equal(out["y"], np.abs(r[0] * r[1] + r[2]))
    np.testing.assert_allclose(out["t"], np.tanh(r.astype(np.float64)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", native_backends())
def test_gather_of_an_out_of_range_constant_index_runs_and_fails_naming_the_layer(backend: str) -> None:
    with pytest.raises(plugnn.BackendError, match=r"execute\(layer 'take'\).*index 5.*out of range"):
        load_and_run(gather_net((3, 4, 8), 0, 5), {"x": rand(3, 4, 8)}, [backend])
