"""Rank-0 (scalar) tensors everywhere a session reads them: initializers (in the file and in
external data), graph inputs, graph outputs and Constant nodes keep rank 0, as on onnxruntime
(a scalar initializer once became shape (1,) on the session path: Gather then kept an axis)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn


def _model(nodes: list, inputs: list, outputs: list, inits: list | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "scalars", inputs, outputs, inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _both(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> tuple[list, list]:
    source = model if isinstance(model, str) else model.SerializeToString()
    want = ort.InferenceSession(source, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = plugnn.InferenceSession(source).run(None, feeds)
    return want, got


def _check(want: list, got: list) -> None:
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)


def _x(shape: tuple[int, ...] = (2, 3, 4)) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _undeclared(name: str, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, None)  # no shape: nothing checks the rank


def test_a_scalar_initializer_index_drops_the_axis() -> None:
    model = _model([helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])], [_undeclared("y")],
                   [numpy_helper.from_array(np.array(2, np.int64), "idx")])
    want, got = _both(model, {"x": _x()})
    assert want[0].shape == (2, 4)
    _check(want, got)


def test_scalar_initializers_added_stay_scalar() -> None:
    model = _model([helper.make_node("Add", ["a", "b"], ["y"])], [], [_undeclared("y")],
                   [numpy_helper.from_array(np.array(1.5, np.float32), "a"),
                    numpy_helper.from_array(np.array(-0.25, np.float32), "b")])
    want, got = _both(model, {})
    assert want[0].shape == ()
    _check(want, got)


def test_a_scalar_initializer_broadcast_with_a_tensor() -> None:
    """torch's `x[:, 1] * 2 + x[0, 0]` after onnxruntime's basic optimization: the Constants of
    the export are scalar initializers."""
    nodes = [helper.make_node("Gather", ["x", "one"], ["col"], axis=1),
             helper.make_node("Mul", ["col", "two"], ["scaled"]),
             helper.make_node("Gather", ["x", "zero"], ["row"], axis=0),
             helper.make_node("Gather", ["row", "zero"], ["corner"], axis=0),
             helper.make_node("Add", ["scaled", "corner"], ["y"])]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])], [_undeclared("y")], inits)
    want, got = _both(model, {"x": _x((3, 4))})
    assert want[0].shape == (3,)
    _check(want, got)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_a_scalar_input_and_output(dtype: type) -> None:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = _model([helper.make_node("Identity", ["s"], ["t"]), helper.make_node("Shape", ["s"], ["shape"])],
                   [helper.make_tensor_value_info("s", elem, [])],
                   [helper.make_tensor_value_info("t", elem, []), _undeclared("shape", TensorProto.INT64)])
    want, got = _both(model, {"s": np.array(1, dtype)})
    assert want[0].shape == () and want[1].tolist() == []
    _check(want, got)


def test_a_scalar_input_computed_with() -> None:
    model = _model([helper.make_node("Mul", ["x", "s"], ["y"]), helper.make_node("Neg", ["s"], ["n"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                    helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                   [_undeclared("y"), _undeclared("n")])
    want, got = _both(model, {"x": _x((2, 3)), "s": np.array(3.0, np.float32)})
    assert want[1].shape == ()
    _check(want, got)


def test_a_scalar_constant_node() -> None:
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(3, np.int64))),
             helper.make_node("Gather", ["x", "c"], ["y"], axis=2),
             helper.make_node("Constant", [], ["f"], value_float=0.5),
             helper.make_node("Mul", ["f", "f"], ["ff"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                   [_undeclared("y"), _undeclared("ff")])
    want, got = _both(model, {"x": _x()})
    assert want[0].shape == (2, 3) and want[1].shape == ()
    _check(want, got)


def test_a_scalar_initializer_in_external_data(tmp_path: Path) -> None:
    model = _model([helper.make_node("Gather", ["x", "idx"], ["g"], axis=0),
                    helper.make_node("Mul", ["g", "k"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])], [_undeclared("y")],
                   [numpy_helper.from_array(np.array(1, np.int64), "idx"),
                    numpy_helper.from_array(np.array(4.0, np.float32), "k")])
    path = tmp_path / "scalars.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="scalars.bin",
              size_threshold=0)
    stored = onnx.load(str(path), load_external_data=False)
    assert all(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer)
    want, got = _both(str(path), {"x": _x()})
    assert want[0].shape == (3, 4)
    _check(want, got)


def test_the_scalar_initializers_read_by_a_session_keep_rank_0() -> None:
    from plugnn.onnx.importer import read_initializers

    model = _model([helper.make_node("Add", ["a", "b"], ["y"])], [], [_undeclared("y")],
                   [numpy_helper.from_array(np.array(1.0, np.float32), "a"),
                    numpy_helper.from_array(np.ones((2, 1), np.float32), "b")])
    arrays = read_initializers(model)
    assert arrays["a"].shape == () and arrays["b"].shape == (2, 1)
    assert all(a.flags.c_contiguous and not a.flags.writeable for a in arrays.values())


def test_an_out_of_range_float_to_integer_cast_saturates_folded_or_run() -> None:
    """ONNX leaves it undefined; plugnn saturates (NaN gives 0) whether the Cast is folded at
    import or run by a backend (onnxruntime and NumPy wrap instead)."""
    x = np.array([-3.7, 300.2, 255.9, -0.5, 1e10, np.nan], np.float32)
    want = np.array([0, 255, 255, 0, 255, 0], np.uint8)
    run = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.UINT8)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])], [_undeclared("y", TensorProto.UINT8)])
    folded = _model([helper.make_node("Cast", ["c"], ["k"], to=TensorProto.UINT8),
                     helper.make_node("Add", ["k", "z"], ["y"])],
                    [helper.make_tensor_value_info("z", TensorProto.UINT8, [6])], [_undeclared("y", TensorProto.UINT8)],
                    [numpy_helper.from_array(x, "c")])
    for backends in (["CpuRef"], None):
        got = plugnn.InferenceSession(run.SerializeToString(), backends=backends).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, want)
    got = plugnn.InferenceSession(folded.SerializeToString()).run(None, {"z": np.zeros(6, np.uint8)})[0]
    np.testing.assert_array_equal(got, want)
