"""CpuAcc's direct convolution in the 16-channel blocked layout (plugins/accel/src/ops/conv_nchwc.h):
every kernel set and thread count against a float64 NumPy oracle, the same bits for every
thread count of one kernel set, and the layers it leaves to the GEMM path still right.

The blocked kernel runs a lone convolution only with AVX-512 (option isa=avx512), on NCHW
layers with groups 1, a kernel larger than 1x1, constant weights, at least 16 output channels
and either 16+ input channels or 1..64 read as one narrow block; with isa=avx2/portable the same
layers run on the GEMM path, which is what makes the comparison across kernel sets useful."""

from __future__ import annotations


import numpy as np
import pytest

import plugnn
from plugnn.descriptors import ActivationDescriptor, Convolution2dDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from conformance.test_conv2d import conv2d_reference

from .common import HAVE_CPUACC, check_conv_case, conv_case, run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RTOL, ATOL = 1e-4, 1e-5  # float32 sums of up to 1152 unit-scale products against float64


# n, c, h, w, o, kernel, stride, padding (top, left, bottom, right), dilation
SHAPES = {
    "resnet 3x3": (1, 64, 14, 14, 64, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "stride 2, 7-wide output, odd block count": (2, 32, 14, 13, 48, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "1x1 down-sample stride 2 (GEMM path)": (1, 64, 9, 9, 128, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1)),
    "narrow input, 5x5": (2, 3, 12, 11, 32, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    "channels not multiples of 16": (1, 72, 6, 31, 40, (3, 3), (1, 1), (0, 2, 1, 0), (1, 1)),
    "dilated, asymmetric": (1, 16, 10, 12, 16, (3, 2), (1, 2), (2, 0, 1, 3), (2, 2)),
    # 24 output channels: the last block holds 8 (its half computed in 256-bit registers)
    "24 output channels, 14-pixel tiles": (2, 32, 5, 28, 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "24 output channels, stride 2": (1, 16, 9, 56, 24, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
}


def make(name: str, seed: int) -> tuple[list[np.ndarray], LayerSpec, np.ndarray]:
    return conv_case(name, SHAPES[name], seed)


@pytest.mark.parametrize("name", SHAPES)
def test_conv_with_bias_addend_and_relu_on_every_kernel_set_and_thread_count(
        runtimes: dict[tuple[str, int], plugnn.Runtime], name: str) -> None:
    check_conv_case(runtimes, name, SHAPES[name], seed=31, rtol=RTOL, atol=ATOL)


def activation_reference(y: np.ndarray, kind: str, alpha: float, beta: float) -> np.ndarray:
    if kind == "relu":
        return np.maximum(y, 0.0)
    if kind == "bounded_relu":
        return np.minimum(np.maximum(y, alpha), beta)
    return np.where(y >= 0.0, y, alpha * y)  # leaky_relu


@pytest.mark.parametrize("act", [("relu", 0.0, 0.0), ("bounded_relu", -0.5, 0.7), ("leaky_relu", 0.1, 0.0)])
@pytest.mark.parametrize("name", ["resnet 3x3", "channels not multiples of 16", "1x1 pointwise"])
def test_conv_with_an_activation_and_no_addend(runtimes: dict[tuple[str, int], plugnn.Runtime], name: str,
                                               act: tuple[str, float, float]) -> None:
    """Without an addend, relu and clip run as the blocked kernels' clamp; other kinds over the
    NCHW rows after the conversion."""
    n, c, h, w, o, kernel, stride, padding, dilation = {**SHAPES, "1x1 pointwise": (
        1, 48, 11, 13, 40, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1))}[name]
    rng = np.random.default_rng(33)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weights = (rng.standard_normal((o, c, *kernel)) / np.sqrt(c * kernel[0] * kernel[1])).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    desc = Convolution2dDescriptor(stride=stride, padding=padding, dilation=dilation, has_bias=True,
                                   fused_activation=ActivationDescriptor(act[0], act[1], act[2]))
    expected = activation_reference(conv2d_reference(x, weights, bias, desc), *act)
    spec = LayerSpec(LayerKind.CONVOLUTION_2D, name, desc, tuple(TensorInfo(a.shape) for a in (x, weights, bias)),
                     (TensorInfo(expected.shape),), constants=(None, weights, bias))
    first: dict[str, np.ndarray] = {}
    for (isa, threads), rt in runtimes.items():
        y = run(rt, spec, [x, weights, bias])
        np.testing.assert_allclose(y, expected, rtol=RTOL, atol=ATOL, err_msg=f"{name}, {act}, {isa}, {threads}")
        if isa in first:
            np.testing.assert_array_equal(y, first[isa], err_msg=f"{name}: {isa} bits differ at {threads} threads")
        else:
            first[isa] = y


def test_weights_given_only_at_run_time_take_the_gemm_path_and_agree(
        runtimes: dict[tuple[str, int], plugnn.Runtime]) -> None:
    inputs, spec, expected = make("resnet 3x3", seed=32)
    spec = LayerSpec(spec.kind, spec.name, spec.descriptor, spec.inputs, spec.outputs)  # no constants
    for (isa, threads), rt in runtimes.items():
        np.testing.assert_allclose(run(rt, spec, inputs), expected, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{isa}, {threads} threads")
