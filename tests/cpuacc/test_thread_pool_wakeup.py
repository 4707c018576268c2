"""CpuAcc's thread pool after its workers went to sleep: runs spaced further apart than the
spin bound (1 ms, plugins/accel/src/thread_pool.c) wake the workers, which then move off the caller's
CPU when the kernel put them there, and must compute exactly what back-to-back runs compute;
also when the process may use one CPU only (no CPU to move to). Results are compared bit for
bit with the first run of the same runtime and within 1e-5 relative with NumPy."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import plugnn
from plugnn import Network

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(23)


def relu_net(n: int) -> tuple[Network, np.ndarray, np.ndarray]:
    """An elementwise add + relu large enough to be split over every thread."""
    net = Network("wake")
    a = net.add_input("a", (n,))
    b = net.add_input("b", (n,))
    net.add_output(net.add_activation(net.add_add(a, b, name="add"), "relu", name="relu"), "y")
    return net, RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("threads", [2, 3])
def test_runs_after_the_workers_slept_compute_the_same_bits(threads: int) -> None:
    net, a, b = relu_net(1 << 20)
    expected = np.maximum(a.astype(np.float64) + b, 0.0)
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": threads}}) as rt:
        with rt.load_network(plugnn.optimize(net, rt, ["CpuAcc"])) as loaded:
            first = loaded.run({"a": a, "b": b})["y"].copy()
            np.testing.assert_allclose(first, expected, rtol=1e-5, atol=0)
            for gap in (0.0, 0.005, 0.02, 0.005):
                time.sleep(gap)  # past the spin bound: the workers sleep and are woken
                np.testing.assert_array_equal(loaded.run({"a": a, "b": b})["y"], first)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity")
def test_workers_on_a_single_allowed_cpu_still_run() -> None:
    """With the process limited to one CPU there is nowhere to move a woken worker: it stays,
    and the two threads share the CPU."""
    allowed = os.sched_getaffinity(0)
    net, a, b = relu_net(1 << 18)
    try:
        os.sched_setaffinity(0, {min(allowed)})
        with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2}}) as rt:
            with rt.load_network(plugnn.optimize(net, rt, ["CpuAcc"])) as loaded:
                first = loaded.run({"a": a, "b": b})["y"].copy()
                for _ in range(3):
                    time.sleep(0.005)
                    np.testing.assert_array_equal(loaded.run({"a": a, "b": b})["y"], first)
        np.testing.assert_allclose(first, np.maximum(a.astype(np.float64) + b, 0.0), rtol=1e-5, atol=0)
    finally:
        os.sched_setaffinity(0, allowed)
