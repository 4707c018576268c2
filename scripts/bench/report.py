"""Result records and their presentation: a plain-text table, Markdown and JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Result:
    row: str
    threads: int
    backend: str                 # "onnxruntime", "CpuAcc", "CpuRef", ...
    status: str                  # "ok", "mismatch", "not available", "skipped", "error"
    median_ms: float | None = None
    min_ms: float | None = None
    runs: int = 0
    metric: str = "time"         # "flops", "bytes" or "time"
    rate: float | None = None    # GFLOP/s or GB/s
    peak_fraction: float | None = None
    ratio_vs_ort: float | None = None   # plugnn median / onnxruntime median (same row, same threads)
    ratio_vs_best: float | None = None  # plugnn median / the fastest peer's median (same row, same threads)
    rel_diff: float | None = None       # max|plugnn - ort| / max|ort|
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


UNITS = {"flops": "GFLOP/s", "bytes": "GB/s", "time": ""}


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.1:
        return f"{value * 1000:.1f} us"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def cells(r: Result) -> list[str]:
    if r.status in ("not available", "skipped", "error"):
        return [r.row, str(r.threads), r.backend, "-", "-", "-", "-", "-", r.status + (f": {r.note}" if r.note else "")]
    rate = f"{_fmt(r.rate, '.1f')} {UNITS[r.metric]}" if r.rate is not None else "-"
    ratio = "-" if r.ratio_vs_ort is None else f"{r.ratio_vs_ort:.2f}"
    best = "-" if r.ratio_vs_best is None else f"{r.ratio_vs_best:.2f}"
    check = "ref" if r.backend == "onnxruntime" else ("MISMATCH" if r.status == "mismatch" else "ok")
    if r.rel_diff is not None and r.backend != "onnxruntime":
        check += f" ({r.rel_diff:.0e})"
    if r.note:
        check += f"; {r.note}"
    pct = "-" if r.peak_fraction is None else f"{100 * r.peak_fraction:.0f} %"
    return [r.row, str(r.threads), r.backend, _ms(r.median_ms), rate, pct, ratio, best, check]


HEADER = ["row", "thr", "backend", "median ms", "rate", "% peak", "vs ort", "vs best", "check"]


def table(results: list[Result]) -> str:
    rows = [HEADER] + [cells(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(results: list[Result]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    for r in results:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells(r)) + " |")
    return "\n".join(lines)


def to_json(results: list[Result], meta: dict[str, Any]) -> str:
    return json.dumps({"meta": meta, "results": [asdict(r) for r in results]}, indent=2)
