"""XGBoost and LightGBM models as onnxmltools writes them (regression, two and three classes),
trained here on seeded synthetic data, compared with onnxruntime at batch 1 and 1000."""

from __future__ import annotations

import functools
from typing import Any

import lightgbm
import numpy as np
import pytest
import xgboost

from .common import assert_outputs_match, eval_rows
from .models import FEATURES, data, lightgbm_onnx, xgboost_onnx


@functools.cache
def xgboost_model(classes: int) -> Any:
    x, y = data(classes)
    model = (xgboost.XGBClassifier if classes else xgboost.XGBRegressor)(n_estimators=25, max_depth=4,
                                                                          random_state=0, n_jobs=1)
    return xgboost_onnx(model.fit(x, y))


@functools.cache
def lightgbm_model(classes: int) -> Any:
    x, y = data(classes)
    model = (lightgbm.LGBMClassifier if classes else lightgbm.LGBMRegressor)(n_estimators=25, random_state=0,
                                                                              verbose=-1, n_jobs=1)
    return lightgbm_onnx(model.fit(x, y))


@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("classes", [0, 2, 3], ids=["regressor", "2_classes", "3_classes"])
def test_xgboost_matches_onnxruntime(classes: int, batch: int) -> None:
    assert_outputs_match(xgboost_model(classes), {"X": eval_rows(batch, FEATURES)})


@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("classes", [0, 2, 3], ids=["regressor", "2_classes", "3_classes"])
def test_lightgbm_matches_onnxruntime(classes: int, batch: int) -> None:
    assert_outputs_match(lightgbm_model(classes), {"X": eval_rows(batch, FEATURES)})


def test_missing_values_take_the_boosters_default_direction() -> None:
    x = eval_rows(300, FEATURES)
    x[::4, 1] = np.nan
    x[2::7, 0] = np.nan
    for model in (xgboost_model(0), xgboost_model(3), lightgbm_model(2)):
        assert_outputs_match(model, {"X": x})
