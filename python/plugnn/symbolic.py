"""Symbolic dimensions: shapes that are expressions of named symbols (`batch`, `sequence`).

A `Dim` is an integer expression over symbols that also carries its *hint*, its value at the
binding the network was built for (the first shapes a session sees). It behaves like an int
wherever arithmetic is all that is asked of it (+, -, *, //, % with ints or other Dims give
Dims), so shape rules written for ints (plugnn.shapes, the ONNX converters) compute
expressions unchanged. Wherever a decision is asked of it (a comparison, `bool`, `int()`,
indexing), it answers from its hint and records the question and the answer as a *guard* in
its `ShapeEnv`: the network built is valid for every binding under which every guard gives
the same answer (torch's ShapeEnv works the same way). `int()` of a Dim records that it
equals its hint: the network is then specialized on those symbols, which is always correct,
only less general.

Expressions are kept in a canonical form, a polynomial with integer coefficients in base
atoms (symbols, and floor divisions, moduli, maxima and minima of expressions), so that
`(s + 1) - 1` is `s`, `s - s` is 0 and `(256 * b * s) // (4 * b * s)` is 64 without any
guard. Every symbol is at least 1 (an assumption each binding is checked against), so
`s + 3 > 0` needs no guard either.

`ShapeEnv.compile` turns expressions and the guards into one Python function of the
symbols' values (generated source, no tree walk per call).
"""

from __future__ import annotations

import math
import operator
import os
import traceback
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Union

__all__ = ["Dim", "Guard", "ShapeEnv", "any_symbolic", "as_dim", "evaluate", "hint_of", "hints_of", "is_symbolic", "pin",
           "sym_max", "sym_min"]

# A base atom: a symbol's name, or a tuple (op, *operands) for floor division ("//"), modulo
# ("%"), "max" and "min", whose operands are expression keys or ints. A monomial: a sorted tuple
# of base atoms (their product). An expression's key: (constant, ((monomial, coefficient), ...))
# with the terms sorted by monomial.
Atom = Union[str, tuple]
Monomial = tuple
# PLUGNN_TRACE_GUARDS=1: each guard's reason names the code that asked (to find what pins a symbol).
_TRACE = os.environ.get("PLUGNN_TRACE_GUARDS", "") not in ("", "0")
Key = tuple


def _order(item: Any) -> str:
    return item if isinstance(item, str) else repr(item)


def _key(const: int, terms: Mapping[Monomial, int]) -> Key:
    return (const, tuple(sorted(((m, c) for m, c in terms.items() if c), key=lambda t: _order(t[0]))))


def _add_keys(a: Key, b: Key, sign: int = 1) -> Key:
    terms = dict(a[1])
    for mono, coeff in b[1]:
        terms[mono] = terms.get(mono, 0) + sign * coeff
    return _key(a[0] + sign * b[0], terms)


def _mul_keys(a: Key, b: Key) -> Key:
    terms: dict[Monomial, int] = {}
    for mono, coeff in a[1]:
        terms[mono] = terms.get(mono, 0) + coeff * b[0]
    for mono, coeff in b[1]:
        terms[mono] = terms.get(mono, 0) + coeff * a[0]
    for ma, ca in a[1]:
        for mb, cb in b[1]:
            mono = tuple(sorted(ma + mb, key=_order))
            terms[mono] = terms.get(mono, 0) + ca * cb
    return _key(a[0] * b[0], terms)


def _atom_key(atom: Atom) -> Key:
    return (0, (((atom,), 1),))


def _exact_quotient(a: Key, b: Key) -> Key | None:
    """a / b when b divides a exactly as polynomials (b an int, or one monomial term), else None."""
    b_const, b_terms = b
    if not b_terms:
        if b_const == 0:
            return None
        if a[0] % b_const or any(c % b_const for _, c in a[1]):
            return None
        return (a[0] // b_const, tuple((m, c // b_const) for m, c in a[1]))
    if b_const or len(b_terms) != 1 or a[0]:
        return None
    divisor, k = b_terms[0]
    need = Counter(divisor)
    terms: dict[Monomial, int] = {}
    for mono, coeff in a[1]:
        have = Counter(mono)
        if coeff % k or any(have[f] < n for f, n in need.items()):
            return None
        terms[tuple(sorted((have - need).elements(), key=_order))] = coeff // k
    return _key(terms.pop((), 0), terms)


@dataclass(frozen=True)
class Guard:
    """A decision taken on the hints: `expression op 0` (op '==', '<' or '<=') gave `holds`."""

    key: Key
    op: str
    holds: bool
    reason: str

    def describe(self) -> str:
        text = f"{source_of(self.key)} {self.op} 0"
        return text if self.holds else f"not ({text})"


class ShapeEnv:
    """The symbols of one network, their hints, and the guards its construction recorded."""

    def __init__(self) -> None:
        self.hints: dict[str, int] = {}
        self.guards: dict[tuple[Key, str], Guard] = {}
        self.specialized: dict[str, str] = {}  # symbol -> why it was first pinned to its hint

    def symbol(self, name: str, hint: int) -> Dim:
        """The symbol `name` (made on first use with `hint`, which must be >= 1)."""
        hint = int(hint)
        known = self.hints.get(name)
        if known is None:
            if hint < 1:
                raise ValueError(f"symbol {name!r}: its hint {hint} is below 1")
            self.hints[name] = hint
        elif known != hint:
            raise ValueError(f"symbol {name!r} has hint {known}, not {hint}")
        return Dim(self, _atom_key(name), self.hints[name])

    @property
    def symbols(self) -> list[str]:
        return list(self.hints)

    def decide(self, key: Key, op: str, reason: str | Callable[[], str]) -> bool:
        """`expression op 0` at the hints, recorded as a guard unless it holds for every binding
        (`reason`: the guard's text, or a function making it, called only for a new guard)."""
        known = _decided(key, op)
        if known is not None:
            return known
        holds = _compare(evaluate_key(key, self.hints), op)
        if (key, op) not in self.guards:
            if not isinstance(reason, str):
                reason = reason()
            if _TRACE:
                reason += " at " + " <- ".join(
                    f"{f.name} ({f.filename.rsplit('/', 1)[-1]}:{f.lineno})"
                    for f in reversed(traceback.extract_stack(limit=9)[:-2]))
            self.guards[(key, op)] = Guard(key, op, holds, reason)
            if op == "==" and holds:
                for name in symbols_of(key):
                    self.specialized.setdefault(name, reason)
        return holds

    def broken_guard(self, binding: Mapping[str, int]) -> Guard | None:
        """The first guard `binding` breaks, or None when the network holds for it."""
        for guard in self.guards.values():
            if _compare(evaluate_key(guard.key, binding), guard.op) != guard.holds:
                return guard
        return None

    def compile(self, values: Sequence[Any]) -> Callable[[Mapping[str, int]], tuple[int, ...] | None]:
        """One function of a binding (symbol -> int): the values of `values` (ints or Dims) at
        it, in order, or None when a symbol is below 1 or a guard breaks."""
        names = self.symbols
        index = {name: f"s{i}" for i, name in enumerate(names)}
        lines = ["def program(binding):"]
        lines += [f"    s{i} = binding[{name!r}]" for i, name in enumerate(names)]
        checks = [f"s{i} < 1" for i in range(len(names))]
        for guard in self.guards.values():
            test = f"({source_of(guard.key, index)}) {guard.op} 0"
            checks.append(f"not ({test})" if guard.holds else test)
        for start in range(0, len(checks), 32):
            lines += [f"    if {' or '.join(checks[start:start + 32])}:", "        return None"]
        texts = [f"({source_of(v.key, index)})" if isinstance(v, Dim) else str(int(v)) for v in values]
        lines.append(f"    return ({', '.join(texts)}{',' if len(texts) == 1 else ''})")
        scope: dict[str, Any] = {}
        exec("\n".join(lines), scope)  # noqa: S102 - source generated here from expression keys
        return scope["program"]


def _compare(value: int, op: str) -> bool:
    return value == 0 if op == "==" else value < 0 if op == "<" else value <= 0


# -- what holds for every binding ---------------------------------------------------------------


def _bounds(key: Key) -> tuple[float, float]:
    """Lower and upper bounds of an expression, every symbol being in [1, inf)."""
    low = high = float(key[0])
    for mono, coeff in key[1]:
        m_low, m_high = 1.0, 1.0
        for atom in mono:
            a_low, a_high = _atom_bounds(atom)
            if a_low < 0:
                m_low, m_high = -math.inf, math.inf
                break
            m_low, m_high = m_low * a_low, m_high * a_high
        if coeff > 0:
            low, high = low + coeff * m_low, high + coeff * m_high
        else:
            low, high = low + coeff * m_high, high + coeff * m_low
    return low, high


def _atom_bounds(atom: Atom) -> tuple[float, float]:
    if isinstance(atom, str):
        return 1.0, math.inf
    op, a, b = atom
    if op in ("max", "min"):
        ba, bb = _bounds(a), _bounds(b)
        pick = max if op == "max" else min
        return pick(ba[0], bb[0]), pick(ba[1], bb[1])
    if isinstance(b, int) and b > 0:
        a_low, a_high = _bounds(a) if not isinstance(a, int) else (float(a), float(a))
        if op == "%":
            return 0.0, float(b - 1)
        return (math.floor(a_low / b) if a_low > -math.inf else -math.inf,
                math.floor(a_high / b) if a_high < math.inf else math.inf)
    return -math.inf, math.inf


def _decided(key: Key, op: str) -> bool | None:
    low, high = _bounds(key)
    if op == "==":
        return True if low == high == 0 else False if low > 0 or high < 0 else None
    if op == "<":
        return True if high < 0 else False if low >= 0 else None
    return True if high <= 0 else False if low > 0 else None


# -- evaluation and source ------------------------------------------------------------------------


def evaluate_key(key: Key, binding: Mapping[str, int]) -> int:
    total = key[0]
    for mono, coeff in key[1]:
        product = coeff
        for atom in mono:
            product *= _evaluate_atom(atom, binding)
        total += product
    return total


def _evaluate_atom(atom: Atom, binding: Mapping[str, int]) -> int:
    if isinstance(atom, str):
        return binding[atom]
    op, a, b = atom
    x = a if isinstance(a, int) else evaluate_key(a, binding)
    y = b if isinstance(b, int) else evaluate_key(b, binding)
    if op == "//":
        return x // y
    if op == "%":
        return x % y
    return max(x, y) if op == "max" else min(x, y)


def source_of(key: Key, index: Mapping[str, str] | None = None) -> str:
    """Python source of an expression: symbols by name, or by `index`'s variable names."""
    parts = []
    for mono, coeff in key[1]:
        text = "*".join(_atom_source(a, index) for a in mono)
        parts.append(text if coeff == 1 else f"-{text}" if coeff == -1 else f"{coeff}*{text}")
    if key[0] or not parts:
        parts.append(str(key[0]))
    return " + ".join(parts).replace("+ -", "- ")


def _atom_source(atom: Atom, index: Mapping[str, str] | None) -> str:
    if isinstance(atom, str):
        return index[atom] if index is not None else atom
    op, a, b = atom
    x = str(a) if isinstance(a, int) else f"({source_of(a, index)})"
    y = str(b) if isinstance(b, int) else f"({source_of(b, index)})"
    return f"({x} {op} {y})" if op in ("//", "%") else f"{op}({x}, {y})"


def symbols_of(key: Key) -> set[str]:
    found: set[str] = set()
    for mono, _ in key[1]:
        for atom in mono:
            if isinstance(atom, str):
                found.add(atom)
            else:
                for arg in atom[1:]:
                    if not isinstance(arg, int):
                        found |= symbols_of(arg)
    return found


# -- the expression type ---------------------------------------------------------------------------

Operand = Union[int, "Dim"]


def _key_of(value: Any) -> Key | None:
    if isinstance(value, Dim):
        return value.key
    if isinstance(value, bool):
        return None
    try:
        return (operator.index(value), ())  # ints and NumPy integers
    except TypeError:
        return None


def _hint(value: Any) -> int:
    return value.hint if isinstance(value, Dim) else operator.index(value)


class Dim:
    """A symbolic integer: an expression of the symbols of `env`, with its hint."""

    __slots__ = ("env", "key", "hint")

    def __init__(self, env: ShapeEnv, key: Key, hint: int) -> None:
        self.env = env
        self.key = key
        self.hint = hint

    def _make(self, key: Key, hint: int) -> Operand:
        return key[0] if not key[1] else Dim(self.env, key, hint)

    # -- arithmetic (exact: no guard) -----------------------------------------------------------

    def __add__(self, other: Any) -> Any:
        k = _key_of(other)
        return NotImplemented if k is None else self._make(_add_keys(self.key, k), self.hint + _hint(other))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        k = _key_of(other)
        return NotImplemented if k is None else self._make(_add_keys(self.key, k, -1), self.hint - _hint(other))

    def __rsub__(self, other: Any) -> Any:
        k = _key_of(other)
        return NotImplemented if k is None else self._make(_add_keys(k, self.key, -1), _hint(other) - self.hint)

    def __neg__(self) -> Any:
        return self._make(_mul_keys(self.key, (-1, ())), -self.hint)

    def __pos__(self) -> Dim:
        return self

    def __mul__(self, other: Any) -> Any:
        k = _key_of(other)
        return NotImplemented if k is None else self._make(_mul_keys(self.key, k), self.hint * _hint(other))

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Any:
        return NotImplemented if _key_of(other) is None else _divide(self, other, "//")

    def __rfloordiv__(self, other: Any) -> Any:
        return NotImplemented if _key_of(other) is None else _divide(other, self, "//")

    def __mod__(self, other: Any) -> Any:
        return NotImplemented if _key_of(other) is None else _divide(self, other, "%")

    def __rmod__(self, other: Any) -> Any:
        return NotImplemented if _key_of(other) is None else _divide(other, self, "%")

    def __pow__(self, other: Any) -> Any:
        if isinstance(other, int) and not isinstance(other, bool) and other >= 0:
            result: Any = 1
            for _ in range(other):
                result = result * self
            return result
        return self._specialize("raised to a power") ** other

    def __truediv__(self, other: Any) -> float:
        return self._specialize("divided (true division)") / other

    def __rtruediv__(self, other: Any) -> float:
        return other / self._specialize("divided (true division)")

    def __abs__(self) -> Any:
        return self if self >= 0 else -self

    # -- decisions (answered from the hints, recorded as guards) -----------------------------------

    def _decide(self, other: Any, op: str, flip: bool = False) -> Any:
        k = _key_of(other)
        if k is None:
            return NotImplemented
        diff = _add_keys(k, self.key, -1) if flip else _add_keys(self.key, k, -1)
        return self.env.decide(diff, op, lambda: f"{self!r} compared with {other!r}")

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._decide(other, "==")

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        result = self._decide(other, "==")
        return result if result is NotImplemented else not result

    def __lt__(self, other: Any) -> Any:
        return self._decide(other, "<")

    def __le__(self, other: Any) -> Any:
        return self._decide(other, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._decide(other, "<", flip=True)

    def __ge__(self, other: Any) -> Any:
        return self._decide(other, "<=", flip=True)

    def __bool__(self) -> bool:
        return self != 0

    def __hash__(self) -> int:
        return hash(self.hint)  # a Dim equal to another Dim or an int has its hint

    def _specialize(self, why: str) -> int:
        self.env.decide(_add_keys(self.key, (self.hint, ()), -1), "==", lambda: f"{self!r} {why}")
        return self.hint

    def __index__(self) -> int:
        return self._specialize("used as a concrete integer")

    def __int__(self) -> int:
        return self._specialize("converted to int")

    def __float__(self) -> float:
        return float(self._specialize("converted to float"))

    def __round__(self, ndigits: int | None = None) -> int:
        return self._specialize("rounded")

    def __repr__(self) -> str:
        return source_of(self.key)

    __str__ = __repr__

    def __copy__(self) -> Dim:
        return self

    def __deepcopy__(self, memo: Any) -> Dim:
        return self


def _divide(a: Any, b: Any, op: str) -> Operand:
    """a // b or a % b, exact when the polynomials divide, else one atom."""
    ka, kb = _key_of(a), _key_of(b)
    assert ka is not None and kb is not None
    env = a.env if isinstance(a, Dim) else b.env
    hint = _hint(a) // _hint(b) if op == "//" else _hint(a) % _hint(b)
    quotient = _exact_quotient(ka, kb)
    if quotient is not None:
        if op == "%":
            return 0
        return quotient[0] if not quotient[1] else Dim(env, quotient, hint)
    if op == "%" and not kb[1] and kb[0] and all(c % kb[0] == 0 for _, c in ka[1]):
        return ka[0] % kb[0]  # the symbolic part is a multiple of the modulus
    x = ka if ka[1] else ka[0]
    y = kb if kb[1] else kb[0]
    return Dim(env, _atom_key((op, x, y)), hint)


def sym_max(a: Operand, b: Operand) -> Operand:
    """max(a, b) without a guard: an expression when it is not the same operand for every binding."""
    return _extremum("max", a, b)


def sym_min(a: Operand, b: Operand) -> Operand:
    """min(a, b) without a guard."""
    return _extremum("min", a, b)


def _extremum(op: str, a: Operand, b: Operand) -> Operand:
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return max(a, b) if op == "max" else min(a, b)
    ka, kb = _key_of(a), _key_of(b)
    assert ka is not None and kb is not None
    low, high = _bounds(_add_keys(ka, kb, -1))
    if low >= 0:
        return a if op == "max" else b
    if high <= 0:
        return b if op == "max" else a
    env = a.env if isinstance(a, Dim) else b.env  # type: ignore[union-attr]
    x, y = sorted([ka if ka[1] else ka[0], kb if kb[1] else kb[0]], key=_order)
    pick = max if op == "max" else min
    return Dim(env, _atom_key((op, x, y)), pick(_hint(a), _hint(b)))


# -- helpers for code that takes ints and Dims alike ------------------------------------------------


def is_symbolic(value: Any) -> bool:
    return isinstance(value, Dim)


def any_symbolic(values: Iterable[Any]) -> bool:
    return any(isinstance(v, Dim) for v in values)


def symbolic_descriptor(descriptor: Any) -> bool:
    """True when a layer descriptor (a dataclass) has a field that is or holds a Dim."""
    fields = getattr(descriptor, "__dataclass_fields__", None)
    if not fields:
        return False
    for name in fields:
        value = getattr(descriptor, name)
        if isinstance(value, Dim) or (isinstance(value, tuple) and any(isinstance(v, Dim) for v in value)):
            return True
    return False


def product(values: Iterable[Any]) -> Operand:
    """The product of ints and Dims (an int when no Dim is left), with no guard."""
    result: Any = 1
    for v in values:
        result = result * (v if isinstance(v, Dim) else int(v))
    return result


def as_dim(value: Any) -> Operand:
    """`value` as a dim: a Dim as it is, anything else through int()."""
    return value if isinstance(value, Dim) else int(value)


def pin(values: Any, why: str) -> None:
    """Record that every Dim among `values` (an iterable or array, nested) equals its hint."""
    for v in getattr(values, "flat", values):
        if isinstance(v, Dim):
            v._specialize(why)


def hint_of(value: Any) -> int:
    """The value at the hints, recording no guard: only for questions whose answer is checked
    again at every binding (a backend asked at optimize time is asked again at load)."""
    return value.hint if isinstance(value, Dim) else int(value)


def hints_of(values: Iterable[Any]) -> tuple[int, ...]:
    return tuple(v.hint if isinstance(v, Dim) else int(v) for v in values)


def evaluate(value: Any, binding: Mapping[str, int]) -> int:
    """The value of an int or a Dim at `binding`."""
    return evaluate_key(value.key, binding) if isinstance(value, Dim) else value
