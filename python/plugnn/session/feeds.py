"""Checking what a caller feeds a session against the model's inputs, with onnxruntime's rules
and plugnn's error messages: names, types, ranks, fixed dims and symbolic dims that must agree.

What onnxruntime converts is converted here too: an OrtValue is its array; a Python list (or
tuple) becomes an array of the input's type; a NumPy unicode (`<U`), bytes (`|S`) or void
(`|V`) array fed to a tensor(string) input becomes the object array of `str` plugnn's string
tensors are (bytes decoded as UTF-8). Errors are InvalidArgument (an InputError)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from plugnn.errors import InputError
from plugnn.session.model import NodeArg
from plugnn.session.ort_errors import InvalidArgument
from plugnn.session.ort_value import OrtValue, string_array


def _listing(args: Sequence[NodeArg]) -> str:
    return ", ".join(a.describe() for a in args)


def check_feed(inputs: Sequence[NodeArg], feed: Any, model: str) -> list[np.ndarray]:
    """The arrays of `feed` in the order of `inputs`, C-contiguous (a copy only when the caller's
    array is not), after every check; InputError naming the input and what was expected."""
    if not isinstance(feed, Mapping):
        raise InvalidArgument(f"{model}: input_feed must be a dict of input name to numpy.ndarray, "
                              f"got {type(feed).__name__}")
    names = {a.name for a in inputs}
    unknown = [n for n in feed if n not in names]
    missing = [a.name for a in inputs if a.name not in feed]
    if unknown or missing:
        text = []
        if missing:
            text.append(f"missing input(s) {', '.join(map(repr, missing))}")
        if unknown:
            text.append(f"unknown input(s) {', '.join(map(repr, unknown))}")
        ort = f"Required inputs ({missing}) are missing from input feed ({list(feed)})" if missing else \
            f"Invalid input name(s): {unknown}"
        # onnxruntime: a missing input is a ValueError, an unknown one (alone) an InvalidArgument
        error = InputError if missing else InvalidArgument
        raise error(f"{model}: {'; '.join(text)}; the model's inputs are {_listing(inputs)} ({ort})")
    arrays = []
    symbols: dict[str, tuple[int, str]] = {}
    for arg in inputs:
        value = as_array(arg, feed[arg.name], model)
        if value.dtype != arg.dtype:
            spelled = f"numpy.{arg.dtype.name}" if arg.dtype != np.dtype(object) else str(arg.dtype)
            raise InvalidArgument(f"{model}: input {arg.name!r} has dtype {value.dtype}, the model takes {arg.type} "
                                  f"({arg.dtype}): convert it with .astype({spelled})")
        if arg.shape is not None:
            if value.ndim != len(arg.shape):
                raise InvalidArgument(f"{model}: input {arg.name!r} has rank {value.ndim} (shape {value.shape}), "
                                      f"the model declares rank {len(arg.shape)}: {arg.shape}")
            for axis, (got, want) in enumerate(zip(value.shape, arg.shape)):
                if isinstance(want, int) and got != want:
                    raise InvalidArgument(f"{model}: input {arg.name!r} dim {axis} is {got}, the model fixes it to "
                                          f"{want} (shape {arg.shape}); got shape {value.shape}")
                if isinstance(want, str):
                    seen = symbols.setdefault(want, (got, arg.name))
                    if seen[0] != got:
                        raise InvalidArgument(f"{model}: dim {want!r} is {seen[0]} in input {seen[1]!r} and {got} in "
                                              f"input {arg.name!r}; one value per symbolic dim in one run")
        arrays.append(value if value.flags.c_contiguous else np.ascontiguousarray(value))
    return arrays


def as_array(arg: NodeArg, value: Any, model: str) -> np.ndarray:
    """`value` as onnxruntime takes it for the tensor input `arg`: an ndarray, a NumPy scalar, an
    OrtValue, a list or tuple (converted to the input's type); string arrays of any NumPy kind
    for a tensor(string) input (as `str` objects)."""
    if isinstance(value, OrtValue):
        value = value.numpy()
    if isinstance(value, np.generic):
        value = np.asarray(value)
    elif isinstance(value, (list, tuple)):
        try:
            value = np.array(value, dtype=arg.dtype)
        except (ValueError, TypeError) as exc:
            raise InvalidArgument(f"{model}: input {arg.name!r} ({arg.type}) was given a list that is not a "
                                  f"tensor of that type: {exc}") from None
    if not isinstance(value, np.ndarray):
        raise InvalidArgument(f"{model}: input {arg.name!r} must be a numpy.ndarray of {arg.type} (or a list), "
                              f"got {type(value).__name__}")
    if arg.type == "tensor(string)" and value.dtype.kind in "USV":
        value = string_array(value)
    return value


def check_output_names(outputs: Sequence[NodeArg], output_names: Any, model: str) -> list[str]:
    """The outputs asked for, in order (None or empty: all); InputError for an unknown name."""
    if output_names is None or (isinstance(output_names, (list, tuple)) and not output_names):
        return [o.name for o in outputs]
    if isinstance(output_names, str):
        raise InvalidArgument(f"{model}: output_names must be a list of names, got the string {output_names!r}")
    names = {o.name for o in outputs}
    wanted = list(output_names)
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise InvalidArgument(f"{model}: unknown output(s) {', '.join(map(repr, unknown))}; the model's outputs are "
                              f"{_listing(outputs)} (Invalid output name: {unknown[0]})")
    return wanted
