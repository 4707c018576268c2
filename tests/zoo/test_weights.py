"""tests/zoo/weights.py on hand-made graphs: what is stripped and what is kept, how stripped tensors
are filled, and the inputs make_inputs draws."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from zoo import weights  # noqa: E402


def graph_with(initializers: dict[str, np.ndarray], constants: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """x [2, 10] -> x @ W + B (+ every other initializer and constant summed in after a ReduceSum to a scalar)."""
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "B"], ["y0"])]
    last = "y0"
    extra = [n for n in initializers if n not in ("W", "B")] + list(constants or {})
    for name, value in (constants or {}).items():
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name)))
    for i, name in enumerate(extra):
        value = (initializers | (constants or {}))[name]
        source = name
        if value.dtype != np.float32:
            nodes.append(helper.make_node("Cast", [name], [f"{name}_f"], to=TensorProto.FLOAT))
            source = f"{name}_f"
        nodes.append(helper.make_node("ReduceSum", [source], [f"{name}_s"], keepdims=0))
        nodes.append(helper.make_node("Add", [last, f"{name}_s"], [f"y{i + 1}"]))
        last = f"y{i + 1}"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 20])],
                              [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)


@pytest.fixture
def model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    return graph_with({
        "W": rng.normal(0.5, 0.1, (10, 20)).astype(np.float32),       # 200 random floats: stripped
        "B": np.full(20, 0.25, np.float32),                           # 20 floats: kept
        "ones": np.ones((10, 10), np.float32),                        # constant: stripped, std 0
        "mask": np.tril(np.ones((10, 10), np.float32)) * -100.0,      # integer-valued: kept
        "ninf": np.where(np.eye(10) > 0, 0, -np.inf).astype(np.float32),  # non-finite: kept
        "shape": np.arange(100, dtype=np.int64),                      # integer type: kept
    }, constants={"c_big": rng.standard_normal(80).astype(np.float32),  # Constant: moved, stripped
                  "c_small": np.arange(3, dtype=np.float32)})


def by_name(model: onnx.ModelProto) -> dict[str, TensorProto]:
    return {t.name: t for t in model.graph.initializer}


def test_strip_keeps_small_integer_valued_and_non_float_tensors(model: onnx.ModelProto) -> None:
    original = {n: numpy_helper.to_array(t) for n, t in by_name(model).items()}
    counts = weights.strip(model)
    assert counts == {"stripped_tensors": 3, "stripped_elements": 200 + 100 + 80, "kept_large_float_tensors": 2,
                      "constants_moved": 1}
    tensors = by_name(model)
    assert sorted(t.name for t in weights.stripped_tensors(model)) == ["W", "c_big", "ones"]
    for name in ("B", "mask", "ninf", "shape"):
        assert not weights.is_stripped(tensors[name])
        np.testing.assert_array_equal(numpy_helper.to_array(tensors[name]), original[name])
    assert list(tensors["W"].dims) == [10, 20] and tensors["W"].data_type == TensorProto.FLOAT
    assert not tensors["W"].raw_data and not tensors["W"].float_data
    mean, std = weights.stats_of(tensors["W"])
    assert mean == pytest.approx(float(original["W"].astype(np.float64).mean()), rel=1e-12)
    assert std == pytest.approx(float(original["W"].astype(np.float64).std()), rel=1e-12)
    assert weights.stats_of(tensors["ones"]) == (1.0, 0.0)
    assert [n.op_type for n in model.graph.node].count("Constant") == 1  # c_small stays a Constant


def test_materialize_fills_from_the_recorded_statistics(model: onnx.ModelProto) -> None:
    weights.strip(model)
    filled = weights.materialize(model, seed=3)
    onnx.checker.check_model(filled)
    tensors = {n: numpy_helper.to_array(t) for n, t in by_name(filled).items()}
    np.testing.assert_array_equal(tensors["ones"], np.ones((10, 10), np.float32))
    assert tensors["W"].dtype == np.float32 and tensors["W"].shape == (10, 20)
    assert abs(tensors["W"].mean() - 0.5) < 0.1 * 4 / np.sqrt(200)
    assert 0.08 < tensors["W"].std() < 0.12
    assert weights.stripped_tensors(model)[0].raw_data == b""  # the argument is left stripped
    session = ort.InferenceSession(filled.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.ones((2, 10), np.float32)})
    assert y.shape == (2, 20)


def test_a_tensor_depends_on_the_seed_and_its_name_only(model: onnx.ModelProto) -> None:
    weights.strip(model)
    reordered = onnx.ModelProto()
    reordered.CopyFrom(model)
    inits = list(reordered.graph.initializer)
    del reordered.graph.initializer[:]
    reordered.graph.initializer.extend(reversed(inits))
    a, b = weights.materialize(model, seed=7), weights.materialize(reordered, seed=7)
    assert by_name(a)["W"].raw_data == by_name(b)["W"].raw_data
    assert by_name(a)["W"].raw_data != by_name(weights.materialize(model, seed=8))["W"].raw_data
    twin = by_name(reordered)["W"]
    twin.name = "W_twin"  # the same statistics under another name: other values
    assert weights.fill_values(twin, 7).tobytes() != by_name(a)["W"].raw_data


def test_materialize_reads_paths_and_bytes(model: onnx.ModelProto, tmp_path) -> None:
    weights.strip(model)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    expected = by_name(weights.materialize(model, seed=1))["W"].raw_data
    assert by_name(weights.materialize(path, seed=1))["W"].raw_data == expected
    assert by_name(weights.materialize(str(path), seed=1))["W"].raw_data == expected
    assert by_name(weights.materialize(model.SerializeToString(), seed=1))["W"].raw_data == expected


def test_bad_statistics_are_reported() -> None:
    tensor = TensorProto(name="t", doc_string="something else")
    with pytest.raises(ValueError, match="'t'"):
        weights.stats_of(tensor)


ENTRY = {
    "name": "toy",
    "inputs": [
        {"name": "ids", "dtype": "int64", "dims": ["batch", "sequence"], "values": {"kind": "integers", "low": 0, "high": 7}},
        {"name": "mask", "dtype": "int64", "dims": ["batch", "sequence"], "values": {"kind": "ones"}},
        {"name": "frames", "dtype": "float32", "dims": ["sequence", "batch", 3], "values": {"kind": "normal"}},
        {"name": "wave", "dtype": "float32", "dims": ["batch", 1, "samples"],
         "values": {"kind": "uniform", "low": -1.0, "high": 1.0}},
    ],
    "shapes": {"ci": {"batch": 1, "sequence": 5, "samples": 8}, "full": {"batch": 1, "sequence": 9, "samples": 16}},
}


def test_make_inputs_shapes_types_and_ranges() -> None:
    inputs = weights.make_inputs(ENTRY, "ci", 4, seed=0)
    assert {n: (v.shape, v.dtype) for n, v in inputs.items()} == {
        "ids": ((4, 5), np.int64), "mask": ((4, 5), np.int64), "frames": ((5, 4, 3), np.float32),
        "wave": ((4, 1, 8), np.float32)}
    assert inputs["ids"].min() >= 0 and inputs["ids"].max() < 7
    assert np.all(inputs["mask"] == 1)
    assert np.abs(inputs["wave"]).max() <= 1.0
    assert weights.make_inputs(ENTRY, "full", 1, seed=0)["frames"].shape == (9, 1, 3)
    assert weights.input_shapes(ENTRY, "full", 2) == {"ids": (2, 9), "mask": (2, 9), "frames": (9, 2, 3),
                                                      "wave": (2, 1, 16)}
    with pytest.raises(KeyError, match="bench"):
        weights.make_inputs(ENTRY, "bench", 1, seed=0)


def test_make_inputs_batch_items_do_not_depend_on_the_batch_size() -> None:
    one, four = weights.make_inputs(ENTRY, "ci", 1, seed=5), weights.make_inputs(ENTRY, "ci", 4, seed=5)
    np.testing.assert_array_equal(four["ids"][:1], one["ids"])
    np.testing.assert_array_equal(four["frames"][:, :1], one["frames"])
    assert not np.array_equal(four["frames"][:, 1], four["frames"][:, 0])
    again = weights.make_inputs(ENTRY, "ci", 4, seed=5)
    assert all(np.array_equal(again[n], four[n]) for n in four)
    assert not np.array_equal(weights.make_inputs(ENTRY, "ci", 4, seed=6)["frames"], four["frames"])


def test_relative_difference() -> None:
    reference = np.array([1.0, -4.0, 2.0], np.float32)
    assert weights.relative_difference(reference + np.float32(0.004), reference) == pytest.approx(1e-3, rel=1e-4)
    assert weights.relative_difference(np.zeros(3), np.zeros(3)) == 0.0
    assert weights.relative_difference(np.ones(3), np.zeros(3)) == float("inf")
