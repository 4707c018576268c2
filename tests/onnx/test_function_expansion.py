"""Operators imported through their ONNX function body (plugnn.onnx.functions): results against
ONNX's reference evaluator, layer names, nested bodies, attribute references, context-dependent
bodies with optional inputs, errors inside a body, and a converter winning over a body.

Tolerances: rtol 1e-5, atol 1e-6 (float32 layers against the reference's float32 NumPy; the
window functions and Attention go through exp/cos chains: rtol 1e-4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import run_plugnn
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn.errors import ModelError
from plugnn.onnx.context import ImportState, NeedsConstantError, NodeContext
from plugnn.onnx.expansion import MAX_DEPTH, Expansion, walk

N = helper.make_node
F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(11)


def model(nodes: list[Any], inputs: dict[str, tuple[list[int], int]], outputs: list[str], opset: int,
          inits: dict[str, np.ndarray] | None = None) -> Any:
    graph_inputs = [helper.make_tensor_value_info(n, t, s) for n, (s, t) in inputs.items()]
    graph = helper.make_graph(nodes, "functions", graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds_for(m: Any) -> dict[str, np.ndarray]:
    known = {t.name for t in m.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for value in m.graph.input:
        if value.name in known:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        elem = value.type.tensor_type.elem_type
        if elem == I64:  # class indices, in range for the losses below (C = 5), some -1 for ignore_index
            feeds[value.name] = RNG.integers(0, 5, shape).astype(np.int64)
        elif elem == BOOL:
            feeds[value.name] = RNG.random(shape) < 0.7
        else:
            feeds[value.name] = RNG.standard_normal(shape).astype(helper.tensor_dtype_to_np_dtype(elem))
    return feeds


def case(id: str, nodes: list[Any], inputs: dict[str, tuple[list[int], int]], opset: int,
         outputs: tuple[str, ...] = ("y",), inits: dict[str, np.ndarray] | None = None, rtol: float = 1e-5) -> Any:
    return pytest.param(nodes, inputs, opset, outputs, inits or {}, rtol, id=id)


X35, T3 = ([3, 5], F32), ([3], I64)
CASES = [
    case("swish-default-alpha", [N("Swish", ["x"], ["y"])], {"x": ([2, 7], F32)}, 24),
    case("swish-alpha", [N("Swish", ["x"], ["y"], alpha=0.4)], {"x": ([2, 7], F32)}, 24),
    case("swiglu", [N("SwiGLU", ["a", "b"], ["y"], alpha=1.5)], {"a": ([2, 3, 8], F32), "b": ([2, 3, 8], F32)}, 28),
    case("nllloss-mean", [N("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])], {"x": X35, "t": T3}, 22),
    case("nllloss-none-weight-ignore", [N("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["y"], reduction="none",
                                          ignore_index=2)], {"x": ([3, 5, 4], F32), "t": ([3, 4], I64)}, 22,
         inits={"w": np.abs(RNG.standard_normal(5)).astype(np.float32)}),
    case("nllloss-sum-opset13", [N("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="sum")],
         {"x": X35, "t": T3}, 13),
    case("sce-mean-nested-nll", [N("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"])], {"x": X35, "t": T3}, 13),
    case("sce-weight-log-prob", [N("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y", "lp"], reduction="sum")],
         {"x": ([3, 5, 2], F32), "t": ([3, 2], I64), "w": ([5], F32)}, 13, outputs=("y", "lp")),
    case("hannwindow-periodic", [N("HannWindow", ["n"], ["y"])], {}, 17, inits={"n": np.array(10, np.int64)},
         rtol=1e-4),
    case("hammingwindow-symmetric-double", [N("HammingWindow", ["n"], ["y"], periodic=0,
                                              output_datatype=TensorProto.DOUBLE)], {}, 17,
         inits={"n": np.array(7, np.int32)}, rtol=1e-4),
    case("blackmanwindow", [N("BlackmanWindow", ["n"], ["y"])], {}, 17, inits={"n": np.array(9, np.int64)},
         rtol=1e-4),
    case("centercroppad-crop-and-pad", [N("CenterCropPad", ["x", "s"], ["y"])], {"x": ([5, 4, 3], F32)}, 18,
         inits={"s": np.array([3, 6, 3], np.int64)}),
    case("centercroppad-axes", [N("CenterCropPad", ["x", "s"], ["y"], axes=[-3, -2])], {"x": ([6, 3, 2], F32)}, 18,
         inits={"s": np.array([4, 5], np.int64)}),
    case("rotary-embedding-position-ids", [N("RotaryEmbedding", ["x", "c", "s", "p"], ["y"])],
         {"x": ([2, 3, 4, 8], F32), "c": ([6, 4], F32), "s": ([6, 4], F32)}, 23,
         inits={"p": np.array([[0, 2, 4, 1], [5, 3, 1, 0]], np.int64)}),
    case("rotary-embedding-interleaved-partial", [N("RotaryEmbedding", ["x", "c", "s"], ["y"], interleaved=1,
                                                    rotary_embedding_dim=4, num_heads=2)],
         {"x": ([2, 3, 16], F32), "c": ([2, 3, 2], F32), "s": ([2, 3, 2], F32)}, 23),
    case("attention-4d", [N("Attention", ["q", "k", "v"], ["y"])],
         {"q": ([2, 3, 4, 8], F32), "k": ([2, 3, 6, 8], F32), "v": ([2, 3, 6, 8], F32)}, 23, rtol=1e-4),
    case("attention-bool-mask-causal-scale", [N("Attention", ["q", "k", "v", "m"], ["y"], scale=0.3)],
         {"q": ([2, 3, 4, 8], F32), "k": ([2, 3, 6, 8], F32), "v": ([2, 3, 6, 8], F32), "m": ([4, 6], BOOL)}, 23,
         rtol=1e-4),
    case("attention-3d-gqa-past", [N("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "k2", "v2"],
                                     q_num_heads=4, kv_num_heads=2)],
         {"q": ([2, 3, 16], F32), "k": ([2, 3, 8], F32), "v": ([2, 3, 8], F32), "pk": ([2, 2, 5, 4], F32),
          "pv": ([2, 2, 5, 4], F32)}, 24, outputs=("y", "k2", "v2"), rtol=1e-4),
]


@pytest.mark.parametrize("nodes, inputs, opset, outputs, inits, rtol", CASES)
def test_function_operators_match_the_reference(runtime: Any, nodes, inputs, opset, outputs, inits, rtol) -> None:  # type: ignore[no-untyped-def]
    m = model(nodes, inputs, list(outputs), opset, inits)
    feeds = feeds_for(m)
    expected = ReferenceEvaluator(m).run(None, feeds)
    got = run_plugnn(runtime, m, feeds)
    for name, want in zip(outputs, expected):
        assert got[name].shape == want.shape, name
        assert got[name].dtype == want.dtype, name
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=1e-6, err_msg=name)


def _layer_names(m: Any) -> list[str]:
    return [layer.name for layer in plugnn.onnx.load(m)]


def test_layer_names_show_the_expansion() -> None:
    named = model([N("NegativeLogLikelihoodLoss", ["x", "t"], ["z"], name="loss")], {"x": X35, "t": T3}, ["z"], 22)
    names = _layer_names(named)
    body = [n for n in names if n not in ("x", "t", "z")]
    assert body and all(n.startswith("loss/") for n in body), names
    assert "loss/GatherElements_4" in names
    unnamed = model([N("NegativeLogLikelihoodLoss", ["x", "t"], ["z"])], {"x": X35, "t": T3}, ["z"], 22)
    assert "NegativeLogLikelihoodLoss_z/GatherElements_4" in _layer_names(unnamed)


def test_nested_bodies_name_every_level() -> None:
    m = model([N("SoftmaxCrossEntropyLoss", ["x", "t"], ["z"], name="sce")], {"x": X35, "t": T3}, ["z"], 13)
    names = _layer_names(m)
    assert any(n.startswith("sce/NegativeLogLikelihoodLoss_7/") for n in names), names


def test_explain_shows_the_expansion(runtime: Any) -> None:
    m = model([N("Swish", ["x"], ["y"], name="act")], {"x": ([4], F32)}, ["y"], 24)
    optimized = plugnn.optimize(plugnn.onnx.load(m), runtime, ["CpuRef"])
    assert "act/Sigmoid_3" in optimized.explain()


def test_an_error_inside_a_body_names_the_node_and_the_body_node() -> None:
    m = model([N("SoftmaxCrossEntropyLoss", ["x", "t"], ["z"], name="sce")], {"x": X35, "t": ([4], I64)}, ["z"], 13)
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(m)
    assert str(info.value) == (
        "<ModelProto 'functions'>: node 'sce' (#0, SoftmaxCrossEntropyLoss, imported through its ONNX function body): "
        "node 'sce/NegativeLogLikelihoodLoss_7' (NegativeLogLikelihoodLoss, imported through its ONNX function body): "
        "node 'sce/NegativeLogLikelihoodLoss_7/GatherElements_4' (GatherElements): input 1 (indices) of shape [4, 1] "
        "must have the rank of data [3, 5] and no larger dims except on axis 1")


def test_an_unnamed_node_error_names_its_output() -> None:
    m = model([N("RotaryEmbedding", ["x", "c", "s"], ["z"])],
              {"x": ([1, 2, 3, 8], F32), "c": ([1, 3, 4], F32), "s": ([1, 3, 3], F32)}, ["z"], 23)
    with pytest.raises(ModelError, match=r"node #0 \(RotaryEmbedding, unnamed, output 'z', imported through its ONNX "
                                         r"function body\): node 'RotaryEmbedding_z/Mul_\d+' \(Mul\): "):
        plugnn.onnx.load(m)


def test_a_converter_wins_over_the_body() -> None:
    """Softmax (opset 18) and LayerNormalization have function bodies, and converters: one layer each."""
    m = model([N("Softmax", ["x"], ["s"], name="sm"), N("LayerNormalization", ["s", "g"], ["y"], name="ln")],
              {"x": ([2, 5], F32)}, ["y"], 18, {"g": np.ones(5, np.float32)})
    names = _layer_names(m)
    assert "sm" in names and "ln" in names
    assert not any(n.startswith(("sm/", "ln/")) for n in names), names


def test_internal_names_avoid_the_graphs_names(runtime: Any) -> None:
    """The graph already has values named like the body's internal ones: the body's get other names."""
    nodes = [N("Identity", ["x"], ["loss/input_gather_element"]), N("Neg", ["x"], ["loss/loss_NCdd"]),
             N("NegativeLogLikelihoodLoss", ["x", "t"], ["z"], name="loss", reduction="none"),
             N("Add", ["loss/input_gather_element", "loss/loss_NCdd"], ["zero"])]
    m = model(nodes, {"x": X35, "t": T3}, ["z", "zero"], 22)
    feeds = feeds_for(m)
    got = run_plugnn(runtime, m, feeds)
    want = ReferenceEvaluator(m).run(None, feeds)
    np.testing.assert_allclose(got["z"], want[0], rtol=1e-6)
    np.testing.assert_array_equal(got["zero"], np.zeros((3, 5), np.float32))


def test_two_expansions_of_one_operator(runtime: Any) -> None:
    nodes = [N("Swish", ["x"], ["a"]), N("Swish", ["a"], ["y"], alpha=2.0)]
    m = model(nodes, {"x": ([6], F32)}, ["y"], 24)
    feeds = feeds_for(m)
    np.testing.assert_allclose(run_plugnn(runtime, m, feeds)["y"], ReferenceEvaluator(m).run(None, feeds)[0],
                               rtol=1e-6)
    names = _layer_names(m)
    assert any(n.startswith("Swish_a/") for n in names) and any(n.startswith("Swish_y/") for n in names)


def test_window_size_as_graph_input() -> None:
    """HannWindow's size, a graph input, sizes the output: plugnn.onnx.load says so and names the
    input; the ONNX backend binds it at run time (one import per size)."""
    from plugnn.onnx import backend

    m = model([N("HannWindow", ["n"], ["y"])], {"n": ([], I64)}, ["y"], 17)
    with pytest.raises(NeedsConstantError) as info:
        plugnn.onnx.load(m)
    assert info.value.input_name == "n"
    assert "it is computed from graph input(s) 'n': make them initializers (constants)" in str(info.value)
    rep = backend.prepare(m, backends=["CpuRef"])
    for size in (4, 9):
        (y,) = rep.run([np.array(size, np.int64)])
        want = ReferenceEvaluator(m).run(None, {"n": np.array(size, np.int64)})[0]
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_inference_session_runs_a_function_operator() -> None:
    m = model([N("NegativeLogLikelihoodLoss", ["x", "t"], ["z"], reduction="sum")], {"x": X35, "t": T3}, ["z"], 22)
    feeds = feeds_for(m)
    session = plugnn.InferenceSession(m.SerializeToString(), backends=["CpuRef"])
    (z,) = session.run(None, feeds)
    np.testing.assert_allclose(z, ReferenceEvaluator(m).run(None, feeds)[0], rtol=1e-6)


def test_expansion_depth_is_limited() -> None:
    m = model([N("Swish", ["x"], ["y"])], {"x": ([2], F32)}, ["y"], 24)
    state = ImportState(m, "<test>", 24, None, {}, {})
    ctx = NodeContext(state, 0, m.graph.node[0], depth=MAX_DEPTH)
    with pytest.raises(ModelError, match=f"expanding it goes {MAX_DEPTH} levels deep"):
        walk(ctx, Expansion([], [], note="test"), lambda sub: None)


def test_an_attribute_the_operator_does_not_define_is_refused() -> None:
    m = model([N("SwiGLU", ["a", "b"], ["y"], limit=2.0)], {"a": ([4], F32), "b": ([4], F32)}, ["y"], 28)
    with pytest.raises(ModelError, match=r"node #0 \(SwiGLU, unnamed, output 'y'\): attribute 'limit' is not one of "
                                         r"SwiGLU-28's \(they are: alpha\)"):
        plugnn.onnx.load(m)


def test_operator_without_converter_or_body_is_refused() -> None:
    """An operator ONNX gives no function body at the model's opset stays unsupported."""
    m = model([N("Frobnicate", ["x"], ["y"])], {"x": ([2], F32)}, ["y"], 24)
    with pytest.raises(ModelError, match="operator 'Frobnicate' is not supported"):
        plugnn.onnx.load(m)


def test_binding_renames_subgraphs_and_resolves_references() -> None:
    """A body node with a subgraph (If) and attribute references, bound: every value name mapped,
    in the subgraph too, references resolved from the given attributes, a reference to an absent
    attribute left out."""
    from plugnn.onnx.functions import _bind

    then = helper.make_graph([N("Mul", ["x", "inner"], ["t_out"])], "then", [],
                             [helper.make_empty_tensor_value_info("t_out")],
                             [numpy_helper.from_array(np.float32(2.0), "inner")])
    ref = helper.make_attribute_ref("value_float", helper.AttributeProto.FLOAT)
    ref.ref_attr_name = "alpha"
    missing = helper.make_attribute_ref("value_int", helper.AttributeProto.INT)
    missing.ref_attr_name = "absent"
    inner_ref = helper.make_attribute_ref("axis", helper.AttributeProto.INT)
    inner_ref.ref_attr_name = "axis"
    then.node[0].attribute.append(inner_ref)
    node = N("If", ["cond"], ["out"], then_branch=then, else_branch=then)
    node.attribute.extend([ref, missing])
    mapping = {"cond": "c0", "out": "o0", "x": "x0", "inner": "p/inner", "t_out": "p/t_out"}
    _bind(node, lambda name: mapping.get(name, name), {"alpha": helper.make_attribute("alpha", 0.25),
                                                       "axis": helper.make_attribute("axis", 1)})
    assert list(node.input) == ["c0"] and list(node.output) == ["o0"]
    attrs = {a.name: a for a in node.attribute}
    assert attrs["value_float"].f == pytest.approx(0.25) and not attrs["value_float"].ref_attr_name
    assert "value_int" not in attrs
    branch = attrs["then_branch"].g
    assert list(branch.node[0].input) == ["x0", "p/inner"] and list(branch.node[0].output) == ["p/t_out"]
    assert branch.initializer[0].name == "p/inner" and branch.output[0].name == "p/t_out"
    assert branch.node[0].attribute[0].i == 1 and branch.node[0].attribute[0].name == "axis"


def _preview_model(node: Any, shape: list[int]) -> Any:
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("q", "k", "v")]
    graph = helper.make_graph([node], "preview", info, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26),
                                                   helper.make_opsetid("ai.onnx.preview", 1)])


def test_preview_domain_flex_attention_through_its_body(runtime: Any) -> None:
    """FlexAttention (ai.onnx.preview) with a score_mod subgraph: its context-dependent body,
    against ONNX's reference at rtol 1e-5, atol 1e-6."""
    dims = ["B", "H", "L", "S"]
    score = helper.make_graph([helper.make_node("Mul", ["s", "half"], ["m"]), helper.make_node("Tanh", ["m"], ["out"])],
                              "score_mod", [helper.make_tensor_value_info("s", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, dims)],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", score_mod=score)
    m = _preview_model(node, [1, 2, 3, 4])
    rng = np.random.default_rng(11)
    feeds = {n: rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for n in ("q", "k", "v")}
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    got = run_plugnn(runtime, m, feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_preview_domain_operator_without_body_is_refused() -> None:
    node = helper.make_node("NoSuchOp", ["q"], ["y"], domain="ai.onnx.preview", name="p")
    with pytest.raises(ModelError, match=r"node 'p' \(#0, NoSuchOp\): operator domain 'ai.onnx.preview' is not "
                                         r"supported \(operator\(s\) NoSuchOp\): plugnn imports the default "
                                         r"ai.onnx domain, .*ai.onnx.preview's operators with an ONNX function body"):
        plugnn.onnx.load(_preview_model(node, [1, 2, 3, 4]))
