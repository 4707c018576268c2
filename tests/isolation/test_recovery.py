"""After a crash: optimizing again places the failed backend's layers on the next preferred one
(logged, and in explain()); a new worker on request; Ctrl-C and the watchdog; the settings."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from plugnn import BackendCrashedError, ConfigurationError, Runtime, RuntimeClosedError, optimize
from plugnn.isolation import isolation_modes, watchdog_seconds
from isolation_nets import relu_net

pytestmark = pytest.mark.plugins

RELU_IN = np.array([-2, -1, 0, 1, 2, 3, -4, 5], np.float32)


def crash(runtime: Runtime) -> None:
    bad = runtime.load_network(optimize(relu_net("relu_fault_segv"), runtime, ["MockFault"]))
    with pytest.raises(BackendCrashedError):
        bad.run({"x": RELU_IN})


def test_optimizing_again_moves_the_failed_backends_layers_to_the_next_one(
        isolated: Callable[..., Runtime], caplog: pytest.LogCaptureFixture) -> None:
    runtime = isolated()
    before = optimize(relu_net("relu"), runtime, ["MockFault", "CpuRef"])
    assert [n.backend_id for n in before.graph.nodes] == ["MockFault"]
    crash(runtime)
    with caplog.at_level(logging.WARNING, logger="plugnn"):
        after = optimize(relu_net("relu"), runtime, ["MockFault", "CpuRef"])
    assert [n.backend_id for n in after.graph.nodes] == ["CpuRef"]
    assert "backend 'MockFault' failed earlier (its worker process" in caplog.text
    assert "its layers go to the next backend of the preference" in caplog.text
    text = after.explain()
    assert "MockFault: no (backend failed: its worker process" in text
    assert "was killed by SIGSEGV in execute(layer 'relu_fault_segv'))" in text
    loaded = runtime.load_network(after)
    np.testing.assert_array_equal(loaded.run({"x": RELU_IN})["y"], np.maximum(RELU_IN, 0))
    # the runtime's own preference (no list given) skips it the same way
    default = optimize(relu_net("relu"), runtime)
    assert "MockFault" not in {n.backend_id for n in default.graph.nodes}


def test_a_new_worker_on_request_with_the_options_applied_again(fault_dir: Path) -> None:
    with Runtime(isolate={"MockFault": "process"}, backend_options={"MockFault": {"num_threads": "3"}}) as runtime:
        backend = runtime.backend("MockFault")
        first_pid = backend.pid
        crash(runtime)
        runtime.restart_backend("MockFault")
        assert runtime.failed_backends == {} and backend.pid != first_pid
        assert backend.get_option("num_threads") == "3"
        fine = runtime.load_network(optimize(relu_net("fine"), runtime, ["MockFault"]))
        np.testing.assert_array_equal(fine.run({"x": RELU_IN})["y"], np.maximum(RELU_IN, 0))
        # a worker that is alive can be replaced too
        runtime.restart_backend("MockFault")
        assert backend.pid != first_pid
        with pytest.raises(RuntimeClosedError, match="its worker process [0-9]+ was closed"):  # made on the old one...
            fine.run({"x": RELU_IN})
        again = runtime.load_network(optimize(relu_net("fine"), runtime, ["MockFault"]))  # ...load it again
        np.testing.assert_array_equal(again.run({"x": RELU_IN})["y"], np.maximum(RELU_IN, 0))
        with pytest.raises(ConfigurationError, match="'CpuRef' does not run in a worker process"):
            runtime.restart_backend("CpuRef")


def test_ctrl_c_stops_a_hung_isolated_layer(fault_dir: Path) -> None:
    """SIGINT while a layer hangs (no watchdog): KeyboardInterrupt in the host, the worker killed,
    the backend failed (interrupted); run in a child so pytest's own SIGINT handling stays out."""
    script = textwrap.dedent("""
        import os, signal, threading
        import numpy as np
        from plugnn import BackendCrashedError, Network, Runtime, optimize
        net = Network("n"); x = net.add_input("x", (8,))
        net.add_output(net.add_activation(x, "relu", name="relu_fault_hang"), "y")
        with Runtime(isolate={"MockFault": "process"}) as runtime:
            loaded = runtime.load_network(optimize(net, runtime, ["MockFault"]))
            pid = runtime.backend("MockFault").pid
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
            try:
                loaded.run({"x": np.ones(8, np.float32)})
                print("no interrupt")
            except KeyboardInterrupt:
                error = runtime.failed_backends["MockFault"]
                print("interrupted", error.interrupted, error.signal, error.layer)
                try:
                    os.kill(pid, 0)
                    print("worker alive")
                except ProcessLookupError:
                    print("worker gone")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ))
    assert result.stdout.split("\n")[:2] == ["interrupted True SIGKILL relu_fault_hang", "worker gone"], result.stderr


def test_the_watchdog_from_the_environment(fault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_ISOLATE", "MockFault")
    monkeypatch.setenv("PLUGNN_ISOLATE_WATCHDOG", "0.5")
    with Runtime() as runtime:
        assert runtime.backend("MockFault").isolation == "process"
        hung = runtime.load_network(optimize(relu_net("relu_fault_hang"), runtime, ["MockFault"]))
        with pytest.raises(BackendCrashedError, match="no answer within the 0.5 s watchdog") as caught:
            hung.run({"x": RELU_IN})
        assert caught.value.timed_out and caught.value.layer == "relu_fault_hang"


def test_isolation_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_ISOLATE", " VendorX , VendorY=process,VendorZ=none")
    assert isolation_modes() == {"VendorX": "process", "VendorY": "process"}
    assert isolation_modes({"A": "process", "B": "none"}) == {"A": "process"}
    monkeypatch.delenv("PLUGNN_ISOLATE")
    assert isolation_modes() == {}
    with pytest.raises(ConfigurationError, match="isolate: the isolation of backend 'A' must be one of process, "
                                                 "none, not 'thread'"):
        isolation_modes({"A": "thread"})
    monkeypatch.setenv("PLUGNN_ISOLATE", "A=sandbox")
    with pytest.raises(ConfigurationError, match="PLUGNN_ISOLATE: the isolation of backend 'A'"):
        isolation_modes()
    monkeypatch.delenv("PLUGNN_ISOLATE_WATCHDOG", raising=False)
    assert watchdog_seconds() is None and watchdog_seconds(2) == 2.0
    monkeypatch.setenv("PLUGNN_ISOLATE_WATCHDOG", "soon")
    with pytest.raises(ConfigurationError, match="PLUGNN_ISOLATE_WATCHDOG must be a number of seconds"):
        watchdog_seconds()
    with pytest.raises(ConfigurationError, match="must be > 0 seconds"):
        watchdog_seconds(0)


def test_isolating_a_python_backend_or_an_absent_one(fault_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    from plugnn import BackendRegistry
    from plugnn.backend import Backend

    class PyOnly(Backend):
        def is_layer_supported(self, layer):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        def create_workload_factory(self, memory_manager=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    BackendRegistry.register("PyOnly", PyOnly)
    try:
        with pytest.raises(ConfigurationError, match="backend 'PyOnly' is a Python backend"):
            Runtime(isolate={"PyOnly": "process"})
    finally:
        BackendRegistry.deregister("PyOnly")
    with caplog.at_level(logging.WARNING, logger="plugnn"), Runtime(isolate={"NoSuchBackend": "process"}):
        pass
    assert "isolate names backend 'NoSuchBackend', which this runtime has not loaded" in caplog.text


def test_probe_none_identifies_files_in_a_worker(fault_dir: Path) -> None:
    with Runtime(isolate={"MockFault": "process"}, probe="none") as runtime:
        assert runtime.backend("MockFault").isolation == "process"
        assert runtime.backend("CpuRef").isolation == ""  # identified in a worker, then loaded here
        with open("/proc/self/maps", encoding="utf-8") as f:
            assert "Mock_FaultByName_backend.so" not in f.read()


def test_a_forked_child_does_not_talk_to_its_parents_worker(isolated: Callable[..., Runtime]) -> None:
    runtime = isolated()
    fine = runtime.load_network(optimize(relu_net("fine"), runtime, ["MockFault"]))
    expected = fine.run({"x": RELU_IN})["y"]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its parent's worker refuses it, a new one of its own works
        code = 1
        try:
            try:
                fine.run({"x": RELU_IN})
            except RuntimeClosedError as exc:
                if "belongs to process" in str(exc):
                    runtime.restart_backend("MockFault")
                    child = runtime.load_network(optimize(relu_net("fine"), runtime, ["MockFault"]))
                    if np.array_equal(child.run({"x": RELU_IN})["y"], expected):
                        code = 0
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"\x00"
    np.testing.assert_array_equal(fine.run({"x": RELU_IN})["y"], expected)  # the parent's still works


def test_a_hung_worker_does_not_outlive_its_host(fault_dir: Path) -> None:
    script = textwrap.dedent("""
        import os, sys, threading
        import numpy as np
        from plugnn import Network, Runtime, optimize
        net = Network("n"); x = net.add_input("x", (8,))
        net.add_output(net.add_activation(x, "relu", name="relu_fault_hang"), "y")
        runtime = Runtime(isolate={"MockFault": "process"})
        loaded = runtime.load_network(optimize(net, runtime, ["MockFault"]))
        print(runtime.backend("MockFault").pid, flush=True)
        threading.Timer(0.5, os._exit, (0,)).start()  # the host dies while the layer hangs
        loaded.run({"x": np.ones(8, np.float32)})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    pid = int(result.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, 9)
    pytest.fail(f"worker {pid} outlived its host by 30 s")
