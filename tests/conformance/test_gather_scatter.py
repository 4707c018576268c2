"""GATHER (take, elements, nd) and SCATTER (elements, nd; reductions none, add, mul, max, min).

Oracles: NumPy (np.take, np.take_along_axis, explicit index loops) on the same arrays. Moving
elements must be bit exact; the reductions follow backend_api.h (floats in double, rounded once
per update; integers wrapping to their width), which the oracle's loop reproduces, so they are
exact too. Every element type; negative, repeated and out-of-range indices; empty tensors;
malformed layers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from plugnn import BackendError
from plugnn.descriptors import GatherDescriptor, GatherOp, LayerKind, ScatterDescriptor, ScatterOp, ScatterReduction
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_refused, run_layer
from .typed import ALL_TYPES, NUMERIC_TYPES, assert_same, values

INDEX_TYPES = [DataType.INT32, DataType.INT64]


def spec(kind: LayerKind, desc: Any, inputs: list[tuple[tuple[int, ...], DataType]],
         outputs: list[tuple[tuple[int, ...], DataType]], name: str) -> LayerSpec:
    return LayerSpec(kind, name, desc, tuple(TensorInfo(s, t) for s, t in inputs),
                     tuple(TensorInfo(s, t) for s, t in outputs))


def run_gather(backend, data: np.ndarray, indices: np.ndarray, desc: GatherDescriptor,
               out_shape: tuple[int, ...], dtype: DataType, index_type: DataType) -> tuple[np.ndarray, LayerSpec]:
    s = spec(LayerKind.GATHER, desc, [(data.shape, dtype), (indices.shape, index_type)], [(out_shape, dtype)],
             f"gather_{desc.op.name.lower()}")
    (y,) = run_layer(backend, s, [data, indices])
    return y, s


# ---- GATHER take -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=lambda t: t.numpy_name)
def test_take_every_type(backend, dtype: DataType, index_type: DataType) -> None:
    data = values(dtype, (3, 5, 2), seed=1)
    indices = np.array([[4, 0], [-1, 2], [-5, 4]], index_type.numpy_dtype)
    y, s = run_gather(backend, data, indices, GatherDescriptor(GatherOp.TAKE, 1), (3, 3, 2, 2), dtype, index_type)
    assert_same(y, np.take(data, indices, axis=1), s)


@pytest.mark.parametrize("shape, axis, indices", [
    ((6,), 0, np.array(3)),                        # rank-0 indices remove the axis
    ((6,), 0, np.array([-6, 5, 0, 0, -1])),
    ((4, 3), 0, np.array([[3, 0, 1], [2, 2, -4]])),
    ((4, 3), 1, np.array([2])),
    ((4, 3), -1, np.array([-3, -2, -1])),
    ((2, 3, 4, 5), 2, np.array([[1], [3]])),
    ((2, 3, 4, 5), -4, np.array(1)),
    ((2, 3, 4), 1, np.zeros((0,), np.int64)),      # empty indices: an empty output
    ((2, 3, 4), 1, np.zeros((2, 0), np.int64)),
], ids=lambda v: None)
def test_take_shapes_and_axes(backend, shape, axis: int, indices: np.ndarray) -> None:
    data = values(DataType.FLOAT32, shape, seed=2)
    expected = np.take(data, indices, axis=axis)
    y, s = run_gather(backend, data, indices.astype(np.int64), GatherDescriptor(GatherOp.TAKE, axis),
                      expected.shape, DataType.FLOAT32, DataType.INT64)
    assert_same(y, expected, s)


def test_take_from_empty_dims_elsewhere(backend) -> None:
    data = np.zeros((0, 3), np.int16)
    indices = np.array([2, 0], np.int32)
    y, s = run_gather(backend, data, indices, GatherDescriptor(GatherOp.TAKE, 1), (0, 2), DataType.INT16,
                      DataType.INT32)
    assert y.shape == (0, 2)


# ---- GATHER elements ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_elements_every_type(backend, dtype: DataType) -> None:
    data = values(dtype, (3, 4), seed=3)
    indices = np.array([[0, -1, 2, 1], [3, 3, -4, 0]], np.int64)
    y, s = run_gather(backend, data, indices, GatherDescriptor(GatherOp.ELEMENTS, 1), indices.shape, dtype,
                      DataType.INT64)
    assert_same(y, np.take_along_axis(data[:2], indices % 4, axis=1), s)


@pytest.mark.parametrize("shape, index_shape, axis", [
    ((5,), (7,), 0),
    ((3, 4), (6, 2), 0),       # larger than data along the axis, smaller elsewhere
    ((3, 4), (2, 4), -1),
    ((2, 3, 4), (2, 3, 4), 1),
    ((2, 3, 4), (1, 2, 9), 2),
    ((2, 3, 4), (2, 0, 4), 0),  # empty
])
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=lambda t: t.numpy_name)
def test_elements_shapes(backend, shape, index_shape, axis: int, index_type: DataType) -> None:
    rng = np.random.default_rng(4)
    data = values(DataType.FLOAT64, shape, seed=4)
    size = shape[axis]
    indices = rng.integers(-size, size, index_shape).astype(index_type.numpy_dtype)
    # take_along_axis needs indices of data's dims off the axis: slice data to them.
    region = tuple(slice(None) if a == axis % len(shape) else slice(0, n) for a, n in enumerate(index_shape))
    expected = np.take_along_axis(data[region], (indices % size).astype(np.int64), axis=axis)
    y, s = run_gather(backend, data, indices, GatherDescriptor(GatherOp.ELEMENTS, axis), index_shape,
                      DataType.FLOAT64, index_type)
    assert_same(y, expected, s)


# ---- GATHER nd ------------------------------------------------------------------------------


def gather_nd_oracle(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    b = batch_dims
    k = indices.shape[-1]
    batch_shape = indices.shape[:b]
    out = np.empty(indices.shape[:-1] + data.shape[b + k:], data.dtype)
    for batch in np.ndindex(*batch_shape):
        for tup in np.ndindex(*indices.shape[b:-1]):
            where = tuple(int(i) for i in indices[batch + tup])
            out[batch + tup] = data[batch + where]
    return out


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: t.numpy_name)
def test_nd_every_type(backend, dtype: DataType) -> None:
    data = values(dtype, (3, 4, 2), seed=5)
    indices = np.array([[0, 3], [-1, -4], [2, 1]], np.int64)
    expected = gather_nd_oracle(data, indices, 0)
    y, s = run_gather(backend, data, indices, GatherDescriptor(GatherOp.ND, 0, 0), expected.shape, dtype,
                      DataType.INT64)
    assert_same(y, expected, s)


@pytest.mark.parametrize("data_shape, index_shape, batch_dims", [
    ((5,), (3, 1), 0),
    ((2, 3), (2, 2), 0),          # whole-element gathers (k == rank)
    ((2, 3, 4), (4, 1), 0),        # slices
    ((2, 3, 4), (2, 2, 3), 0),
    ((2, 3, 4), (2, 1), 1),        # batch_dims 1
    ((2, 3, 4), (2, 5, 2), 1),
    ((2, 3, 4, 2), (2, 3, 2, 1), 2),
    ((2, 3, 4), (0, 2), 0),        # no tuples: empty
])
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=lambda t: t.numpy_name)
def test_nd_shapes_and_batch_dims(backend, data_shape, index_shape, batch_dims: int, index_type: DataType) -> None:
    rng = np.random.default_rng(6)
    data = values(DataType.INT32, data_shape, seed=6)
    k = index_shape[-1]
    dims = np.array(data_shape[batch_dims:batch_dims + k])
    indices = (rng.integers(0, 1 << 20, index_shape) % dims - (rng.integers(0, 2, index_shape) * dims))
    indices = indices.astype(index_type.numpy_dtype)  # negative ones too
    expected = gather_nd_oracle(data, indices, batch_dims)
    y, s = run_gather(backend, data, indices, GatherDescriptor(GatherOp.ND, 0, batch_dims), expected.shape,
                      DataType.INT32, index_type)
    assert_same(y, expected, s)


# ---- GATHER: indices out of range fail execute() ---------------------------------------------


@pytest.mark.parametrize("op, data_shape, indices, axis, bad, size", [
    (GatherOp.TAKE, (4, 3), np.array([0, 4]), 0, 4, 4),
    (GatherOp.TAKE, (4, 3), np.array([[-4], [-5]]), 0, -5, 4),
    (GatherOp.TAKE, (4, 3), np.array([3]), 1, 3, 3),
    (GatherOp.ELEMENTS, (4, 3), np.array([[0, 1, 7]]), 1, 7, 3),
    (GatherOp.ND, (4, 3), np.array([[1, 2], [3, -4]]), 0, -4, 3),
    (GatherOp.ND, (4, 3), np.array([[9]]), 0, 9, 4),
], ids=["take-past-end", "take-below-minus-size", "take-axis1", "elements", "nd-second-axis", "nd-first-axis"])
def test_gather_index_out_of_range_fails_execute(backend, op, data_shape, indices, axis: int, bad: int,
                                                 size: int) -> None:
    data = values(DataType.FLOAT32, data_shape, seed=7)
    if op is GatherOp.TAKE:
        out_shape = np.take(data, np.zeros_like(indices), axis=axis).shape
    elif op is GatherOp.ELEMENTS:
        out_shape = indices.shape
    else:
        out_shape = indices.shape[:-1] + data_shape[indices.shape[-1]:]
    with pytest.raises(BackendError, match=rf"Gather.*index {bad}\b.*size {size}\b"):
        run_gather(backend, data, indices.astype(np.int32), GatherDescriptor(op, axis if op is not GatherOp.ND else 0),
                   out_shape, DataType.FLOAT32, DataType.INT32)


# ---- GATHER: malformed layers ---------------------------------------------------------------

F, I64 = DataType.FLOAT32, DataType.INT64


@pytest.mark.parametrize("desc, inputs, outputs, reason", [
    pytest.param(GatherDescriptor(GatherOp.TAKE, 2), [((4, 3), F), ((2,), I64)], [((4, 2), F)], "axis",
                 id="take-axis-past-rank"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0), [((4, 3), F), ((2,), DataType.FLOAT32)], [((2, 3), F)],
                 "int32 or int64", id="float-indices"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0), [((4, 3), F), ((2,), DataType.INT16)], [((2, 3), F)],
                 "int32 or int64", id="int16-indices"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0), [((4, 3), F), ((2,), I64)], [((2, 4), F)], "output",
                 id="take-wrong-output"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0), [((4, 3), F), ((2,), I64)], [((2, 3), DataType.FLOAT16)],
                 "output", id="output-type"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0), [((), F), ((2,), I64)], [((2,), F)], "rank",
                 id="rank-0-data"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0), [((4, 3), F)], [((4, 3), F)], "input", id="one-input"),
    pytest.param(GatherDescriptor(GatherOp.TAKE, 0, 1), [((4, 3), F), ((2,), I64)], [((2, 3), F)], "batch_dims",
                 id="take-batch-dims"),
    pytest.param(GatherDescriptor(GatherOp.ELEMENTS, 0), [((4, 3), F), ((2,), I64)], [((2,), F)], "rank",
                 id="elements-rank"),
    pytest.param(GatherDescriptor(GatherOp.ELEMENTS, 0), [((4, 3), F), ((2, 4), I64)], [((2, 4), F)], "exceed",
                 id="elements-larger-off-axis"),
    pytest.param(GatherDescriptor(GatherOp.ND, 0, 0), [((4, 3), F), ((2, 3), I64)], [((2,), F)], "last dim",
                 id="nd-k-past-rank"),
    pytest.param(GatherDescriptor(GatherOp.ND, 0, 0), [((4, 3), F), ((2, 0), I64)], [((2, 4, 3), F)], "last dim",
                 id="nd-k-zero"),
    pytest.param(GatherDescriptor(GatherOp.ND, 0, 2), [((4, 3), F), ((4, 3), I64)], [((4, 3), F)], "batch_dims",
                 id="nd-batch-dims-too-large"),
    pytest.param(GatherDescriptor(GatherOp.ND, 0, 1), [((4, 3), F), ((2, 1), I64)], [((2,), F)], "batch dim",
                 id="nd-batch-dims-differ"),
    pytest.param(GatherDescriptor(GatherOp.ND, 1, 0), [((4, 3), F), ((2, 1), I64)], [((2, 3), F)], "axis",
                 id="nd-axis"),
])
def test_malformed_gather_is_refused(backend, desc, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.GATHER, desc, inputs, outputs, "bad_gather"), reason)


def test_unknown_gather_op_is_refused(backend) -> None:
    desc = GatherDescriptor(GatherOp.TAKE, 0)
    object.__setattr__(desc, "op", 7)  # a value no header names
    assert_refused(backend, spec(LayerKind.GATHER, desc, [((4,), F), ((2,), I64)], [((2,), F)], "bad"),
                   "unknown operation")


# ---- SCATTER -------------------------------------------------------------------------------


def wrap(value: int, dtype: DataType) -> int:
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if not dtype.name.startswith("UINT") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def combined(a: Any, v: Any, reduction: ScatterReduction, dtype: DataType) -> Any:
    """One update as backend_api.h defines it."""
    R = ScatterReduction
    if reduction is R.NONE:
        return v
    if dtype.is_float:
        a, v = float(a), float(v)
        r = {R.ADD: lambda: a + v, R.MUL: lambda: a * v, R.MAX: lambda: v if v > a else a,
             R.MIN: lambda: v if v < a else a}[reduction]()
        return np.array(r, np.float64).astype(dtype.numpy_dtype)
    a, v = int(a), int(v)
    r = {R.ADD: a + v, R.MUL: a * v, R.MAX: max(a, v), R.MIN: min(a, v)}[reduction]
    return wrap(r, dtype)


def scatter_oracle(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, op: ScatterOp, axis: int,
                   reduction: ScatterReduction, dtype: DataType) -> np.ndarray:
    out = data.copy()
    if op is ScatterOp.ELEMENTS:
        axis %= data.ndim
        for where in np.ndindex(*indices.shape):
            target = list(where)
            target[axis] = int(indices[where]) % data.shape[axis]
            out[tuple(target)] = combined(out[tuple(target)], updates[where], reduction, dtype)
        return out
    k = indices.shape[-1]
    for tup in np.ndindex(*indices.shape[:-1]):
        base = tuple(int(i) % n for i, n in zip(indices[tup], data.shape))
        for rest in np.ndindex(*data.shape[k:]):
            out[base + rest] = combined(out[base + rest], updates[tup + rest], reduction, dtype)
    return out


def run_scatter(backend, data, indices, updates, desc: ScatterDescriptor, dtype: DataType,
                index_type: DataType = DataType.INT64) -> tuple[np.ndarray, LayerSpec]:
    s = spec(LayerKind.SCATTER, desc, [(data.shape, dtype), (indices.shape, index_type), (updates.shape, dtype)],
             [(data.shape, dtype)], f"scatter_{desc.op.name.lower()}_{desc.reduction.name.lower()}")
    (y,) = run_layer(backend, s, [data, indices.astype(index_type.numpy_dtype), updates])
    return y, s


REDUCTIONS = list(ScatterReduction)[1:]  # NONE .. MIN


def reduction_cases() -> list[Any]:
    cases = [pytest.param(ScatterReduction.NONE, t, id=f"none-{t.numpy_name}") for t in ALL_TYPES]
    cases += [pytest.param(r, t, id=f"{r.name.lower()}-{t.numpy_name}") for r in REDUCTIONS[1:]
              for t in NUMERIC_TYPES]
    return cases


@pytest.mark.parametrize("reduction, dtype", reduction_cases())
def test_scatter_elements_every_type_and_reduction(backend, reduction: ScatterReduction, dtype: DataType) -> None:
    data = values(dtype, (3, 5), seed=8)
    # Repeated targets (row 0 hits column 1 three times) and negative indices.
    indices = np.array([[1, -4, 1, 4], [0, 2, -1, 3], [4, 4, 0, 0]], np.int64)
    updates = values(dtype, indices.shape, seed=9)
    desc = ScatterDescriptor(ScatterOp.ELEMENTS, reduction, 1)
    y, s = run_scatter(backend, data, indices, updates, desc, dtype)
    assert_same(y, scatter_oracle(data, indices, updates, ScatterOp.ELEMENTS, 1, reduction, dtype), s)


@pytest.mark.parametrize("reduction, dtype", reduction_cases())
def test_scatter_nd_every_type_and_reduction(backend, reduction: ScatterReduction, dtype: DataType) -> None:
    data = values(dtype, (4, 3, 2), seed=10)
    indices = np.array([[1], [-1], [1], [0]], np.int64)  # slice 1 is hit twice
    updates = values(dtype, (4, 3, 2), seed=11)
    desc = ScatterDescriptor(ScatterOp.ND, reduction, 0)
    y, s = run_scatter(backend, data, indices, updates, desc, dtype)
    assert_same(y, scatter_oracle(data, indices, updates, ScatterOp.ND, 0, reduction, dtype), s)


@pytest.mark.parametrize("op, data_shape, index_shape, update_shape, axis", [
    (ScatterOp.ELEMENTS, (5,), (8,), (8,), 0),
    (ScatterOp.ELEMENTS, (3, 4, 2), (2, 6, 1), (2, 6, 1), 1),
    (ScatterOp.ELEMENTS, (3, 4, 2), (2, 3, 5), (2, 3, 5), -1),
    (ScatterOp.ELEMENTS, (3, 4), (0, 4), (0, 4), 0),
    (ScatterOp.ND, (3, 4, 2), (5, 3), (5,), 0),
    (ScatterOp.ND, (3, 4, 2), (2, 2, 2), (2, 2, 2), 0),
    (ScatterOp.ND, (3, 4, 2), (0, 1), (0, 4, 2), 0),
])
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=lambda t: t.numpy_name)
def test_scatter_shapes(backend, op, data_shape, index_shape, update_shape, axis: int, index_type) -> None:
    rng = np.random.default_rng(12)
    data = values(DataType.FLOAT32, data_shape, seed=12)
    updates = values(DataType.FLOAT32, update_shape, seed=13)
    if op is ScatterOp.ELEMENTS:
        size = data_shape[axis]
        indices = rng.integers(-size, size, index_shape)
    else:
        dims = np.array(data_shape[:index_shape[-1]])
        indices = rng.integers(0, 1 << 20, index_shape) % dims - rng.integers(0, 2, index_shape) * dims
    desc = ScatterDescriptor(op, ScatterReduction.ADD, axis)
    y, s = run_scatter(backend, data, indices, updates, desc, DataType.FLOAT32, index_type)
    assert_same(y, scatter_oracle(data, indices, updates, op, axis, ScatterReduction.ADD, DataType.FLOAT32), s)


@pytest.mark.parametrize("dtype, reduction, start, update, expected", [
    (DataType.INT8, ScatterReduction.ADD, 120, 10, -126),
    (DataType.UINT8, ScatterReduction.ADD, 250, 10, 4),
    (DataType.INT16, ScatterReduction.MUL, 300, 300, wrap(90000, DataType.INT16)),
    (DataType.INT64, ScatterReduction.ADD, 2**63 - 1, 1, -2**63),
    (DataType.UINT64, ScatterReduction.MUL, 2**63, 2, 0),
    (DataType.UINT64, ScatterReduction.MAX, 2**64 - 1, 1, 2**64 - 1),
    (DataType.INT64, ScatterReduction.MIN, -2**63, 2**63 - 1, -2**63),
], ids=lambda v: None)
def test_scatter_integer_reductions_wrap(backend, dtype, reduction, start, update, expected) -> None:
    data = np.array([start, 0], dtype.numpy_dtype)
    updates = np.array([update], dtype.numpy_dtype)
    y, s = run_scatter(backend, data, np.array([0]), updates, ScatterDescriptor(ScatterOp.ELEMENTS, reduction, 0),
                       dtype)
    assert_same(y, np.array([expected, 0], dtype.numpy_dtype), s)


def test_scatter_max_min_keep_the_element_on_nan(backend) -> None:
    data = np.array([1.0, 2.0], np.float32)
    updates = np.array([np.nan, np.nan], np.float32)
    for reduction in (ScatterReduction.MAX, ScatterReduction.MIN):
        y, s = run_scatter(backend, data, np.array([0, 1]), updates,
                           ScatterDescriptor(ScatterOp.ELEMENTS, reduction, 0), DataType.FLOAT32)
        assert_same(y, data, s)


@pytest.mark.parametrize("op, indices, axis, bad, size", [
    (ScatterOp.ELEMENTS, np.array([[0, 5]]), 1, 5, 4),
    (ScatterOp.ELEMENTS, np.array([[-4], [-1]]), 0, -4, 3),
    (ScatterOp.ND, np.array([[2, 4]]), 0, 4, 4),
    (ScatterOp.ND, np.array([[3, 0]]), 0, 3, 3),
], ids=["elements-axis1", "elements-negative", "nd-second-axis", "nd-first-axis"])
def test_scatter_index_out_of_range_fails_execute(backend, op, indices, axis: int, bad: int, size: int) -> None:
    data = values(DataType.FLOAT32, (3, 4), seed=14)
    update_shape = indices.shape if op is ScatterOp.ELEMENTS else indices.shape[:-1]
    updates = values(DataType.FLOAT32, update_shape, seed=15)
    with pytest.raises(BackendError, match=rf"Scatter.*index {bad}\b.*size {size}\b"):
        run_scatter(backend, data, indices, updates, ScatterDescriptor(op, ScatterReduction.NONE, axis),
                    DataType.FLOAT32, DataType.INT32)


@pytest.mark.parametrize("desc, inputs, outputs, reason", [
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 2),
                 [((3, 4), F), ((1, 4), I64), ((1, 4), F)], [((3, 4), F)], "axis", id="axis-past-rank"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((1, 4), I64), ((1, 3), F)], [((3, 4), F)], "updates", id="updates-shape"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((1, 5), I64), ((1, 5), F)], [((3, 4), F)], "exceed", id="indices-larger-off-axis"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((4,), I64), ((4,), F)], [((3, 4), F)], "rank", id="indices-rank"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((1, 4), I64), ((1, 4), DataType.FLOAT64)], [((3, 4), F)], "type",
                 id="updates-type"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((1, 4), DataType.UINT8), ((1, 4), F)], [((3, 4), F)], "int32 or int64",
                 id="uint8-indices"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.ADD, 0),
                 [((3, 4), DataType.BOOL), ((1, 4), I64), ((1, 4), DataType.BOOL)], [((3, 4), DataType.BOOL)],
                 "numeric", id="bool-with-reduction"),
    pytest.param(ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((1, 4), I64), ((1, 4), F)], [((4, 3), F)], "output", id="output-shape"),
    pytest.param(ScatterDescriptor(ScatterOp.ND, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((2, 3), I64), ((2,), F)], [((3, 4), F)], "last dim", id="nd-k-past-rank"),
    pytest.param(ScatterDescriptor(ScatterOp.ND, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((2, 1), I64), ((2, 3), F)], [((3, 4), F)], "updates", id="nd-updates-shape"),
    pytest.param(ScatterDescriptor(ScatterOp.ND, ScatterReduction.NONE, 1),
                 [((3, 4), F), ((2, 1), I64), ((2, 4), F)], [((3, 4), F)], "axis", id="nd-axis"),
    pytest.param(ScatterDescriptor(ScatterOp.ND, ScatterReduction.NONE, 0),
                 [((3, 4), F), ((2, 1), I64)], [((3, 4), F)], "input", id="two-inputs"),
])
def test_malformed_scatter_is_refused(backend, desc, inputs, outputs, reason: str) -> None:
    assert_refused(backend, spec(LayerKind.SCATTER, desc, inputs, outputs, "bad_scatter"), reason)


def test_unknown_scatter_reduction_is_refused(backend) -> None:
    desc = ScatterDescriptor(ScatterOp.ELEMENTS, ScatterReduction.NONE, 0)
    object.__setattr__(desc, "reduction", 9)
    assert_refused(backend, spec(LayerKind.SCATTER, desc, [((3,), F), ((1,), I64), ((1,), F)], [((3,), F)], "bad"),
                   "unknown reduction")
