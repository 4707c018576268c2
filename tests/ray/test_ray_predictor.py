"""Batch inference on Ray: a local cluster on this machine (2 CPUs) runs plugnn.ray.Predictor over
a dataset made on the fly (seeded 64x64 images through the zoo's ResNet-18) on 2 workers; every
prediction is compared, by id, with onnxruntime on the same image. The Predictor's batch handling
is checked without Ray first."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import ray

import plugnn
from plugnn.ray import Predictor, predict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zoo import weights  # noqa: E402

IMAGES = 48
TOLERANCE = 1e-3  # the manifest's CpuAcc class: max |diff| / max |onnxruntime| per output


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory: pytest.TempPathFactory) -> Path:
    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == "resnet18")
    path = tmp_path_factory.mktemp("ray") / "resnet18.onnx"
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(path))
    return path


def images(count: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, 3, 64, 64)).astype(np.float32)


def test_a_predictor_takes_arrays_and_columns(resnet18: Path) -> None:
    predictor = Predictor(str(resnet18), backends=["CpuRef"])
    batch = images(3)
    expected = ort.InferenceSession(str(resnet18)).run(None, {"image": batch})[0]
    from_array = predictor(batch)["logits"]
    from_columns = predictor({"image": batch})["logits"]
    np.testing.assert_array_equal(from_array, from_columns)
    assert np.abs(from_array - expected).max() <= 1e-4 * np.abs(expected).max()
    renamed = Predictor(str(resnet18), backends=["CpuRef"], input_columns={"image": "pixels"}, keep_columns=["id"])
    result = renamed({"pixels": batch, "id": np.arange(3)})
    assert sorted(result) == ["id", "logits"] and result["id"].tolist() == [0, 1, 2]
    with pytest.raises(plugnn.InputError, match=r"the batch has columns \['image'\]; the model's inputs need 'pixels'"):
        renamed({"image": batch})
    with pytest.raises(plugnn.InputError, match="input 'image' has dtype float64"):
        predictor(batch.astype(np.float64))


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_map_batches_on_a_local_cluster_with_two_workers(resnet18: Path, cluster: None) -> None:
    batch = images(IMAGES)
    dataset = ray.data.from_items([{"id": i, "image": batch[i]} for i in range(IMAGES)])
    rows = predict(dataset, resnet18, workers=2, batch_size=8, keep_columns=["id"]).take_all()
    assert len(rows) == IMAGES and sorted(int(r["id"]) for r in rows) == list(range(IMAGES))
    expected = ort.InferenceSession(str(resnet18)).run(None, {"image": batch})[0]
    for row in rows:
        want = expected[int(row["id"])]
        assert row["logits"].shape == (1000,)
        assert np.abs(row["logits"] - want).max() <= TOLERANCE * np.abs(want).max()
