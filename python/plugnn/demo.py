"""The built-in demonstration network that `plugnn run` runs when given no model.

A small residual CNN built with `plugnn.Network` (convolution, batch normalization, relu,
max pooling, a residual add, global average pooling, fully connected, softmax) with seeded
random weights. It needs nothing but NumPy, so it works on a fresh install with no download
and without `onnx`. `plugnn.synthetic_models.small_cnn` builds the same network, with the same
weights, as an ONNX model (that is what `plugnn run --compare onnxruntime` runs it against).

Architecture, for an input "image" of shape (batch, 3, 32, 32):

    stem     conv 3x3 3->16 pad 1, batch norm, relu         -> (16, 32, 32)
    pool     max 2x2 stride 2                               -> (16, 16, 16)
    block1   conv 3x3, bn, relu, conv 3x3, bn, + pool, relu -> (16, 16, 16)
    down     conv 3x3 16->32 stride 2 pad 1, bn, relu       -> (32, 8, 8)
    block2   conv 3x3, bn, relu, conv 3x3, bn, + down, relu -> (32, 8, 8)
    head     global average pool, flatten, fully connected 32->10, softmax -> "probabilities"
"""

from __future__ import annotations

from typing import Any

import numpy as np

INPUT_NAME = "image"
OUTPUT_NAME = "probabilities"
IMAGE = 32
CLASSES = 10
DEFAULT_SEED = 0

# (name, in channels, out channels, stride); every convolution is 3x3 with padding 1 and
# followed by a batch normalization named "<name>_bn".
CONVOLUTIONS = [
    ("stem", 3, 16, 1),
    ("block1_conv1", 16, 16, 1),
    ("block1_conv2", 16, 16, 1),
    ("down", 16, 32, 2),
    ("block2_conv1", 32, 32, 1),
    ("block2_conv2", 32, 32, 1),
]


def weights(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The demo's parameters: per convolution `w`, `b` and batch norm `scale`, `bias`, `mean`,
    `var`; the classifier `fc_w` [32, 10] and `fc_b`. He-scaled so activations stay O(1)."""
    rng = np.random.default_rng(seed)
    params: dict[str, Any] = {}
    for name, cin, cout, _ in CONVOLUTIONS:
        fan_in = cin * 9
        params[name] = {
            "w": (rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / fan_in)).astype(np.float32),
            "b": (rng.standard_normal(cout) * 0.1).astype(np.float32),
            "scale": rng.uniform(0.5, 1.5, cout).astype(np.float32),
            "bias": (rng.standard_normal(cout) * 0.1).astype(np.float32),
            "mean": (rng.standard_normal(cout) * 0.1).astype(np.float32),
            "var": rng.uniform(0.5, 1.5, cout).astype(np.float32),
        }
    params["fc_w"] = (rng.standard_normal((32, CLASSES)) * np.sqrt(1.0 / 32)).astype(np.float32)
    params["fc_b"] = (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)
    return params


def network(batch: int = 1, seed: int = DEFAULT_SEED) -> Any:
    """The demo as a `plugnn.Network` named "plugnn_demo"."""
    from plugnn.network import Network

    params = weights(seed)
    strides = {name: stride for name, _, _, stride in CONVOLUTIONS}
    net = Network("plugnn_demo")

    def conv_bn(x: Any, name: str, relu: bool = True) -> Any:
        p = params[name]
        y = net.add_convolution2d(x, p["w"], p["b"], stride=strides[name], padding=1, name=name)
        y = net.add_batch_normalization(y, p["scale"], p["bias"], p["mean"], p["var"], name=f"{name}_bn")
        return net.add_activation(y, "relu", name=f"{name}_relu") if relu else y

    x = net.add_input(INPUT_NAME, (batch, 3, IMAGE, IMAGE))
    y = conv_bn(x, "stem")
    y = net.add_pooling2d(y, "max", 2, stride=2, name="pool")
    for block, skip_from in (("block1", None), ("block2", "down")):
        if skip_from is not None:
            y = conv_bn(y, skip_from)
        h = conv_bn(y, f"{block}_conv1")
        h = conv_bn(h, f"{block}_conv2", relu=False)
        y = net.add_activation(net.add_add(h, y, name=f"{block}_add"), "relu", name=f"{block}_relu")
    y = net.add_global_pooling2d(y, "average", name="gap")
    y = net.add_flatten(y, name="flatten")
    y = net.add_fully_connected(y, params["fc_w"], params["fc_b"], name="fc")
    net.add_output(net.add_softmax(y, name="softmax"), OUTPUT_NAME)
    return net


DESCRIPTION = ("built-in demo: a small residual CNN (conv, batch norm, relu, max pool, residual add, "
               "global average pool, fully connected, softmax) with seeded random weights")
