"""CpuAcc's blocked chains with grouped convolutions and squeeze-and-excitation
(plugins/accel/src/ops/conv_nchwc.h, "Grouped convolutions"; chain_run.h): which layers join a chain,
and that the chains compute what a float64 NumPy oracle computes, with the same bits at 1, 2, 3
and 7 threads; the same networks on the AVX2 and portable kernel sets (no chains there) against
the same oracle.

Tolerance: max|a - b| <= 1e-4 * max(1, max|b|) (float32 sums in other orders)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import Network
from plugnn.descriptors import LayerKind

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER, THREADS

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
needs_avx512 = pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only; "
                                                               f"this CPU's best kernels are {BEST_ISA}")
ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
TOLERANCE = 1e-4
RNG = np.random.default_rng(27)


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# ---- the float64 oracle ------------------------------------------------------------------------


def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int = 1, pad: int = 0, dilation: int = 1,
         groups: int = 1) -> np.ndarray:
    """NCHW convolution in float64, weights [o, c / groups, kh, kw]."""
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, cg, kh, kw = w.shape
    span_h, span_w = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    win = np.lib.stride_tricks.sliding_window_view(x, (span_h, span_w), axis=(2, 3))
    win = win[:, :, ::stride, ::stride, ::dilation, ::dilation]  # n c oh ow kh kw
    og = o // groups
    out = np.concatenate([np.einsum("nchwij,ocij->nohw", win[:, g * cg:(g + 1) * cg],
                                    np.asarray(w[g * og:(g + 1) * og], np.float64)) for g in range(groups)], axis=1)
    return out if b is None else out + np.asarray(b, np.float64)[None, :, None, None]


def act(kind: str, x: np.ndarray) -> np.ndarray:
    if kind == "relu":
        return np.maximum(x, 0.0)
    if kind == "swish":
        return x / (1.0 + np.exp(-x))
    if kind == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if kind == "hard_sigmoid":  # alpha 1/6, beta 1/2 (MobileNetV3)
        return np.clip(x / 6.0 + 0.5, 0.0, 1.0)
    raise ValueError(kind)


def add_act(net: Network, h: Any, kind: str, name: str) -> Any:
    if kind == "hard_sigmoid":
        return net.add_activation(h, kind, alpha=1.0 / 6.0, beta=0.5, name=name)
    return net.add_activation(h, kind, alpha=1.0, name=name)


# ---- running ------------------------------------------------------------------------------------


def assert_close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    scale = max(1.0, float(np.abs(expected).max()))
    err = float(np.abs(actual.astype(np.float64) - expected).max())
    assert err <= TOLERANCE * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


def chains_of(optimized: Any) -> list[Any]:
    return [n for n in optimized.layers if n.kind is LayerKind.PRECOMPILED]


def run_everywhere(net: Network, inputs: Mapping[str, np.ndarray], expected: np.ndarray) -> list[Any]:
    """Runs `net` on every kernel set at every thread count; returns the chains of the plan at the
    best kernel set. Each kernel set matches `expected`, and gives the same bits at every count."""
    plans: list[Any] = []
    for isa in ISAS:
        first = None
        for n in THREADS:
            with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa,
                                                            "flush_denormals": "0"}}) as rt:
                optimized = plugnn.optimize(net, rt, ["CpuAcc"])
                with rt.load_network(optimized) as loaded:
                    y = loaded.run(dict(inputs))["y"].copy()
            if first is None:
                first = y
                assert_close(y, expected, f"isa={isa}")
                if isa == BEST_ISA:
                    plans = chains_of(optimized)
                elif isa != "avx512":
                    assert chains_of(optimized) == []
            else:
                np.testing.assert_array_equal(y, first, err_msg=f"isa={isa}: {n} threads differ from {THREADS[0]}")
    return plans


# ---- grouped convolutions -----------------------------------------------------------------------

# (input channels, output channels, groups, kernel, stride, dilation, padding, image size)
GROUPED = {
    "regnet_groups_of_8": (48, 48, 6, 3, 1, 1, 1, 14),
    "groups_of_8_stride_2_odd": (48, 48, 6, 3, 2, 1, 1, 13),
    "groups_of_8_dilated_40ch": (40, 40, 5, 3, 1, 2, 2, 9),
    "groups_of_16": (64, 64, 4, 3, 1, 1, 1, 7),
    "groups_of_24_across_blocks": (72, 72, 3, 3, 2, 1, 1, 11),
    "widening_8_to_16": (32, 64, 4, 3, 1, 1, 1, 10),
    "narrowing_5x5": (64, 32, 8, 5, 1, 1, 2, 9),
    "groups_of_4": (32, 32, 8, 3, 1, 1, 1, 8),
    "regnet_last_stage": (440, 440, 55, 3, 2, 1, 1, 14),
    "groups_of_8_1x1": (48, 96, 6, 1, 1, 1, 0, 6),
}


@pytest.mark.parametrize("case", GROUPED)
def test_grouped_convolutions_join_chains_and_match_the_oracle(case: str) -> None:
    c, o, groups, k, stride, dilation, pad, hw = GROUPED[case]
    net = Network("grouped")
    x = net.add_input("x", (2, 16, hw, hw))
    w0, b0 = rand(c, 16, 1, 1, scale=0.25), rand(c, scale=0.1)
    wg, bg = rand(o, c // groups, k, k, scale=1.0 / np.sqrt(c // groups * k * k)), rand(o, scale=0.1)
    w1 = rand(24, o, 1, 1, scale=1.0 / np.sqrt(o))
    h = net.add_activation(net.add_convolution2d(x, w0, b0, name="expand"), "relu", name="r0")
    h = net.add_activation(net.add_convolution2d(h, wg, bg, stride=stride, padding=pad, dilation=dilation,
                                                 groups=groups, name="grouped"), "relu", name="r1")
    net.add_output(net.add_convolution2d(h, w1, name="project"), "y")
    inputs = {"x": rand(2, 16, hw, hw)}
    want = act("relu", conv(inputs["x"], w0, b0))
    want = act("relu", conv(want, wg, bg, stride, pad, dilation, groups))
    want = conv(want, w1, None)
    chains = run_everywhere(net, inputs, want)
    if BEST_ISA == "avx512":
        assert [ch.replaces for ch in chains] == [("expand", "r0", "grouped", "r1", "project")]


@needs_avx512
def test_grouped_convolutions_the_blocked_kernel_declines_stay_out_of_chains() -> None:
    """Groups of 2 input channels (8 products per real one) and depthwise with multiplier 2
    run on the layer paths; the chain stops before them."""
    net = Network("declined")
    x = net.add_input("x", (1, 32, 8, 8))
    wa, wb = rand(32, 32, 1, 1, scale=0.2), rand(32, 32, 1, 1, scale=0.2)
    wp, wd = rand(32, 2, 3, 3, scale=0.3), rand(64, 1, 3, 3, scale=0.3)
    h = net.add_convolution2d(x, wa, name="a")
    h = net.add_convolution2d(h, wb, name="b")
    h = net.add_convolution2d(h, wp, padding=1, groups=16, name="pairs")
    net.add_output(net.add_convolution2d(h, wd, padding=1, groups=32, name="dw_x2"), "y")
    inputs = {"x": rand(1, 32, 8, 8)}
    want = conv(conv(conv(conv(inputs["x"], wa, None), wb, None), wp, None, pad=1, groups=16), wd, None, pad=1,
                groups=32)
    chains = run_everywhere(net, inputs, want)
    assert [ch.replaces for ch in chains] == [("a", "b")]


# ---- squeeze-and-excitation ---------------------------------------------------------------------

# (channels, squeezed channels, depthwise kernel, depthwise stride, fc1 activation, gate, scale first)
SE = {
    "efficientnet_24_to_6": (24, 6, 3, 1, "swish", "sigmoid", False),
    "mobilenet_v3_96_to_24_5x5_s2": (96, 24, 5, 2, "relu", "hard_sigmoid", True),
    "regnet_48_to_12": (48, 12, 3, 2, "relu", "sigmoid", False),
    "squeezed_to_4": (40, 4, 5, 1, "swish", "sigmoid", True),
}


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("case", SE)
def test_squeeze_and_excitation_runs_inside_one_chain(case: str, batch: int) -> None:
    """expand 1x1 + swish -> depthwise + swish -> global average pool -> fc1 1x1 + act -> fc2
    1x1 + gate -> x * gate (either operand order) -> project 1x1: one chain, its product a
    scale step; gates map 0 to 0.5, so the chain zeros the empty lanes after them."""
    c, r, k, stride, fc1_act, gate, scale_first = SE[case]
    hw = 11
    net = Network("se")
    x = net.add_input("x", (batch, 16, hw, hw))
    we, be = rand(c, 16, 1, 1, scale=0.3), rand(c, scale=0.1)
    wd, bd = rand(c, 1, k, k, scale=0.3), rand(c, scale=0.1)
    w1, b1 = rand(r, c, 1, 1, scale=1.0 / np.sqrt(c)), rand(r, scale=0.1)
    w2, b2 = rand(c, r, 1, 1, scale=1.0 / np.sqrt(r)), rand(c, scale=0.1)
    wp, bp = rand(20, c, 1, 1, scale=1.0 / np.sqrt(c)), rand(20, scale=0.1)
    h = add_act(net, net.add_convolution2d(x, we, be, name="expand"), "swish", "a0")
    h = add_act(net, net.add_convolution2d(h, wd, bd, stride=stride, padding=k // 2, groups=c, name="dw"), "swish",
                "a1")
    s = net.add_global_pooling2d(h, "average", name="squeeze")
    s = add_act(net, net.add_convolution2d(s, w1, b1, name="fc1"), fc1_act, "a2")
    s = add_act(net, net.add_convolution2d(s, w2, b2, name="fc2"), gate, "gate")
    h = net.add_mul(s, h, name="excite") if scale_first else net.add_mul(h, s, name="excite")
    net.add_output(net.add_convolution2d(h, wp, bp, name="project"), "y")
    inputs = {"x": rand(batch, 16, hw, hw)}
    e = act("swish", conv(inputs["x"], we, be))
    e = act("swish", conv(e, wd, bd, stride, k // 2, 1, c))
    g = e.mean(axis=(2, 3), keepdims=True)
    g = act(gate, conv(act(fc1_act, conv(g, w1, b1)), w2, b2))
    want = conv(e * g, wp, bp)
    chains = run_everywhere(net, inputs, want)
    if BEST_ISA == "avx512":
        assert len(chains) == 1 and "excite" in chains[0].replaces and "gate" in chains[0].replaces
        assert chains[0].descriptor.label.endswith("1 pooling, 1 scales")


@needs_avx512
def test_a_product_that_is_not_a_channel_scale_stays_out_of_chains() -> None:
    """x * y of two full tensors, and x * s with s broadcast along channels ([N, 1, H, W]), are
    not channel scales."""
    net = Network("products")
    x = net.add_input("x", (1, 32, 6, 6))
    m = net.add_input("m", (1, 1, 6, 6))
    w0, w1, w2 = rand(32, 32, 1, 1, scale=0.2), rand(32, 32, 1, 1, scale=0.2), rand(32, 32, 1, 1, scale=0.2)
    a = net.add_convolution2d(x, w0, name="a")
    b = net.add_convolution2d(a, w1, name="b")
    h = net.add_mul(a, b, name="full")
    h = net.add_mul(h, m, name="spatial")
    net.add_output(net.add_convolution2d(h, w2, name="c"), "y")
    inputs = {"x": rand(1, 32, 6, 6), "m": rand(1, 1, 6, 6)}
    ea = conv(inputs["x"], w0, None)
    want = conv(ea * conv(ea, w1, None) * inputs["m"].astype(np.float64), w2, None)
    chains = run_everywhere(net, inputs, want)
    assert [ch.replaces for ch in chains] == [("a", "b")]


# ---- depthwise steps of any kernel -------------------------------------------------------------

DEPTHWISE = [(kh, kw, stride, dilation, width)
             for kh, kw in ((5, 5), (7, 7)) for stride in (1, 2) for dilation in (1, 2) for width in (3, 7, 13)]
DEPTHWISE += [(3, 3, 1, 1, 7), (3, 3, 2, 1, 9), (4, 4, 1, 1, 11), (9, 9, 1, 1, 10), (1, 7, 1, 1, 17), (7, 1, 2, 1, 6),
              (5, 5, 1, 3, 12), (7, 7, 1, 1, 28)]


@pytest.mark.parametrize("kh, kw, stride, dilation, width", DEPTHWISE)
def test_depthwise_steps_of_any_kernel(kh: int, kw: int, stride: int, dilation: int, width: int) -> None:
    """expand 1x1 -> depthwise kh x kw (+ swish) -> project 1x1 on 40 channels (the last block
    half full), 'same' padding, widths that leave every tail of the 8-pixel tiles (a 3- or
    7-pixel row is one narrow tile)."""
    c = 40
    net = Network("dw")
    x = net.add_input("x", (2, 16, 9, width))
    we, wd, bd = rand(c, 16, 1, 1, scale=0.25), rand(c, 1, kh, kw, scale=1.0 / np.sqrt(kh * kw)), rand(c, scale=0.1)
    wp = rand(24, c, 1, 1, scale=1.0 / np.sqrt(c))
    pad_h, pad_w = dilation * (kh - 1) // 2, dilation * (kw - 1) // 2
    h = net.add_convolution2d(x, we, name="expand")
    h = add_act(net, net.add_convolution2d(h, wd, bd, stride=stride, padding=(pad_h, pad_w), dilation=dilation,
                                           groups=c, name="dw"), "swish", "act")
    net.add_output(net.add_convolution2d(h, wp, name="project"), "y")
    inputs = {"x": rand(2, 16, 9, width)}
    e = conv(inputs["x"], we, None)
    e = np.pad(e, ((0, 0), (0, 0), (pad_h, pad_h), (pad_w, pad_w)))
    d = conv_2d(e, wd, bd, stride, dilation, c)
    want = conv(act("swish", d), wp, None)
    chains = run_everywhere(net, inputs, want)
    if BEST_ISA == "avx512":
        assert [ch.replaces for ch in chains] == [("expand", "dw", "act", "project")]


def conv_2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, dilation: int, groups: int) -> np.ndarray:
    """conv() for a padded x and a kh x kw kernel (kh != kw allowed)."""
    o, cg, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(np.asarray(x, np.float64), ((kh - 1) * dilation + 1,
                                                                               (kw - 1) * dilation + 1), axis=(2, 3))
    win = win[:, :, ::stride, ::stride, ::dilation, ::dilation]
    og = o // groups
    out = np.concatenate([np.einsum("nchwij,ocij->nohw", win[:, g * cg:(g + 1) * cg],
                                    np.asarray(w[g * og:(g + 1) * og], np.float64)) for g in range(groups)], axis=1)
    return out + np.asarray(b, np.float64)[None, :, None, None]


# ---- dilated convolutions on small maps: tap columns outside the image skipped -------------------

DILATED = [(12, 14, 1, 1), (6, 14, 1, 1), (4, 9, 1, 1), (12, 14, 2, 1), (3, 17, 1, 2), (18, 14, 1, 1), (2, 30, 1, 1)]


@pytest.mark.parametrize("rate, width, stride, batch", DILATED)
def test_dilated_convolutions_on_small_maps(rate: int, width: int, stride: int, batch: int) -> None:
    """A 3x3 convolution dilated `rate` with 'same' padding (DeepLabV3's ASPP), in a chain and
    alone (the single-layer blocked workload): rows split where the tap columns reaching the
    image change, 40 output channels (a half-full last block), relu fused."""
    c, o = 48, 40
    wa, wd, bd = rand(c, 16, 1, 1, scale=0.25), rand(o, c, 3, 3, scale=1.0 / np.sqrt(9 * c)), rand(o, scale=0.1)
    wp = rand(16, o, 1, 1, scale=1.0 / np.sqrt(o))
    inputs = {"x": rand(batch, 16, 11, width)}
    for alone in (False, True):
        net = Network("aspp")
        x = net.add_input("x", (batch, 16, 11, width))
        h = x if alone else net.add_convolution2d(x, wa, name="reduce")
        wconv = rand(o, 16, 3, 3, scale=0.2) if alone else wd
        h = net.add_activation(net.add_convolution2d(h, wconv, bd, stride=stride, padding=rate, dilation=rate,
                                                     name="dilated"), "relu", name="relu")
        if not alone:
            h = net.add_convolution2d(h, wp, name="project")
        net.add_output(h, "y")
        e = inputs["x"] if alone else conv(inputs["x"], wa, None)
        want = act("relu", conv(e, wconv, bd, stride, rate, rate))
        if not alone:
            want = conv(want, wp, None)
        chains = run_everywhere(net, inputs, want)
        if BEST_ISA == "avx512" and not alone:
            assert [ch.replaces for ch in chains] == [("reduce", "dilated", "relu", "project")]


# ---- single layers (outside chains): the blocked depthwise and grouped workloads -----------------

SINGLE = [("dw", 48, 48, 48, 7, 1, 1, 13), ("dw", 96, 96, 96, 7, 1, 1, 7), ("dw", 40, 40, 40, 5, 2, 1, 11),
          ("dw", 32, 32, 32, 5, 1, 2, 9), ("dw", 24, 24, 24, 7, 1, 1, 6), ("grouped", 48, 48, 6, 3, 1, 1, 14),
          ("grouped", 440, 440, 55, 3, 2, 1, 9), ("grouped", 64, 32, 8, 5, 1, 1, 10),
          ("grouped", 72, 72, 3, 3, 1, 2, 8)]


@pytest.mark.parametrize("kind, c, o, groups, k, stride, dilation, hw", SINGLE)
def test_single_depthwise_and_grouped_layers_with_residual_and_activation(
        kind: str, c: int, o: int, groups: int, k: int, stride: int, dilation: int, hw: int) -> None:
    """One convolution (no chain: nothing to chain it with), a residual added and relu fused
    where the shapes allow: depthwise 5x5 and 7x7 and grouped layers on the blocked single-layer
    workload (AVX-512; 24 channels stay on depthwise.c: their blocks do not pay), the other
    kernel sets on theirs."""
    pad = dilation * (k - 1) // 2
    net = Network("single")
    x = net.add_input("x", (2, c, hw, hw))
    w, b = rand(o, c // groups, k, k, scale=1.0 / np.sqrt(c // groups * k * k)), rand(o, scale=0.1)
    h = net.add_convolution2d(x, w, b, stride=stride, padding=pad, dilation=dilation, groups=groups, name="conv")
    inputs = {"x": rand(2, c, hw, hw)}
    want = conv(inputs["x"], w, b, stride, pad, dilation, groups)
    if stride == 1 and o == c:
        h = net.add_add(h, x, name="residual")
        want = want + inputs["x"].astype(np.float64)
    net.add_output(net.add_activation(h, "relu", name="relu"), "y")
    chains = run_everywhere(net, inputs, act("relu", want))
    assert chains == []


# ---- SiLU in chains ---------------------------------------------------------------------------------


def ulps(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|actual - exact| in float32 ulps of the exact value (2^-149 in the subnormals)."""
    mag = np.maximum(np.abs(exact), np.float64(np.finfo(np.float32).tiny))
    ulp = np.exp2(np.floor(np.log2(mag)) - 23)
    return np.abs(actual.astype(np.float64) - exact) / ulp


@needs_avx512
def test_silu_in_chains_keeps_the_swish_accuracy() -> None:
    """SiLU (SWISH, alpha 1) after a chain's convolutions runs its own AVX-512 row: every 4099th
    float32 bit pattern through two depthwise 1x1 convolutions of weight 1 (exact: each channel
    alone), the first with SiLU fused. Within 3.5 ulp where x >= -87 (SWISH's bound in
    plugins/accel/README.md); below, sigmoid's factor is subnormal (fewer bits): within 2^-126 of
    the exact value there; NaN gives NaN, inf inf, -inf NaN (-inf * 0, as the formula)."""
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x[np.isfinite(x)], np.float32([0.0, 1.0, -1.0, 88.0, -88.0, -104.0, -120.0]),
                        np.float32([np.nan, np.inf, -np.inf])])
    per_image = 16 * 64 * 64
    x = np.concatenate([x, np.zeros(-len(x) % per_image, np.float32)]).reshape(-1, 16, 64, 64)
    ones = np.ones((16, 1, 1, 1), np.float32)
    net = Network("silu")
    h = net.add_input("x", x.shape)
    h = add_act(net, net.add_convolution2d(h, ones, groups=16, name="c1"), "swish", "silu")
    net.add_output(net.add_convolution2d(h, ones, groups=16, name="c2"), "y")
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2, "flush_denormals": "0"}}) as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc"])
        assert [ch.replaces for ch in chains_of(optimized)] == [("c1", "silu", "c2")]
        with rt.load_network(optimized) as loaded:
            y = loaded.run({"x": x})["y"].astype(np.float64).reshape(-1)
    xd = x.astype(np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        exact = xd / (1.0 + np.exp(-xd))
    finite = np.isfinite(xd)
    normal = finite & (xd >= -87.0)
    assert float(ulps(y[normal], exact[normal]).max()) <= 3.5
    tail = finite & (xd < -87.0)
    assert float(np.abs(y[tail] - exact[tail]).max()) <= 2.0 ** -126
    special = y[np.flatnonzero(~finite)]
    assert np.isnan(special[0]) and special[1] == np.inf and np.isnan(special[2])


@needs_avx512
def test_a_convolution_and_a_channel_scale_alone_form_no_chain() -> None:
    """conv -> x * s (s a constant [1, C, 1, 1]: a frozen batch normalization's scale) -> + b:
    two layers are faster than a chain of one convolution and its scale."""
    net = Network("frozen_bn")
    x = net.add_input("x", (1, 32, 10, 10))
    w, sc, b = rand(32, 32, 3, 3, scale=0.1), rand(1, 32, 1, 1), rand(1, 32, 1, 1)
    h = net.add_mul(net.add_convolution2d(x, w, padding=1, name="conv"), sc, name="scale")
    net.add_output(net.add_add(h, b, name="shift"), "y")
    inputs = {"x": rand(1, 32, 10, 10)}
    want = conv(inputs["x"], w, None, pad=1) * sc.astype(np.float64) + b.astype(np.float64)
    assert run_everywhere(net, inputs, want) == []


# ---- reshape: a chain with grouped and squeeze-and-excitation steps shares its packed weights ----

def frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


RESHAPE_W = {k: frozen(v) for k, v in {
    "e": rand(48, 16, 1, 1, scale=0.25), "g": rand(48, 8, 3, 3, scale=0.12), "f1": rand(12, 48, 1, 1, scale=0.15),
    "f2": rand(48, 12, 1, 1, scale=0.3), "p": rand(24, 48, 1, 1, scale=0.15)}.items()}


def regnet_block(batch: int, size: int) -> Network:
    net = Network("regnet_block")
    x = net.add_input("x", (batch, 16, size, size))
    w = {k: net.add_shared_constant(v, k) for k, v in RESHAPE_W.items()}
    h = net.add_activation(net.add_convolution2d(x, w["e"], name="expand"), "relu", name="r0")
    h = net.add_activation(net.add_convolution2d(h, w["g"], padding=1, groups=6, name="grouped"), "relu", name="r1")
    s = net.add_global_pooling2d(h, "average", name="squeeze")
    s = net.add_activation(net.add_convolution2d(s, w["f1"], name="fc1"), "relu", name="r2")
    s = add_act(net, net.add_convolution2d(s, w["f2"], name="fc2"), "sigmoid", "gate")
    net.add_output(net.add_convolution2d(net.add_mul(h, s, name="excite"), w["p"], name="project"), "y")
    return net


@needs_avx512
def test_a_reshaped_grouped_squeeze_excitation_chain_shares_its_packed_weights() -> None:
    def packed(rt: plugnn.Runtime) -> int:
        return int(rt.backend("CpuAcc").get_option("packed_weight_bytes"))

    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2}}) as rt:
        first = rt.load_network(plugnn.optimize(regnet_block(1, 9), rt, ["CpuAcc"]))
        size = packed(rt)
        second_opt = plugnn.optimize(regnet_block(2, 13), rt, ["CpuAcc"])
        assert len(chains_of(second_opt)) == 1
        second = rt.load_network(second_opt, reshape_from=[first])
        assert packed(rt) == size and second.reshaped_layers
        first.unload()
        x = {"x": rand(2, 16, 13, 13)}
        got = second.run(x)["y"].copy()
        with rt.load_network(plugnn.optimize(regnet_block(2, 13), rt, ["CpuAcc"])) as fresh:
            np.testing.assert_array_equal(got, fresh.run(x)["y"])
        second.unload()
    e = act("relu", conv(x["x"], RESHAPE_W["e"], None))
    g = act("relu", conv(e, RESHAPE_W["g"], None, pad=1, groups=6))
    s = act("sigmoid", conv(act("relu", conv(g.mean(axis=(2, 3), keepdims=True), RESHAPE_W["f1"], None)),
                            RESHAPE_W["f2"], None))
    assert_close(got, conv(g * s, RESHAPE_W["p"], None), "reshaped chain")
