"""The benchmark suite (scripts/bench) in --quick mode: tiny shapes, 1-2 timed runs, a few seconds.

It runs so the suite cannot rot (a renamed API, a builder that no longer checks, a backend
option that changed). Nothing about time is asserted: only that the command exits 0 and that
every row of the suite printed a result (or "not available" / "skipped") for onnxruntime and
every requested backend. Exit 0 also means every plugnn output agreed with onnxruntime's
(max|plugnn - ort| / max|ort| <= 1e-3): a mismatch makes run.py exit 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import plugnn

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

REPO = Path(__file__).resolve().parent.parent.parent
RUN = REPO / "scripts" / "bench" / "run.py"
sys.path.insert(0, str(RUN.parent))  # zoo_cases imports cases as run.py does
import cases  # noqa: E402
import zoo_cases  # noqa: E402

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

QUICK_CASES = [c for c in cases.CASES + zoo_cases.zoo_cases() if c.in_quick]

STATUSES = {"ok", "not available", "skipped"}


def available_backends() -> list[str]:
    with plugnn.Runtime() as runtime:
        return list(runtime.backend_ids)


BACKEND_SETS = ["CpuRef"] + (["CpuAcc,CpuRef"] if "CpuAcc" in available_backends() else [])


@pytest.mark.parametrize("backends", BACKEND_SETS)
def test_quick_mode_runs_every_row(tmp_path: Path, backends: str) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, str(RUN), "--quick", "--backends", backends, "--json", str(out)],
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    records = json.loads(out.read_text())["results"]
    requested = backends.split(",")
    peers = set(json.loads(out.read_text())["meta"]["peers"])
    assert "onnxruntime" in peers
    assert {r["row"] for r in records} == {c.name for c in QUICK_CASES}
    for case in QUICK_CASES:
        mine = [r for r in records if r["row"] == case.name]
        assert {r["backend"] for r in mine} == {*peers, *requested}, (case.name, mine)
        for r in mine:
            assert r["status"] in STATUSES, r
            if r["status"] == "ok":
                assert r["median_ms"] is not None and r["median_ms"] > 0, r
        # the printed table has a line for every (row, backend) too
        for backend in {*peers, *requested}:
            assert any(line.startswith(case.name) and f" {backend} " in line
                       for line in result.stdout.splitlines()), (case.name, backend)


def test_missing_backend_is_not_available_not_an_error(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(RUN), "--quick", "--backends", "NoSuchBackend",
                             "--rows", "^relu", "--threads", "1"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if " NoSuchBackend " in line)
    assert "not available" in line
