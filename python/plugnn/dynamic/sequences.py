"""The sequence and optional operators, run by the runtime.

A sequence is a Python list of arrays, an empty optional None. These operators move tensor
references (SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase, Optional,
OptionalGetElement: no copy), count (SequenceLength, OptionalHasElement) or cut and join arrays
along an axis (SplitToSequence, ConcatFromSequence: NumPy copies, no arithmetic). A position out
of range, a tensor of another element type than the sequence's, an empty optional read are
RunErrors naming the node and the operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.dynamic.values import dense, describe

Step = Any  # plugnn.dynamic.control.Step (which imports this module)


def _sequence(step: Step, i: int, what: str = "input_sequence") -> list[np.ndarray]:
    value = step.input(i)
    if not isinstance(value, list):
        raise step.error(f"input {i} ({what}) must be a sequence, got {describe(value)}")
    return value


def _position(step: Step, i: int, length: int, allow_end: bool) -> int:
    """Input i as a position in a sequence of `length` (negative: from the end)."""
    raw = step.scalar(i, "position")
    value = step.tensor(i, "position")
    if value.dtype.kind not in "iu":
        raise step.error(f"input {i} (position) must be an integer, got {value.dtype}")
    position = int(raw)
    high = length if allow_end else length - 1
    if not -length <= position <= high:
        bounds = f"[{-length}, {high}]"
        raise step.error(f"position {position} is out of range for a sequence of {length} tensor"
                         f"{'s' if length != 1 else ''} (valid: {bounds})")
    return position + length if position < 0 else position


def _same_type(step: Step, sequence: list[np.ndarray], tensor: np.ndarray) -> None:
    if sequence and sequence[0].dtype != tensor.dtype:
        raise step.error(f"the tensor is {tensor.dtype}, the sequence holds {sequence[0].dtype}")


def _sequence_empty(step: Step) -> None:
    step.set(0, [])


def _sequence_construct(step: Step) -> None:
    items = [step.tensor(i, f"input {i}") for i in range(len(step.node.input))]
    for i, item in enumerate(items[1:], start=1):
        if item.dtype != items[0].dtype:
            raise step.error(f"input {i} is {item.dtype}, input 0 {items[0].dtype}: a sequence holds one element "
                             f"type")
    step.set(0, items)


def _sequence_at(step: Step) -> None:
    sequence = _sequence(step, 0)
    step.set(0, sequence[_position(step, 1, len(sequence), allow_end=False)])


def _sequence_insert(step: Step) -> None:
    sequence = _sequence(step, 0)
    tensor = step.tensor(1, "tensor")
    _same_type(step, sequence, tensor)
    at = _position(step, 2, len(sequence), allow_end=True) if step.has(2) else len(sequence)
    step.set(0, sequence[:at] + [tensor] + sequence[at:])


def _sequence_erase(step: Step) -> None:
    sequence = _sequence(step, 0)
    if not sequence:
        raise step.error("the sequence is empty: there is nothing to erase")
    at = _position(step, 1, len(sequence), allow_end=False) if step.has(1) else len(sequence) - 1
    step.set(0, sequence[:at] + sequence[at + 1:])


def _sequence_length(step: Step) -> None:
    step.set(0, np.array(len(_sequence(step, 0)), np.int64))


def _axis(step: Step, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise step.error(f"attribute {what!r} = {axis} is out of range for rank {rank}")
    return axis % rank


def _split_to_sequence(step: Step) -> None:
    x = step.tensor(0, "input")
    if x.ndim == 0:
        raise step.error("input 0 (input) is a scalar; it needs a dim to split")
    axis = _axis(step, int(step.attr("axis", 0)), x.ndim)
    size = x.shape[axis]
    if step.has(1):
        split = step.tensor(1, "split")
        if split.dtype.kind not in "iu":
            raise step.error(f"input 1 (split) must be integers, got {split.dtype}")
        if split.ndim == 0:
            chunk = int(split)
            if chunk <= 0:
                raise step.error(f"input 1 (split) = {chunk} must be positive")
            sizes = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
        else:
            sizes = [int(v) for v in split.reshape(-1)]
            if any(v < 0 for v in sizes) or sum(sizes) != size:
                raise step.error(f"input 1 (split) {sizes} must be >= 0 and sum to dim {axis} of the input ({size})")
        bounds = np.cumsum([0] + sizes)
        pieces = [dense(np.take(x, np.arange(bounds[k], bounds[k + 1]), axis=axis))
                  for k in range(len(sizes))]
    else:
        keep = int(step.attr("keepdims", 1))
        pieces = [dense(np.take(x, [k], axis=axis) if keep else np.take(x, k, axis=axis))
                  for k in range(size)]
    step.set(0, pieces)


def _concat_from_sequence(step: Step) -> None:
    sequence = _sequence(step, 0)
    if not sequence:
        raise step.error("the sequence is empty: there is nothing to concatenate")
    new_axis = int(step.attr("new_axis", 0))
    rank = sequence[0].ndim + (1 if new_axis else 0)
    if step.attr("axis") is None:
        raise step.error("attribute 'axis' is required")
    axis = _axis(step, int(step.attr("axis")), rank)
    for k, item in enumerate(sequence[1:], start=1):
        first = sequence[0]
        if item.dtype != first.dtype or item.ndim != first.ndim or any(
                a != b for d, (a, b) in enumerate(zip(item.shape, first.shape)) if new_axis or d != axis):
            raise step.error(f"element {k} ({describe(item)}) does not fit element 0 ({describe(first)}) along "
                             f"axis {axis}{' (new_axis)' if new_axis else ''}")
    joined = np.stack(sequence, axis=axis) if new_axis else np.concatenate(sequence, axis=axis)
    step.set(0, dense(joined))


def _optional(step: Step) -> None:
    step.set(0, step.input(0) if step.has(0) else None)


def _optional_has_element(step: Step) -> None:
    step.set(0, np.array(step.has(0) and step.input(0) is not None))


def _optional_get_element(step: Step) -> None:
    value = step.input(0)
    if value is None:
        raise step.error("the optional is empty: it has no element to get")
    step.set(0, value)


HANDLERS: dict[str, Callable[[Step], None]] = {
    "SequenceEmpty": _sequence_empty,
    "SequenceConstruct": _sequence_construct,
    "SequenceAt": _sequence_at,
    "SequenceInsert": _sequence_insert,
    "SequenceErase": _sequence_erase,
    "SequenceLength": _sequence_length,
    "SplitToSequence": _split_to_sequence,
    "ConcatFromSequence": _concat_from_sequence,
    "Optional": _optional,
    "OptionalHasElement": _optional_has_element,
    "OptionalGetElement": _optional_get_element,
}
