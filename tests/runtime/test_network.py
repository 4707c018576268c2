"""Network API: shapes inferred as layers are added; bad input named by layer."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn import Network, NetworkError


@pytest.fixture
def net() -> Network:
    return Network("t")


def test_shapes_are_inferred(net: Network) -> None:
    x = net.add_input("x", (2, 3, 9, 9))
    c = net.add_convolution2d(x, np.zeros((8, 3, 3, 3)), np.zeros(8), stride=2, padding=(1, 0, 1, 0), name="c")
    assert c.shape == (2, 8, 5, 4)
    p = net.add_pooling2d(c, "max", 2, ceil_mode=True)
    assert p.shape == (2, 8, 3, 2)
    g = net.add_global_pooling2d(p)
    assert g.shape == (2, 8, 1, 1)
    f = net.add_flatten(g)
    assert f.shape == (2, 8)
    fc = net.add_fully_connected(f, np.zeros((5, 8)), np.zeros(5), transpose_b=True)
    assert fc.shape == (2, 5)
    assert net.add_matmul(net.add_input("v", (8,)), np.zeros((3, 8, 4))).shape == (3, 4)
    assert net.add_add(fc, np.zeros((1, 5))).shape == (2, 5)
    assert net.add_sum([fc, fc, np.zeros(5)]).shape == (2, 5)
    assert net.add_concat([fc, fc], axis=-1).shape == (2, 10)
    assert net.add_transpose(c, (0, 2, 3, 1)).shape == (2, 5, 4, 8)
    assert net.add_reshape(c, (2, -1)).shape == (2, 160)
    assert net.add_unsqueeze(fc, [0, -1]).shape == (1, 2, 5, 1)
    assert net.add_squeeze(g).shape == (2, 8)
    assert net.add_lrn(c, 3).shape == c.shape
    assert net.add_softmax(fc, axis=0).shape == (2, 5)
    bn = net.add_batch_normalization(c, np.ones(8), np.zeros(8), np.zeros(8), np.ones(8))
    assert bn.shape == c.shape
    assert net.add_convolution2d(x, np.zeros((6, 1, 3, 3)), groups=3, layout="NCHW").shape == (2, 6, 7, 7)
    nhwc = net.add_input("nhwc", (1, 9, 9, 3))
    assert net.add_convolution2d(nhwc, np.zeros((4, 3, 3, 3)), layout="NHWC").shape == (1, 7, 7, 4)


def test_generated_names_are_unique_and_weights_become_constants(net: Network) -> None:
    x = net.add_input("x", (1, 4))
    a = net.add_activation(x, "relu")
    b = net.add_activation(a, "relu")
    assert a.producer != b.producer
    net.add_fully_connected(b, np.ones((4, 2)), name="fc")
    constant = net.layer("fc/b")
    assert constant.type_name == "Constant" and constant.value.dtype == np.float32
    assert not constant.value.flags.writeable


@pytest.mark.parametrize("build, message", [
    (lambda n, x: n.add_convolution2d(x, np.zeros((4, 2, 3, 3)), name="L"),
     "layer 'L' (Convolution2d) with inputs (float32[1, 3, 8, 8], float32[4, 2, 3, 3]): weights (4, 2, 3, 3) "
     "expect 2 input channels"),
    (lambda n, x: n.add_convolution2d(x, np.zeros((4, 3, 9, 9)), name="L"), "does not fit"),
    (lambda n, x: n.add_convolution2d(x, np.zeros((4, 3, 3, 3)), np.zeros(5), name="L"), "bias must have shape (4,)"),
    (lambda n, x: n.add_convolution2d(x, np.zeros((4, 1, 3, 3)), groups=2, name="L"), "groups=2 must divide"),
    (lambda n, x: n.add_convolution2d(x, np.zeros((4, 3, 3, 3)), stride=0, name="L"), "stride must be"),
    (lambda n, x: n.add_pooling2d(x, "median", 2, name="L"), "pooling kind 'median' is not one of"),
    (lambda n, x: n.add_add(x, np.zeros((2, 8)), name="L"), "do not broadcast"),
    (lambda n, x: n.add_softmax(x, axis=4, name="L"), "axis 4 is out of range for rank 4"),
    (lambda n, x: n.add_reshape(x, (5, -1), name="L"), "cannot infer -1"),
    (lambda n, x: n.add_reshape(x, (-1, -1), name="L"), "at most one -1"),
    (lambda n, x: n.add_concat([x, np.zeros((1, 3, 8, 7))], axis=1, name="L"), "differs from"),
    (lambda n, x: n.add_transpose(x, (0, 1, 2), name="L"), "has 3 entries for rank 4"),
    (lambda n, x: n.add_transpose(x, (0, 1, 2, 2), name="L"), "not a permutation"),
    (lambda n, x: n.add_matmul(x, np.zeros((5, 2)), name="L"), "inner dimensions differ"),
    (lambda n, x: n.add_fully_connected(x, np.zeros((3, 2)), name="L"), "must be rank 2"),
    (lambda n, x: n.add_batch_normalization(x, np.ones(2), np.ones(3), np.ones(3), np.ones(3), name="L"),
     "scale must have shape (3,)"),
    (lambda n, x: n.add_activation(x, "sparkle", name="L"), "activation 'sparkle' is not one of"),
    (lambda n, x: n.add_squeeze(x, [1], name="L"), "must name dimensions of size 1"),
    (lambda n, x: n.add_input("x", (1,)), "layer name 'x' is already used"),
    (lambda n, x: n.add_input("y", (1, -2)), "input 'y': negative dimension"),
    (lambda n, x: n.add_activation(Network().add_input("z", (1,)), "relu", name="L"), "belongs to another network"),
    (lambda n, x: n.add_activation(x, "relu", name=""), "must be a non-empty string"),
    (lambda n, x: n.add_lrn(x, 0, name="L"), "LRN size must be >= 1"),
])
def test_bad_layers_are_named_errors(net: Network, build, message: str) -> None:  # type: ignore[no-untyped-def]
    x = net.add_input("x", (1, 3, 8, 8))
    before = len(net)
    with pytest.raises(NetworkError) as info:
        build(net, x)
    assert message in str(info.value)
    assert len(net) == before, "a failed add leaves the network unchanged"


def test_unknown_layer_lookup(net: Network) -> None:
    with pytest.raises(NetworkError, match="has no layer 'nope'"):
        net.layer("nope")
