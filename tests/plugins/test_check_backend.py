"""`plugnn check-backend`: passes CpuRef, CpuAcc and every well-formed mock; fails each
malformed mock, the crashing ones and a plugin with a wrong kernel, naming the fault; the
same as pytest tests through the plugnn.testing plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plugnn import loader
from plugnn.check import CHECKS, check_backend

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

pytestmark = pytest.mark.plugins


@pytest.fixture(autouse=True)
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_PROBE_TIMEOUT", "1")


def mock_file(mock_out_dir: Path, mock: str) -> Path:
    manifest = json.loads((mock_out_dir / "mocks.json").read_text())
    return mock_out_dir / mock / manifest[mock]["file"]


# mock -> (the check that fails, a piece of its finding)
MALFORMED = {
    "no_get_backend_id": ("entry points", "missing entry point GetBackendId"),
    "no_get_version": ("exports", "missing entry point GetVersion"),
    "no_backend_factory": ("entry points", "missing entry point BackendFactory"),
    "mangled": ("exports", "exports 3 symbols besides the entry points: _Z10GetVersionPjS_"),
    "null_id": ("entry points", "GetBackendId returned NULL"),
    "empty_id": ("entry points", "empty backend id"),
    "bad_chars_id": ("entry points", "backend id 'Mock-Bad.Id' has characters other than"),
    "reserved_id": ("entry points", "backend id 'Host' is reserved"),
    "long_id": ("entry points", "longer than 64 characters"),
    "major_2": ("entry points", "backend API version 2.0 is not compatible"),
    "newer_minor": ("entry points", "backend API version 1.99 is not compatible"),
    "factory_null": ("backend object", "BackendFactory returned NULL"),
    "struct_too_small": ("backend object", "lacks the required function create_workload_factory"),
    "missing_dependency": ("entry points", "libmock_dep.so: cannot open shared object file"),
    "segv_factory": ("probe", "SIGSEGV in BackendFactory"),
    "abort_constructor": ("probe", "SIGABRT in dlopen"),
    "exit_get_backend_id": ("probe", "exit(3) in GetBackendId"),
    "hang_get_version": ("probe", "timed out after 1 s in GetVersion"),
    "hang_factory": ("probe", "timed out after 1 s in BackendFactory"),
    "segv_destroy": ("probe", "SIGSEGV in pn_backend.destroy"),
    "wrong_kernel": ("layers", "Activation relu[17]: 1 of 17 elements differ beyond rtol 0.0001, atol 1e-05; "
                               "worst at (16,)"),
    "leak": ("lifecycle", "memory grows by about"),
}
WELL_FORMED = ["valid", "other", "twin", "older_minor", "abi_1_0"]


@pytest.mark.parametrize("mock", MALFORMED)
def test_each_malformed_mock_fails_naming_the_fault(mock_out_dir: Path, mock: str) -> None:
    check, finding = MALFORMED[mock]
    report = check_backend(mock_file(mock_out_dir, mock), step_timeout=2)
    assert not report.passed
    failures = report.checks[check].failures
    assert any(finding in f for f in failures), (check, failures, report.text())


@pytest.mark.parametrize("mock", WELL_FORMED)
def test_well_formed_mocks_pass(mock_out_dir: Path, mock: str) -> None:
    report = check_backend(mock_file(mock_out_dir, mock))
    assert report.passed, report.text()
    assert [c.status for c in report.checks.values()] == ["pass"] * len(CHECKS)


@pytest.mark.parametrize("backend", ["CpuRef", "CpuAcc"])
def test_the_bundled_backends_pass(backend: str) -> None:
    report = check_backend(Path(loader.BUNDLED_DIR) / f"Plugnn_{backend}_backend.so")
    assert report.passed, report.text()
    assert report.oracle_is_self == (backend == "CpuRef")
    claimed = {kind for kind, counts in report.layers.items() if counts.claimed}
    assert {"Convolution2d", "FullyConnected", "Softmax", "Concat", "TreeEnsemble"} <= claimed
    assert all(c.failed == 0 and c.matched + c.untested == c.claimed for c in report.layers.values())


def test_a_crash_in_one_layer_is_a_finding_and_the_sweep_goes_on(mock_out_dir: Path) -> None:
    report = check_backend(mock_file(mock_out_dir, "segv_execute"), layers=["Activation", "Convolution2d"])
    assert report.checks["layers"].failures == ["Activation relu[17]: SIGSEGV"]
    assert report.layers["Activation"].failed == 1
    assert report.layers["Activation"].matched == 3, "the other RELUs after the crash were run"
    assert report.layers["Convolution2d"].matched > 0, "the next kind was swept"
    assert all(report.checks[c].status == "pass" for c in CHECKS if c != "layers")


def test_command_line_exit_status_and_report(mock_out_dir: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "plugnn", "check-backend", *args], capture_output=True,
                              text=True, timeout=HANG_GUARD_S)

    good = run(str(mock_file(mock_out_dir, "valid")))
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.splitlines()[-1] == f"result: PASS (all {len(CHECKS)} checks)"
    bad = run(str(mock_file(mock_out_dir, "wrong_kernel")), "--layers", "Activation,ElementwiseBinary")
    assert bad.returncode == 1
    assert "FAIL  layers" in bad.stdout and "Activation relu[17]: 1 of 17 elements differ" in bad.stdout
    assert "of 2 kinds asked" in bad.stdout
    data = json.loads(run(str(mock_file(mock_out_dir, "segv_factory")), "--json").stdout)
    assert data["passed"] is False
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert statuses["probe"] == "fail" and statuses["layers"] == "not run"
    unknown = run(str(mock_file(mock_out_dir, "valid")), "--layers", "Teleport")
    assert unknown.returncode == 2 and "no layer kind 'Teleport' in the sweep" in unknown.stderr


def test_a_file_the_runtime_would_not_look_at(tmp_path: Path, mock_out_dir: Path) -> None:
    renamed = tmp_path / "libvalid.so"
    renamed.write_bytes(mock_file(mock_out_dir, "valid").read_bytes())
    report = check_backend(renamed, layers=["Copy"])
    assert report.checks["file"].failures == [
        "libvalid.so is not named <vendor>_<name>_backend.so[.<version>]: the runtime would not look at it"]
    missing = check_backend(tmp_path / "Acme_Gone_backend.so")
    assert missing.checks["file"].failures == ["no such file"] and not missing.passed


def test_options_given_on_the_command_line_round_trip(mock_out_dir: Path) -> None:
    report = check_backend(mock_file(mock_out_dir, "valid"), layers=["Copy"], options={"num_threads": "3"})
    assert report.passed, report.text()
    bad = check_backend(mock_file(mock_out_dir, "valid"), layers=["Copy"], options={"num_threads": "0"})
    assert any("num_threads must be an integer in 1..256" in f for f in bad.checks["lifecycle"].failures)


def test_the_pytest_plugin(mock_out_dir: Path, tmp_path: Path) -> None:
    def pytest_run(mock: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--plugnn-backend",
                               str(mock_file(mock_out_dir, mock)), "--plugnn-layers", "Activation,Copy"],
                              capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=tmp_path,
                              env=dict(os.environ, PYTHONWARNINGS="ignore"))

    good = pytest_run("valid")
    assert good.returncode == 0, good.stdout
    assert "8 passed" in good.stdout  # 6 checks + 2 layer kinds
    bad = pytest_run("wrong_kernel")
    assert bad.returncode == 1
    assert "1 failed, 7 passed" in bad.stdout
    assert "plugnn-backend[Mock_WrongKernel_backend.so]::layers[Activation]" in bad.stdout
