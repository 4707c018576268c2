"""String tensors: run-time values of the dynamic path, and the operators on them.

A string tensor is a NumPy array of dtype object whose elements are Python str (ONNX's own
NumPy form of tensor(string)). It never reaches a backend: its elements have no fixed size, no
backend computes on text, and the ABI's tensors are dense arrays of fixed-size elements
(docs/architecture.md, "String tensors"). Like a sequence, it lives in a program's environment,
and the nodes that read or make one are runtime steps:

- StringNormalizer, StringConcat, StringSplit, RegexFullMatch: string in, string / bool / int64
  out;
- Equal of two string tensors (bool out), Cast and CastLike to and from string, Shape and Size
  of a string tensor, Identity (in control.py); Constant with a string value is an array known
  at import (ops_shape.py).

A numeric or bool result (Equal's, RegexFullMatch's, StringSplit's counts, a Cast from string)
is an ordinary array: the next segment reads it as a network input, so strings and numeric
layers mix in one model. Any other operator reading a string tensor is a RunError naming the
node and the operators that take strings. Malformed data (an object array holding something
other than str) is a RunError naming the node, the input and the element; a bad attribute (a
regular expression Python's `re` does not compile, an unknown case action, a locale whose case
rules plugnn does not implement) a ModelError naming the node and the attribute.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.errors import InputError, MissingDependencyError, ModelError, RunError

Step = Any  # plugnn.dynamic.control.Step (which imports this module)

STRING_OPERATORS = ("StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "Equal", "Cast",
                    "CastLike", "Shape", "Size", "Identity", "Constant")

# Languages whose case mapping Unicode's SpecialCasing.txt gives rules of their own (dotted and
# dotless i in Turkish and Azeri, the dot above i in Lithuanian): Python's str.lower/upper apply
# Unicode's default mapping, which is every other language's.
_SPECIAL_CASING = frozenset({"tr", "az", "lt"})
_LOCALE = re.compile(r"^(C|POSIX|[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*(?:\.[A-Za-z0-9_-]+)?(?:@[A-Za-z0-9_-]+)?)$")


def is_string_array(value: Any) -> bool:
    """Whether `value` is a string tensor as the dynamic path holds it (a NumPy object array)."""
    return isinstance(value, np.ndarray) and value.dtype == np.dtype(object)


def bad_element(array: np.ndarray) -> tuple[tuple[int, ...], Any] | None:
    """(index, element) of the first element of `array` that is not a str, or None."""
    for index, element in np.ndenumerate(array):
        if not isinstance(element, str):
            return index, element
    return None


def as_string_input(value: Any, what: str) -> np.ndarray:
    """A caller's value for an input declared tensor(string): an object array of str (a NumPy
    str_ array is converted); InputError naming the input otherwise."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "U":
        return value.astype(object)
    if not is_string_array(value):
        shown = f"{value.dtype} array" if isinstance(value, np.ndarray) else type(value).__name__
        raise InputError(f"{what} is declared tensor(string): pass a numpy array of dtype object holding str "
                         f"(or of dtype str_), got a {shown}")
    found = bad_element(value)
    if found is not None:
        index, element = found
        raise InputError(f"{what} is declared tensor(string), but element {list(index)} is "
                         f"{type(element).__name__} {element!r}, not a str")
    return value


def _strings(step: Step, i: int, what: str) -> np.ndarray:
    """Input i, which must be a string tensor (an object array of str; a str_ array converted)."""
    value = step.tensor(i, what)
    if value.dtype.kind == "U":
        return value.astype(object)
    if not is_string_array(value):
        raise step.error(f"input {i} ({what}) {step.node.input[i]!r} must be a string tensor, got {value.dtype} "
                         f"{list(value.shape)}")
    found = bad_element(value)
    if found is not None:
        index, element = found
        raise step.error(f"input {i} ({what}) {step.node.input[i]!r}: element {list(index)} is "
                         f"{type(element).__name__} {element!r}, not a str (a string tensor is a numpy object "
                         f"array of str)")
    return value


def _attribute_error(step: Step, name: str, message: str) -> ModelError:
    return ModelError(f"{step.program.source}: {step.label}: attribute {name!r} {message}")


def _broadcast(step: Step, a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise step.error(f"input shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None


def _elementwise(fn: Callable[[str, str], Any], a: np.ndarray, b: np.ndarray, shape: tuple[int, ...],
                 dtype: Any) -> np.ndarray:
    out = np.empty(shape, dtype)
    x, y = np.broadcast_arrays(a, b)
    for index in np.ndindex(*shape):
        out[index] = fn(x[index], y[index])
    return out


# ---- the string operators ------------------------------------------------------------------


def _string_concat(step: Step) -> None:
    x = _strings(step, 0, "X")
    y = _strings(step, 1, "Y")
    step.set(0, _elementwise(lambda a, b: a + b, x, y, _broadcast(step, x, y), object))


def _equal(step: Step) -> None:
    a, b = step.tensor(0, "A"), step.tensor(1, "B")
    if not (a.dtype.kind in "OU" and b.dtype.kind in "OU"):
        raise step.error(f"inputs are {a.dtype} and {b.dtype}: Equal on a string tensor needs two string tensors")
    a, b = _strings(step, 0, "A"), _strings(step, 1, "B")
    step.set(0, _elementwise(lambda p, q: p == q, a, b, _broadcast(step, a, b), np.bool_))


def _re2_compile(step: Step, pattern: str) -> Any:
    """`pattern` compiled by RE2 (the google-re2 package), as onnxruntime does: RE2's syntax, and
    matching in time linear in the input whatever the pattern (no backtracking: `(a+)+$` on a
    long string of a's answers at once, where Python's re takes exponential time)."""
    try:
        import re2
    except ImportError:
        raise MissingDependencyError(f"{step.program.source}: {step.label}: RegexFullMatch needs the google-re2 package: "
                                     f"pip install google-re2 (or pip install 'plugnn[onnx]')") from None
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        message = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise _attribute_error(step, "pattern", f"= {pattern!r} is not a regular expression RE2 can compile: "
                                                f"{message}") from None


def _regex_full_match(step: Step) -> None:
    x = _strings(step, 0, "X")
    pattern = step.attr("pattern")
    if pattern is None:
        raise _attribute_error(step, "pattern", "is required")
    pattern = pattern.decode() if isinstance(pattern, bytes) else str(pattern)
    regex = _re2_compile(step, pattern)
    out = np.empty(x.shape, np.bool_)
    for index, element in np.ndenumerate(x):
        out[index] = regex.fullmatch(element) is not None
    step.set(0, out)


def _string_split(step: Step) -> None:
    x = _strings(step, 0, "X")
    delimiter = step.attr("delimiter")
    if isinstance(delimiter, bytes):
        delimiter = delimiter.decode()
    separator = delimiter or None  # unset or "": runs of whitespace, ends trimmed
    maxsplit = step.attr("maxsplit")
    if maxsplit is not None and int(maxsplit) < 0:
        raise _attribute_error(step, "maxsplit", f"= {int(maxsplit)} must be >= 0 (leave it unset for no limit)")
    limit = -1 if maxsplit is None else int(maxsplit)
    parts: dict[tuple[int, ...], list[str]] = {index: element.split(separator, limit)
                                               for index, element in np.ndenumerate(x)}
    width = max((len(p) for p in parts.values()), default=0)
    substrings = np.full(x.shape + (width,), "", object)
    counts = np.zeros(x.shape, np.int64)
    for index, pieces in parts.items():
        counts[index] = len(pieces)
        for k, piece in enumerate(pieces):
            substrings[index + (k,)] = piece
    step.set(0, substrings)
    step.set(1, counts)


def _locale(step: Step) -> str:
    locale = step.attr("locale", "")
    locale = locale.decode() if isinstance(locale, bytes) else str(locale)
    if not locale:
        return locale
    if not _LOCALE.match(locale):
        raise _attribute_error(step, "locale", f"= {locale!r} is not a locale name (language[_TERRITORY]"
                                               f"[.codeset][@modifier], e.g. 'en_US', 'de-DE', 'fr_FR.UTF-8')")
    language = re.split(r"[_.@-]", locale)[0].lower()
    if language in _SPECIAL_CASING:
        raise _attribute_error(step, "locale", f"= {locale!r}: {language!r} has case rules of its own (Unicode's "
                                               f"SpecialCasing: dotted and dotless i), which plugnn's case "
                                               f"mapping (Unicode's default, the same for every other language) "
                                               f"does not implement")
    return locale


def _string_normalizer(step: Step) -> None:
    x = _strings(step, 0, "X")
    if not (x.ndim == 1 or (x.ndim == 2 and x.shape[0] == 1)):
        raise step.error(f"input 0 (X) {step.node.input[0]!r} has shape {list(x.shape)}; StringNormalizer takes "
                         f"[C] or [1, C]")
    action = step.attr("case_change_action", "NONE")
    action = action.decode() if isinstance(action, bytes) else str(action)
    if action not in ("NONE", "LOWER", "UPPER"):
        raise _attribute_error(step, "case_change_action", f"= {action!r} is not one of 'NONE', 'LOWER', 'UPPER'")
    sensitive = int(step.attr("is_case_sensitive", 0))
    if sensitive not in (0, 1):
        raise _attribute_error(step, "is_case_sensitive", f"= {sensitive} is not 0 or 1")
    _locale(step)
    stopwords = [w.decode() if isinstance(w, bytes) else str(w) for w in step.attr("stopwords", []) or []]
    if sensitive:
        stops = set(stopwords)
        kept = [s for s in x.reshape(-1) if s not in stops]
    else:
        folded = {w.casefold() for w in stopwords}
        kept = [s for s in x.reshape(-1) if s.casefold() not in folded]
    if action == "LOWER":
        kept = [s.lower() for s in kept]
    elif action == "UPPER":
        kept = [s.upper() for s in kept]
    if not kept:
        kept = [""]  # ONNX: everything removed gives one empty string
    out = np.empty(len(kept), object)
    out[:] = kept
    step.set(0, out.reshape((1, -1)) if x.ndim == 2 else out)


# ---- Cast and CastLike to and from string ---------------------------------------------------------


def _from_string(step: Step, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """ONNX's string to number: decimal and scientific literals; NaN, INF, -INF (any case) for
    floats; to bool, a number's != 0."""
    out = np.empty(x.shape, dtype)
    for index, element in np.ndenumerate(x):
        text = element.strip()
        try:
            number: Any = int(text) if dtype.kind in "iu" else float(text)
        except ValueError:
            raise step.error(f"element {list(index)} {element!r} of input 0 is not a number "
                             f"{'(an integer)' if dtype.kind in 'iu' else ''}".rstrip()) from None
        if dtype.kind in "iu" and not np.iinfo(dtype).min <= number <= np.iinfo(dtype).max:
            raise step.error(f"element {list(index)} {element!r} is out of the range of {dtype}")
        out[index] = number != 0.0 if dtype.kind == "b" else number
    return out


def _to_string(x: np.ndarray) -> np.ndarray:
    """ONNX's reference: NumPy's text of each value (the shortest that reads back the same);
    bfloat16, which NumPy cannot turn into text, through float32 (which holds it exactly)."""
    if x.dtype.kind not in "biuf":
        x = x.astype(np.float32)
    return x.astype(np.str_).astype(object) if x.size else np.empty(x.shape, object)


def _cast_to(step: Step, target: np.dtype) -> None:
    x = step.tensor(0, "input")
    if target == np.dtype(object):
        if x.dtype.kind in "OU":
            step.set(0, _strings(step, 0, "input"))
            return
        if x.dtype.kind not in "biuf" and x.dtype.name != "bfloat16":
            raise step.error(f"input 0 (input) is {x.dtype}; plugnn casts numeric and bool tensors to string")
        step.set(0, _to_string(x))
        return
    step.set(0, _from_string(step, _strings(step, 0, "input"), target))


def _cast(step: Step) -> None:
    from onnx import TensorProto

    from plugnn.onnx.context import np_dtype, type_name

    to = step.attr("to")
    if to is None:
        raise _attribute_error(step, "to", "is required")
    to = int(to)
    target = np.dtype(object) if to == TensorProto.STRING else np_dtype(to)
    if target == np.dtype(object) and to != TensorProto.STRING:
        raise _attribute_error(step, "to", f"= {type_name(to)}: a string tensor casts to numeric and bool types "
                                           f"only")
    _cast_to(step, target)


def _cast_like(step: Step) -> None:
    like = step.tensor(1, "target_type")
    target = np.dtype(object) if like.dtype.kind in "OU" else like.dtype
    _cast_to(step, target)


# ---- Shape and Size of a string tensor --------------------------------------------------------


def _shape(step: Step) -> None:
    dims = list(_strings(step, 0, "data").shape)
    rank = len(dims)
    start, end = int(step.attr("start", 0)), int(step.attr("end", rank))
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    step.set(0, np.asarray(dims[start:end], np.int64))


def _size(step: Step) -> None:
    step.set(0, np.asarray(_strings(step, 0, "data").size, np.int64))


HANDLERS: dict[str, Callable[[Step], None]] = {
    "Shape": _shape,
    "Size": _size,
    "StringNormalizer": _string_normalizer,
    "StringConcat": _string_concat,
    "StringSplit": _string_split,
    "RegexFullMatch": _regex_full_match,
    "Equal": _equal,
    "Cast": _cast,
    "CastLike": _cast_like,
}


def not_for_strings(step: Step) -> RunError:
    """The error for a node of another operator reading a string tensor."""
    return step.error(f"operator {step.node.op_type!r} does not take string tensors in plugnn; string tensors "
                      f"are runtime values that {', '.join(STRING_OPERATORS)} read (docs/onnx.md, 'String "
                      f"tensors')")
