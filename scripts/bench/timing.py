"""Adaptive timing: warm up, then take samples until the time budget or the run limit is reached.

A sample is the mean of `inner` back-to-back calls, with `inner` chosen from the warm-up so a
sample lasts at least `min_sample` seconds (1 for anything slower than that; many for the
microsecond-scale overhead row, where a single perf_counter pair would be mostly noise).
The reported figure is the median sample.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    warmup: int = 2            # calls before timing (at least one; the first call may pack weights)
    min_runs: int = 5          # samples taken even past the budget
    max_runs: int = 50         # sample limit
    seconds: float = 1.0       # time budget per (row, backend, threads)
    min_sample: float = 0.002  # seconds per sample (below that, calls are batched)


QUICK = Budget(warmup=1, min_runs=1, max_runs=2, seconds=0.05, min_sample=0.0005)


@dataclass(frozen=True)
class Timing:
    median: float      # seconds per call
    minimum: float
    samples: int
    calls_per_sample: int


def measure(fn: Callable[[], object], budget: Budget) -> Timing:
    clock = time.perf_counter
    start = clock()
    for _ in range(max(1, budget.warmup)):
        fn()
    estimate = (clock() - start) / max(1, budget.warmup)
    inner = 1 if estimate >= budget.min_sample else max(1, min(100_000, int(budget.min_sample / max(estimate, 1e-9))))
    samples: list[float] = []
    deadline = clock() + budget.seconds
    while len(samples) < budget.max_runs and (len(samples) < budget.min_runs or clock() < deadline):
        t0 = clock()
        for _ in range(inner):
            fn()
        samples.append((clock() - t0) / inner)
    return Timing(statistics.median(samples), min(samples), len(samples), inner)
