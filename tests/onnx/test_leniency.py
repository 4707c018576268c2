"""Models as tools leave them, read as onnxruntime reads them (python/plugnn/onnx/tidy.py and the
importer's leniencies, docs/onnx.md "Models as tools leave them"): nodes out of topological
order, model-local functions, negative declared dims, declared output shapes that are wrong,
unknown attributes where onnxruntime allows them, a graph input that is also an output, Loop
bodies declaring the iteration number and condition [1], training-mode Dropout, and the rank
limit. Each compared with onnxruntime where it runs the model."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import make_model, run_plugnn
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.errors import ModelError

N = helper.make_node
F32 = TensorProto.FLOAT


def ort_run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def session_run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return plugnn.InferenceSession(model.SerializeToString()).run(None, feeds)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- topological order ------------------------------------------------------------------------


def unsorted_model() -> Any:
    """y = relu(x) * 2 + x with its nodes in reverse order."""
    nodes = [N("Add", ["product", "x"], ["y"], name="add"),
             N("Mul", ["r", "two"], ["product"], name="mul"),
             N("Relu", ["x"], ["r"], name="relu")]
    return make_model(nodes, {"x": [2, 3]}, {"y": [2, 3]}, {"two": np.float32(2.0)})


def test_nodes_out_of_order_are_sorted(runtime: Any) -> None:
    model = unsorted_model()
    x = rand(2, 3)
    want = ort_run(model, {"x": x})[0]
    np.testing.assert_allclose(run_plugnn(runtime, model, {"x": x})["y"], want, rtol=1e-6)
    np.testing.assert_allclose(session_run(model, {"x": x})[0], want, rtol=1e-6)
    assert [n.name for n in model.graph.node] == ["add", "mul", "relu"]  # the caller's model is not changed


def test_the_sort_is_stable() -> None:
    """Nodes already in order keep it; of the ready ones the earlier goes first."""
    from plugnn.onnx.tidy import tidy

    nodes = [N("Relu", ["x"], ["a"], name="a"), N("Neg", ["b"], ["c"], name="c"), N("Abs", ["x"], ["b"], name="b"),
             N("Sigmoid", ["x"], ["d"], name="d"), N("Sum", ["a", "c", "d"], ["y"], name="y")]
    model = make_model(nodes, {"x": [2]}, ["y"])
    tidied = tidy(model, "<test>", owned=False)
    assert [n.name for n in tidied.graph.node] == ["a", "b", "c", "d", "y"]
    sorted_model = make_model([N("Relu", ["x"], ["a"]), N("Neg", ["a"], ["y"])], {"x": [2]}, ["y"])
    assert tidy(sorted_model, "<test>", owned=False) is sorted_model  # nothing to do: the same object


def test_a_subgraph_reading_an_outer_value_waits_for_it() -> None:
    """An If whose branches read 'late', which a node after the If computes."""
    then_graph = helper.make_graph([N("Identity", ["late"], ["t"])], "then", [],
                                   [helper.make_tensor_value_info("t", F32, [2])])
    else_graph = helper.make_graph([N("Neg", ["late"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F32, [2])])
    nodes = [N("If", ["cond"], ["y"], then_branch=then_graph, else_branch=else_graph, name="if"),
             N("Relu", ["x"], ["late"], name="late")]
    model = make_model(nodes, {"x": [2], "cond": ([], TensorProto.BOOL)}, ["y"])
    x = rand(2)
    for cond in (True, False):
        feeds = {"x": x, "cond": np.array(cond)}
        np.testing.assert_allclose(session_run(model, feeds)[0], ort_run(model, feeds)[0], rtol=1e-6)


def test_a_cycle_is_an_error_naming_its_nodes() -> None:
    nodes = [N("Relu", ["x"], ["a"], name="first"),
             N("Add", ["a", "c"], ["b"], name="loop_add"),
             N("Neg", ["b"], ["c"], name="loop_neg"),
             N("Abs", ["b"], ["y"], name="last")]
    model = make_model(nodes, {"x": [2]}, ["y"])
    message = ("the nodes of graph 'test' form a cycle, so no order computes them: node 'loop_add' (#1, Add) reads input 'c' "
               "of node 'loop_neg' (#2, Neg); node 'loop_neg' (#2, Neg) reads input 'b' of node 'loop_add' (#1, Add)")
    for load in (plugnn.onnx.load, lambda m: plugnn.InferenceSession(m.SerializeToString())):
        with pytest.raises(ModelError) as info:
            load(model)
        assert message in str(info.value)


def test_a_node_reading_its_own_output_is_a_cycle() -> None:
    model = make_model([N("Add", ["x", "y"], ["y"], name="self")], {"x": [2]}, ["y"])
    with pytest.raises(ModelError, match=r"node 'self' \(#0, Add\) reads input 'y' of node 'self' \(#0, Add\)"):
        plugnn.onnx.load(model)


def test_an_input_nothing_produces_is_still_named() -> None:
    model = make_model([N("Neg", ["b"], ["y"], name="neg"), N("Relu", ["x"], ["a"], name="relu")], {"x": [2]}, ["y"])
    with pytest.raises(ModelError, match=r"input 0 'b' is produced by no earlier node, initializer or graph input"):
        plugnn.onnx.load(model)


# ---- local functions --------------------------------------------------------------------------


def local_function_model() -> Any:
    """y = scaled_gelu(x; scale) twice, scaled_gelu a local function (as torch's dynamo export
    writes modules) calling another local function, with an attribute reference."""
    inner = helper.make_function(
        "pkg.local", "Twice", ["a"], ["b"], [N("Add", ["a", "a"], ["b"])],
        opset_imports=[helper.make_opsetid("", 18)])
    scale_attr = helper.make_attribute("value_float", 1.0)
    scale_attr.ref_attr_name = "scale"
    scale_node = N("Constant", [], ["s"])
    scale_node.attribute.append(scale_attr)
    outer = helper.make_function(
        "pkg.local", "ScaledGelu", ["x"], ["y"],
        [scale_node, N("Mul", ["x", "s"], ["xs"]), N("Twice", ["xs"], ["t"], domain="pkg.local"),
         N("Gelu", ["t"], ["y"])],
        opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("pkg.local", 1)], attributes=["scale"])
    nodes = [N("ScaledGelu", ["x"], ["h"], domain="pkg.local", name="first", scale=0.5),
             N("ScaledGelu", ["h"], ["y"], domain="pkg.local", name="second", scale=2.0)]
    graph = helper.make_graph(nodes, "functions", [helper.make_tensor_value_info("x", F32, [2, 3])],
                              [helper.make_tensor_value_info("y", F32, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("pkg.local", 1)],
                             functions=[outer, inner], ir_version=10)


def test_local_functions_are_inlined(runtime: Any) -> None:
    model = local_function_model()
    onnx.checker.check_model(model)
    x = rand(2, 3)
    want = ort_run(model, {"x": x})[0]
    np.testing.assert_allclose(run_plugnn(runtime, model, {"x": x})["y"], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(session_run(model, {"x": x})[0], want, rtol=1e-5, atol=1e-6)


def test_inlined_nodes_are_named_after_the_call() -> None:
    from plugnn.onnx.tidy import tidy

    names = [n.name for n in tidy(local_function_model(), "<test>", owned=False).graph.node]
    assert names[:4] == ["first/Constant_0", "first/Mul_1", "first/Twice_2/Add_0", "first/Gelu_3"]


def test_a_function_calling_itself_is_an_error() -> None:
    loop = helper.make_function("pkg.local", "Forever", ["a"], ["b"], [N("Forever", ["a"], ["b"], domain="pkg.local")],
                                opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("pkg.local", 1)])
    graph = helper.make_graph([N("Forever", ["x"], ["y"], domain="pkg.local", name="call")], "g",
                              [helper.make_tensor_value_info("x", F32, [2])], [helper.make_tensor_value_info("y", F32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("pkg.local", 1)],
                              functions=[loop])
    with pytest.raises(ModelError, match="inlining model-local functions goes 16 levels deep"):
        plugnn.onnx.load(model)


def test_a_call_of_no_local_function_names_the_domain() -> None:
    graph = helper.make_graph([N("Missing", ["x"], ["y"], domain="pkg.local", name="call")], "g",
                              [helper.make_tensor_value_info("x", F32, [2])], [helper.make_tensor_value_info("y", F32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("pkg.local", 1)])
    with pytest.raises(ModelError, match=r"operator domain 'pkg.local' is not supported \(operator\(s\) Missing\)"):
        plugnn.onnx.load(model)
    with pytest.raises(ModelError, match=r"operator domain 'pkg.local' is not supported \(operator\(s\) Missing\)"):
        plugnn.InferenceSession(model.SerializeToString())


# ---- declared shapes ---------------------------------------------------------------------------


def test_negative_declared_dims_are_unknown(caplog: pytest.LogCaptureFixture) -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [-1, 3]}, {"y": [-1, 3]})
    with caplog.at_level(logging.WARNING, logger="plugnn"):
        session = plugnn.InferenceSession(model.SerializeToString())
    assert "'x' declares dim 0 as -1; read as an unknown dim" in caplog.text
    assert session.get_inputs()[0].shape == [None, 3]
    x = rand(4, 3)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], ort_run(model, {"x": x})[0])
    network = plugnn.onnx.load(model, input_shapes={"x": (5, 3)})
    assert network.outputs[0].inputs[0].info.shape == (5, 3)


def test_a_wrong_declared_output_shape_warns_and_the_computed_one_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    model = make_model([N("Transpose", ["x"], ["y"])], {"x": [2, 3]}, {"y": [2, 3]})
    x = rand(2, 3)
    with caplog.at_level(logging.WARNING, logger="plugnn"):
        got = session_run(model, {"x": x})[0]
    assert got.shape == (3, 2)
    np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])
    assert "graph output 'y' is declared with shape [2, 3], plugnn computes [3, 2]" in caplog.text


def test_a_wrong_declared_output_type_is_still_an_error() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2]}, {"y": ([2], TensorProto.INT64)})
    with pytest.raises(ModelError, match="graph output 'y' is declared int64, plugnn computes float32"):
        plugnn.onnx.load(model)


# ---- attributes --------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [12, 17])
def test_layer_normalization_ignores_unknown_attributes_as_onnxruntime_does(opset: int,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """onnxruntime's LayerNormalization schema allows unchecked attributes (its own operator below
    opset 17, and ONNX's from 17 on): a misspelt epsilon is ignored, the default 1e-5 applies."""
    nodes = [N("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=-1, epsion=0.5)]
    model = make_model(nodes, {"x": [2, 4]}, {"y": [2, 4]}, {"g": rand(4, seed=1), "b": rand(4, seed=2)}, opset=opset)
    x = rand(2, 4)
    with caplog.at_level(logging.WARNING, logger="plugnn"):
        got = session_run(model, {"x": x})[0]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)
    assert "node 'ln' (#0, LayerNormalization): attribute 'epsion' is not one of the operator's" in caplog.text


def test_unknown_attributes_are_refused_where_onnxruntime_refuses_them() -> None:
    relu = make_model([N("Relu", ["x"], ["y"], foo=1)], {"x": [2]}, ["y"])
    with pytest.raises(ModelError, match="attribute 'foo' is not supported by plugnn's Relu import"):
        plugnn.onnx.load(relu)
    with pytest.raises(Exception, match="Unrecognized attribute: foo"):
        ort_run(relu, {"x": rand(2)})


# ---- a graph input that is also an output ----------------------------------------------------------


def test_a_graph_input_that_is_also_an_output() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2, 3]}, {"y": [2, 3], "x": [2, 3]})
    x = rand(2, 3)
    got, want = session_run(model, {"x": x}), ort_run(model, {"x": x})
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1] is not x  # a copy, as onnxruntime returns


def test_a_graph_whose_only_output_is_its_input() -> None:
    graph = helper.make_graph([], "passthrough", [helper.make_tensor_value_info("x", F32, [3])],
                              [helper.make_tensor_value_info("x", F32, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rand(3)
    np.testing.assert_array_equal(session_run(model, {"x": x})[0], x)
    with pytest.raises(Exception):
        session_run(model, {"x": rand(4)})


# ---- Loop bodies declaring [1] -------------------------------------------------------------------


def test_loop_body_declaring_iteration_and_condition_as_one_element() -> None:
    """The body declares the iteration number and its condition output as [1] (onnxruntime feeds the
    iteration number in the rank declared and takes the condition of shape [] or [1]) and computes
    the condition as a scalar."""
    body = helper.make_graph(
        [N("Cast", ["i"], ["i_float"], to=F32),
         N("Add", ["acc_in", "i_float"], ["acc_out"]),
         N("Less", ["acc_out", "limit"], ["cond_vec"]),
         N("Squeeze", ["cond_vec"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F32, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, [1]),
         helper.make_tensor_value_info("acc_out", F32, [1])],
        [numpy_helper.from_array(np.array([10.0], np.float32), "limit")])
    nodes = [N("Loop", ["trip", "cond", "start"], ["total"], body=body, name="loop")]
    model = make_model(nodes, {"start": [1]}, ["total"],
                       {"trip": np.array(100, np.int64), "cond": np.array(True)}, opset=13)
    feeds = {"start": np.array([0.5], np.float32)}
    want = ort_run(model, feeds)[0]
    np.testing.assert_array_equal(session_run(model, feeds)[0], want)


# ---- training-mode Dropout ------------------------------------------------------------------------


def dropout_model(ratio: float, seed: int | None = None) -> Any:
    extra = {} if seed is None else {"seed": seed}
    nodes = [N("Dropout", ["x", "ratio", "training"], ["y", "mask"], name="drop", **extra)]
    return make_model(nodes, {"x": [64, 64]}, ["y", "mask"],
                      {"ratio": np.array(ratio, np.float32), "training": np.array(True)}, opset=13)


@pytest.mark.parametrize("ratio", [0.2, 0.8])
def test_training_dropout_drops_at_random_as_onnxruntime_does(ratio: float) -> None:
    x = rand(64, 64) + 5.0  # no element is 0
    y, mask = session_run(dropout_model(ratio), {"x": x})
    want_y, want_mask = ort_run(dropout_model(ratio), {"x": x})
    assert mask.dtype == want_mask.dtype == np.bool_ and y.shape == want_y.shape
    # the same rule as onnxruntime: kept elements scaled by 1 / (1 - ratio), the others 0
    np.testing.assert_allclose(y[mask], x[mask] / (1 - ratio), rtol=1e-6)
    assert not y[~mask].any()
    np.testing.assert_allclose(want_y[want_mask], x[want_mask] / (1 - ratio), rtol=1e-6)
    # dropped fractions of 4096 draws within 5 standard deviations of the ratio
    sigma = (ratio * (1 - ratio) / mask.size) ** 0.5
    assert abs((~mask).mean() - ratio) < 5 * sigma and abs((~want_mask).mean() - ratio) < 5 * sigma


def test_training_dropout_with_a_seed_repeats_and_without_one_varies() -> None:
    x = rand(64, 64) + 5.0
    seeded = plugnn.InferenceSession(dropout_model(0.5, seed=7).SerializeToString())  # seed: an INT attribute
    first, second = seeded.run(["mask"], {"x": x})[0], seeded.run(["mask"], {"x": x})[0]
    np.testing.assert_array_equal(first, second)
    fresh = plugnn.InferenceSession(dropout_model(0.5).SerializeToString())
    assert not np.array_equal(fresh.run(["mask"], {"x": x})[0], fresh.run(["mask"], {"x": x})[0])


# ---- the rank limit ----------------------------------------------------------------------------


def test_a_tensor_of_rank_above_8_is_a_model_error() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [1] * 9}, ["y"])
    message = r"input 'x' has rank 9; plugnn tensors have at most 8 dims \(PN_MAX_DIMS"
    with pytest.raises(ModelError, match=message):
        plugnn.onnx.load(model)
    with pytest.raises(ModelError, match=message):
        plugnn.InferenceSession(model.SerializeToString())
    computed = make_model([N("Reshape", ["x", "shape"], ["y"])], {"x": [2, 2]}, ["y"],
                          {"shape": np.array([1] * 7 + [2, 2], np.int64)})
    message = r"node #0 \(Reshape, unnamed, output 'y'\): rank 9 exceeds the maximum of 8 dimensions \(PN_MAX_DIMS\)"
    with pytest.raises(ModelError, match=message):
        plugnn.onnx.load(computed)
    with pytest.raises(ModelError, match=message):
        session_run(computed, {"x": rand(2, 2)})


# ---- sparse initializers -------------------------------------------------------------------------


@pytest.mark.parametrize("coordinates", [False, True])
def test_sparse_initializers_are_made_dense(coordinates: bool) -> None:
    dense = np.zeros((3, 4), np.float32)
    dense[0, 1], dense[2, 3] = 1.5, -2.0
    if coordinates:
        indices = numpy_helper.from_array(np.array([[0, 1], [2, 3]], np.int64), "w_indices")
    else:
        indices = numpy_helper.from_array(np.array([1, 11], np.int64), "w_indices")
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "w"), indices, [3, 4])
    graph = helper.make_graph([N("Add", ["x", "w"], ["y"])], "sparse", [helper.make_tensor_value_info("x", F32, [3, 4])],
                              [helper.make_tensor_value_info("y", F32, [3, 4])], sparse_initializer=[sparse])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rand(3, 4)
    np.testing.assert_array_equal(session_run(model, {"x": x})[0], x + dense)
    np.testing.assert_array_equal(session_run(model, {"x": x})[0], ort_run(model, {"x": x})[0])


def test_an_output_declared_twice() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2, 3]}, {"y": [2, 3]})
    model.graph.output.append(model.graph.output[0])
    x = rand(2, 3)
    got, want = session_run(model, {"x": x}), ort_run(model, {"x": x})
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_onnxruntime_s_layer_normalization_takes_a_scale_of_another_type() -> None:
    """Below opset 17 (onnxruntime's own operator) X and Scale may differ; Y has Scale's type."""
    nodes = [N("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)]
    model = make_model(nodes, {"x": ([2, 8], TensorProto.FLOAT16)}, ["y"], {"g": rand(8, seed=1), "b": rand(8, seed=2)},
                       opset=12)
    x = rand(2, 8).astype(np.float16)
    got, want = session_run(model, {"x": x})[0], ort_run(model, {"x": x})[0]
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
