"""ONNX import of the normalizations: LayerNormalization (axis, epsilon, B, the Mean and InvStdDev
outputs, Scale broadcasting), RMSNormalization, GroupNormalization (opset 18's per-group and 21's
per-channel Scale and B), InstanceNormalization, LpNormalization, MeanVarianceNormalization,
and the LayerNorm torch exports below opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
Div); each against onnxruntime on CpuRef (ONNX's reference where onnxruntime has no kernel);
folds; and the import errors, which name node, operator and attribute."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn.descriptors import LayerKind
from plugnn.errors import ModelError

N = helper.make_node


def data(shape: tuple[int, ...], seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5).astype(dtype)


def compare(runtime: Any, model: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-5,
            oracle: str = "onnxruntime") -> dict[str, np.ndarray]:
    got = run_plugnn(runtime, model, feeds)
    if oracle == "onnxruntime":
        want = run_ort(model, feeds)
    else:
        names = [o.name for o in model.graph.output]
        want = dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))
    for name, expected in want.items():
        assert got[name].shape == expected.shape, f"{name}: shape {got[name].shape}, {oracle} {expected.shape}"
        assert got[name].dtype == expected.dtype, f"{name}: {got[name].dtype}, {oracle} {expected.dtype}"
        np.testing.assert_allclose(got[name].astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=name)
    return got


def kinds(model: Any) -> list[Any]:
    return [layer.kind for layer in plugnn.onnx.load(model).layers]


# ---- LayerNormalization ------------------------------------------------------------------------------------

LAYER_CASES = [
    # x shape, axis, scale shape, with B
    ((2, 3, 8), -1, (8,), True),
    ((2, 3, 8), -1, (8,), False),
    ((2, 3, 8), 1, (3, 8), True),
    ((2, 3, 8), 0, (2, 3, 8), True),
    ((2, 3, 8), -2, (1, 8), True),
    ((2, 3, 8), -1, (1, 1, 8), True),   # leading size-1 dims: dropped
    ((4, 16), 1, (16,), True),
]


@pytest.mark.parametrize("shape, axis, scale_shape, with_bias", LAYER_CASES, ids=str)
def test_layer_normalization_matches_onnxruntime(runtime: Any, shape, axis: int, scale_shape, with_bias: bool) -> None:
    inits = {"scale": data(scale_shape, 1)}
    inputs = ["x", "scale"]
    if with_bias:
        inits["bias"] = data(scale_shape, 2)
        inputs.append("bias")
    model = make_model([N("LayerNormalization", inputs, ["y"], axis=axis, epsilon=1e-3)], {"x": list(shape)}, ["y"],
                       inits, opset=17)
    assert kinds(model).count(LayerKind.NORMALIZATION) == 1
    compare(runtime, model, {"x": data(shape, 3)})


def test_layer_normalization_scale_over_the_leading_dims(runtime: Any) -> None:
    """A Scale that varies along the dims before axis: a multiplication after the normalization."""
    model = make_model([N("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)], {"x": [2, 3, 4]}, ["y"],
                       {"scale": data((3, 1), 4), "bias": data((3, 4), 5)}, opset=17)
    compare(runtime, model, {"x": data((2, 3, 4), 6)}, oracle="reference")


def test_layer_normalization_runtime_scale_and_bias(runtime: Any) -> None:
    model = make_model([N("LayerNormalization", ["x", "scale", "bias"], ["y"])], {"x": [2, 5], "scale": [5],
                                                                                   "bias": [1, 5]}, ["y"], opset=17)
    compare(runtime, model, {"x": data((2, 5), 7), "scale": data((5,), 8), "bias": data((1, 5), 9)})


@pytest.mark.parametrize("outputs", [("y", "mean"), ("y", "mean", "inv_std"), ("y", "", "inv_std")], ids=str)
@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_normalization_mean_and_inv_std_dev(runtime: Any, axis: int, outputs) -> None:
    node = N("LayerNormalization", ["x", "scale", "bias"], list(outputs), axis=axis, epsilon=1e-4)
    model = make_model([node], {"x": [2, 3, 4]}, [o for o in outputs if o],
                       {"scale": data((3, 4)[axis:] if axis == 1 else (4,), 10),
                        "bias": data((3, 4)[axis:] if axis == 1 else (4,), 11)}, opset=17)
    compare(runtime, model, {"x": data((2, 3, 4), 12)})


def test_layer_normalization_float16(runtime: Any) -> None:
    node = N("LayerNormalization", ["x", "scale", "bias"], ["y"])
    model = make_model([node], {"x": ([2, 8], TensorProto.FLOAT16)}, ["y"],
                       {"scale": data((8,), 13, np.float16), "bias": data((8,), 14, np.float16)}, opset=17)
    compare(runtime, model, {"x": data((2, 8), 15, np.float16)}, rtol=2e-3, atol=2e-3)


def test_layer_normalization_float16_statistics_in_the_stash_type(runtime: Any) -> None:
    """Mean and InvStdDev are float32 (stash_type 1) for a float16 X: X is cast first."""
    node = N("LayerNormalization", ["x", "scale"], ["y", "mean", "inv_std"])
    model = make_model([node], {"x": ([2, 8], TensorProto.FLOAT16)}, ["y", "mean", "inv_std"],
                       {"scale": data((8,), 44, np.float16)}, opset=17)
    got = compare(runtime, model, {"x": data((2, 8), 45, np.float16)}, rtol=2e-3, atol=2e-3)
    assert got["mean"].dtype == np.float32 and got["inv_std"].dtype == np.float32


def test_layer_normalization_of_constants_folds() -> None:
    nodes = [N("LayerNormalization", ["c", "scale"], ["r", "m", "s"]), N("Identity", ["r"], ["y"]),
             N("Identity", ["m"], ["mean"]), N("Identity", ["s"], ["inv"])]
    model = make_model(nodes, {}, ["y", "mean", "inv"], {"c": data((3, 4), 16), "scale": data((4,), 17)}, opset=17)
    assert LayerKind.NORMALIZATION not in kinds(model)
    want = run_ort(model, {})
    values = {layer.name: layer.value for layer in plugnn.onnx.load(model).layers if layer.value is not None}
    for name in ("y", "mean", "inv"):
        (value,) = [v for k, v in values.items() if k.startswith(name)]
        np.testing.assert_allclose(value, want[name], rtol=1e-5, atol=1e-6)


def test_torch_layer_norm_below_opset_17(runtime: Any) -> None:
    """The decomposition torch exports at opset < 17 (the zoo's mlp_layernorm_op13, bert_tiny_op13)."""
    nodes = [N("ReduceMean", ["x"], ["mean"], axes=[-1]), N("Sub", ["x", "mean"], ["d"]),
             N("Pow", ["d", "two"], ["d2"]), N("ReduceMean", ["d2"], ["var"], axes=[-1]),
             N("Add", ["var", "eps"], ["ve"]), N("Sqrt", ["ve"], ["std"]), N("Div", ["d", "std"], ["n"]),
             N("Mul", ["n", "scale"], ["s"]), N("Add", ["s", "bias"], ["y"])]
    inits = {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32), "scale": data((16,), 18),
             "bias": data((16,), 19)}
    model = make_model(nodes, {"x": [2, 5, 16]}, ["y"], inits, opset=13)
    compare(runtime, model, {"x": data((2, 5, 16), 20)})


# ---- RMSNormalization ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, axis, scale_shape", [((2, 3, 8), -1, (8,)), ((2, 3, 8), 1, (3, 8)),
                                                      ((2, 3, 8), 0, (1, 8)), ((4, 6), -2, (4, 6))], ids=str)
def test_rms_normalization_matches_onnxruntime(runtime: Any, shape, axis: int, scale_shape) -> None:
    model = make_model([N("RMSNormalization", ["x", "scale"], ["y"], axis=axis, epsilon=1e-4)], {"x": list(shape)},
                       ["y"], {"scale": data(scale_shape, 21)}, opset=23)
    compare(runtime, model, {"x": data(shape, 22)})


# ---- GroupNormalization, InstanceNormalization ---------------------------------------------------------------


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((2, 6, 2, 3), 6), ((1, 4, 3, 3), 1), ((3, 8, 4), 2)],
                         ids=str)
def test_group_normalization_matches_onnxruntime(runtime: Any, shape, groups: int, opset: int) -> None:
    """Opset 18: Scale and B per group; 21: per channel."""
    size = groups if opset < 21 else shape[1]
    model = make_model([N("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=groups, epsilon=1e-4)],
                       {"x": list(shape)}, ["y"], {"scale": data((size,), 23), "bias": data((size,), 24)}, opset=opset)
    compare(runtime, model, {"x": data(shape, 25)})


def test_group_normalization_18_runtime_scale_is_spread_per_group(runtime: Any) -> None:
    model = make_model([N("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2)],
                       {"x": [2, 6, 3], "scale": [2], "bias": [2]}, ["y"], opset=18)
    compare(runtime, model, {"x": data((2, 6, 3), 26), "scale": data((2,), 27), "bias": data((2,), 28)})


@pytest.mark.parametrize("opset", [7, 22])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 4), (1, 2, 2, 3, 2)], ids=str)
def test_instance_normalization_matches_onnxruntime(runtime: Any, shape, opset: int) -> None:
    c = shape[1]
    model = make_model([N("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)], {"x": list(shape)}, ["y"],
                       {"s": data((c,), 29), "b": data((c,), 30)}, opset=opset)
    compare(runtime, model, {"x": data(shape, 31)})


# ---- LpNormalization, MeanVarianceNormalization ---------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 22])
@pytest.mark.parametrize("axis, p", [(-1, 2), (0, 2), (1, 1), (-1, 1)])
def test_lp_normalization_matches_onnxruntime(runtime: Any, axis: int, p: int, opset: int) -> None:
    model = make_model([N("LpNormalization", ["x"], ["y"], axis=axis, p=p)], {"x": [3, 4]}, ["y"], opset=opset)
    x = data((3, 4), 32)
    x[1] = 0  # a zero line gives 0
    compare(runtime, model, {"x": x})


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [-1]], ids=str)
def test_mean_variance_normalization_matches_onnxruntime(runtime: Any, axes, opset: int) -> None:
    attrs = {} if axes is None else {"axes": axes}
    model = make_model([N("MeanVarianceNormalization", ["x"], ["y"], **attrs)], {"x": [2, 3, 4, 5]}, ["y"],
                       opset=opset)
    compare(runtime, model, {"x": data((2, 3, 4, 5), 33)}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("node, inits, opset", [
    (N("GroupNormalization", ["c", "s", "b"], ["r"], num_groups=2),
     {"c": data((2, 4, 3), 34), "s": data((2,), 35), "b": data((2,), 36)}, 18),
    (N("InstanceNormalization", ["c", "s", "b"], ["r"]), {"c": data((2, 4, 3), 37), "s": data((4,), 38),
                                                          "b": data((4,), 39)}, 13),
    (N("LpNormalization", ["c"], ["r"], p=1), {"c": data((2, 4), 40)}, 13),
    (N("MeanVarianceNormalization", ["c"], ["r"], axes=[1]), {"c": data((2, 4), 41)}, 13),
    (N("RMSNormalization", ["c", "s"], ["r"]), {"c": data((2, 4), 42), "s": data((4,), 43)}, 23),
], ids=lambda v: v.op_type if hasattr(v, "op_type") else None)
def test_constant_normalizations_fold(node, inits, opset) -> None:  # type: ignore[no-untyped-def]
    model = make_model([node, N("Identity", ["r"], ["y"])], {}, ["y"], inits, opset=opset)
    assert LayerKind.NORMALIZATION not in kinds(model) and LayerKind.REDUCE not in kinds(model)
    want = run_ort(model, {})["y"]
    (value,) = [layer.value for layer in plugnn.onnx.load(model).layers
                if layer.value is not None and layer.value.shape == want.shape]
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


# ---- errors ------------------------------------------------------------------------------------------------


def _load_error(nodes: list[Any], inputs: dict[str, Any], inits: dict[str, Any] | None = None, opset: int = 17) -> str:
    consumed = {i for node in nodes for i in node.input}
    outputs = [o for node in nodes for o in node.output if o and o not in consumed]
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(make_model(nodes, inputs, outputs, inits, opset=opset))
    return str(info.value)


def w(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


ERRORS = [
    ([N("LayerNormalization", ["x", "s"], ["y"], name="ln", axis=3)], {"x": [2, 3]}, {"s": w(3)}, 17,
     "node 'ln' (#0, LayerNormalization): attribute 'axis' = 3 is out of range for rank 2"),
    ([N("LayerNormalization", ["x", "s"], ["y"], name="ln", epsilon=-1.0)], {"x": [2, 3]}, {"s": w(3)}, 17,
     "attribute 'epsilon' = -1.0 is not supported; supported: a finite number >= 0"),
    ([N("LayerNormalization", ["x", "s"], ["y"], name="ln", stash_type=7)], {"x": [2, 3]}, {"s": w(3)}, 17,
     "attribute 'stash_type' = '7 (int64)' is not supported; supported: a float type"),
    ([N("LayerNormalization", ["x", "s"], ["y"], name="ln")], {"x": [2, 3]}, {"s": w(4)}, 17,
     "node 'ln' (#0, LayerNormalization): input 1 (Scale) of shape [4] does not broadcast to X's shape [2, 3]"),
    ([N("LayerNormalization", ["x", "s"], ["y"], name="ln")], {"x": [2, 3]}, {"s": w(3).astype(np.float64)}, 17,
     "input 1 (Scale) has element type float64, input 0 (X) float32; they must be the same"),
    ([N("LayerNormalization", ["x", "s"], ["y"], name="ln")], {"x": ([2, 3], TensorProto.INT32)}, {"s": w(3)}, 17,
     "input 0 (X) has element type int32; LayerNormalization takes float types"),
    ([N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn")], {"x": [2, 4, 3]}, {"s": w(2), "b": w(2)}, 18,
     "node 'gn' (#0, GroupNormalization): attribute 'num_groups' is required"),
    ([N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=3)], {"x": [2, 4, 3]},
     {"s": w(3), "b": w(3)}, 18, "attribute 'num_groups' = 3 is not supported; supported: a divisor of the 4 channels"),
    ([N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2)], {"x": [2, 4, 3]},
     {"s": w(4), "b": w(4)}, 18,
     "input 1 (scale) has shape [4]; GroupNormalization at opset 18 takes it per group: [num_groups] = [2]"),
    ([N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2)], {"x": [2, 4, 3]},
     {"s": w(2), "b": w(2)}, 21,
     "input 1 (scale) has shape [2]; GroupNormalization at opset 21 takes it per channel: [C] = [4]"),
    ([N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2, stash_type=1)], {"x": [2, 4, 3]},
     {"s": w(2), "b": w(2)}, 18, "attribute 'stash_type' exists from opset 21"),
    ([N("InstanceNormalization", ["x", "s", "b"], ["y"], name="in")], {"x": [2, 4, 3]}, {"s": w(4), "b": w(3)}, 13,
     "node 'in' (#0, InstanceNormalization): input 2 (B) has shape [3]"),
    ([N("InstanceNormalization", ["x", "s", "b"], ["y"], name="in")], {"x": [4]}, {"s": w(4), "b": w(4)}, 13,
     "input 0 has shape [4]; InstanceNormalization takes [N, C, ...] (rank >= 2)"),
    ([N("LpNormalization", ["x"], ["y"], name="lp", p=3)], {"x": [2, 3]}, {}, 13,
     "node 'lp' (#0, LpNormalization): attribute 'p' = 3 is not supported; supported: 1, 2"),
    ([N("LpNormalization", ["x"], ["y"], name="lp", axis=-3)], {"x": [2, 3]}, {}, 13,
     "attribute 'axis' = -3 is out of range for rank 2"),
    ([N("MeanVarianceNormalization", ["x"], ["y"], name="mvn")], {"x": [2, 3]}, {}, 13,
     "node 'mvn' (#0, MeanVarianceNormalization): axes [0, 2, 3]: 2 is out of range for rank 2"),
    ([N("RMSNormalization", ["x", "s"], ["y"], name="rms", axis=2)], {"x": [2, 3]}, {"s": w(3)}, 23,
     "node 'rms' (#0, RMSNormalization): attribute 'axis' = 2 is out of range for rank 2"),
    ([N("RMSNormalization", ["x", "s"], ["y"], name="rms", foo=2)], {"x": [2, 3]}, {"s": w(3)}, 23,
     "attribute 'foo' is not supported by plugnn's RMSNormalization import; supported attributes: axis, epsilon, "
     "stash_type"),
]


@pytest.mark.parametrize("nodes, inputs, inits, opset, message", ERRORS)
def test_errors_name_node_operator_and_attribute(nodes, inputs, inits, opset, message) -> None:  # type: ignore[no-untyped-def]
    assert message in _load_error(nodes, inputs, inits, opset)
