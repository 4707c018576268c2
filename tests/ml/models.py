"""Classical-ML models trained at test time on seeded synthetic data and converted to ONNX with
skl2onnx / onnxmltools (the converters' own defaults: what users get)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

FEATURES = 8
SEED = 7


def data(classes: int = 0, rows: int = 400, features: int = FEATURES, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """X float32 [rows, features]; y: class ids (classes >= 2) or a nonlinear regression target."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    score = x[:, 0] * 1.5 - x[:, 1] + np.sin(2 * x[:, 2]) + 0.5 * x[:, 3] * x[:, 4]
    if classes:
        edges = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
        return x, np.digitize(score, edges).astype(np.int64)
    return x, score.astype(np.float32)


def skl(model: Any, features: int = FEATURES, **options: Any) -> Any:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(model, initial_types=[("X", FloatTensorType([None, features]))], target_opset={"": 17, "ai.onnx.ml": 3},
                       options=options or None)


def xgboost_onnx(model: Any, features: int = FEATURES) -> Any:
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_xgboost(model, initial_types=[("X", FloatTensorType([None, features]))], target_opset=15)


def lightgbm_onnx(model: Any, features: int = FEATURES, zipmap: bool = True) -> Any:
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_lightgbm(model, initial_types=[("X", FloatTensorType([None, features]))], target_opset=15,
                                zipmap=zipmap)
