"""Small ONNX models with symbolic dims, built with onnx.helper for the session tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def cnn(seed: int = 0, image: int | str = "size") -> onnx.ModelProto:
    """image [N, 3, H, W] -> conv 3x3 (8) -> BatchNormalization -> relu -> global average pool
    -> flatten -> Gemm (4) -> softmax: probabilities [N, 4]. BN is folded by plugnn's optimizer."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    inits = [
        _init("w", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(f32)),
        _init("b", rng.standard_normal(8).astype(f32)),
        _init("scale", rng.uniform(0.5, 1.5, 8).astype(f32)),
        _init("shift", rng.standard_normal(8).astype(f32)),
        _init("mean", rng.standard_normal(8).astype(f32) * 0.1),
        _init("var", rng.uniform(0.5, 1.5, 8).astype(f32)),
        _init("fc_w", rng.standard_normal((4, 8)).astype(f32)),
        _init("fc_b", rng.standard_normal(4).astype(f32)),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"], name="bn"),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    spatial = image if isinstance(image, int) else image
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, spatial, spatial])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 4])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def two_inputs(seed: int = 1) -> onnx.ModelProto:
    """a [batch, 5] and b [batch, 5] (one symbol in both), w [5, 3]: y = relu(a + b) @ w,
    z = sigmoid(a) [batch, 5]."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w"], ["y"], name="matmul"),
        helper.make_node("Sigmoid", ["a"], ["z"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes, "two_inputs",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 5]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 5])],
        [_init("w", rng.standard_normal((5, 3)).astype(np.float32))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def strings() -> onnx.ModelProto:
    """text [2, 2] tensor(string) -> Identity -> same [2, 2]."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["text"], ["same"], name="identity")], "strings",
        [helper.make_tensor_value_info("text", TensorProto.STRING, [2, 2])],
        [helper.make_tensor_value_info("same", TensorProto.STRING, [2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def scaled(seed: int = 2, denotation: bool = True) -> onnx.ModelProto:
    """x [batch, 6] (the batch dim denoted DATA_BATCH) * w [6] + b [6] -> relu -> y [batch, 6];
    w and b are initializers, b also listed as a graph input (overridable, IR < 4 style)."""
    rng = np.random.default_rng(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])
    if denotation:
        x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    nodes = [helper.make_node("Mul", ["x", "w"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "scaled", [x, helper.make_tensor_value_info("b", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6])],
        [_init("w", rng.standard_normal(6).astype(np.float32)), _init("b", rng.standard_normal(6).astype(np.float32))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="plugnn-tests", doc_string="a scaled relu", model_version=3)
    helper.set_model_props(model, {"author": "tests/session/models.py"})
    onnx.checker.check_model(model)
    return model
