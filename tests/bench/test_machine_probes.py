"""scripts/bench/machine.py: the FMA peak probe (fma_peak.c) builds, runs and fails clearly.

Only that a figure comes out and that it is a plausible number is checked, never its size
against a goal: timing belongs to the benchmark, not to the test suite.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BENCH = REPO / "scripts" / "bench"
_spec = importlib.util.spec_from_file_location("plugnn_bench_machine", BENCH / "machine.py")
assert _spec is not None and _spec.loader is not None
machine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(machine)


@pytest.fixture
def fresh_build(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The probe's binary is built once per process: forget it before and after the test."""
    machine._fma_peak_binary.cache_clear()
    yield monkeypatch
    machine._fma_peak_binary.cache_clear()


@pytest.mark.parametrize("threads", [1, 2])
def test_fma_peak_is_a_positive_finite_rate(fresh_build: pytest.MonkeyPatch, threads: int) -> None:
    gflops = machine.fma_peak_gflops(threads, iterations=200_000, repeats=2)
    # a core of any machine this runs on does between 1 and 10 000 GFLOP/s
    assert 1.0 < gflops < 10_000.0 * threads, gflops


def test_probe_rejects_bad_arguments(fresh_build: pytest.MonkeyPatch) -> None:
    binary = machine._fma_peak_binary()
    for args in (["0", "10", "1"], ["1", "0", "1"], ["1", "10", "0"], ["1", "10"], ["x", "10", "1"]):
        ran = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=30)
        assert ran.returncode == 2, (args, ran.stdout, ran.stderr)
        assert "fma_peak" in ran.stderr or "usage" in ran.stderr


def test_missing_compiler_is_a_clear_error(fresh_build: pytest.MonkeyPatch) -> None:
    fresh_build.setenv("CC", "/nonexistent/cc")
    with pytest.raises(machine.MachineProbeError, match=r"cannot build fma_peak\.c with /nonexistent/cc"):
        machine.fma_peak_gflops(1, iterations=1000, repeats=1)


def test_run_without_a_compiler_names_the_way_out(tmp_path: Path) -> None:
    env = {"CC": "/nonexistent/cc", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "cannot measure the FMA peak" in ran.stderr and "--peak-gflops" in ran.stderr


def test_a_given_peak_needs_no_compiler(tmp_path: Path) -> None:
    env = {"CC": "/nonexistent/cc", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1",
                          "--backends", "CpuRef", "--peak-gflops", "100"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "100 GFLOP/s (given)" in ran.stdout
