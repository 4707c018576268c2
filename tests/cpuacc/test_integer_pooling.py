"""CpuAcc's MAX pooling of int8 and uint8 tensors (ONNX MaxPool since opset 12: what a quantized
network's pooling runs on, in QOperator and QDQ form): exact, so every kernel set and thread
count must give the NumPy reference's values (padding never a candidate, a window wholly in
the padding the type's minimum), NCHW and NHWC, with strides, dilations, padding and ceil
rounding; the N-D kind (what ONNX MaxPool on integers imports as) on the same kernel. Other
pooling kinds on integers are no layer at all (the shared validation refuses
them, naming the type)."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import DataLayout, LayerKind, Pooling2dDescriptor, PoolingKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import HAVE_CPUACC, execute

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

# (n, c, h, w), kernel, stride, padding (top, left, bottom, right), dilation, ceil
CASES = [
    ((1, 64, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),   # ResNet's stem pooling
    ((2, 3, 9, 11), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True),        # ceil: windows past the end
    ((1, 5, 8, 7), (3, 2), (1, 3), (2, 0, 1, 1), (2, 1), False),        # dilation, asymmetric pads
    ((1, 2, 4, 4), (3, 3), (3, 3), (2, 2, 2, 2), (1, 1), True),         # windows mostly in the padding
    ((1, 3, 6, 20000), (1, 3), (1, 2), (0, 1, 0, 1), (1, 1), False),    # a row wider than the row buffer
]


def output_size(size: int, kernel: int, stride: int, begin: int, end: int, dilation: int, ceil: bool) -> int:
    span = (kernel - 1) * dilation + 1
    extent = size + begin + end - span
    out = (-(-extent // stride) if ceil else extent // stride) + 1
    if ceil and (out - 1) * stride >= size + begin:  # the last window must start inside
        out -= 1
    return out


def reference(x: np.ndarray, kernel, stride, padding, dilation, ceil) -> np.ndarray:
    """MAX pooling in NCHW: the input padded with the type's minimum (so padding never wins over
    a real element and an all-padding window gives the minimum)."""
    n, c, h, w = x.shape
    oh = output_size(h, kernel[0], stride[0], padding[0], padding[2], dilation[0], ceil)
    ow = output_size(w, kernel[1], stride[1], padding[1], padding[3], dilation[1], ceil)
    low = np.iinfo(x.dtype).min
    extra_h = max(0, (oh - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1 - (h + padding[0]))
    extra_w = max(0, (ow - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1 - (w + padding[1]))
    padded = np.full((n, c, h + padding[0] + extra_h, w + padding[1] + extra_w), low, x.dtype)
    padded[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w] = x
    out = np.full((n, c, oh, ow), low, x.dtype)
    for ky in range(kernel[0]):
        for kx in range(kernel[1]):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            taps = padded[:, :, y0:y0 + (oh - 1) * stride[0] + 1:stride[0], x0:x0 + (ow - 1) * stride[1] + 1:stride[1]]
            out = np.maximum(out, taps)
    return out


def layer(shape, dtype: DataType, kind, kernel, stride, padding, dilation, ceil, layout: str) -> tuple[LayerSpec, tuple]:
    n, c, h, w = shape
    oh = output_size(h, kernel[0], stride[0], padding[0], padding[2], dilation[0], ceil)
    ow = output_size(w, kernel[1], stride[1], padding[1], padding[3], dilation[1], ceil)
    out = (n, c, oh, ow) if layout == "NCHW" else (n, oh, ow, c)
    inp = shape if layout == "NCHW" else (n, h, w, c)
    desc = Pooling2dDescriptor(kind=kind, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                               rounding="ceil" if ceil else "floor", layout=layout)
    return LayerSpec(LayerKind.POOLING_2D, "pool", desc, (TensorInfo(inp, dtype),), (TensorInfo(out, dtype),)), out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["uint8", "int8"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-k{c[1]}-s{c[2]}" for c in CASES])
def test_integer_max_pooling_is_exact_on_every_kernel_set_and_thread_count(runtimes, case, dtype, layout) -> None:
    shape, kernel, stride, padding, dilation, ceil = case
    if layout == "NHWC" and shape[3] > 1000:
        shape = (1, 300, 6, 40)  # the wide-row path in NHWC: 40 pixels of 300 channels... and 12000 elements
    rng = np.random.default_rng(sum(shape))
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, shape, dtype=dtype)
    want = reference(x, kernel, stride, padding, dilation, ceil)
    spec, out_shape = layer(shape, DataType.from_any(np.dtype(dtype)), PoolingKind.MAX, kernel, stride, padding, dilation, ceil,
                            layout)
    arg = x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    expected = want if layout == "NCHW" else want.transpose(0, 2, 3, 1)
    for (isa, threads), rt in runtimes.items():
        out = np.full(out_shape, 77, dtype)  # a value left over shows an element the kernel forgot
        got, = execute(rt, spec, [arg], [out])
        np.testing.assert_array_equal(got, expected, err_msg=f"isa={isa} threads={threads}")


@pytest.mark.parametrize("kind", [PoolingKind.AVERAGE, PoolingKind.LP])
def test_other_pooling_kinds_on_integers_are_refused_naming_the_type(kind) -> None:
    spec, _ = layer((1, 2, 4, 4), DataType.UINT8, kind, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, "NCHW")
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(spec)
    assert not support.supported
    assert "uint8" in support.reason


def test_a_quantized_networks_max_pool_runs_on_cpuacc() -> None:
    """QuantizeLinear, MaxPool on its uint8 output (the N-D POOLING kind), DequantizeLinear: every
    layer on CpuAcc, the values those of NumPy."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("MaxPool", ["q"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["p", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "qpool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])],
                              [numpy_helper.from_array(np.asarray(0.05, np.float32), "s"),
                               numpy_helper.from_array(np.asarray(128, np.uint8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    x = np.random.default_rng(3).standard_normal((1, 4, 10, 10)).astype(np.float32)
    with plugnn.InferenceSession(model, backends=["CpuAcc", "CpuRef"]) as session:
        got, = session.run(None, {"x": x})
        placed = {n.backend_id for n in session.loaded_for({"x": x.shape}).optimized.layers}
    assert placed == {"CpuAcc"}
    q = np.clip(np.rint(x / np.float32(0.05)) + 128, 0, 255).astype(np.uint8)
    want = (reference(q, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False).astype(np.float32) - 128) * np.float32(0.05)
    np.testing.assert_array_equal(got, want)
