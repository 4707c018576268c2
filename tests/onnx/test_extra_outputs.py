"""The extra outputs the importer builds from existing layers: Dropout's mask, MaxPool's Indices,
BatchNormalization's training-mode outputs; against onnxruntime (and ONNX's reference where
onnxruntime has no kernel), each on plugnn.onnx.load + CpuRef.

Tolerances: indices and masks exactly; MaxPool values exactly (a maximum is one of the inputs);
training-mode BatchNormalization at rtol 1e-5, atol 1e-6 (float32 reductions in another order).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import plugnn.onnx
from plugnn.errors import ModelError

from conftest import make_model, run_ort, run_plugnn

N = helper.make_node


def _pool_model(x_shape: list[int], opset: int = 12, dtype: int = TensorProto.FLOAT, **attrs: Any) -> Any:
    node = N("MaxPool", ["x"], ["y", "i"], **attrs)
    return make_model([node], {"x": (x_shape, dtype)}, ["y", "i"], opset=opset)


POOLS = [
    ([1, 2, 9], {"kernel_shape": [3], "strides": [2]}),
    ([1, 2, 9], {"kernel_shape": [2], "pads": [1, 1], "dilations": [2]}),
    ([2, 3, 7, 6], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([2, 3, 7, 6], {"kernel_shape": [3, 2], "strides": [2, 1], "storage_order": 1}),
    ([1, 2, 8, 8], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "pads": [0, 0, 1, 1]}),
    ([1, 2, 7, 7], {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [1, 2]}),
    ([1, 2, 6, 6], {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2], "storage_order": 1}),
    ([1, 2, 4, 5, 6], {"kernel_shape": [2, 2, 3], "strides": [2, 2, 2], "pads": [1, 0, 1, 0, 1, 1]}),
    ([1, 2, 4, 5, 6], {"kernel_shape": [2, 2, 2], "storage_order": 1}),
]


@pytest.mark.parametrize("shape,attrs", POOLS)
def test_maxpool_indices_match_onnxruntime(runtime: Any, shape: list[int], attrs: dict[str, Any]) -> None:
    model = _pool_model(shape, **attrs)
    x = np.random.default_rng(len(shape) * 7 + len(attrs)).standard_normal(shape).astype(np.float32)
    got = run_plugnn(runtime, model, {"x": x})
    want = run_ort(model, {"x": x})
    np.testing.assert_array_equal(got["y"], want["y"])
    assert got["i"].dtype == np.int64
    np.testing.assert_array_equal(got["i"], want["i"])


@pytest.mark.parametrize("dtype", [TensorProto.INT8, TensorProto.UINT8, TensorProto.FLOAT16, TensorProto.DOUBLE])
def test_maxpool_indices_other_types_and_ties(runtime: Any, dtype: int) -> None:
    """Ties (small integers) resolve to the first maximum in ONNX's scan order; the padding never
    wins, even where every element in the window is the type's lowest value."""
    model = _pool_model([1, 2, 6, 6], dtype=dtype, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    x = np.random.default_rng(3).integers(0, 3, (1, 2, 6, 6)).astype(np_type)
    if np.dtype(np_type).kind in "iu":
        x[0, 0, :2, :2] = np.iinfo(np_type).min
    got = run_plugnn(runtime, model, {"x": x})
    want = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_array_equal(got["y"], want[0])
    np.testing.assert_array_equal(got["i"], want[1])


@pytest.mark.parametrize("opset,training,ratio", [(12, None, None), (13, False, 0.3), (13, True, 0.0),
                                                  (10, None, None)])
def test_dropout_mask(runtime: Any, opset: int, training: bool | None, ratio: float | None) -> None:
    inits: dict[str, np.ndarray] = {}
    inputs = ["x"]
    if ratio is not None:
        inits["r"] = np.array(ratio, np.float32)
        inputs.append("r")
    if training is not None:
        inits["t"] = np.array(training)
        inputs.append("t")
    model = make_model([N("Dropout", inputs, ["y", "mask"])], {"x": [2, 3, 4]}, ["y", "mask"], inits, opset=opset)
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    got = run_plugnn(runtime, model, {"x": x})
    if opset >= 12:
        want = run_ort(model, {"x": x})
    else:  # onnxruntime's Dropout-10 returns a mask of zeros; ONNX's definition (and reference) ones
        want = dict(zip(["y", "mask"], ReferenceEvaluator(model).run(None, {"x": x})))
    np.testing.assert_array_equal(got["y"], want["y"])
    assert got["mask"].dtype == np.bool_
    np.testing.assert_array_equal(got["mask"], want["mask"])


@pytest.mark.parametrize("shape,momentum", [([4, 3, 5, 2], 0.9), ([3, 2], 0.5), ([2, 3, 2, 2, 3], None)])
def test_batch_normalization_training_mode(runtime: Any, shape: list[int], momentum: float | None) -> None:
    c = shape[1]
    rng = np.random.default_rng(len(shape))
    inits = {"s": rng.uniform(0.5, 1.5, c).astype(np.float32), "b": rng.standard_normal(c).astype(np.float32),
             "m": rng.standard_normal(c).astype(np.float32), "v": rng.uniform(0.5, 2, c).astype(np.float32)}
    attrs = {"training_mode": 1, "epsilon": 1e-3}
    if momentum is not None:
        attrs["momentum"] = momentum
    node = N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], **attrs)
    model = make_model([node], {"x": shape}, ["y", "rm", "rv"], inits, opset=15)
    x = rng.standard_normal(shape).astype(np.float32) * 3 + 1
    got = run_plugnn(runtime, model, {"x": x})
    want = run_ort(model, {"x": x})
    for name in ("y", "rm", "rv"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_batch_normalization_training_mode_value_is_checked(runtime: Any) -> None:
    node = N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn", training_mode=2)
    ones = np.ones(2, np.float32)
    model = make_model([node], {"x": [1, 2, 3]}, ["y"], {"s": ones, "b": ones, "m": ones, "v": ones}, opset=15)
    with pytest.raises(ModelError, match=r"'bn'.*attribute 'training_mode' = 2 is not supported"):
        plugnn.onnx.load(model)
