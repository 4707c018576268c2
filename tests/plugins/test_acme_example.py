"""examples/acme-backend, as its author ships it: `pip wheel` builds it against the installed
plugnn's CMake package, pip installs the wheel into a fresh environment, and there plugnn
finds it through its entry point with no path configured, runs a network on it, lists it
with its distribution, and `plugnn check-backend` passes it."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

pytestmark = pytest.mark.plugins

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "acme-backend"


@pytest.fixture(scope="module")
def acme_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the example's wheel installed; returns its python."""
    work = tmp_path_factory.mktemp("acme")
    source = work / "acme-backend"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    env = clean_env()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                            str(source), "-w", str(work / "dist")], capture_output=True, text=True, env=env,
                           timeout=HANG_GUARD_S)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("acme_plugnn-0.1.0-py3-none-*.whl")

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    # plugnn, NumPy and pip come from the environment running these tests (a venv of its own,
    # an editable install: its site directories, with their .pth files, are added).
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    parents = [p for p in site.getsitepackages() if os.path.isdir(p)]
    Path(purelib, "_plugnn_test_parent.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in parents) + "\n")
    installed = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
                               capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python


def clean_env() -> dict[str, str]:
    """The environment without any plugnn path configured."""
    return {k: v for k, v in os.environ.items() if k not in ("PLUGNN_DYNAMIC_BACKEND_PATHS", "PYTHONPATH")}


def run(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=clean_env(), timeout=HANG_GUARD_S)


def test_the_installed_wheel_runs_a_network_found_through_its_entry_point(acme_env: Path) -> None:
    script = textwrap.dedent("""
        import numpy as np
        import plugnn

        rng = np.random.default_rng(0)
        w, b = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
        net = plugnn.Network("acme")
        x = net.add_input("x", (3, 8))
        y = net.add_fully_connected(x, w, b, name="fc")
        y = net.add_mul(y, y, name="square")
        net.add_output(net.add_activation(y, "sigmoid", name="sigmoid"), "y")
        with plugnn.Runtime() as runtime:
            (acme,) = [d for d in runtime.describe() if d["backend_id"] == "AcmeBasic"]
            print("source", acme["source"])
            print("origin", acme["origin"])
            optimized = plugnn.optimize(net, runtime, backends=["AcmeBasic", "CpuRef"])
            print("placed", sorted({n.backend_id for n in optimized.graph.nodes if n.backend_id}))
            data = rng.standard_normal((3, 8)).astype(np.float32)
            out = runtime.load_network(optimized).run({"x": data})["y"]
            expected = 1 / (1 + np.exp(-((data @ w + b) ** 2)))
            print("max_error", float(np.abs(out - expected).max()))
        """)
    result = run(acme_env, "-c", script)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["source"] == "acme-plugnn 0.1.0"
    assert lines["origin"].endswith("acme_plugnn/backends/Acme_Basic_backend.so")
    assert "venv" in lines["origin"], "the plugin comes from the environment the wheel went into"
    assert lines["placed"] == "['AcmeBasic']"
    assert float(lines["max_error"]) < 1e-5


def test_backends_lists_it_with_its_distribution(acme_env: Path) -> None:
    result = run(acme_env, "-m", "plugnn", "backends")
    assert result.returncode == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("AcmeBasic")]
    assert row.split()[-2:] == ["acme-plugnn", "0.1.0"]


def test_check_backend_passes_it(acme_env: Path) -> None:
    where = run(acme_env, "-c", "import acme_plugnn; print(acme_plugnn.BACKENDS_DIR)").stdout.strip()
    result = run(acme_env, "-m", "plugnn", "check-backend", os.path.join(where, "Acme_Basic_backend.so"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "result: PASS (all 7 checks)"
    assert "claimed (ElementwiseBinary, Activation, FullyConnected)" in result.stdout
