"""Adaptive timing: warm up, then take samples until the time budget or the run limit is reached.

A sample is the mean of `inner` back-to-back calls, with `inner` chosen from the warm-up so a
sample lasts at least `min_sample` seconds (1 for anything slower than that; many for the
microsecond-scale overhead row, where a single perf_counter pair would be mostly noise).
The reported figure is the median sample.

measure_rounds times several runners side by side (onnxruntime and the plugnn backends of one
row): each in `rounds` blocks, the runners' blocks alternating (A B A B ...), each block after
an idle pause, the budget and sample limits shared out over the rounds. Two reasons:
- onnxruntime's pool threads go on spinning for 10-50 ms after its last run (measured here:
  a two-thread CpuAcc convolution took 2.3 ms right after an onnxruntime block, 2.0 ms 10 ms
  later, 1.1 ms from 50 ms on, as when alone), so a runner timed right after another shares
  the cores with the other's spinning threads; the pause (0.1 s) lets them stop;
- this VM goes through phases of seconds in which a process's second thread runs at a
  fraction of its speed; in alternating blocks a phase falls on every runner of the row rather
  than on one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    warmup: int = 2            # calls before timing (at least one; the first call may pack weights)
    min_runs: int = 5          # samples taken even past the budget
    max_runs: int = 50         # sample limit
    seconds: float = 1.0       # time budget per (row, backend, threads)
    min_sample: float = 0.002  # seconds per sample (below that, calls are batched)
    rounds: int = 4            # measure_rounds: alternating blocks per runner
    pause: float = 0.1         # measure_rounds: idle seconds before each block


QUICK = Budget(warmup=1, min_runs=1, max_runs=2, seconds=0.05, min_sample=0.0005, rounds=2, pause=0.0)


@dataclass(frozen=True)
class Timing:
    median: float      # seconds per call
    minimum: float
    samples: int
    calls_per_sample: int


def _calls_per_sample(fn: Callable[[], object], budget: Budget) -> int:
    clock = time.perf_counter
    start = clock()
    for _ in range(max(1, budget.warmup)):
        fn()
    estimate = (clock() - start) / max(1, budget.warmup)
    return 1 if estimate >= budget.min_sample else max(1, min(100_000, int(budget.min_sample / max(estimate, 1e-9))))


def measure_rounds(fns: Sequence[Callable[[], object]], budget: Budget) -> list[Timing | Exception]:
    """Times every fn in budget.rounds alternating blocks (see the module's docstring). A block
    is one untimed call (the pool threads wake up), then samples until the block's share of the
    budget is spent or it has its share of the samples (each at least 1, the rounds together at
    least min_runs). A fn that raises is reported by its exception and left out of the later
    rounds; the others go on."""
    clock = time.perf_counter
    rounds = max(1, budget.rounds)
    per_round_min = max(1, math.ceil(budget.min_runs / rounds))
    per_round_max = max(per_round_min, budget.max_runs // rounds)
    seconds = budget.seconds / rounds
    inner: list[int] = []
    failures: dict[int, Exception] = {}
    samples: list[list[float]] = [[] for _ in fns]
    for i, fn in enumerate(fns):
        try:
            inner.append(_calls_per_sample(fn, budget))
        except Exception as exc:  # noqa: BLE001 - reported for this runner only
            inner.append(1)
            failures[i] = exc
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            if i in failures:
                continue
            if budget.pause > 0:
                time.sleep(budget.pause)
            try:
                fn()
                taken = samples[i]
                start = len(taken)
                deadline = clock() + seconds
                while len(taken) - start < per_round_max and (len(taken) - start < per_round_min or clock() < deadline):
                    t0 = clock()
                    for _ in range(inner[i]):
                        fn()
                    taken.append((clock() - t0) / inner[i])
            except Exception as exc:  # noqa: BLE001
                failures[i] = exc
    return [failures[i] if i in failures else
            Timing(statistics.median(samples[i]), min(samples[i]), len(samples[i]), inner[i])
            for i in range(len(fns))]
