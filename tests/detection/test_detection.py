"""Detection models against onnxruntime: the same boxes, scores and labels for several images
(whose candidates before NMS differ in number), with the data-dependent head (NonZero, TopK of a computed
k, NonMaxSuppression) on CpuAcc; and on CpuRef alone, the oracle.

Tolerances: labels exact; boxes and scores rtol 1e-4 / atol 1e-3 of the largest box coordinate
(float32 convolutions summed in another order than onnxruntime's; the selection itself, which
boxes survive, is compared exactly through the labels and the shapes)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import plugnn
from detection import entries, image, model_path
from zoo import weights

MODELS = sorted(entries())
IMAGES = (0, 1, 2)


@pytest.fixture(scope="module", params=MODELS)
def model(request: pytest.FixtureRequest) -> tuple[str, bytes, list[list[np.ndarray]]]:
    name = request.param
    data = weights.materialize(model_path(entries()[name]), seed=0).SerializeToString()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    theirs = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return name, data, [theirs.run(None, {"image": image(seed)}) for seed in IMAGES]


def same_detections(ours: list[np.ndarray], theirs: list[np.ndarray], what: str) -> None:
    boxes, scores, labels = ours
    assert [a.shape for a in ours] == [a.shape for a in theirs], what
    assert len(boxes) > 0, f"{what}: no detections (the thresholds should keep some)"
    np.testing.assert_array_equal(labels, theirs[2], err_msg=what)
    scale = float(np.abs(theirs[0]).max())
    np.testing.assert_allclose(boxes, theirs[0], rtol=1e-4, atol=1e-3 * scale, err_msg=what)
    np.testing.assert_allclose(scores, theirs[1], rtol=1e-4, atol=1e-6, err_msg=what)


def test_detections_match_onnxruntime(model: tuple[str, bytes, list[list[np.ndarray]]]) -> None:
    name, data, expected = model
    with plugnn.InferenceSession(data) as session:
        for seed, theirs in zip(IMAGES, expected):
            same_detections(session.run(None, {"image": image(seed)}), theirs, f"{name}, image {seed}")
        placement = session.dynamic.explain()
    assert "CpuRef   1 layer: DataDependent" not in placement, f"{name}: a NonZero or NMS ran on CpuRef"


@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_320", "yolo_nms"])  # SSDlite's 27,300-box NMS: 1 s
def test_detections_on_the_oracle(name: str) -> None:
    data = weights.materialize(model_path(entries()[name]), seed=0).SerializeToString()
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"image": image(IMAGES[0])})
    with plugnn.InferenceSession(data, backends=["CpuRef"]) as session:
        same_detections(session.run(None, {"image": image(IMAGES[0])}), expected, f"{name} on CpuRef")
