"""Network.add_recurrent: output shapes in both layouts, bad layers named by layer at build time,
and a recurrent network optimized (refused with a reason where no backend runs it) and run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import plugnn
from plugnn import Network, NetworkError
from plugnn.descriptors import ActivationDescriptor, RecurrentDescriptor

SIGMOID, TANH = ActivationDescriptor("sigmoid"), ActivationDescriptor("tanh")


def lstm_inputs(net: Network, batch_major: bool) -> list:
    x = net.add_input("x", (2, 5, 4) if batch_major else (5, 2, 4))
    state = np.zeros((2, 2, 3))  # [batch, dirs, hidden] and [dirs, batch, hidden] alike here
    return [x, np.zeros((2, 12, 4)), np.zeros((2, 12, 3)), np.zeros((2, 24)), np.array([5, 3], np.int32),
            state, state, np.zeros((2, 9))]


LSTM = RecurrentDescriptor("lstm", 3, "bidirectional", (SIGMOID, TANH, TANH) * 2, has_bias=True,
                           has_sequence_lens=True, has_initial_h=True, has_initial_c=True, has_peepholes=True)


@pytest.mark.parametrize("batch_major", [False, True])
def test_shapes(batch_major: bool) -> None:
    net = Network("t")
    y, y_h, y_c = net.add_recurrent(lstm_inputs(net, batch_major),
                                    dataclasses.replace(LSTM, batch_major=batch_major), name="lstm")
    assert y.shape == ((2, 5, 2, 3) if batch_major else (5, 2, 2, 3))
    assert y_h.shape == y_c.shape == (2, 2, 3)
    gru = RecurrentDescriptor("gru", 3, "reverse", (SIGMOID, TANH), has_initial_h=True, batch_major=True)
    x = net.add_input("x3", (4, 7, 2))
    outputs = net.add_recurrent([x, np.zeros((1, 9, 2)), np.zeros((1, 9, 3)), np.zeros((4, 1, 3))], gru)
    assert [t.shape for t in outputs] == [(4, 7, 1, 3), (4, 1, 3)]


def _with(inputs: list, index: int, value: object) -> list:
    return inputs[:index] + [value] + inputs[index + 1:]


BAD = {
    "an input missing": (lambda i: i[:-1], LSTM, "expects 8 inputs, got 7"),
    "initial_c for a GRU": (lambda i: i, dataclasses.replace(LSTM, cell="gru"), "initial_c, peepholes and "
                            "input_forget are LSTM's"),
    "linear_before_reset for an LSTM": (lambda i: i, dataclasses.replace(LSTM, linear_before_reset=True),
                                        "linear_before_reset is GRU's"),
    "w of the wrong rows": (lambda i: _with(i, 1, np.zeros((2, 9, 4))), LSTM, r"w must have shape \(2, 12, 4\)"),
    "int64 sequence_lens": (lambda i: _with(i, 4, np.array([5, 3], np.int64)), LSTM, "sequence_lens must be int32"),
    "initial_h of the wrong batch": (lambda i: _with(i, 5, np.zeros((2, 5, 3))),
                                    LSTM, r"initial_h must have shape \(2, 2, 3\)"),
    "two activations for an LSTM": (lambda i: i, dataclasses.replace(LSTM, activations=(SIGMOID, TANH)),
                                    "LSTM bidirectional takes 6 activations, got 2"),
    "a relu6 activation": (lambda i: i, dataclasses.replace(
        LSTM, activations=(SIGMOID, TANH, ActivationDescriptor("bounded_relu", 0, 6)) * 2),
        "activation 2 .bounded_relu. is not a recurrent activation"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_layers_are_named_errors(name: str) -> None:
    edit, desc, message = BAD[name]
    net = Network("t")
    with pytest.raises(NetworkError, match=rf"layer 'rnn' \(Recurrent\).*{message}"):
        net.add_recurrent(edit(lstm_inputs(net, False)), desc, name="rnn")


def test_descriptor_values_are_checked() -> None:
    with pytest.raises(ValueError, match="hidden_size must be >= 1"):
        RecurrentDescriptor("rnn", 0, activations=(TANH,))
    with pytest.raises(ValueError, match="clip must be >= 0"):
        RecurrentDescriptor("rnn", 2, activations=(TANH,), clip=float("nan"))


@pytest.mark.parametrize("backend", ["CpuRef", "CpuAcc"])
def test_optimize_places_it_and_the_backend_runs_it(backend: str) -> None:
    """Zero weights and a random bias make every step's gates constants, so the states follow a
    scalar recurrence per unit: c = f c + i tanh(bc), h = o tanh(c). CpuRef and CpuAcc (float32)
    both run RECURRENT."""
    net = Network("t")
    inputs = lstm_inputs(net, False)
    bias = np.random.default_rng(0).standard_normal((2, 24)).astype(np.float32)
    y, y_h, y_c = net.add_recurrent(_with(inputs, 3, bias), LSTM, name="lstm")
    for t, name in ((y, "y"), (y_h, "y_h"), (y_c, "y_c")):
        net.add_output(t, name)
    with plugnn.Runtime() as runtime:
        if backend not in runtime.backend_ids:
            pytest.skip(f"{backend} is not built")
        with runtime.load_network(plugnn.optimize(net, runtime, [backend])) as loaded:
            out = loaded.run({"x": np.ones((5, 2, 4), np.float32)})
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    lens = (5, 3)
    for d in range(2):
        gates = bias[d, :12].astype(np.float64) + bias[d, 12:]
        i, o, f, g = sigmoid(gates[0:3]), sigmoid(gates[3:6]), sigmoid(gates[6:9]), np.tanh(gates[9:12])
        c, hs, cs = np.zeros(3), [], []
        for _ in range(5):
            c = f * c + i * g
            hs.append(o * np.tanh(c))
            cs.append(c)
        for b, n in enumerate(lens):
            for t in range(5):
                steps = (t + 1 if d == 0 else n - t) if t < n else 0
                expected = hs[steps - 1] if steps else np.zeros(3)
                np.testing.assert_allclose(out["y"][t, d, b], expected, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["y_h"][d, b], hs[n - 1], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["y_c"][d, b], cs[n - 1], rtol=1e-5, atol=1e-6)
