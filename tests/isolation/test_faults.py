"""Every way a plugin can die in execute, in an isolated backend: a typed BackendCrashedError
naming backend, layer and signal; the host, its other networks and other runtimes unharmed
(their results bit-identical); the backend marked failed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from plugnn import BackendCrashedError, BackendError, Runtime, optimize
from isolation_nets import mlp, relu_net

pytestmark = pytest.mark.plugins

X = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
RELU_IN = np.array([-2, -1, 0, 1, 2, 3, -4, 5], np.float32)

# layer name -> (signal, exit status, timed out)
FAULTS = {
    "fault_segv": ("SIGSEGV", None, False),
    "fault_abort": ("SIGABRT", None, False),
    "fault_fpe": ("SIGFPE", None, False),
    "fault_stack": ("SIGSEGV", None, False),   # a stack overflow
    "fault_exit": (None, 7, False),            # exit(7)
    "fault_overrun": ("SIGSEGV", None, False),  # 256 MiB past its output: into the guard region
    "fault_hang": ("SIGKILL", None, True),     # spins: killed by the watchdog
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_in_execute_is_a_typed_error_and_nothing_else_is_hurt(
        isolated: Callable[..., Runtime], fault: str) -> None:
    signal, status, timed_out = FAULTS[fault]
    with Runtime() as other:  # another runtime of the same application, in-process CpuRef
        other_net = other.load_network(optimize(mlp(), other, ["CpuRef"]))
        before_other = other_net.run({"x": X})["y"].copy()
        runtime = isolated(watchdog=1.0)
        healthy = runtime.load_network(optimize(mlp(), runtime, ["CpuRef"]))  # same runtime, in-process
        before = healthy.run({"x": X})["y"].copy()
        fine = runtime.load_network(optimize(relu_net("fine"), runtime, ["MockFault"]))
        np.testing.assert_array_equal(fine.run({"x": RELU_IN})["y"], np.maximum(RELU_IN, 0))
        bad = runtime.load_network(optimize(relu_net(f"relu_{fault}"), runtime, ["MockFault"]))

        with pytest.raises(BackendCrashedError) as caught:
            bad.run({"x": RELU_IN})

        error = caught.value
        assert isinstance(error, BackendError)
        assert error.backend_id == "MockFault" and error.layer == f"relu_{fault}"
        assert error.call == f"execute(layer 'relu_{fault}')"
        assert (error.signal, error.exit_status, error.timed_out) == (signal, status, timed_out)
        how = (f"killed by {signal}" if not timed_out and signal else f"exited with status {status}"
               if status is not None else "gave no answer within the 1 s watchdog and was killed")
        assert how in str(error) and "MockFault" in str(error) and f"relu_{fault}" in str(error)
        assert set(runtime.failed_backends) == {"MockFault"}
        # the backend stays failed: the healthy network of that backend fails too, typed
        with pytest.raises(BackendCrashedError, match="the backend failed earlier"):
            fine.run({"x": RELU_IN})
        # everything else is untouched, to the bit
        np.testing.assert_array_equal(healthy.run({"x": X})["y"], before)
        np.testing.assert_array_equal(other_net.run({"x": X})["y"], before_other)
        # and networks still load on the runtime (the failed backend's context stays quiet)
        again = runtime.load_network(optimize(mlp(), runtime, ["CpuRef"]))
        np.testing.assert_array_equal(again.run({"x": X})["y"], before)
        bad.unload()
        fine.unload()


def test_a_failure_the_backend_reports_is_a_backend_error_and_the_worker_lives_on(
        isolated: Callable[..., Runtime]) -> None:
    runtime = isolated()
    bad = runtime.load_network(optimize(relu_net("relu_fault_status"), runtime, ["MockFault"]))
    with pytest.raises(BackendError, match=r"execute\(layer 'relu_fault_status'\) failed \[PN_ERR_INTERNAL\]: "
                                           r"MockFaultByName: 'relu_fault_status' failed as asked") as caught:
        bad.run({"x": RELU_IN})
    assert not isinstance(caught.value, BackendCrashedError)
    assert runtime.failed_backends == {}
    fine = runtime.load_network(optimize(relu_net("fine"), runtime, ["MockFault"]))
    np.testing.assert_array_equal(fine.run({"x": RELU_IN})["y"], np.maximum(RELU_IN, 0))


def test_the_plugin_is_never_loaded_into_the_host(isolated: Callable[..., Runtime]) -> None:
    runtime = isolated()
    backend = runtime.backend("MockFault")
    assert backend.isolation == "process" and backend.pid
    with open("/proc/self/maps", encoding="utf-8") as f:
        assert "Mock_FaultByName_backend.so" not in f.read()
    record = next(r for r in runtime.load_report if r.backend_id == "MockFault")
    assert record.status == "loaded" and record.reason == f"isolated: runs in worker process {backend.pid}"
    assert {d["backend_id"]: d["isolation"] for d in runtime.describe()}["MockFault"] == "process"


def test_a_plugin_that_writes_into_its_inputs_harms_neither_weights_nor_the_callers_arrays(
        isolated: Callable[..., Runtime]) -> None:
    """Constants are mapped read-only in the worker (writing one faults); a network input is the
    worker's copy, so the caller's array stays as it was."""
    from plugnn import Network

    runtime = isolated()
    weights = np.arange(8, dtype=np.float32)
    net = Network("scribble")
    x = net.add_input("x", (8,))
    net.add_output(net.add_add(x, weights, name="add_fault_write_input"), "y")
    constant = runtime.load_network(optimize(net, runtime, ["MockFault"]))
    with pytest.raises(BackendCrashedError, match="killed by SIGSEGV") as caught:
        constant.run({"x": RELU_IN})
    assert caught.value.layer == "add_fault_write_input"
    np.testing.assert_array_equal(weights, np.arange(8, dtype=np.float32))
    runtime.restart_backend("MockFault")
    net = Network("scribble_input")
    a, b = net.add_input("a", (8,)), net.add_input("b", (8,))
    net.add_output(net.add_add(a, b, name="add_fault_write_input"), "y")
    computed = runtime.load_network(optimize(net, runtime, ["MockFault"]))
    b_in = np.ones(8, np.float32)
    y = computed.run({"a": RELU_IN, "b": b_in})["y"]
    np.testing.assert_array_equal(b_in, np.ones(8, np.float32))  # the caller's array: untouched
    np.testing.assert_array_equal(y, RELU_IN + np.array([42] + [1] * 7, np.float32))  # (what the bug computes)
