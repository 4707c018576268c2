"""A correct backend isolated gives the bits it gives in-process: CpuRef (and CpuAcc, whose
PRECOMPILED payloads stay in the worker) on small networks and zoo models, mixed with in-process
backends, through InferenceSession's specializations; tensors between layers are shared, not
copied, and weights cross once."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import plugnn
from plugnn import Network, Runtime, optimize
from plugnn.isolation.shared_memory import locate
from isolation_nets import mlp

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

RNG = np.random.default_rng(21)


@pytest.fixture(scope="module")
def runtimes() -> tuple[Runtime, Runtime]:
    """(in-process, isolated): CpuRef and CpuAcc on one thread each, in both."""
    options = {"CpuAcc": {"num_threads": "1"}}
    with Runtime(backend_options=options) as plain, \
            Runtime(backend_options=options, isolate={"CpuRef": "process", "CpuAcc": "process"}) as isolated:
        yield plain, isolated


def conv_net() -> Network:
    rng = np.random.default_rng(8)
    net = Network("conv")
    x = net.add_input("x", (1, 3, 12, 12))
    a = net.add_convolution2d(x, rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
                              rng.standard_normal(8).astype(np.float32), padding=1, name="conv_a")
    a = net.add_activation(a, "relu", name="relu_a")
    b = net.add_convolution2d(a, rng.standard_normal((8, 8, 1, 1)).astype(np.float32), name="conv_b")
    c = net.add_concat([a, b], axis=1, name="cat")
    s1, s2 = net.add_split(c, [4, 12], axis=1, name="split")
    net.add_output(net.add_global_pooling2d(s2, name="pool"), "pooled")
    net.add_output(s1, "first")
    return net


def both(runtimes: tuple[Runtime, Runtime], network: Network, backends: list[str],
         overrides: dict[str, str] | None = None) -> tuple[plugnn.LoadedNetwork, plugnn.LoadedNetwork]:
    plain, isolated = runtimes
    return (plain.load_network(optimize(network, plain, backends, overrides)),
            isolated.load_network(optimize(network, isolated, backends, overrides)))


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("backends", [["CpuRef"], ["CpuAcc"]])
@pytest.mark.parametrize("make", [mlp, conv_net], ids=["mlp", "conv"])
def test_bit_identical_to_in_process(runtimes: tuple[Runtime, Runtime], backends: list[str], make) -> None:  # type: ignore[no-untyped-def]
    here, there = both(runtimes, make(), backends)
    for _ in range(3):
        feeds = {name: RNG.standard_normal(info.shape).astype(np.float32) for name, info in here.input_infos.items()}
        assert_same(here.run(feeds), there.run(feeds))
    out = {name: np.empty(info.shape, np.float32) for name, info in there.output_infos.items()}
    result = there.run(feeds, out)
    assert all(result[name] is out[name] for name in out)
    assert_same(here.run(feeds), out)
    assert_same(here.run(feeds), there.run(feeds, profile=True))
    assert [p["layer"] for p in there.last_profile] == [s.name for s in there._steps]


def test_an_output_that_a_later_layer_reads(runtimes: tuple[Runtime, Runtime]) -> None:
    net = Network("two_outputs")
    x = net.add_input("x", (2, 8))
    h = net.add_activation(x, "relu", name="relu")
    net.add_output(h, "hidden")  # a graph output (the caller's array: staged)...
    net.add_output(net.add_softmax(h, name="softmax"), "y")  # ...read by the next isolated layer
    here, there = both(runtimes, net, ["CpuRef"])
    for _ in range(2):
        x_in = RNG.standard_normal((2, 8)).astype(np.float32)
        assert_same(here.run({"x": x_in}), there.run({"x": x_in}))


def test_mixed_with_an_in_process_backend(runtimes: tuple[Runtime, Runtime]) -> None:
    """CpuAcc in-process and CpuRef isolated in one network: the arena is shared memory, so
    neither side copies what the other wrote."""
    plain, _ = runtimes
    with Runtime(backend_options={"CpuAcc": {"num_threads": "1"}}, isolate={"CpuRef": "process"}) as isolated:
        overrides = {"relu_a": "CpuRef", "cat": "CpuRef", "pool": "CpuRef"}
        here = plain.load_network(optimize(conv_net(), plain, ["CpuAcc", "CpuRef"], overrides))
        there = isolated.load_network(optimize(conv_net(), isolated, ["CpuAcc", "CpuRef"], overrides))
        assert {n.backend_id for n in there._graph.nodes} == {"CpuAcc", "CpuRef"}
        feeds = {"x": RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)}
        assert_same(here.run(feeds), there.run(feeds))
        assert locate(there._arena) is not None  # the arena both processes map


def test_only_network_inputs_and_outputs_are_staged_and_weights_cross_once(
        runtimes: tuple[Runtime, Runtime]) -> None:
    _, isolated = runtimes
    backend = isolated.backend("CpuRef")
    optimized = optimize(conv_net(), isolated, ["CpuRef"])
    first = isolated.load_network(optimized)
    copies = len(backend._constants)
    second = isolated.load_network(optimized)  # the same weights: no new copies
    assert len(backend._constants) == copies > 0
    graph = first._graph
    externals = set(graph.inputs.values()) | set(graph.outputs.values())
    for node, step in zip(graph.nodes, first._steps):
        if node.backend_id != "CpuRef":
            continue
        for key, slot in zip(node.inputs + node.outputs, step.call._in + step.call._out):
            assert (slot.staging is not None) == (key in externals), (node.name, key)
    feeds = {"x": RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)}
    assert_same(first.run(feeds), second.run(feeds))


def test_two_threads_on_two_networks(runtimes: tuple[Runtime, Runtime]) -> None:
    here, there = both(runtimes, mlp(), ["CpuRef"])
    _, other = both(runtimes, conv_net(), ["CpuRef"])
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    image = RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)
    expected, expected_other = here.run({"x": x}), other.run({"x": image})
    failures: list[str] = []

    def loop(net: plugnn.LoadedNetwork, feeds: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
        for _ in range(20):
            got = net.run(feeds)
            if any(not np.array_equal(got[k], want[k]) for k in want):
                failures.append(net.name)

    threads = [threading.Thread(target=loop, args=(there, {"x": x}, expected)),
               threading.Thread(target=loop, args=(other, {"x": image}, expected_other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


onnx = pytest.importorskip("onnx")


@pytest.mark.parametrize("model, backends", [("resnet18", ["CpuAcc"]), ("yolo_tiny", ["CpuRef"])])
def test_zoo_models(runtimes: tuple[Runtime, Runtime], model: str, backends: list[str]) -> None:
    import plugnn.onnx
    from zoo import weights

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == model)
    filled = weights.materialize(weights.model_path(entry), seed=0)
    network = plugnn.onnx.load(filled, input_shapes=weights.input_shapes(entry, "ci", 1))
    descriptors = len(os.listdir("/proc/self/fd"))
    here, there = both(runtimes, network, backends)
    # a few shared segments per model (pooled constants and staging, the arena, the workspace),
    # not one per weight array
    assert len(os.listdir("/proc/self/fd")) - descriptors <= 8
    feeds = weights.make_inputs(entry, "ci", 1, seed=0)
    assert_same(here.run(feeds), there.run(feeds))
    if backends == ["CpuAcc"]:  # its PRECOMPILED layers (chains on AVX-512): the payloads stayed in the worker
        from plugnn.isolation.proxy import RemotePayload

        payloads = [n.descriptor.payload for n in there._graph.nodes if n.kind.name == "PRECOMPILED"]
        assert all(isinstance(p, RemotePayload) for p in payloads)
        assert len(payloads) == sum(n.kind.name == "PRECOMPILED" for n in here._graph.nodes)  # fused alike


def test_inference_session_specializations(runtimes: tuple[Runtime, Runtime]) -> None:
    """New input shapes: the session loads specializations re-sizing the isolated workloads."""
    from plugnn.session import InferenceSession
    from zoo import weights

    plain, isolated = runtimes
    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == "bert_tiny")
    filled = weights.materialize(weights.model_path(entry), seed=0).SerializeToString()
    here = InferenceSession(filled, backends=["CpuRef"], runtime=plain)
    there = InferenceSession(filled, backends=["CpuRef"], runtime=isolated)
    for sequence in (8, 16, 8):
        feeds = {"input_ids": RNG.integers(0, 1000, (1, sequence)), "attention_mask": np.ones((1, sequence), np.int64),
                 "token_type_ids": np.zeros((1, sequence), np.int64)}
        for a, b in zip(here.run(None, feeds), there.run(None, feeds)):
            np.testing.assert_array_equal(a, b)


def test_arrays_in_shared_memory_are_passed_in_place(runtimes: tuple[Runtime, Runtime]) -> None:
    from plugnn.isolation.proxy import shared_array

    here, there = both(runtimes, mlp(), ["CpuRef"])
    x = shared_array((4, 16), np.float32)
    x[...] = RNG.standard_normal((4, 16))
    y = shared_array((4, 32), np.float32)
    there.run({"x": x}, {"y": y})
    np.testing.assert_array_equal(y, here.run({"x": np.array(x)})["y"])
    first = next(s.call for n, s in zip(there._graph.nodes, there._steps) if "x" in [k for k in n.inputs])
    assert first._in[0].item is x and first._in[0].staging is None  # bound in place, not staged


def test_a_data_dependent_layer_reports_its_shapes_across(runtimes: tuple[Runtime, Runtime]) -> None:
    net = Network("nonzero")
    x = net.add_input("x", (3, 5))
    relu = net.add_activation(x, "relu", name="relu")
    (y,) = net.add_data_dependent("non_zero", [relu], name="nonzero")
    net.add_output(y, "y")
    here, there = both(runtimes, net, ["CpuRef"])
    for _ in range(3):
        feeds = {"x": RNG.standard_normal((3, 5)).astype(np.float32)}
        a, b = here.run(feeds)["y"], there.run(feeds)["y"]
        assert a.shape == b.shape and a.shape[1] == int((feeds["x"] > 0).sum())
        np.testing.assert_array_equal(a, b)
