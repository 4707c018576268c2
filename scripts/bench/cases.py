"""Benchmark rows: one ONNX model per row, a single layer (op rows) or a synthetic network (e2e rows).

Every row has a full shape (the issue's) and a `--quick` shape (tiny, for CI). The work of a
row is counted from the model itself (`work()`): FLOPs of every Conv, Gemm and MatMul
(conv: 2 per product of a weight with an input element, the zero padding's not counted; gemm:
2*M*N*K) for compute rows; bytes read + written
at the graph boundary (every graph input and output, float32) for memory-bound rows; nothing
for the overhead row, which reports time only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

OPSET = 17
IR_VERSION = 8


@dataclass(frozen=True)
class Case:
    name: str
    kind: str            # "op", "e2e" (synthetic networks) or "zoo" (tests/zoo's real models)
    metric: str          # "flops" (GFLOP/s), "bytes" (GB/s) or "time" (us per run only)
    build: Callable[[bool], Any]   # build(quick) -> onnx.ModelProto
    description: Callable[[bool], str]
    slow_on_cpuref: bool = False   # full size takes seconds per run on CpuRef (skipped unless --include-slow)
    feeds: Callable[[bool], dict[str, np.ndarray]] | None = None  # feeds(quick); None: standard normal
                                                                  # float32 for every graph input
    in_quick: bool = True          # part of --quick (CI)


# -- single-layer models -------------------------------------------------------------------

def _single(op: str, inputs: dict[str, tuple[int, ...]], output_shape: tuple[int, ...],
            initializers: dict[str, np.ndarray] | None = None, **attrs: Any) -> Any:
    from onnx import TensorProto, checker, helper, numpy_helper

    initializers = initializers or {}
    node = helper.make_node(op, [*inputs, *initializers], ["y"], name=op.lower(), **attrs)
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(output_shape))],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers.items()])
    model = helper.make_model(graph, producer_name="plugnn.scripts.bench",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    checker.check_model(model)
    return model


def _out(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def conv_model(cin: int, cout: int, size: int, kernel: int, stride: int = 1, groups: int = 1) -> Any:
    rng = np.random.default_rng(0)
    pad = kernel // 2
    fan_in = cin // groups * kernel * kernel
    weight = (rng.standard_normal((cout, cin // groups, kernel, kernel)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    bias = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    out = _out(size, kernel, stride, pad)
    return _single("Conv", {"x": (1, cin, size, size)}, (1, cout, out, out), {"w": weight, "b": bias},
                   kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4, group=groups)


def pool_model(op: str, channels: int, size: int, kernel: int, stride: int, pad: int) -> Any:
    out = _out(size, kernel, stride, pad)
    extra: dict[str, Any] = {"count_include_pad": 0} if op == "AveragePool" else {}
    return _single(op, {"x": (1, channels, size, size)}, (1, channels, out, out),
                   kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4, **extra)


def global_pool_model(shape: tuple[int, int, int, int]) -> Any:
    return _single("GlobalAveragePool", {"x": shape}, (shape[0], shape[1], 1, 1))


def binary_model(op: str, shape: tuple[int, ...]) -> Any:
    return _single(op, {"a": shape, "b": shape}, shape)


def unary_model(op: str, shape: tuple[int, ...]) -> Any:
    return _single(op, {"x": shape}, shape)


def matmul_model(a_shape: tuple[int, ...], b_shape: tuple[int, ...], *, b_constant: bool = False,
                 b_perm: tuple[int, ...] | None = None) -> Any:
    """MatMul a @ b (b an initializer when `b_constant`; fed through a Transpose of `b_perm`
    when given, as attention's K^T comes from exported transformers)."""
    from onnx import TensorProto, checker, helper, numpy_helper

    rng = np.random.default_rng(0)
    b_in = tuple(b_shape[i] for i in np.argsort(b_perm)) if b_perm is not None else b_shape
    out = (*np.broadcast_shapes(a_shape[:-2], b_shape[:-2]), a_shape[-2], b_shape[-1])  # both rank >= 2
    nodes, inputs, inits = [], [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape))], []
    if b_constant:
        inits.append(numpy_helper.from_array((rng.standard_normal(b_in) / np.sqrt(b_in[-2])).astype(np.float32), "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b_in)))
    b_name = "b"
    if b_perm is not None:
        nodes.append(helper.make_node("Transpose", ["b"], ["bt"], name="transpose", perm=list(b_perm)))
        b_name = "bt"
    nodes.append(helper.make_node("MatMul", ["a", b_name], ["y"], name="matmul"))
    graph = helper.make_graph(nodes, "matmul", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out))], initializer=inits)
    model = helper.make_model(graph, producer_name="plugnn.scripts.bench",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    checker.check_model(model)
    return model


def attention_model(batch: int, seq: int, embed: int, heads: int) -> Any:
    """A BERT self-attention block as transformers export it: x [B, S, E] -> Q, K, V projections
    (MatMul + Add), Reshape [B, S, H, D] and Transpose to [B, H, S, D] (K to [B, H, D, S]),
    Q K^T, Mul by 1/sqrt(D), Softmax, @ V, Transpose and Reshape back, output projection."""
    from onnx import TensorProto, checker, helper, numpy_helper

    rng = np.random.default_rng(0)
    d = embed // heads
    inits = []

    def weight(name: str, *shape: int) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name))
        return name

    def const(name: str, value: Any, dtype: Any = np.int64) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    nodes = []
    heads_shape = const("heads_shape", [batch, seq, heads, d])
    for p in ("q", "k", "v"):
        nodes.append(helper.make_node("MatMul", ["x", weight(f"w{p}", embed, embed)], [f"{p}_mm"], name=f"{p}_proj"))
        nodes.append(helper.make_node("Add", [f"{p}_mm", weight(f"b{p}", embed)], [f"{p}_lin"], name=f"{p}_bias"))
        nodes.append(helper.make_node("Reshape", [f"{p}_lin", heads_shape], [f"{p}_heads"], name=f"{p}_split"))
        perm = [0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]
        nodes.append(helper.make_node("Transpose", [f"{p}_heads"], [f"{p}_t"], name=f"{p}_transpose", perm=perm))
    nodes += [
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="qk"),
        helper.make_node("Mul", ["scores", const("scale", 1.0 / np.sqrt(d), np.float32)], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v_t"], ["ctx"], name="pv"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="merge_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", const("merged_shape", [batch, seq, embed])], ["merged"], name="merge"),
        helper.make_node("MatMul", ["merged", weight("wo", embed, embed)], ["out_mm"], name="out_proj"),
        helper.make_node("Add", ["out_mm", weight("bo", embed)], ["y"], name="out_bias"),
    ]
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                  [batch, seq, embed])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, embed])],
                              initializer=inits)
    model = helper.make_model(graph, producer_name="plugnn.scripts.bench",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    checker.check_model(model)
    return model


def _matmul_case(name: str, a: tuple[int, ...], b: tuple[int, ...], quick_a: tuple[int, ...],
                 quick_b: tuple[int, ...], **kw: Any) -> Case:
    what = ("constant " if kw.get("b_constant") else "") + ("Transpose+" if kw.get("b_perm") else "")
    return Case(name, "op", "flops", lambda q: matmul_model(quick_a if q else a, quick_b if q else b, **kw),
                lambda q: f"{what}MatMul {list(quick_a if q else a)} @ {list(quick_b if q else b)}")


def _spatial_model(op: str, x_shape: tuple[int, ...], y_shape: tuple[int, ...], inputs: list[str],
                   initializers: dict[str, np.ndarray], **attrs: Any) -> Any:
    """One node reading graph input "x" and `inputs` (initializer names, or "" for an omitted
    optional input) in that order."""
    from onnx import TensorProto, checker, helper, numpy_helper

    node = helper.make_node(op, ["x", *inputs], ["y"], name=op.lower(), **attrs)
    graph = helper.make_graph(
        [node], op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers.items()])
    model = helper.make_model(graph, producer_name="plugnn.scripts.bench",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    checker.check_model(model)
    return model


def conv1d_model(cin: int, cout: int, length: int, kernel: int, stride: int) -> Any:
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((cout, cin, kernel)) * np.sqrt(2.0 / (cin * kernel))).astype(np.float32)
    bias = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    out = (length - kernel) // stride + 1
    return _spatial_model("Conv", (1, cin, length), (1, cout, out), ["w", "b"], {"w": weight, "b": bias},
                          kernel_shape=[kernel], strides=[stride])


def conv_transpose_model(cin: int, cout: int, size: int, kernel: int, stride: int) -> Any:
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((cin, cout, kernel, kernel)) * np.sqrt(1.0 / cin)).astype(np.float32)
    bias = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    out = (size - 1) * stride + kernel
    return _spatial_model("ConvTranspose", (1, cin, size, size), (1, cout, out, out), ["w", "b"],
                          {"w": weight, "b": bias}, kernel_shape=[kernel, kernel], strides=[stride, stride])


def resize_model(channels: int, size: int, out: int, mode: str, transform: str) -> Any:
    sizes = np.array([1, channels, out, out], np.int64)
    return _spatial_model("Resize", (1, channels, size, size), (1, channels, out, out), ["", "", "sizes"],
                          {"sizes": sizes}, mode=mode, coordinate_transformation_mode=transform,
                          nearest_mode="floor")


def pad_model(channels: int, size: int, pad: int, mode: str) -> Any:
    pads = np.array([0, 0, pad, pad, 0, 0, pad, pad], np.int64)
    out = size + 2 * pad
    return _spatial_model("Pad", (1, channels, size, size), (1, channels, out, out), ["pads"], {"pads": pads},
                          mode=mode)


def _sized(name: str, kind: str, metric: str, full: tuple[Any, ...], quick: tuple[Any, ...],
           build: Callable[..., Any], describe: Callable[..., str]) -> Case:
    return Case(name, kind, metric, lambda q: build(*(quick if q else full)),
                lambda q: describe(*(quick if q else full)))


# The 1.1 spatial kinds as the zoo's models use them (audio_m5's Conv1d, U-Net's ConvTranspose 2x2
# stride 2 and bilinear Resize, FPN's and YOLO's nearest Resize, FCN's and DeepLab's bilinear
# Resize to the input size), and Pad.
SPATIAL_CASES: list[Case] = [
    _sized("conv1d k80 s16 1->32 16000", "op", "flops", (1, 32, 16000, 80, 16), (1, 8, 400, 80, 16), conv1d_model,
           lambda ci, co, n, k, s: f"Conv 1-D {ci}->{co} k{k} s{s} on {n} samples (audio_m5's first layer)"),
    _sized("conv1d k3 64->64 2000", "op", "flops", (64, 64, 2000, 3, 1), (8, 8, 40, 3, 1), conv1d_model,
           lambda ci, co, n, k, s: f"Conv 1-D {ci}->{co} k{k} s{s} on {n} samples"),
    _sized("convtranspose 2x2 s2 256->128 14", "op", "flops", (256, 128, 14, 2, 2), (8, 4, 4, 2, 2),
           conv_transpose_model, lambda ci, co, n, k, s: f"ConvTranspose {ci}->{co} {k}x{k} s{s} on {n}x{n} (U-Net)"),
    _sized("convtranspose 2x2 s2 64->32 56", "op", "flops", (64, 32, 56, 2, 2), (8, 4, 6, 2, 2),
           conv_transpose_model, lambda ci, co, n, k, s: f"ConvTranspose {ci}->{co} {k}x{k} s{s} on {n}x{n} (U-Net)"),
    _sized("convtranspose 2x2 s2 32->16 112", "op", "flops", (32, 16, 112, 2, 2), (4, 4, 8, 2, 2),
           conv_transpose_model, lambda ci, co, n, k, s: f"ConvTranspose {ci}->{co} {k}x{k} s{s} on {n}x{n} (U-Net)"),
    _sized("convtranspose 4x4 s2 128->64 28", "op", "flops", (128, 64, 28, 4, 2), (8, 4, 4, 4, 2),
           conv_transpose_model, lambda ci, co, n, k, s: f"ConvTranspose {ci}->{co} {k}x{k} s{s} on {n}x{n} (overlapping taps)"),
    _sized("resize nearest x2 256 14->28", "op", "bytes", (256, 14, 28, "nearest", "asymmetric"),
           (4, 4, 8, "nearest", "asymmetric"), resize_model,
           lambda c, n, o, m, t: f"Resize {m} ({t}) {c}x{n}x{n} -> {o}x{o} (FPN, YOLO)"),
    _sized("resize bilinear x2 64 56->112", "op", "bytes", (64, 56, 112, "linear", "align_corners"),
           (4, 4, 8, "linear", "align_corners"), resize_model,
           lambda c, n, o, m, t: f"Resize {m} ({t}) {c}x{n}x{n} -> {o}x{o} (U-Net bilinear)"),
    _sized("resize bilinear 21 28->224", "op", "bytes", (21, 28, 224, "linear", "half_pixel"),
           (3, 4, 32, "linear", "half_pixel"), resize_model,
           lambda c, n, o, m, t: f"Resize {m} ({t}) {c}x{n}x{n} -> {o}x{o} (FCN, DeepLab, LR-ASPP)"),
    _sized("pad reflect 2 64x112", "op", "bytes", (64, 112, 2, "reflect"), (4, 8, 2, "reflect"), pad_model,
           lambda c, n, p, m: f"Pad {m} {p} on each side of {c}x{n}x{n}"),
    _sized("pad constant 3 64x112", "op", "bytes", (64, 112, 3, "constant"), (4, 8, 3, "constant"), pad_model,
           lambda c, n, p, m: f"Pad {m} {p} on each side of {c}x{n}x{n}"),
]


# -- the rows -------------------------------------------------------------------------------

def _conv_case(name: str, cin: int, cout: int, size: int, kernel: int, stride: int = 1, groups: int = 1,
               quick: tuple[int, int, int] = (8, 8, 8)) -> Case:
    """quick = (cin, cout, size) of the tiny variant (depthwise keeps cin == cout == groups)."""
    def shape(q: bool) -> tuple[int, int, int, int]:
        c_in, c_out, s = quick if q else (cin, cout, size)
        return c_in, c_out, s, (c_in if groups > 1 else 1)

    def build(q: bool) -> Any:
        c_in, c_out, s, g = shape(q)
        return conv_model(c_in, c_out, s, kernel, stride, g)

    def describe(q: bool) -> str:
        c_in, c_out, s, g = shape(q)
        dw = " depthwise" if g > 1 else ""
        return f"Conv{dw} {c_in}->{c_out} {kernel}x{kernel} s{stride} on {s}x{s}"

    return Case(name, "op", "flops", build, describe)


def _group_conv_case(name: str, channels: int, size: int, kernel: int, stride: int, groups: int,
                     quick: tuple[int, int] = (16, 2)) -> Case:
    """A grouped convolution channels -> channels (groups of channels / groups); quick = (channels,
    groups) of the tiny variant, on 8x8."""
    def shape(q: bool) -> tuple[int, int, int]:
        return (quick[0], 8, quick[1]) if q else (channels, size, groups)

    def build(q: bool) -> Any:
        c, s, g = shape(q)
        return conv_model(c, c, s, kernel, stride, g)

    def describe(q: bool) -> str:
        c, s, g = shape(q)
        return f"Conv grouped {c}->{c} {kernel}x{kernel} s{stride} groups {g} (of {c // g}) on {s}x{s}"

    return Case(name, "op", "flops", build, describe)


SIXTEEN_M = (1, 256, 256, 256)   # 2**24 float32 elements, 64 MiB
QUICK_ELEMENTS = (1, 4, 32, 32)


def _e2e(name: str, builder: str, batch: int, image: int | None, quick_batch: int, quick_image: int | None,
         slow: bool = False) -> Case:
    def args(q: bool) -> tuple[int, dict[str, int]]:
        size = quick_image if q else image
        return (quick_batch if q else batch), ({"image": size} if size is not None else {})

    def build(q: bool) -> Any:
        from plugnn import synthetic_models

        b, kw = args(q)
        return synthetic_models.MODELS[builder](b, **kw)

    def describe(q: bool) -> str:
        b, kw = args(q)
        size = kw.get("image", 28)
        return f"{builder} batch {b}, {size}x{size}"

    return Case(name, "e2e", "flops", build, describe, slow_on_cpuref=slow)


CASES: list[Case] = [
    _conv_case("conv 7x7 3->64 s2 224", 3, 64, 224, 7, stride=2, quick=(3, 8, 16)),
    _conv_case("conv 3x3 64 56", 64, 64, 56, 3),
    _conv_case("conv 3x3 128 28", 128, 128, 28, 3),
    _conv_case("conv 3x3 256 14", 256, 256, 14, 3),
    _conv_case("conv 3x3 512 7", 512, 512, 7, 3),
    _conv_case("conv 1x1 256->1024 14", 256, 1024, 14, 1, quick=(8, 16, 8)),
    _conv_case("dwconv 3x3 144 56", 144, 144, 56, 3, groups=144, quick=(8, 8, 8)),
    _conv_case("dwconv 5x5 672 14", 672, 672, 14, 5, groups=672, quick=(16, 16, 8)),
    _conv_case("dwconv 7x7 96 56", 96, 96, 56, 7, groups=96, quick=(16, 16, 8)),
    _conv_case("dwconv 7x7 768 7", 768, 768, 7, 7, groups=768, quick=(16, 16, 8)),
    _group_conv_case("groupconv 3x3 s2 48 g6 112", 48, 112, 3, 2, 6),
    _group_conv_case("groupconv 3x3 440 g55 7", 440, 7, 3, 1, 55),
    Case("maxpool 3x3 s2 64x112", "op", "bytes",
         lambda q: pool_model("MaxPool", 4 if q else 64, 16 if q else 112, 3, 2, 1),
         lambda q: f"MaxPool 3x3 s2 p1 on {4 if q else 64}x{16 if q else 112}x{16 if q else 112}"),
    Case("avgpool 3x3 s2 64x112", "op", "bytes",
         lambda q: pool_model("AveragePool", 4 if q else 64, 16 if q else 112, 3, 2, 1),
         lambda q: f"AveragePool 3x3 s2 p1 (count_include_pad 0) on {4 if q else 64}x{16 if q else 112}x"
                   f"{16 if q else 112}"),
    Case("maxpool 3x3 s2 16M", "op", "bytes",
         lambda q: pool_model("MaxPool", 4 if q else 64, 16 if q else 512, 3, 2, 1),
         lambda q: f"MaxPool 3x3 s2 p1 on {4 if q else 64}x{16 if q else 512}x{16 if q else 512} "
                   "(larger than the caches)"),
    Case("avgpool 3x3 s2 16M", "op", "bytes",
         lambda q: pool_model("AveragePool", 4 if q else 64, 16 if q else 512, 3, 2, 1),
         lambda q: f"AveragePool 3x3 s2 p1 on {4 if q else 64}x{16 if q else 512}x{16 if q else 512} "
                   "(larger than the caches)"),
    Case("global avgpool 16M", "op", "bytes",
         lambda q: global_pool_model(QUICK_ELEMENTS if q else SIXTEEN_M),
         lambda q: f"GlobalAveragePool on {'x'.join(map(str, (QUICK_ELEMENTS if q else SIXTEEN_M)[1:]))}"),
    Case("add 16M", "op", "bytes", lambda q: binary_model("Add", QUICK_ELEMENTS if q else SIXTEEN_M),
         lambda q: f"Add of two {int(np.prod(QUICK_ELEMENTS if q else SIXTEEN_M))}-element tensors"),
    Case("relu 16M", "op", "bytes", lambda q: unary_model("Relu", QUICK_ELEMENTS if q else SIXTEEN_M),
         lambda q: f"Relu on {int(np.prod(QUICK_ELEMENTS if q else SIXTEEN_M))} elements"),
    Case("overhead one-Add 4", "op", "time", lambda q: binary_model("Add", (4,)),
         lambda q: "one Add of 4 elements: per-run runtime overhead"),
    _e2e("e2e resnet18 b1 224", "resnet18", 1, 224, 1, 32, slow=True),
    _e2e("e2e mobilenet_v2 b1 224", "mobilenet_v2", 1, 224, 1, 32, slow=True),
    _e2e("e2e mnist_cnn b1", "mnist_cnn", 1, None, 1, None),
    _e2e("e2e mnist_cnn b64", "mnist_cnn", 64, None, 4, None),
    # attention shapes (transformers' exports: [B, H, S, D] @ [B, H, D, S], @ [B, H, S, D])
    _matmul_case("matmul qk b1 h12 s128 d64", (1, 12, 128, 64), (1, 12, 64, 128), (1, 2, 8, 4), (1, 2, 4, 8)),
    _matmul_case("matmul pv b1 h12 s128 d64", (1, 12, 128, 128), (1, 12, 128, 64), (1, 2, 8, 8), (1, 2, 8, 4)),
    _matmul_case("matmul qk b1 h12 s512 d64", (1, 12, 512, 64), (1, 12, 64, 512), (1, 2, 16, 4), (1, 2, 4, 16)),
    _matmul_case("matmul pv b1 h12 s512 d64", (1, 12, 512, 512), (1, 12, 512, 64), (1, 2, 16, 16), (1, 2, 16, 4)),
    _matmul_case("matmul qk b4 h8 s64 d32", (4, 8, 64, 32), (4, 8, 32, 64), (2, 2, 8, 4), (2, 2, 4, 8)),
    _matmul_case("matmul qk b2 h2 s32 d16", (2, 2, 32, 16), (2, 2, 16, 32), (2, 2, 8, 4), (2, 2, 4, 8)),
    _matmul_case("matmul qk b1 h4 s256 d128", (1, 4, 256, 128), (1, 4, 128, 256), (1, 2, 8, 8), (1, 2, 8, 8)),
    _matmul_case("matmul bcast [S,D]@[B,H,D,S]", (128, 64), (2, 12, 64, 128), (8, 4), (2, 2, 4, 8)),
    _matmul_case("matmul bcast [1,H]@[B,1]", (1, 12, 128, 64), (2, 1, 64, 128), (1, 2, 8, 4), (2, 1, 4, 8)),
    _matmul_case("matmul qk Transpose(K) h12 s128", (1, 12, 128, 64), (1, 12, 64, 128), (1, 2, 8, 4), (1, 2, 4, 8),
                 b_perm=(0, 1, 3, 2)),
    # the projections of BERT/GPT-2: a rank-3 activation times a constant [E, F]
    _matmul_case("matmul proj b1 s128 768->768", (1, 128, 768), (768, 768), (1, 8, 16), (16, 16), b_constant=True),
    _matmul_case("matmul proj b4 s128 768->3072", (4, 128, 768), (768, 3072), (2, 8, 16), (16, 32), b_constant=True),
    _matmul_case("matmul proj b1 s128 3072->768", (1, 128, 3072), (3072, 768), (1, 8, 32), (32, 16), b_constant=True),
    Case("e2e attention b1 s128 e768 h12", "e2e", "flops",
         lambda q: attention_model(1, 8 if q else 128, 32 if q else 768, 2 if q else 12),
         lambda q: f"BERT self-attention block, batch 1, {8 if q else 128} tokens, {32 if q else 768} wide, "
                   f"{2 if q else 12} heads"),
]
CASES += SPATIAL_CASES


# -- work counting --------------------------------------------------------------------------

def _shapes(model: Any) -> dict[str, tuple[int, ...]]:
    from onnx import numpy_helper, shape_inference

    inferred = shape_inference.infer_shapes(model, data_prop=True)
    shapes: dict[str, tuple[int, ...]] = {}
    graph = inferred.graph
    for info in [*graph.input, *graph.value_info, *graph.output]:
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = tuple(d.dim_value for d in dims)
    for init in graph.initializer:
        shapes[init.name] = tuple(numpy_helper.to_array(init).shape)
    return shapes


class UncountedWork(Exception):
    """A Conv, Gemm or MatMul whose shapes ONNX's shape inference does not resolve."""


def _taps_inside(size: int, out: int, kernel: int, stride: int, pad_begin: int, dilation: int) -> int:
    """Over the `out` positions of one axis, how many kernel taps land inside the input [0, size)."""
    taps = 0
    for o in range(out):
        start = o * stride - pad_begin
        taps += sum(1 for k in range(kernel) if 0 <= start + k * dilation < size)
    return taps


def _conv_pads_begin(node: Any, x: tuple[int, ...], out: tuple[int, ...], weight: tuple[int, ...]) -> list[int]:
    """The zeros before each spatial axis of a Conv: its pads, or what its auto_pad implies."""
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    spatial = len(x) - 2
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("NOTSET", ""):
        return list(attrs.get("pads", [0] * 2 * spatial))[:spatial]
    if auto_pad == "VALID":
        return [0] * spatial
    strides = attrs.get("strides", [1] * spatial)
    dilations = attrs.get("dilations", [1] * spatial)
    begins = []
    for i in range(spatial):
        total = max(0, (out[2 + i] - 1) * strides[i] + (weight[2 + i] - 1) * dilations[i] + 1 - x[2 + i])
        begins.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
    return begins


def conv_flops(node: Any, x: tuple[int, ...], out: tuple[int, ...], weight: tuple[int, ...]) -> int:
    """A Conv's useful FLOPs: 2 per product of a weight with an input element, taps that land in
    the zero padding not counted (no kernel needs to compute them; with large dilations, as in
    DeepLabV3's ASPP, they are most of the nominal count 2 * |out| * |weight[1:]|)."""
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    spatial = len(x) - 2
    strides = attrs.get("strides", [1] * spatial)
    dilations = attrs.get("dilations", [1] * spatial)
    pads = _conv_pads_begin(node, x, out, weight)
    taps = 1
    for i in range(spatial):
        taps *= _taps_inside(x[2 + i], out[2 + i], weight[2 + i], strides[i], pads[i], dilations[i])
    return 2 * out[0] * out[1] * weight[1] * taps


def flops(model: Any) -> int:
    """FLOPs (multiply and add counted separately) of every Conv, Gemm and MatMul node of the main
    graph (nodes inside subgraphs are not counted); a Conv's products with its zero padding are
    not counted (conv_flops)."""
    from onnx import helper

    known = _shapes(model)

    def shapes_of(name: str) -> tuple[int, ...]:
        shape = known.get(name)
        if not shape or 0 in shape:
            raise UncountedWork(name)
        return shape

    total = 0
    for node in model.graph.node:
        if node.op_type == "Conv":
            out, weight = shapes_of(node.output[0]), shapes_of(node.input[1])
            total += conv_flops(node, shapes_of(node.input[0]), out, weight)
        elif node.op_type == "ConvTranspose":  # every input element times its O/g * KH*KW taps
            x, weight = shapes_of(node.input[0]), shapes_of(node.input[1])
            total += 2 * int(np.prod(x)) * int(np.prod(weight[1:]))
        elif node.op_type in ("Gemm", "MatMul"):
            out, a = shapes_of(node.output[0]), shapes_of(node.input[0])
            trans_a = any(attr.name == "transA" and helper.get_attribute_value(attr) for attr in node.attribute)
            k = a[-2] if trans_a else a[-1]
            total += 2 * int(np.prod(out)) * int(k)
    return total


def imported_flops(model: Any) -> int:
    """The same count over plugnn's import of the model, whose every tensor has its static shape
    (ONNX's shape inference leaves the shapes after some Reshape, Split and Slice nodes unknown):
    Convolution2d and forward Convolution as `conv_flops` counts them (products with the input
    only), transposed Convolution 2 * |x| * |w[1:]|, FullyConnected and MatMul 2 * |output| * K.
    Raises UncountedWork when plugnn cannot import the model."""
    import plugnn.onnx
    from plugnn.descriptors import ConvolutionOp, DataLayout, LayerKind

    try:
        network = plugnn.onnx.load(model)
    except plugnn.PlugnnError as exc:
        raise UncountedWork(str(exc)) from None
    total = 0
    for layer in network:
        d = layer.descriptor
        shapes = [t.shape for t in layer.inputs]
        if layer.kind is LayerKind.CONVOLUTION_2D:
            x, w, y = shapes[0], shapes[1], layer.outputs[0].shape
            if d.layout is DataLayout.NHWC:
                x, y = (x[0], x[3], x[1], x[2]), (y[0], y[3], y[1], y[2])
            taps = _taps_inside(x[2], y[2], w[2], d.stride[0], d.padding[0], d.dilation[0]) * \
                _taps_inside(x[3], y[3], w[3], d.stride[1], d.padding[1], d.dilation[1])
            total += 2 * y[0] * y[1] * w[1] * taps
        elif layer.kind is LayerKind.CONVOLUTION:
            x, w, y = shapes[0], shapes[1], layer.outputs[0].shape
            if d.op is ConvolutionOp.TRANSPOSED:
                total += 2 * int(np.prod(x)) * int(np.prod(w[1:]))
                continue
            taps = 1
            for i in range(len(x) - 2):
                taps *= _taps_inside(x[2 + i], y[2 + i], w[2 + i], d.strides[i], d.pads_begin[i], d.dilations[i])
            total += 2 * y[0] * y[1] * w[1] * taps
        elif layer.kind is LayerKind.FULLY_CONNECTED:
            k = shapes[0][0] if d.transpose_a else shapes[0][1]
            total += 2 * int(np.prod(layer.outputs[0].shape)) * k
        elif layer.kind is LayerKind.MATMUL:
            total += 2 * int(np.prod(layer.outputs[0].shape)) * shapes[0][-1]
    return total


def boundary_bytes(model: Any) -> int:
    """Bytes read (graph inputs) + written (graph outputs), float32."""
    shapes = _shapes(model)
    names = [i.name for i in model.graph.input] + [o.name for o in model.graph.output]
    return sum(4 * int(np.prod(shapes[n])) for n in names)


def work(case: Case, model: Any) -> float | None:
    """The row's FLOPs or bytes; None for time-only rows and for models whose compute nodes
    ONNX's shape inference cannot size (their rate is then not reported)."""
    if case.metric == "flops":
        try:
            return float(flops(model))
        except UncountedWork:
            pass
        try:
            return float(imported_flops(model))
        except UncountedWork:
            return None
    if case.metric == "bytes":
        return float(boundary_bytes(model))
    return None
