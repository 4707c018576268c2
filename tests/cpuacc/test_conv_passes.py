"""CpuAcc's dense convolutions in passes over the input blocks (accel_nchwc_conv_rows_passes_avx512
in plugins/accel/src/kernels/nchwc_conv_avx512.c): a convolution whose weights for a pair of output blocks
exceed ACCEL_NCHWC_PASS_BYTES (a 3x3 of more than 672 input channels: FCN's 2048 -> 512 head)
runs 16 input blocks at a time, each pass adding to the sums the one before stored. Chains of
such convolutions against CpuRef and CpuAcc without chains: input channels that end in a part
block, a residual added in the first pass and relu clamped in the last, a last output block of
8 channels (the half-width tiles), dilation (tiles split by tap columns) and stride 2; and the
same bits at every thread count."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn import Network

from .common import BEST_ISA, HAVE_CPUACC, assert_same_bits_as_one_thread, check_chained

pytestmark = [pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built"),
              pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only")]

# name: c (input channels), o (output channels), size, stride, dilation
CASES = {
    "730 -> 40 on 9x9 (last input block of 10)": (730, 40, 9, 1, 1),
    "720 -> 24 on 28x28 (half-width last output block)": (720, 24, 28, 1, 1),
    "704 -> 32 on 12x12, dilation 4": (704, 32, 12, 1, 4),
    "768 -> 48 on 15x15, stride 2": (768, 48, 15, 2, 1),
}


def passes_network(c: int, o: int, size: int, stride: int, dilation: int) -> Network:
    """x -> 3x3 (c -> o, the passes) + a 1x1 projection of x (the residual) -> relu -> 1x1 (o -> 24)."""
    rng = np.random.default_rng(c + o)

    def const(*shape: int) -> np.ndarray:
        a = (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
        a.setflags(write=False)
        return a

    net = Network("passes")
    x = net.add_input("x", (2, c, size, size))
    big = net.add_convolution2d(x, net.add_shared_constant(const(o, c, 3, 3), "w_big"),
                                net.add_shared_constant(const(o), "b_big"), stride=stride, padding=dilation,
                                dilation=dilation, name="big")
    proj = net.add_convolution2d(x, net.add_shared_constant(const(o, c, 1, 1), "w_proj"), stride=stride,
                                 name="projection")
    z = net.add_activation(net.add_sum([big, proj], name="residual"), "relu", name="relu")
    net.add_output(net.add_convolution2d(z, net.add_shared_constant(const(24, o, 1, 1), "w_head"), name="head"),
                   "y")
    return net


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("name", CASES)
def test_convolution_in_passes_matches_cpuref(name: str, threads: int) -> None:
    c, o, size, stride, dilation = CASES[name]
    net = passes_network(c, o, size, stride, dilation)
    x = {"x": np.random.default_rng(3).standard_normal((2, c, size, size)).astype(np.float32)}
    _, out = check_chained(net, x, num_threads=threads)
    if threads > 1:
        assert_same_bits_as_one_thread(net, x, out)
