"""CpuAcc's TREE_ENSEMBLE kernel (ops/tree_ensemble.c): it gives CpuRef's bits (both add the
leaf weights in double, tree by tree in order, and share the post transform) at every thread
count, for row blocks, row groups and the threaded split; a reshaped workload shares the packed
forest; a forest whose shared subtrees unfold past 2^28 nodes is refused and runs on CpuRef."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import Network
from plugnn.descriptors import TreeNodeMode
from plugnn.sweep import TREE_INPUTS, random_forest

from .common import HAVE_CPUACC, THREADS

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

ALL_MODES = tuple(m for m in TreeNodeMode if m is not TreeNodeMode.LEAF)


def forest_network(forest: dict[str, np.ndarray], batch: int, features: int, dtype: Any, op: str,
                   aggregate: str = "sum", post: str = "none") -> Network:
    net = Network("forest")
    x = net.add_input("x", (batch, features), dtype=np.dtype(dtype).name)
    outputs = net.add_tree_ensemble(x, **{k: forest[k] for k in TREE_INPUTS}, op=op, aggregate=aggregate,
                                    post_transform=post, name="trees")
    for i, out in enumerate(outputs):
        net.add_output(out, ("scores", "label")[i])
    return net


def run_on(net: Network, backend: str, feed: dict[str, np.ndarray], threads: int = 1) -> dict[str, np.ndarray]:
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": threads}}) as rt:
        optimized = plugnn.optimize(net, rt, [backend])
        assert [n.backend_id for n in optimized.layers] == [backend]
        loaded = rt.load_network(optimized)
        try:
            return {k: np.array(v) for k, v in loaded.run(feed).items()}
        finally:
            loaded.unload()


def rows(batch: int, features: int, dtype: Any, seed: int = 5) -> np.ndarray:
    x = (np.random.default_rng(seed).standard_normal((batch, features)) * 1.5).astype(dtype)
    x[::7, 1] = np.nan
    x[3::11, 0] = np.round(x[3::11, 0] * 4) / 4  # on the thresholds' grid: EQ / NEQ / LEQ ties
    return x


CASES = [  # name, op, aggregate, post, targets, modes, weights per leaf
    ("gbm_binary", "classifier", "sum", "logistic", 1, (TreeNodeMode.LEQ,), 1),
    ("xgb_multiclass", "classifier", "sum", "softmax", 4, (TreeNodeMode.LT,), 1),
    ("forest_average", "regressor", "average", "none", 2, (TreeNodeMode.LEQ,), 2),
    ("mixed_modes_max", "regressor", "max", "none", 3, ALL_MODES, 2),
    ("probit_min", "regressor", "min", "probit", 1, (TreeNodeMode.GT, TreeNodeMode.GTE), 1),
    ("softmax_zero", "classifier", "sum", "softmax_zero", 3, ALL_MODES, 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [1, 9, 300])
@pytest.mark.parametrize("name, op, aggregate, post, targets, modes, per_leaf", CASES, ids=[c[0] for c in CASES])
def test_cpuacc_gives_cpurefs_bits(name: str, op: str, aggregate: str, post: str, targets: int,
                                   modes: tuple[TreeNodeMode, ...], per_leaf: int, batch: int, dtype: Any) -> None:
    features = 7
    forest = random_forest(np.random.default_rng(len(name)), features, 60, 7, targets, modes, per_leaf)
    net = forest_network(forest, batch, features, dtype, op, aggregate, post)
    feed = {"x": rows(batch, features, dtype)}
    want = run_on(net, "CpuRef", feed)
    for threads in THREADS[:3]:
        got = run_on(net, "CpuAcc", feed, threads)
        for key, value in want.items():
            assert got[key].dtype == value.dtype
            np.testing.assert_array_equal(got[key], value, err_msg=f"{name} {key} num_threads={threads}")


def regressor_model() -> bytes:
    """An ONNX-ML TreeEnsembleRegressor with a symbolic batch: 20 stumps-of-depth-2 on 4 features."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(11)
    attrs: dict[str, list[Any]] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes", "nodes_truenodeids",
        "nodes_falsenodeids", "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    for t in range(20):  # node 0 splits into 1 and 2; 1 into leaves 3, 4; 2 is a leaf
        for n, (mode, yes, no) in enumerate([("BRANCH_LEQ", 1, 2), ("BRANCH_LEQ", 3, 4), ("LEAF", 0, 0),
                                             ("LEAF", 0, 0), ("LEAF", 0, 0)]):
            attrs["nodes_treeids"].append(t)
            attrs["nodes_nodeids"].append(n)
            attrs["nodes_featureids"].append(int(rng.integers(0, 4)))
            attrs["nodes_values"].append(float(rng.standard_normal()))
            attrs["nodes_modes"].append(mode)
            attrs["nodes_truenodeids"].append(yes)
            attrs["nodes_falsenodeids"].append(no)
            if mode == "LEAF":
                for key, value in (("target_treeids", t), ("target_nodeids", n), ("target_ids", 0),
                                   ("target_weights", float(rng.standard_normal()))):
                    attrs[key].append(value)
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", n_targets=1, **attrs)
    graph = helper.make_graph([node], "forest", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", 3)]).SerializeToString()


def test_a_session_packs_the_forest_once() -> None:
    """Other batch sizes keep the tree workload (it takes the batch at execute: the instance is
    re-sized in place) or re-size it (reshape), sharing its packed forest; each batch computes
    what a session that saw only its batch computes."""
    model = regressor_model()
    with plugnn.InferenceSession(model, backend_options={"CpuAcc": {"num_threads": 2}}) as session:
        packed_bytes = lambda: int(session.runtime.backend("CpuAcc").get_option("packed_weight_bytes"))  # noqa: E731
        outputs = {}
        for batch in (3, 500, 40):
            x = rows(batch, 4, np.float32, seed=batch)
            outputs[batch] = (x, session.run(None, {"x": x})[0].copy())
            session.run(None, {"x": x})
            if batch == 3:
                packed = packed_bytes()
                assert packed > 0
            else:
                loaded = session.loaded_for({"x": (batch, 4)})
                assert loaded is not None
                trees = [n.name for n in loaded.optimized.layers if n.backend_id == "CpuAcc"]
                assert trees and set(trees) <= set(loaded.reshaped_layers) | set(loaded.rebound_layers)
        assert packed_bytes() == packed
    for batch, (x, got) in outputs.items():
        with plugnn.InferenceSession(model, backends=["CpuRef"]) as alone:
            np.testing.assert_array_equal(got, alone.run(None, {"x": x})[0])


def test_a_forest_unfolding_past_2_28_nodes_runs_on_cpuref() -> None:
    """31 branches, each with both children the next one: 2^31 paths. CpuAcc refuses it with its
    reason; the network runs on CpuRef."""
    depth = 31
    modes = np.array([int(TreeNodeMode.LEQ)] * depth + [int(TreeNodeMode.LEAF)], np.uint8)
    forest = {"tree_offsets": np.array([0, depth + 1], np.int64), "node_modes": modes,
              "node_features": np.zeros(depth + 1, np.int64), "node_thresholds": np.zeros(depth + 1),
              "node_true": np.array(list(range(1, depth + 1)) + [0], np.int64),
              "node_false": np.array(list(range(1, depth + 1)) + [1], np.int64),
              "leaf_targets": np.zeros(1, np.int64), "leaf_weights": np.array([2.5]),
              "base_values": np.array([0.5])}
    net = forest_network(forest, 3, 1, np.float32, "regressor")
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        assert [n.backend_id for n in optimized.layers] == ["CpuRef"]
        assert "unfold to more than 2^28 nodes" in optimized.explain(verbose=True)
        loaded = rt.load_network(optimized)
        np.testing.assert_array_equal(loaded.run({"x": np.zeros((3, 1), np.float32)})["scores"],
                                      np.full((3, 1), 3.0, np.float32))
        loaded.unload()
