"""scripts/bench/zoo_table.py: the zoo table and its counts from run.py's JSON (made up here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "scripts" / "bench" / "zoo_table.py"


def result(row: str, threads: int, backend: str, ms: float, fraction: float | None = None,
           status: str = "ok") -> dict:
    return {"row": row, "threads": threads, "backend": backend, "status": status, "median_ms": ms,
            "peak_fraction": fraction}


def run_json(path: Path, results: list[dict]) -> Path:
    meta = {"date": "2026-11-27", "peak_gflops": [250.0, 500.0],
            "cpu": {"model": "Test CPU", "cpus": 2, "extensions": ["avx2", "avx512f"]}}
    path.write_text(json.dumps({"meta": meta, "results": results}))
    return path


def table(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_rows_ratios_fractions_and_counts(tmp_path: Path) -> None:
    now = run_json(tmp_path / "now.json", [
        result("zoo a", 1, "onnxruntime", 10.0), result("zoo a", 1, "openvino", 8.0),
        result("zoo a", 1, "CpuAcc", 9.0, 0.812),                      # 1.125 of OpenVINO
        result("zoo b", 2, "onnxruntime", 4.0), result("zoo b", 2, "openvino", 5.0),
        result("zoo b", 2, "CpuAcc", 3.0),                             # 0.75 of onnxruntime
        result("zoo c", 1, "onnxruntime", 2.0), result("zoo c", 1, "CpuAcc", 2.2),  # 1.10: within 10 %
        result("zoo d", 1, "onnxruntime", 1.0), result("zoo d", 1, "CpuAcc", 0.0, status="failed"),
        result("conv 3x3 64 56", 1, "onnxruntime", 1.0), result("conv 3x3 64 56", 1, "CpuAcc", 1.0),
    ])
    before = run_json(tmp_path / "before.json", [
        result("zoo a", 1, "onnxruntime", 10.0), result("zoo a", 1, "CpuAcc", 10.5),   # 1.05
        result("zoo c", 1, "onnxruntime", 2.0), result("zoo c", 1, "CpuAcc", 1.9),     # 0.95
    ])
    done = table(str(now), str(before))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("CPU: Test CPU, 2 CPUs, avx2 avx512f; run 2026-11-27; FMA peak 250.0, 500.0")
    assert "| a | 1 | 9 | 10 | 8 | 1.12 (1.05) | 81 % |" in lines
    assert "| b | 2 | 3 | 4 | 5 | 0.75 | - |" in lines
    assert "| c | 1 | 2.2 | 2 | - | 1.10 (0.95) | - |" in lines
    assert not any(line.startswith(("| d ", "| conv")) for line in lines)   # failed and non-zoo rows left out
    assert "1 of 3 rows at or below the faster peer, 2 within 10 %." in lines
    assert "Behind in both runs (1): a 1t." in lines


def test_bad_input_is_named(tmp_path: Path) -> None:
    missing = table(str(tmp_path / "nope.json"))
    assert missing.returncode != 0 and "cannot read" in missing.stderr and "nope.json" in missing.stderr
    empty = run_json(tmp_path / "empty.json", [result("conv 3x3 64 56", 1, "CpuAcc", 1.0)])
    no_zoo = table(str(empty))
    assert no_zoo.returncode != 0 and "has no zoo rows" in no_zoo.stderr
