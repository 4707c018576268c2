"""CpuAcc's pn_workload.reshape and its shared prepacked weights (plugins/accel/src/ops/shared_weights.h).

A network loaded again at other shapes with reshape_from re-sizes the workloads of the
weight-heavy layers (convolutions on the GEMM and blocked paths, NHWC, grouped; fully connected;
MatMul with a constant b; blocked chains), and the new workloads share the prepacked weights:
the backend's read-only option packed_weight_bytes stays the same. Each reshaped network must
compute what a network loaded without reshape_from computes (the same kernels, so the same
bits, except where a convolution kept its source's GEMM orientation: then within float32
rounding), also after its source was unloaded, on every kernel set. reshape refuses a layer
that is not the workload's layer at other shapes.

Tolerance against NumPy float64: max|a - b| <= 1e-4 * max(1, max|b|)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, Network
from plugnn.descriptors import LayerKind

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
RNG = np.random.default_rng(2117)


def frozen(*shape: int) -> np.ndarray:
    a = RNG.standard_normal(shape).astype(np.float32)
    a.setflags(write=False)
    return a


W_CONV = frozen(24, 8, 3, 3)
W_GROUPED = frozen(24, 4, 3, 3)
W_DENSE = frozen(32, 32, 3, 3)
B_CONV = frozen(32)
B_24 = frozen(24)
W_FC = frozen(48, 20)
W_MM = frozen(20, 36)
W_CHAIN1 = frozen(32, 16, 3, 3)
W_CHAIN2 = frozen(32, 32, 3, 3)


def conv_nchw(batch: int, size: int) -> Network:
    net = Network("conv_nchw")
    x = net.add_input("x", (batch, 8, size, size))
    y = net.add_convolution2d(x, net.add_shared_constant(W_CONV, "w"), net.add_shared_constant(B_24, "b"),
                              padding=1, name="conv")
    net.add_output(net.add_activation(y, "relu", name="relu"), "y")
    return net


def conv_grouped(batch: int, size: int) -> Network:
    net = Network("conv_grouped")
    x = net.add_input("x", (batch, 8, size, size))
    net.add_output(net.add_convolution2d(x, net.add_shared_constant(W_GROUPED, "w"), stride=2, padding=1,
                                         groups=2, name="conv"), "y")
    return net


def conv_nhwc(batch: int, size: int) -> Network:
    net = Network("conv_nhwc")
    x = net.add_input("x", (batch, size, size, 8))
    net.add_output(net.add_convolution2d(x, net.add_shared_constant(W_CONV, "w"), padding=1, layout="NHWC",
                                         name="conv"), "y")
    return net


def conv_dense(batch: int, size: int) -> Network:
    """32 -> 32 3x3: the direct blocked kernel on AVX-512 (a lone convolution, no chain)."""
    net = Network("conv_dense")
    x = net.add_input("x", (batch, 32, size, size))
    net.add_output(net.add_convolution2d(x, net.add_shared_constant(W_DENSE, "w"),
                                         net.add_shared_constant(B_CONV, "b"), padding=1, name="conv"), "y")
    return net


def chain(batch: int, size: int) -> Network:
    """Two convolutions joined into a blocked chain on AVX-512."""
    net = Network("chain")
    x = net.add_input("x", (batch, 16, size, size))
    y = net.add_convolution2d(x, net.add_shared_constant(W_CHAIN1, "w1"), net.add_shared_constant(B_CONV, "b1"),
                              padding=1, name="conv1")
    y = net.add_activation(y, "relu", name="relu1")
    y = net.add_convolution2d(y, net.add_shared_constant(W_CHAIN2, "w2"), padding=1, name="conv2")
    net.add_output(net.add_activation(y, "relu", name="relu2"), "y")
    return net


def fully_connected(batch: int, _size: int) -> Network:
    net = Network("fc")
    x = net.add_input("x", (batch, 20))
    net.add_output(net.add_fully_connected(x, net.add_shared_constant(W_FC, "w"), transpose_b=True, name="fc"), "y")
    return net


def matmul(batch: int, size: int) -> Network:
    net = Network("matmul")
    x = net.add_input("x", (batch, size, 20))
    net.add_output(net.add_matmul(x, net.add_shared_constant(W_MM, "w"), name="mm"), "y")
    return net


def conv_ref(x: np.ndarray, w: np.ndarray, stride: int = 1, pad: int = 1, groups: int = 1) -> np.ndarray:
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    og = o // groups
    y = np.zeros((n, o, oh, ow))
    for g in range(groups):
        for ky in range(kh):
            for kx in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, ky, kx])
    return y


def reference(name: str, x: np.ndarray) -> np.ndarray:
    if name == "conv_nchw":
        return np.maximum(conv_ref(x, W_CONV) + B_24[:, None, None], 0)
    if name == "conv_grouped":
        return conv_ref(x, W_GROUPED, stride=2, groups=2)
    if name == "conv_nhwc":
        return conv_ref(x.transpose(0, 3, 1, 2), W_CONV).transpose(0, 2, 3, 1)
    if name == "conv_dense":
        return conv_ref(x, W_DENSE) + B_CONV[:, None, None]
    if name == "chain":
        y = np.maximum(conv_ref(x, W_CHAIN1) + B_CONV[:, None, None], 0)
        return np.maximum(conv_ref(y, W_CHAIN2), 0)
    if name == "fc":
        return x.astype(np.float64) @ W_FC.T.astype(np.float64)
    return x.astype(np.float64) @ W_MM.astype(np.float64)


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max()))
    assert float(np.abs(actual.astype(np.float64) - expected).max()) <= 1e-4 * scale


def packed_bytes(rt: plugnn.Runtime) -> int:
    return int(rt.backend("CpuAcc").get_option("packed_weight_bytes"))


def cpuacc_layers(loaded: plugnn.LoadedNetwork, optimized: plugnn.OptimizedNetwork) -> list[str]:
    return [n.name for n in optimized.layers if n.backend_id == "CpuAcc"]


MAKERS: dict[str, Callable[[int, int], Network]] = {
    "conv_nchw": conv_nchw, "conv_grouped": conv_grouped, "conv_nhwc": conv_nhwc, "conv_dense": conv_dense,
    "chain": chain, "fc": fully_connected, "matmul": matmul}


def feed(name: str, batch: int, size: int) -> dict[str, np.ndarray]:
    shape = {"conv_nhwc": (batch, size, size, 8), "conv_dense": (batch, 32, size, size),
             "chain": (batch, 16, size, size), "fc": (batch, 20), "matmul": (batch, size, 20)}.get(
                 name, (batch, 8, size, size))
    return {"x": RNG.standard_normal(shape).astype(np.float32)}


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_reshaped_workloads_share_the_packed_weights(name: str, isa: str) -> None:
    make = MAKERS[name]
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2, "isa": isa}}) as rt:
        assert packed_bytes(rt) == 0
        first_opt = plugnn.optimize(make(1, 9), rt, ["CpuAcc"])
        first = rt.load_network(first_opt)
        packed = packed_bytes(rt)
        assert packed > 0
        # another batch, then other spatial sizes too: one packed copy for all of them
        second_opt = plugnn.optimize(make(3, 9), rt, ["CpuAcc"])
        second = rt.load_network(second_opt, reshape_from=[first])
        third_opt = plugnn.optimize(make(2, 14), rt, ["CpuAcc"])
        third = rt.load_network(third_opt, reshape_from=[second])
        heavy = [n.name for n in second_opt.layers if n.kind is not LayerKind.ACTIVATION]
        assert set(heavy) <= set(second.reshaped_layers), (heavy, second.reshaped_layers)
        assert set(heavy) <= set(third.reshaped_layers)
        assert packed_bytes(rt) == packed
        first.unload()
        second.unload()  # the reshaped workloads outlive their sources
        assert packed_bytes(rt) == packed
        x = feed(name, 2, 14)
        got = third.run(x)["y"].copy()
        assert_close(got, reference(name, next(iter(x.values()))))
        # a network loaded without reshape_from packs its own copy and computes the same
        fresh = rt.load_network(plugnn.optimize(make(2, 14), rt, ["CpuAcc"]))
        assert packed_bytes(rt) > packed
        expected = fresh.run(x)["y"]
        if name in ("conv_nchw", "conv_grouped"):
            assert_close(got, expected.astype(np.float64))  # it may keep its source's GEMM orientation
        else:
            np.testing.assert_array_equal(got, expected)
        fresh.unload()
        third.unload()
        assert packed_bytes(rt) == 0


def small_cnn_model() -> bytes:
    """An ONNX CNN with a symbolic batch: conv 16->32 + relu, conv 32->32 + relu (a blocked chain on
    AVX-512), global average pooling, flatten, Gemm 32->10."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.asarray(a), n) for a, n in
             ((W_CHAIN1, "w1"), (B_CONV, "b1"), (W_CHAIN2, "w2"), (W_FC[:10, :].repeat(2, axis=1)[:, :32].copy(),
                                                                    "wf"))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_a_session_packs_the_weights_once() -> None:
    """The four batch sizes' instances of one session's network share one packed copy of every
    weight; each computes what a session that saw only its shape computes."""
    model = small_cnn_model()
    with plugnn.InferenceSession(model, backend_options={"CpuAcc": {"num_threads": 2}}) as session:
        rt = session.runtime
        outputs = {}
        for batch in (1, 2, 4, 3):
            x = RNG.standard_normal((batch, 16, 8, 8)).astype(np.float32)
            outputs[batch] = (x, session.run(None, {"x": x})[0].copy())
            session.run(None, {"x": x})  # run twice: each batch keeps an instance of its own
            if batch == 1:
                packed = packed_bytes(rt)
                assert packed > 0
        assert packed_bytes(rt) == packed
        assert session.networks_built == 1
        for batch in (2, 4, 3):
            loaded = session.loaded_for({"x": (batch, 16, 8, 8)})
            heavy = {n.name for n in loaded.optimized.layers
                     if n.kind in (LayerKind.PRECOMPILED, LayerKind.CONVOLUTION_2D, LayerKind.FULLY_CONNECTED)}
            assert len(heavy) >= 2 and heavy <= set(loaded.reshaped_layers) | set(loaded.refused_layers)
            # the blocked chain (AVX-512), fused at batch 1, is fused again at this batch, then re-sized
            # from the old one: its packed weights are the first instance's (packed_bytes above)
            if BEST_ISA == "avx512":
                assert loaded.refused_layers
            assert set(loaded.refused_layers) <= set(loaded.reshaped_layers)
    for batch, (x, got) in outputs.items():
        with plugnn.InferenceSession(model, backend_options={"CpuAcc": {"num_threads": 2}}) as alone:
            np.testing.assert_array_equal(got, alone.run(None, {"x": x})[0])


def test_reshape_refuses_another_layer() -> None:
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 1}}) as rt:
        backend = rt.backend("CpuAcc")
        factory = backend.create_workload_factory()

        def spec(net: Network, layer: str) -> plugnn.LayerSpec:
            optimized = plugnn.optimize(net, rt, ["CpuAcc"])
            return optimized.graph.spec(next(n for n in optimized.layers if n.name == layer))

        source = factory.create_workload(spec(conv_dense(1, 9), "conv"))
        copied = Network("conv_dense")
        x = copied.add_input("x", (2, 32, 9, 9))
        other = W_DENSE.copy()
        other.setflags(write=False)
        copied.add_output(copied.add_convolution2d(x, copied.add_shared_constant(other, "w"),
                                                   copied.add_shared_constant(B_CONV, "b"), padding=1,
                                                   name="conv"), "y")
        with pytest.raises(BackendError, match=r"CpuAcc reshape\(layer 'conv'\): not the workload's layer at other "
                                               r"shapes: a constant input is not the buffer the workload was made with"):
            source.reshape(spec(copied, "conv"))
        padded = Network("conv_dense")
        x = padded.add_input("x", (2, 32, 9, 9))
        padded.add_output(padded.add_convolution2d(x, padded.add_shared_constant(W_DENSE, "w"),
                                                   padded.add_shared_constant(B_CONV, "b"), padding=0,
                                                   name="conv"), "y")
        with pytest.raises(BackendError, match="its descriptor differs"):
            source.reshape(spec(padded, "conv"))
        with pytest.raises(BackendError, match="its kind or number of inputs or outputs differs"):
            source.reshape(spec(fully_connected(2, 0), "fc"))
        reshaped = source.reshape(spec(conv_dense(2, 5), "conv"))
        assert reshaped is not None
        source.close()
        x2 = RNG.standard_normal((2, 32, 5, 5)).astype(np.float32)
        out = np.empty((2, 32, 5, 5), np.float32)
        reshaped.execute([x2, W_DENSE, B_CONV], [out])
        assert_close(out, conv_ref(x2, W_DENSE) + B_CONV[:, None, None])
        reshaped.close()
        factory.close()
        assert packed_bytes(rt) == 0


def test_packed_weight_bytes_is_read_only() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        with pytest.raises(plugnn.PlugnnError, match="packed_weight_bytes is read-only"):
            backend.set_option("packed_weight_bytes", "0")
        assert backend.get_option("packed_weight_bytes") == "0"
