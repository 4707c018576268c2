"""Blocked chains drop the taps of a convolution that read only padding for every output
(plugins/accel/src/chain/payload.c, chain_taps): DeepLabV3's ASPP (3x3 convolutions dilated 12, 24
and 36 on a 14 x 14 map, where rates 24 and 36 leave only the middle tap), asymmetric padding,
strides that step over the image, depthwise steps, and a convolution whose every tap reads
padding. Each network must compute what CpuRef computes (max|a - b| <= 1e-4 * max(1, max|b|)),
at 1, 2 and 3 threads, and the chain must have formed (AVX-512 only)."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn import Network

from .common import BEST_ISA, HAVE_CPUACC, chained_and_reference

pytestmark = [pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built"),
              pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only")]

RNG = np.random.default_rng(36)


def frozen(*shape: int) -> np.ndarray:
    a = (RNG.standard_normal(shape) * 0.2).astype(np.float32)
    a.setflags(write=False)
    return a


def aspp(size: int) -> Network:
    """A 1x1 stem, then three dilated 3x3 branches summed, as DeepLabV3's ASPP on a small map."""
    net = Network("aspp")
    x = net.add_input("x", (1, 32, size, size))
    stem = net.add_activation(net.add_convolution2d(x, net.add_shared_constant(frozen(32, 32, 1, 1), "w0"),
                                                    name="stem"), "relu", name="stem_relu")
    branches = []
    for rate in (12, 24, 36):
        y = net.add_convolution2d(stem, net.add_shared_constant(frozen(32, 32, 3, 3), f"w{rate}"),
                                  net.add_shared_constant(frozen(32), f"b{rate}"), padding=rate, dilation=rate,
                                  name=f"aspp{rate}")
        branches.append(net.add_activation(y, "relu", name=f"relu{rate}"))
    net.add_output(net.add_sum(branches, name="sum"), "y")
    return net


def odd_windows() -> Network:
    """Asymmetric padding wider than the map, a stride that steps over it, a depthwise step."""
    net = Network("odd_windows")
    x = net.add_input("x", (2, 16, 5, 7))
    y = net.add_convolution2d(x, net.add_shared_constant(frozen(16, 16, 5, 3), "w1"), padding=(9, 1, 4, 6),
                              dilation=(4, 3), name="c1")
    y = net.add_activation(y, "relu", name="r1")
    y = net.add_convolution2d(y, net.add_shared_constant(frozen(16, 1, 3, 5), "w2"), padding=(7, 8, 7, 8),
                              dilation=(7, 4), groups=16, name="dw")
    y = net.add_convolution2d(y, net.add_shared_constant(frozen(16, 16, 3, 3), "w3"), stride=3, padding=4,
                              dilation=2, name="c3")
    net.add_output(net.add_activation(y, "relu", name="r3"), "y")
    return net


def all_padding() -> Network:
    """A 1x1 map padded by 3 and dilated by 4: no tap but the middle reads it."""
    net = Network("all_padding")
    x = net.add_input("x", (1, 16, 1, 1))
    y = net.add_convolution2d(x, net.add_shared_constant(frozen(16, 16, 3, 3), "w1"), padding=4, dilation=4,
                              name="c1")
    y = net.add_convolution2d(y, net.add_shared_constant(frozen(16, 16, 3, 3), "w2"), padding=4, dilation=4,
                              name="c2")
    net.add_output(y, "y")
    return net


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("make, shape", [(lambda: aspp(14), (1, 32, 14, 14)), (lambda: aspp(9), (1, 32, 9, 9)),
                                         (odd_windows, (2, 16, 5, 7)), (all_padding, (1, 16, 1, 1))],
                         ids=["aspp 14", "aspp 9", "odd windows", "all padding"])
def test_chains_without_the_padding_taps(make, shape: tuple[int, ...], threads: int) -> None:
    x = {"x": RNG.standard_normal(shape).astype(np.float32)}
    net = make()
    got, expected = chained_and_reference(net, x, threads)
    scale = max(1.0, float(np.abs(expected).max()))
    assert float(np.abs(got - expected).max()) <= 1e-4 * scale
