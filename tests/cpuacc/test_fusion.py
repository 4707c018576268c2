"""CpuAcc's optimize_subgraph: which layers it fuses (conv/fc + residual add + activation,
binary + activation), which it must leave alone, its option fuse, what explain() says, and
that fused networks compute what the unfused ones and CpuRef compute.

Tolerance: fused and unfused CpuAcc, and CpuRef, agree to max|a - b| <= 1e-4 * max(1, max|b|)
(float32 convolutions summed in different orders); fused and unfused CpuAcc differ only in
where the addend and activation are applied, so the same check holds with room to spare."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, Network
from plugnn.descriptors import (ActivationDescriptor, ActivationKind, Convolution2dDescriptor,
                                ConvolutionDescriptor, ConvolutionOp, ElementwiseBinaryDescriptor, LayerKind)
from plugnn.layers import LayerSpec, Subgraph
from plugnn.tensor import DataType, TensorInfo

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER, THREADS

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
TOLERANCE = 1e-4
RNG = np.random.default_rng(5)


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def runtime(fuse: bool = True, num_threads: int = 2, isa: str = "auto") -> plugnn.Runtime:
    """CpuAcc fusing (or not) with its blocked chains off: these tests are about fusion alone
    (tests/cpuacc/test_chains.py covers the chains)."""
    return plugnn.Runtime(backend_options={"CpuAcc": {"fuse": "1" if fuse else "0", "num_threads": num_threads,
                                                      "isa": isa, "blocked_chains": "0"}})


def plan(optimized: Any) -> list[tuple[str, str, str]]:
    """(layer, type, backend) of every layer that runs."""
    return [(r["layer"], r["type"], r["backend"]) for r in optimized.assignments()]


def node(optimized: Any, name: str) -> Any:
    return next(n for n in optimized.layers if n.name == name)


def run(network: Network, rt: plugnn.Runtime, backends: Sequence[str], inputs: Mapping[str, np.ndarray],
        overrides: Mapping[str, str] | None = None) -> tuple[Any, dict[str, np.ndarray]]:
    optimized = plugnn.optimize(network, rt, list(backends), overrides)
    with rt.load_network(optimized) as loaded:
        return optimized, loaded.run(dict(inputs))


def f32_activation(kind: str, alpha: float = 0.0, beta: float = 0.0) -> ActivationDescriptor:
    """The activation as it comes back from C (float32 alpha/beta)."""
    return ActivationDescriptor(kind, float(np.float32(alpha)), float(np.float32(beta)))


def assert_close(actual: np.ndarray, expected: np.ndarray, tol: float = TOLERANCE) -> None:
    assert actual.shape == expected.shape and actual.dtype == np.float32
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    err = float(np.max(np.abs(actual.astype(np.float64) - expected))) if expected.size else 0.0
    assert err <= tol * scale, f"max|diff| {err:g} > {tol:g} * {scale:g}"


def check_against_unfused_and_cpuref(network: Network, inputs: Mapping[str, np.ndarray],
                                     overrides: Mapping[str, str] | None = None) -> Any:
    """Runs `network` fused and unfused on CpuAcc and on CpuRef; returns the fused plan."""
    with runtime(fuse=True) as rt:
        fused, out = run(network, rt, ["CpuAcc", "CpuRef"], inputs, overrides)
        _, ref = run(network, rt, ["CpuRef"], inputs)
    with runtime(fuse=False) as rt:
        _, unfused = run(network, rt, ["CpuAcc", "CpuRef"], inputs, overrides)
    assert out.keys() == ref.keys() == unfused.keys()
    for name in out:
        assert_close(out[name], unfused[name])
        assert_close(out[name], ref[name].astype(np.float64))
    return fused


# ---- Networks built with the Python API --------------------------------------------------------


def conv_net(tail: str, *, shape: tuple[int, ...] = (2, 5, 9, 11), layout: str = "NCHW",
             addend_shape: tuple[int, ...] | None = None, act: tuple[str, float, float] = ("relu", 0.0, 0.0),
             conv_first: bool = True) -> Network:
    """x -> conv(3x3, stride 1, pad 1, 7 channels, bias) -> [add r] -> [activation] -> y.
    `tail` is "act", "add", "add+act" or "none"; r is the input "r" (output shape unless
    `addend_shape`); conv_first puts the conv output as the add's first operand."""
    net = Network("conv_" + tail.replace("+", "_"))
    x = net.add_input("x", shape)
    channels = shape[1] if layout == "NCHW" else shape[3]
    y = net.add_convolution2d(x, rand(7, channels, 3, 3, scale=0.3), rand(7), padding=1, layout=layout, name="conv")
    if "add" in tail:
        out_shape = (shape[0], 7, shape[2], shape[3]) if layout == "NCHW" else (shape[0], shape[1], shape[2], 7)
        r = net.add_input("r", addend_shape or out_shape)
        y = net.add_add(y, r, name="add") if conv_first else net.add_add(r, y, name="add")
    if "act" in tail:
        y = net.add_activation(y, act[0], act[1], act[2], name="act")
    net.add_output(y, "y")
    return net


def conv_inputs(net: Network) -> dict[str, np.ndarray]:
    return {layer.name: rand(*layer.outputs[0].shape) for layer in net.inputs}


@pytest.mark.parametrize("act", [
    ("relu", 0.0, 0.0), ("bounded_relu", 0.0, 6.0), ("bounded_relu", -1.0, 1.5), ("leaky_relu", 0.1, 0.0),
    ("sigmoid", 0.0, 0.0), ("tanh", 0.0, 0.0), ("elu", 0.7, 0.0), ("hard_swish", 0.0, 0.0),
    ("hard_sigmoid", 0.2, 0.5), ("abs", 0.0, 0.0), ("square", 0.0, 0.0), ("linear", 0.5, -1.0),
])
def test_conv_and_activation_become_one_convolution(act: tuple[str, float, float]) -> None:
    net = conv_net("act", act=act)
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert plan(fused) == [("conv+act", "Convolution2d", "CpuAcc")]
    desc = fused.layers[0].descriptor
    assert isinstance(desc, Convolution2dDescriptor) and desc.has_bias and not desc.has_addend
    assert desc.fused_activation == f32_activation(*act)
    assert fused.layers[0].replaces == ("conv", "act")


def nd_conv_net(tail: str, spatial: tuple[int, ...], op: str = "forward",
                act: tuple[str, float, float] = ("relu", 0.0, 0.0)) -> Network:
    """x [2, 5, spatial...] -> N-D Convolution (kernel 3 per axis, stride 2, pad 1, 6 channels, bias)
    -> [add r] -> [activation] -> y."""
    rank = len(spatial)
    net = Network(f"conv{rank}d_{op}_" + tail.replace("+", "_"))
    x = net.add_input("x", (2, 5, *spatial))
    forward = op == "forward"
    w = rand(*((6, 5) if forward else (5, 6)), *([3] * rank), scale=0.3)
    desc = ConvolutionDescriptor(ConvolutionOp.FORWARD if forward else ConvolutionOp.TRANSPOSED,
                                 strides=(2,) * rank, pads_begin=(1,) * rank, pads_end=(1,) * rank,
                                 dilations=(1,) * rank, output_padding=(0 if forward else 1,) * rank)
    y = net.add_convolution(x, w, rand(6), descriptor=desc, name="conv")
    if "add" in tail:
        y = net.add_add(y, net.add_input("r", tuple(y.shape)), name="add")
    if "act" in tail:
        y = net.add_activation(y, act[0], act[1], act[2], name="act")
    net.add_output(y, "y")
    return net


@pytest.mark.parametrize("spatial, op, act", [
    ((40,), "forward", ("relu", 0.0, 0.0)), ((40,), "forward", ("sigmoid", 0.0, 0.0)),
    ((9, 11), "forward", ("gelu", 0.0, 0.0)), ((5, 6, 7), "forward", ("leaky_relu", 0.1, 0.0)),
    ((17,), "transposed", ("tanh", 0.0, 0.0)), ((5, 6), "transposed", ("relu", 0.0, 0.0)),
    ((3, 4, 5), "transposed", ("bounded_relu", 0.0, 6.0)),
], ids=["1d-relu", "1d-sigmoid", "2d-gelu", "3d-leaky", "1d-t-tanh", "2d-t-relu", "3d-t-relu6"])
def test_nd_convolution_and_activation_become_one_convolution(spatial: tuple[int, ...], op: str,
                                                               act: tuple[str, float, float]) -> None:
    net = nd_conv_net("act", spatial, op, act)
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert plan(fused) == [("conv+act", "Convolution", "CpuAcc")]
    desc = fused.layers[0].descriptor
    assert isinstance(desc, ConvolutionDescriptor) and desc.has_bias and desc.op is (ConvolutionOp.FORWARD if op == "forward" else ConvolutionOp.TRANSPOSED)
    assert desc.fused_activation == f32_activation(*act)
    assert fused.layers[0].replaces == ("conv", "act")


def test_nd_convolution_takes_no_residual_add() -> None:
    """The N-D descriptor has no addend: the ADD stays a layer, and takes the activation itself."""
    net = nd_conv_net("add+act", (40,))
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert plan(fused) == [("conv", "Convolution", "CpuAcc"), ("add+act", "ElementwiseBinary", "CpuAcc")]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("conv_first", [True, False])
def test_conv_residual_add_and_relu_become_one_convolution_with_addend(layout: str, conv_first: bool) -> None:
    shape = (2, 5, 9, 11) if layout == "NCHW" else (2, 9, 11, 5)
    net = conv_net("add+act", shape=shape, layout=layout, conv_first=conv_first)
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert plan(fused) == [("conv+add+act", "Convolution2d", "CpuAcc")]
    layer = fused.layers[0]
    assert layer.descriptor.has_addend and layer.descriptor.fused_activation.kind is ActivationKind.RELU
    assert layer.inputs[-1] == "r"  # the addend is the last input
    assert layer.replaces == ("conv", "add", "act")


def test_conv_residual_add_without_activation() -> None:
    net = conv_net("add")
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert plan(fused) == [("conv+add", "Convolution2d", "CpuAcc")]
    assert fused.layers[0].descriptor.has_addend and fused.layers[0].descriptor.fused_activation is None


def test_constant_addend_is_fused() -> None:
    net = Network("const_addend")
    x = net.add_input("x", (1, 3, 6, 6))
    y = net.add_convolution2d(x, rand(4, 3, 1, 1), name="conv")
    y = net.add_activation(net.add_add(y, rand(1, 4, 6, 6), name="add"), "relu", name="relu")
    net.add_output(y, "y")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 3, 6, 6)})
    assert plan(fused) == [("conv+add+relu", "Convolution2d", "CpuAcc")]


def test_broadcast_add_is_not_fused_into_the_convolution() -> None:
    """An add whose other operand broadcasts (here [1, 7, 1, 1]) is no residual: the conv stays
    alone; the add still takes the relu as an elementwise layer with a fused activation."""
    net = conv_net("add+act", addend_shape=(1, 7, 1, 1))
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert plan(fused) == [("conv", "Convolution2d", "CpuAcc"), ("add+act", "ElementwiseBinary", "CpuAcc")]
    assert not fused.layers[0].descriptor.has_addend and fused.layers[0].descriptor.fused_activation is None
    assert fused.layers[1].descriptor == ElementwiseBinaryDescriptor("add", ActivationDescriptor("relu"))


def test_add_of_the_conv_output_with_itself_is_not_a_residual() -> None:
    net = Network("self_add")
    x = net.add_input("x", (1, 3, 5, 5))
    y = net.add_convolution2d(x, rand(3, 3, 3, 3), padding=1, name="conv")
    y = net.add_activation(net.add_add(y, y, name="add"), "relu", name="relu")
    net.add_output(y, "y")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 3, 5, 5)})
    assert plan(fused) == [("conv", "Convolution2d", "CpuAcc"), ("add+relu", "ElementwiseBinary", "CpuAcc")]


def test_conv_output_used_twice_is_not_fused() -> None:
    net = Network("used_twice")
    x = net.add_input("x", (1, 3, 6, 6))
    c = net.add_convolution2d(x, rand(3, 3, 3, 3), padding=1, name="conv")
    a = net.add_activation(c, "relu", name="relu")
    net.add_output(net.add_mul(a, c, name="mul"), "y")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 3, 6, 6)})
    assert plan(fused) == [("conv", "Convolution2d", "CpuAcc"), ("relu", "Activation", "CpuAcc"),
                           ("mul", "ElementwiseBinary", "CpuAcc")]


def test_conv_output_that_is_a_network_output_is_not_fused() -> None:
    net = Network("exported")
    x = net.add_input("x", (1, 3, 6, 6))
    c = net.add_convolution2d(x, rand(3, 3, 3, 3), padding=1, name="conv")
    net.add_output(net.add_activation(c, "relu", name="relu"), "y")
    net.add_output(c, "conv_out")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 3, 6, 6)})
    assert plan(fused) == [("conv", "Convolution2d", "CpuAcc"), ("relu", "Activation", "CpuAcc")]


def test_add_output_used_twice_keeps_the_add_but_not_the_activation() -> None:
    """conv + add fuse (the add's output is the fused layer's output); the relu cannot join,
    since the add's output is also read by the mul."""
    net = Network("add_used_twice")
    x = net.add_input("x", (1, 4, 5, 5))
    r = net.add_input("r", (1, 4, 5, 5))
    s = net.add_add(net.add_convolution2d(x, rand(4, 4, 3, 3), padding=1, name="conv"), r, name="add")
    net.add_output(net.add_mul(net.add_activation(s, "relu", name="relu"), s, name="mul"), "y")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 4, 5, 5), "r": rand(1, 4, 5, 5)})
    assert plan(fused) == [("conv+add", "Convolution2d", "CpuAcc"), ("relu", "Activation", "CpuAcc"),
                           ("mul", "ElementwiseBinary", "CpuAcc")]


def test_layers_on_another_backend_are_not_fused() -> None:
    """Only the subgraph CpuAcc was given is fused: a relu pinned to CpuRef stays there."""
    net = conv_net("add+act")
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net), overrides={"act": "CpuRef"})
    assert plan(fused) == [("conv+add", "Convolution2d", "CpuAcc"), ("act", "Activation", "CpuRef")]


def test_fully_connected_with_addend_and_activation() -> None:
    net = Network("fc")
    a = net.add_input("a", (3, 10))
    r = net.add_input("r", (3, 6))
    y = net.add_fully_connected(a, rand(6, 10), rand(6), alpha=0.5, beta=2.0, transpose_b=True, name="fc")
    y = net.add_activation(net.add_add(r, y, name="add"), "sigmoid", name="sig")
    net.add_output(y, "y")
    fc2 = net.add_activation(net.add_fully_connected(a, rand(10, 4), name="fc2"), "tanh", name="tanh")
    net.add_output(fc2, "z")
    fused = check_against_unfused_and_cpuref(net, {"a": rand(3, 10), "r": rand(3, 6)})
    assert plan(fused) == [("fc+add+sig", "FullyConnected", "CpuAcc"), ("fc2+tanh", "FullyConnected", "CpuAcc")]
    assert fused.layers[0].descriptor.has_addend and fused.layers[0].descriptor.fused_activation.kind.name == "SIGMOID"


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum"])
def test_elementwise_binary_and_activation(op: str) -> None:
    net = Network("binary")
    a = net.add_input("a", (2, 3, 4, 5))
    b = net.add_input("b", (3, 1, 5))
    net.add_output(net.add_activation(net.add_elementwise(op, a, b, name="bin"), "leaky_relu", 0.2, name="act"), "y")
    fused = check_against_unfused_and_cpuref(net, {"a": rand(2, 3, 4, 5), "b": rand(3, 1, 5)})
    assert plan(fused) == [("bin+act", "ElementwiseBinary", "CpuAcc")]
    assert fused.layers[0].descriptor == ElementwiseBinaryDescriptor(op, f32_activation("leaky_relu", 0.2))


def test_no_second_activation_on_a_fused_layer() -> None:
    """conv -> relu -> sigmoid: the relu joins the conv; the sigmoid stays (one fused activation)."""
    net = Network("two_acts")
    x = net.add_input("x", (1, 5, 9, 11))
    y = net.add_convolution2d(x, rand(7, 5, 3, 3), padding=1, name="conv")
    y = net.add_activation(net.add_activation(y, "relu", name="relu"), "sigmoid", name="sig")
    net.add_output(y, "y")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 5, 9, 11)})
    assert plan(fused) == [("conv+relu", "Convolution2d", "CpuAcc"), ("sig", "Activation", "CpuAcc")]


def test_dotted_names_share_their_prefix_and_collisions_get_a_suffix() -> None:
    net = Network("names")
    x = net.add_input("x", (1, 2, 4, 4))
    y = net.add_convolution2d(x, rand(2, 2, 1, 1), name="block.0.conv")
    y = net.add_activation(y, "relu", name="block.0.relu")
    # a layer that already has the name the fusion would choose
    z = net.add_activation(y, "abs", name="block.0.conv+relu")
    z = net.add_mul(z, z, name="block.1/mul")
    net.add_output(net.add_activation(z, "tanh", name="block.1/tanh"), "y")
    fused = check_against_unfused_and_cpuref(net, {"x": rand(1, 2, 4, 4)})
    assert [r[0] for r in plan(fused)] == ["block.0.conv+relu#2", "block.0.conv+relu", "block.1/mul+tanh"]


# ---- option fuse, explain(), the plan without fusion --------------------------------------------


def test_fuse_option_round_trips_and_checks_its_value() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        assert backend.get_option("fuse") == "1"
        backend.set_option("fuse", "0")
        assert backend.get_option("fuse") == "0"
        for bad in ("2", "yes", "", "true", "01"):
            with pytest.raises(BackendError, match="fuse must be 1 or 0") as info:
                backend.set_option("fuse", bad)
            assert info.value.status == "PN_ERR_INVALID_ARGUMENT"
        assert backend.get_option("fuse") == "0"
        backend.set_option("fuse", "1")
        assert backend.get_option("fuse") == "1"


def test_fuse_off_gives_the_unfused_plan() -> None:
    net = conv_net("add+act")
    with runtime(fuse=False) as rt:
        unfused = plugnn.optimize(net, rt, ["CpuAcc"])
    with plugnn.Runtime() as rt:
        reference = plugnn.optimize(net, rt, ["CpuRef"])  # CpuRef substitutes nothing
    assert [r[:2] for r in plan(unfused)] == [r[:2] for r in plan(reference)] == [
        ("conv", "Convolution2d"), ("add", "ElementwiseBinary"), ("act", "Activation")]
    assert all(not n.replaces for n in unfused.layers)


def test_explain_and_table_show_the_fusion() -> None:
    net = Network("explained")
    x = net.add_input("x", (1, 3, 6, 6))
    r = net.add_input("r", (1, 4, 6, 6))
    y = net.add_convolution2d(x, rand(4, 3, 3, 3), padding=1, name="conv")
    y = net.add_batch_normalization(y, rand(4) ** 2 + 0.5, rand(4), rand(4), rand(4) ** 2 + 0.5, name="bn")
    y = net.add_activation(net.add_add(y, r, name="add"), "bounded_relu", 0.0, 6.0, name="relu6")
    net.add_output(y, "y")
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
    assert plan(optimized) == [("conv+add+relu6", "Convolution2d", "CpuAcc")]
    assert optimized.table().splitlines()[2].split() == ["conv+add+relu6", "Convolution2d", "CpuAcc"]
    text = optimized.explain()
    assert "- conv+add+relu6 (Convolution2d) -> CpuAcc" in text
    assert "stands for: conv, bn, add, relu6" in text
    assert "note: batch normalization 'bn' folded in" in text
    assert ("optimize_subgraph: CpuAcc: yes (substituted 'conv', 'add', 'relu6' by one Convolution2d "
            "with addend and fused bounded_relu(0, 6))") in text
    assert text.count("preference: CpuAcc: yes (supported)") == 1  # the three layers' answers, once
    (record,) = optimized.assignments()
    assert record["replaces"] == ["conv", "bn", "add", "relu6"]
    assert optimized.removed() == [{"layer": "bn", "why": "folded into 'conv'"}]


# ---- the C ABI directly -------------------------------------------------------------------


def test_optimize_subgraph_result_through_the_abi() -> None:
    """ids: 1 conv -> 2 relu -> 3 float16 activation (refused: failed with the reason);
    4 relu of tensor 10, which is also a subgraph output, stays untouched."""
    conv_in, conv_out = TensorInfo((1, 2, 4, 4)), TensorInfo((1, 3, 4, 4))
    half = TensorInfo((1, 3, 4, 4), DataType.FLOAT16)
    relu = ActivationDescriptor("relu")
    layers = (
        LayerSpec(LayerKind.CONVOLUTION_2D, "conv", Convolution2dDescriptor(padding=1),
                  (conv_in, TensorInfo((3, 2, 3, 3))), (conv_out,), input_ids=(1, 2), output_ids=(3,), id=1),
        LayerSpec(LayerKind.ACTIVATION, "relu", relu, (conv_out,), (conv_out,), input_ids=(3,), output_ids=(4,), id=2),
        LayerSpec(LayerKind.ACTIVATION, "half", relu, (half,), (half,), input_ids=(5,), output_ids=(6,), id=3),
        LayerSpec(LayerKind.ACTIVATION, "exported", relu, (conv_in,), (conv_in,), input_ids=(10,), output_ids=(11,),
                  id=4),
    )
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        result = backend.optimize_subgraph(Subgraph(layers, input_ids=(1, 2, 5, 10), output_ids=(4, 6, 11, 10)))
        assert result is not None
        (sub,) = result.substitutions
        assert sub.replaced_layer_ids == (1, 2)
        assert (sub.replacement.name, sub.replacement.kind) == ("conv+relu", LayerKind.CONVOLUTION_2D)
        assert sub.replacement.input_ids == (1, 2) and sub.replacement.output_ids == (4,)
        assert sub.replacement.descriptor == Convolution2dDescriptor(padding=1, fused_activation=relu)
        assert [(f.layer_id, "float16" in f.reason) for f in result.failed] == [(3, True)]
        assert result.untouched == (4,)
        backend.set_option("fuse", "0")
        result = backend.optimize_subgraph(Subgraph(layers, input_ids=(1, 2, 5, 10), output_ids=(4, 6, 11, 10)))
        assert result is not None and not result.substitutions and sorted(result.untouched) == [1, 2, 4]


# ---- ONNX models ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def onnx_models() -> dict[str, Network]:
    pytest.importorskip("onnx")
    import plugnn.onnx
    from plugnn import synthetic_models as sm

    return {"resnet18": plugnn.onnx.load(sm.resnet18(batch=2, image=32)),
            "mobilenet_v2": plugnn.onnx.load(sm.mobilenet_v2(image=32)),
            "small_cnn": plugnn.onnx.load(sm.small_cnn(batch=3))}


def test_resnet18_blocks_are_fused(onnx_models: dict[str, Network]) -> None:
    net = onnx_models["resnet18"]
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    names = [r[0] for r in plan(fused)]
    assert names[:4] == ["conv1+relu1", "maxpool", "layer1.0.conv1+relu1", "layer1.0.conv2+add+relu2"]
    for block in ("layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0", "layer3.1", "layer4.0", "layer4.1"):
        assert f"{block}.conv1+relu1" in names and f"{block}.conv2+add+relu2" in names
    # the downsample conv is the addend of its block's fused conv, not fused itself
    assert [n for n in names if "downsample" in n] == ["layer2.0.downsample.0", "layer3.0.downsample.0",
                                                         "layer4.0.downsample.0"]
    assert not any(t in ("Activation", "ElementwiseBinary") for _, t, _ in plan(fused))
    assert len(names) == 24  # 49 unfused layers, 17 relus and 8 adds fused away
    block = node(fused, "layer2.0.conv2+add+relu2")
    assert block.inputs[-1] == node(fused, "layer2.0.downsample.0").outputs[0]


def test_mobilenet_v2_relu6_and_residual_adds_are_fused(onnx_models: dict[str, Network]) -> None:
    net = onnx_models["mobilenet_v2"]
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    types = [t for _, t, _ in plan(fused)]
    assert "Activation" not in types and "ElementwiseBinary" not in types
    names = [r[0] for r in plan(fused)]
    assert "features.1.depthwise.conv+relu6" in names and "features.3.project.conv+add" in names
    assert sum(n.endswith("+relu6") for n in names) == 35 and sum(n.endswith("+add") for n in names) == 10
    relu6 = node(fused, "features.1.depthwise.conv+relu6").descriptor.fused_activation
    assert relu6 == ActivationDescriptor("bounded_relu", 0.0, 6.0)


def test_small_cnn_is_fused(onnx_models: dict[str, Network]) -> None:
    net = onnx_models["small_cnn"]
    fused = check_against_unfused_and_cpuref(net, conv_inputs(net))
    assert [r[0] for r in plan(fused)] == [
        "stem+stem_relu", "pool", "block1_conv1+block1_conv1_relu", "block1_conv2+block1_add+block1_relu",
        "down+down_relu", "block2_conv1+block2_conv1_relu", "block2_conv2+block2_add+block2_relu", "gap", "flatten",
        "fc", "softmax"]


@pytest.fixture(scope="module")
def runtimes() -> Iterator[dict[tuple[str, int], plugnn.Runtime]]:
    rts = {(isa, n): runtime(fuse=True, num_threads=n, isa=isa) for isa in ISAS for n in THREADS}
    yield rts
    for rt in rts.values():
        rt.close()


def test_fused_resnet18_same_bits_for_every_thread_count(onnx_models: dict[str, Network],
                                                         runtimes: dict[tuple[str, int], plugnn.Runtime]) -> None:
    """Per ISA, every thread count gives the same bits; every ISA agrees with CpuRef."""
    net = onnx_models["resnet18"]
    inputs = conv_inputs(net)
    with plugnn.Runtime() as rt:
        _, ref = run(net, rt, ["CpuRef"], inputs)
    for isa in ISAS:
        first = None
        for n in THREADS:
            optimized, out = run(net, runtimes[(isa, n)], ["CpuAcc"], inputs)
            assert len(optimized.layers) == 24
            if first is None:
                first = out["logits"]
                assert_close(first, ref["logits"].astype(np.float64))
            else:
                np.testing.assert_array_equal(out["logits"], first, err_msg=f"isa {isa}, {n} threads")
