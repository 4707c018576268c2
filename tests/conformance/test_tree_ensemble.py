"""TREE_ENSEMBLE against a NumPy walk of the same arrays (backend_api.h, "Tree ensembles"):
every aggregate, post transform and node mode, NaN features with and without
PN_TREE_MISSING_TRUE, float32 and float64 rows, several weights per leaf, the classifier's label,
batches below and above the kernels' row groups; every malformed ensemble refused."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import PN_TREE_MISSING_TRUE, LayerKind, TreeAggregate, TreeEnsembleDescriptor, TreeNodeMode
from plugnn.descriptors import TreePostTransform
from plugnn.layers import LayerSpec
from plugnn.shapes import INFER
from plugnn.sweep import TREE_INPUTS, random_forest
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_close, assert_refused, run_layer

ALL_MODES = tuple(m for m in TreeNodeMode if m is not TreeNodeMode.LEAF)


def spec_of(descriptor: TreeEnsembleDescriptor, x: np.ndarray, forest: dict[str, np.ndarray]) -> LayerSpec:
    arrays = [x] + [forest[k] for k in TREE_INPUTS]
    infos = tuple(TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in arrays)
    return LayerSpec(LayerKind.TREE_ENSEMBLE, "trees", descriptor, infos, tuple(INFER[LayerKind.TREE_ENSEMBLE](
        descriptor, infos)), constants=(None,) + tuple(arrays[1:]))


def _test(mode: int, v: float, threshold: float) -> bool:
    return {TreeNodeMode.LEQ: v <= threshold, TreeNodeMode.LT: v < threshold, TreeNodeMode.GTE: v >= threshold,
            TreeNodeMode.GT: v > threshold, TreeNodeMode.EQ: v == threshold,
            TreeNodeMode.NEQ: v != threshold}[TreeNodeMode(mode)]


def probit(p: float) -> float:
    """sqrt(2) erfinv(2p - 1) by bisection on math.erf (independent of the kernel's method)."""
    y = 2 * p - 1
    if not -1 < y < 1:
        return math.copysign(math.inf, y) if abs(y) == 1 else math.nan
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return math.sqrt(2) * (lo + hi) / 2


def reference(descriptor: TreeEnsembleDescriptor, x: np.ndarray, f: dict[str, np.ndarray]) -> list[np.ndarray]:
    targets = f["base_values"].size
    trees = f["tree_offsets"].size - 1
    scores = np.zeros((x.shape[0], targets))
    labels = np.zeros(x.shape[0], np.int64)
    for r, row in enumerate(x.astype(np.float64)):
        values: list[list[float]] = [[] for _ in range(targets)]
        for t in range(trees):
            i = int(f["tree_offsets"][t])
            while (int(f["node_modes"][i]) & ~PN_TREE_MISSING_TRUE) != TreeNodeMode.LEAF:
                mode = int(f["node_modes"][i])
                v = row[f["node_features"][i]]
                go = (math.isnan(v) and bool(mode & PN_TREE_MISSING_TRUE)) or _test(
                    mode & ~PN_TREE_MISSING_TRUE, v, f["node_thresholds"][i])
                i = int(f["node_true"][i] if go else f["node_false"][i])
            first, count = int(f["node_true"][i]), int(f["node_false"][i])
            for w in range(first, first + count):
                values[int(f["leaf_targets"][w])].append(float(f["leaf_weights"][w]))
        agg = descriptor.aggregate
        s = np.array([(sum(v) / (trees if agg is TreeAggregate.AVERAGE else 1)) if agg in (
            TreeAggregate.SUM, TreeAggregate.AVERAGE) else ((min(v) if agg is TreeAggregate.MIN else max(v))
                                                             if v else 0.0) for v in values])
        s = s + f["base_values"]
        labels[r] = int(np.argmax(s))
        post = descriptor.post_transform
        if post is TreePostTransform.LOGISTIC:
            s = 1 / (1 + np.exp(-s))
        elif post is TreePostTransform.SOFTMAX:
            s = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        elif post is TreePostTransform.SOFTMAX_ZERO:
            keep = np.abs(s) > 1e-7
            e = np.where(keep, np.exp(s - (s[keep].max() if keep.any() else 0)), 0.0)
            s = e / e.sum() if e.sum() > 0 else e
        elif post is TreePostTransform.PROBIT:
            s = np.array([probit(v) for v in s])
        scores[r] = s
    out = [scores.astype(x.dtype)]
    return out + [labels] if descriptor.op.name == "CLASSIFIER" else out


def rows(rng: np.random.Generator, n: int, features: int, dtype: Any) -> np.ndarray:
    x = np.round(rng.standard_normal((n, features)) * 4) / 4  # on the thresholds' grid: EQ, LEQ ties
    x[rng.random(x.shape) < 0.1] = np.nan
    return x.astype(dtype)


def check(backend: Any, descriptor: TreeEnsembleDescriptor, x: np.ndarray, forest: dict[str, np.ndarray]) -> None:
    spec = spec_of(descriptor, x, forest)
    got = run_layer(backend, spec, [x] + [forest[k] for k in TREE_INPUTS])
    want = reference(descriptor, x, forest)
    rtol, atol = (1e-6, 1e-6) if x.dtype == np.float32 else (1e-12, 1e-12)
    assert_close(got[0], want[0], rtol, atol, spec.name)
    if len(want) > 1:
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aggregate", list(TreeAggregate)[1:], ids=lambda a: a.name.lower())
@pytest.mark.parametrize("batch", [1, 5, 70])
def test_regressor_aggregates(backend: Any, dtype: Any, aggregate: TreeAggregate, batch: int) -> None:
    rng = np.random.default_rng(batch * 10 + int(aggregate))
    forest = random_forest(rng, 6, 9, 5, 3, ALL_MODES, weights_per_leaf=2)
    check(backend, TreeEnsembleDescriptor("regressor", aggregate), rows(rng, batch, 6, dtype), forest)


@pytest.mark.parametrize("post", list(TreePostTransform)[1:], ids=lambda p: p.name.lower())
@pytest.mark.parametrize("batch", [1, 70])
def test_classifier_post_transforms(backend: Any, post: TreePostTransform, batch: int) -> None:
    rng = np.random.default_rng(int(post) + batch)
    forest = random_forest(rng, 4, 12, 4, 4, (TreeNodeMode.LEQ,))
    if post is TreePostTransform.PROBIT:  # probit takes probabilities
        forest["leaf_weights"] = np.abs(forest["leaf_weights"]) / 40
        forest["base_values"] = np.full(4, 0.1)
    check(backend, TreeEnsembleDescriptor("classifier", "sum", post), rows(rng, batch, 4, np.float32), forest)


@pytest.mark.parametrize("mode", ALL_MODES, ids=lambda m: m.name.lower())
def test_each_mode_with_missing_values(backend: Any, mode: TreeNodeMode) -> None:
    rng = np.random.default_rng(int(mode))
    forest = random_forest(rng, 3, 20, 6, 1, (mode,), missing=0.5)
    check(backend, TreeEnsembleDescriptor("regressor"), rows(rng, 33, 3, np.float32), forest)


def test_single_weight_leaves_many_trees(backend: Any) -> None:
    """One target, one weight per leaf (the regressors' and boosted models' form), deep trees."""
    rng = np.random.default_rng(3)
    forest = random_forest(rng, 10, 60, 9, 1, (TreeNodeMode.LT,), missing=0.0)
    check(backend, TreeEnsembleDescriptor("regressor", "average"), rows(rng, 130, 10, np.float32), forest)


def test_shared_subtrees_and_leaves_without_weights(backend: Any) -> None:
    """A node that is the child of two (a set test written as a chain of EQ nodes), a leaf with
    no weight (its targets stay 0 for MIN)."""
    forest = {"tree_offsets": np.array([0, 5]), "node_modes": np.array([5, 5, 7, 7, 7], np.uint8),
              "node_features": np.array([0, 0, 0, 0, 0]), "node_thresholds": np.array([1.0, 2.0, 0, 0, 0]),
              "node_true": np.array([2, 2, 0, 1, 2]), "node_false": np.array([1, 3, 1, 1, 0]),
              "leaf_targets": np.array([0, 1, 1]), "leaf_weights": np.array([5.0, -1.0, 7.0]),
              "base_values": np.array([0.0, 0.5])}
    x = np.array([[1.0], [2.0], [3.0], [np.nan]], np.float32)
    check(backend, TreeEnsembleDescriptor("regressor", "min"), x, forest)


def _malformed(change: str) -> tuple[TreeEnsembleDescriptor, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    forest = random_forest(rng, 3, 2, 3, 2, (TreeNodeMode.LEQ,))
    x = rows(rng, 4, 3, np.float32)
    branch = int(np.flatnonzero((forest["node_modes"] & 0x7F) != TreeNodeMode.LEAF)[0])
    leaf = int(np.flatnonzero((forest["node_modes"] & 0x7F) == TreeNodeMode.LEAF)[0])
    if change == "cycle":
        forest["node_true"][branch] = branch  # a node that is its own child
    elif change == "child outside its tree":
        forest["node_false"][branch] = forest["tree_offsets"][1] + 1
    elif change == "feature":
        forest["node_features"][branch] = 3
    elif change == "mode":
        forest["node_modes"][branch] = 9
    elif change == "weights":
        forest["node_false"][leaf] = forest["leaf_targets"].size + 1
    elif change == "target":
        forest["leaf_targets"][0] = 2
    elif change == "offsets":
        forest["tree_offsets"][-1] -= 1
    elif change == "threshold":
        forest["node_thresholds"][branch] = np.nan
    return TreeEnsembleDescriptor("regressor"), x, forest


@pytest.mark.parametrize("change, reason", [
    ("cycle", "children"), ("child outside its tree", "children"), ("feature", "feature"), ("mode", "mode"),
    ("weights", "weights"), ("target", "target"), ("offsets", "tree_offsets"), ("threshold", "NaN")])
def test_malformed_ensembles_refused(backend: Any, change: str, reason: str) -> None:
    descriptor, x, forest = _malformed(change)
    assert_refused(backend, spec_of(descriptor, x, forest), reason)


def test_computed_arrays_refused(backend: Any) -> None:
    """The node arrays are constants: a layer passing one as a computed input is refused."""
    descriptor, x, forest = _malformed("none")
    spec = spec_of(descriptor, x, forest)
    constants = list(spec.constants)
    constants[3] = None
    spec = LayerSpec(spec.kind, spec.name, spec.descriptor, spec.inputs, spec.outputs, constants=tuple(constants))
    assert_refused(backend, spec, "constant")


def test_wrong_types_and_counts_refused(backend: Any) -> None:
    descriptor, x, forest = _malformed("none")
    spec = spec_of(descriptor, x, forest)
    bad = spec.inputs[:4] + (TensorInfo(spec.inputs[4].shape, DataType.FLOAT32),) + spec.inputs[5:]
    constants = list(spec.constants)
    constants[4] = forest["node_thresholds"].astype(np.float32)
    assert_refused(backend, LayerSpec(spec.kind, "t", descriptor, bad, spec.outputs, constants=tuple(constants)),
                   "node_thresholds")
    x_int = spec.inputs[0].__class__(spec.inputs[0].shape, DataType.INT32)
    assert_refused(backend, LayerSpec(spec.kind, "t", descriptor, (x_int,) + spec.inputs[1:], spec.outputs,
                                      constants=spec.constants), "FLOAT32 or FLOAT64")
    classifier = TreeEnsembleDescriptor("classifier")
    assert_refused(backend, LayerSpec(spec.kind, "t", classifier, spec.inputs, spec.outputs,
                                      constants=spec.constants), "CLASSIFIER")
