"""DATA_DEPENDENT on CpuAcc (plugins/accel/src/ops/data_dependent.c): NonMaxSuppression on float32
and NonZero, on every kernel set this machine runs at 1, 2, 3 and 7 threads, against CpuRef (the
oracle: the same selection bit for bit) and, where one exists, NumPy.

NonMaxSuppression's cases are the ones its shortcuts could get wrong: the x grid (boxes of one
class, of many classes offset as torchvision's batched_nms does, boxes far apart and boxes of
very different widths), the division-free IoU test (pairs whose IoU is the threshold, within one
rounding of it, and thresholds of 0 and below), non-finite corners, NaN scores, boxes of no area,
both box formats, and the bound a layer states. The conformance suite (tests/conformance/
test_data_dependent.py) runs the same layers against ONNX's reference on every backend too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import DataDependentDescriptor, DataDependentOp
from plugnn.tensor import DataType, TensorInfo

from conformance.test_data_dependent import run, spec_of

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

OP = DataDependentOp
RNG = np.random.default_rng(4242)


def both(runtimes: dict[tuple[str, int], plugnn.Runtime], desc: DataDependentDescriptor,
         arrays: Sequence[np.ndarray], outputs: Sequence[TensorInfo] | None = None) -> list[np.ndarray]:
    """The layer's result on CpuRef, after checking every CpuAcc configuration gives the same."""
    infos = [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in arrays]
    layer = spec_of(desc, infos, outputs)
    with plugnn.Runtime() as rt:
        expected = run(rt.backend("CpuRef"), layer, arrays)
    for (isa, threads), rt in runtimes.items():
        got = run(rt.backend("CpuAcc"), layer, arrays)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and np.array_equal(g, e), \
                f"isa={isa} num_threads={threads}: {g.tolist()} != CpuRef's {e.tolist()}"
    return expected


def nms(runtimes, boxes: np.ndarray, scores: np.ndarray, most: int | None = 1000, iou: float | None = 0.5,
        threshold: float | None = None, center: bool = False) -> np.ndarray:  # type: ignore[no-untyped-def]
    extra: list[np.ndarray] = []
    for value, dtype in ((most, np.int64), (iou, np.float32), (threshold, np.float32)):
        if value is None:
            break
        extra.append(np.array([value], dtype))
    desc = DataDependentDescriptor(OP.NON_MAX_SUPPRESSION, center_point_box=center)
    (selected,) = both(runtimes, desc, [boxes.astype(np.float32), scores.astype(np.float32), *extra])
    return selected


def corners(n: int, side: float = 100.0, largest: float = 30.0, batch: int = 1) -> np.ndarray:
    """[batch, n, 4] boxes [y1, x1, y2, x2] (corners in either order) inside a square of `side`."""
    y, x = RNG.uniform(0, side, (2, batch, n))
    h, w = RNG.uniform(0.5, largest, (2, batch, n))
    boxes = np.stack([y, x, y + h, x + w], -1)
    swap = RNG.random((batch, n)) < 0.3  # some boxes given by their other two corners
    boxes[swap] = boxes[swap][:, [2, 3, 0, 1]]
    return boxes


@pytest.mark.parametrize("n", [1, 7, 16, 17, 300, 2000])
@pytest.mark.parametrize("iou", [0.0, 0.3, 0.5, 0.9])
def test_random_boxes(runtimes, n: int, iou: float) -> None:  # type: ignore[no-untyped-def]
    boxes = corners(n, batch=2)
    scores = RNG.random((2, 3, n))
    selected = nms(runtimes, boxes, scores, iou=iou, threshold=0.2)
    assert len(selected) > 0


def test_batched_nms_offsets(runtimes) -> None:  # type: ignore[no-untyped-def]
    """torchvision's batched_nms: one class, each class's boxes offset by class x (largest + 1)."""
    classes, per = 91, 60
    boxes = corners(classes * per, side=300.0, largest=120.0)[0]
    labels = np.repeat(np.arange(classes), per)
    offset = (labels * (boxes.max() + 1.0))[:, None]
    shifted = (boxes + offset)[None]
    scores = RNG.random((1, 1, classes * per))
    selected = nms(runtimes, shifted, scores, most=100000, iou=0.45)
    # the same selection as NMS per class
    per_class = set()
    for c in range(classes):
        rows = np.flatnonzero(labels == c)
        picked = nms(runtimes, boxes[rows][None], scores[:, :, rows], most=100000, iou=0.45)
        per_class.update(rows[picked[:, 2]].tolist())
    assert set(selected[:, 2].tolist()) == per_class


def test_widths_far_apart(runtimes) -> None:  # type: ignore[no-untyped-def]
    """A few wide boxes among many narrow ones far apart: the grid's cells are as wide as the
    widest box, and a narrow box still meets every wide one it overlaps."""
    narrow = corners(500, side=10000.0, largest=2.0)[0]
    wide = np.array([[0, 0, 50, 10000], [5000, 2000, 5100, 9000], [0, 9990, 10000, 10000]], np.float64)
    boxes = np.concatenate([narrow, wide])[None]
    scores = RNG.random((1, 1, len(boxes[0])))
    scores[0, 0, -3:] = 2.0  # the wide ones first
    nms(runtimes, boxes, scores, iou=0.0)
    nms(runtimes, boxes, scores, iou=1e-4)


def test_iou_at_the_threshold(runtimes) -> None:  # type: ignore[no-untyped-def]
    """Pairs whose IoU is the threshold exactly or one rounding either side: the division-free
    test must hand those to the exact division."""
    # [0, 0, 1, 1] and [0, 0, 1, 1 + t]: IoU 1 / (1 + t)
    ts = [0.25, 1.0, 3.0, 0.5, 1 / 3]
    boxes, thresholds = [], []
    for t in ts:
        boxes.append([[0, 0, 1, 1], [0, 0, 1, 1 + t]])
        thresholds.append(np.float32(1 / (1 + t)))
    for pair, thr in zip(boxes, thresholds):
        for nudge in (-1, 0, 1):
            at = np.nextafter(thr, np.float32(np.inf) if nudge > 0 else np.float32(-np.inf)) if nudge else thr
            selected = nms(runtimes, np.array([pair], np.float64), np.array([[[0.9, 0.8]]]), iou=float(at))
            assert len(selected) in (1, 2)


@pytest.mark.parametrize("iou", [0.0, -0.5, -np.inf, np.nan, 1.0, np.inf])
def test_thresholds_at_the_edges(runtimes, iou: float) -> None:  # type: ignore[no-untyped-def]
    boxes = corners(200)
    boxes[0, :20] = boxes[0, 20:40]  # identical pairs (IoU 1)
    scores = RNG.random((1, 2, 200))
    nms(runtimes, boxes, scores, iou=iou)


def test_non_finite_corners_nan_scores_and_empty_boxes(runtimes) -> None:  # type: ignore[no-untyped-def]
    boxes = corners(120)
    boxes[0, 0:4] = [[np.nan, 0, 5, 5], [0, np.inf, 5, 5], [-np.inf, -np.inf, np.inf, np.inf], [0, 0, np.nan, 9]]
    boxes[0, 4:8] = [[3, 3, 3, 9], [2, 2, 2, 2], [1, 1, 9, 1], [5, 5, 5, 5]]  # no area
    boxes[0, 8:12] = [[1e30, 1e30, 1e30 + 1e24, 1e30 + 1e24], [-1e30, 0, 1e30, 1], [0, 0, 1e-30, 1e-30],
                      [0, 0, 1e-30, 2e-30]]
    scores = RNG.random((1, 2, 120))
    scores[0, 0, ::9] = np.nan
    scores[0, 1, ::5] = 0.5  # ties: lower box first
    for threshold in (None, 0.1):
        nms(runtimes, boxes, scores, iou=0.3, threshold=threshold)
        nms(runtimes, boxes, scores, iou=0.0, threshold=threshold)


def test_center_point_boxes(runtimes) -> None:  # type: ignore[no-untyped-def]
    cx, cy = RNG.uniform(0, 200, (2, 400))
    w, h = RNG.uniform(1, 60, (2, 400))
    boxes = np.stack([cx, cy, w, h], -1)[None]
    nms(runtimes, boxes, RNG.random((1, 4, 400)), iou=0.4, threshold=0.3, center=True)


@pytest.mark.parametrize("most", [None, 0, -1, 1, 3])
def test_optional_inputs_and_limits(runtimes, most: int | None) -> None:  # type: ignore[no-untyped-def]
    boxes, scores = corners(50), RNG.random((1, 2, 50))
    selected = nms(runtimes, boxes, scores, most=most, iou=None if most is None else 0.5)
    assert len(selected) == (0 if most is None or most <= 0 else len(selected))
    if most is not None and most > 0:
        assert np.bincount(selected[:, 1], minlength=2).max() <= most
    nms(runtimes, boxes, scores, most=10, iou=None)


def test_no_boxes_and_no_candidates(runtimes) -> None:  # type: ignore[no-untyped-def]
    assert nms(runtimes, np.zeros((1, 0, 4)), np.zeros((1, 3, 0))).shape == (0, 3)
    assert nms(runtimes, corners(10), np.zeros((1, 1, 10)), threshold=0.5).shape == (0, 3)


def test_a_stated_bound_that_is_too_small_fails_and_names_it(runtimes) -> None:  # type: ignore[no-untyped-def]
    boxes = np.array([[[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5], [6, 6, 7, 7]]], np.float32)
    scores = np.ones((1, 1, 4), np.float32)
    extra = [np.array([10], np.int64), np.array([0.5], np.float32)]
    infos = [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in [boxes, scores, *extra]]
    layer = spec_of(DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), infos, [TensorInfo((3, 3), DataType.INT64)])
    for rt in runtimes.values():
        with pytest.raises(plugnn.BackendError, match="more than the 3 selected boxes"):
            run(rt.backend("CpuAcc"), layer, [boxes, scores, *extra])


def test_float16_boxes_stay_cpuref() -> None:
    infos = [TensorInfo((1, 4, 4), DataType.FLOAT16), TensorInfo((1, 1, 4), DataType.FLOAT16)]
    layer = spec_of(DataDependentDescriptor(OP.NON_MAX_SUPPRESSION), infos)
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not support.supported and "float32 boxes and scores only; input 0 is float16" in support.reason


# ---- NonZero ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int32, np.uint32, np.float32, np.int64,
                                   np.uint64])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (2, 3, 4, 5), (0, 4), (70000,), (3, 300, 300)], ids=str)
def test_non_zero(runtimes, dtype: type, shape: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
    x = (RNG.random(shape) < 0.3) * RNG.integers(1, 5, shape)
    x = x.astype(dtype)
    if dtype is np.float32 and x.size:
        x.reshape(-1)[::11] = np.nan   # NaN is nonzero
        x.reshape(-1)[5::13] = -0.0    # -0.0 is zero
    (y,) = both(runtimes, DataDependentDescriptor(OP.NON_ZERO), [x])
    np.testing.assert_array_equal(y, np.array(np.nonzero(x), np.int64).reshape(len(shape), -1))


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.FLOAT64, DataType.INT16])
def test_non_zero_other_types_stay_cpuref(dtype: DataType) -> None:
    layer = spec_of(DataDependentDescriptor(OP.NON_ZERO), [TensorInfo((4,), dtype)])
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not support.supported and f"input 0 is {dtype.name.lower()}" in support.reason


def test_unique_and_compress_stay_cpuref() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        unique = spec_of(DataDependentDescriptor(OP.UNIQUE), [TensorInfo((4,), DataType.FLOAT32)])
        compress = spec_of(DataDependentDescriptor(OP.COMPRESS),
                           [TensorInfo((4,), DataType.FLOAT32), TensorInfo((4,), DataType.BOOL)])
        for layer, name in ((unique, "Unique"), (compress, "Compress")):
            support = backend.is_layer_supported(layer)
            assert not support.supported and f"NonZero and NonMaxSuppression only, not {name}" in support.reason
