"""Ctrl-C between layers (plugnn.step_runner): a batch of native layers runs as one C call with
the GIL released; the runner's SIGINT handler, chained before Python's, sets a flag that the
batch checks before each layer, so Python's handler runs between two layers instead of after the
whole batch. Driven with signal.raise_signal (deterministic: no timing)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from onnx import helper

import plugnn
from plugnn.step_runner import INTERRUPTED, NativeRun, runner_library

pytestmark = pytest.mark.skipif(not hasattr(signal, "raise_signal") or runner_library() is None,
                                reason="needs signal.raise_signal and the step runner library")


def chain(layers: int = 12) -> bytes:
    names = ["x"] + [f"t{i}" for i in range(1, layers)] + ["y"]
    nodes = [helper.make_node("Relu" if i % 2 else "Neg", [names[i]], [names[i + 1]]) for i in range(layers)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", 1, [64])],
                              [helper.make_tensor_value_info("y", 1, [64])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.fixture
def recorded_interrupts() -> Iterator[list[int]]:
    """SIGINT handled by a Python handler that records and returns (no KeyboardInterrupt)."""
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def native_run(loaded: Any) -> NativeRun:
    runs = [c for c in loaded._calls if isinstance(c, NativeRun)]
    assert runs and len(runs[0].steps) >= 2
    return runs[0]


@pytest.fixture
def loaded() -> Iterator[Any]:
    """The chain loaded on CpuRef: one batch of native layers (a NativeRun)."""
    import plugnn.onnx

    with plugnn.Runtime() as runtime:
        network = plugnn.onnx.load(chain())
        yield runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"]))


def test_a_batch_stops_before_the_next_layer_once_interrupted(recorded_interrupts: list[int], loaded: Any) -> None:
    run = native_run(loaded)
    library = runner_library()
    assert library.pnr_watch_interrupts() == 0
    status = run._status
    signal.raise_signal(signal.SIGINT)  # the runner's handler sets the flag, then Python's runs
    assert recorded_interrupts == [signal.SIGINT]
    assert library.pnr_run_steps_checked(run._array, run._count, status, 0) == run._count  # not checked: ignored
    assert library.pnr_run_steps_checked(run._array, run._count, status, 1) == 0 and status[0] == INTERRUPTED
    assert library.pnr_run_steps_checked(run._array, run._count, status, 1) == run._count  # the flag was cleared


def test_a_handler_that_returns_lets_the_run_finish(recorded_interrupts: list[int]) -> None:
    session = plugnn.InferenceSession(chain(), backends=["CpuRef"])
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    expected = session.run(None, {"x": x})[0]
    signal.raise_signal(signal.SIGINT)  # pending for the next batch: it stops before its first layer
    assert session.run(None, {"x": x})[0].tobytes() == expected.tobytes()
    assert recorded_interrupts == [signal.SIGINT]


def test_keyboard_interrupt_leaves_the_session_usable() -> None:
    session = plugnn.InferenceSession(chain(), backends=["CpuRef"])
    x = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    expected = session.run(None, {"x": x})[0]
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    assert session.run(None, {"x": x})[0].tobytes() == expected.tobytes()


def test_python_replacing_its_handler_is_followed(recorded_interrupts: list[int], loaded: Any) -> None:
    """signal.signal after a run replaces the runner's C handler; the next run chains again."""
    x = np.ones(64, np.float32)
    loaded.run({"x": x})
    again: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: again.append(signum))
    loaded.run({"x": x})
    run = native_run(loaded)
    signal.raise_signal(signal.SIGINT)
    assert again == [signal.SIGINT]
    assert runner_library().pnr_run_steps_checked(run._array, run._count, run._status, 1) == 0
