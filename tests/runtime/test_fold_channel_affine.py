"""optimize() folds per-channel constant scales and shifts after a convolution into its weights
and bias (torchvision's frozen batch norms arrive as conv -> Mul -> Add), and leaves every other
case alone. The oracle is the unfolded computation in NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn import Network, Runtime, optimize

RNG = np.random.default_rng(31)
F32 = np.float32
TOLERANCE = 1e-5  # relative to max(1, |y|): a folded float32 weight rounds once more than x * w * s


@pytest.fixture(scope="module")
def runtime():
    with Runtime() as rt:
        yield rt


def conv_nchw(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, pad: int) -> np.ndarray:
    """Direct convolution, stride 1, in float64."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    y = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", x[:, :, i:i + y.shape[2], j:j + y.shape[3]], w[:, :, i, j])
    return y + (0.0 if b is None else b.astype(np.float64)[None, :, None, None])


def run(runtime: Runtime, net: Network, x: np.ndarray) -> tuple[np.ndarray, object]:
    optimized = optimize(net, runtime, ["CpuRef"])
    loaded = runtime.load_network(optimized)
    try:
        return loaded.run({"x": x})["y"], optimized
    finally:
        loaded.unload()


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    err = float(np.max(np.abs(actual.astype(np.float64) - expected)))
    assert err <= TOLERANCE * max(1.0, float(np.max(np.abs(expected)))), err


def test_scale_shift_and_subtraction_fold_into_the_convolution(runtime: Runtime) -> None:
    x = RNG.standard_normal((1, 3, 9, 9)).astype(F32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(F32)
    b = RNG.standard_normal(4).astype(F32)
    s = (RNG.random((1, 4, 1, 1)) + 0.5).astype(F32)
    t = RNG.standard_normal((4, 1, 1)).astype(F32)
    net = Network("frozen_bn")
    y = net.add_convolution2d(net.add_input("x", x.shape), w, b, padding=1, name="conv")
    y = net.add_mul(y, s, name="scale")
    y = net.add_add(t, y, name="shift")      # the constant first: either order folds
    y = net.add_sub(y, np.asarray(0.25, F32), name="minus")  # one value for every channel
    y = net.add_activation(y, "relu", name="relu")
    net.add_output(y, "y")
    out, optimized = run(runtime, net, x)
    expected = np.maximum(conv_nchw(x, w, b, 1) * s + t - 0.25, 0.0)
    assert_close(out, expected)
    conv = optimized.layers[0]
    assert [n.name for n in optimized.layers] == ["conv", "relu"]
    assert conv.replaces == ("scale", "shift", "minus")
    assert "per-channel mul 'scale' folded in" in conv.note
    removed = {r["layer"]: r["why"] for r in optimized.removed()}
    assert removed == {name: "folded into 'conv'" for name in ("scale", "shift", "minus")}
    # the replaced weights are not kept by the optimized network
    assert not any(np.shares_memory(v, w) or (v.shape == w.shape and np.array_equal(v, w))
                   for v in optimized.graph.constants.values())


def test_a_convolution_without_bias_gets_one(runtime: Runtime) -> None:
    x = RNG.standard_normal((2, 2, 6, 6)).astype(F32)
    w = RNG.standard_normal((3, 2, 1, 1)).astype(F32)
    t = RNG.standard_normal((1, 3, 1, 1)).astype(F32)
    net = Network("shift_only")
    y = net.add_add(net.add_convolution2d(net.add_input("x", x.shape), w, name="conv"), t, name="shift")
    net.add_output(y, "y")
    out, optimized = run(runtime, net, x)
    assert_close(out, conv_nchw(x, w, None, 0) + t)
    assert [n.name for n in optimized.layers] == ["conv"]


def _net(case: str) -> Network:
    w = RNG.standard_normal((4, 3, 3, 3)).astype(F32)
    net = Network(case)
    y = net.add_convolution2d(net.add_input("x", (1, 3, 6, 6)), w, name="conv")
    per_channel = (RNG.random((1, 4, 1, 1)) + 0.5).astype(F32)
    if case == "per pixel":
        out = net.add_mul(y, (RNG.random((1, 4, 4, 4)) + 0.5).astype(F32), name="op")
    elif case == "conv subtracted":
        out = net.add_sub(per_channel, y, name="op")
    elif case == "read twice":
        out = net.add_add(net.add_mul(y, per_channel, name="op"), y, name="other")
    elif case == "conv is an output":
        net.add_output(y, "conv_out")
        out = net.add_mul(y, per_channel, name="op")
    elif case == "broadcast to larger":
        out = net.add_mul(y, (RNG.random((2, 4, 1, 1)) + 0.5).astype(F32), name="op")
    elif case == "run-time operand":
        out = net.add_mul(y, net.add_input("s", (1, 4, 1, 1)), name="op")
    elif case == "division":
        out = net.add_div(y, per_channel, name="op")
    else:
        raise AssertionError(case)
    net.add_output(out, "y")
    return net


@pytest.mark.parametrize("case", ["per pixel", "conv subtracted", "read twice", "conv is an output",
                                  "broadcast to larger", "run-time operand", "division"])
def test_what_is_not_a_per_channel_affine_of_the_convolution_alone_stays(runtime: Runtime, case: str) -> None:
    optimized = optimize(_net(case), runtime, ["CpuRef"])
    names = [n.name for n in optimized.layers]
    assert "op" in names and optimized.layers[0].replaces == ()
