"""Running a converted model on onnxruntime and on plugnn.InferenceSession and comparing every
output: labels (int64 or strings) exactly, scores and regressions within the stated tolerance,
ZipMap's sequences of maps key by key."""

from __future__ import annotations

from typing import Any

import numpy as np

import plugnn

# float32 scores: both runtimes sum the same float32 leaf values / products (plugnn's tree kernel
# in double, onnxruntime in float), so they differ by a few float32 steps.
RTOL = 1e-5
ATOL = 1e-5


def eval_rows(batch: int, features: int, seed: int = 99) -> np.ndarray:
    """Rows the model was not trained on."""
    return np.random.default_rng(seed).normal(size=(batch, features)).astype(np.float32)


def run_both(model: Any, feed: dict[str, np.ndarray]) -> tuple[list[Any], list[Any]]:
    import onnxruntime as ort

    data = model.SerializeToString()
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    session = plugnn.InferenceSession(data)
    return reference, session.run(None, feed)


def class_labels(model: Any) -> list[Any] | None:
    """The class labels of the model's classifier node, in score-column order, or None."""
    from onnx import helper

    for node in model.graph.node:
        for attr in node.attribute:
            if attr.name in ("classlabels_int64s", "classlabels_ints", "classlabels_strings"):
                values = helper.get_attribute_value(attr)
                return [v.decode() if isinstance(v, bytes) else v for v in values]
    return None


def _score_of(scores: Any, row: int, label: Any, labels: list[Any]) -> float:
    if isinstance(scores, list):
        return float(scores[row][label])
    return float(scores[row, labels.index(label)])


def assert_labels_match(want: np.ndarray, have: np.ndarray, scores: Any, labels: list[Any] | None, name: str,
                        atol: float) -> None:
    """Labels equal, but where the two best scores tie (within atol, in onnxruntime's scores): a
    tie of exact probabilities (a forest's votes 5.5 / 12 each) is broken by the last bits of a
    float32 sum in onnxruntime and resolves to the first class in plugnn's double one."""
    differ = np.flatnonzero(want != have)
    for row in differ:
        if scores is None or labels is None:
            raise AssertionError(f"{name}[{row}]: {have[row]!r}, onnxruntime's {want[row]!r}")
        a, b = _score_of(scores, row, want[row], labels), _score_of(scores, row, have[row], labels)
        assert abs(a - b) <= atol, (f"{name}[{row}]: {have[row]!r} (score {b}), onnxruntime's {want[row]!r} "
                                    f"(score {a}): not a tie")


def assert_outputs_match(model: Any, feed: dict[str, np.ndarray], rtol: float = RTOL, atol: float = ATOL) -> None:
    reference, got = run_both(model, feed)
    names = [o.name for o in model.graph.output]
    assert len(got) == len(reference)
    labels = class_labels(model)
    scores = reference[1] if len(reference) > 1 and labels is not None else None
    for index, (name, want, have) in enumerate(zip(names, reference, got)):
        if isinstance(want, list):  # ZipMap: a sequence of maps
            assert isinstance(have, list) and len(have) == len(want), name
            for i, (a, b) in enumerate(zip(want, have)):
                assert list(a) == list(b), f"{name}[{i}]: keys {list(b)}, onnxruntime's {list(a)}"
                np.testing.assert_allclose([b[k] for k in a], [a[k] for k in a], rtol=rtol, atol=atol,
                                           err_msg=f"{name}[{i}]")
            continue
        assert isinstance(have, np.ndarray), f"{name}: {type(have).__name__}"
        assert have.shape == want.shape, f"{name}: shape {have.shape}, onnxruntime's {want.shape}"
        if want.dtype.kind in "OUiub":
            assert have.dtype.kind == want.dtype.kind or (want.dtype.kind in "OU" and have.dtype.kind in "OU"), name
            if index == 0 and scores is not None:
                assert_labels_match(want, have, scores, labels, name, atol)
            else:
                np.testing.assert_array_equal(have, want, err_msg=name)
        else:
            assert have.dtype == want.dtype, f"{name}: {have.dtype}, onnxruntime's {want.dtype}"
            np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=name)
