"""The runs: one warm-up run, the timed iterations with a progress bar on a terminal, the profile table."""

from __future__ import annotations

import statistics
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from plugnn.run.arguments import DEFAULT_BUDGET_SECONDS, DEFAULT_ITERATIONS

if TYPE_CHECKING:
    import numpy as np

    from plugnn import LoadedNetwork

# The progress bar shows when the timed runs should take longer than this, or are this many.
PROGRESS_AFTER_SECONDS = 2.0
PROGRESS_ITERATIONS = 100


class Progress:
    """A one-line progress bar on a terminal (stderr); silent anywhere else."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self._shown = 0.0
        self._width = 0

    def update(self, done: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._shown < 0.1:
            return
        self._shown = now
        filled = 30 * done // self.total
        line = f"\rrunning [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total}"
        self._width = len(line)
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def time_runs(loaded: LoadedNetwork, inputs: dict[str, np.ndarray], iterations: int | None, profile: bool
              ) -> tuple[dict[str, np.ndarray], dict[str, Any], list[list[dict[str, Any]]]]:
    """(the last run's outputs, the report's "timing", each timed run's profile if `profile`)."""
    start = time.perf_counter()
    outputs = loaded.run(inputs)  # warm-up: first-run allocations, caches; not counted
    warmup = time.perf_counter() - start
    if iterations is None:
        iterations = max(1, min(DEFAULT_ITERATIONS, int(DEFAULT_BUDGET_SECONDS / max(warmup, 1e-9))))
    show = _isatty(sys.stderr) and (iterations >= PROGRESS_ITERATIONS or warmup * iterations > PROGRESS_AFTER_SECONDS)
    progress = Progress(iterations, sys.stderr, show)
    seconds, profiles = [], []
    try:
        for i in range(iterations):
            start = time.perf_counter()
            outputs = loaded.run(inputs, profile=profile)
            seconds.append(time.perf_counter() - start)
            if profile:
                profiles.append(loaded.last_profile)
            progress.update(i + 1, force=i + 1 == iterations)
    finally:
        progress.close()
    ms = [s * 1e3 for s in seconds]
    timing = {"iterations": iterations, "warmup_ms": warmup * 1e3, "median_ms": statistics.median(ms),
              "min_ms": min(ms), "max_ms": max(ms), "profiled": profile}
    return outputs, timing, profiles


def profile_table(profiles: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per layer in execution order: its backend, the median ms over the runs, its share of the sum;
    for a fused layer whose backend breaks it down, `nodes`: per original layer inside it, the
    median ms and its share of the sum."""
    rows = []
    for step, entry in enumerate(profiles[0]):
        median = statistics.median(p[step]["seconds"] for p in profiles) * 1e3
        row: dict[str, Any] = {"layer": entry["layer"], "backend": entry["backend"], "median_ms": median}
        if entry.get("nodes"):
            row["nodes"] = [{"layer": node["layer"], "median_ms": statistics.median(
                _node_seconds(p[step], k, node["layer"]) for p in profiles) * 1e3}
                for k, node in enumerate(entry["nodes"])]
        rows.append(row)
    total = sum(r["median_ms"] for r in rows) or 1.0
    for row in rows:
        row["share"] = row["median_ms"] / total
        for node in row.get("nodes", ()):
            node["share"] = node["median_ms"] / total
    return rows


def _node_seconds(entry: dict[str, Any], index: int, layer: str) -> float:
    """The seconds of original layer `layer` (at `index`) inside one run's fused `entry` (0 when that
    run did not report it)."""
    nodes = entry.get("nodes") or ()
    if index < len(nodes) and nodes[index]["layer"] == layer:
        return float(nodes[index]["seconds"])
    return next((float(n["seconds"]) for n in nodes if n["layer"] == layer), 0.0)
