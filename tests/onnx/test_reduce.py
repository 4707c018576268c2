"""ONNX import of the reductions and their relatives: Reduce* (axes as attribute and as input,
keepdims, noop_with_empty_axes), ArgMax/ArgMin (select_last_index), LogSoftmax and Hardmax
(coerced 2-D before opset 13, one axis from 13), TopK (k attribute, K input, largest, sorted),
CumSum and CumProd (exclusive, reverse), each against onnxruntime on CpuRef over the opsets
where the operator changed; folds at import (a ReduceProd over a Shape in a shape chain); and
the import errors, which name node, operator and attribute."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
from onnx import TensorProto, defs, helper

import plugnn
import plugnn.onnx
from plugnn.descriptors import LayerKind
from plugnn.errors import ModelError
from plugnn.onnx.context import NeedsConstantError

N = helper.make_node
NEWEST = defs.onnx_opset_version()
F32 = TensorProto.FLOAT

# Reduce* -> the opset from which axes is an input.
AXES_INPUT_FROM = {"ReduceSum": 13, **{op: 18 for op in (
    "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
    "ReduceSumSquare")}}
# opsets where a Reduce* changed, among those onnxruntime runs
REDUCE_OPSETS = (7, 11, 13, 18, 20)
ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.float64: TensorProto.DOUBLE,
              np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8,
              np.int8: TensorProto.INT8, np.bool_: TensorProto.BOOL}


def reduce_model(op: str, shape: tuple[int, ...], axes: list[int] | None, opset: int, dtype: Any = np.float32,
                 axes_as_input: bool = False, **attrs: Any) -> Any:
    """One Reduce* node; axes as an attribute before the opset that made it an input, else an
    initializer (or a graph input with axes_as_input)."""
    inputs: dict[str, Any] = {"x": (list(shape), ONNX_TYPES[dtype])}
    inits = {}
    node_inputs = ["x"]
    if axes is not None and opset < AXES_INPUT_FROM[op]:
        attrs["axes"] = axes
    elif axes is not None:
        node_inputs.append("axes")
        if axes_as_input:
            inputs["axes"] = ([len(axes)], TensorProto.INT64)
        else:
            inits["axes"] = np.array(axes, np.int64)
    node = N(op, node_inputs, ["y"], name=f"{op.lower()}_node", **attrs)
    return make_model([node], inputs, ["y"], inits, opset=opset)


def data(shape: tuple[int, ...], dtype: Any = np.float32, seed: int = 0, positive: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iub":
        return rng.integers(0 if np.dtype(dtype).kind in "ub" else -5, 6, shape).astype(dtype)
    values = rng.uniform(0.2, 2.0, shape) if positive else rng.standard_normal(shape) * 2
    return values.astype(dtype)


def compare(runtime: Any, model: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6,
            exact: bool = False) -> dict[str, np.ndarray]:
    got, want = run_plugnn(runtime, model, feeds), run_ort(model, feeds)
    for name, expected in want.items():
        assert got[name].shape == expected.shape, f"{name}: shape {got[name].shape}, onnxruntime {expected.shape}"
        assert got[name].dtype == expected.dtype, f"{name}: {got[name].dtype}, onnxruntime {expected.dtype}"
        if exact:
            np.testing.assert_array_equal(got[name], expected, err_msg=name)
        else:
            np.testing.assert_allclose(got[name].astype(np.float64), expected.astype(np.float64), rtol=rtol,
                                       atol=atol, err_msg=name)
    return got


def layer_kinds(model: Any) -> list[Any]:
    return [layer.kind for layer in plugnn.onnx.load(model).layers]


# ---- Reduce* ---------------------------------------------------------------------------------------------

REDUCE_CASES = [
    # shape, axes (None: the attribute/input absent), keepdims
    ((3, 4, 5), [1], 1),
    ((3, 4, 5), [0, 2], 0),
    ((3, 4, 5), [-1], 1),
    ((3, 4, 5), [2, 0], 1),     # unsorted in the model: the layer takes them sorted
    ((3, 4, 5), None, 1),       # every axis
    ((3, 4, 5), None, 0),
    ((2, 3, 4, 5), [1, 2, 3], 0),
    ((6,), [0], 0),
]


@pytest.mark.parametrize("opset", REDUCE_OPSETS)
@pytest.mark.parametrize("shape, axes, keepdims", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("op", list(AXES_INPUT_FROM))
def test_reduce_matches_onnxruntime(runtime: Any, op: str, shape, axes, keepdims: int, opset: int) -> None:
    model = reduce_model(op, shape, axes, opset, keepdims=keepdims)
    compare(runtime, model, {"x": data(shape, positive=op == "ReduceLogSum", seed=opset)}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", list(AXES_INPUT_FROM))
def test_noop_with_empty_axes_applies_the_op_per_element(runtime: Any, op: str) -> None:
    opset = AXES_INPUT_FROM[op]
    for axes in (None, []):
        model = reduce_model(op, (2, 3), axes, opset, noop_with_empty_axes=1)
        compare(runtime, model, {"x": data((2, 3), positive=op == "ReduceLogSum")}, rtol=1e-6, atol=1e-6)
    # without the flag, no axes (or an empty list) reduce everything
    model = reduce_model(op, (2, 3), [], opset, keepdims=0)
    compare(runtime, model, {"x": data((2, 3), positive=True)}, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op, dtype", [
    ("ReduceSum", np.float64), ("ReduceSum", np.int32), ("ReduceSum", np.int64), ("ReduceSum", np.float16),
    ("ReduceMean", np.float64), ("ReduceMean", np.int32), ("ReduceMax", np.int64), ("ReduceMax", np.uint8),
    ("ReduceMax", np.int8), ("ReduceMin", np.int32), ("ReduceMin", np.float16), ("ReduceProd", np.int64),
    ("ReduceL1", np.int32), ("ReduceL2", np.float64), ("ReduceSumSquare", np.int64), ("ReduceLogSumExp", np.float64),
    ("ReduceMax", np.bool_), ("ReduceMin", np.bool_),
])
def test_reduce_element_types(runtime: Any, op: str, dtype: Any) -> None:
    opset = 20 if dtype is np.bool_ else 18
    model = reduce_model(op, (3, 4, 2), [1], opset, dtype=dtype, keepdims=0)
    tolerance = 2e-3 if dtype is np.float16 else 1e-6
    compare(runtime, model, {"x": data((3, 4, 2), dtype, seed=3)}, rtol=tolerance, atol=tolerance,
            exact=np.dtype(dtype).kind in "iub")


def test_reduce_over_an_empty_axis(runtime: Any) -> None:
    for op in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare",
               "ReduceLogSum", "ReduceLogSumExp"):
        model = reduce_model(op, (2, 0, 3), [1], 18)
        compare(runtime, model, {"x": np.zeros((2, 0, 3), np.float32)})


def test_axes_as_a_graph_input_are_bound_by_the_onnx_backend() -> None:
    model = reduce_model("ReduceSum", (2, 3), [1], 13, axes_as_input=True)
    with pytest.raises(NeedsConstantError, match="input 1 \\(axes\\) 'axes' must be known at import time"):
        plugnn.onnx.load(model)
    from plugnn.onnx import backend

    x = data((2, 3))
    (y,) = backend.prepare(model, backends=["CpuRef"]).run({"x": x, "axes": np.array([1], np.int64)})
    np.testing.assert_allclose(y, x.sum(1, keepdims=True), rtol=1e-6)


# ---- ArgMax, ArgMin ------------------------------------------------------------------------------------------


# select_last_index exists from opset 12 (its refusal before is among the errors below)
ARG_CASES = [(opset, axis, keepdims, last) for opset in (7, 11, 12, 13)
             for axis, keepdims, last in ((0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)) if opset >= 12 or not last]


@pytest.mark.parametrize("opset, axis, keepdims, last", ARG_CASES, ids=str)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_matches_onnxruntime(runtime: Any, op: str, axis: int, keepdims: int, last: int, opset: int) -> None:
    attrs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if opset >= 12:
        attrs["select_last_index"] = last
    model = make_model([N(op, ["x"], ["y"], **attrs)], {"x": [3, 4, 5]}, ["y"], opset=opset)
    x = np.random.default_rng(4).integers(-2, 3, (3, 4, 5)).astype(np.float32)  # ties
    compare(runtime, model, {"x": x}, exact=True)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float64, np.float16])
def test_arg_element_types(runtime: Any, dtype: Any) -> None:
    for op in ("ArgMax", "ArgMin"):
        model = make_model([N(op, ["x"], ["y"], axis=1, select_last_index=1)],
                           {"x": ([3, 6], ONNX_TYPES[dtype])}, ["y"], opset=13)
        compare(runtime, model, {"x": data((3, 6), dtype, seed=5)}, exact=True)


# ---- folds ---------------------------------------------------------------------------------------------------


def test_reduce_prod_over_a_shape_folds(runtime: Any) -> None:
    """x [2, 3, 4] -> Reshape to [prod(shape[1:]) ... ]: the shape chain folds, no Reduce layer is left."""
    nodes = [N("Shape", ["x"], ["s"]),
             N("Slice", ["s", "one", "three"], ["tail"]),
             N("ReduceProd", ["tail"], ["n"], keepdims=1),
             N("Concat", ["minus_one", "n"], ["target"], axis=0),
             N("Reshape", ["x", "target"], ["y"])]
    inits = {"one": np.array([1], np.int64), "three": np.array([3], np.int64), "minus_one": np.array([-1], np.int64)}
    model = make_model(nodes, {"x": [2, 3, 4]}, ["y"], inits, opset=13)
    assert LayerKind.REDUCE not in layer_kinds(model)
    got = compare(runtime, model, {"x": data((2, 3, 4))})
    assert got["y"].shape == (2, 12)


@pytest.mark.parametrize("op, opset", [("ReduceSum", 13), ("ReduceMean", 18), ("ReduceLogSumExp", 18),
                                       ("ReduceL2", 11), ("ArgMax", 13), ("ReduceMax", 20)])
def test_constant_reductions_fold(runtime: Any, op: str, opset: int) -> None:
    c = data((3, 4), seed=6)
    attrs = {"axis": 1} if op == "ArgMax" else ({"axes": [1]} if opset < AXES_INPUT_FROM.get(op, 99) else {})
    node_inputs = ["c"] + (["axes"] if op != "ArgMax" and opset >= AXES_INPUT_FROM[op] else [])
    nodes = [N(op, node_inputs, ["r"], **attrs), N("Identity", ["r"], ["y"])]
    model = make_model(nodes, {}, ["y"], {"c": c, "axes": np.array([1], np.int64)}, opset=opset)
    assert LayerKind.REDUCE not in layer_kinds(model)
    want = run_ort(model, {})["y"]
    network = plugnn.onnx.load(model)
    (constant,) = [layer.value for layer in network.layers if layer.value is not None and layer.value.shape == want.shape]
    assert constant.dtype == want.dtype
    np.testing.assert_allclose(constant, want, rtol=1e-6)


def test_integer_fold_wraps_like_the_layer() -> None:
    from plugnn.onnx.ops_reduce import numpy_reduce

    x = np.array([[100, 100], [-128, -1]], np.int8)
    assert numpy_reduce("sum", x, (1,), False).tolist() == [-56, 127]
    assert numpy_reduce("l1", x, (1,), False).tolist() == [-56, -127]
    assert numpy_reduce("mean", np.array([[-3, -4]], np.int32), (1,), False).tolist() == [-3]


# ---- LogSoftmax, Hardmax ------------------------------------------------------------------------------------------


SOFTMAX_CASES = [(opset, axis) for opset in (7, 11, 13) for axis in (0, 1, 2, -1, -3)] + [(11, None), (13, None)]


@pytest.mark.parametrize("opset, axis", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("op", ["LogSoftmax", "Softmax"])
def test_softmax_family_matches_onnxruntime(runtime: Any, op: str, opset: int, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    model = make_model([N(op, ["x"], ["y"], **attrs)], {"x": [2, 3, 4]}, ["y"], opset=opset)
    compare(runtime, model, {"x": data((2, 3, 4), seed=7) * 10}, rtol=1e-5, atol=1e-5)


def test_log_softmax_of_large_values_stays_finite(runtime: Any) -> None:
    model = make_model([N("LogSoftmax", ["x"], ["y"])], {"x": [2, 3]}, ["y"], opset=13)
    x = np.array([[1000, 0, -1000], [-3e4, -3e4 + 1, 3e4]], np.float32)
    got = compare(runtime, model, {"x": x}, rtol=1e-6, atol=1e-4)
    assert np.isfinite(got["y"]).all()


@pytest.mark.parametrize("opset, axis", SOFTMAX_CASES, ids=str)
def test_hardmax_matches_onnxruntime(runtime: Any, opset: int, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    model = make_model([N("Hardmax", ["x"], ["y"], **attrs)], {"x": [2, 3, 4]}, ["y"], opset=opset)
    x = np.random.default_rng(8).integers(-2, 3, (2, 3, 4)).astype(np.float32)  # ties: the first wins
    compare(runtime, model, {"x": x}, exact=True)


def test_hardmax_is_arg_max_and_one_hot() -> None:
    model = make_model([N("Hardmax", ["x"], ["y"], axis=1)], {"x": [2, 3, 4]}, ["y"], opset=11)
    kinds = layer_kinds(model)
    assert LayerKind.REDUCE in kinds and LayerKind.ONE_HOT in kinds and LayerKind.RESHAPE in kinds


# ---- TopK -------------------------------------------------------------------------------------------------------


TOP_K_CASES = [(opset, axis, k, largest, is_sorted) for opset, axis, k, largest, is_sorted in (
    (7, -1, 3, 1, 1), (7, 0, 2, 1, 1), (10, 1, 4, 1, 1), (10, -1, 5, 1, 1), (11, 1, 3, 0, 1), (11, 2, 5, 1, 1),
    (11, 0, 1, 0, 1), (11, -1, 0, 1, 1), (NEWEST, 1, 4, 0, 1))]


@pytest.mark.parametrize("opset, axis, k, largest, is_sorted", TOP_K_CASES, ids=str)
def test_top_k_matches_onnxruntime(runtime: Any, opset: int, axis: int, k: int, largest: int, is_sorted: int) -> None:
    attrs: dict[str, Any] = {"axis": axis}
    inits = {}
    inputs = ["x"]
    if opset < 10:
        attrs["k"] = k
    else:
        inputs.append("k")
        inits["k"] = np.array([k], np.int64)
    if opset >= 11:
        attrs.update(largest=largest, sorted=is_sorted)
    model = make_model([N("TopK", inputs, ["values", "indices"], **attrs)], {"x": [3, 4, 5]}, ["values", "indices"],
                       inits, opset=opset)
    x = np.random.default_rng(9).integers(-3, 4, (3, 4, 5)).astype(np.float32)  # ties: the lower index first
    compare(runtime, model, {"x": x}, exact=True)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float64, np.float16])
def test_top_k_element_types(runtime: Any, dtype: Any) -> None:
    model = make_model([N("TopK", ["x", "k"], ["values", "indices"], axis=1)], {"x": ([3, 7], ONNX_TYPES[dtype])},
                       ["values", "indices"], {"k": np.array([4], np.int64)}, opset=11)
    compare(runtime, model, {"x": data((3, 7), dtype, seed=10)}, exact=True)


@pytest.mark.parametrize("largest", [1, 0])
def test_top_k_nan_as_onnxruntime(runtime: Any, largest: int) -> None:
    model = make_model([N("TopK", ["x", "k"], ["values", "indices"], largest=largest)], {"x": [2, 6]},
                       ["values", "indices"], {"k": np.array([6], np.int64)}, opset=11)
    x = np.array([[1, np.nan, 3, np.inf, np.nan, -1], [0, -np.inf, np.nan, 2, 2, 0]], np.float32)
    compare(runtime, model, {"x": x}, exact=True)


def test_top_k_of_a_constant_folds(runtime: Any) -> None:
    c = data((3, 5), seed=11)
    nodes = [N("TopK", ["c", "k"], ["v", "i"]), N("Identity", ["v"], ["values"]), N("Identity", ["i"], ["indices"])]
    model = make_model(nodes, {}, ["values", "indices"], {"c": c, "k": np.array([2], np.int64)}, opset=11)
    assert LayerKind.TOP_K not in layer_kinds(model)
    from plugnn.onnx.ops_topk_cumulative import numpy_top_k

    want = run_ort(model, {})
    values, indices = numpy_top_k(c, 2, 1, True)
    np.testing.assert_array_equal(values, want["values"])
    np.testing.assert_array_equal(indices, want["indices"])
    ints = np.array([[3, -128, 127, 3], [0, 5, 5, -1]], np.int8)
    np.testing.assert_array_equal(numpy_top_k(ints, 3, 1, True)[1], [[2, 0, 3], [1, 2, 0]])
    np.testing.assert_array_equal(numpy_top_k(ints, 3, 1, False)[1], [[1, 0, 3], [3, 0, 1]])


def test_top_k_k_must_be_known_at_import() -> None:
    model = make_model([N("TopK", ["x", "k"], ["v", "i"], name="topk")], {"x": [2, 5], "k": ([1], TensorProto.INT64)},
                       ["v", "i"], opset=11)
    with pytest.raises(NeedsConstantError, match="input 1 \\(K \\(the number of values, which fixes the output shapes"):
        plugnn.onnx.load(model)


# ---- CumSum, CumProd ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 14])
@pytest.mark.parametrize("axis, exclusive, reverse", [(0, 0, 0), (1, 1, 0), (-1, 0, 1), (2, 1, 1)])
def test_cumsum_matches_onnxruntime(runtime: Any, axis: int, exclusive: int, reverse: int, opset: int) -> None:
    model = make_model([N("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)], {"x": [3, 4, 5]},
                       ["y"], {"axis": np.array(axis, np.int32 if axis % 2 else np.int64)}, opset=opset)
    compare(runtime, model, {"x": data((3, 4, 5), seed=12)}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_cumsum_element_types(runtime: Any, dtype: Any) -> None:
    model = make_model([N("CumSum", ["x", "axis"], ["y"], reverse=1)], {"x": ([3, 6], ONNX_TYPES[dtype])}, ["y"],
                       {"axis": np.array(1, np.int64)}, opset=14)
    compare(runtime, model, {"x": data((3, 6), dtype, seed=13)}, exact=np.dtype(dtype).kind == "i", rtol=1e-12)


@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumprod_matches_onnxruntime(runtime: Any, exclusive: int, reverse: int) -> None:
    if NEWEST < 26:
        pytest.skip(f"CumProd is opset 26; the installed onnx knows {NEWEST}")
    model = make_model([N("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)], {"x": [3, 5]},
                       ["y"], {"axis": np.array(1, np.int64)}, opset=26)
    compare(runtime, model, {"x": np.random.default_rng(14).uniform(0.5, 1.5, (3, 5)).astype(np.float32)},
            rtol=1e-6, atol=1e-6)


def test_cumsum_of_a_constant_folds() -> None:
    nodes = [N("CumSum", ["c", "axis"], ["r"], exclusive=1), N("Identity", ["r"], ["y"])]
    c = np.array([[1, 2, 3], [120, 10, 1]], np.int8)
    model = make_model(nodes, {}, ["y"], {"c": c, "axis": np.array(1, np.int64)}, opset=14)
    assert LayerKind.CUMULATIVE not in layer_kinds(model)
    (value,) = [layer.value for layer in plugnn.onnx.load(model).layers if layer.value is not None
                and layer.value.dtype == np.int8]
    assert value.tolist() == [[0, 1, 3], [0, 120, -126]]


# ---- errors ----------------------------------------------------------------------------------------------------------


def _load_error(nodes: list[Any], inputs: dict[str, Any], inits: dict[str, Any] | None = None, opset: int = 13) -> str:
    consumed = {i for node in nodes for i in node.input}
    outputs = [o for node in nodes for o in node.output if o and o not in consumed]
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(make_model(nodes, inputs, outputs, inits, opset=opset))
    return str(info.value)


I64 = TensorProto.INT64
ERRORS = [
    ([N("ReduceMean", ["x"], ["y"], name="rm", axes=[3])], {"x": [2, 3]}, {}, 13,
     "node 'rm' (#0, ReduceMean): axes [3]: 3 is out of range for rank 2"),
    ([N("ReduceMean", ["x"], ["y"], name="rm", axes=[1, -1])], {"x": [2, 3]}, {}, 13,
     "node 'rm' (#0, ReduceMean): axes [1, -1] repeat an axis"),
    ([N("ReduceMean", ["x"], ["y"], name="rm", axes=[1])], {"x": [2, 3]}, {}, 18,
     "node 'rm' (#0, ReduceMean): attribute 'axes' exists before opset 18 only; from then on axes is input 1"),
    ([N("ReduceSum", ["x", "a"], ["y"], name="rs")], {"x": [2, 3]}, {"a": np.array([0], np.int64)}, 11,
     "node 'rs' (#0, ReduceSum): takes one input before opset 13 (axes is an attribute), got 2"),
    ([N("ReduceMax", ["x"], ["y"], name="rx", noop_with_empty_axes=1)], {"x": [2, 3]}, {}, 13,
     "node 'rx' (#0, ReduceMax): attribute 'noop_with_empty_axes' exists from opset 18"),
    ([N("ReduceSum", ["x"], ["y"], name="rs", keepdims=2)], {"x": [2, 3]}, {}, 13,
     "attribute 'keepdims' = 2 is not supported; supported: 0, 1"),
    ([N("ReduceSum", ["x"], ["y"], name="rs", foo=1)], {"x": [2, 3]}, {}, 13,
     "attribute 'foo' is not supported by plugnn's ReduceSum import; supported attributes: axes, keepdims, "
     "noop_with_empty_axes"),
    ([N("ReduceLogSum", ["x"], ["y"], name="rl")], {"x": ([2, 3], TensorProto.INT32)}, {}, 13,
     "node 'rl' (#0, ReduceLogSum): input 0 (data) has element type int32; ReduceLogSum takes float types"),
    ([N("ReduceSum", ["x"], ["y"], name="rs")], {"x": ([2, 3], TensorProto.BOOL)}, {}, 13,
     "input 0 (data) is bool; ReduceSum takes numeric types"),
    ([N("Relu", ["x"], ["a"]), N("ReduceSum", ["x", "a"], ["y"], name="rs")], {"x": [2]}, {}, 13,
     "input 1 (axes) 'a' must be known at import time"),
    ([N("ArgMax", ["x"], ["y"], name="am", axis=2)], {"x": [2, 3]}, {}, 13,
     "node 'am' (#0, ArgMax): attribute 'axis' = 2 is out of range for rank 2"),
    ([N("ArgMin", ["x"], ["y"], name="am", select_last_index=1)], {"x": [2, 3]}, {}, 11,
     "node 'am' (#0, ArgMin): attribute 'select_last_index' exists from opset 12"),
    ([N("ArgMax", ["x"], ["y"], name="am", axis=1)], {"x": [2, 0]}, {}, 13,
     "axis 1 of input 0 (data) has size 0: ArgMax has no index to give"),
    ([N("ArgMax", ["x"], ["y"], name="am", select_last_index=3)], {"x": [2, 3]}, {}, 13,
     "attribute 'select_last_index' = 3 is not supported; supported: 0, 1"),
    ([N("LogSoftmax", ["x"], ["y"], name="ls", axis=-4)], {"x": [2, 3, 4]}, {}, 13,
     "node 'ls' (#0, LogSoftmax): attribute 'axis' = -4 is out of range for rank 3"),
    ([N("Hardmax", ["x"], ["y"], name="hm")], {"x": ([2, 3], TensorProto.INT32)}, {}, 13,
     "node 'hm' (#0, Hardmax): input 0 (input) has element type int32; Hardmax takes float types"),
    ([N("TopK", ["x"], ["v", "i"], name="tk", k=4)], {"x": [2, 3]}, {}, 7,
     "node 'tk' (#0, TopK): k = 4 must be in 0..3 (the size of axis 1 of X [2, 3])"),
    ([N("TopK", ["x"], ["v", "i"], name="tk")], {"x": [2, 3]}, {}, 7, "attribute 'k' is required (before opset 10)"),
    ([N("TopK", ["x", "k"], ["v", "i"], name="tk", k=2)], {"x": [2, 3]}, {"k": np.array([2], np.int64)}, 10,
     "attribute 'k' exists before opset 10 only; from then on K is input 1"),
    ([N("TopK", ["x", "k"], ["v", "i"], name="tk", largest=0)], {"x": [2, 3]}, {"k": np.array([2], np.int64)}, 10,
     "attribute 'largest' exists from opset 11"),
    ([N("TopK", ["x", "k"], ["v", "i"], name="tk")], {"x": [2, 3]}, {"k": np.array([-1], np.int64)}, 11,
     "k = -1 must be in 0..3"),
    ([N("TopK", ["x", "k"], ["v", "i"], name="tk")], {"x": [2, 3]}, {"k": np.array([1, 2], np.int64)}, 11,
     "input 1 (K) must hold one integer, got int64 of shape [2]"),
    ([N("TopK", ["x", "k"], ["v", "i"], name="tk", sorted=2)], {"x": [2, 3]}, {"k": np.array([1], np.int64)}, 11,
     "attribute 'sorted' = 2 is not supported; supported: 0, 1"),
    ([N("ArgMax", ["x"], ["k"]), N("TopK", ["x", "k"], ["v", "i"], name="tk")], {"x": [2]}, {}, 11,
     "input 1 (K (the number of values, which fixes the output shapes plugnn builds at import)) 'k' must be known "
     "at import time (a constant, or computed from constants and static shapes), but it is computed at run time"),
    ([N("CumSum", ["x", "a"], ["y"], name="cs")], {"x": [2, 3]}, {"a": np.array([0, 1], np.int64)}, 11,
     "node 'cs' (#0, CumSum): input 1 (axis) must be one integer (a scalar), got int64 of shape [2]"),
    ([N("CumSum", ["x", "a"], ["y"], name="cs")], {"x": [2, 3]}, {"a": np.array(2, np.int64)}, 11,
     "input 1 (axis) = 2 is out of range for rank 2"),
    ([N("CumSum", ["x", "a"], ["y"], name="cs")], {"x": [2, 3], "a": ([], I64)}, {}, 11,
     "input 1 (axis) 'a' must be known at import time, but it is a graph input"),
    ([N("CumSum", ["x", "a"], ["y"], name="cs", exclusive=5)], {"x": [2, 3]}, {"a": np.array(0, np.int64)}, 11,
     "attribute 'exclusive' = 5 is not supported; supported: 0, 1"),
    ([N("CumSum", ["x", "a"], ["y"], name="cs")], {"x": ([2, 3], TensorProto.BOOL)}, {"a": np.array(0, np.int64)},
     11, "input 0 (x) has element type bool; CumSum takes numeric types"),
]


@pytest.mark.parametrize("nodes, inputs, inits, opset, message", ERRORS)
def test_errors_name_node_operator_and_attribute(nodes, inputs, inits, opset, message) -> None:  # type: ignore[no-untyped-def]
    assert message in _load_error(nodes, inputs, inits, opset)
