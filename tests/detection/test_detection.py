"""Detection models against onnxruntime: the same boxes, scores and labels for several images
(whose candidates before NMS differ in number), with the data-dependent head (NonZero, TopK of a computed
k, NonMaxSuppression) on CpuAcc and no segment imported again after the second image (the axes
the data decides are symbols of one segment); and on CpuRef alone, the oracle.

Tolerances: labels exact; boxes and scores rtol 1e-4 / atol 1e-3 of the largest box coordinate
(float32 convolutions summed in another order than onnxruntime's; the selection itself, which
boxes survive, is compared exactly through the labels and the shapes); detections whose scores
tie within 1e-6 compared in label order (`canonical`)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import plugnn
from detection import entries, image, model_path
from zoo import weights

MODELS = sorted(entries())
IMAGES = (0, 1, 2, 3)


@pytest.fixture(scope="module", params=MODELS)
def model(request: pytest.FixtureRequest) -> tuple[str, bytes, list[list[np.ndarray]]]:
    name = request.param
    data = weights.materialize(model_path(entries()[name]), seed=0).SerializeToString()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    theirs = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return name, data, [theirs.run(None, {"image": image(seed)}) for seed in IMAGES]


def canonical(ours: list[np.ndarray], theirs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Both by descending score, and within each run of the reference's scores that tie to
    within float32 summation (SSDlite's 0.01753125 twice) by label, then x1: such detections
    may come in either order."""
    def by_score(d: list[np.ndarray]) -> list[np.ndarray]:
        order = np.argsort(-d[1].astype(np.float64), kind="stable")
        return [a[order] for a in d]

    ours, theirs = by_score(ours), by_score(theirs)
    scores = theirs[1].astype(np.float64)
    cuts = [0] + [i for i in range(1, len(scores)) if scores[i - 1] - scores[i] > 1e-6 * abs(scores[i]) + 1e-9]
    for lo, hi in zip(cuts, cuts[1:] + [len(scores)]):
        for d in (ours, theirs):
            order = np.lexsort((d[0][lo:hi, 0], d[2][lo:hi])) + lo
            for a in d:
                a[lo:hi] = a[order]
    return ours, theirs


def same_detections(ours: list[np.ndarray], theirs: list[np.ndarray], what: str) -> None:
    assert [a.shape for a in ours] == [a.shape for a in theirs], what
    assert len(ours[0]) > 0, f"{what}: no detections (the thresholds should keep some)"
    (boxes, scores, labels), expected = canonical(ours, theirs)
    np.testing.assert_array_equal(labels, expected[2], err_msg=what)
    scale = float(np.abs(expected[0]).max())
    np.testing.assert_allclose(boxes, expected[0], rtol=1e-4, atol=1e-3 * scale, err_msg=what)
    np.testing.assert_allclose(scores, expected[1], rtol=1e-4, atol=1e-6, err_msg=what)


def test_detections_match_onnxruntime(model: tuple[str, bytes, list[list[np.ndarray]]]) -> None:
    name, data, expected = model
    made = []
    with plugnn.InferenceSession(data) as session:
        for seed, theirs in zip(IMAGES, expected):
            same_detections(session.run(None, {"image": image(seed)}), theirs, f"{name}, image {seed}")
            made.append(session.dynamic.segments_made)
        placement = session.dynamic.explain()
    assert "CpuRef   1 layer: DataDependent" not in placement, f"{name}: a NonZero or NMS ran on CpuRef"
    # the second image's new counts made the segments after the data-dependent layers symbolic:
    # no segment is imported for the images after it
    assert made[1] == made[2] == made[3], f"{name}: segments made after each image {made}"
    assert "with symbols" in placement


@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_320", "yolo_nms"])  # SSDlite's 27,300-box NMS: 1 s
def test_detections_on_the_oracle(name: str) -> None:
    data = weights.materialize(model_path(entries()[name]), seed=0).SerializeToString()
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"image": image(IMAGES[0])})
    with plugnn.InferenceSession(data, backends=["CpuRef"]) as session:
        same_detections(session.run(None, {"image": image(IMAGES[0])}), expected, f"{name} on CpuRef")
