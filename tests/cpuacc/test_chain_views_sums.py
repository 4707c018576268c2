"""CpuAcc's blocked chains with channel views (Slice along the channels, Split along axis 1) and
sums (an Add of two tensors of one shape) as steps (chain_run.h): YOLO's C2f blocks (a 1x1
convolution, its output cut in two halves, bottlenecks with a residual Add on the second half,
the Concat of the halves and every bottleneck's output) run as one chain, the views aliasing
their input's blocks, and compute what a float64 NumPy oracle computes, with the same bits at 1,
2, 3 and 7 threads; the same networks on the AVX2 and portable kernel sets (no chains there)
against the same oracle. Views that do not start and end on 16-channel blocks, and sums with an
operand from outside, stay out of chains (and still compute the same).

Tolerance: max|a - b| <= 1e-4 * max(1, max|b|) (float32 sums in other orders)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import Network

from .common import BEST_ISA, HAVE_CPUACC
from .test_chain_grouped_se import act, add_act, conv, rand, run_everywhere

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
needs_avx512 = pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only; "
                                                               f"this CPU's best kernels are {BEST_ISA}")


def cut(net: Network, h: Any, sizes: list[int], split: bool, name: str) -> list[Any]:
    """h cut along the channels into pieces of `sizes`: one Split, or one Slice per piece."""
    if split:
        return list(net.add_split(h, sizes, axis=1, name=name))
    pieces, at = [], 0
    for k, n in enumerate(sizes):
        pieces.append(net.add_slice(h, [at], [at + n], axes=[1], name=f"{name}_{k}"))
        at += n
    return pieces


# (input channels, hidden channels per half, bottlenecks, image height, width, batch, Split or Slices)
C2F = {
    "stem_16_slices": (16, 16, 1, 13, 11, 1, False),
    "p3_32_two_bottlenecks": (32, 32, 2, 9, 9, 2, False),
    "split_halves_odd": (24, 16, 2, 7, 13, 1, True),
    "split_32_wide": (48, 32, 1, 6, 5, 2, True),
}


@pytest.mark.parametrize("case", C2F)
def test_c2f_blocks_run_as_one_chain(case: str) -> None:
    """cv1 1x1 + SiLU -> halves a, b -> n x (3x3 + SiLU, 3x3 + SiLU, + residual) on b ->
    Concat(a, b, every bottleneck output) -> cv2 1x1 + SiLU: one chain (the halves are views of
    cv1's output, which is written into the Concat in place; the residual Adds are sum steps)."""
    c, h, n, hh, ww, batch, split = C2F[case]
    net = Network("c2f")
    x = net.add_input("x", (batch, c, hh, ww))
    w1, b1 = rand(2 * h, c, 1, 1, scale=1.0 / np.sqrt(c)), rand(2 * h, scale=0.1)
    wb = [(rand(h, h, 3, 3, scale=1.0 / np.sqrt(9 * h)), rand(h, scale=0.1),
           rand(h, h, 3, 3, scale=1.0 / np.sqrt(9 * h)), rand(h, scale=0.1)) for _ in range(n)]
    w2, b2 = rand(40, (2 + n) * h, 1, 1, scale=1.0 / np.sqrt((2 + n) * h)), rand(40, scale=0.1)
    t = add_act(net, net.add_convolution2d(x, w1, b1, name="cv1"), "swish", "a1")
    a, b = cut(net, t, [h, h], split, "halves")
    parts = [a, b]
    for k, (wa, ba, wc, bc) in enumerate(wb):
        m = add_act(net, net.add_convolution2d(parts[-1], wa, ba, padding=1, name=f"m{k}a"), "swish", f"s{k}a")
        m = add_act(net, net.add_convolution2d(m, wc, bc, padding=1, name=f"m{k}b"), "swish", f"s{k}b")
        parts.append(net.add_add(parts[-1], m, name=f"res{k}"))
    cat = net.add_concat(parts, axis=1, name="cat")
    net.add_output(add_act(net, net.add_convolution2d(cat, w2, b2, name="cv2"), "swish", "a2"), "y")
    inputs = {"x": rand(batch, c, hh, ww)}
    e = act("swish", conv(inputs["x"], w1, b1))
    ref = [e[:, :h], e[:, h:]]
    for wa, ba, wc, bc in wb:
        m = act("swish", conv(act("swish", conv(ref[-1], wa, ba, pad=1)), wc, bc, pad=1))
        ref.append(ref[-1] + m)
    want = act("swish", conv(np.concatenate(ref, axis=1), w2, b2))
    chains = run_everywhere(net, inputs, want)
    if BEST_ISA == "avx512":
        assert len(chains) == 1
        names = chains[0].replaces
        assert names[0] == "cv1" and names[-1] == "a2" and "cat" in names and "res0" in names
        assert chains[0].descriptor.label.endswith(f"2 views, {n} sums")


# (channels, pieces, Split or Slices, expected in the chain)
VIEWS = {
    "tail_piece_of_40": (40, [32, 8], False, True),
    "split_16_24_of_40": (40, [16, 24], True, True),
    "three_pieces_48": (48, [16, 16, 16], True, True),
    "unaligned_8_32": (40, [8, 32], True, False),
    "unaligned_slices_24_24": (48, [24, 24], False, False),
}


@pytest.mark.parametrize("case", VIEWS)
def test_views_of_any_channel_count(case: str) -> None:
    """A 1x1 convolution cut into pieces, each through its own 3x3 convolution (odd sizes),
    the results summed into one: pieces that start on a 16-channel block and end on one or at
    the last channel are views in the chain; others leave the cut outside (the convolutions
    before it in a chain of their own, those after it maybe in another), and every kernel set
    matches the oracle."""
    c, sizes, split, in_chain = VIEWS[case]
    net = Network("views")
    x = net.add_input("x", (2, 16, 7, 9))
    w0, b0 = rand(c, 16, 1, 1, scale=0.25), rand(c, scale=0.1)
    w00 = rand(c, c, 1, 1, scale=1.0 / np.sqrt(c))
    wp = [rand(24, n, 3, 3, scale=1.0 / np.sqrt(9 * n)) for n in sizes]
    t = net.add_activation(net.add_convolution2d(x, w0, b0, name="c0"), "relu", name="r0")
    t = net.add_convolution2d(t, w00, name="c1")
    pieces = cut(net, t, sizes, split, "cut")
    outs = [net.add_convolution2d(p, w, padding=1, name=f"p{k}") for k, (p, w) in enumerate(zip(pieces, wp))]
    s = outs[0]
    for k, o in enumerate(outs[1:]):
        s = net.add_add(s, o, name=f"sum{k}")
    net.add_output(s, "y")
    inputs = {"x": rand(2, 16, 7, 9)}
    e = conv(act("relu", conv(inputs["x"], w0, b0)), w00, None)
    want, at = 0.0, 0
    for n, w in zip(sizes, wp):
        want = want + conv(e[:, at:at + n], w, None, pad=1)
        at += n
    chains = run_everywhere(net, inputs, want)
    if BEST_ISA == "avx512":
        names = [ch.replaces for ch in chains]
        if in_chain:
            assert len(names) == 1 and "p0" in names[0] and f"sum{len(sizes) - 2}" in names[0]
        else:
            assert names[0] == ("c0", "r0", "c1") and not any(n.startswith("cut") for ch in names for n in ch)


@needs_avx512
def test_views_exported_reordered_and_of_views() -> None:
    """A view that is also a network output, a Concat of the halves in swapped order (copied,
    not merged), and a view of a view: every one computed, the chain keeps the swapped Concat."""
    net = Network("views2")
    x = net.add_input("x", (1, 16, 5, 6))
    w0 = rand(64, 16, 1, 1, scale=0.25)
    w1 = rand(32, 64, 1, 1, scale=1.0 / 8)
    w2 = rand(16, 16, 3, 3, scale=1.0 / 12)
    t = net.add_convolution2d(x, w0, name="c0")
    lo, hi = cut(net, t, [32, 32], False, "half")
    q = net.add_slice(hi, [16], [32], axes=[1], name="quarter")
    swapped = net.add_concat([hi, lo], axis=1, name="swap")
    u = net.add_convolution2d(swapped, w1, name="c1")
    v = net.add_convolution2d(q, w2, padding=1, name="c2")
    net.add_output(net.add_add(net.add_slice(u, [0], [16], axes=[1], name="u16"), v, name="sum"), "y")
    net.add_output(lo, "lo")
    inputs = {"x": rand(1, 16, 5, 6)}
    e = conv(inputs["x"], w0, None)
    eu = conv(np.concatenate([e[:, 32:], e[:, :32]], axis=1), w1, None)
    want = eu[:, :16] + conv(e[:, 48:64], w2, None, pad=1)
    chains = run_everywhere(net, inputs, want)
    assert len(chains) == 1 and "swap" in chains[0].replaces and "quarter" in chains[0].replaces
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2}}) as rt:
        with rt.load_network(plugnn.optimize(net, rt, ["CpuAcc"])) as loaded:
            got = loaded.run(dict(inputs))["lo"]
    np.testing.assert_allclose(got, e[:, :32], rtol=1e-4, atol=1e-4)


@needs_avx512
def test_a_sum_with_an_operand_from_outside_stays_out_of_chains() -> None:
    """conv -> conv + relu -> + m (m a network input) -> conv: the Add would pack m into the
    chain, so it ends the chain (the Add after the activation: one before it would be the
    convolution's fused residual)."""
    net = Network("outside")
    x = net.add_input("x", (1, 32, 6, 6))
    m = net.add_input("m", (1, 32, 6, 6))
    w0, w1, w2 = rand(32, 32, 1, 1, scale=0.2), rand(32, 32, 1, 1, scale=0.2), rand(32, 32, 1, 1, scale=0.2)
    a = net.add_convolution2d(x, w0, name="a")
    b = net.add_activation(net.add_convolution2d(a, w1, name="b"), "relu", name="r")
    h = net.add_add(b, m, name="outside")
    net.add_output(net.add_convolution2d(h, w2, name="c"), "y")
    inputs = {"x": rand(1, 32, 6, 6), "m": rand(1, 32, 6, 6)}
    want = conv(act("relu", conv(conv(inputs["x"], w0, None), w1, None)) + inputs["m"].astype(np.float64), w2, None)
    chains = run_everywhere(net, inputs, want)
    assert [ch.replaces for ch in chains] == [("a", "b", "r")]


@pytest.mark.parametrize("kind", ["relu", "sigmoid", "tanh"])
def test_sums_with_a_fused_activation(kind: str) -> None:
    """Sums whose layer carries a fused activation, on 40 channels (a half-full last block):
    relu as the clamp, tanh after it on the rows, sigmoid (0 -> 0.5) after it and the empty
    lanes zeroed again; the sum is read by a 3x3 convolution, so lanes left nonzero would show."""
    from plugnn.descriptors import ActivationDescriptor, ElementwiseBinaryDescriptor, LayerKind
    net = Network("sum_act")
    x = net.add_input("x", (2, 16, 7, 6))
    w0, w1 = rand(40, 16, 1, 1, scale=0.25), rand(40, 40, 3, 3, scale=1.0 / np.sqrt(360))
    w2 = rand(24, 40, 3, 3, scale=1.0 / np.sqrt(360))
    a = net.add_activation(net.add_convolution2d(x, w0, name="c0"), "relu", name="r0")
    b = net.add_activation(net.add_convolution2d(a, w1, padding=1, name="c1"), "relu", name="r1")
    (h,) = net.add_layer(LayerKind.ELEMENTWISE_BINARY,
                         ElementwiseBinaryDescriptor("add", ActivationDescriptor(kind, alpha=1.0)), [a, b], name="sum")
    net.add_output(net.add_convolution2d(h, w2, padding=1, name="c2"), "y")
    inputs = {"x": rand(2, 16, 7, 6)}
    ea = act("relu", conv(inputs["x"], w0, None))
    s = ea + act("relu", conv(ea, w1, None, pad=1))
    s = {"relu": lambda v: np.maximum(v, 0.0), "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)), "tanh": np.tanh}[kind](s)
    want = conv(s, w2, None, pad=1)
    chains = run_everywhere(net, inputs, want)
    if BEST_ISA == "avx512":
        assert [ch.replaces for ch in chains] == [("c0", "r0", "c1", "r1", "sum", "c2")]


def maxpool3(x: np.ndarray) -> np.ndarray:
    """3x3 max pooling, stride 1, padding 1 (the padding never wins)."""
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(p, (3, 3), axis=(2, 3))
    return win.max(axis=(-2, -1))


@pytest.mark.parametrize("batch, hw", [(1, 14), (2, 7), (1, 9)])
def test_inception_branches_run_as_groups_with_the_same_bits_at_every_thread_count(batch: int, hw: int) -> None:
    """Two inception modules (1x1; 1x1 -> 3x3; 1x1 of 16 channels -> 5x5; 3x3 max pool -> 1x1;
    Concat, the last branch 40 channels): on 2+ threads their branches run by level, each level
    one loop (chain_schedule), and the results are the oracle's and the same bits at 1, 2, 3 and
    7 threads."""
    net = Network("inception")
    x = net.add_input("x", (batch, 48, hw, hw))
    inputs = {"x": rand(batch, 48, hw, hw)}
    h, ref = x, inputs["x"].astype(np.float64)
    for m, (c1, r3, c3, r5, c5, cp) in enumerate(((32, 24, 32, 16, 16, 40), (48, 32, 48, 16, 32, 40))):
        c = ref.shape[1]
        w = {k: (rand(o, i, s, s, scale=1.0 / np.sqrt(i * s * s)), rand(o, scale=0.1)) for k, (o, i, s) in {
            "b1": (c1, c, 1), "r3": (r3, c, 1), "b3": (c3, r3, 3), "r5": (r5, c, 1), "b5": (c5, r5, 5),
            "bp": (cp, c, 1)}.items()}

        def unit(t: Any, k: str, pad: int = 0) -> Any:
            return net.add_activation(net.add_convolution2d(t, *w[k], padding=pad, name=f"m{m}{k}"), "relu",
                                      name=f"m{m}{k}r")

        b1 = unit(h, "b1")
        b3 = unit(unit(h, "r3"), "b3", 1)
        b5 = unit(unit(h, "r5"), "b5", 2)
        bp = unit(net.add_pooling2d(h, "max", 3, stride=1, padding=1, name=f"m{m}pool"), "bp")
        h = net.add_concat([b1, b3, b5, bp], 1, name=f"m{m}cat")

        def f(t: np.ndarray, k: str, pad: int = 0) -> np.ndarray:
            return act("relu", conv(t, *w[k], pad=pad))

        ref = np.concatenate([f(ref, "b1"), f(f(ref, "r3"), "b3", 1), f(f(ref, "r5"), "b5", 2),
                              f(maxpool3(ref), "bp")], axis=1)
    net.add_output(h, "y")
    chains = run_everywhere(net, inputs, ref)
    if BEST_ISA == "avx512":
        assert len(chains) == 1 and chains[0].replaces[0] == "m0b1" and chains[0].replaces[-1] == "m1cat"
