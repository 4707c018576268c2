"""The FLOP count behind the benchmark's fraction of peak (scripts/bench/cases.py `flops`): a Conv
counts 2 FLOPs per product of a weight with an input element, not the products with its zero
padding, checked against a brute-force count over every output position and tap; Gemm and
MatMul count 2 * |output| * K."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper, shape_inference  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "scripts" / "bench"))
import cases  # noqa: E402


def conv_model(x: tuple[int, ...], w: tuple[int, ...], **attrs: object) -> onnx.ModelProto:
    node = helper.make_node("Conv", ["x", "w"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.zeros(w, np.float32), "w")])
    return shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def brute_force(model: onnx.ModelProto) -> int:
    """2 x the products of a weight with an input element, counted one by one."""
    shapes = cases._shapes(model)
    x, y, w = shapes["x"], shapes["y"], shapes["w"]
    node = model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    spatial = len(x) - 2
    strides = attrs.get("strides", [1] * spatial)
    dilations = attrs.get("dilations", [1] * spatial)
    pads = cases._conv_pads_begin(node, x, y, w)
    inside = 0
    for out in itertools.product(*(range(n) for n in y[2:])):
        for tap in itertools.product(*(range(k) for k in w[2:])):
            at = [o * s - p + t * d for o, s, p, t, d in zip(out, strides, pads, tap, dilations)]
            inside += all(0 <= a < n for a, n in zip(at, x[2:]))
    return 2 * y[0] * y[1] * w[1] * inside


@pytest.mark.parametrize("x, w, attrs", [
    ((1, 3, 9, 9), (4, 3, 3, 3), dict(pads=[1, 1, 1, 1])),
    ((2, 4, 14, 14), (6, 2, 3, 3), dict(pads=[12, 12, 12, 12], dilations=[12, 12], group=2)),  # ASPP-like
    ((1, 2, 11, 7), (3, 2, 5, 3), dict(pads=[2, 0, 1, 1], strides=[2, 3])),
    ((1, 2, 10, 10), (2, 2, 4, 4), dict(auto_pad="SAME_UPPER", strides=[3, 3])),
    ((1, 2, 10, 10), (2, 2, 4, 4), dict(auto_pad="SAME_LOWER", strides=[3, 3])),
    ((1, 2, 10, 10), (2, 2, 3, 3), dict(auto_pad="VALID")),
    ((1, 3, 40), (5, 3, 7), dict(pads=[3, 3], strides=[2])),
    ((1, 2, 5, 6, 7), (2, 2, 3, 3, 3), dict(pads=[1, 1, 1, 1, 1, 1])),
], ids=["3x3-pad1", "dilated-grouped", "strided-asymmetric", "same-upper", "same-lower", "valid", "1d", "3d"])
def test_conv_flops_count_products_with_the_input_only(x: tuple[int, ...], w: tuple[int, ...],
                                                        attrs: dict[str, object]) -> None:
    model = conv_model(x, w, **attrs)
    assert cases.flops(model) == brute_force(model)
    assert cases.imported_flops(model) == brute_force(model)  # the count over plugnn's import agrees


def test_padding_products_are_not_counted_but_the_rest_is() -> None:
    unpadded = conv_model((1, 3, 9, 9), (4, 3, 3, 3))
    padded = conv_model((1, 3, 9, 9), (4, 3, 3, 3), pads=[1, 1, 1, 1])
    assert cases.flops(unpadded) == 2 * 4 * 7 * 7 * 3 * 9           # every tap inside
    assert cases.flops(padded) == 2 * 4 * 3 * (9 * 3 - 2) ** 2     # per axis 9 outputs x 3 taps, 2 outside
    assert cases.flops(padded) < 2 * 4 * 9 * 9 * 3 * 9              # the nominal count


def test_matmul_and_gemm_count_output_times_k() -> None:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 5, 8])
    b = numpy_helper.from_array(np.zeros((8, 3), np.float32), "b")
    c = numpy_helper.from_array(np.zeros((4, 8), np.float32), "c")
    nodes = [helper.make_node("MatMul", ["a", "b"], ["m"]),
             helper.make_node("Reshape", ["a", "shape"], ["a2"]),
             helper.make_node("Gemm", ["a2", "c"], ["g"], transB=1)]
    shape = numpy_helper.from_array(np.array([10, 8], np.int64), "shape")
    graph = helper.make_graph(nodes, "g", [a], [helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
                                                helper.make_tensor_value_info("g", TensorProto.FLOAT, None)], [b, c, shape])
    model = shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert cases.flops(model) == 2 * (2 * 5 * 3) * 8 + 2 * (10 * 4) * 8
    assert cases.imported_flops(model) == cases.flops(model)


def test_shapes_onnx_inference_leaves_unknown_are_counted_from_the_import() -> None:
    """A MatMul after a Reshape to a shape computed at run time by an operator ONNX's shape
    inference does not propagate (Range): counted through plugnn's import (its shapes are static)."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [6, 4])
    w = numpy_helper.from_array(np.zeros((12, 5), np.float32), "w")
    consts = [numpy_helper.from_array(np.array(v, np.int64), n) for v, n in
              [(2, "start"), (14, "limit"), (10, "delta"), ([-1], "minus_one")]]
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),          # [2, 12]
             helper.make_node("Slice", ["r", "one", "two"], ["twelve"]),             # [12]
             helper.make_node("Concat", ["minus_one", "twelve"], ["shape"], axis=0),  # [-1, 12]
             helper.make_node("Reshape", ["a", "shape"], ["a2"]),                     # [2, 12]
             helper.make_node("MatMul", ["a2", "w"], ["y"])]
    consts += [numpy_helper.from_array(np.array([1], np.int64), "one"),
               numpy_helper.from_array(np.array([2], np.int64), "two")]
    graph = helper.make_graph(nodes, "g", [a], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [w, *consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(cases.UncountedWork):
        cases.flops(model)
    assert cases.imported_flops(model) == 2 * (2 * 5) * 12
