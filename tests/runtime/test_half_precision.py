"""Half-precision layers the first preferred backend runs only in float32 (plugnn.half_precision):
rewritten to float32 regions with casts at their edges, as onnxruntime's CPU provider computes
them; results compared with onnxruntime (float16) and NumPy (bfloat16), the graph's casts
counted, and nothing rewritten where the first backend takes the half type itself."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.descriptors import LayerKind

ort = pytest.importorskip("onnxruntime")
HAVE_CPUACC = "CpuAcc" in plugnn.Runtime().backend_ids

RNG = np.random.default_rng(16)


def _model(batch: int | str = 2) -> bytes:
    """x [batch, 8, 12, 12] f16 -> Conv(3x3) -> Relu -> Transpose(NHWC) -> Transpose back -> Sigmoid
    -> Mul(x) -> GlobalAveragePool -> Flatten -> MatMul [8, 5] + Add -> Softmax: y [batch, 5] f16,
    and the Sigmoid's output (read inside the region) as a second output."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [batch, 8, 12, 12])
    inits = [numpy_helper.from_array((RNG.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float16), "w"),
             numpy_helper.from_array((RNG.standard_normal((8, 5)) * 0.5).astype(np.float16), "fc"),
             numpy_helper.from_array(RNG.standard_normal(5).astype(np.float16), "bias")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["t"], ["u"], perm=[0, 3, 1, 2]),
             helper.make_node("Sigmoid", ["u"], ["s"]),
             helper.make_node("Mul", ["s", "x"], ["m"]),
             helper.make_node("GlobalAveragePool", ["m"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "fc"], ["mm"]),
             helper.make_node("Add", ["mm", "bias"], ["a"]),
             helper.make_node("Softmax", ["a"], ["y"], axis=1)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [batch, 5]),
               helper.make_tensor_value_info("s", TensorProto.FLOAT16, [batch, 8, 12, 12])]
    graph = helper.make_graph(nodes, "half", [x], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _image(batch: int = 2) -> np.ndarray:
    return RNG.standard_normal((batch, 8, 12, 12)).astype(np.float16)


def _kinds(session: plugnn.InferenceSession) -> list[tuple[str, str | None, str]]:
    graph = session._cache.builds()[-1].optimized.graph
    return [(n.kind.name, n.backend_id, graph.infos[n.outputs[0]].dtype.name) for n in graph.nodes]


@pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
def test_float16_model_runs_on_cpuacc_in_float32_regions_as_onnxruntime() -> None:
    model = _model()
    x = _image()
    session = plugnn.InferenceSession(model, providers=["CpuAcc", "CpuRef"])
    ours = session.run(None, {"x": x})
    theirs = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b in zip(ours, theirs):
        assert a.dtype == np.float16 and a.shape == b.shape
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=2e-3, atol=2e-3)
    kinds = _kinds(session)
    assert all(backend == "CpuAcc" for _, backend, _ in kinds), kinds
    # casts only at the region's edges: x in, s (a graph output read inside it) and y out; the
    # Transposes and the Flatten move the region's float32 values
    casts = [k for k in kinds if k[0] == "CAST"]
    assert len(casts) == 3, kinds
    assert all(k[2] == "FLOAT32" for k in kinds
               if k[0] in ("CONVOLUTION_2D", "ACTIVATION", "SOFTMAX", "TRANSPOSE", "RESHAPE")), kinds
    explained = session._cache.builds()[-1].optimized.explain(verbose=True)
    assert "computed in float32 (float16 cast at the region's edges)" in explained


@pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
def test_regions_hold_for_every_batch() -> None:
    model = _model("batch")
    session = plugnn.InferenceSession(model, providers=["CpuAcc", "CpuRef"])
    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for batch in (1, 3, 2):
        x = _image(batch)
        for a, b in zip(session.run(None, {"x": x}), reference.run(None, {"x": x})):
            np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert session.networks_built == 1


def test_nothing_is_rewritten_where_the_first_backend_takes_float16() -> None:
    session = plugnn.InferenceSession(_model(), providers=["CpuRef"])
    y, s = session.run(None, {"x": _image()})
    kinds = _kinds(session)
    assert not [k for k in kinds if k[0] == "CAST"] and all(k[2] != "FLOAT32" for k in kinds if k[0] != "CAST")
    assert y.dtype == np.float16


@pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
def test_float32_models_are_left_alone() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "f32", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    session = plugnn.InferenceSession(model, providers=["CpuAcc", "CpuRef"])
    session.run(None, {"x": np.ones((4, 4), np.float32)})
    assert [k[0] for k in _kinds(session)] == ["ACTIVATION"]


@pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
def test_bfloat16_regions_against_numpy() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    w = (RNG.standard_normal((16, 8)) * 0.3).astype(bf16)
    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3, 16])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Tanh", ["m"], ["y"])],
                              "bf16", [x], [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3, 8])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    feed = RNG.standard_normal((3, 16)).astype(bf16)
    session = plugnn.InferenceSession(model, providers=["CpuAcc", "CpuRef"])
    y = session.run(None, {"x": feed})[0]
    expected = np.tanh(feed.astype(np.float32) @ w.astype(np.float32)).astype(bf16)  # one region: rounded once
    assert y.dtype == bf16
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32), rtol=8e-3, atol=8e-3)
    kinds = _kinds(session)
    assert all(b == "CpuAcc" for _, b, _ in kinds) and sum(k[0] == "CAST" for k in kinds) == 2, kinds


@pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
def test_network_api_float16_layers_go_to_cpuacc() -> None:
    net = plugnn.Network("half_api")
    x = net.add_input("x", (2, 6), "float16")
    r = net.add_activation(x, "relu")
    net.add_output(net.add_add(r, x), "y")
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        kinds = [(n.kind, n.backend_id) for n in optimized.graph.nodes]
        assert all(b == "CpuAcc" for _, b in kinds)
        assert [k for k, _ in kinds].count(LayerKind.CAST) == 2
        feed = np.linspace(-3, 3, 12).astype(np.float16).reshape(2, 6)
        y = rt.load_network(optimized).run({"x": feed})["y"]
    np.testing.assert_array_equal(y, (np.maximum(feed.astype(np.float32), 0) + feed.astype(np.float32)).astype(np.float16))
