"""Networks the isolation tests run."""

from __future__ import annotations

import numpy as np

from plugnn import Network


def relu_net(layer: str, n: int = 8) -> Network:
    """x -> RELU named `layer` -> y (MockFault faults when the name says so)."""
    net = Network(f"relu_{layer}")
    x = net.add_input("x", (n,))
    net.add_output(net.add_activation(x, "relu", name=layer), "y")
    return net


def mlp(seed: int = 3) -> Network:
    """A small network CpuRef and CpuAcc both run: FC, RELU, Add, softmax."""
    rng = np.random.default_rng(seed)
    net = Network("mlp")
    x = net.add_input("x", (4, 16))
    h = net.add_fully_connected(x, rng.standard_normal((16, 32)).astype(np.float32),
                                rng.standard_normal(32).astype(np.float32), name="fc1")
    h = net.add_activation(h, "relu", name="relu1")
    g = net.add_fully_connected(h, rng.standard_normal((32, 32)).astype(np.float32), name="fc2")
    h = net.add_add(h, g, name="residual")
    net.add_output(net.add_softmax(h, name="softmax"), "y")
    return net
