"""CpuAcc's blocked-chain upsampling steps (plugins/accel/src/chain/upsample.h): a transposed
convolution whose kernel equals its stride (U-Net's ConvTranspose 2x2 stride 2) and a Resize along
H and W (NEAREST, or LINEAR with two taps: U-Net's bilinear 2x, align_corners or half_pixel) join
the chain, so a U-Net decoder's Concat of the upsampled tensor and the skip connection is written
in place and the whole network runs as one chain. Checked against CpuRef, the unchained CpuAcc
and NumPy (float64), at 1, 2, 3 and 7 threads (the same bits at each), with odd sizes and channel
counts that are not multiples of 16; what the steps do not run stays out of the chain; kernel
sets below AVX-512 form no chain and compute the same.

Tolerance: max|a - b| <= 1e-4 * max(1, max|b|) (float32 sums in different orders)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from plugnn import Network
from plugnn.descriptors import (ConvolutionDescriptor, ConvolutionOp, CoordinateTransform, LayerKind, NearestMode,
                                ResizeDescriptor, ResizeMode)

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER, THREADS, assert_close_scaled, assert_same_bits_as_one_thread, check_chained
from .common import chain_runtime as runtime
from .common import run_network as run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
needs_avx512 = pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only; "
                                                               f"this CPU's best kernels are {BEST_ISA}")

TOLERANCE = 1e-4
RNG = np.random.default_rng(19)


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert_close_scaled(actual, expected, TOLERANCE)


def inputs_of(net: Network) -> dict[str, np.ndarray]:
    return {layer.name: rand(*layer.outputs[0].shape) for layer in net.inputs}


def check(network: Network, inputs: Mapping[str, np.ndarray], **options: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """check_chained at this module's TOLERANCE: the chained plan and outputs."""
    return check_chained(network, inputs, TOLERANCE, **options)


def deconv_desc(kh: int, kw: int, **changes: Any) -> ConvolutionDescriptor:
    return ConvolutionDescriptor(op=ConvolutionOp.TRANSPOSED, strides=changes.pop("strides", (kh, kw)), **changes)


def conv3(net: Network, x: Any, cin: int, cout: int, name: str) -> Any:
    w = rand(cout, cin, 3, 3, scale=1.0 / np.sqrt(9 * cin))
    return net.add_activation(net.add_convolution2d(x, w, rand(cout), padding=1, name=name), "relu", name=name + "r")


def unet(batch: int, up: str, h: int = 12, w: int = 20, skip: int = 32, deep: int = 24) -> Network:
    """Two levels of a U-Net: conv (the skip connection, `skip` channels), max pooling, conv
    (`deep` channels), an upsampling back to the skip's size (a ConvTranspose 2x2 stride 2, or a
    Resize 2x followed by a 1x1 convolution, as torch's bilinear U-Net), the Concat [skip, up],
    conv, and a last 1x1 convolution to 2 channels (a narrow projection: the chain's last step)."""
    net = Network("unet")
    x = net.add_input("x", (batch, 3, h, w))
    s = conv3(net, conv3(net, x, 3, 16, "inc0"), 16, skip, "inc1")
    d = conv3(net, net.add_pooling2d(s, "max", 2, stride=2, name="pool"), skip, deep, "down")
    if up == "deconv":
        u = net.add_convolution(d, rand(deep, 16, 2, 2, scale=0.3), rand(16), descriptor=deconv_desc(2, 2),
                                name="up")
    else:
        coords = {"linear": CoordinateTransform.ALIGN_CORNERS, "linear_half": CoordinateTransform.PYTORCH_HALF_PIXEL,
                  "nearest": CoordinateTransform.ASYMMETRIC}[up]
        mode = ResizeMode.NEAREST if up == "nearest" else ResizeMode.LINEAR
        r = net.add_resize(d, (batch, deep, h, w), ResizeDescriptor(mode=mode, coordinates=coords,
                                                                    nearest_mode=NearestMode.FLOOR,
                                                                    scales=(1.0, 1.0, 2.0, 2.0)), name="up")
        u = net.add_convolution2d(r, rand(16, deep, 1, 1, scale=0.2), rand(16), name="up_conv")
    cat = net.add_concat([s, u], 1, name="cat")
    y = conv3(net, cat, skip + 16, 24, "dec")
    net.add_output(net.add_convolution2d(y, rand(2, 24, 1, 1), rand(2), name="head"), "y")
    return net


UPS = ["deconv", "linear", "linear_half", "nearest"]


@needs_avx512
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("up", UPS)
def test_a_unet_runs_as_one_chain_with_its_concatenation_in_place(threads: int, up: str) -> None:
    net = unet(2 if threads == 3 else 1, up)
    inputs = inputs_of(net)
    chained, out = check(net, inputs, num_threads=threads)
    assert [n.name for n in chained.layers] == ["inc0..head"]
    chain = chained.layers[0]
    convs = 5 if up == "deconv" else 6
    assert chain.descriptor.label == (
        f"blocked NCHW16c chain of {convs} convolutions, 1 pooling, 1 concatenations, "
        f"1 {'transposed convolutions' if up == 'deconv' else 'resizes'}")
    assert_same_bits_as_one_thread(net, inputs, {"y": out["y"]})


def numpy_deconv(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ConvTranspose with kernel = stride, no padding, in float64: each input pixel becomes one
    kh x kw patch."""
    n, _, h, wd = x.shape
    _, o, kh, kw = w.shape
    patches = np.einsum("nchw,coab->nohawb", x.astype(np.float64), w.astype(np.float64))
    return patches.reshape(n, o, h * kh, wd * kw) + b.astype(np.float64)[None, :, None, None]


@needs_avx512
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("kh, kw, cin, cout", [(2, 2, 24, 40), (3, 1, 16, 8), (1, 3, 48, 17), (2, 4, 33, 16)])
def test_transposed_convolutions_of_every_kernel_width_and_odd_sizes(threads: int, kh: int, kw: int, cin: int,
                                                                     cout: int) -> None:
    """conv -> ConvTranspose (kernel = stride) -> conv on a 5 x 13 map: rows of 13 input pixels
    are tiles of 28 / kw pixels and a remainder; channel counts past whole blocks (the lanes past
    the last channel stay zero for the next convolution)."""
    net = Network("deconv")
    x = net.add_input("x", (2, 16, 5, 13))
    a = conv3(net, x, 16, cin, "a")
    w, b = rand(cin, cout, kh, kw, scale=0.3), rand(cout)
    u = net.add_convolution(a, w, b, descriptor=deconv_desc(kh, kw), name="up")
    net.add_output(u, "u")
    net.add_output(net.add_convolution2d(u, rand(16, cout, 3, 3, scale=0.1), padding=1, name="c"), "y")
    inputs = inputs_of(net)
    chained, out = check(net, inputs, num_threads=threads)
    assert [n.name for n in chained.layers] == ["a..c"]
    assert_same_bits_as_one_thread(net, inputs, out)


@needs_avx512
def test_a_transposed_convolution_matches_numpy() -> None:
    """The chain's input goes through a ConvTranspose 2x2 stride 2 and a 3x3 convolution; its
    exported ConvTranspose output against NumPy in float64 (the convolution before it is a 1x1
    identity with a bias, so the input is known exactly)."""
    net = Network("deconv_np")
    x = net.add_input("x", (1, 32, 7, 9))
    eye = np.eye(32, dtype=np.float32).reshape(32, 32, 1, 1)
    a = net.add_convolution2d(x, eye, name="a")
    w, b = rand(32, 24, 2, 2, scale=0.3), rand(24)
    u = net.add_convolution(a, w, b, descriptor=deconv_desc(2, 2), name="up")
    net.add_output(u, "u")
    net.add_output(net.add_convolution2d(u, rand(16, 24, 3, 3, scale=0.1), padding=1, name="c"), "y")
    inputs = inputs_of(net)
    chained, out = check(net, inputs)
    assert [n.name for n in chained.layers] == ["a..c"]
    assert_close(out["u"], numpy_deconv(inputs["x"], w, b))


def numpy_resize_linear(x: np.ndarray, oh: int, ow: int, align_corners: bool) -> np.ndarray:
    """Bilinear resize of H and W in float64 (align_corners or pytorch_half_pixel), edges clamped."""
    def taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        o = np.arange(n_out, dtype=np.float64)
        if align_corners:
            src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
        else:
            src = (o + 0.5) * n_in / n_out - 0.5 if n_out > 1 else np.full(n_out, -0.5)
        src = np.clip(src, 0, n_in - 1)
        i0 = np.floor(src).astype(int)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    h0, h1, rh = taps(x.shape[2], oh)
    w0, w1, rw = taps(x.shape[3], ow)
    xd = x.astype(np.float64)
    rows = xd[:, :, h0, :] * (1 - rh)[None, None, :, None] + xd[:, :, h1, :] * rh[None, None, :, None]
    return rows[:, :, :, w0] * (1 - rw) + rows[:, :, :, w1] * rw


@needs_avx512
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("mode, coords, size", [
    ("linear", "align_corners", (13, 11)), ("linear", "pytorch_half_pixel", (14, 10)),
    ("linear", "half_pixel", (4, 3)), ("nearest", "asymmetric", (14, 10)), ("nearest", "half_pixel", (9, 17)),
    ("nearest", "asymmetric", (7, 10)),
])
def test_resizes_along_h_and_w_of_odd_sizes(threads: int, mode: str, coords: str, size: tuple[int, int]) -> None:
    """conv (40 channels) -> Resize of a 7 x 5 map to `size` (up, down, non-integer scales) ->
    conv; the resized tensor exported too, against NumPy for the LINEAR ones that match its
    formula."""
    net = Network("resize")
    x = net.add_input("x", (2, 40, 7, 5))
    eye = np.eye(40, dtype=np.float32).reshape(40, 40, 1, 1)
    a = net.add_convolution2d(x, eye, name="a")
    oh, ow = size
    desc = ResizeDescriptor(mode=mode, coordinates=coords, nearest_mode=NearestMode.ROUND_PREFER_FLOOR,
                            scales=(1.0, 1.0, oh / 7, ow / 5))
    r = net.add_resize(a, (2, 40, oh, ow), desc, name="rs")
    net.add_output(r, "r")
    net.add_output(net.add_convolution2d(r, rand(16, 40, 3, 3, scale=0.05), padding=1, name="c"), "y")
    inputs = inputs_of(net)
    chained, out = check(net, inputs, num_threads=threads)
    assert [n.name for n in chained.layers] == ["a..c"]
    assert chained.layers[0].descriptor.label.endswith(", 1 resizes")
    if mode == "linear" and coords in ("align_corners", "pytorch_half_pixel"):
        assert_close(out["r"], numpy_resize_linear(inputs["x"], oh, ow, coords == "align_corners"))
    assert_same_bits_as_one_thread(net, inputs, out)


@needs_avx512
def test_upsamplings_the_steps_do_not_run_stay_out_of_the_chain() -> None:
    """A ConvTranspose whose kernel is not its stride (4x4 stride 2: overlapping patches), one
    with padding, one grouped, a CUBIC resize, a LINEAR resize of W only and a TF_CROP_AND_RESIZE
    one (extrapolated outputs) each end the chain before them; they run outside it."""
    cases: list[tuple[str, Any, int]] = [  # (kind, descriptor, ConvTranspose kernel)
        ("deconv", deconv_desc(4, 4, strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1)), 4),
        ("deconv", deconv_desc(2, 2, pads_begin=(1, 0)), 2),
        ("deconv", deconv_desc(2, 2, groups=2), 2),
        ("resize", ResizeDescriptor(mode=ResizeMode.CUBIC, scales=(1.0, 1.0, 2.0, 2.0)), 0),
        ("resize_w", ResizeDescriptor(mode=ResizeMode.LINEAR, scales=(1.0, 1.0, 1.0, 2.0)), 0),
        ("resize", ResizeDescriptor(mode=ResizeMode.LINEAR, coordinates=CoordinateTransform.TF_CROP_AND_RESIZE,
                                    scales=(1.0, 1.0, 2.0, 2.0), roi_start=(0, 0, -0.2, 0.1),
                                    roi_end=(1, 1, 1.1, 0.9), extrapolation_value=3.0), 0),
    ]
    for kind, desc, k in cases:
        net = Network("outside")
        x = net.add_input("x", (1, 32, 6, 8))
        a = net.add_convolution2d(x, rand(32, 32, 1, 1, scale=0.2), name="a")
        b = net.add_convolution2d(a, rand(32, 32, 3, 3, scale=0.05), padding=1, name="b")
        if kind == "deconv":
            w = rand(32, 32 // desc.groups, k, k, scale=0.2)
            u = net.add_convolution(b, w, rand(32), descriptor=desc, name="up")
        else:
            oh, ow = (6, 16) if kind == "resize_w" else (12, 16)
            u = net.add_resize(b, (1, 32, oh, ow), desc, name="up")
        c = net.add_convolution2d(u, rand(32, 32, 1, 1, scale=0.2), name="c")
        net.add_output(net.add_convolution2d(c, rand(16, 32, 3, 3, scale=0.05), padding=1, name="d"), "y")
        chained, _ = check(net, inputs_of(net))
        assert [n.name for n in chained.layers] == ["a..b", "up", "c..d"], (kind, desc)


@pytest.mark.parametrize("up", UPS)
def test_kernel_sets_below_avx512_form_no_chain_and_compute_the_same(up: str) -> None:
    net = unet(1, up, h=10, w=6)
    inputs = inputs_of(net)
    for isa in ISA_ORDER[:ISA_ORDER.index(BEST_ISA)]:
        chained, _ = check(net, inputs, isa=isa, num_threads=3)
        assert all(n.kind is not LayerKind.PRECOMPILED or "chain" not in n.descriptor.label for n in chained.layers)


K3_CASES = [  # (input channels, output channels, height, width, stride, padding, dilation)
    (16, 16, 5, 28, 1, 1, 1),       # one 28-pixel tile per row
    (24, 16, 4, 57, 1, 1, 1),       # 19-pixel tiles, the input's last block of 8 channels
    (32, 9, 6, 40, (2, 1), (1, 1, 0, 1), 1),  # two 20-pixel tiles, row stride 2, one block of 9
    (16, 12, 7, 23, 1, (2, 1), (2, 1)),       # rows dilated by 2, columns by 1
    (16, 16, 3, 17, 1, 0, 1),       # no padding: every tap row and column reads the image
]


@needs_avx512
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("case", K3_CASES)
def test_three_wide_kernels_of_one_output_block_on_wide_rows(threads: int, case: tuple[Any, ...]) -> None:
    """3-wide kernels at column stride 1 with one output block and rows of 16 to 28 pixels per
    tile (U-Net's 16-channel layers on wide maps), with a residual added and a clamp (relu6), and
    an RGB first step (3 channels in one block) of the same kind; against CpuRef and the
    unchained CpuAcc, the same bits at every thread count."""
    cin, cout, h, w, stride, padding, dilation = case
    net = Network("k3")
    x = net.add_input("x", (2, 3, h, w))
    first = net.add_convolution2d(x, rand(cin, 3, 3, 3, scale=0.3), rand(cin), padding=1, name="rgb")
    y = net.add_convolution2d(first, rand(cout, cin, 3, 3, scale=1.0 / np.sqrt(9 * cin)), rand(cout), stride=stride,
                              padding=padding, dilation=dilation, name="k3")
    y = net.add_activation(y, "bounded_relu", 0.0, 6.0, name="relu6")
    s = net.add_convolution2d(y, rand(cout, cout, 3, 3, scale=0.1), rand(cout), padding=1, name="again")
    net.add_output(net.add_add(s, y, name="residual"), "y")
    inputs = inputs_of(net)
    chained, out = check(net, inputs, num_threads=threads)
    assert len(chained.layers) == 1 and chained.layers[0].kind is LayerKind.PRECOMPILED
    assert_same_bits_as_one_thread(net, inputs, {"y": out["y"]})


@needs_avx512
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("variant", ["plain", "exported", "activation", "bias_free", "then_3x3", "nearest"])
def test_a_1x1_convolution_after_a_resize(threads: int, variant: str) -> None:
    """Resize 2x then a 1x1 convolution (torch's bilinear U-Net decoder): the chain runs the
    convolution on the smaller input and resizes its output (the same values up to the rounding
    of the interpolation weights' sum), unless the resized tensor is used elsewhere (exported),
    the convolution has an activation, or is not 1x1; each against CpuRef and the unchained
    CpuAcc, the same bits at 1 and 3 threads."""
    net = Network("resize_conv")
    x = net.add_input("x", (2, 40, 5, 9))
    a = net.add_activation(net.add_convolution2d(x, rand(40, 40, 3, 3, scale=0.05), rand(40), padding=1, name="a"),
                           "relu", name="ar")
    mode = ResizeMode.NEAREST if variant == "nearest" else ResizeMode.LINEAR
    r = net.add_resize(a, (2, 40, 10, 18), ResizeDescriptor(mode=mode, coordinates=CoordinateTransform.ALIGN_CORNERS,
                                                            scales=(1.0, 1.0, 2.0, 2.0)), name="up")
    k = 3 if variant == "then_3x3" else 1
    c = net.add_convolution2d(r, rand(24, 40, k, k, scale=0.1), None if variant == "bias_free" else rand(24),
                              padding=k // 2, name="c")
    if variant == "activation":
        c = net.add_activation(c, "sigmoid", name="cs")
    if variant == "exported":
        net.add_output(r, "r")
    net.add_output(net.add_convolution2d(c, rand(16, 24, 3, 3, scale=0.1), padding=1, name="d"), "y")
    inputs = inputs_of(net)
    chained, out = check(net, inputs, num_threads=threads)
    assert len(chained.layers) == 1 and chained.layers[0].kind is LayerKind.PRECOMPILED
    with runtime(num_threads=2) as rt:
        _, two = run(net, rt, ["CpuAcc"], inputs)
    for name in out:
        np.testing.assert_array_equal(two[name], out[name])


@needs_avx512
@pytest.mark.parametrize("act", ["relu", "sigmoid", "gelu"])
def test_a_transposed_convolution_with_its_own_activation(act: str) -> None:
    """A ConvTranspose whose descriptor carries an activation: relu as the kernel's clamp, the
    others on the rows after it (sigmoid maps 0 elsewhere: the 20 channels' last block has its
    padding lanes zeroed again, which the next convolution reads)."""
    from plugnn.descriptors import ActivationDescriptor

    net = Network("deconv_act")
    x = net.add_input("x", (1, 16, 6, 7))
    a = conv3(net, x, 16, 32, "a")
    desc = deconv_desc(2, 2, fused_activation=ActivationDescriptor(act))
    u = net.add_convolution(a, rand(32, 20, 2, 2, scale=0.3), rand(20), descriptor=desc, name="up")
    net.add_output(net.add_convolution2d(u, rand(16, 20, 3, 3, scale=0.1), rand(16), padding=1, name="c"), "y")
    inputs = inputs_of(net)
    chained, _ = check(net, inputs, num_threads=3)
    assert [n.name for n in chained.layers] == ["a..c"]


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2, 7])
def test_narrow_1x1_projections_end_a_chain_and_wider_kernels_stay_out(threads: int) -> None:
    """A 1x1 convolution to fewer than 8 channels (a segmentation head) is a chain step (16 lanes,
    its 40-channel input never unpacked), with a relu and a residual of its own shape; a 3x3 one
    to 4 channels, or a 1x1 one with padding, stays out; a convolution reading the narrow tensor
    starts a new chain (its input is one narrow block)."""
    net = Network("heads")
    x = net.add_input("x", (2, 24, 9, 11))
    a = conv3(net, x, 24, 40, "a")
    p = net.add_convolution2d(a, rand(3, 40, 1, 1, scale=0.2), rand(3), name="proj")
    q = net.add_convolution2d(a, rand(3, 40, 1, 1, scale=0.2), name="proj2")
    h = net.add_activation(net.add_add(q, p, name="res"), "relu", name="head_relu")
    net.add_output(h, "h")
    b = net.add_convolution2d(h, rand(16, 3, 3, 3, scale=0.3), rand(16), padding=1, name="b")
    net.add_output(net.add_convolution2d(b, rand(16, 16, 3, 3, scale=0.1), padding=1, name="b2"), "y")
    net.add_output(net.add_convolution2d(a, rand(4, 40, 3, 3, scale=0.1), padding=1, name="wide4"), "w")
    net.add_output(net.add_convolution2d(a, rand(4, 40, 1, 1, scale=0.1), padding=1, name="padded"), "pd")
    inputs = inputs_of(net)
    chained, out = check(net, inputs, num_threads=threads)
    names = [n.name for n in chained.layers]
    assert "a..head_relu" in names and "b..b2" in names and "wide4" in names and "padded" in names, names
    assert_same_bits_as_one_thread(net, inputs, out)


@needs_avx512
@pytest.mark.parametrize("act", ["relu", "elu"])
def test_a_transposed_convolution_and_the_activation_fused_to_it(act: str) -> None:
    """ConvTranspose -> activation layer (layer fusion makes them one item, which the chain takes
    as one step); a second ConvTranspose last in the run (its output only leaves the chain)
    runs after the chain, on NCHW."""
    net = Network("deconv_fused")
    x = net.add_input("x", (2, 16, 5, 6))
    a = conv3(net, x, 16, 32, "a")
    u = net.add_convolution(a, rand(32, 24, 2, 2, scale=0.3), rand(24), descriptor=deconv_desc(2, 2), name="up")
    u = net.add_activation(u, act, 1.0, name="up_act")
    net.add_output(net.add_convolution2d(u, rand(16, 24, 3, 3, scale=0.1), rand(16), padding=1, name="c"), "y")
    skip = net.add_input("skip", (2, 24, 10, 12))
    v = net.add_convolution(a, rand(32, 24, 2, 2, scale=0.3), rand(24), descriptor=deconv_desc(2, 2), name="up2")
    net.add_output(net.add_add(v, skip, name="res"), "z")
    inputs = inputs_of(net)
    chained, _ = check(net, inputs, num_threads=2)
    assert [n.name for n in chained.layers] == ["a..c", "up2", "res"]
    assert {"up", "up_act", "c"} <= set(chained.layers[0].replaces)


@needs_avx512
@pytest.mark.parametrize("last", ["resize", "deconv", "resize_then_concat"])
def test_an_upsampling_whose_output_only_leaves_the_chain_runs_after_it(last: str) -> None:
    """A segmentation network's final upsampling (fcn_resnet50: 21 classes from 28 x 28 to 224 x
    224) is not the chain's last step: the chain unpacks its smaller input and the resize or
    transposed convolution runs on NCHW; an upsampling that a later step of the chain reads
    stays in."""
    net = Network("final_up")
    x = net.add_input("x", (1, 16, 6, 5))
    a = conv3(net, x, 16, 32, "a")
    b = net.add_convolution2d(a, rand(21, 32, 1, 1, scale=0.2), rand(21), name="classes")
    if last == "deconv":
        up = net.add_convolution(b, rand(21, 21, 2, 2, scale=0.3), rand(21), descriptor=deconv_desc(2, 2), name="up")
    else:
        up = net.add_resize(b, (1, 21, 24, 20), ResizeDescriptor(mode=ResizeMode.LINEAR, scales=(1.0, 1.0, 4.0, 4.0)),
                            name="up")
    if last == "resize_then_concat":
        skip = net.add_resize(a, (1, 32, 24, 20), ResizeDescriptor(mode=ResizeMode.NEAREST, scales=(1.0, 1.0, 4.0, 4.0)),
                              name="skip_up")
        up = net.add_concat([skip, up], 1, name="cat")
    net.add_output(up, "y")
    chained, _ = check(net, inputs_of(net), num_threads=2)
    names = [n.name for n in chained.layers]
    assert names == (["a..cat"] if last == "resize_then_concat" else ["a..classes", "up"]), names
