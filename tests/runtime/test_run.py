"""load_network() and run(): results against a NumPy oracle, validation of every input,
preallocated outputs, profiling, memory planning, threads, unload."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from plugnn import InputError, LoadedNetwork, Network, Runtime, RuntimeClosedError, optimize
from pybackends import softmax

RNG = np.random.default_rng(11)
W = RNG.standard_normal((6, 4)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)


def mlp() -> Network:
    net = Network("mlp")
    x = net.add_input("x", (3, 6))
    h = net.add_fully_connected(x, W, B, name="fc")
    h = net.add_activation(h, "relu", name="relu")
    net.add_output(net.add_softmax(h, name="softmax"), "y")
    net.add_output(h, "hidden")
    return net


def oracle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hidden = np.maximum(x.astype(np.float64) @ W + B, 0)
    return softmax(hidden, -1), hidden


@pytest.fixture(params=[["CpuRef"], ["PySoftmax", "CpuRef"], ["PyDevice", "CpuRef"]], ids=lambda p: "+".join(p))
def loaded(request: pytest.FixtureRequest, runtime: Runtime) -> LoadedNetwork:
    return runtime.load_network(optimize(mlp(), runtime, request.param))


def test_results_match_the_oracle_on_every_backend_mix(loaded: LoadedNetwork) -> None:
    for _ in range(3):  # buffers are reused between runs
        x = RNG.standard_normal((3, 6)).astype(np.float32)
        out = loaded.run({"x": x})
        y, hidden = oracle(x)
        np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["hidden"], hidden, rtol=1e-5, atol=1e-5)


def test_device_backend_saw_copies_and_memory_lifecycle(runtime: Runtime) -> None:
    loaded = runtime.load_network(optimize(mlp(), runtime, ["PyDevice", "CpuRef"]))
    loaded.run({"x": np.ones((3, 6), np.float32)})
    loaded.unload()
    assert runtime.backend("PyDevice").log == ["acquire", "copy_from_host", "execute:softmax", "copy_to_host",
                                              "release"]


@pytest.mark.parametrize("inputs, message", [
    ({}, "network 'mlp' takes inputs ['x']; missing ['x']"),
    ({"x": np.zeros((3, 6), np.float32), "z": np.zeros(1)}, "unknown ['z']"),
    ({"z": np.zeros((3, 6), np.float32)}, "missing ['x']; unknown ['z']"),  # as many names as inputs
    ({"x": np.zeros((3, 6), np.float64)}, "input 'x' must have dtype float32, got float64"),
    ({"x": np.zeros((3, 5), np.float32)}, "input 'x' must have shape (3, 6), got (3, 5)"),
    ({"x": np.zeros((6, 3), np.float32).T}, "input 'x' must be C-contiguous"),
    ({"x": [[0.0] * 6] * 3}, "input 'x' must be a numpy.ndarray of float32[3, 6], got list"),
])
def test_bad_inputs_name_the_tensor(loaded: LoadedNetwork, inputs, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as info:
        loaded.run(inputs)
    assert message in str(info.value)
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(loaded.run({"x": x})["y"], oracle(x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("outputs, message", [
    ({"nope": np.zeros(1)}, "has outputs ['hidden', 'y']; unknown ['nope']"),
    ({"y": np.zeros((3, 4), np.float32), "nope": None}, "unknown ['nope']"),
    ({"y": None, "hidden": None, "nope": np.zeros(1)}, "unknown ['nope']"),
    ({"y": np.zeros((3, 4), np.float64)}, "output 'y' must have dtype float32"),
    ({"y": np.zeros((3, 4), np.float32)[:, ::-1]}, "output 'y' must be C-contiguous"),
])
def test_bad_preallocated_outputs(loaded: LoadedNetwork, outputs, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        loaded.run({"x": np.zeros((3, 6), np.float32)}, outputs)


def test_read_only_output_is_refused(loaded: LoadedNetwork) -> None:
    y = np.zeros((3, 4), np.float32)
    y.setflags(write=False)
    with pytest.raises(InputError, match="output 'y' must be writable"):
        loaded.run({"x": np.zeros((3, 6), np.float32)}, {"y": y})


def test_preallocated_outputs_are_written_in_place(loaded: LoadedNetwork) -> None:
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    y = np.full((3, 4), np.nan, np.float32)
    hidden = np.full((3, 4), np.nan, np.float32)
    out = loaded.run({"x": x}, {"y": y, "hidden": hidden})
    assert out["y"] is y and out["hidden"] is hidden
    expected_y, expected_hidden = oracle(x)
    np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hidden, expected_hidden, rtol=1e-5, atol=1e-5)


def test_input_is_not_modified_and_outputs_are_fresh_arrays(loaded: LoadedNetwork) -> None:
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    before = x.copy()
    first = loaded.run({"x": x})["y"]
    second = loaded.run({"x": x})["y"]
    np.testing.assert_array_equal(x, before)
    assert first is not second and not np.shares_memory(first, second)


def test_the_same_arrays_run_again_see_new_contents(loaded: LoadedNetwork) -> None:
    """Arrays passed again are not rebound (that is what makes a run cheap), so what they hold
    at each run, and arrays swapped in between, must still be what is computed and written."""
    x, other = np.empty((3, 6), np.float32), RNG.standard_normal((3, 6)).astype(np.float32)
    y, y2, hidden = (np.empty((3, 4), np.float32) for _ in range(3))
    for _ in range(2):
        x[...] = RNG.standard_normal((3, 6))
        loaded.run({"x": x}, {"y": y, "hidden": hidden})
        np.testing.assert_allclose(y, oracle(x)[0], rtol=1e-5, atol=1e-6)
    loaded.run({"x": other}, {"y": y2, "hidden": hidden})  # a new input and one new output
    np.testing.assert_allclose(y2, oracle(other)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hidden, oracle(other)[1], rtol=1e-5, atol=1e-5)
    fresh = loaded.run({"x": x})  # back to x, outputs allocated by run()
    np.testing.assert_allclose(fresh["y"], oracle(x)[0], rtol=1e-5, atol=1e-6)


def test_an_array_changed_in_place_since_the_last_run_is_checked_again(loaded: LoadedNetwork) -> None:
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    y = np.empty((3, 4), np.float32)
    loaded.run({"x": x}, {"y": y})
    x.shape = (6, 3)
    with pytest.raises(InputError, match=r"input 'x' must have shape \(3, 6\), got \(6, 3\)"):
        loaded.run({"x": x}, {"y": y})
    x.shape = (3, 6)
    y.setflags(write=False)
    with pytest.raises(InputError, match="output 'y' must be writable"):
        loaded.run({"x": x}, {"y": y})
    y.setflags(write=True)
    x.dtype = np.int32
    with pytest.raises(InputError, match="input 'x' must have dtype float32, got int32"):
        loaded.run({"x": x}, {"y": y})
    x.dtype = np.float32
    loaded.run({"x": x}, {"y": y})
    np.testing.assert_allclose(y, oracle(x)[0], rtol=1e-5, atol=1e-6)


def test_profile_lists_every_workload_with_its_backend(runtime: Runtime) -> None:
    loaded = runtime.load_network(optimize(mlp(), runtime, ["PySoftmax", "CpuRef"]))
    loaded.run({"x": np.zeros((3, 6), np.float32)}, profile=True)
    assert [(p["layer"], p["backend"]) for p in loaded.last_profile] == [
        ("fc", "CpuRef"), ("relu", "CpuRef"), ("softmax", "PySoftmax")]
    assert all(p["seconds"] >= 0 for p in loaded.last_profile)


def test_identity_and_passthrough_outputs(runtime: Runtime) -> None:
    net = Network("pass")
    x = net.add_input("x", (2, 2))
    net.add_output(net.add_identity(x), "same")
    net.add_output(net.add_activation(x, "abs", name="abs_layer"), "abs")
    net.add_output(net.add_constant(np.eye(2)), "eye")
    loaded = runtime.load_network(optimize(net, runtime, ["CpuRef"]))
    x_value = np.array([[-1, 2], [3, -4]], np.float32)
    out = loaded.run({"x": x_value})
    np.testing.assert_array_equal(out["same"], x_value)
    assert not np.shares_memory(out["same"], x_value)
    np.testing.assert_array_equal(out["abs"], np.abs(x_value))
    np.testing.assert_array_equal(out["eye"], np.eye(2))


def test_preallocated_outputs_that_are_copies(runtime: Runtime) -> None:
    """Outputs run() cannot bind (a graph input, a constant, a tensor exported under two names)
    are copied into the caller's arrays, each run from that run's values; None allocates."""
    net = Network("copies")
    x = net.add_input("x", (2, 2))
    absolute = net.add_activation(x, "abs", name="abs_layer")
    net.add_output(absolute, "abs")
    net.add_output(absolute, "abs_again")
    net.add_output(x, "same")
    net.add_output(net.add_constant(np.eye(2)), "eye")
    loaded = runtime.load_network(optimize(net, runtime, ["CpuRef"]))
    given = {name: np.full((2, 2), np.nan, np.float32) for name in ("abs", "abs_again", "same", "eye")}
    for value in (np.array([[-1, 2], [3, -4]], np.float32), np.array([[5, -6], [-7, 8]], np.float32)):
        out = loaded.run({"x": value}, {**given, "abs_again": None} if value[0, 0] > 0 else given)
        np.testing.assert_array_equal(out["abs"], np.abs(value))
        np.testing.assert_array_equal(out["abs_again"], np.abs(value))
        np.testing.assert_array_equal(out["same"], value)
        np.testing.assert_array_equal(out["eye"], np.eye(2))
        assert all(out[name] is given[name] for name in ("abs", "same", "eye"))
        assert (out["abs_again"] is given["abs_again"]) == (value[0, 0] < 0)


def test_memory_plan_shares_intermediates(runtime: Runtime) -> None:
    net = Network("chain")
    x = net.add_input("x", (1, 1024))
    for i in range(8):
        x = net.add_activation(x, "relu" if i % 2 else "tanh", name=f"act{i}")
    net.add_output(x, "y")
    loaded = runtime.load_network(optimize(net, runtime, ["CpuRef"]))
    plan = loaded.memory_plan
    assert plan.naive_bytes == 7 * 4096  # seven intermediates, the last is the output
    assert plan.peak_bytes == 2 * 4096   # two buffers alternate
    value = RNG.standard_normal((1, 1024)).astype(np.float32)
    expected = value.astype(np.float64)
    for i in range(8):
        expected = np.maximum(expected, 0) if i % 2 else np.tanh(expected)
    np.testing.assert_allclose(loaded.run({"x": value})["y"], expected, rtol=1e-5, atol=1e-6)


def test_runs_from_several_threads(runtime: Runtime) -> None:
    loaded = runtime.load_network(optimize(mlp(), runtime, ["CpuRef"]))
    inputs = [RNG.standard_normal((3, 6)).astype(np.float32) for _ in range(8)]
    errors: list[str] = []

    def work(x: np.ndarray) -> None:
        for _ in range(50):
            y = loaded.run({"x": x})["y"]
            if not np.allclose(y, oracle(x)[0], rtol=1e-5, atol=1e-6):
                errors.append("mismatch")

    threads = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_unloaded_network_is_a_clear_error(runtime: Runtime) -> None:
    loaded = runtime.load_network(optimize(mlp(), runtime, ["CpuRef"]))
    assert runtime.loaded_networks == [loaded]
    loaded.unload()
    loaded.unload()  # idempotent
    assert runtime.loaded_networks == []
    with pytest.raises(RuntimeClosedError, match="network 'mlp' \\(id 1\\) was unloaded"):
        loaded.run({"x": np.zeros((3, 6), np.float32)})


def test_runtime_close_unloads_networks(no_static_backends: None) -> None:
    runtime = Runtime()
    loaded = runtime.load_network(optimize(mlp(), runtime, ["CpuRef"]))
    runtime.close()
    assert not loaded.loaded
    with pytest.raises(RuntimeClosedError):
        loaded.run({"x": np.zeros((3, 6), np.float32)})


def test_load_network_checks_its_argument(runtime: Runtime, no_static_backends: None) -> None:
    with pytest.raises(TypeError, match="takes an OptimizedNetwork"):
        runtime.load_network(mlp())
    with Runtime() as other:
        with pytest.raises(Exception, match="optimized for another runtime"):
            other.load_network(optimize(mlp(), runtime, ["CpuRef"]))


def test_the_gil_is_released_while_a_c_kernel_runs(runtime: Runtime) -> None:
    """A pure-Python thread keeps running at full speed during a long C call; were the GIL
    held, it could only run in the one or two 1 ms switch intervals around the call."""
    import sys
    import time

    net = Network("big_conv")
    x = net.add_input("x", (1, 128, 28, 28))  # 231 MFLOP: about 80 ms on CpuRef here
    net.add_output(net.add_convolution2d(x, RNG.standard_normal((128, 128, 3, 3)), padding=1), "y")
    loaded = runtime.load_network(optimize(net, runtime, ["CpuRef"]))
    feeds = {"x": RNG.standard_normal((1, 128, 28, 28)).astype(np.float32)}
    counter = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            counter[0] += 1

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        start, t0 = counter[0], time.perf_counter()
        time.sleep(0.1)  # sleeping releases the GIL: the spinner's free rate
        rate = (counter[0] - start) / (time.perf_counter() - t0)
        start, t0 = counter[0], time.perf_counter()
        loaded.run(feeds)
        elapsed = time.perf_counter() - t0
        during = counter[0] - start
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(switch_interval)
    # A held GIL would leave the spinner at most ~2 ms of the call: under 10 % of 20 ms.
    assert elapsed > 0.02, "the kernel must run long enough to tell"
    assert during > 0.3 * rate * elapsed, (during, rate, elapsed)
