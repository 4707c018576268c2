"""ai.onnx.ml operators one by one, in models made with onnx.helper: each compared with
onnxruntime and with onnx.reference (ONNX's own implementation of the ML operators), and the
malformed forms refused with a ModelError naming the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import plugnn
from plugnn.errors import ModelError

from .common import assert_outputs_match

ML = "ai.onnx.ml"
F = TensorProto.FLOAT


def model(node: Any, inputs: list[Any], outputs: list[Any], ml_opset: int = 3) -> Any:
    graph = helper.make_graph([node], "ml", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, ml_opset)])
    m.ir_version = 8
    return m


def tensor(name: str, elem: int, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def ml_node(op: str, inputs: list[str], outputs: list[str], **attrs: Any) -> Any:
    return helper.make_node(op, inputs, outputs, domain=ML, **attrs)


def reference_outputs(m: Any, feed: dict[str, Any]) -> list[Any]:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(m).run(None, feed)


def check(m: Any, feed: dict[str, Any], reference: bool = True, atol: float = 1e-6) -> None:
    """plugnn against onnxruntime (common.py) and, where `reference`, against onnx.reference."""
    assert_outputs_match(m, feed, rtol=atol, atol=atol)
    if reference:
        got = plugnn.InferenceSession(m.SerializeToString()).run(None, feed)
        for have, want in zip(got, reference_outputs(m, feed)):
            if isinstance(want, np.ndarray) and want.dtype.kind == "f":
                np.testing.assert_allclose(have, want, rtol=atol, atol=atol)
            elif isinstance(want, np.ndarray):
                np.testing.assert_array_equal(have, want)


X = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.5], [4.0, 2.0, -8.0]], np.float32)


def test_scaler() -> None:
    m = model(ml_node("Scaler", ["X"], ["Y"], offset=[1.0, 0.5, -1.0], scale=[2.0, 0.5, 0.25]),
              [tensor("X", F, [None, 3])], [tensor("Y", F, [None, 3])])
    check(m, {"X": X})


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer(norm: str) -> None:
    m = model(ml_node("Normalizer", ["X"], ["Y"], norm=norm), [tensor("X", F, [None, 3])], [tensor("Y", F, [None, 3])])
    # MAX divides by the largest value of the row in onnxruntime, by the largest magnitude in
    # onnx.reference: plugnn follows onnxruntime.
    check(m, {"X": X}, reference=norm != "MAX")


def test_binarizer() -> None:
    m = model(ml_node("Binarizer", ["X"], ["Y"], threshold=0.5), [tensor("X", F, [None, 3])],
              [tensor("Y", F, [None, 3])])
    check(m, {"X": X})


def test_imputer_floats_and_nan() -> None:
    x = X.copy()
    x[0, 1] = np.nan
    x[2, 0] = np.nan
    m = model(ml_node("Imputer", ["X"], ["Y"], imputed_value_floats=[7.0, 8.0, 9.0], replaced_value_float=np.nan),
              [tensor("X", F, [None, 3])], [tensor("Y", F, [None, 3])])
    check(m, {"X": x})


def test_imputer_int64() -> None:
    m = model(ml_node("Imputer", ["X"], ["Y"], imputed_value_int64s=[5], replaced_value_int64=-1),
              [tensor("X", TensorProto.INT64, [None, 2])], [tensor("Y", TensorProto.INT64, [None, 2])])
    check(m, {"X": np.array([[-1, 3], [4, -1]], np.int64)})


def test_array_feature_extractor_and_feature_vectorizer() -> None:
    nodes = [helper.make_node("Constant", [], ["idx"], value=helper.make_tensor("v", TensorProto.INT64, [2], [2, 0])),
             ml_node("ArrayFeatureExtractor", ["X", "idx"], ["picked"]),
             ml_node("FeatureVectorizer", ["picked", "X"], ["Y"], inputdimensions=[2, 3])]
    graph = helper.make_graph(nodes, "fv", [tensor("X", F, [None, 3])], [tensor("Y", F, [None, 5])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)])
    m.ir_version = 8
    check(m, {"X": X})


def test_one_hot_encoder_on_integers_and_strings() -> None:
    ints = model(ml_node("OneHotEncoder", ["X"], ["Y"], cats_int64s=[1, 3, 5], zeros=1),
                 [tensor("X", TensorProto.INT64, [None, 2])], [tensor("Y", F, [None, 2, 3])])
    check(ints, {"X": np.array([[1, 5], [4, 3]], np.int64)})
    strings = model(ml_node("OneHotEncoder", ["X"], ["Y"], cats_strings=["a", "b", "c"], zeros=1),
                    [tensor("X", TensorProto.STRING, [None, 2])], [tensor("Y", F, [None, 2, 3])])
    check(strings, {"X": np.array([["a", "c"], ["z", "b"]], object)}, reference=False)


def test_label_encoder_opset_2_strings_to_ints_and_back() -> None:
    to_int = model(ml_node("LabelEncoder", ["X"], ["Y"], keys_strings=["cat", "dog"], values_int64s=[7, 9],
                           default_int64=-3), [tensor("X", TensorProto.STRING, [None])],
                   [tensor("Y", TensorProto.INT64, [None])], ml_opset=2)
    check(to_int, {"X": np.array(["dog", "cat", "cow"], object)})
    to_str = model(ml_node("LabelEncoder", ["X"], ["Y"], keys_int64s=[7, 9], values_strings=["cat", "dog"],
                           default_string="none"), [tensor("X", TensorProto.INT64, [None])],
                   [tensor("Y", TensorProto.STRING, [None])], ml_opset=2)
    check(to_str, {"X": np.array([9, 1, 7], np.int64)})
    floats = model(ml_node("LabelEncoder", ["X"], ["Y"], keys_floats=[0.5, 1.5], values_floats=[10.0, 20.0],
                           default_float=-1.0), [tensor("X", F, [None])], [tensor("Y", F, [None])], ml_opset=2)
    check(floats, {"X": np.array([1.5, 0.5, 2.0], np.float32)})


def test_category_mapper_both_ways() -> None:
    to_int = model(ml_node("CategoryMapper", ["X"], ["Y"], cats_strings=["x", "y"], cats_int64s=[4, 8],
                           default_int64=-1), [tensor("X", TensorProto.STRING, [None, 2])],
                   [tensor("Y", TensorProto.INT64, [None, 2])])
    check(to_int, {"X": np.array([["y", "q"], ["x", "x"]], object)}, reference=False)
    to_str = model(ml_node("CategoryMapper", ["X"], ["Y"], cats_strings=["x", "y"], cats_int64s=[4, 8],
                           default_string="?"), [tensor("X", TensorProto.INT64, [None])],
                   [tensor("Y", TensorProto.STRING, [None])])
    check(to_str, {"X": np.array([8, 5, 4], np.int64)}, reference=False)


@pytest.mark.parametrize("labels", [{"classlabels_int64s": [3, 1, 2]}, {"classlabels_strings": ["a", "b", "c"]}],
                         ids=["int64", "strings"])
def test_zip_map_returns_a_list_of_dicts(labels: dict[str, Any]) -> None:
    key = TensorProto.INT64 if "classlabels_int64s" in labels else TensorProto.STRING
    out = helper.make_tensor_sequence_value_info("Z", 0, None)
    out.type.sequence_type.elem_type.map_type.key_type = key
    out.type.sequence_type.elem_type.map_type.value_type.tensor_type.elem_type = F
    m = model(ml_node("ZipMap", ["X"], ["Z"], **labels), [tensor("X", F, [None, 3])], [out])
    check(m, {"X": X}, reference=False)
    import onnxruntime as ort

    session = plugnn.InferenceSession(m.SerializeToString())
    got = session.run(None, {"X": X})[0]
    assert isinstance(got, list) and all(isinstance(row, dict) for row in got)
    reference = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    assert session.get_outputs()[0].type == reference.get_outputs()[0].type  # "seq(map(int64,tensor(float)))"


def test_tree_ensemble_opset_5_with_set_membership() -> None:
    """TreeEnsemble (ML opset 5): a BRANCH_MEMBER node (x0 in {1, 4}) and a LEQ node."""
    node = ml_node("TreeEnsemble", ["X"], ["Y"], n_targets=2, aggregate_function=1, post_transform=0,
                   tree_roots=[0], nodes_featureids=[0, 1], nodes_modes=helper.make_tensor("m", TensorProto.UINT8,
                                                                                           [2], [6, 0]),
                   nodes_splits=helper.make_tensor("s", F, [2], [0.0, 0.5]), nodes_truenodeids=[0, 1],
                   nodes_trueleafs=[1, 1], nodes_falsenodeids=[1, 2], nodes_falseleafs=[0, 1],
                   membership_values=helper.make_tensor("mv", F, [3], [1.0, 4.0, np.nan]),
                   leaf_targetids=[0, 1, 0], leaf_weights=helper.make_tensor("w", F, [3], [10.0, 20.0, 30.0]))
    m = model(node, [tensor("X", F, [None, 2])], [tensor("Y", F, [None, 2])], ml_opset=5)
    x = np.array([[1, 0], [4, 9], [2, 0], [2, 1], [np.nan, 1]], np.float32)
    check(m, {"X": x})


def _regressor(**change: Any) -> Any:
    attrs = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
                 nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[0.5, 0, 0], nodes_truenodeids=[1, 0, 0],
                 nodes_falsenodeids=[2, 0, 0], target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0],
                 target_weights=[1.0, 2.0], n_targets=1, base_values=[0.0])
    attrs.update(change)
    return model(ml_node("TreeEnsembleRegressor", ["X"], ["Y"], **attrs), [tensor("X", F, [None, 1])],
                 [tensor("Y", F, [None, 1])])


def test_regressor_of_one_tree_matches() -> None:
    # onnx.reference 1.23's TreeEnsembleRegressor fails on this model (it reads an attribute the
    # model leaves out as a list): onnxruntime only.
    check(_regressor(), {"X": np.array([[0.0], [1.0], [np.nan]], np.float32)}, reference=False)


@pytest.mark.parametrize("change, message", [
    ({"nodes_truenodeids": [0, 0, 0]}, "not reachable from its root"),
    ({"nodes_falsenodeids": [7, 0, 0]}, "child 7"),
    ({"nodes_modes": ["BRANCH_LEQ", "LEAF", "SOMETIMES"]}, "mode 'SOMETIMES'"),
    ({"target_nodeids": [1, 5]}, "node 5"),
    ({"target_nodeids": [1, 0]}, "is a branch"),
    ({"nodes_nodeids": [0, 1, 1]}, "twice"),
    ({"nodes_values": [0.5, 0.0]}, "nodes_values"),
    ({"aggregate_function": "MEDIAN"}, "aggregate_function"),
])
def test_malformed_trees_are_model_errors_naming_the_node(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError, match=message) as info:
        plugnn.InferenceSession(_regressor(**change).SerializeToString()).run(None, {"X": np.zeros((1, 1), np.float32)})
    assert "TreeEnsembleRegressor" in str(info.value)


def test_an_unknown_ml_operator_names_itself_and_the_domain() -> None:
    m = model(ml_node("DictVectorizer", ["X"], ["Y"]), [tensor("X", F, [None, 3])], [tensor("Y", F, [None, 3])])
    message = (r"operator\(s\) DictVectorizer of domain 'ai.onnx.ml' are not supported; plugnn imports \d+ operators "
               r"of ai.onnx.ml \(ArrayFeatureExtractor, ")
    with pytest.raises(ModelError, match=message):
        plugnn.InferenceSession(m.SerializeToString())
    with pytest.raises(ModelError, match=message):
        plugnn.onnx.load(m, input_shapes={"X": (2, 3)})


def test_string_operators_need_the_dynamic_path_in_plugnn_onnx_load() -> None:
    m = model(ml_node("LabelEncoder", ["X"], ["Y"], keys_strings=["a"], values_int64s=[1]),
              [tensor("X", TensorProto.STRING, [None])], [tensor("Y", TensorProto.INT64, [None])], ml_opset=2)
    from plugnn.onnx.context import DynamicModelError

    with pytest.raises(DynamicModelError):
        plugnn.onnx.load(m)


def test_a_static_ml_model_loads_as_one_network() -> None:
    """plugnn.onnx.load: a regressor with a scaler is one Network of layers (no runtime step)."""
    nodes = [ml_node("Scaler", ["X"], ["s"], offset=[0.0], scale=[2.0]),
             ml_node("TreeEnsembleRegressor", ["s"], ["Y"], **{k: helper.get_attribute_value(a) for k, a in
                                                              ((a.name, a) for a in _regressor().graph.node[0].attribute)})]
    graph = helper.make_graph(nodes, "static", [tensor("X", F, [4, 1])], [tensor("Y", F, [4, 1])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)])
    network = plugnn.onnx.load(m)
    kinds = {layer.kind.name for layer in network.layers}
    assert "TREE_ENSEMBLE" in kinds
    with plugnn.Runtime() as runtime:
        loaded = runtime.load_network(plugnn.optimize(network, runtime))
        out = loaded.run({"X": np.array([[0.0], [0.2], [0.3], [1.0]], np.float32)})["Y"]
    np.testing.assert_array_equal(out.reshape(-1), [1.0, 1.0, 2.0, 2.0])
