"""SLICE, SPLIT, PAD, EXPAND, ONE_HOT and TRIANGULAR: data movement, so results must be bit exact.

Oracles: NumPy slicing, np.split, np.pad (after the crop of negative pads, as backend_api.h
defines), np.broadcast_to, an explicit one-hot and np.triu / np.tril. Every element type (one,
two, four and eight bytes, bool), empty tensors, the limits of each mode, malformed layers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import (LayerKind, OneHotDescriptor, PadDescriptor, PadMode, SliceDescriptor, SplitDescriptor,
                                TriangularDescriptor)
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_refused, run_layer, shape_id
from .typed import ALL_TYPES, NUMERIC_TYPES, assert_same, values

F = DataType.FLOAT32


def spec(kind: LayerKind, desc: Any, inputs: list[tuple[tuple[int, ...], DataType]],
         outputs: list[tuple[tuple[int, ...], DataType]], name: str) -> LayerSpec:
    return LayerSpec(kind, name, desc, tuple(TensorInfo(tuple(s), t) for s, t in inputs),
                     tuple(TensorInfo(tuple(s), t) for s, t in outputs))


# ---- SLICE ---------------------------------------------------------------------------------


def slice_case(shape: tuple[int, ...], slices: list[slice]) -> tuple[SliceDescriptor, tuple[int, ...]]:
    """The descriptor and output shape of x[slices] (one Python slice per dim)."""
    starts, steps, out = [], [], []
    for dim, s in zip(shape, slices):
        r = range(*s.indices(dim))
        starts.append(r.start if len(r) else 0)
        steps.append(r.step)
        out.append(len(r))
    return SliceDescriptor(tuple(starts), tuple(steps)), tuple(out)


def run_slice(backend, x: np.ndarray, dtype: DataType, slices: list[slice]) -> None:
    desc, out = slice_case(x.shape, slices)
    s = spec(LayerKind.SLICE, desc, [(x.shape, dtype)], [(out, dtype)], "slice")
    (y,) = run_layer(backend, s, [x])
    assert_same(y, x[tuple(slices)], s)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_slice_every_type(backend, dtype: DataType) -> None:
    x = values(dtype, (4, 5, 3), seed=20)
    run_slice(backend, x, dtype, [slice(1, 4), slice(None, None, -2), slice(2, 0, -1)])


@pytest.mark.parametrize("shape, slices", [
    ((7,), [slice(0, 7)]),
    ((7,), [slice(6, None, -1)]),
    ((7,), [slice(5, 1, -3)]),
    ((7,), [slice(1, 7, 10)]),              # one element, a step past the end
    ((7,), [slice(3, 3)]),                  # empty output
    ((7,), [slice(2, 5, -1)]),              # empty, negative step
    ((0, 3), [slice(None), slice(1, 3)]),   # empty input
    ((3, 4), [slice(None, None, -1), slice(None, None, -1)]),
    ((2, 3, 4, 5), [slice(1, 2), slice(None), slice(3, 0, -2), slice(0, 5, 2)]),
    ((1, 2, 1, 2, 1, 2, 1, 3), [slice(None)] * 7 + [slice(2, None, -2)]),
], ids=lambda v: shape_id(v) if isinstance(v, tuple) else None)
def test_slice_steps_and_shapes(backend, shape, slices) -> None:
    run_slice(backend, values(DataType.INT16, shape, seed=21), DataType.INT16, slices)


@pytest.mark.parametrize("desc, inputs, outputs, reason", [
    pytest.param(SliceDescriptor((0,), (1,)), [((4, 3), F)], [((4, 3), F)], "rank", id="descriptor-rank"),
    pytest.param(SliceDescriptor((0, 0), (1, 1)), [((4, 3), F)], [((4,), F)], "rank", id="output-rank"),
    pytest.param(SliceDescriptor((2, 0), (1, 1)), [((4, 3), F)], [((3, 3), F)], "leave", id="past-the-end"),
    pytest.param(SliceDescriptor((1, 0), (-1, 1)), [((4, 3), F)], [((3, 3), F)], "leave", id="before-the-start"),
    pytest.param(SliceDescriptor((4, 0), (1, 1)), [((4, 3), F)], [((1, 3), F)], "leave", id="start-at-dim"),
    pytest.param(SliceDescriptor((-1, 0), (1, 1)), [((4, 3), F)], [((1, 3), F)], "leave", id="negative-start"),
    pytest.param(SliceDescriptor((1, 0), (1, 1)), [((4, 3), F)], [((0, 3), F)], "start must be 0",
                 id="empty-with-start"),
    pytest.param(SliceDescriptor((0, 0), (2, 1)), [((4, 3), F)], [((2, 3), DataType.INT32)], "output",
                 id="output-type"),
    pytest.param(SliceDescriptor((0, 0), (1, 1)), [((4, 3), F), ((2,), F)], [((4, 3), F)], "input",
                 id="two-inputs"),
])
def test_malformed_slice_is_refused(backend, desc, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.SLICE, desc, inputs, outputs, "bad_slice"), reason)


def test_slice_with_step_zero_is_refused(backend) -> None:
    desc = SliceDescriptor((0,), (1,))
    object.__setattr__(desc, "steps", (0,))
    assert_refused(backend, spec(LayerKind.SLICE, desc, [((4,), F)], [((2,), F)], "bad"), "step")


def test_slice_with_huge_step_is_refused_without_overflow(backend) -> None:
    s = spec(LayerKind.SLICE, SliceDescriptor((1,), (2**62,)), [((4,), F)], [((3,), F)], "bad")
    assert_refused(backend, s, "leave")


# ---- SPLIT ---------------------------------------------------------------------------------


def run_split(backend, x: np.ndarray, dtype: DataType, sizes: list[int], axis: int) -> None:
    a = axis % x.ndim
    outs = [x.shape[:a] + (n,) + x.shape[a + 1:] for n in sizes]
    s = spec(LayerKind.SPLIT, SplitDescriptor(axis), [(x.shape, dtype)], [(o, dtype) for o in outs], "split")
    ys = run_layer(backend, s, [x])
    expected = np.split(x, np.cumsum(sizes)[:-1], axis=a)
    assert len(ys) == len(sizes)
    for y, e in zip(ys, expected):
        assert_same(y, e, s)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_split_every_type(backend, dtype: DataType) -> None:
    run_split(backend, values(dtype, (3, 7, 2), seed=22), dtype, [2, 4, 1], 1)


@pytest.mark.parametrize("shape, sizes, axis", [
    ((6,), [6], 0),
    ((6,), [1, 1, 1, 1, 1, 1], 0),
    ((6,), [0, 3, 0, 3], 0),       # empty pieces
    ((4, 5), [2, 2], 0),
    ((4, 5), [3, 2], -1),
    ((2, 3, 4, 5), [1, 3, 1], 3),
    ((2, 0, 4), [1, 3], 2),        # empty input
])
def test_split_shapes(backend, shape, sizes, axis: int) -> None:
    run_split(backend, values(DataType.UINT32, shape, seed=23), DataType.UINT32, sizes, axis)


@pytest.mark.parametrize("axis, inputs, outputs, reason", [
    pytest.param(0, [((6, 2), F)], [((2, 2), F), ((3, 2), F)], "add up", id="sizes-do-not-add-up"),
    pytest.param(0, [((6, 2), F)], [((3, 2), F), ((3, 3), F)], "differs", id="other-dim-differs"),
    pytest.param(2, [((6, 2), F)], [((6, 2), F)], "axis", id="axis-past-rank"),
    pytest.param(0, [((6, 2), F)], [((3, 2), F), ((3, 2), DataType.INT8)], "output 1", id="output-type"),
    pytest.param(0, [((6, 2), F)], [], "at least 1 output", id="no-outputs"),
    pytest.param(0, [((6, 2), F), ((6, 2), F)], [((6, 2), F)], "1 input", id="two-inputs"),
])
def test_malformed_split_is_refused(backend, axis: int, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.SPLIT, SplitDescriptor(axis), inputs, outputs, "bad_split"), reason)


# ---- PAD -----------------------------------------------------------------------------------

_NP_MODES = {PadMode.CONSTANT: "constant", PadMode.REFLECT: "reflect", PadMode.EDGE: "edge", PadMode.WRAP: "wrap"}


def pad_oracle(x: np.ndarray, begin: list[int], end: list[int], mode: PadMode, value: Any = 0) -> np.ndarray:
    """backend_api.h: negative pads crop first, then np.pad with the positive ones."""
    crop = tuple(slice(max(-b, 0), x.shape[a] - max(-e, 0)) for a, (b, e) in enumerate(zip(begin, end)))
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    kwargs = {"constant_values": value} if mode is PadMode.CONSTANT else {}
    return np.pad(x[crop], widths, mode=_NP_MODES[mode], **kwargs)


def run_pad(backend, x: np.ndarray, dtype: DataType, begin, end, mode: PadMode, value: Any = None) -> None:
    out = tuple(b + n + e for b, n, e in zip(begin, x.shape, end))
    inputs = [(x.shape, dtype)] + ([((), dtype)] if value is not None else [])
    s = spec(LayerKind.PAD, PadDescriptor(mode, tuple(begin), tuple(end)), inputs, [(out, dtype)],
             f"pad_{mode.name.lower()}")
    arrays = [x] + ([np.array(value, dtype.numpy_dtype)] if value is not None else [])
    (y,) = run_layer(backend, s, arrays)
    fill = arrays[1] if value is not None else np.zeros((), dtype.numpy_dtype)
    assert_same(y, pad_oracle(x, list(begin), list(end), mode, fill), s)


@pytest.mark.parametrize("mode", list(PadMode)[1:], ids=lambda m: m.name.lower())
@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_pad_every_type_and_mode(backend, dtype: DataType, mode: PadMode) -> None:
    x = values(dtype, (3, 4), seed=24)
    run_pad(backend, x, dtype, [2, 1], [1, 3], mode)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_pad_constant_value_input(backend, dtype: DataType) -> None:
    x = values(dtype, (2, 3), seed=25)
    run_pad(backend, x, dtype, [1, 0], [0, 2], PadMode.CONSTANT, value=values(dtype, (), seed=26))


PAD_SHAPES = [
    ((5,), [0], [0]),
    ((5,), [4], [4]),               # reflect's limit: dim - 1
    ((5,), [-2], [3]),              # crop one end, pad the other
    ((5,), [2], [-3]),
    ((6,), [-2], [-1]),             # crop only
    ((3, 4, 5), [1, -1, 2], [0, 2, -2]),
    ((2, 1, 2, 1, 2, 3), [0, 0, 1, 0, 1, 2], [1, 0, 0, 0, 1, 2]),
]


def within_reflect_limit(shape, begin, end) -> bool:
    kept = [n - max(-b, 0) - max(-e, 0) for n, b, e in zip(shape, begin, end)]
    return all(max(b, e) < k for b, e, k in zip(begin, end, kept) if max(b, e) > 0)


# Reflect only where its pads stay below the cropped dims (beyond: refused, tested below).
@pytest.mark.parametrize("mode, shape, begin, end", [
    pytest.param(mode, shape, begin, end, id=f"{mode.name.lower()}-{shape_id(shape)}-{begin}-{end}")
    for mode in list(PadMode)[1:] for shape, begin, end in PAD_SHAPES
    if mode is not PadMode.REFLECT or within_reflect_limit(shape, begin, end)])
def test_pad_modes_with_negative_pads(backend, mode: PadMode, shape, begin, end) -> None:
    run_pad(backend, values(DataType.INT64, shape, seed=27), DataType.INT64, begin, end, mode)


@pytest.mark.parametrize("mode", [PadMode.CONSTANT, PadMode.EDGE, PadMode.WRAP], ids=lambda m: m.name.lower())
def test_pad_larger_than_the_dim(backend, mode: PadMode) -> None:
    run_pad(backend, values(DataType.INT8, (2, 3), seed=28), DataType.INT8, [5, 7], [4, 0], mode)


def test_pad_of_empty_tensor_with_constant(backend) -> None:
    run_pad(backend, np.zeros((0, 2), np.float32), F, [2, 1], [1, 0], PadMode.CONSTANT, value=np.float32(3.5))


def test_pad_to_empty_output(backend) -> None:
    run_pad(backend, values(F, (3, 2), seed=29), F, [-2, 0], [-1, 1], PadMode.EDGE)


@pytest.mark.parametrize("desc, inputs, outputs, reason", [
    pytest.param(PadDescriptor(PadMode.REFLECT, (3,), (0,)), [((3,), F)], [((6,), F)], "smaller",
                 id="reflect-pad-equal-to-dim"),
    pytest.param(PadDescriptor(PadMode.REFLECT, (0,), (2,)), [((4,), F)], [((4,), F)], "output",
                 id="reflect-within-limit-wrong-output"),
    pytest.param(PadDescriptor(PadMode.REFLECT, (-2,), (2,)), [((4,), F)], [((4,), F)], "smaller",
                 id="reflect-limit-after-crop"),
    pytest.param(PadDescriptor(PadMode.REFLECT, (1,), (0,)), [((1,), F)], [((2,), F)], "smaller",
                 id="reflect-single-element"),
    pytest.param(PadDescriptor(PadMode.EDGE, (1,), (0,)), [((0,), F)], [((1,), F)], "empty", id="edge-of-empty"),
    pytest.param(PadDescriptor(PadMode.WRAP, (0, 1), (0, 0)), [((2, 0), F)], [((2, 1), F)], "empty",
                 id="wrap-of-empty"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (-3,), (-2,)), [((4,), F)], [((0,), F)], "remove",
                 id="crop-more-than-dim"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (-5,), (3,)), [((4,), F)], [((2,), F)], "remove",
                 id="crop-more-than-dim-then-pad"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (1,), (1,)), [((4,), F)], [((5,), F)], "output",
                 id="wrong-output"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (1, 0), (1, 0)), [((4,), F)], [((6,), F)], "rank",
                 id="pads-rank"),
    pytest.param(PadDescriptor(PadMode.EDGE, (1,), (1,)), [((4,), F), ((), F)], [((6,), F)], "constant",
                 id="value-with-edge"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (1,), (1,)), [((4,), F), ((2,), F)], [((6,), F)], "one element",
                 id="value-of-two-elements"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (1,), (1,)), [((4,), F), ((), DataType.FLOAT64)], [((6,), F)],
                 "float64", id="value-of-another-type"),
    pytest.param(PadDescriptor(PadMode.CONSTANT, (2**41,), (0,)), [((4,), F)], [((4,), F)], "2\\^40",
                 id="huge-pad"),
])
def test_malformed_pad_is_refused(backend, desc, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.PAD, desc, inputs, outputs, "bad_pad"), reason)


# ---- EXPAND --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_expand_every_type(backend, dtype: DataType) -> None:
    x = values(dtype, (3, 1), seed=30)
    s = spec(LayerKind.EXPAND, None, [((3, 1), dtype)], [((2, 3, 4), dtype)], "expand")
    (y,) = run_layer(backend, s, [x])
    assert_same(y, np.broadcast_to(x, (2, 3, 4)), s)


@pytest.mark.parametrize("shape_in, shape_out", [
    ((), (2, 3)),
    ((1,), (5,)),
    ((4,), (4,)),
    ((2, 1, 3), (2, 4, 3)),
    ((1, 3, 1), (2, 2, 3, 5)),
    ((3,), (0, 3)),
    ((1, 1), (1, 1, 1, 1, 1, 1, 1, 1)),
], ids=shape_id)
def test_expand_shapes(backend, shape_in, shape_out) -> None:
    x = values(DataType.BFLOAT16, shape_in, seed=31)
    s = spec(LayerKind.EXPAND, None, [(shape_in, DataType.BFLOAT16)], [(shape_out, DataType.BFLOAT16)], "expand")
    (y,) = run_layer(backend, s, [x])
    assert_same(y, np.broadcast_to(x, shape_out), s)


@pytest.mark.parametrize("inputs, outputs, reason", [
    pytest.param([((2, 3), F)], [((2, 4), F)], "broadcast", id="dims-differ"),
    pytest.param([((2, 3), F)], [((3,), F)], "broadcast", id="output-rank-lower"),
    pytest.param([((2, 1), F)], [((2, 1, 3), F)], "broadcast", id="not-aligned-right"),
    pytest.param([((2, 3), F)], [((2, 3), DataType.INT32)], "output", id="output-type"),
    pytest.param([((2, 3), F), ((2,), DataType.INT64)], [((2, 3), F)], "input", id="shape-as-input"),
])
def test_malformed_expand_is_refused(backend, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.EXPAND, None, inputs, outputs, "bad_expand"), reason)


# ---- ONE_HOT -------------------------------------------------------------------------------


def one_hot_oracle(indices: np.ndarray, depth: int, off_on: np.ndarray, axis: int) -> np.ndarray:
    flat = np.trunc(indices.astype(np.float64)).reshape(-1) if indices.dtype.kind == "f" else \
        indices.reshape(-1).astype(object)
    rows = np.empty((flat.size, depth), off_on.dtype)
    for i, v in enumerate(flat):
        hot = int(v) + depth if -depth <= v < 0 else (int(v) if 0 <= v < depth else -1)
        rows[i] = off_on[0]
        if hot >= 0:
            rows[i, hot] = off_on[1]
    out = rows.reshape(indices.shape + (depth,))
    return np.moveaxis(out, -1, axis % (indices.ndim + 1))


def run_one_hot(backend, indices: np.ndarray, index_type: DataType, depth: int, off_on: np.ndarray,
                value_type: DataType, axis: int) -> None:
    rank = indices.ndim + 1
    out = list(indices.shape)
    out.insert(axis % rank, depth)
    s = spec(LayerKind.ONE_HOT, OneHotDescriptor(axis), [(indices.shape, index_type), ((2,), value_type)],
             [(tuple(out), value_type)], "one_hot")
    (y,) = run_layer(backend, s, [indices, off_on])
    assert_same(y, one_hot_oracle(indices, depth, off_on, axis), s)


@pytest.mark.parametrize("index_type", NUMERIC_TYPES, ids=lambda t: t.numpy_name)
def test_one_hot_every_index_type(backend, index_type: DataType) -> None:
    # In range, negative (signed types), out of range both ways: an all-off row.
    raw = [0, 3, 4, -1, -4, -5, 9, 2] if index_type.name != "UINT8" and not index_type.name.startswith("UINT") \
        else [0, 3, 4, 200, 1, 2, 9, 2]
    indices = np.array(raw, np.float64).astype(index_type.numpy_dtype).reshape(2, 4)
    run_one_hot(backend, indices, index_type, 4, np.array([0, 1], np.float32), F, -1)


@pytest.mark.parametrize("value_type", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_one_hot_every_value_type(backend, value_type: DataType) -> None:
    indices = np.array([[1, -1, 0], [5, 2, -3]], np.int64)
    off_on = values(value_type, (2,), seed=32)
    run_one_hot(backend, indices, DataType.INT64, 3, off_on, value_type, 1)


def test_one_hot_truncates_float_indices(backend) -> None:
    indices = np.array([1.9, -0.5, -1.2, 2.999, np.nan, np.inf, -np.inf, 3.0], np.float32)
    run_one_hot(backend, indices, F, 3, np.array([-2, 7], np.int32), DataType.INT32, 0)


@pytest.mark.parametrize("shape, depth, axis", [
    ((), 4, 0), ((), 4, -1), ((3,), 1, 0), ((2, 3), 5, 0), ((2, 3), 5, 1), ((2, 3), 5, -1), ((2, 3), 5, -3),
    ((0, 2), 3, 1), ((2, 2), 0, 2),
], ids=lambda v: shape_id(v) if isinstance(v, tuple) else None)
def test_one_hot_shapes_and_axes(backend, shape, depth: int, axis: int) -> None:
    rng = np.random.default_rng(33)
    indices = rng.integers(-depth - 1, depth + 2, shape).astype(np.int32)
    run_one_hot(backend, indices, DataType.INT32, depth, np.array([3, -4], np.int8), DataType.INT8, axis)


@pytest.mark.parametrize("axis, inputs, outputs, reason", [
    pytest.param(-1, [((3,), DataType.BOOL), ((2,), F)], [((3, 4), F)], "numeric", id="bool-indices"),
    pytest.param(-1, [((3,), DataType.INT64), ((3,), F)], [((3, 4), F)], r"\[2\]", id="three-values"),
    pytest.param(-1, [((3,), DataType.INT64), ((1, 2), F)], [((3, 4), F)], r"\[2\]", id="values-rank-2"),
    pytest.param(-1, [((3,), DataType.INT64), ((2,), F)], [((3, 4), DataType.FLOAT64)], "values",
                 id="output-type"),
    pytest.param(2, [((3,), DataType.INT64), ((2,), F)], [((3, 4), F)], "axis", id="axis-past-rank"),
    pytest.param(-3, [((3,), DataType.INT64), ((2,), F)], [((3, 4), F)], "axis", id="negative-axis-past-rank"),
    pytest.param(0, [((3,), DataType.INT64), ((2,), F)], [((3, 4), F)], "output", id="depth-at-wrong-axis"),
    pytest.param(0, [((3,), DataType.INT64), ((2,), F)], [((4,), F)], "rank", id="output-rank"),
    pytest.param(0, [((3,), DataType.INT64)], [((4, 3), F)], "input", id="no-values"),
])
def test_malformed_one_hot_is_refused(backend, axis: int, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.ONE_HOT, OneHotDescriptor(axis), inputs, outputs, "bad_one_hot"), reason)


# ---- TRIANGULAR ----------------------------------------------------------------------------


def run_triangular(backend, x: np.ndarray, dtype: DataType, upper: bool, k: int) -> None:
    s = spec(LayerKind.TRIANGULAR, TriangularDescriptor(upper, k), [(x.shape, dtype)], [(x.shape, dtype)],
             f"{'triu' if upper else 'tril'}{k}")
    (y,) = run_layer(backend, s, [x])
    assert_same(y, (np.triu if upper else np.tril)(x, k), s)


@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_triangular_every_type(backend, dtype: DataType, upper: bool) -> None:
    run_triangular(backend, values(dtype, (2, 4, 5), seed=34), dtype, upper, 1)


@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
@pytest.mark.parametrize("shape, k", [
    ((4, 4), 0), ((4, 4), -2), ((3, 5), 2), ((5, 3), -1), ((3, 5), 7), ((3, 5), -7), ((1, 5), -1),
    ((2, 3, 1, 4), 0), ((0, 3), 0), ((3, 0), 1), ((2, 2), 2**62), ((2, 2), -2**62),
], ids=lambda v: shape_id(v) if isinstance(v, tuple) else None)
def test_triangular_diagonals(backend, shape, k: int, upper: bool) -> None:
    run_triangular(backend, values(DataType.FLOAT32, shape, seed=35), F, upper, k)


@pytest.mark.parametrize("inputs, outputs, reason", [
    pytest.param([((4,), F)], [((4,), F)], "rank", id="rank-1"),
    pytest.param([((3, 4), F)], [((4, 3), F)], "output", id="output-shape"),
    pytest.param([((3, 4), F)], [((3, 4), DataType.INT8)], "output", id="output-type"),
])
def test_malformed_triangular_is_refused(backend, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.TRIANGULAR, TriangularDescriptor(True, 0), inputs, outputs, "bad"), reason)


def test_triangular_upper_not_a_bool_is_refused(backend) -> None:
    desc = TriangularDescriptor(True, 0)
    object.__setattr__(desc, "upper", 2)
    assert_refused(backend, spec(LayerKind.TRIANGULAR, desc, [((3, 4), F)], [((3, 4), F)], "bad"), "upper")
