"""plugnn.symbolic: expressions of symbols with hints, exact arithmetic, guards for decisions."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.symbolic import Dim, ShapeEnv, evaluate, pin, sym_max, sym_min


def env_with(**hints: int) -> tuple[ShapeEnv, list[Dim]]:
    env = ShapeEnv()
    return env, [env.symbol(name, hint) for name, hint in hints.items()]


def test_arithmetic_is_exact_and_needs_no_guard() -> None:
    env, (b, s) = env_with(b=2, s=5)
    assert ((s + 1) - 1).key == s.key
    assert s - s == 0 and isinstance(s - s, int)
    assert (256 * b * s) // (4 * b * s) == 64 and isinstance((256 * b * s) // (4 * b * s), int)
    assert ((256 * b * s * 7) // (4 * s)).key == (448 * b).key
    assert ((2 * s + 4) // 2).key == (s + 2).key
    assert (6 * s) % 3 == 0
    assert ((b + 1) * (b - 1)).key == (b * b - 1).key
    assert not env.guards


def test_hints_follow_the_arithmetic() -> None:
    env, (b, s) = env_with(b=3, s=7)
    for expr, value in [(b * s + 2, 23), ((s * b) // 2, 10), (s % 4, 3), (-s + 3, -4), (sym_max(b, s), 7),
                        (sym_min(b, s), 3), (s ** 2, 49)]:
        assert expr.hint == value
        assert evaluate(expr, {"b": 3, "s": 7}) == value


def test_what_holds_for_every_binding_records_no_guard() -> None:
    env, (s,) = env_with(s=5)
    assert s + 3 > 0 and s >= 1 and not (s == 0) and s - s == 0
    assert sym_max(s, s + 1).key == (s + 1).key and sym_min(s, 0) == 0
    assert (4 * s) % 2 == 0
    assert not env.guards


def test_decisions_are_guards_that_a_binding_must_keep() -> None:
    env, (b, s) = env_with(b=2, s=5)
    assert (s == 5) is True
    assert (b < s) is True
    assert (b == s) is False
    assert len(env.guards) == 3
    assert env.broken_guard({"b": 2, "s": 5}) is None
    broken = env.broken_guard({"b": 2, "s": 6})
    assert broken is not None and "s - 5 == 0" in broken.describe()
    assert env.specialized == {"s": broken.reason}


def test_int_pins_a_symbol_to_its_hint() -> None:
    env, (s,) = env_with(s=4)
    assert int(s * 2) == 8 and range(s)[-1] == 3
    assert env.broken_guard({"s": 4}) is None and env.broken_guard({"s": 5}) is not None
    pin(np.array([s + 1, 3], dtype=object), "test")
    assert "s" in env.specialized


def test_a_dim_hashes_as_its_hint_so_sets_dedupe_by_the_guard() -> None:
    env, (b, s) = env_with(b=5, s=5)
    assert len({b, s}) == 1  # equal hints: deduplicated, with the guard b == s
    assert env.broken_guard({"b": 5, "s": 6}) is not None


def test_compile_evaluates_every_value_and_checks_guards_and_lower_bounds() -> None:
    env, (b, s) = env_with(b=2, s=5)
    assert b <= s  # a guard
    program = env.compile([b * s, s // 2 + b, 7])
    assert program({"b": 3, "s": 8}) == (24, 7, 7)
    assert program({"b": 9, "s": 8}) is None  # breaks b <= s
    assert program({"b": 0, "s": 8}) is None  # a symbol below 1


def test_numpy_moves_and_computes_dims_in_object_arrays() -> None:
    env, (b, s) = env_with(b=2, s=5)
    shape = np.array([b, s, 64], dtype=object)
    assert [v.key if isinstance(v, Dim) else v for v in np.take(shape, [1, 0])] == [s.key, b.key]
    assert np.prod(shape).key == (64 * b * s).key
    assert (np.concatenate([shape, shape])[3:] * 2)[2] == 128


def test_symbols_need_a_hint_of_at_least_one_and_one_hint() -> None:
    env = ShapeEnv()
    with pytest.raises(ValueError, match="below 1"):
        env.symbol("s", 0)
    env.symbol("s", 3)
    with pytest.raises(ValueError, match="has hint 3"):
        env.symbol("s", 4)
