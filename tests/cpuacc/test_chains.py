"""CpuAcc's blocked chains (plugins/accel/src/chain/chain.h): which convolutions optimize_subgraph
joins into one PRECOMPILED layer that keeps its tensors in NCHW16c, what it exports, that the
chains compute what CpuRef and the unchained CpuAcc compute at every thread count, their option
blocked_chains, the payload's lifetime, and the precompiled layers CpuAcc must refuse.

Chains need the AVX-512 kernels: on a CPU without them (or with option isa below avx512) no
chain is formed, which the tests check too.

Tolerance: max|a - b| <= 1e-4 * max(1, max|b|) (float32 sums in different orders)."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, Network
from plugnn.descriptors import LayerKind, PrecompiledDescriptor
import plugnn.onnx
from plugnn import synthetic_models as sm

from .common import BEST_ISA, HAVE_CPUACC, assert_close_scaled, assert_same_bits_as_one_thread, check_chained
from .common import chain_runtime as runtime
from .common import run_network as run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
needs_avx512 = pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only; "
                                                               f"this CPU's best kernels are {BEST_ISA}")

TOLERANCE = 1e-4
RNG = np.random.default_rng(9)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert_close_scaled(actual, expected, TOLERANCE)


def chains_of(optimized: Any) -> list[Any]:
    return [n for n in optimized.layers if n.kind is LayerKind.PRECOMPILED]


def inputs_of(net: Network) -> dict[str, np.ndarray]:
    return {layer.name: rand(*layer.outputs[0].shape) for layer in net.inputs}


def check(network: Network, inputs: Mapping[str, np.ndarray], **options: Any) -> Any:
    """check_chained's plan (at this module's TOLERANCE)."""
    return check_chained(network, inputs, TOLERANCE, **options)[0]


def residual_net(c: int = 32, hw: int = 9, export_middle: bool = False) -> Network:
    """conv-relu -> conv + x -> relu -> conv(stride 2) -> y, every conv c -> c channels."""
    net = Network("residual")
    x = net.add_input("x", (2, c, hw, hw))
    w = [rand(c, c, 3, 3) / np.float32(np.sqrt(9 * c)) for _ in range(3)]
    h = net.add_activation(net.add_convolution2d(x, w[0], rand(c), padding=1, name="c1"), "relu", name="r1")
    h = net.add_convolution2d(h, w[1], rand(c), padding=1, name="c2")
    h = net.add_activation(net.add_add(h, x, name="add"), "relu", name="r2")
    y = net.add_convolution2d(h, w[2], None, stride=2, padding=(0, 1, 1, 0), name="c3")
    net.add_output(y, "y")
    if export_middle:
        net.add_output(h, "middle")
    return net


@needs_avx512
def test_a_residual_block_becomes_one_chain() -> None:
    net = residual_net()
    chained = check(net, inputs_of(net))
    (chain,) = chains_of(chained)
    assert [n.name for n in chained.layers] == ["c1..c3"]
    assert isinstance(chain.descriptor, PrecompiledDescriptor)
    assert chain.descriptor.label == "blocked NCHW16c chain of 3 convolutions"
    assert chain.replaces == ("c1", "r1", "c2", "add", "r2", "c3")
    assert "c1..c3" in chained.explain()


@needs_avx512
def test_a_tensor_used_outside_the_chain_is_one_of_its_outputs() -> None:
    net = residual_net(export_middle=True)
    chained = check(net, inputs_of(net))
    (chain,) = chains_of(chained)
    assert len(chain.outputs) == 2


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_resnet18_runs_as_one_chain_with_the_same_bits_at_every_thread_count(threads: int) -> None:
    net = plugnn.onnx.load(sm.resnet18(batch=2, image=32))
    inputs = inputs_of(net)
    chained = check(net, inputs, num_threads=threads)
    # the stem reads the 3-channel image as one block; max and global average pooling join too
    assert [n.name for n in chained.layers] == ["conv1..avgpool", "flatten", "fc"]
    assert chains_of(chained)[0].descriptor.label == "blocked NCHW16c chain of 20 convolutions, 2 pooling"
    with runtime(num_threads=threads) as rt:
        _, many = run(net, rt, ["CpuAcc"], inputs)
    assert_same_bits_as_one_thread(net, inputs, many)


@needs_avx512
@pytest.mark.parametrize("model, batch", [("mobilenet_v2", 1), ("resnet18", 3)])
def test_steps_split_by_rows_give_the_same_bits_at_every_thread_count(model: str, batch: int) -> None:
    """Steps whose weights are smaller than their activations run each thread on its own band of
    rows (cut at the row-group boundaries nearest to t * oh / T, or at whole images when the
    batch has one per thread); the others split their output blocks first come. MobileNetV2 at
    64 x 64 has both kinds, and 32 x 32 steps with 16 row groups: cut points at 2, 3 and 7
    threads; ResNet-18 at batch 3 is cut by images at 2 and 3 threads."""
    net = plugnn.onnx.load(sm.mobilenet_v2(image=64) if model == "mobilenet_v2"
                           else sm.resnet18(batch=batch, image=32))
    inputs = inputs_of(net)
    outputs = {}
    for threads in (1, 2, 3, 7):
        with runtime(num_threads=threads) as rt:
            optimized, outputs[threads] = run(net, rt, ["CpuAcc"], inputs)
            assert len(chains_of(optimized)) == 1
    for threads in (2, 3, 7):
        for name in outputs[1]:
            np.testing.assert_array_equal(outputs[threads][name], outputs[1][name], err_msg=f"{threads} threads")
    with plugnn.Runtime() as rt:
        _, ref = run(net, rt, ["CpuRef"], inputs)
    for name in ref:
        assert_close(outputs[2][name], ref[name].astype(np.float64))


@needs_avx512
def test_mobilenet_v2_depthwise_and_narrow_layers_join_the_chain() -> None:
    net = plugnn.onnx.load(sm.mobilenet_v2(image=32))
    chained = check(net, inputs_of(net))
    (chain,) = chains_of(chained)
    # the first convolution reads the 3-channel image as one block of 3 (ACCEL_CHAIN_FIRST)
    assert chain.descriptor.label == "blocked NCHW16c chain of 52 convolutions, 1 pooling"
    assert [n.name for n in chained.layers] == ["features.0.conv..avgpool", "flatten", "classifier"]


@needs_avx512
@pytest.mark.parametrize("width", [10, 16, 37])
def test_a_narrow_input_starts_a_chain(width: int) -> None:
    """A 3-channel input is read as one block of 3 by the first convolution of the chain (an
    RGB row is interleaved 16 pixels at a time: widths below, at and past a multiple of 16)."""
    net = Network("narrow")
    x = net.add_input("x", (2, 3, 10, width))
    h = net.add_convolution2d(x, rand(32, 3, 3, 3) / np.float32(5), rand(32), padding=1, name="stem")
    h = net.add_activation(h, "relu", name="relu")
    y = net.add_convolution2d(h, rand(16, 32, 3, 3) / np.float32(17), stride=2, padding=1, name="next")
    net.add_output(y, "y")
    chained = check(net, inputs_of(net))
    assert [n.name for n in chained.layers] == ["stem..next"]


@needs_avx512
@pytest.mark.parametrize("kind, kernel, stride, padding, dilation, ceil, include", [
    ("max", 3, 2, 1, 1, False, False),
    ("max", (2, 3), (1, 2), (0, 1, 1, 2), (2, 1), True, False),
    ("average", 3, 2, 1, 1, False, False),
    ("average", 3, 2, 1, 1, True, True),
    ("average", (3, 2), 1, (1, 0, 2, 1), 1, False, True),
    ("max", 9, 1, 0, 1, False, False),  # a global pooling: one window over the whole image
])
def test_pooling_between_convolutions_joins_the_chain(kind: str, kernel: Any, stride: Any, padding: Any,
                                                      dilation: Any, ceil: bool, include: bool) -> None:
    net = Network("pooled")
    x = net.add_input("x", (2, 16, 9, 9))
    h = net.add_convolution2d(x, rand(32, 16, 3, 3) / np.float32(12), rand(32), padding=1, name="a")
    if kind == "max":
        h = net.add_activation(h, "leaky_relu", alpha=0.2, name="act")  # negatives reach the pool
    h = net.add_pooling2d(h, kind, kernel, stride=stride, padding=padding, dilation=dilation,
                          ceil_mode=ceil, count_include_pad=include, name="pool")
    net.add_output(net.add_convolution2d(h, rand(16, 32, 1, 1) / np.float32(6), name="b"), "y")
    chained = check(net, inputs_of(net))
    # leaky relu maps 0 to 0: the chain applies it to "a"'s rows after the kernel
    assert [n.name for n in chained.layers] == ["a..b"]


@needs_avx512
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pooling_steps_large_enough_to_split_run_on_every_thread_count_alike(kind: str) -> None:
    """A SqueezeNet-like stem (a pooling of 64 channels on 111 x 111 to 55 x 55: enough work to
    be split between threads, which a pooling step's job cost, counted over its window, allows)
    against CpuRef at 1, 2, 3 and 7 threads, and the same bits at every thread count."""
    net = Network("stem")
    x = net.add_input("x", (1, 16, 111, 111))
    h = net.add_activation(net.add_convolution2d(x, rand(64, 16, 3, 3) / np.float32(12), rand(64), padding=1,
                                                 name="a"), "relu", name="r")
    h = net.add_pooling2d(h, kind, 3, stride=2, name="pool")
    net.add_output(net.add_convolution2d(h, rand(16, 64, 1, 1) / np.float32(8), name="b"), "y")
    inputs = inputs_of(net)
    for threads in (1, 2, 3, 7):
        chained = check(net, inputs, num_threads=threads)
        assert [n.name for n in chained.layers] == ["a..b"]
        with runtime(num_threads=threads) as rt:
            _, out = run(net, rt, ["CpuAcc"], inputs)
        assert_same_bits_as_one_thread(net, inputs, out)


@needs_avx512
@pytest.mark.parametrize("width, stride, dilation", [(29, 1, 1), (31, 2, 1), (17, 1, 2), (23, 2, 2), (5, 1, 1)])
def test_depthwise_steps_of_every_width_stride_and_dilation(width: int, stride: int, dilation: int) -> None:
    """1x1 expand -> depthwise 3x3 (+ relu6) -> 1x1 project + residual: the MobileNetV2 block,
    over widths that leave every kind of tail for the 12- and 8-pixel depthwise tiles."""
    net = Network("block")
    x = net.add_input("x", (2, 16, 7, width))
    h = net.add_convolution2d(x, rand(48, 16, 1, 1) / np.float32(4), rand(48), name="expand")
    h = net.add_activation(h, "bounded_relu", alpha=0.0, beta=6.0, name="relu6a")
    h = net.add_convolution2d(h, rand(48, 1, 3, 3) / np.float32(3), rand(48), stride=stride, padding=dilation,
                              dilation=dilation, groups=48, name="dw")
    h = net.add_activation(h, "bounded_relu", alpha=0.0, beta=6.0, name="relu6b")
    h = net.add_convolution2d(h, rand(16, 48, 1, 1) / np.float32(7), rand(16), name="project")
    if stride == 1:
        h = net.add_add(h, x, name="residual")
    net.add_output(h, "y")
    chained = check(net, inputs_of(net))
    assert len(chains_of(chained)) == 1 and len(chained.layers) == 1


@needs_avx512
@pytest.mark.parametrize("batch", [1, 2])
def test_seven_pixel_rows_of_one_and_two_output_blocks(batch: int) -> None:
    """7x7 outputs (the last stage of ResNet and MobileNetV2) run as multi-row tiles: two rows
    of two output blocks, four rows of one block, at input strides 1 and 2."""
    net = Network("sevens")
    x = net.add_input("x", (batch, 16, 14, 14))
    h = net.add_convolution2d(x, rand(32, 16, 3, 3) / np.float32(12), rand(32), stride=2, padding=1, name="s2")
    h = net.add_activation(h, "relu", name="relu")
    h = net.add_convolution2d(h, rand(16, 32, 3, 3) / np.float32(17), rand(16), padding=1, name="one_block")
    h = net.add_convolution2d(h, rand(32, 16, 1, 1) / np.float32(4), name="two_blocks")
    net.add_output(net.add_convolution2d(h, rand(16, 32, 3, 3) / np.float32(17), stride=2, padding=1,
                                         name="one_block_s2"), "y")
    chained = check(net, inputs_of(net))
    assert [n.name for n in chained.layers] == ["s2..one_block_s2"]


@needs_avx512
@pytest.mark.parametrize("stride", [1, 2])
def test_fourteen_pixel_rows_of_one_output_block(stride: int) -> None:
    """14-wide outputs of one 16-channel block run as tiles of two rows (13 rows: six pairs and
    a last row alone), at input strides 1 and 2."""
    net = Network("fourteens")
    x = net.add_input("x", (2, 16, 13 * stride, 14 * stride))
    h = net.add_convolution2d(x, rand(16, 16, 3, 3) / np.float32(12), rand(16), stride=stride, padding=1,
                              name="one_block")
    h = net.add_activation(h, "relu", name="relu")
    net.add_output(net.add_convolution2d(h, rand(32, 16, 1, 1) / np.float32(4), name="after"), "y")
    chained = check(net, inputs_of(net))
    assert [n.name for n in chained.layers] == ["one_block..after"]


POOL_WINDOWS = [  # kind, kernel, stride, padding, dilation, include, (height, width)
    ("max", 2, 2, 0, 1, False, (12, 28)),
    ("max", 3, 2, 1, 1, False, (11, 23)),
    ("max", 3, 3, 0, 1, False, (14, 14)),
    ("max", 3, 1, (0, 2, 1, 0), (2, 1), False, (9, 17)),
    ("average", 2, 2, 1, 1, True, (7, 21)),
    ("average", 3, 2, 1, 1, False, (11, 23)),
    ("average", 3, 2, 1, 1, True, (11, 23)),
    ("average", 3, 1, 0, 1, False, (5, 30)),
]


def pooled_chain(kind: str, kernel: Any, stride: Any, padding: Any, dilation: Any, include: bool,
                 size: tuple[int, int]) -> Network:
    net = Network("pooled")
    x = net.add_input("x", (2, 16, *size))
    h = net.add_convolution2d(x, rand(32, 16, 3, 3) / np.float32(12), rand(32), padding=1, name="a")
    h = net.add_pooling2d(h, kind, kernel, stride=stride, padding=padding, dilation=dilation,
                          count_include_pad=include, name="pool")
    net.add_output(net.add_convolution2d(h, rand(16, 32, 1, 1) / np.float32(6), name="b"), "y")
    return net


@needs_avx512
@pytest.mark.parametrize("window", POOL_WINDOWS)
def test_pooling_windows_inside_and_at_the_borders_of_wide_rows(window: tuple[Any, ...]) -> None:
    """2x2 and 3x3 windows that lie wholly inside the image take a path without per-pixel
    bounds; the columns at the borders (and rows cut by padding or dilation) the generic one."""
    net = pooled_chain(*window)
    chained = check(net, inputs_of(net))
    assert [n.name for n in chained.layers] == ["a..b"]


@needs_avx512
@pytest.mark.parametrize("window", [w for w in POOL_WINDOWS if w[0] == "max"])
def test_max_pooling_windows_inside_and_at_the_borders_propagate_nan(window: tuple[Any, ...]) -> None:
    """NaNs brought in by the residual addend at a corner, an edge and inside the image win
    every max window that reads them, in both paths, exactly where CpuRef puts them."""
    kind, kernel, stride, padding, dilation, include, size = window
    net = Network("pooled_nan")
    x = net.add_input("x", (1, 16, *size))
    r = net.add_input("r", (1, 16, *size))
    h = net.add_add(net.add_convolution2d(x, rand(16, 16, 1, 1) / np.float32(4), name="conv"), r, name="add")
    net.add_output(net.add_pooling2d(h, kind, kernel, stride=stride, padding=padding, dilation=dilation,
                                     name="pool"), "y")
    inputs = inputs_of(net)
    height, width = size
    for channel, row, col in [(0, 0, 0), (5, height // 2, width - 1), (9, height // 2, width // 2),
                              (15, height - 1, width // 3)]:
        inputs["r"][0, channel, row, col] = np.nan
    with runtime() as rt:
        optimized, out = run(net, rt, ["CpuAcc"], inputs)
        _, ref = run(net, rt, ["CpuRef"], inputs)
    assert [n.name for n in optimized.layers] == ["conv..pool"]
    assert np.isnan(out["y"]).sum() > 0
    np.testing.assert_array_equal(np.isnan(out["y"]), np.isnan(ref["y"]))
    finite = ~np.isnan(ref["y"])
    assert_close(out["y"][finite], ref["y"][finite].astype(np.float64))


def fire_net(batch: int, axis: int = 1) -> Network:
    """Two SqueezeNet fire modules and an inception-like join: channel concatenations of parts
    the chain's own steps write, one of 24 channels last, one read through a padded 3x3
    convolution (its halo), one of a tensor twice and one of three parts sharing a part with it
    (those two copy their parts), one with a pooling."""
    net = Network("fire")
    x = net.add_input("x", (batch, 32, 9, 9))
    s = net.add_activation(net.add_convolution2d(x, rand(16, 32, 1, 1) / np.float32(6), rand(16), name="squeeze"),
                           "relu", name="sr")
    e1 = net.add_activation(net.add_convolution2d(s, rand(32, 16, 1, 1) / np.float32(4), rand(32), name="e1"),
                            "relu", name="e1r")
    e3 = net.add_activation(net.add_convolution2d(s, rand(24, 16, 3, 3) / np.float32(12), rand(24), padding=1,
                                                  name="e3"), "relu", name="e3r")
    cat = net.add_concat([e1, e3], axis, name="cat1")  # 32 + 24 channels: 4 blocks
    h = net.add_convolution2d(cat, rand(32, 56, 3, 3) / np.float32(22), rand(32), padding=1, name="mix")
    twice = net.add_concat([h, h], axis, name="cat2")
    p = net.add_pooling2d(twice, "max", 3, stride=1, padding=1, name="pool")
    b = net.add_convolution2d(p, rand(16, 64, 1, 1) / np.float32(8), rand(16), name="b")
    c = net.add_convolution2d(twice, rand(8, 64, 1, 1) / np.float32(8), name="c")
    net.add_output(net.add_concat([h, b, c], axis, name="cat3"), "y")  # 32 + 16 + 8
    net.add_output(e1, "part")  # a part used outside: one of the chain's outputs too
    # a part read with a wider halo than its concatenation's (the parts of a concatenation are
    # written inside its storage, with one halo for all)
    net.add_output(net.add_convolution2d(e1, rand(16, 32, 3, 3) / np.float32(17), padding=2, dilation=2,
                                         name="side_conv"), "side")
    return net


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("batch, axis", [(1, 1), (2, -3)])
def test_channel_concatenations_of_the_chains_own_steps_join_it(threads: int, batch: int, axis: int) -> None:
    net = fire_net(batch, axis)
    inputs = inputs_of(net)
    chained = check(net, inputs, num_threads=threads)
    assert [n.name for n in chained.layers] == ["squeeze..side_conv"]
    assert chains_of(chained)[0].descriptor.label == (
        "blocked NCHW16c chain of 7 convolutions, 1 pooling, 3 concatenations")
    with runtime(num_threads=threads) as rt:
        _, many = run(net, rt, ["CpuAcc"], inputs)
    assert_same_bits_as_one_thread(net, inputs, many)


def dense_net(batch: int, last_act: str) -> Network:
    """A DenseNet block: each layer concatenates every feature so far (the first a concatenation
    of one tensor), normalizes it (a batch normalization and ReLU the optimizer cannot fold into
    a convolution), then 1x1 and 3x3 convolutions; the last feature of 8 channels, and a last
    normalization with an activation that does not keep 0 at 0 (the lanes past the 72nd
    channel are zeroed again)."""
    net = Network("dense")
    x = net.add_input("x", (batch, 32, 8, 8))
    feats = [net.add_activation(net.add_convolution2d(x, rand(32, 32, 3, 3) / np.float32(17), rand(32), padding=1,
                                                      name="conv0"), "relu", name="relu0")]

    def norm(t: Any, c: int, act: str, name: str) -> Any:
        h = net.add_batch_normalization(t, rand(c), rand(c), rand(c), np.abs(rand(c)) + np.float32(0.5),
                                        name=f"{name}_bn")
        return net.add_activation(h, act, name=f"{name}_act")

    for k, grow in enumerate((16, 16, 8), start=1):
        cat = net.add_concat(feats, 1, name=f"cat{k}")
        c = sum(f.shape[1] for f in feats)
        h = norm(cat, c, "relu", f"norm{k}")
        h = net.add_activation(net.add_convolution2d(h, rand(48, c, 1, 1) / np.float32(np.sqrt(c)), rand(48),
                                                     name=f"conv{k}a"), "relu", name=f"relu{k}")
        feats.append(net.add_convolution2d(h, rand(grow, 48, 3, 3) / np.float32(20), padding=1, name=f"conv{k}b"))
    net.add_output(norm(net.add_concat(feats, 1, name="cat4"), 72, last_act, "norm4"), "y")
    return net


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("batch, act", [(1, "relu"), (2, "sigmoid")])
def test_batch_normalizations_and_concatenations_make_a_dense_block_one_chain(threads: int, batch: int,
                                                                              act: str) -> None:
    net = dense_net(batch, act)
    inputs = inputs_of(net)
    chained = check(net, inputs, num_threads=threads)
    (chain,) = chained.layers
    assert chain.kind is LayerKind.PRECOMPILED
    assert chain.descriptor.label == (
        "blocked NCHW16c chain of 7 convolutions, 4 concatenations, 4 batch normalizations")
    assert "cat1" in chain.replaces and "norm4_bn" in chain.replaces and "norm4_act" in chain.replaces
    with runtime(num_threads=threads) as rt:
        _, many = run(net, rt, ["CpuAcc"], inputs)
    assert_same_bits_as_one_thread(net, inputs, many)


@needs_avx512
def test_concatenations_a_chain_does_not_write_whole_stay_out_of_it() -> None:
    """A part from outside the chain (DenseNet's earlier features: the runtime lets their
    producers write into the output in place), or a part of channels that end inside a
    16-channel block before another part, ends the chain before the concatenation."""
    net = Network("outside")
    x = net.add_input("x", (1, 32, 8, 8))
    a = net.add_convolution2d(x, rand(32, 32, 1, 1) / np.float32(6), name="a")
    b = net.add_convolution2d(a, rand(24, 32, 3, 3) / np.float32(17), padding=1, name="b")
    h = net.add_concat([x, b], 1, name="with_input")  # x comes from outside
    c = net.add_convolution2d(h, rand(32, 56, 1, 1) / np.float32(8), name="c")
    d = net.add_convolution2d(c, rand(24, 32, 1, 1) / np.float32(6), name="d")
    net.add_output(net.add_concat([d, c], 1, name="ragged"), "y")  # 24 channels first
    chained = check(net, inputs_of(net))
    assert [n.name for n in chained.layers] == ["a..b", "with_input", "c..d", "ragged"]


@needs_avx512
def test_runs_after_the_first_see_only_their_own_inputs() -> None:
    """Tensors of one geometry share storage inside a chain (and the chain's input is packed
    again every run): a second and third run with other inputs must not see the first's data."""
    net = plugnn.onnx.load(sm.resnet18(batch=1, image=64))
    with runtime() as rt:
        chained = rt.load_network(plugnn.optimize(net, rt, ["CpuAcc"]))
        reference = rt.load_network(plugnn.optimize(net, rt, ["CpuRef"]))
        for seed in (1, 2, 3):
            inputs = {layer.name: np.random.default_rng(seed).standard_normal(layer.outputs[0].shape)
                      .astype(np.float32) * seed for layer in net.inputs}
            out, ref = chained.run(inputs), reference.run(inputs)
            for name in out:
                assert_close(out[name], ref[name].astype(np.float64))


@needs_avx512
def test_max_pooling_in_a_chain_propagates_nan() -> None:
    """A NaN reaching a max window wins it, as in CpuRef (it comes in through the residual
    addend, so the convolution does not spread it over every channel)."""
    net = Network("nan")
    x = net.add_input("x", (1, 16, 6, 6))
    r = net.add_input("r", (1, 16, 6, 6))
    h = net.add_add(net.add_convolution2d(x, rand(16, 16, 1, 1) / np.float32(4), name="conv"), r, name="add")
    net.add_output(net.add_pooling2d(h, "max", 2, stride=2, name="pool"), "y")
    inputs = inputs_of(net)
    inputs["r"][0, 3, 1, 1] = np.nan
    with runtime() as rt:
        optimized, out = run(net, rt, ["CpuAcc"], inputs)
    assert [n.name for n in optimized.layers] == ["conv..pool"]
    assert np.isnan(out["y"][0, 3, 0, 0]) and np.isnan(out["y"]).sum() == 1


@needs_avx512
def test_what_the_blocked_kernels_do_not_run_stays_out_of_chains() -> None:
    net = Network("mixed")
    x = net.add_input("x", (1, 32, 8, 8))
    h = net.add_convolution2d(x, rand(32, 32, 3, 3) / np.float32(17), padding=1, name="a")
    h = net.add_convolution2d(h, rand(32, 2, 3, 3) / np.float32(4), padding=1, groups=16,
                              name="pairs")  # groups of 2 channels: 8 products per real one
    h = net.add_convolution2d(h, rand(64, 1, 3, 3) / np.float32(3), padding=1, groups=32,
                              name="dw_x2")  # depthwise with multiplier 2
    h = net.add_convolution2d(h, rand(4, 64, 1, 1) / np.float32(6), name="narrow")  # 4 of 16 lanes
    h = net.add_convolution2d(h, rand(16, 4, 1, 1) / np.float32(2), name="from_narrow")
    net.add_output(h, "y")
    chained = check(net, inputs_of(net))
    assert chains_of(chained) == []
    # (sigmoid, grouped convolutions of 8+ channels per group, and 1x1 maps of any channel
    # count run in chains: tests/cpuacc/test_chain_grouped_se.py)


@needs_avx512
def test_option_blocked_chains_and_kernel_sets_below_avx512_form_no_chain() -> None:
    net = residual_net()
    inputs = inputs_of(net)
    for chains, isa in ((False, "auto"), (True, "avx2"), (True, "portable")):
        with runtime(chains=chains, isa=isa) as rt:
            optimized, out = run(net, rt, ["CpuAcc"], inputs)
            assert chains_of(optimized) == []
            assert [n.name for n in optimized.layers] == ["c1+r1", "c2+add+r2", "c3"]


def test_blocked_chains_option_round_trips_and_checks_its_value() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        assert backend.get_option("blocked_chains") == "1"
        backend.set_option("blocked_chains", "0")
        assert backend.get_option("blocked_chains") == "0"
        for bad in ("2", "yes", ""):
            with pytest.raises(BackendError, match="blocked_chains must be 1 or 0"):
                backend.set_option("blocked_chains", bad)


@needs_avx512
def test_a_chained_network_outlives_its_runtime() -> None:
    """The payload is released with the backend when the runtime closes first (the library is
    unloaded then); the optimized network left behind can no longer be loaded."""
    net = residual_net()
    rt = runtime()
    optimized = plugnn.optimize(net, rt, ["CpuAcc"])
    loaded = rt.load_network(optimized)
    loaded.run(inputs_of(net))
    rt.close()
    with pytest.raises(plugnn.PlugnnError):
        rt.load_network(optimized)
    del loaded, optimized
    gc.collect()


@needs_avx512
def test_a_chain_changing_kernel_sets_after_optimize_is_refused_clearly() -> None:
    net = residual_net()
    with runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc"])
        rt.backend("CpuAcc").set_option("isa", "avx2")
        with pytest.raises(BackendError, match="c1..c3.*needs the avx512 kernels, option isa is avx2"):
            rt.load_network(optimized)
        rt.backend("CpuAcc").set_option("isa", "auto")
        with rt.load_network(optimized) as loaded:
            loaded.run(inputs_of(net))


def test_a_precompiled_layer_cpuacc_did_not_make_is_refused() -> None:
    from plugnn.layers import LayerSpec
    from plugnn.tensor import TensorInfo

    spec = LayerSpec(LayerKind.PRECOMPILED, "foreign", PrecompiledDescriptor("someone else's"),
                     (TensorInfo((1, 16, 4, 4)),), (TensorInfo((1, 16, 4, 4)),))
    with plugnn.Runtime() as rt:
        factory = rt.backend("CpuAcc").create_workload_factory()
        try:
            with pytest.raises(BackendError, match="'foreign' was not made by this CpuAcc build"):
                factory.create_workload(spec)
        finally:
            factory.close()
