"""CpuAcc's 3-D convolutions against CpuRef: the direct blocked path (ops/conv_nchwc_3d.c: groups 1,
constant weights, on the AVX-512 kernel set; the 2-D NCHW16c kernels over the depth taps) and the
GEMM path it leaves the other layers to (grouped, run-time weights, the portable and AVX2 sets).

The sweep: kernels 1x1x1, 3x3x3, 1x3x3 and 3x1x1 (R(2+1)D's pairs), R3D's 3x7x7 stem on 3
channels, strides, asymmetric pads, dilations, pads that leave output planes with no depth tap
inside the input, channel counts that are not multiples of 16 (45, 60, 80), an input of more
than 64 channels with weights run in passes over the input blocks, kd x 1 x 1 kernels folded into
one 2-D convolution (depth-dilated, rows in segments, weights past 512 KiB), batch 2, and the fused
activations (relu and clip as the kernels' clamp, sigmoid after the transpose). Weights are
scaled by 1 / sqrt(fan-in), so outputs are of unit scale; every kernel set this machine runs, at
1, 2, 3 and 7 threads: within rtol 1e-4, atol 1e-5 of CpuRef elementwise (the measured worst:
a few 1e-6 of the output's largest value), and the same bits at every thread count."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import shapes
from plugnn.descriptors import ActivationDescriptor, ConvolutionDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from .common import BEST_ISA, HAVE_CPUACC, check_every_config

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

# name: (x shape, weights shape, strides, pads_begin, pads_end, dilations, groups, bias, activation)
CASES: dict[str, tuple[Any, ...]] = {
    "3x3x3 pad 1 relu": ((1, 16, 4, 6, 7), (32, 16, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, True,
                         "relu"),
    "3x3x3 stride 2 odd sizes": ((1, 32, 5, 9, 11), (48, 32, 3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1,
                                 True, None),
    "3x3x3 dilated asymmetric pads": ((1, 16, 7, 8, 6), (16, 16, 3, 3, 3), (1, 1, 1), (2, 0, 1), (1, 2, 0),
                                      (2, 2, 1), 1, False, "relu"),
    "1x1x1": ((2, 64, 3, 5, 6), (80, 64, 1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1, True, None),
    "1x1x1 stride 2 (downsample)": ((1, 32, 5, 7, 7), (64, 32, 1, 1, 1), (2, 2, 2), (0, 0, 0), (0, 0, 0), (1, 1, 1),
                                    1, False, None),
    "1x3x3 (2+1)-D spatial": ((1, 64, 3, 10, 9), (60, 64, 1, 3, 3), (1, 1, 1), (0, 1, 1), (0, 1, 1), (1, 1, 1), 1,
                              True, "relu"),
    "3x1x1 (2+1)-D temporal": ((1, 60, 6, 5, 4), (64, 60, 3, 1, 1), (1, 1, 1), (1, 0, 0), (1, 0, 0), (1, 1, 1), 1,
                               True, None),
    "3x1x1 stride 2": ((1, 45, 7, 4, 5), (64, 45, 3, 1, 1), (2, 1, 1), (1, 0, 0), (1, 0, 0), (1, 1, 1), 1, True,
                       "clip"),
    "3x7x7 stem on 3 channels": ((1, 3, 4, 20, 18), (64, 3, 3, 7, 7), (1, 2, 2), (1, 3, 3), (1, 3, 3), (1, 1, 1), 1,
                                 True, "relu"),
    "1x7x7 (2+1)-D stem, 45 out": ((1, 3, 2, 15, 16), (45, 3, 1, 7, 7), (1, 2, 2), (0, 3, 3), (0, 3, 3), (1, 1, 1), 1,
                                   True, "relu"),
    "planes of depth padding only": ((1, 16, 2, 4, 4), (16, 16, 1, 3, 3), (1, 1, 1), (2, 1, 1), (3, 1, 1),
                                     (1, 1, 1), 1, True, "relu"),
    "sigmoid after the transpose": ((1, 16, 3, 5, 5), (20 + 12, 16, 2, 2, 2), (1, 1, 1), (0, 1, 0), (1, 0, 1),
                                    (1, 1, 1), 1, True, "sigmoid"),
    "80 in, 45 out, kernel 2x3x2": ((2, 80, 4, 6, 5), (45, 80, 2, 3, 2), (1, 2, 1), (1, 1, 0), (0, 1, 1), (1, 1, 2), 1,
                                    True, None),
    "768 in, passes over the input blocks": ((1, 768, 2, 4, 4), (32, 768, 1, 3, 3), (1, 1, 1), (0, 1, 1), (0, 1, 1),
                                             (1, 1, 1), 1, True, "relu"),
    # kd x 1 x 1 kernels run as one 2-D convolution over D rows of H * W pixels, rows of more than
    # 112 pixels in segments; the pairs outermost when the weights pass 512 KiB
    "3x1x1 depth-dilated, row segments": ((1, 32, 6, 15, 17), (48, 32, 3, 1, 1), (1, 1, 1), (2, 0, 0), (1, 0, 0),
                                          (2, 1, 1), 1, True, "relu"),
    "3x1x1 weights beyond 512 KiB": ((1, 384, 3, 15, 17), (128, 384, 3, 1, 1), (1, 1, 1), (1, 0, 0), (1, 0, 0),
                                     (1, 1, 1), 1, True, None),
    "grouped (the GEMM path)": ((1, 32, 3, 5, 5), (32, 16, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1), 2,
                                True, "relu"),
}


def layer_of(name: str, constant: bool) -> tuple[LayerSpec, list[np.ndarray]]:
    xs, ws, strides, pb, pe, dil, groups, bias, act = CASES[name]
    activation = {"relu": ActivationDescriptor("relu"), "clip": ActivationDescriptor("bounded_relu", -0.25, 0.5),
                  "sigmoid": ActivationDescriptor("sigmoid"), None: None}[act]
    desc = ConvolutionDescriptor("forward", strides, pb, pe, dil, (0, 0, 0), groups, has_bias=bias,
                                 fused_activation=activation)
    r = np.random.default_rng(zlib.crc32(name.encode()))
    x = r.standard_normal(xs).astype(np.float32)
    w = (r.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = r.standard_normal((ws[0],)).astype(np.float32)
    infos = [TensorInfo(xs), TensorInfo(ws)] + ([TensorInfo(b.shape)] if bias else [])
    (out,) = shapes.convolution(desc, infos)
    arrays = [x, w] + ([b] if bias else [])
    constants = (None, w, b if bias else None)[:len(arrays)] if constant else ()
    layer = LayerSpec(LayerKind.CONVOLUTION, name, desc, tuple(infos), (TensorInfo(out.shape),), constants)
    return layer, arrays


def cpuref(layer: LayerSpec, arrays: list[np.ndarray]) -> np.ndarray:
    with plugnn.Runtime() as rt:
        factory = rt.backend("CpuRef").create_workload_factory()
        workload = factory.create_workload(layer)
        factory.close()
        out = np.full(layer.outputs[0].shape, np.nan, np.float32)
        workload.execute(arrays, [out])
        workload.close()
        return out


@pytest.mark.parametrize("constant", [True, False], ids=["constant weights", "run-time weights"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_conv3d(runtimes: dict, name: str, constant: bool) -> None:
    layer, arrays = layer_of(name, constant)
    expected = cpuref(layer, arrays)
    assert np.all(np.isfinite(expected))
    check_every_config(runtimes, layer, arrays, expected)


def test_depth_padding_planes_hold_the_clamped_bias(runtimes: dict) -> None:
    """Output planes whose depth taps all read padding are act(bias) (no product at all)."""
    layer, arrays = layer_of("planes of depth padding only", True)
    expected = cpuref(layer, arrays)
    bias = np.maximum(arrays[2], 0.0)
    # planes 0 and 1 read input planes -2 and -1; the last three read planes 2, 3, 4 (input depth 2)
    for plane in (0, 1, 4, 5, 6):
        np.testing.assert_array_equal(expected[0, :, plane], np.broadcast_to(bias[:, None, None], (16, 4, 4)))
    check_every_config(runtimes, layer, arrays, expected)


def packed_bytes_of(layer: LayerSpec, isa: str) -> int:
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 1, "isa": isa}}) as rt:
        backend = rt.backend("CpuAcc")
        factory = backend.create_workload_factory()
        workload = factory.create_workload(layer)
        size = int(backend.get_option("packed_weight_bytes"))
        workload.close()
        factory.close()
        return size


@pytest.mark.skipif(BEST_ISA != "avx512", reason="the blocked 3-D convolution runs on the AVX-512 kernel set")
def test_the_blocked_path_runs_the_dense_layers_on_avx512() -> None:
    """Its weights are packed per depth tap as [ocb][cb][kh][kw][ib][16] plus two bias vectors per
    block (ops/conv_nchwc_3d.h)."""
    for name in ("3x3x3 pad 1 relu", "3x7x7 stem on 3 channels", "80 in, 45 out, kernel 2x3x2"):
        layer, _ = layer_of(name, True)
        o, c, kd, kh, kw = layer.inputs[1].shape
        ib = 16 if c >= 16 else c
        ocb, cb = -(-o // 16), -(-c // ib)
        assert packed_bytes_of(layer, "avx512") == 4 * (kd * ocb * cb * kh * kw * ib * 16 + 2 * ocb * 16), name
