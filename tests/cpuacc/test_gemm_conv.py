"""CpuAcc's GEMM driver and the convolutions built on it, on shapes large enough to reach its
blocking and threading: several K blocks (K > 256), M blocks (> 112 rows) and N blocks
(> 512 columns), edge micro-tiles, and the job grid at 1/2/3/7 threads for every kernel set this
machine runs. Every thread count must give the same bits as 1 thread for the same kernel set;
the 1-thread result is compared with a float64 NumPy oracle (rtol 1e-4, atol 1e-4 times the
largest |expected|: float32 sums over K <= 1200 terms of unit-variance products).

NCHW convolutions with constant weights run in one of two GEMM orientations, chosen per layer
at create time (the cheaper one: multiply-adds padded to whole micro-tiles plus im2col
packing): OC rows x P columns, or P rows x OC columns written transposed. With AVX2 and
AVX-512 the transposed orientation reads its A operand in place (no packing): im2col^T from a
zero-padded copy of the image, x^T for 1x1 convolutions; the portable kernels pack it. The
comment on each case says which orientation it takes per kernel set (micro-tiles 4x16
portable, 6x16 AVX2, 7x32 AVX-512); weights supplied only at run time always use the OC-rows
orientation, so every kernel set runs both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import (ActivationDescriptor, Convolution2dDescriptor, DataLayout,
                                FullyConnectedDescriptor, LayerKind)
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from conformance.test_conv2d import conv2d_reference

from .common import HAVE_CPUACC, check_every_config, run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RTOL = 1e-4
ATOL_SCALE = 1e-4


def layer(kind: LayerKind, desc: object, arrays: Sequence[np.ndarray], output: tuple[int, ...],
          constants: Sequence[int]) -> LayerSpec:
    """A one-output layer; inputs whose index is in `constants` carry their data (weights)."""
    data = tuple(np.array(a, np.float32, order="C") if i in constants else None for i, a in enumerate(arrays))
    return LayerSpec(kind, kind.name.lower(), desc, tuple(TensorInfo(a.shape) for a in arrays),
                     (TensorInfo(tuple(output)),), constants=data if constants else ())


def check_conv(runtimes: dict[tuple[str, int], plugnn.Runtime], spec: LayerSpec,
               arrays: Sequence[np.ndarray], expected: np.ndarray) -> None:
    """check_every_config with the tolerance scaled to the result's magnitude."""
    atol = ATOL_SCALE * max(float(np.abs(expected).max(initial=0.0)), 1.0)
    check_every_config(runtimes, spec, arrays, expected, rtol=RTOL, atol=atol)


# ---- convolution ----------------------------------------------------------------------------


class Conv(NamedTuple):
    n: int
    c: int
    h: int
    w: int
    o: int
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)   # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1


def out_hw(case: Conv) -> tuple[int, int]:
    (kh, kw), (sh, sw), (dh, dw) = case.kernel, case.stride, case.dilation
    top, left, bottom, right = case.padding
    return ((case.h + top + bottom - dh * (kh - 1) - 1) // sh + 1,
            (case.w + left + right - dw * (kw - 1) - 1) // sw + 1)


def conv_reference(x: np.ndarray, w: np.ndarray, case: Conv) -> np.ndarray:
    """NCHW convolution in float64 (the conformance suite's oracle), without bias."""
    return conv2d_reference(x, w, None, Convolution2dDescriptor(stride=case.stride, padding=case.padding,
                                                                dilation=case.dilation, groups=case.groups))


CONV_CASES = {
    # Orientation with constant weights (P = OH x OW, OC per group): T = P rows (transposed),
    # N = OC rows, for portable / AVX2 / AVX-512. On AVX-512, ungrouped convolutions with
    # constant weights run the NCHW16c direct kernels instead (1x1 included); the grouped ones
    # and those with weights given at run time keep the GEMM there.
    # P = 14x14 = 196, OC 32, K = 32*9 = 288 (2 K blocks). T / T / T.
    "3x3 same 14x14 oc32": Conv(1, 32, 14, 14, 32, (3, 3), padding=(1, 1, 1, 1)),
    # P = 8x8 = 64, OC 28, batch 2. N / T / T.
    "3x3 same 8x8 oc28 batch 2": Conv(2, 40, 8, 8, 28, (3, 3), padding=(1, 1, 1, 1)),
    # P = 8x6 = 48, OC 150 (edge columns). N / T / T.
    "3x3 7x7 oc150 4-sided padding": Conv(1, 24, 7, 7, 150, (3, 3), padding=(1, 0, 2, 1)),
    # P = 24x20 = 480 (edge tiles both ways), OC 20, stride 2, dilation 2, batch 2. N / T / T.
    "strided dilated odd sizes": Conv(2, 9, 47, 39, 20, (3, 3), stride=(2, 2), padding=(2, 2, 2, 2),
                                      dilation=(2, 2)),
    # groups 2: OC 64 per group, P = 20x20 = 400. N / T / T.
    "grouped 2": Conv(1, 16, 20, 20, 128, (3, 3), padding=(1, 1, 1, 1), groups=2),
    # 1x1 direct GEMM: P = 28x28 = 784 (several M blocks), OC 96. N / T / T.
    "1x1 28x28": Conv(1, 300, 28, 28, 96, (1, 1)),
    # 1x1 direct, OC 130 on P = 9x9 = 81, batch 3. T / T / T.
    "1x1 9x9 batch 3": Conv(3, 64, 9, 9, 130, (1, 1)),
    # 1x1 grouped: the GEMM reading x in place on AVX-512 too. OC 48 per group on P = 12x12 = 144.
    "1x1 grouped 2": Conv(1, 64, 12, 12, 96, (1, 1), groups=2),
    # stride-2 7x7 (the ResNet stem shape, smaller): P = 16x16 = 256, OC 64. N / T / T.
    "7x7 stride 2": Conv(1, 3, 32, 32, 64, (7, 7), stride=(2, 2), padding=(3, 3, 3, 3)),
    # stride 3 x 1 asymmetric, groups 3 (OC 15 per group), P = 10x16 = 160, K = 4*5*3 = 60. N / T / T.
    "stride 3x1 grouped 3": Conv(1, 12, 30, 17, 45, (5, 3), stride=(3, 1), padding=(0, 1, 2, 0), groups=3),
    # P = 24x24 = 576 (2 N blocks), OC 14, K = 270 (2 K blocks). N / T / N.
    "3x3 24x24 oc14": Conv(1, 30, 24, 24, 14, (3, 3), padding=(1, 1, 1, 1)),
    # P = 7x7 = 49, OC 600 (2 N blocks, edge columns). T / T / T.
    "1x1 7x7 oc600": Conv(1, 40, 7, 7, 600, (1, 1)),
    # OW = 14, P = 12x14 = 168, dilation 2, asymmetric padding, batch 2. T / T / T.
    "in place: dilated asymmetric": Conv(2, 16, 14, 15, 32, (3, 3), padding=(2, 1, 0, 2), dilation=(2, 2)),
    # OW = 7, stride 2 in height, 5x3 kernel, groups 2 (OC 32 per group), P = 10x7 = 70. T / T / T.
    "in place: stride 2x1 grouped": Conv(1, 8, 20, 7, 64, (5, 3), stride=(2, 1), padding=(2, 1, 2, 1), groups=2),
    # Width stride 2: OW = 14, stride 2x2, P = 10x14 = 140, OC 64, asymmetric padding. T / T / T.
    "in place: stride 2": Conv(1, 5, 21, 28, 64, (3, 3), stride=(2, 2), padding=(1, 1, 0, 0)),
    # The ResNet stem shape, smaller: 7x7 stride 2 on 28x28 -> 14x14, OC 64 (K = 147). T / T / T.
    "in place: 7x7 stride 2": Conv(2, 3, 28, 28, 64, (7, 7), stride=(2, 2), padding=(3, 3, 3, 3)),
    # P = 784 (7 M blocks), K = 64*9 = 576 (3 K blocks). N / T / T.
    "in place: 3x3 28x28": Conv(1, 64, 28, 28, 64, (3, 3), padding=(1, 1, 1, 1)),
}

FUSED = {
    "none": None,
    "relu": ActivationDescriptor("relu"),
    "hard_swish": ActivationDescriptor("hard_swish"),
}


def activate(act: str, y: np.ndarray) -> np.ndarray:
    if act == "relu":
        return np.maximum(y, 0)
    if act == "hard_swish":
        return y * np.clip(y / 6 + 0.5, 0, 1)
    return y


def conv_inputs(case: Conv, seed: int, has_bias: bool, has_addend: bool):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((case.n, case.c, case.h, case.w)).astype(np.float32)
    w = rng.standard_normal((case.o, case.c // case.groups, *case.kernel)).astype(np.float32)
    oh, ow = out_hw(case)
    bias = rng.standard_normal(case.o).astype(np.float32) if has_bias else None
    addend = rng.standard_normal((case.n, case.o, oh, ow)).astype(np.float32) if has_addend else None
    return x, w, bias, addend


@pytest.mark.parametrize("act, has_bias, has_addend",
                         [("none", False, False), ("relu", True, False), ("hard_swish", True, True),
                          ("relu", False, True)],
                         ids=["plain", "bias+relu", "bias+addend+hard_swish", "addend+relu"])
@pytest.mark.parametrize("name", CONV_CASES)
def test_conv_nchw(runtimes, name: str, act: str, has_bias: bool, has_addend: bool) -> None:  # type: ignore[no-untyped-def]
    case = CONV_CASES[name]
    x, w, bias, addend = conv_inputs(case, 301, has_bias, has_addend)
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, dilation=case.dilation,
                                   groups=case.groups, has_bias=has_bias, has_addend=has_addend,
                                   fused_activation=FUSED[act])
    arrays = [x, w] + ([bias] if has_bias else []) + ([addend] if has_addend else [])
    expected = conv_reference(x, w, case)
    if has_bias:
        expected += bias.astype(np.float64)[None, :, None, None]
    if has_addend:
        expected += addend
    spec = layer(LayerKind.CONVOLUTION_2D, desc, arrays, expected.shape, constants=[1, 2] if has_bias else [1])
    check_conv(runtimes, spec, arrays, activate(act, expected))


@pytest.mark.parametrize("name", ["3x3 same 14x14 oc32", "strided dilated odd sizes", "1x1 9x9 batch 3",
                                  "in place: dilated asymmetric"])
def test_conv_nchw_weights_at_run_time(runtimes, name: str) -> None:  # type: ignore[no-untyped-def]
    """Weights that are not constants: packed on the fly, OC-rows orientation."""
    case = CONV_CASES[name]
    x, w, bias, _ = conv_inputs(case, 302, True, False)
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, dilation=case.dilation,
                                   groups=case.groups, has_bias=True, fused_activation=FUSED["relu"])
    expected = conv_reference(x, w, case) + bias.astype(np.float64)[None, :, None, None]
    spec = layer(LayerKind.CONVOLUTION_2D, desc, [x, w, bias], expected.shape, constants=[])
    check_conv(runtimes, spec, [x, w, bias], activate("relu", expected))


@pytest.mark.parametrize("name", ["3x3 same 8x8 oc28 batch 2", "strided dilated odd sizes", "1x1 28x28",
                                  "grouped 2"])
def test_conv_nhwc(runtimes, name: str) -> None:  # type: ignore[no-untyped-def]
    case = CONV_CASES[name]
    x, w, bias, addend = conv_inputs(case, 303, True, True)
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, dilation=case.dilation,
                                   groups=case.groups, layout=DataLayout.NHWC, has_bias=True, has_addend=True,
                                   fused_activation=FUSED["relu"])
    expected = conv_reference(x, w, case) + bias.astype(np.float64)[None, :, None, None] + addend
    to_nhwc = (0, 2, 3, 1)
    arrays = [x.transpose(to_nhwc).copy(), w, bias, addend.transpose(to_nhwc).copy()]
    spec = layer(LayerKind.CONVOLUTION_2D, desc, arrays, expected.transpose(to_nhwc).shape, constants=[1, 2])
    check_conv(runtimes, spec, arrays, activate("relu", expected).transpose(to_nhwc))


# ---- fully connected and matmul ---------------------------------------------------------------

GEMM_SHAPES = {
    "row vector": (1, 1000, 512),
    "odd edges": (37, 45, 300),
    "tall": (250, 33, 70),
    "wide, several N blocks": (20, 1100, 260),
    "several M blocks and K blocks": (300, 90, 600),
}


@pytest.mark.parametrize("transpose_b", [False, True], ids=["b", "b^T"])
@pytest.mark.parametrize("constant_b", [True, False], ids=["constant b", "b at run time"])
@pytest.mark.parametrize("shape", GEMM_SHAPES)
def test_fully_connected(runtimes, shape: str, constant_b: bool, transpose_b: bool) -> None:  # type: ignore[no-untyped-def]
    m, n, k = GEMM_SHAPES[shape]
    rng = np.random.default_rng(304)
    a = rng.standard_normal((k, m)).astype(np.float32)   # transpose_a
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    desc = FullyConnectedDescriptor(transpose_a=True, transpose_b=transpose_b, alpha=0.5, beta=2.0, has_bias=True,
                                    fused_activation=FUSED["relu"])
    b64 = b.astype(np.float64).T if transpose_b else b.astype(np.float64)
    expected = np.maximum(0.5 * (a.astype(np.float64).T @ b64) + 2.0 * c, 0)
    spec = layer(LayerKind.FULLY_CONNECTED, desc, [a, b, c], (m, n), constants=[1, 2] if constant_b else [2])
    check_conv(runtimes, spec, [a, b, c], expected)


# A batch-1 fully connected layer with constant weights runs the GEMV kernels (no A packing,
# no M padding); (n, k) around their four-panel groups (32 columns per panel in AVX-512, 16 in
# AVX2), partial last panels and several K blocks.
GEMV_SHAPES = [(1000, 1280), (5, 7), (33, 600), (97, 257), (160, 64), (129, 1)]


@pytest.mark.parametrize("epilogue", ["none", "alpha, bias, relu"])
@pytest.mark.parametrize("transpose_a", [False, True], ids=["a", "a^T"])
@pytest.mark.parametrize("n, k", GEMV_SHAPES)
def test_fully_connected_batch_1_equals_a_batch_row(runtimes, n: int, k: int, transpose_a: bool,  # type: ignore[no-untyped-def]
                                                    epilogue: str) -> None:
    """Batch 1 agrees with the float64 oracle, and to the bit with the same vector's row of a
    batch of 3 (which runs the general GEMM micro-kernel), on every kernel set and thread count."""
    rng = np.random.default_rng(n * 7919 + k)
    rows = rng.standard_normal((3, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    fused = epilogue != "none"
    desc = FullyConnectedDescriptor(transpose_a=transpose_a, transpose_b=True, alpha=0.5 if fused else 1.0,
                                    has_bias=fused, fused_activation=FUSED["relu"] if fused else None)

    def spec_for(a: np.ndarray) -> tuple[LayerSpec, list[np.ndarray]]:
        arrays = [a.T.copy() if transpose_a else a, b] + ([c] if fused else [])
        return layer(LayerKind.FULLY_CONNECTED, desc, arrays, (a.shape[0], n), constants=[1, 2]), arrays

    one, one_arrays = spec_for(rows[1:2])
    batch, batch_arrays = spec_for(rows)
    expected = rows[1:2].astype(np.float64) @ b.astype(np.float64).T
    if fused:
        expected = np.maximum(0.5 * expected + c, 0)
    check_conv(runtimes, one, one_arrays, expected)
    for (isa, threads), rt in runtimes.items():
        np.testing.assert_array_equal(run(rt, one, one_arrays), run(rt, batch, batch_arrays)[1:2],
                                      err_msg=f"n={n} k={k}: isa={isa} num_threads={threads}")


@pytest.mark.parametrize("shape_a, shape_b", [((3, 37, 300), (300, 45)), ((2, 1, 130, 20), (3, 20, 530)),
                                              ((129,), (129, 600))])
def test_matmul(runtimes, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(305)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    spec = layer(LayerKind.MATMUL, None, [a, b], expected.shape, constants=[])
    check_conv(runtimes, spec, [a, b], expected)
