"""CpuAcc's quantization kinds (ops/quantization.c, ops/quantized_products.c over the integer GEMM
gemm/qgemm.h): QuantizeLinear / DequantizeLinear per tensor and per axis, QLinearMatMul /
MatMulInteger and QLinearConv / ConvInteger, int8 and uint8 on every side, per-tensor and
per-channel (per-row) scales and zero points. Each model is built with onnx.helper from a seed and
run on CpuAcc with every kernel set this machine has (the integer GEMM's micro-kernel: portable,
AVX2 vpmaddwd, AVX512-VNNI vpdpbusd) at one and three threads; each result is CpuRef's, bit for
bit (the integer sums are exact and the requantization is the same double arithmetic). A
QOperator model is compared with onnxruntime too, within one quantization step (onnxruntime
requantizes in float32, plugnn in double as ONNX's reference). What CpuAcc refuses runs on CpuRef,
the reason given."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
import plugnn.onnx
from plugnn.descriptors import LayerKind

from .common import BEST_ISA, HAVE_AMX, HAVE_CPUACC, ISA_ORDER

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

ort = pytest.importorskip("onnxruntime")

TP = TensorProto
ONNX_TYPE = {np.uint8: TP.UINT8, np.int8: TP.INT8, np.float32: TP.FLOAT}
ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
QUANTIZED_KINDS = {LayerKind.QUANTIZATION, LayerKind.QUANTIZED_MATMUL, LayerKind.QUANTIZED_CONVOLUTION}


@pytest.fixture(scope="module")
def runtimes() -> Iterator[dict[tuple[str, int], plugnn.Runtime]]:
    """A runtime per (kernel set, thread count): every kernel set at 1 and 3 threads, the avx512 set
    with its integer GEMM on AVX512-VNNI (amx 0) and, where the CPU has AMX-INT8, on AMX too."""
    rts = {(isa, n): plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa, "amx": 0}})
           for isa in ISAS for n in (1, 3)}
    if HAVE_AMX:
        rts.update({("avx512+amx", n): plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": "avx512"}})
                    for n in (1, 3)})
    yield rts
    for rt in rts.values():
        rt.close()


def make_model(nodes: list[Any], inputs: dict[str, np.ndarray], initializers: dict[str, np.ndarray],
               opset: int = 21) -> Any:
    graph_inputs = [helper.make_tensor_value_info(n, ONNX_TYPE[v.dtype.type], list(v.shape)) for n, v in inputs.items()]
    graph = helper.make_graph(nodes, "quantized", graph_inputs, [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run(rt: plugnn.Runtime, model: Any, feeds: dict[str, np.ndarray], backends: list[str]) -> tuple[np.ndarray, list[Any]]:
    optimized = plugnn.optimize(plugnn.onnx.load(model), rt, backends)
    with rt.load_network(optimized) as loaded:
        return np.array(loaded.run(feeds)["y"]), list(optimized.layers)


def check_cpuacc(runtimes: dict[tuple[str, int], plugnn.Runtime], model: Any, feeds: dict[str, np.ndarray],
                 kind: LayerKind) -> np.ndarray:
    """The model on CpuRef, then on CpuAcc (its `kind` layer placed there) with every kernel set
    and thread count: the same bits each time."""
    want, _ = run(runtimes[(ISAS[0], 1)], model, feeds, ["CpuRef"])
    for (isa, n), rt in runtimes.items():
        got, layers = run(rt, model, feeds, ["CpuAcc", "CpuRef"])
        placed = [layer.backend_id for layer in layers if layer.kind is kind]
        assert placed and set(placed) == {"CpuAcc"}, [(layer.kind, layer.backend_id) for layer in layers]
        assert got.dtype == want.dtype and got.shape == want.shape
        if got.tobytes() != want.tobytes():
            bad = np.flatnonzero(got.ravel().view(np.uint8) != want.ravel().view(np.uint8))
            np.testing.assert_array_equal(got, want, err_msg=f"isa={isa} threads={n}: {bad.size} bytes differ")
            raise AssertionError(f"isa={isa} threads={n}: the same values in other bits")
    return want


def ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


# ---- QuantizeLinear / DequantizeLinear --------------------------------------------------------


def special_floats(rng: np.random.Generator, shape: tuple[int, ...], scale: np.ndarray, axis: int | None) -> np.ndarray:
    """Values around the grid of `scale` (ties at k + 0.5 steps: round half to even), far outside
    the range (saturation), NaN and both infinities."""
    steps = rng.integers(-300, 300, shape) + rng.choice([0.0, 0.5, 0.25, -0.5, 0.49999], shape)
    s = scale if axis is None else scale.reshape([-1 if i == axis else 1 for i in range(len(shape))])
    x = (steps * s).astype(np.float32)
    flat = x.reshape(-1)
    flat[::17] = np.nan
    flat[5::23] = np.inf
    flat[7::29] = -np.inf
    flat[3::31] = 1e30
    return x


GRANULARITIES = [((1000,), None), ((3, 40, 5), 1), ((6, 33), 1), ((4, 7, 9), 0), ((2, 3, 64), 2), ((70001,), None)]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shape, axis", GRANULARITIES, ids=[f"{s}-axis{a}" for s, a in GRANULARITIES])
def test_quantize_linear_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime], shape: tuple[int, ...],
                                            axis: int | None, dtype: Any) -> None:
    rng = np.random.default_rng(len(shape) * 7 + (axis or 0))
    count = 1 if axis is None else shape[axis]
    scale = rng.uniform(0.01, 2.0, count).astype(np.float32)
    zero = ints(rng, (count,), dtype)
    if axis is None:
        scale, zero = scale.reshape(()), zero.reshape(())
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=axis if axis is not None else 1)
    x = special_floats(rng, shape, scale, axis)
    check_cpuacc(runtimes, make_model([node], {"x": x}, {"s": scale, "z": zero}), {"x": x}, LayerKind.QUANTIZATION)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shape, axis", GRANULARITIES, ids=[f"{s}-axis{a}" for s, a in GRANULARITIES])
def test_dequantize_linear_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime],
                                              shape: tuple[int, ...], axis: int | None, dtype: Any) -> None:
    rng = np.random.default_rng(len(shape) * 11 + (axis or 0))
    count = 1 if axis is None else shape[axis]
    scale = rng.uniform(0.001, 3.0, count).astype(np.float32)
    zero = ints(rng, (count,), dtype)
    if axis is None:
        scale, zero = scale.reshape(()), zero.reshape(())
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=axis if axis is not None else 1)
    x = ints(rng, shape, dtype)
    check_cpuacc(runtimes, make_model([node], {"x": x}, {"s": scale, "z": zero}), {"x": x}, LayerKind.QUANTIZATION)


@pytest.mark.parametrize("shape", [(0, 5), (1,), (7, 33), (3, 70001)])
@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros", "nan"])
def test_dynamic_quantize_linear_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime],
                                                   shape: tuple[int, ...], kind: str) -> None:
    """The range (NaN left out, 0 always in it), scale, zero point and y: CpuRef's bits, the
    scale and zero point outputs too (a Concat of the three as float32 is the graph's output)."""
    rng = np.random.default_rng(int(np.prod(shape)) + len(kind))
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if kind == "positive":
        x = np.abs(x) + 0.5
    elif kind == "negative":
        x = -np.abs(x) - 0.25
    elif kind == "zeros":
        x = np.zeros(shape, np.float32)
    elif kind == "nan" and x.size:
        x.reshape(-1)[::5] = np.nan
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
             helper.make_node("Cast", ["q"], ["qf"], to=TP.FLOAT), helper.make_node("Cast", ["qz"], ["zf"], to=TP.FLOAT),
             helper.make_node("Reshape", ["qf", "flat"], ["qr"]), helper.make_node("Reshape", ["qs", "one"], ["sr"]),
             helper.make_node("Reshape", ["zf", "one"], ["zr"]), helper.make_node("Concat", ["qr", "sr", "zr"], ["y"], axis=0)]
    model = make_model(nodes, {"x": x}, {"flat": np.array([-1], np.int64), "one": np.array([1], np.int64)})
    check_cpuacc(runtimes, model, {"x": x}, LayerKind.QUANTIZATION)


def test_a_dynamically_quantized_matmul_runs_on_cpuacc(runtimes: dict[tuple[str, int], plugnn.Runtime]) -> None:
    """What onnxruntime's quantize_dynamic writes for a MatMul: DynamicQuantizeLinear of the
    activations, MatMulInteger with constant uint8 weights and the run-time zero point, the float
    rescale: CpuRef's bits."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 20, 64)).astype(np.float32)
    inits = {"w": ints(rng, (64, 48), np.int8), "wz": np.int8(0), "ws": np.float32(0.01)}
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
             helper.make_node("MatMulInteger", ["q", "w", "qz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TP.FLOAT), helper.make_node("Mul", ["qs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    check_cpuacc(runtimes, make_model(nodes, {"x": x}, inits), {"x": x}, LayerKind.QUANTIZED_MATMUL)


# ---- QLinearMatMul / MatMulInteger --------------------------------------------------------------

# a's shape, N; sizes across the micro-tiles (8 x 32, 6 x 16, 4 x 16), the 96 x 256 C blocks and
# the K blocks (1024 k on VNNI, 512 on the others), K not a multiple of 4 or 2
MATMULS = [((1, 1), 1), ((5, 3), 7), ((37, 70), 45), ((2, 3, 17, 33), 40), ((130, 1100), 70), ((97, 65), 300),
           ((8, 64), 32)]
TYPE_COMBOS = [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8), (np.uint8, np.uint8, np.int8),
               (np.int8, np.uint8, np.uint8)]


def y_scale_for(x: np.ndarray, w: np.ndarray, scale: float) -> np.float32:
    """A y_scale that spreads the outputs of a product of the shifted operands x [..., K] and
    w [K, ...] over about 100 steps either side of the zero point (a few saturate)."""
    k = w.shape[0]
    rms = np.sqrt(k) * np.std(x) * np.std(w) + k * abs(np.mean(x) * np.mean(w))
    return np.float32(rms * scale / 100)


def qlinear_matmul_case(a_shape: tuple[int, ...], n: int, types: tuple[Any, Any, Any], per_column: bool,
                        per_row: bool, seed: int) -> tuple[Any, dict[str, np.ndarray]]:
    at, bt, yt = types
    rng = np.random.default_rng(seed)
    k, m = a_shape[-1], a_shape[-2] if len(a_shape) >= 2 else 1
    a = ints(rng, a_shape, at)
    b = ints(rng, (k, n), bt)
    scale_b = rng.uniform(0.002, 0.02, n if per_column else ()).astype(np.float32)
    zero_b = ints(rng, (n,) if per_column else (), bt)
    scale_a = rng.uniform(0.01, 0.05, (m,) if per_row else ()).astype(np.float32)
    zero_a = ints(rng, (m,) if per_row else (), at)
    inits = {"as": scale_a, "az": zero_a, "b": b, "bs": scale_b, "bz": zero_b, "yz": ints(rng, (), yt)}
    inits["ys"] = y_scale_for(a - zero_a.reshape(-1, 1).astype(np.int64) if per_row else a - zero_a.astype(np.int64),
                              b - zero_b.astype(np.int64), float(np.mean(scale_a) * np.mean(scale_b)))
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    return make_model([node], {"a": a}, inits), {"a": a}


@pytest.mark.parametrize("types", TYPE_COMBOS, ids=["u8s8u8", "s8s8s8", "u8u8s8", "s8u8u8"])
@pytest.mark.parametrize("a_shape, n", MATMULS, ids=[f"{a}x{n}" for a, n in MATMULS])
def test_qlinear_matmul_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime], a_shape: tuple[int, ...],
                                           n: int, types: tuple[Any, Any, Any]) -> None:
    per_column = n % 2 == 1 or n == 300
    model, feeds = qlinear_matmul_case(a_shape, n, types, per_column, False, sum(a_shape) + n)
    y = check_cpuacc(runtimes, model, feeds, LayerKind.QUANTIZED_MATMUL)
    assert len(np.unique(y)) > min(y.size, 8) // 2  # not all saturated


@pytest.mark.parametrize("types", TYPE_COMBOS[:2], ids=["u8s8u8", "s8s8s8"])
def test_qlinear_matmul_per_row_scale_and_zero_point(runtimes: dict[tuple[str, int], plugnn.Runtime],
                                                     types: tuple[Any, Any, Any]) -> None:
    model, feeds = qlinear_matmul_case((41, 77), 50, types, True, True, 3)
    check_cpuacc(runtimes, model, feeds, LayerKind.QUANTIZED_MATMUL)


@pytest.mark.parametrize("at, bt", [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8), (np.int8, np.uint8)])
@pytest.mark.parametrize("a_shape, n", MATMULS[1:5], ids=[f"{a}x{n}" for a, n in MATMULS[1:5]])
def test_matmul_integer_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime], a_shape: tuple[int, ...],
                                           n: int, at: Any, bt: Any) -> None:
    rng = np.random.default_rng(n)
    k, m = a_shape[-1], a_shape[-2]
    a = ints(rng, a_shape, at)
    inits = {"b": ints(rng, (k, n), bt), "bz": ints(rng, (n,), bt), "az": ints(rng, (m,), at)}
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    check_cpuacc(runtimes, make_model([node], {"a": a}, inits), {"a": a}, LayerKind.QUANTIZED_MATMUL)


def test_matmul_integer_with_extreme_operands_wraps_as_cpuref(runtimes: dict[tuple[str, int], plugnn.Runtime]) -> None:
    """Every product at its largest (|a - za| = 255, |b - zb| = 255): no 16-bit saturation on any path."""
    k = 2053
    a = np.full((9, k), 255, np.uint8)
    a[1::2] = 0
    inits = {"b": np.full((k, 33), -128, np.int8), "bz": np.full((33,), 127, np.int8), "az": np.uint8(0)}
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    y = check_cpuacc(runtimes, make_model([node], {"a": a}, inits), {"a": a}, LayerKind.QUANTIZED_MATMUL)
    assert y[0, 0] == 255 * -255 * k


# ---- QLinearConv / ConvInteger ------------------------------------------------------------------

# x shape, O, kernel, strides, pads (begin..., end...), dilations
CONVS = [
    ((1, 3, 9, 9), 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((2, 16, 14, 14), 33, (3, 3), (2, 2), (1, 0, 1, 2), (1, 1)),
    ((1, 64, 8, 8), 64, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((1, 5, 12, 11), 7, (3, 2), (1, 2), (2, 1, 0, 1), (2, 1)),
    ((2, 4, 30), 6, (5,), (2,), (2, 2), (1,)),
    ((1, 40, 20, 20), 300, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    # dilated along x (one run per tap), channels and widths across the 8 x 8 byte tiles of the
    # layout changes
    ((1, 9, 13, 17), 10, (3, 3), (1, 1), (2, 2, 2, 2), (1, 2)),
    ((2, 24, 7, 19), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
]


def qlinear_conv_case(case: tuple[Any, ...], types: tuple[Any, Any, Any], per_channel: bool, bias: bool,
                      seed: int, group: int = 1) -> tuple[Any, dict[str, np.ndarray]]:
    x_shape, o, kernel, strides, pads, dilations = case
    xt, wt, yt = types
    rng = np.random.default_rng(seed)
    c = x_shape[1]
    x = ints(rng, x_shape, xt)
    w = ints(rng, (o, c // group, *kernel), wt)
    inits = {"xs": np.float32(0.03), "xz": ints(rng, (), xt), "w": w,
             "ws": rng.uniform(0.002, 0.02, o if per_channel else ()).astype(np.float32),
             "wz": ints(rng, (o,) if per_channel else (), wt) if wt == np.uint8 else np.zeros((o,) if per_channel else (), np.int8),
             "yz": ints(rng, (), yt)}
    inits["ys"] = y_scale_for(x.astype(np.int64) - inits["xz"], (w.astype(np.int64) - inits["wz"].reshape(-1, *[1] * (w.ndim - 1)) if per_channel else w - inits["wz"].astype(np.int64)).reshape(o, -1).T,
                              float(0.03 * np.mean(inits["ws"])))
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits["b"] = rng.integers(-20000, 20000, o).astype(np.int32)
        names.append("b")
    node = helper.make_node("QLinearConv", names, ["y"], strides=list(strides), pads=list(pads),
                            dilations=list(dilations), kernel_shape=list(kernel), group=group)
    return make_model([node], {"x": x}, inits), {"x": x}


@pytest.mark.parametrize("types, per_channel, bias", [((np.uint8, np.int8, np.uint8), True, True),
                                                      ((np.int8, np.int8, np.int8), False, True),
                                                      ((np.uint8, np.uint8, np.int8), True, False)],
                         ids=["u8s8u8-per-channel-bias", "s8s8s8-per-tensor-bias", "u8u8s8-per-channel"])
@pytest.mark.parametrize("case", CONVS, ids=[f"{c[0]}-o{c[1]}-k{c[2]}-s{c[3]}" for c in CONVS])
def test_qlinear_conv_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime], case: tuple[Any, ...],
                                         types: tuple[Any, Any, Any], per_channel: bool, bias: bool) -> None:
    model, feeds = qlinear_conv_case(case, types, per_channel, bias, sum(case[0]) + case[1])
    y = check_cpuacc(runtimes, model, feeds, LayerKind.QUANTIZED_CONVOLUTION)
    assert len(np.unique(y)) > 8


# depthwise (group = C): x shape, O (a multiple of C), kernel, strides, pads, dilations
DEPTHWISE = [
    ((1, 8, 12, 12), 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((2, 6, 15, 13), 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    ((1, 4, 11, 9), 8, (5, 3), (1, 3), (2, 0, 1, 2), (2, 1)),
    ((1, 5, 20), 5, (7,), (1,), (3, 3), (1,)),
    ((1, 3, 4, 6, 6), 3, (3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1)),
]


@pytest.mark.parametrize("types, per_channel, bias", [((np.uint8, np.int8, np.uint8), True, True),
                                                      ((np.int8, np.int8, np.int8), False, True),
                                                      ((np.uint8, np.uint8, np.int8), True, False)],
                         ids=["u8s8u8-per-channel-bias", "s8s8s8-per-tensor-bias", "u8u8s8-per-channel"])
@pytest.mark.parametrize("case", DEPTHWISE, ids=[f"{c[0]}-o{c[1]}-k{c[2]}-s{c[3]}" for c in DEPTHWISE])
def test_depthwise_qlinear_conv_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime],
                                                   case: tuple[Any, ...], types: tuple[Any, Any, Any],
                                                   per_channel: bool, bias: bool) -> None:
    """One group per input channel (MobileNet's 3 x 3 layers), channel multipliers 1 and 2,
    strides, dilations and uneven pads, 1-D to 3-D: CpuAcc's direct path, CpuRef's bits."""
    model, feeds = qlinear_conv_case(case, types, per_channel, bias, sum(case[0]) + case[1], group=case[0][1])
    y = check_cpuacc(runtimes, model, feeds, LayerKind.QUANTIZED_CONVOLUTION)
    assert len(np.unique(y)) > 8


def test_depthwise_conv_integer_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime]) -> None:
    x_shape, o, kernel, strides, pads, dilations = DEPTHWISE[1]
    rng = np.random.default_rng(3)
    x = ints(rng, x_shape, np.uint8)
    inits = {"w": ints(rng, (o, 1, *kernel), np.uint8), "xz": ints(rng, (), np.uint8), "wz": ints(rng, (o,), np.uint8)}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=list(strides), pads=list(pads),
                            dilations=list(dilations), kernel_shape=list(kernel), group=x_shape[1])
    check_cpuacc(runtimes, make_model([node], {"x": x}, inits), {"x": x}, LayerKind.QUANTIZED_CONVOLUTION)


@pytest.mark.parametrize("xt, wt", [(np.uint8, np.int8), (np.int8, np.uint8)])
@pytest.mark.parametrize("case", CONVS[:5], ids=[f"{c[0]}-o{c[1]}" for c in CONVS[:5]])
def test_conv_integer_gives_cpurefs_bits(runtimes: dict[tuple[str, int], plugnn.Runtime], case: tuple[Any, ...],
                                         xt: Any, wt: Any) -> None:
    x_shape, o, kernel, strides, pads, dilations = case
    rng = np.random.default_rng(o)
    x = ints(rng, x_shape, xt)
    inits = {"w": ints(rng, (o, x_shape[1], *kernel), wt), "xz": ints(rng, (), xt), "wz": ints(rng, (o,), wt)}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=list(strides), pads=list(pads),
                            dilations=list(dilations), kernel_shape=list(kernel))
    check_cpuacc(runtimes, make_model([node], {"x": x}, inits), {"x": x}, LayerKind.QUANTIZED_CONVOLUTION)


# ---- Against onnxruntime, refusals ---------------------------------------------------------------


def test_a_qoperator_network_matches_onnxruntime_within_one_step() -> None:
    """QuantizeLinear -> QLinearConv (+bias) -> QLinearMatMul-free head: QLinearConv -> DequantizeLinear,
    all on CpuAcc; onnxruntime requantizes in float32, so an element may be one step off. The int8
    weights keep to 7 bits (onnxruntime's reduce_range): on a CPU without VNNI its uint8 x int8
    kernel sums pairs of products into int16 with saturation (vpmaddubsw), which full-range
    weights overflow, and it then no longer computes the operator."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 8, 16, 16)).astype(np.float32)
    inits = {"s": np.float32(0.05), "z": np.uint8(128),
             "w1": rng.integers(-64, 64, (32, 8, 3, 3)).astype(np.int8), "w1s": rng.uniform(0.002, 0.01, 32).astype(np.float32),
             "w1z": np.zeros(32, np.int8), "s1": np.float32(0.08), "z1": np.uint8(100),
             "b1": rng.integers(-3000, 3000, 32).astype(np.int32),
             "w2": rng.integers(-64, 64, (16, 32, 1, 1)).astype(np.int8), "w2s": np.float32(0.004), "w2z": np.int8(0),
             "s2": np.float32(0.1), "z2": np.uint8(130)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("QLinearConv", ["q", "s", "z", "w1", "w1s", "w1z", "s1", "z1", "b1"], ["c1"],
                              pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("QLinearConv", ["c1", "s1", "z1", "w2", "w2s", "w2z", "s2", "z2"], ["c2"],
                              kernel_shape=[1, 1]),
             helper.make_node("DequantizeLinear", ["c2", "s2", "z2"], ["y"])]
    model = make_model(nodes, {"x": x}, inits)
    with plugnn.Runtime() as rt:
        got, layers = run(rt, model, {"x": x}, ["CpuAcc", "CpuRef"])
        assert {layer.backend_id for layer in layers if layer.kind in QUANTIZED_KINDS} == {"CpuAcc"}
        want, _ = run(rt, model, {"x": x}, ["CpuRef"])
    np.testing.assert_array_equal(got, want)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = session.run(["y"], {"x": x})[0]
    steps = np.abs(got - theirs) / 0.1
    assert steps.max() <= 1.0 + 1e-6, steps.max()
    assert np.mean(steps > 0.5) < 0.01


def refused_case(name: str) -> tuple[Any, dict[str, np.ndarray], LayerKind, str]:
    """A model CpuAcc refuses (the layer, its reason) and its feeds."""
    rng = np.random.default_rng(1)
    if name == "grouped":
        x = ints(rng, (1, 4, 6, 6), np.uint8)
        inits = {"w": ints(rng, (4, 2, 3, 3), np.int8), "xz": np.uint8(3), "wz": np.int8(0)}
        node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], group=2, kernel_shape=[3, 3])
        return make_model([node], {"x": x}, inits), {"x": x}, LayerKind.QUANTIZED_CONVOLUTION, "groups 1 or one group per input channel (depthwise) only"
    if name == "runtime_b":
        a, b = ints(rng, (3, 5), np.uint8), ints(rng, (5, 4), np.int8)
        node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
        return make_model([node], {"a": a, "b": b}, {}), {"a": a, "b": b}, LayerKind.QUANTIZED_MATMUL, "constant b only"
    if name == "batched_b":
        a, b = ints(rng, (2, 3, 5), np.uint8), ints(rng, (2, 5, 4), np.int8)
        node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
        return make_model([node], {"a": a}, {"b": b}), {"a": a}, LayerKind.QUANTIZED_MATMUL, "one b for every batch"
    x = ints(rng, (4, 64), np.int8)  # blocked
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=16)
    inits = {"s": rng.uniform(0.1, 1, (4, 4)).astype(np.float32), "z": np.zeros((4, 4), np.int8)}
    return make_model([node], {"x": x}, inits), {"x": x}, LayerKind.QUANTIZATION, "blocked (block_size 16)"


@pytest.mark.parametrize("name", ["grouped", "runtime_b", "batched_b", "blocked"])
def test_what_cpuacc_refuses_runs_on_cpuref_with_the_reason(name: str) -> None:
    model, feeds, kind, reason = refused_case(name)
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(plugnn.onnx.load(model), rt, ["CpuAcc", "CpuRef"])
        assert [layer.backend_id for layer in optimized.layers if layer.kind is kind] == ["CpuRef"]
        assert reason in optimized.explain(verbose=True)
        got, _ = run(rt, model, feeds, ["CpuAcc", "CpuRef"])
        want, _ = run(rt, model, feeds, ["CpuRef"])
    np.testing.assert_array_equal(got, want)


# ---- A QDQ model from onnxruntime's quantizer ------------------------------------------------------


def tiny_float_cnn(rng: np.random.Generator) -> Any:
    """Conv-ReLU, strided Conv-ReLU, global average pool, a dense head: weights from `rng`."""
    def init(name: str, shape: tuple[int, ...], spread: float) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * spread).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "w3"], ["m"]), helper.make_node("Add", ["m", "b3"], ["y"])]
    inits = [init("w1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("w2", (16, 8, 3, 3), 0.2),
             init("b2", (16,), 0.1), init("w3", (16, 10), 0.3), init("b3", (10,), 0.1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [2, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_quantize_static_qdq_model_runs_on_cpuacc_and_matches_onnxruntime(tmp_path: Any) -> None:
    """onnxruntime.quantization.quantize_static (QDQ, per-channel int8 weights, int8 activations,
    calibrated on seeded inputs) of a tiny CNN, its groups imported as integer operators
    (plugnn.onnx.qdq): every layer on CpuAcc (the integer convolutions and matmul, the glue of
    QLinearGlobalAveragePool and QLinearAdd), the output within one quantization step of
    onnxruntime's on every element."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    import onnx

    rng = np.random.default_rng(11)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{"x": rng.standard_normal((2, 3, 16, 16)).astype(np.float32)} for _ in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.feeds, None)

    float_path, qdq_path = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(tiny_float_cnn(rng), str(float_path))
    quantization.quantize_static(str(float_path), str(qdq_path), Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    model = onnx.load(str(qdq_path))
    last = model.graph.node[-1]
    assert last.op_type == "DequantizeLinear"
    step = float(numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == last.input[1])))
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    with plugnn.Runtime() as rt:
        got, layers = run(rt, model, {"x": x}, ["CpuAcc", "CpuRef"])
    assert {layer.backend_id for layer in layers} == {"CpuAcc"}, [(layer.kind, layer.backend_id) for layer in layers]
    assert sum(layer.kind is LayerKind.QUANTIZED_CONVOLUTION for layer in layers) == 2
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]
    assert np.abs(got - theirs).max() <= step * 1.0001, np.abs(got - theirs).max() / step
