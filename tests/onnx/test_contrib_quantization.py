"""onnxruntime's com.microsoft quantized operators (the QOperator format and dynamic quantization
its quantizer writes) against onnxruntime on small models built with onnx.helper, seeded inputs.

Integer outputs are compared in quantization steps: 0 where onnxruntime's kernel and plugnn's
nodes round the same float32 values (QLinearMul, QLinearGlobalAveragePool, QLinearLeakyRelu,
QLinearConcat, QLinearWhere, QGemm, Q/DQ), at most 1 where onnxruntime fuses a multiply-add
(QLinearAdd's AVX2 kernel), sums in another order (QLinearAveragePool) or approximates
(QLinearSigmoid's MLAS logistic, QLinearSoftmax's exponential table); float outputs at
rtol 1e-5 / atol 1e-5 of the output's range. See docs/onnx.md."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.errors import ModelError

MS = "com.microsoft"
U8, I8, F32, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT, TensorProto.INT32
NP = {U8: np.uint8, I8: np.int8}


def model(nodes: list, inputs: dict[str, tuple[list[int], int]], outputs: list[str],
          inits: dict[str, np.ndarray] | None = None) -> Any:
    graph = helper.make_graph(nodes, "qops", [helper.make_tensor_value_info(n, e, s) for n, (s, e) in inputs.items()],
                              [helper.make_empty_tensor_value_info(n) for n in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                             ir_version=8)


def node(op_type: str, inputs: list[str], outputs: list[str], **attrs: Any) -> Any:
    return helper.make_node(op_type, inputs, outputs, domain=MS, name=op_type.lower(), **attrs)


def q(shape: tuple[int, ...], elem: int, seed: int) -> np.ndarray:
    """Random values of the element type; int8 ones keep to 7 bits (onnxruntime's reduce_range):
    on a CPU without VNNI, onnxruntime's uint8 x int8 kernels sum pairs of products into int16
    with saturation (vpmaddubsw), which full-range int8 values overflow, and the oracle is then
    wrong."""
    info = np.iinfo(NP[elem])
    low, high = (-64, 64) if elem == I8 else (info.min, info.max + 1)
    return np.random.default_rng(seed).integers(low, high, shape).astype(NP[elem])


def zp(elem: int, value: int) -> np.ndarray:
    return np.asarray(value if elem == U8 else value - 128, NP[elem])


def run_both(m: Any, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    data = m.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = plugnn.InferenceSession(data).run(None, feeds)
    assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in want]
    return got, want


def steps(m: Any, feeds: dict[str, np.ndarray]) -> int:
    """The largest difference in quantization steps over the (integer) outputs."""
    got, want = run_both(m, feeds)
    return max(int(np.abs(g.astype(np.int64) - w.astype(np.int64)).max(initial=0)) for g, w in zip(got, want))


# ---- QuantizeLinear, DequantizeLinear --------------------------------------------------------------


@pytest.mark.parametrize("elem", [U8, I8, TensorProto.UINT16, TensorProto.INT16])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_dequantize(elem: int, per_axis: bool) -> None:
    dtype = {U8: np.uint8, I8: np.int8, TensorProto.UINT16: np.uint16, TensorProto.INT16: np.int16}[elem]
    scale = np.asarray([0.02, 0.05, 0.011], np.float32) if per_axis else np.float32(0.03)
    zero = np.asarray([3, 7, 1], dtype) if per_axis else dtype(5)
    if np.dtype(dtype).itemsize == 2:
        scale = scale / np.float32(200)
    m = model([node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
               node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)],
              {"x": ([2, 3, 5], F32)}, ["q", "y"], {"s": scale, "z": zero})
    x = np.random.default_rng(1).standard_normal((2, 3, 5)).astype(np.float32) * 3
    x[0, 0, :3] = [np.float32(scale.flat[0]) * 2.5, np.float32(scale.flat[0]) * -0.5, 1e6]  # halves, saturation
    got, want = run_both(m, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_int4_quantize_refused_naming_the_node() -> None:
    m = model([node("QuantizeLinear", ["x", "s", "z"], ["q"])], {"x": ([4], F32)}, ["q"],
              {"s": np.float32(0.1)})
    m.graph.initializer.append(helper.make_tensor("z", TensorProto.INT4, [], [0]))
    with pytest.raises(ModelError, match="node 'quantizelinear'.*y_zero_point.*int4"):
        plugnn.InferenceSession(m.SerializeToString()).run(None, {"x": np.zeros(4, np.float32)})


# ---- QLinearAdd, QLinearMul ------------------------------------------------------------------------


@pytest.mark.parametrize("op_type, allowed", [("QLinearAdd", 1), ("QLinearMul", 0)])
@pytest.mark.parametrize("elem", [U8, I8])
@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4, 5), (2, 3, 4, 5)), ((2, 3, 4, 5), (1, 3, 1, 1)),
                                              ((2, 3, 4, 5), ()), ((5,), (2, 3, 4, 5))])
def test_qlinear_binary(op_type: str, allowed: int, elem: int, a_shape: tuple, b_shape: tuple) -> None:
    inits = {"as": np.float32(0.031), "az": zp(elem, 121), "bs": np.float32(0.047), "bz": zp(elem, 140),
             "cs": np.float32(0.05 if op_type == "QLinearAdd" else 0.09), "cz": zp(elem, 128)}
    m = model([node(op_type, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"])],
              {"a": (list(a_shape), elem), "b": (list(b_shape), elem)}, ["c"], inits)
    assert steps(m, {"a": q(a_shape, elem, 1), "b": q(b_shape, elem, 2)}) <= allowed


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_without_zero_points_and_runtime_scales(op_type: str) -> None:
    # onnxruntime's type inference refuses an absent A or B zero point; C's may be left out.
    m = model([node(op_type, ["a", "as", "az", "b", "bs", "bz", "cs"], ["c"])],
              {"a": ([3, 8], U8), "b": ([3, 8], U8), "as": ([], F32), "bs": ([], F32), "cs": ([], F32),
               "az": ([], U8), "bz": ([], U8)}, ["c"])
    f = np.float32
    feeds = {"a": q((3, 8), U8, 3), "b": q((3, 8), U8, 4), "as": np.asarray(f(0.01)), "bs": np.asarray(f(0.02)),
             "cs": np.asarray(f(1.5)), "az": np.asarray(0, np.uint8), "bz": np.asarray(9, np.uint8)}
    assert steps(m, feeds) <= (1 if op_type == "QLinearAdd" else 0)


def test_qlinear_add_one_step_at_most_over_many_values() -> None:
    # 64k values: the FMA onnxruntime's AVX2 kernel uses shifts at most a rounding boundary.
    elem = U8
    a, b = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8))
    inits = {"as": np.float32(0.0217), "az": zp(elem, 117), "bs": np.float32(0.0389), "bz": zp(elem, 133),
             "cs": np.float32(0.0571), "cz": zp(elem, 125)}
    m = model([node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"])],
              {"a": ([256, 256], elem), "b": ([256, 256], elem)}, ["c"], inits)
    got, want = run_both(m, {"a": a, "b": b})
    diff = np.abs(got[0].astype(int) - want[0].astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.999


# ---- pooling ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("elem", [U8, I8])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(elem: int, channels_last: int) -> None:
    shape = (2, 5, 6, 3) if channels_last else (2, 3, 5, 6)
    inits = {"xs": np.float32(0.07), "xz": zp(elem, 100), "ys": np.float32(0.021), "yz": zp(elem, 120)}
    m = model([node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], channels_last=channels_last)],
              {"x": (list(shape), elem)}, ["y"], inits)
    assert steps(m, {"x": q(shape, elem, 5)}) == 0


@pytest.mark.parametrize("elem", [U8, I8])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
                                   dict(kernel_shape=[2, 3], ceil_mode=1, strides=[2, 2]),
                                   dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", channels_last=1)])
def test_qlinear_average_pool(elem: int, attrs: dict) -> None:
    shape = (2, 7, 8, 3) if attrs.get("channels_last") else (2, 3, 7, 8)
    inits = {"xs": np.float32(0.05), "xz": zp(elem, 110), "ys": np.float32(0.04), "yz": zp(elem, 130)}
    m = model([node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], **attrs)],
              {"x": (list(shape), elem)}, ["y"], inits)
    assert steps(m, {"x": q(shape, elem, 6)}) <= 1


# ---- table-driven activations ---------------------------------------------------------------------


@pytest.mark.parametrize("elem", [U8, I8])
@pytest.mark.parametrize("op_type, attrs, allowed", [("QLinearSigmoid", {}, 1), ("QLinearLeakyRelu", {"alpha": 0.1}, 0),
                                                      ("QLinearLeakyRelu", {}, 0)])
def test_qlinear_activations(elem: int, op_type: str, attrs: dict, allowed: int) -> None:
    # Every one of the 256 input values.
    inits = {"xs": np.float32(0.043), "xz": zp(elem, 131), "ys": np.float32(0.0041 if op_type == "QLinearSigmoid"
                                                                              else 0.037), "yz": zp(elem, 20)}
    m = model([node(op_type, ["x", "xs", "xz", "ys", "yz"], ["y"], **attrs)], {"x": ([256], elem)}, ["y"], inits)
    x = np.arange(256, dtype=np.int64).astype(NP[elem]) if elem == U8 else np.arange(-128, 128).astype(np.int8)
    assert steps(m, {"x": x}) <= allowed


@pytest.mark.parametrize("elem", [U8, I8])
@pytest.mark.parametrize("opset, axis", [(13, -1), (13, 1), (11, 1), (11, 2)])
def test_qlinear_softmax(elem: int, opset: int, axis: int) -> None:
    inits = {"xs": np.float32(0.08), "xz": zp(elem, 128), "ys": np.float32(1 / 256),
             "yz": np.asarray(0 if elem == U8 else -128, NP[elem])}
    m = model([node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], opset=opset, axis=axis)],
              {"x": ([2, 3, 4, 6], elem)}, ["y"], inits)
    assert steps(m, {"x": q((2, 3, 4, 6), elem, 7)}) <= 1


# ---- QLinearConcat, QLinearWhere -------------------------------------------------------------------


@pytest.mark.parametrize("elem", [U8, I8])
def test_qlinear_concat(elem: int) -> None:
    inits = {"ys": np.float32(0.05), "yz": zp(elem, 128), "s0": np.float32(0.05), "z0": zp(elem, 128),
             "s1": np.float32(0.021), "z1": zp(elem, 90), "s2": np.float32(0.13), "z2": zp(elem, 140)}
    m = model([node("QLinearConcat", ["ys", "yz", "x0", "s0", "z0", "x1", "s1", "z1", "x2", "s2", "z2"], ["y"],
                    axis=1)],
              {"x0": ([2, 3, 4], elem), "x1": ([2, 5, 4], elem), "x2": ([2, 1, 4], elem)}, ["y"], inits)
    feeds = {f"x{i}": q((2, c, 4), elem, 10 + i) for i, c in enumerate((3, 5, 1))}
    assert steps(m, feeds) == 0


def test_qlinear_where() -> None:
    elem = U8
    inits = {"xs": np.float32(0.03), "xz": zp(elem, 100), "ys": np.float32(0.07), "yz": zp(elem, 140),
             "zs": np.float32(0.05), "zz": zp(elem, 128)}
    m = model([node("QLinearWhere", ["c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"], ["z"])],
              {"c": ([3, 4], TensorProto.BOOL), "x": ([3, 4], elem), "y": ([4], elem)}, ["z"], inits)
    feeds = {"c": np.random.default_rng(3).random((3, 4)) > 0.5, "x": q((3, 4), elem, 8), "y": q((4,), elem, 9)}
    assert steps(m, feeds) == 0


# ---- QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul -------------------------------------------


@pytest.mark.parametrize("a_elem, b_elem", [(U8, I8), (U8, U8)])  # onnxruntime's QGemm has no s8 A
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("trans_b, alpha, bias, out", [(0, 1.0, True, "q"), (1, 1.0, True, "q"), (1, 0.5, False, "q"),
                                                        (1, 1.0, True, "float")])
def test_qgemm(a_elem: int, b_elem: int, per_column: bool, trans_b: int, alpha: float, bias: bool, out: str) -> None:
    m_, k, n = 5, 17, 6
    rng = np.random.default_rng(11)
    b_shape = (n, k) if trans_b else (k, n)
    inits: dict[str, np.ndarray] = {
        "as": np.float32(0.023), "az": zp(a_elem, 119), "B": q(b_shape, b_elem, 12),
        "bs": (rng.uniform(0.002, 0.01, n).astype(np.float32) if per_column else np.float32(0.006)),
        "bz": (np.asarray([zp(b_elem, 128 + d) for d in range(n)], NP[b_elem]) if per_column else zp(b_elem, 128))}
    inputs = ["A", "as", "az", "B", "bs", "bz", "C" if bias else ""]
    if bias:
        inits["C"] = rng.integers(-2000, 2000, n).astype(np.int32)
    if out == "q":
        inits.update(ys=np.float32(0.09), yz=zp(U8, 125))
        inputs += ["ys", "yz"]
    mdl = model([node("QGemm", inputs, ["Y"], transB=trans_b, alpha=alpha)], {"A": ([m_, k], a_elem)}, ["Y"], inits)
    feeds = {"A": q((m_, k), a_elem, 13)}
    if out == "q":
        assert steps(mdl, feeds) == 0
    else:
        got, want = run_both(mdl, feeds)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_qgemm_trans_a_runtime_b() -> None:
    inits = {"as": np.float32(0.02), "az": zp(U8, 128), "bs": np.float32(0.01), "bz": zp(I8, 128),
             "ys": np.float32(0.05), "yz": zp(U8, 128)}
    m = model([node("QGemm", ["A", "as", "az", "B", "bs", "bz", "", "ys", "yz"], ["Y"], transA=1)],
              {"A": ([7, 4], U8), "B": ([7, 3], I8)}, ["Y"], inits)
    assert steps(m, {"A": q((7, 4), U8, 14), "B": q((7, 3), I8, 15)}) == 0


@pytest.mark.parametrize("a_elem, b_elem", [(U8, I8), (I8, I8), (U8, U8)])
@pytest.mark.parametrize("per_column, bias", [(False, False), (True, True)])
def test_matmul_integer_to_float(a_elem: int, b_elem: int, per_column: bool, bias: bool) -> None:
    rng = np.random.default_rng(16)
    inits = {"B": q((9, 4), b_elem, 17), "as": np.float32(0.013),
             "bs": rng.uniform(0.01, 0.02, 4).astype(np.float32) if per_column else np.float32(0.017),
             "az": zp(a_elem, 120), "bz": np.asarray([zp(b_elem, 126 + i) for i in range(4)], NP[b_elem])
             if per_column else zp(b_elem, 131)}
    inputs = ["A", "B", "as", "bs", "az", "bz"]
    if bias:
        inits["bias"] = rng.standard_normal(4).astype(np.float32)
        inputs.append("bias")
    m = model([node("MatMulIntegerToFloat", inputs, ["Y"])], {"A": ([2, 3, 9], a_elem)}, ["Y"], inits)
    got, want = run_both(m, {"A": q((2, 3, 9), a_elem, 18)})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("b_elem", [U8, I8])
@pytest.mark.parametrize("per_column, zero, bias", [(False, False, False), (True, True, True), (False, True, True)])
def test_dynamic_quantize_matmul(b_elem: int, per_column: bool, zero: bool, bias: bool) -> None:
    rng = np.random.default_rng(19)
    inits = {"B": q((16, 8), b_elem, 20),
             "bs": rng.uniform(0.01, 0.02, 8).astype(np.float32) if per_column else np.float32(0.015)}
    inputs = ["A", "B", "bs"]
    if zero or bias:
        inputs.append("bz" if zero else "")
        if zero:
            inits["bz"] = (np.asarray([zp(b_elem, 120 + i) for i in range(8)], NP[b_elem]) if per_column
                           else zp(b_elem, 128))
    if bias:
        inits["bias"] = rng.standard_normal(8).astype(np.float32)
        inputs.append("bias")
    m = model([node("DynamicQuantizeMatMul", inputs, ["Y"])], {"A": ([3, 5, 16], F32)}, ["Y"], inits)
    a = rng.standard_normal((3, 5, 16)).astype(np.float32)
    got, want = run_both(m, {"A": a})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5 * float(np.abs(want[0]).max()))


# ---- malformed nodes -------------------------------------------------------------------------------


def _expect_error(nodes: list, inputs: dict, inits: dict, match: str) -> None:
    """The session (which imports at its first run: the outputs' shapes are not declared) refuses it."""
    m = model(nodes, inputs, [nodes[-1].output[0]], inits)
    feeds = {n: np.zeros(shape, helper.tensor_dtype_to_np_dtype(elem)) for n, (shape, elem) in inputs.items()}
    with pytest.raises(ModelError, match=match):
        plugnn.InferenceSession(m.SerializeToString()).run(None, feeds)
    assert plugnn.InferenceSession(model([helper.make_node("Identity", ["x"], ["y"])], {"x": ([2], F32)},
                                         ["y"]).SerializeToString()).run(None, {"x": np.ones(2, np.float32)})


def test_malformed_nodes_are_refused_naming_them() -> None:
    scalars = {"s": np.float32(0.1), "z": np.uint8(3), "zi": np.int8(3)}
    _expect_error([node("QLinearAdd", ["a", "s", "z", "b", "s", "z"], ["c"])],
                  {"a": ([4], U8), "b": ([4], U8)}, scalars, "qlinearadd.*C_scale")
    _expect_error([node("QLinearAdd", ["a", "s", "z", "b", "s", "zi", "s", "z"], ["c"])],
                  {"a": ([4], U8), "b": ([4], I8)}, scalars, "qlinearadd.*one type")
    _expect_error([node("QLinearMul", ["a", "s", "z", "b", "s", "z", "s", "z"], ["c"])],
                  {"a": ([4], F32), "b": ([4], U8)}, scalars, "qlinearmul.*float32.*uint8 or int8")
    _expect_error([node("QLinearAdd", ["a", "v", "z", "b", "s", "z", "s", "z"], ["c"])],
                  {"a": ([4], U8), "b": ([4], U8)}, {**scalars, "v": np.ones(4, np.float32)},
                  "qlinearadd.*A_scale.*shape \\[4\\]")
    _expect_error([node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "z"], ["y"])],
                  {"x": ([2, 3], U8)}, scalars, "qlinearglobalaveragepool.*rank 3")
    _expect_error([node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["y"])],
                  {"x": ([2, 3], U8)}, scalars, "qlinearsoftmax.*'opset'")
    _expect_error([node("QLinearConcat", ["s", "z", "x", "s"], ["y"], axis=0)],
                  {"x": ([2, 3], U8)}, scalars, "qlinearconcat.*per input")
    _expect_error([node("QGemm", ["a", "s", "z", "b", "s", "z", "c"], ["y"])],
                  {"a": ([2, 3], U8), "b": ([3, 4], U8), "c": ([4], F32)}, scalars, "qgemm.*C.*int32")
    _expect_error([node("QGemm", ["a", "s", "z", "b", "v", "z"], ["y"])],
                  {"a": ([2, 3], U8), "b": ([3, 4], U8)}, {**scalars, "v": np.ones(3, np.float32)},
                  "qgemm.*b_scale.*N = 4")
    _expect_error([node("DynamicQuantizeMatMul", ["a", "b", "s"], ["y"])],
                  {"a": ([2, 3], U8), "b": ([3, 4], U8)}, scalars, "dynamicquantizematmul.*A.*float32")


# ---- QAttention --------------------------------------------------------------------------------------


@pytest.mark.parametrize("input_elem, weight_elem", [(U8, I8), (U8, U8)])
@pytest.mark.parametrize("per_column, mask, unidirectional", [(False, False, 0), (True, True, 0), (False, False, 1)])
def test_qattention(input_elem: int, weight_elem: int, per_column: bool, mask: bool, unidirectional: int) -> None:
    rng = np.random.default_rng(21)
    batch, seq, hidden, heads = 2, 5, 16, 4
    inits: dict[str, np.ndarray] = {
        "w": q((hidden, 3 * hidden), weight_elem, 22), "bias": rng.standard_normal(3 * hidden).astype(np.float32),
        "xs": np.float32(0.02), "xz": zp(input_elem, 128),
        "ws": rng.uniform(0.01, 0.03, 3 * hidden).astype(np.float32) if per_column else np.float32(0.02),
        "wz": (np.asarray([zp(weight_elem, 120 + i % 9) for i in range(3 * hidden)], NP[weight_elem]) if per_column
               else zp(weight_elem, 128))}
    inputs = ["x", "w", "bias", "xs", "ws", "mask" if mask else "", "xz", "wz"]
    if mask:
        inits["mask"] = np.asarray([5, 3], np.int32)  # end positions: right padding
    m = model([node("QAttention", inputs, ["y"], num_heads=heads, unidirectional=unidirectional)],
              {"x": ([batch, seq, hidden], input_elem)}, ["y"], inits)
    got, want = run_both(m, {"x": q((batch, seq, hidden), input_elem, 23)})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


def test_qattention_with_past() -> None:
    rng = np.random.default_rng(24)
    inits = {"w": q((8, 24), I8, 25), "bias": rng.standard_normal(24).astype(np.float32), "xs": np.float32(0.03),
             "ws": np.float32(0.02), "xz": zp(U8, 128), "wz": zp(I8, 128)}
    m = model([node("QAttention", ["x", "w", "bias", "xs", "ws", "", "xz", "wz", "past"], ["y", "present"],
                    num_heads=2)],
              {"x": ([1, 3, 8], U8), "past": ([2, 1, 2, 4, 4], F32)}, ["y", "present"], inits)
    feeds = {"x": q((1, 3, 8), U8, 26), "past": rng.standard_normal((2, 1, 2, 4, 4)).astype(np.float32)}
    got, want = run_both(m, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_qattention_malformed() -> None:
    inits = {"w": q((8, 24), I8, 25), "bias": np.zeros(20, np.float32), "s": np.float32(0.1)}
    _expect_error([node("QAttention", ["x", "w", "bias", "s", "s"], ["y"], num_heads=2)],
                  {"x": ([1, 3, 8], U8)}, inits, "qattention.*bias.*\\[24\\]")
    _expect_error([node("QAttention", ["x", "w", "bias", "s", "s"], ["y"], num_heads=2)],
                  {"x": ([1, 3, 8], F32)}, inits, "qattention.*input.*uint8 or int8")


def test_dynamic_quantize_lstm_malformed() -> None:
    inits = {"W": q((1, 6, 20), I8, 1), "R": q((1, 5, 20), I8, 2), "s": np.ones(1, np.float32),
             "z": np.zeros(1, np.int8), "s3": np.ones(3, np.float32)}
    names = ["x", "W", "R", "", "", "", "", "", "s", "z", "s", "z"]
    _expect_error([node("DynamicQuantizeLSTM", names, ["y"], hidden_size=4)],
                  {"x": ([3, 1, 6], F32)}, inits, "dynamicquantizelstm.*W.*4 \\* hidden_size = 16")
    _expect_error([node("DynamicQuantizeLSTM", names[:8] + ["s3", "z", "s", "z"], ["y"], hidden_size=5)],
                  {"x": ([3, 1, 6], F32)}, inits, "dynamicquantizelstm.*W_scale.*\\[1\\] or \\[1, 20\\]")
    _expect_error([node("DynamicQuantizeLSTM", names[:10], ["y"], hidden_size=5)],
                  {"x": ([3, 1, 6], F32)}, inits, "dynamicquantizelstm.*R_scale.*absent")


# ---- QEmbedLayerNormalization ------------------------------------------------------------------------


@pytest.mark.parametrize("elem", [U8, I8])
@pytest.mark.parametrize("segments, mask", [(True, True), (False, False)])
def test_qembed_layer_normalization(elem: int, segments: bool, mask: bool) -> None:
    hidden, vocab, positions = 8, 11, 6
    inits: dict[str, np.ndarray] = {
        "word": q((vocab, hidden), elem, 30), "pos": q((positions, hidden), elem, 31), "gamma": q((hidden,), elem, 32),
        "beta": q((hidden,), elem, 33), "ws": np.float32(0.01), "ps": np.float32(0.02), "gs": np.float32(0.008),
        "bs": np.float32(0.003), "wz": zp(elem, 128), "pz": zp(elem, 120), "gz": zp(elem, 60), "bz": zp(elem, 128)}
    if segments:
        inits.update(seg=q((2, hidden), elem, 34), ss=np.float32(0.015), sz=zp(elem, 130))
    names = ["ids", "segs" if segments else "", "word", "pos", "seg" if segments else "", "gamma", "beta",
             "mask" if mask else "", "ws", "ps", "ss" if segments else "", "gs", "bs", "wz", "pz",
             "sz" if segments else "", "gz", "bz"]
    inputs: dict[str, tuple[list[int], int]] = {"ids": ([2, 5], I32)}
    if segments:
        inputs["segs"] = ([2, 5], I32)
    if mask:
        inputs["mask"] = ([2, 5], I32)
    m = model([node("QEmbedLayerNormalization", names, ["y", "mask_index"], epsilon=1e-5)], inputs,
              ["y", "mask_index"], inits)
    rng = np.random.default_rng(35)
    feeds = {"ids": rng.integers(0, vocab, (2, 5)).astype(np.int32)}
    if segments:
        feeds["segs"] = rng.integers(0, 2, (2, 5)).astype(np.int32)
    if mask:
        feeds["mask"] = np.asarray([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    got, want = run_both(m, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])


def test_qembed_layer_normalization_malformed() -> None:
    inits = {"w": q((4, 8), U8, 1), "g": q((8,), U8, 2), "s": np.float32(0.1), "z": np.uint8(3)}
    names = ["ids", "", "w", "w", "w", "g", "g", "", "s", "s", "", "s", "s", "z", "z", "", "z", "z"]
    _expect_error([node("QEmbedLayerNormalization", names, ["y"])], {"ids": ([1, 3], I32)}, inits,
                  "qembedlayernormalization.*segment_embedding.*together")


def test_quantize_dequantize_float16() -> None:
    m = model([node("QuantizeLinear", ["x", "s", "z"], ["q"]), node("DequantizeLinear", ["q", "s", "z"], ["y"])],
              {"x": ([2, 3, 5], TensorProto.FLOAT16)}, ["q", "y"], {"s": np.float16(0.03), "z": np.uint8(5)})
    x = (np.random.default_rng(1).standard_normal((2, 3, 5)) * 3).astype(np.float16)
    got, want = run_both(m, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
