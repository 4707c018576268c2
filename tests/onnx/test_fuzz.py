"""A bounded run of the malformed-model fuzzer (scripts/fuzz_models.py): 250 seeded mutants of its
five graphs and every 10th single-operator edge case, each through plugnn, onnx.checker and
onnxruntime in a forked child. The count of untyped exceptions, crashes, hangs, bare
MemoryErrors, models onnx.checker rejects for duplicate names or wrong arity that plugnn runs, and
output differences from onnxruntime that onnx.reference does not explain must stay 0. The seed
is fixed: the same cases every run (the large run: the script with --mutants 3000 --edge-cases)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and RLIMIT_AS: Linux")

SCRIPT = Path(__file__).resolve().parent.parent.parent / "scripts" / "fuzz_models.py"
# A hang detector, not a time limit: the work is bounded (a fixed number of cases).
HANG_GUARD_S = 1800


def test_malformed_models_are_typed_errors(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    result = subprocess.run([sys.executable, str(SCRIPT), "--mutants", "250", "--seed", "2034", "--edge-cases",
                             "--edge-stride", "10", "--hang-seconds", "120", "--json", str(out)],
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    summary = json.loads(out.read_text())["summary"]
    findings = {key: [(r["case"], r.get("plugnn_error"), r.get("where")) for r in summary[key]]
                for key in ("untyped", "crashes", "hangs", "memory_errors", "accepted_invalid", "unexplained")}
    assert all(not found for found in findings.values()), findings
    assert result.returncode == 0, result.stdout + result.stderr
    assert summary["cases"] >= 250 + 200
    assert summary["plugnn"].get("ok", 0) > 0 and summary["plugnn"].get("typed", 0) > 0  # both kinds are exercised
