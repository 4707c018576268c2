"""CpuAcc's blocked tiles for small maps (plugins/accel/src/kernels/nchwc_conv_avx512.c): for kernels 3 taps
wide (tile_edge3), tiles of whole 7- and 14-pixel rows and one-row tiles of maps up to 28 wide that
leave out the products with the padding (the columns left and right of the image, per tap
column, and the tile rows above and below it, per tap row); for 1x1 kernels (tile_pw1) the same
tile shapes at strides 1 and 2. Maps 13 and 27 wide (SqueezeNet's, AlexNet's) have instances of
their own. Lone convolutions against a float64
NumPy oracle on every kernel set and thread count (the same bits at every thread count of one
kernel set: AVX-512 runs them on the blocked kernel, AVX2 and portable on the GEMM path), and
blocked chains of them against CpuRef: even and odd output block counts (2-row tiles of two
blocks, 4-row tiles of one), channel counts that are not multiples of 16, strides 1 and 2,
dilations 2 and 4, asymmetric padding, odd map sizes, and a bias, addend and relu."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn import Network

from .common import BEST_ISA, HAVE_CPUACC, chained_and_reference, check_conv_case

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RTOL, ATOL = 1e-4, 1e-5  # float32 sums of up to 4608 unit-scale products against float64

# n, c, h, w, o, kernel, stride, padding (top, left, bottom, right), dilation
SHAPES = {
    "7x7, 32 -> 32 (2-row tiles of two blocks)": (1, 32, 7, 7, 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "7x7, 40 -> 40 (a last block of 8, 4-row tiles of one)": (2, 40, 7, 7, 40, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "7x7, 24 -> 16 (one block: 4-row tiles)": (1, 24, 7, 7, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "14x14 -> 7x7 stride 2": (1, 48, 14, 14, 64, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "13x13 -> 7x7 stride 2": (1, 33, 13, 13, 48, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "14x14, 20 -> 48 (one-row tiles of 14)": (1, 20, 14, 14, 48, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "14x14, 16 -> 16 (2-row tiles of one block)": (2, 16, 14, 14, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "28x28 -> 14x14 stride 2": (1, 32, 28, 28, 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "28x28 dilated 2": (1, 32, 28, 28, 40, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    "28x28 dilated 4": (1, 16, 28, 28, 32, (3, 3), (1, 1), (4, 4, 4, 4), (4, 4)),
    "28x28, one block (28-pixel tiles)": (1, 16, 28, 28, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "7x7 asymmetric padding": (1, 32, 7, 8, 32, (3, 3), (1, 1), (0, 2, 2, 0), (1, 1)),
    "7x5 kernel 5x3": (1, 16, 7, 7, 32, (5, 3), (1, 1), (2, 1, 2, 1), (1, 1)),
    "9x9 (no edge tile: one-row tiles of 9)": (1, 32, 9, 9, 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "1x1 on 7x7, 40 -> 72": (2, 40, 7, 7, 72, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    "1x1 on 7x7, 64 -> 16 (one block)": (1, 64, 7, 7, 16, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    "1x1 on 14x14, 48 -> 32": (1, 48, 14, 14, 32, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    "1x1 stride 2, 28x28 -> 14x14": (1, 32, 28, 28, 48, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1)),
    "1x1 stride 2, 13x13 -> 7x7": (1, 24, 13, 13, 40, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1)),
    "1x1 on 28x28, 16 -> 16 (28-pixel tiles)": (1, 16, 28, 28, 16, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    "1x1 on 28x28, 33 -> 64": (1, 33, 28, 28, 64, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    "13x13, 48 -> 72 (one-row tiles of 13 of two blocks and of one)": (1, 48, 13, 13, 72, (3, 3), (1, 1),
                                                                       (1, 1, 1, 1), (1, 1)),
    "13x13, 24 -> 16 (2-row tiles of one block, the last row alone)": (2, 24, 13, 13, 16, (3, 3), (1, 1),
                                                                       (1, 1, 1, 1), (1, 1)),
    "27x27, 16 -> 40 (tiles of 14 and 13, and of 27 for the last block)": (1, 16, 27, 27, 40, (3, 3), (1, 1),
                                                                           (1, 1, 1, 1), (1, 1)),
    "1x1 on 13x13, 64 -> 1000 (SqueezeNet's classifier: a last block of 8)": (1, 64, 13, 13, 1000, (1, 1), (1, 1),
                                                                              (0, 0, 0, 0), (1, 1)),
    "1x1 on 13x13, 40 -> 16 (one block)": (1, 40, 13, 13, 16, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    "1x1 on 27x27, 32 -> 48": (1, 32, 27, 27, 48, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
}


@pytest.mark.parametrize("name", SHAPES)
def test_small_map_conv_on_every_kernel_set_and_thread_count(runtimes: dict[tuple[str, int], plugnn.Runtime],
                                                             name: str) -> None:
    check_conv_case(runtimes, name, SHAPES[name], seed=19, rtol=RTOL, atol=ATOL)


RNG = np.random.default_rng(50)


def frozen(*shape: int) -> np.ndarray:
    a = (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
    a.setflags(write=False)
    return a


def small_map_chain(c: int, size: int) -> Network:
    """ResNet's last stage in miniature: a stride-2 3x3 to size / 2, two 3x3 with a residual (a
    stride-2 1x1 of the input), a dilated 3x3 and a 1x1, on c channels (not a multiple of 16 when
    c is odd)."""
    net = Network("small_maps")
    x = net.add_input("x", (2, c, size, size))
    y = net.add_activation(net.add_convolution2d(x, net.add_shared_constant(frozen(c, c, 3, 3), "w0"),
                                                 net.add_shared_constant(frozen(c), "b0"), stride=2, padding=1,
                                                 name="down"), "relu", name="r0")
    z = net.add_activation(net.add_convolution2d(y, net.add_shared_constant(frozen(c, c, 3, 3), "w1"),
                                                 net.add_shared_constant(frozen(c), "b1"), padding=1, name="c1"),
                           "relu", name="r1")
    z = net.add_convolution2d(z, net.add_shared_constant(frozen(c, c, 3, 3), "w2"), padding=1, name="c2")
    ds = net.add_convolution2d(x, net.add_shared_constant(frozen(c, c, 1, 1), "wd"), stride=2, name="ds")
    z = net.add_activation(net.add_sum([z, ds], name="residual"), "relu", name="r2")
    z = net.add_activation(net.add_convolution2d(z, net.add_shared_constant(frozen(c, c, 3, 3), "w3"), padding=2,
                                                 dilation=2, name="dilated"), "relu", name="r3")
    net.add_output(net.add_convolution2d(z, net.add_shared_constant(frozen(c, c, 1, 1), "w4"), name="c4"), "y")
    return net


@pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only")
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("c, size", [(32, 14), (40, 14), (48, 28), (33, 13), (40, 26), (24, 54)],
                         ids=["32 on 7", "40 on 7", "48 on 14", "33 on 7 from 13", "40 on 13", "24 on 27"])
def test_small_map_chains_match_cpuref(c: int, size: int, threads: int) -> None:
    x = {"x": np.random.default_rng(7).standard_normal((2, c, size, size)).astype(np.float32)}
    net = small_map_chain(c, size)
    got, expected = chained_and_reference(net, x, threads)
    scale = max(1.0, float(np.abs(expected).max()))
    assert float(np.abs(got - expected).max()) <= 1e-4 * scale
