"""scikit-learn models as skl2onnx writes them (random forests, gradient boosting, logistic and
linear regression, SVMs, pipelines with imputers, scalers, normalizers and a one-hot encoder,
string class labels), trained here on seeded synthetic data, run on plugnn.InferenceSession and
compared with onnxruntime at batch 1 and 1000 (common.py: labels exact but for exact ties, scores
rtol/atol 1e-5, SVMs 1e-4)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier,
                              RandomForestRegressor)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, Normalizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR, LinearSVC

from .common import ATOL, assert_outputs_match, eval_rows
from .models import FEATURES, data, skl

BATCHES = [1, 1000]


def _categorical(x: np.ndarray) -> np.ndarray:
    """Columns 5.. as small non-negative integers (categories 0..3) for the one-hot encoder."""
    x = x.copy()
    x[:, 5:] = np.minimum(np.floor(np.abs(x[:, 5:]) * 2), 3)
    return x


def _one_hot_pipeline(x: np.ndarray, y: np.ndarray) -> Any:
    columns = ColumnTransformer([("numbers", StandardScaler(), [0, 1, 2, 3, 4]),
                                 ("categories", OneHotEncoder(handle_unknown="ignore"), [5, 6, 7])])
    return make_pipeline(columns, LogisticRegression(max_iter=500)).fit(_categorical(x), y)


# name -> (classes (0: regression), make(x, y) -> fitted model, skl2onnx options, rows transform)
MODELS: dict[str, tuple[int, Callable[[np.ndarray, np.ndarray], Any], dict[str, Any], Any]] = {
    "random_forest_regressor": (0, lambda x, y: RandomForestRegressor(12, max_depth=8, random_state=0).fit(x, y),
                                {}, None),
    "random_forest_2_classes": (2, lambda x, y: RandomForestClassifier(12, max_depth=8, random_state=0).fit(x, y),
                                {}, None),
    "random_forest_3_classes": (3, lambda x, y: RandomForestClassifier(12, max_depth=8, random_state=0).fit(x, y),
                                {"zipmap": False}, None),
    "gradient_boosting_regressor": (0, lambda x, y: GradientBoostingRegressor(n_estimators=20, random_state=0)
                                    .fit(x, y), {}, None),
    "gradient_boosting_2_classes": (2, lambda x, y: GradientBoostingClassifier(n_estimators=15, random_state=0)
                                    .fit(x, y), {"zipmap": False}, None),
    "gradient_boosting_4_classes": (4, lambda x, y: GradientBoostingClassifier(n_estimators=10, random_state=0)
                                    .fit(x, y), {}, None),
    "logistic_regression_2_classes": (2, lambda x, y: LogisticRegression().fit(x, y), {}, None),
    "logistic_regression_3_classes": (3, lambda x, y: LogisticRegression().fit(x, y), {"zipmap": False}, None),
    "linear_regression": (0, lambda x, y: LinearRegression().fit(x, y), {}, None),
    "svc_rbf_3_classes": (3, lambda x, y: SVC().fit(x, y), {"zipmap": False}, None),
    "svc_poly_3_classes": (3, lambda x, y: SVC(kernel="poly").fit(x, y), {"zipmap": False}, None),
    "svc_sigmoid_3_classes": (3, lambda x, y: SVC(kernel="sigmoid").fit(x, y), {"zipmap": False}, None),
    "svc_linear_2_classes": (2, lambda x, y: SVC(kernel="linear").fit(x, y), {"zipmap": False}, None),
    "svr_rbf": (0, lambda x, y: SVR().fit(x, y), {}, None),
    "linear_svc_3_classes": (3, lambda x, y: LinearSVC().fit(x, y), {}, None),
    "pipeline_imputer_scaler_normalizer": (3, lambda x, y: make_pipeline(
        SimpleImputer(), MinMaxScaler(), Normalizer(), LogisticRegression()).fit(x, y), {"zipmap": False}, None),
    "pipeline_scaler_one_hot": (3, _one_hot_pipeline, {"zipmap": False}, _categorical),
}


@functools.cache
def converted(name: str) -> Any:
    classes, make, options, transform = MODELS[name]
    x, y = data(classes)
    return skl(make(x, y), **options)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_onnxruntime(name: str, batch: int) -> None:
    transform = MODELS[name][3]
    x = eval_rows(batch, FEATURES)
    # An SVM's decision sums hundreds of kernel terms that cancel: onnxruntime's float32 sums
    # drift by up to ~2e-5 from plugnn's (CpuRef sums in double).
    tolerance = 1e-4 if name.startswith(("svc", "svr")) else ATOL
    assert_outputs_match(converted(name), {"X": transform(x) if transform else x}, atol=tolerance, rtol=tolerance)


@functools.cache
def string_labels_model() -> Any:
    x, y = data(3)
    names = np.array(["low", "middle", "high"])[y]
    return skl(make_pipeline(StandardScaler(), RandomForestClassifier(8, max_depth=5, random_state=0)).fit(x, names))


@pytest.mark.parametrize("batch", BATCHES)
def test_string_class_labels_and_zipmap_of_strings(batch: int) -> None:
    """A forest with string labels: the label index on the backends, the strings and ZipMap's maps
    keyed by them in the runtime (plugnn.dynamic.ml)."""
    assert_outputs_match(string_labels_model(), {"X": eval_rows(batch, FEATURES)})


def test_missing_values_follow_the_trees_routing() -> None:
    """NaN features (scikit-learn >= 1.3 trees route them; skl2onnx writes the direction)."""
    x = eval_rows(200, FEATURES)
    x[::3, 0] = np.nan
    x[1::5, 2] = np.nan
    assert_outputs_match(converted("random_forest_regressor"), {"X": x})
    assert_outputs_match(converted("gradient_boosting_4_classes"), {"X": x})


@pytest.mark.parametrize("name", ["random_forest_2_classes", "gradient_boosting_regressor", "svc_rbf_3_classes"])
def test_an_empty_batch_gives_empty_outputs(name: str) -> None:
    assert_outputs_match(converted(name), {"X": np.zeros((0, FEATURES), np.float32)})


def test_a_row_of_the_wrong_width_is_an_input_error() -> None:
    import plugnn
    from plugnn.errors import InputError

    session = plugnn.InferenceSession(converted("random_forest_regressor").SerializeToString())
    with pytest.raises(InputError, match="dim 1 is 5"):
        session.run(None, {"X": np.zeros((2, 5), np.float32)})
    assert session.run(None, {"X": np.zeros((2, FEATURES), np.float32)})[0].shape == (2, 1)  # still usable



def test_the_tree_layers_run_on_cpuacc() -> None:
    """A random forest's TREE_ENSEMBLE layer goes to CpuAcc (the runtime's preference), as the
    plan and explain() say, and the model still matches onnxruntime."""
    import plugnn
    import plugnn.onnx

    x, y = data(3)
    model = skl(RandomForestClassifier(10, max_depth=5, random_state=0).fit(x, y), zipmap=False)
    network = plugnn.onnx.load(model, input_shapes={"X": (40, FEATURES)})
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(network, rt)
        trees = [n for n in optimized.layers if n.kind.name == "TREE_ENSEMBLE"]
        assert trees and all(n.backend_id == "CpuAcc" for n in trees)
        assert "(TreeEnsemble) -> CpuAcc" in optimized.explain(verbose=True)
    assert_outputs_match(model, {"X": eval_rows(40, FEATURES)})
