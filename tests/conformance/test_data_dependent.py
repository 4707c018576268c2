"""DATA_DEPENDENT (NonZero, Unique, NonMaxSuppression, Compress) against NumPy and ONNX's
reference evaluator, on every backend that claims it, then its malformed layers.

Each case runs the layer with outputs of their upper-bound shapes and reads back the part the
workload reports it wrote (Workload.execute returns the actual shapes; backend_api.h,
"Data-dependent layers"). Oracles: np.nonzero; np.unique (reordered by first occurrence for
unsorted); onnx.reference's NonMaxSuppression; np.compress. Results are exact (indices and
copied values), so they are compared with array_equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from plugnn import shapes
from plugnn.backend import Backend
from plugnn.descriptors import DataDependentDescriptor, DataDependentOp, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_refused, unwritten
from .elementtypes import ALL_TYPES, FLOATS, NUMERIC, type_id

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

OP = DataDependentOp


def spec_of(desc: DataDependentDescriptor, inputs: Sequence[TensorInfo],
            outputs: Sequence[TensorInfo] | None = None, constants: Sequence[Any] = ()) -> LayerSpec:
    """A DATA_DEPENDENT layer with the upper bounds shapes.py derives (or the given outputs)."""
    outs = tuple(outputs) if outputs is not None else tuple(shapes.INFER[LayerKind.DATA_DEPENDENT](desc, list(inputs)))
    return LayerSpec(LayerKind.DATA_DEPENDENT, f"dd_{desc.op.name.lower()}", desc, tuple(inputs), outs,
                     constants=tuple(constants))


def run(backend: Backend, spec: LayerSpec, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Execute; returns each output cut to the shape the workload reported (a skip when refused)."""
    support = backend.is_layer_supported(spec)
    if not support.supported:
        pytest.skip(f"{backend.backend_id}: {support.reason}")
    outputs = [unwritten(info) for info in spec.outputs]
    factory = backend.create_workload_factory()
    try:
        workload = factory.create_workload(spec)
    finally:
        factory.close()
    try:
        reported = workload.execute([np.ascontiguousarray(a) for a in arrays], outputs)
    finally:
        workload.close()
    assert reported is not None, f"{backend.backend_id} reported no output shapes for {spec.name}"
    actual = []
    for out, shape, info in zip(outputs, reported, spec.outputs):
        assert len(shape) == info.rank and all(0 <= s <= b for s, b in zip(shape, info.shape)), \
            f"{backend.backend_id}: reported {shape} outside the bound {info.shape}"
        count = int(np.prod(shape, dtype=np.int64))
        actual.append(out.reshape(-1)[:count].reshape(shape))
    return actual


def values(shape: tuple[int, ...], dtype: DataType, seed: int, zeros: float = 0.5) -> np.ndarray:
    """Random values of `dtype` with about `zeros` of them 0 (false) and few distinct values."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 4, shape) * (rng.random(shape) >= zeros)
    if dtype is DataType.BOOL:
        return raw.astype(bool)
    if dtype.is_float:
        return (raw * 0.75).astype(dtype.numpy_dtype)
    return raw.astype(dtype.numpy_dtype)


def equal(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    assert np.array_equal(actual, expected, equal_nan=actual.dtype.kind == "f"), \
        f"{what}: {actual.tolist()} != {expected.tolist()}"


# ---- NON_ZERO ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=type_id)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (2, 0, 3), (1,)], ids=str)
def test_non_zero(backend: Backend, dtype: DataType, shape: tuple[int, ...]) -> None:
    x = values(shape, dtype, seed=sum(shape) + 7)
    spec = spec_of(DataDependentDescriptor(OP.NON_ZERO), [TensorInfo(shape, dtype)])
    (y,) = run(backend, spec, [x])
    equal(y, np.array(np.nonzero(x), np.int64).reshape(len(shape), -1), f"NonZero {dtype.numpy_name} {shape}")


def test_non_zero_counts_nan_as_nonzero(backend: Backend) -> None:
    x = np.array([0.0, np.nan, -0.0, 2.0], np.float32)
    (y,) = run(backend, spec_of(DataDependentDescriptor(OP.NON_ZERO), [TensorInfo((4,), DataType.FLOAT32)]), [x])
    equal(y, np.array([[1, 3]], np.int64), "NonZero with NaN and -0.0")


# ---- UNIQUE ---------------------------------------------------------------------------------------------


def unique_reference(x: np.ndarray, axis: int | None, sorted_: bool) -> list[np.ndarray]:
    y, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(index, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if axis is None else axis)
        index, counts, inverse = index[order], counts[order], rank[inverse]
    return [y, index.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


@pytest.mark.parametrize("dtype", NUMERIC + (DataType.BOOL,), ids=type_id)
@pytest.mark.parametrize("sorted_", [True, False], ids=["sorted", "first_occurrence"])
@pytest.mark.parametrize("shape, axis", [((9,), None), ((3, 4), None), ((5, 3), 0), ((3, 5), 1), ((2, 4, 2), -2),
                                         ((0,), None), ((2, 0), 0)], ids=str)
def test_unique(backend: Backend, dtype: DataType, sorted_: bool, shape: tuple[int, ...], axis: int | None) -> None:
    x = values(shape, dtype, seed=len(shape) * 11 + (axis or 0), zeros=0.3)
    if axis is not None and x.size:  # repeat a slice so that some slices are equal
        x = np.take(x, [i // 2 * 2 % x.shape[axis] for i in range(x.shape[axis])], axis=axis)
    desc = DataDependentDescriptor(OP.UNIQUE, axis is not None, axis or 0, sorted_)
    actual = run(backend, spec_of(desc, [TensorInfo(shape, dtype)]), [x])
    for name, got, want in zip(("y", "indices", "inverse_indices", "counts"), actual,
                               unique_reference(x, axis, sorted_)):
        equal(got, want, f"Unique {name} ({dtype.numpy_name} {shape}, axis {axis}, sorted {sorted_})")


def test_unique_nan_and_signed_zero(backend: Backend) -> None:
    x = np.array([np.nan, 1.0, -0.0, np.nan, 0.0, -2.0], np.float64)
    desc = DataDependentDescriptor(OP.UNIQUE, sorted=True)
    y, index, inverse, counts = run(backend, spec_of(desc, [TensorInfo((6,), DataType.FLOAT64)]), [x])
    equal(y, np.array([-2.0, -0.0, 1.0, np.nan]), "Unique y: NaN last, NaNs and zeros merged")
    equal(index, np.array([5, 2, 1, 0]), "Unique indices")
    equal(inverse, np.array([3, 2, 1, 3, 1, 0]), "Unique inverse_indices")
    equal(counts, np.array([1, 2, 1, 2]), "Unique counts")


# ---- NON_MAX_SUPPRESSION ------------------------------------------------------------------------------------


def nms_reference(boxes: np.ndarray, scores: np.ndarray, extra: Sequence[np.ndarray], center: int) -> np.ndarray:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    if len(extra) == 1:  # onnx.reference needs the IoU threshold given: ONNX's default, 0
        extra = [extra[0], np.zeros(1, boxes.dtype)]
    names = ["boxes", "scores", "max_output", "iou", "score"][:2 + len(extra)]
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    graph = helper.make_graph([node], "nms", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                                             a.shape)
                                              for n, a in zip(names, [boxes, scores, *extra])],
                              [helper.make_tensor_value_info("y", 7, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, [boxes, scores, *extra])))[0]


def nms_inputs(batches: int, classes: int, boxes: int, seed: int, center: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if center:
        xy = rng.random((batches, boxes, 2)) * 4
        wh = rng.random((batches, boxes, 2)) * 3 + 0.5
        box = np.concatenate([xy, wh], axis=2)
    else:
        box = rng.random((batches, boxes, 4)) * 5  # corners in any order
    scores = np.round(rng.random((batches, classes, boxes)), 1)  # ties on purpose
    return box.astype(np.float32), scores.astype(np.float32)


@pytest.mark.parametrize("center", [0, 1], ids=["corners", "center"])
@pytest.mark.parametrize("extra", [(), (3,), (2, 0.3), (4, 0.5, 0.4), (10, 0.0, 0.0), (0, 0.5, 0.1), (-1, 0.5)],
                         ids=str)
@pytest.mark.parametrize("sizes", [(1, 1, 6), (2, 3, 8), (1, 2, 0)], ids=str)
def test_non_max_suppression(backend: Backend, center: int, extra: tuple[float, ...],
                             sizes: tuple[int, int, int]) -> None:
    b, c, n = sizes
    boxes, scores = nms_inputs(b, c, n, seed=b * 100 + c * 10 + n + center, center=bool(center))
    arrays = [np.array([int(extra[0])], np.int64)] + [np.array([v], np.float32) for v in extra[1:]] if extra else []
    infos = [TensorInfo(boxes.shape, DataType.FLOAT32), TensorInfo(scores.shape, DataType.FLOAT32)]
    infos += [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in arrays]
    desc = DataDependentDescriptor(OP.NON_MAX_SUPPRESSION, center_point_box=bool(center))
    (y,) = run(backend, spec_of(desc, infos), [boxes, scores, *arrays])
    # No maximum, or one <= 0, selects nothing (backend_api.h; onnx.reference fails on a negative one).
    selects = bool(arrays) and int(arrays[0][0]) > 0
    expected = nms_reference(boxes, scores, arrays, center) if selects else np.zeros((0, 3), np.int64)
    equal(y, expected.reshape(-1, 3).astype(np.int64), f"NonMaxSuppression {sizes} {extra} center {center}")


@pytest.mark.parametrize("dtype", FLOATS, ids=type_id)
def test_non_max_suppression_float_types(backend: Backend, dtype: DataType) -> None:
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 3, 1, 4], [0, 10, 1, 11]]], dtype.numpy_dtype)
    scores = np.array([[[0.9, 0.75, 0.6, 0.5]]], dtype.numpy_dtype)
    extra = [np.array([3], np.int64), np.array([0.5], dtype.numpy_dtype), np.array([0.55], dtype.numpy_dtype)]
    infos = [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in [boxes, scores, *extra]]
    (y,) = run(backend, spec_of(DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), infos), [boxes, scores, *extra])
    equal(y, np.array([[0, 0, 0], [0, 0, 2]], np.int64), f"NonMaxSuppression {dtype.numpy_name}")


def test_non_max_suppression_fails_past_a_stated_bound(backend: Backend) -> None:
    boxes, scores = nms_inputs(1, 1, 6, seed=3, center=False)
    extra = [np.array([6], np.int64), np.array([1.0], np.float32)]  # IoU never above 1: all six selected
    infos = [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in [boxes, scores, *extra]]
    spec = spec_of(DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), infos, [TensorInfo((4, 3), DataType.INT64)])
    support = backend.is_layer_supported(spec)
    if not support.supported:
        pytest.skip(f"{backend.backend_id}: {support.reason}")
    from plugnn import BackendError

    with pytest.raises(BackendError, match="bound"):
        run(backend, spec, [boxes, scores, *extra])


# ---- COMPRESS --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=type_id)
@pytest.mark.parametrize("shape, axis, length", [((3, 4), 1, 4), ((3, 4), 0, 2), ((3, 4), None, 12), ((3, 4), None, 5),
                                                 ((2, 3, 2), -1, 2), ((4,), 0, 0), ((0, 3), 1, 3)], ids=str)
def test_compress(backend: Backend, dtype: DataType, shape: tuple[int, ...], axis: int | None, length: int) -> None:
    x = values(shape, dtype, seed=length + 5, zeros=0.0)
    condition = np.random.default_rng(length).random(length) > 0.4
    desc = DataDependentDescriptor(OP.COMPRESS, axis is not None, axis or 0)
    spec = spec_of(desc, [TensorInfo(shape, dtype), TensorInfo((length,), DataType.BOOL)])
    (y,) = run(backend, spec, [x, condition])
    equal(y, np.compress(condition, x, axis=axis), f"Compress {dtype.numpy_name} {shape} axis {axis}")


# ---- malformed layers ------------------------------------------------------------------------------------------


F32, I64, BOOL = DataType.FLOAT32, DataType.INT64, DataType.BOOL


def info(shape: tuple[int, ...], dtype: DataType = F32) -> TensorInfo:
    return TensorInfo(shape, dtype)


MALFORMED = [
    ("bad bound", DataDependentDescriptor(OP.NON_ZERO), [info((3, 4))], [info((2, 11), I64)], "upper bound"),
    ("int32 indices", DataDependentDescriptor(OP.NON_ZERO), [info((3, 4))], [info((2, 12), DataType.INT32)], "int64"),
    ("scalar", DataDependentDescriptor(OP.NON_ZERO), [info(())], [info((0, 1), I64)], "rank"),
    ("two inputs", DataDependentDescriptor(OP.NON_ZERO), [info((3,)), info((3,))], [info((1, 3), I64)], "takes"),
    ("axis out of range", DataDependentDescriptor(OP.UNIQUE, True, 2), [info((3, 4))],
     [info((3, 4)), info((4,), I64), info((4,), I64), info((4,), I64)], "axis"),
    ("axis without has_axis", DataDependentDescriptor(OP.UNIQUE, False, 1), [info((3, 4))],
     [info((12,)), info((12,), I64), info((12,), I64), info((12,), I64)], "does not apply"),
    ("sorted on NonZero", DataDependentDescriptor(OP.NON_ZERO, sorted=True), [info((3,))], [info((1, 3), I64)],
     "does not apply"),
    ("unique y type", DataDependentDescriptor(OP.UNIQUE), [info((3,))],
     [info((3,), I64), info((3,), I64), info((3,), I64), info((3,), I64)], "output 0"),
    ("unique three outputs", DataDependentDescriptor(OP.UNIQUE), [info((3,))],
     [info((3,)), info((3,), I64), info((3,), I64)], "takes"),
    ("nms boxes shape", DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), [info((1, 4, 3)), info((1, 1, 4))],
     [info((4, 3), I64)], r"\[B, N, 4\]"),
    ("nms scores type", DataDependentDescriptor(OP.NON_MAX_SUPPRESSION),
     [info((1, 4, 4)), info((1, 1, 4), DataType.FLOAT64)], [info((4, 3), I64)], "scores"),
    ("nms bound too big", DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), [info((1, 4, 4)), info((1, 2, 4))],
     [info((9, 3), I64)], "upper bound"),
    ("nms max not int64", DataDependentDescriptor(OP.NON_MAX_SUPPRESSION),
     [info((1, 4, 4)), info((1, 2, 4)), info((1,), DataType.INT32)], [info((8, 3), I64)], "max_output_boxes"),
    ("nms two thresholds", DataDependentDescriptor(OP.NON_MAX_SUPPRESSION),
     [info((1, 4, 4)), info((1, 2, 4)), info((1,), I64), info((2,))], [info((8, 3), I64)], "iou_threshold"),
    ("nms int boxes", DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), [info((1, 4, 4), I64), info((1, 2, 4), I64)],
     [info((8, 3), I64)], "float"),
    ("compress condition type", DataDependentDescriptor(OP.COMPRESS, True, 0), [info((3, 2)), info((3,), I64)],
     [info((3, 2))], "condition"),
    ("compress condition too long", DataDependentDescriptor(OP.COMPRESS, True, 0), [info((3, 2)), info((4,), BOOL)],
     [info((3, 2))], "more than"),
    ("compress bound", DataDependentDescriptor(OP.COMPRESS, True, 1), [info((3, 4)), info((2,), BOOL)],
     [info((3, 4))], "upper bound"),
    ("center_point_box on Compress", DataDependentDescriptor(OP.COMPRESS, center_point_box=True),
     [info((3,)), info((3,), BOOL)], [info((3,))], "does not apply"),
]


@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_layers_are_refused(backend: Backend, case: tuple[Any, ...]) -> None:
    _, desc, inputs, outputs, reason = case
    assert_refused(backend, spec_of(desc, inputs, outputs), reason)
