"""Data movement in place (python/plugnn/movement_views.py, PN_BACKEND_MOVES_IN_PLACE): on CpuAcc,
the producers of a batch-1 channel Concat's inputs write straight into its output, a dense
block's chain of Concats (each the previous one's inputs plus one more) are all views of the
last one, and a Slice or Split output that is one block of its input is read where it lies. The
results are those of the same network with every such layer copying (placed on CpuRef, which
does not set the flag), bit for bit, at 1 and 2 threads; what may not be a view (batch 2, an
unaligned block, a strided slice, a graph input or output) is not."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import plugnn
from plugnn import Network

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(27112026)


def rand(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def dense_block(batch: int = 1, channels: int = 16, growth: int = 16, layers: int = 3, hw: int = 9,
                export_input: bool = False) -> tuple[Network, list[str]]:
    """x -> relu -> r0; per layer k: f_k = conv(relu(concat(r0, f_1..f_{k-1}))); y = relu(the last
    concat). Returns the network and the Concat layers' names."""
    net = Network("dense")
    x = net.add_input("x", (batch, channels, hw, hw))
    r0 = net.add_activation(x, "relu", name="r0")
    feats = [r0]
    concats = []
    c = channels
    for k in range(layers):
        inp = feats[0] if k == 0 else net.add_concat(feats, axis=1, name=f"cat{k}")
        if k > 0:
            concats.append(f"cat{k}")
        h = net.add_activation(inp, "relu", name=f"pre{k}")
        f = net.add_convolution2d(h, rand(growth, c, 3, 3), rand(growth), padding=1, name=f"conv{k}")
        feats.append(f)
        c += growth
    last = net.add_concat(feats, axis=1, name="cat_last")
    concats.append("cat_last")
    net.add_output(net.add_activation(last, "relu", name="y_relu"), "y")
    if export_input:
        net.add_output(r0, "r0_out")
    return net, concats


def run(net: Network, x: np.ndarray, threads: int, overrides: dict[str, str] | None = None) \
        -> tuple[dict[str, np.ndarray], int]:
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": threads}}) as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"], overrides=overrides or {})
        with rt.load_network(optimized) as loaded:
            first = loaded.run({"x": x})
            second = loaded.run({"x": x})
            for k in first:
                np.testing.assert_array_equal(first[k], second[k])
            return first, len(loaded.movement_views)


def on_cpuref(names: Sequence[str]) -> dict[str, str]:
    return {n: "CpuRef" for n in names}


@pytest.mark.parametrize("threads", [1, 2])
def test_dense_block_concats_are_views_and_compute_the_same(threads: int) -> None:
    net, concats = dense_block()
    x = rand(1, 16, 9, 9)
    ours, views = run(net, x, threads)
    copied, no_views = run(net, x, threads, on_cpuref(concats))
    # r0 and the 3 features live in the last concat; cat1 and cat2 are its prefixes
    assert views == 6 and no_views == 0
    np.testing.assert_array_equal(ours["y"], copied["y"])


def test_views_only_where_a_block_is_contiguous_and_aligned() -> None:
    # batch 2: an input is not one block of the output
    net, _ = dense_block(batch=2)
    x = rand(2, 16, 9, 9)
    ours, views = run(net, x, 1)
    assert views == 0
    # 3 channels of 5 x 5 floats: 300 bytes, so only the block at offset 0 may be a view
    net2 = Network("unaligned")
    a = net2.add_activation(net2.add_input("x", (1, 3, 5, 5)), "relu", name="a")
    b = net2.add_activation(a, "sigmoid", name="b")
    cat = net2.add_concat([a, b], axis=1, name="cat")
    net2.add_output(net2.add_activation(cat, "tanh", name="t"), "y")
    x2 = rand(1, 3, 5, 5)
    out, views2 = run(net2, x2, 2)
    assert views2 == 1
    r = np.maximum(x2, 0)
    np.testing.assert_allclose(out["y"], np.tanh(np.concatenate([r, 1 / (1 + np.exp(-r))], axis=1)),
                               rtol=1e-5, atol=1e-6)


def test_graph_inputs_and_outputs_are_never_views() -> None:
    net, concats = dense_block(export_input=True)
    x = rand(1, 16, 9, 9)
    ours, views = run(net, x, 1)
    # r0, a graph output, is copied by each Concat, so the earlier Concats cannot be prefixes of the
    # last (r0 reaches it only when the last one runs): the three features are the views
    assert views == 3
    copied, _ = run(net, x, 1, on_cpuref(concats))
    np.testing.assert_array_equal(ours["y"], copied["y"])
    np.testing.assert_array_equal(ours["r0_out"], np.maximum(x, 0))
    # a Concat whose output is the graph's output: its inputs get buffers of their own
    net2 = Network("out")
    a = net2.add_activation(net2.add_input("x", (1, 16, 4, 4)), "relu", name="a")
    b = net2.add_activation(a, "sigmoid", name="b")
    net2.add_output(net2.add_concat([a, b], axis=1, name="cat"), "y")
    x2 = x[:, :, :4, :4].copy()
    out, views2 = run(net2, x2, 1)
    assert views2 == 0
    r = np.maximum(x2, 0)
    np.testing.assert_allclose(out["y"], np.concatenate([r, 1 / (1 + np.exp(-r))], axis=1), rtol=1e-5, atol=1e-6)


def shuffle_unit(split: bool, step: int = 1, batch: int = 1) -> tuple[Network, list[str]]:
    """ShuffleNet V2's unit: x -> relu -> r; halves of r (two Slices or a Split); the second half
    through a 1x1 convolution; Concat of the first half and it; relu -> y."""
    net = Network("unit")
    r = net.add_activation(net.add_input("x", (batch, 32, 6, 6)), "relu", name="r")
    if split:
        a, b = net.add_split(r, [16, 16], axis=1, name="halves")
        movers = ["halves"]
    else:
        a = net.add_slice(r, [0], [32 if step == 2 else 16], axes=[1], steps=[step], name="first")
        b = net.add_slice(r, [16], [32], axes=[1], name="second")
        movers = ["first", "second"]
    c = net.add_convolution2d(b, rand(16, 16, 1, 1), rand(16), name="conv")
    net.add_output(net.add_activation(net.add_concat([a, c], axis=1, name="cat"), "relu", name="y_relu"), "y")
    return net, movers + ["cat"]


@pytest.mark.parametrize("split", [False, True], ids=["slices", "split"])
@pytest.mark.parametrize("threads", [1, 2])
def test_slice_and_split_outputs_are_read_in_place(split: bool, threads: int) -> None:
    net, movers = shuffle_unit(split)
    x = rand(1, 32, 6, 6)
    ours, views = run(net, x, threads)
    copied, no_views = run(net, x, threads, on_cpuref(movers))
    # the Concat owns the first half and the convolution's output; the second half is read in r
    assert views == 3 and no_views == 0
    np.testing.assert_array_equal(ours["y"], copied["y"])


def test_strided_slices_and_batch_2_splits_are_copies() -> None:
    net, movers = shuffle_unit(split=False, step=2)
    x = rand(1, 32, 6, 6)
    ours, views = run(net, x, 2)
    assert views == 3  # the strided first slice is no block of r, but it is one of the Concat
    copied, _ = run(net, x, 2, on_cpuref(movers))
    np.testing.assert_array_equal(ours["y"], copied["y"])
    net2, movers2 = shuffle_unit(split=True, batch=2)
    x2 = rand(2, 32, 6, 6)
    ours2, views2 = run(net2, x2, 2)
    assert views2 == 0
    copied2, _ = run(net2, x2, 2, on_cpuref(movers2))
    np.testing.assert_array_equal(ours2["y"], copied2["y"])
