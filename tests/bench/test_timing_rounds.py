"""scripts/bench/timing.measure_rounds: how runners are timed side by side (alternating blocks,
shared sample limits, a failing runner reported alone). Fake runners that record their calls;
no pauses; nothing about time is asserted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent.parent / "scripts" / "bench" / "timing.py"
_spec = importlib.util.spec_from_file_location("plugnn_bench_timing", _PATH)
assert _spec is not None and _spec.loader is not None
timing = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # dataclasses look it up there
_spec.loader.exec_module(timing)

BUDGET = timing.Budget(warmup=1, min_runs=6, max_runs=12, seconds=0.0, min_sample=0.0, rounds=3, pause=0.0)


def recorder(log: list[str], name: str, fail_at: int | None = None):  # type: ignore[no-untyped-def]
    calls = [0]

    def fn() -> None:
        calls[0] += 1
        if fail_at is not None and calls[0] >= fail_at:
            raise RuntimeError(f"{name} failed at call {calls[0]}")
        log.append(name)
    return fn


def blocks(log: list[str]) -> list[str]:
    """The log with consecutive calls of one runner collapsed: the order of the blocks."""
    return [name for i, name in enumerate(log) if i == 0 or log[i - 1] != name]


def test_runners_alternate_block_by_block() -> None:
    log: list[str] = []
    results = timing.measure_rounds([recorder(log, "a"), recorder(log, "b"), recorder(log, "c")], BUDGET)
    # the warm-up calls (one per runner, in order), then three rounds of a, b, c
    assert blocks(log) == ["a", "b", "c"] + ["a", "b", "c"] * 3
    for result in results:
        assert isinstance(result, timing.Timing)
        assert result.samples == 6  # budget spent at once: each round takes its share of min_runs
        assert result.calls_per_sample == 1
        assert result.minimum <= result.median


def test_sample_limits_are_shared_over_the_rounds() -> None:
    log: list[str] = []
    generous = timing.Budget(warmup=2, min_runs=1, max_runs=9, seconds=60.0, min_sample=0.0, rounds=3, pause=0.0)
    (result,) = timing.measure_rounds([recorder(log, "a")], generous)
    assert isinstance(result, timing.Timing)
    assert result.samples == 9  # max_runs // rounds per round; the time budget is not the limit
    assert len(log) == 2 + 3 * (1 + 3)  # warm-up, then per round one untimed call and 3 samples


def test_a_failing_runner_is_reported_and_the_others_go_on() -> None:
    log: list[str] = []
    results = timing.measure_rounds([recorder(log, "a"), recorder(log, "b", fail_at=5), recorder(log, "c")],
                                    BUDGET)
    assert isinstance(results[1], RuntimeError) and "b failed at call 5" in str(results[1])
    assert isinstance(results[0], timing.Timing) and results[0].samples == 6
    assert isinstance(results[2], timing.Timing) and results[2].samples == 6
    assert "b" not in blocks(log)[blocks(log).index("c", 3):]  # b left out once it failed


def test_a_runner_failing_in_its_warm_up_is_never_timed() -> None:
    log: list[str] = []
    results = timing.measure_rounds([recorder(log, "a", fail_at=1), recorder(log, "b")], BUDGET)
    assert isinstance(results[0], RuntimeError)
    assert log.count("a") == 0 and isinstance(results[1], timing.Timing)


@pytest.mark.parametrize("rounds", [1, 4])
def test_one_round_times_each_runner_once_in_turn(rounds: int) -> None:
    log: list[str] = []
    budget = timing.Budget(warmup=1, min_runs=4, max_runs=8, seconds=0.0, min_sample=0.0, rounds=rounds, pause=0.0)
    timing.measure_rounds([recorder(log, "a"), recorder(log, "b")], budget)
    assert blocks(log) == ["a", "b"] + ["a", "b"] * rounds
