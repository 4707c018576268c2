"""Batch inference on Ray: `plugnn.ray.Predictor` is a callable class for
`ray.data.Dataset.map_batches`; each Ray worker builds one and so loads the model once (an
InferenceSession), then runs every batch it gets. Ray itself is an optional extra
(`pip install 'plugnn[ray]'`); this package imports it only to size a worker's threads.

    import ray
    from plugnn.ray import Predictor

    ds = ray.data.read_parquet("s3://bucket/images/")          # columns: id, image
    predictions = ds.map_batches(Predictor, fn_constructor_kwargs={"model": "resnet50.onnx"},
                                 concurrency=4, num_cpus=2, batch_size=64, batch_format="numpy")

See docs/ray.md.
"""

from __future__ import annotations

from plugnn.ray.predictor import Predictor, predict

__all__ = ["Predictor", "predict"]
