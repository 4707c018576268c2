"""A vendor's end-to-end tests with its backend isolated (`pytest --plugnn-isolate ID`): the test
whose kernel crashes fails with BackendCrashedError, and the test run goes on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plugnn.loader import ENV_VAR

pytestmark = pytest.mark.plugins

VENDOR_TESTS = textwrap.dedent("""
    import numpy as np
    from plugnn import Network, Runtime, optimize

    def net(name):
        n = Network("n")
        x = n.add_input("x", (4,))
        n.add_output(n.add_activation(x, "relu", name=name), "y")
        return n

    def test_a_kernel_that_crashes():
        with Runtime() as runtime:
            loaded = runtime.load_network(optimize(net("relu_fault_abort"), runtime, ["MockFault"]))
            loaded.run({"x": np.ones(4, np.float32)})

    def test_the_next_test_runs():
        with Runtime() as runtime:
            assert runtime.backend("MockFault").isolation == "process"
            loaded = runtime.load_network(optimize(net("fine"), runtime, ["MockFault"]))
            assert loaded.run({"x": -np.ones(4, np.float32)})["y"].tolist() == [0, 0, 0, 0]
""")


def test_pytest_plugnn_isolate(fault_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "test_vendor.py").write_text(VENDOR_TESTS)
    env = dict(os.environ, **{ENV_VAR: str(fault_dir)})
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--plugnn-isolate",
                             "MockFault", str(tmp_path / "test_vendor.py")], capture_output=True, text=True,
                            cwd=tmp_path, env=env, timeout=300)
    assert "1 failed, 1 passed" in result.stdout, result.stdout + result.stderr
    assert "BackendCrashedError: backend 'MockFault': execute(layer 'relu_fault_abort') failed" in result.stdout
    assert "was killed by SIGABRT" in result.stdout
