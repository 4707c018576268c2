"""CpuAcc's 1.1 spatial kinds against CpuRef (the oracle, itself checked against NumPy by
tests/conformance): CONVOLUTION (forward 1-D and 2-D on CONVOLUTION_2D's paths, 3-D through a
GEMM here (too few channels for the blocked 3-D path, which test_conv3d_blocked.py sweeps); transposed 1-, 2- and 3-D through a GEMM and col2im: stride, kernel, dilation, padding,
output_padding, groups, bias, fused activations, constant and run-time weights), POOLING 1-D and
2-D (3-D refused), RESIZE (NEAREST on any axes with every nearest mode and coordinate
transform; LINEAR and CUBIC along the last two axes, antialias, exclude_outside, extrapolation;
LINEAR along another axis refused) and PAD (every mode, negative pads, ranks 1 to 5, the value
input). Every kernel set this machine runs is checked at 1, 2, 3 and 7 threads: within
rtol 1e-4, atol 1e-5 of CpuRef, and the same bits at every thread count of one kernel set."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import shapes
from plugnn.descriptors import (ActivationDescriptor, ConvolutionDescriptor, LayerKind, PadDescriptor,
                                PoolingDescriptor, ResizeDescriptor)
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from .common import HAVE_CPUACC, check_every_config

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")


def rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def spec(kind: LayerKind, name: str, desc: Any, inputs: Sequence[tuple[int, ...]], output: tuple[int, ...],
         constants: tuple[Any, ...] = ()) -> LayerSpec:
    return LayerSpec(kind, name, desc, tuple(TensorInfo(tuple(s)) for s in inputs), (TensorInfo(tuple(output)),),
                     constants)


def cpuref(layer: LayerSpec, arrays: Sequence[np.ndarray]) -> np.ndarray:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuRef")
        out = np.full(layer.outputs[0].shape, np.nan, np.float32)
        factory = backend.create_workload_factory()
        workload = factory.create_workload(layer)
        factory.close()
        workload.execute([np.array(a, np.float32) for a in arrays], [out])
        workload.close()
        return out


def refused(layer: LayerSpec) -> str:
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(layer)
        assert not support.supported
        return support.reason


# ---- CONVOLUTION -----------------------------------------------------------------------------

# name: (op, x shape, weights shape, strides, pads_begin, pads_end, dilations, output_padding, groups, bias, act)
CONV_CASES: dict[str, tuple[Any, ...]] = {
    # forward 1-D: audio_m5's first layer (k 80, stride 16), then its 3-tap layers
    "fwd1d audio stem k80 s16": ("forward", (1, 1, 1601), (32, 1, 80), (16,), (0,), (0,), (1,), (0,), 1, True, None),
    "fwd1d 3 taps 32->64": ("forward", (2, 32, 37), (64, 32, 3), (1,), (1,), (1,), (1,), (0,), 1, True, "relu"),
    "fwd1d dilated grouped": ("forward", (1, 8, 50), (12, 2, 5), (2,), (3,), (1,), (2,), (0,), 4, False, None),
    "fwd1d depthwise": ("forward", (2, 24, 31), (24, 1, 3), (1,), (1,), (1,), (1,), (0,), 24, True, "tanh"),
    "fwd1d blocked 64->96": ("forward", (1, 64, 200), (96, 64, 3), (1,), (1,), (1,), (1,), (0,), 1, True, "relu"),
    "fwd2d 3x3 via the N-D kind": ("forward", (1, 16, 13, 11), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1),
                                   (0, 0), 1, True, "relu"),
    "fwd2d strided dilated grouped": ("forward", (2, 6, 17, 14), (9, 2, 3, 2), (2, 1), (2, 0), (1, 1), (2, 3),
                                      (0, 0), 3, True, None),
    "fwd3d 3x3x3": ("forward", (1, 4, 6, 7, 8), (8, 4, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1),
                    (0, 0, 0), 1, True, "relu"),
    "fwd3d strided dilated grouped": ("forward", (2, 6, 7, 9, 5), (4, 3, 2, 3, 1), (2, 1, 2), (0, 2, 1), (1, 0, 0),
                                      (2, 2, 1), (0, 0, 0), 2, False, "sigmoid"),
    # transposed: U-Net's 2x2 stride 2 upsampling first
    "deconv2d 2x2 s2 (U-Net)": ("transposed", (1, 32, 7, 9), (32, 16, 2, 2), (2, 2), (0, 0), (0, 0), (1, 1),
                                (0, 0), 1, True, None),
    "deconv2d 3x3 s2 pads output_padding": ("transposed", (2, 8, 5, 6), (8, 6, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1),
                                            (1, 1), 1, True, "relu"),
    "deconv2d 4x4 s2 pad 1 (DCGAN)": ("transposed", (1, 16, 4, 4), (16, 8, 4, 4), (2, 2), (1, 1), (1, 1), (1, 1),
                                      (0, 0), 1, False, "tanh"),
    "deconv2d dilated grouped": ("transposed", (1, 6, 5, 7), (6, 2, 3, 2), (1, 2), (0, 1), (2, 0), (2, 1), (0, 1), 3,
                                 True, None),
    "deconv2d stride 3 crop": ("transposed", (1, 3, 4, 5), (3, 5, 2, 3), (3, 3), (1, 2), (2, 1), (1, 1), (2, 0), 1,
                               True, "leaky_relu"),
    "deconv2d output_padding beyond the taps": ("transposed", (1, 2, 3, 3), (2, 3, 1, 1), (3, 3), (0, 0), (0, 0),
                                                (1, 1), (2, 2), 1, True, None),
    "deconv2d 1x1": ("transposed", (2, 5, 6, 4), (5, 7, 1, 1), (1, 1), (0, 0), (0, 0), (1, 1), (0, 0), 1, False,
                     None),
    "deconv2d depthwise": ("transposed", (1, 8, 5, 5), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1), 8, True,
                           None),
    "deconv2d large (several chunks)": ("transposed", (1, 64, 40, 48), (64, 32, 2, 2), (2, 2), (0, 0), (0, 0), (1, 1),
                                        (0, 0), 1, True, "relu"),
    "deconv1d": ("transposed", (2, 4, 9), (4, 6, 4), (2,), (1,), (1,), (1,), (1,), 1, True, None),
    "deconv1d dilated": ("transposed", (1, 3, 7), (3, 2, 3), (3,), (0,), (2,), (2,), (0,), 1, False, "relu"),
    "deconv3d": ("transposed", (1, 4, 3, 4, 5), (4, 3, 2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 1, 1),
                 (1, 0, 1), 1, True, None),
    "deconv3d grouped dilated": ("transposed", (2, 4, 3, 3, 3), (4, 1, 2, 2, 2), (1, 2, 1), (0, 0, 0), (0, 0, 0),
                                 (2, 1, 2), (0, 1, 0), 2, True, "relu"),
}


def conv_layer(name: str, constant: bool) -> tuple[LayerSpec, list[np.ndarray]]:
    op, xs, ws, strides, pb, pe, dil, outpad, groups, bias, act = CONV_CASES[name]
    desc = ConvolutionDescriptor(op, strides, pb, pe, dil, outpad, groups, has_bias=bias,
                                 fused_activation=ActivationDescriptor(act, 0.1) if act else None)
    r = rng("conv", name)
    x = r.standard_normal(xs).astype(np.float32)
    w = r.standard_normal(ws).astype(np.float32)
    b = r.standard_normal((ws[0] * groups if op == "forward" else ws[1] * groups,)).astype(np.float32)
    if op == "forward":
        b = b[:ws[0]]
    infos = [TensorInfo(xs), TensorInfo(ws)] + ([TensorInfo(b.shape)] if bias else [])
    (out,) = shapes.convolution(desc, infos)
    arrays = [x, w] + ([b] if bias else [])
    constants = (None, w, b if bias else None)[:len(arrays)] if constant else ()
    return spec(LayerKind.CONVOLUTION, name, desc, [i.shape for i in infos], out.shape, constants), arrays


@pytest.mark.parametrize("constant", [True, False], ids=["constant weights", "run-time weights"])
@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_convolution(runtimes: dict, name: str, constant: bool) -> None:
    layer, arrays = conv_layer(name, constant)
    check_every_config(runtimes, layer, arrays, cpuref(layer, arrays))


def test_convolution_empty_batch(runtimes: dict) -> None:
    for name in ("fwd1d 3 taps 32->64", "fwd3d 3x3x3", "deconv2d 2x2 s2 (U-Net)"):
        layer, arrays = conv_layer(name, True)
        xs = (0, *layer.inputs[0].shape[1:])
        out = (0, *layer.outputs[0].shape[1:])
        empty = spec(LayerKind.CONVOLUTION, name, layer.descriptor, [xs, *(i.shape for i in layer.inputs[1:])], out,
                     layer.constants)
        check_every_config(runtimes, empty, [np.zeros(xs, np.float32), *arrays[1:]], np.zeros(out, np.float32))


# ---- POOLING ----------------------------------------------------------------------------------

POOL_CASES: dict[str, tuple[Any, ...]] = {
    # name: (x shape, kind, kernel, strides, pads_begin, pads_end, dilations, ceil, include padding)
    "max1d k4 s4 (audio)": ((1, 32, 397), "max", (4,), (4,), (0,), (0,), (1,), False, False),
    "avg1d k3 s2 pad": ((2, 5, 20), "average", (3,), (2,), (1,), (1,), (1,), False, True),
    "avg1d exclude ceil": ((1, 3, 21), "average", (4,), (3,), (2,), (1,), (1,), True, False),
    "lp1d dilated": ((1, 4, 30), "lp", (3,), (1,), (0,), (0,), (2,), False, False),
    "max2d 3x3 s2 pad": ((1, 8, 15, 17), "max", (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), False, False),
    "avg2d ceil dilated": ((2, 3, 11, 9), "average", (2, 3), (2, 1), (0, 1), (1, 0), (2, 1), True, True),
}


@pytest.mark.parametrize("name", sorted(POOL_CASES))
def test_pooling(runtimes: dict, name: str) -> None:
    xs, kind, k, s, pb, pe, dil, ceil, include = POOL_CASES[name]
    desc = PoolingDescriptor(kind, k, s, pb, pe, dil, "ceil" if ceil else "floor",
                             "include" if include else "exclude", 3.0 if kind == "lp" else 2.0)
    (out,) = shapes.pooling(desc, [TensorInfo(xs)])
    layer = spec(LayerKind.POOLING, name, desc, [xs], out.shape)
    x = rng("pool", name).standard_normal(xs).astype(np.float32)
    check_every_config(runtimes, layer, [x], cpuref(layer, [x]))


def test_pooling_3d_is_refused() -> None:
    desc = PoolingDescriptor("max", (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0), (1, 1, 1))
    layer = spec(LayerKind.POOLING, "pool3d", desc, [(1, 2, 4, 4, 4)], (1, 2, 2, 2, 2))
    assert refused(layer) == "CpuAcc runs Pooling on 1-D and 2-D inputs only; this one is 3-D"


# ---- RESIZE ----------------------------------------------------------------------------------

TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
              "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_layer(xs: tuple[int, ...], ys: tuple[int, ...], **kw: Any) -> tuple[LayerSpec, list[np.ndarray]]:
    scales = kw.pop("scales", None) or tuple(o / i for o, i in zip(ys, xs))
    desc = ResizeDescriptor(scales=scales, **kw)
    layer = spec(LayerKind.RESIZE, "resize", desc, [xs], ys)
    return layer, [rng("resize", xs, ys, repr(kw)).standard_normal(xs).astype(np.float32)]


ROI = dict(roi_start=(0, 0, 0.2, -0.1), roi_end=(1, 1, 0.9, 1.3), extrapolation_value=-2.5)


@pytest.mark.parametrize("mode", NEAREST_MODES)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_resize_nearest(runtimes: dict, transform: str, mode: str) -> None:
    extra = ROI if transform == "tf_crop_and_resize" else {}
    for xs, ys in (((1, 3, 7, 5), (1, 3, 14, 10)), ((2, 2, 9, 8), (2, 2, 5, 13)), ((1, 4, 6, 6), (1, 4, 6, 11))):
        layer, arrays = resize_layer(xs, ys, mode="nearest", coordinates=transform, nearest_mode=mode, **extra)
        check_every_config(runtimes, layer, arrays, cpuref(layer, arrays))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_resize_interpolating(runtimes: dict, transform: str, mode: str) -> None:
    extra = ROI if transform == "tf_crop_and_resize" else {}
    for xs, ys in (((1, 3, 7, 5), (1, 3, 14, 10)), ((2, 2, 9, 8), (2, 2, 5, 13)), ((1, 4, 1, 6), (1, 4, 3, 11)),
                   ((1, 2, 28, 28), (1, 2, 224, 224))):
        layer, arrays = resize_layer(xs, ys, mode=mode, coordinates=transform, **extra)
        check_every_config(runtimes, layer, arrays, cpuref(layer, arrays))


RESIZE_CASES: dict[str, tuple[Any, ...]] = {
    "nearest 5-D every axis": ((2, 3, 4, 5, 3), (3, 5, 2, 10, 6), dict(mode="nearest")),
    "nearest rank 1": ((7,), (20,), dict(mode="nearest", coordinates="asymmetric")),
    "nearest rank 2 downscale": ((9, 13), (4, 5), dict(mode="nearest", nearest_mode="ceil")),
    "nearest scales not the size ratio": ((1, 2, 5, 6), (1, 2, 9, 13), dict(mode="nearest", scales=(1, 1, 1.9, 2.3))),
    "nearest exclude_outside": ((1, 2, 5, 6), (1, 2, 12, 13),
                                dict(mode="nearest", coordinates="asymmetric", nearest_mode="ceil",
                                     exclude_outside=True)),
    "nearest FPN x2": ((1, 16, 14, 14), (1, 16, 28, 28), dict(mode="nearest", coordinates="asymmetric",
                                                             nearest_mode="floor")),
    "linear align_corners x8 (DeepLab)": ((1, 21, 28, 28), (1, 21, 224, 224),
                                          dict(mode="linear", coordinates="align_corners")),
    "linear last axis only (rank 3)": ((2, 3, 10), (2, 3, 25), dict(mode="linear")),
    "linear rank 1": ((10,), (4,), dict(mode="linear", coordinates="align_corners")),
    "linear antialias downscale": ((1, 2, 40, 37), (1, 2, 9, 11), dict(mode="linear", antialias=True)),
    "cubic antialias downscale": ((1, 2, 33, 30), (1, 2, 10, 7), dict(mode="cubic", antialias=True)),
    "cubic exclude_outside a=-0.5": ((1, 2, 8, 9), (1, 2, 15, 17), dict(mode="cubic", exclude_outside=True,
                                                                         cubic_coeff_a=-0.5)),
    "linear upscale by 1 (no axis resized)": ((1, 2, 5, 6), (1, 2, 5, 6), dict(mode="linear")),
    "linear empty batch": ((0, 3, 4, 4), (0, 3, 8, 8), dict(mode="linear", scales=(1, 1, 2, 2))),
}


@pytest.mark.parametrize("name", sorted(RESIZE_CASES))
def test_resize_cases(runtimes: dict, name: str) -> None:
    xs, ys, kw = RESIZE_CASES[name]
    layer, arrays = resize_layer(xs, ys, **kw)
    check_every_config(runtimes, layer, arrays, cpuref(layer, arrays))


def test_resize_linear_along_an_outer_axis_is_refused() -> None:
    layer, _ = resize_layer((1, 3, 4, 4), (1, 6, 8, 8), mode="linear")
    assert refused(layer) == "CpuAcc resizes LINEAR only along the last two axes; axis 1 (of rank 4) is resized"
    layer, _ = resize_layer((2, 3, 4), (4, 3, 4), mode="cubic")
    assert refused(layer) == "CpuAcc resizes CUBIC only along the last two axes; axis 0 (of rank 3) is resized"


def test_resize_with_too_many_taps_is_refused() -> None:
    layer, _ = resize_layer((1, 1, 1, 5000), (1, 1, 1, 2), mode="linear", antialias=True)
    assert refused(layer) == ("CpuAcc resizes with at most 2048 taps per output; axis 3 (antialias, scale 0.0004) "
                              "needs more")


# ---- PAD -------------------------------------------------------------------------------------

PAD_CASES: dict[str, tuple[Any, ...]] = {
    # name: (x shape, mode, pads_begin, pads_end, value)
    "constant NCHW": ((2, 3, 5, 7), "constant", (0, 0, 1, 2), (0, 0, 3, 1), 1.5),
    "constant zero default": ((2, 3, 5, 7), "constant", (0, 1, 1, 0), (1, 0, 0, 2), None),
    "constant crop and pad": ((3, 6, 8), "constant", (-1, 2, -3), (1, -2, 2), -4.0),
    "constant crop everything along an axis": ((3, 4, 5), "constant", (0, -2, 1), (0, -2, 1), 2.0),
    "reflect NCHW": ((1, 2, 6, 9), "reflect", (0, 0, 2, 3), (0, 0, 5, 8), None),
    "reflect crop": ((2, 7, 8), "reflect", (1, -2, 3), (0, 2, -1), None),
    "edge NCHW": ((2, 2, 4, 5), "edge", (0, 0, 3, 6), (0, 0, 2, 1), None),
    "edge every axis": ((2, 3, 4), "edge", (1, 2, 3), (2, 1, 0), None),
    "wrap periodic beyond the size": ((2, 3, 4), "wrap", (0, 5, 9), (1, 4, 2), None),
    "rank 1": ((10,), "reflect", (4,), (9,), None),
    "rank 5": ((1, 2, 3, 4, 5), "edge", (0, 1, 0, 2, 1), (1, 0, 2, 0, 3), None),
    "wide rows": ((1, 1, 3, 5000), "constant", (0, 0, 1, 7), (0, 0, 1, 9), 3.0),
    "empty input constant": ((2, 0, 3), "constant", (0, 2, 1), (0, 1, 0), 7.0),
}


@pytest.mark.parametrize("name", sorted(PAD_CASES))
def test_pad(runtimes: dict, name: str) -> None:
    xs, mode, pb, pe, value = PAD_CASES[name]
    desc = PadDescriptor(mode, pb, pe)
    inputs = [xs] + ([(1,)] if value is not None else [])
    (out,) = shapes.pad(desc, [TensorInfo(s) for s in inputs])
    layer = spec(LayerKind.PAD, name, desc, inputs, out.shape)
    arrays = [rng("pad", name).standard_normal(xs).astype(np.float32)] + (
        [np.array([value], np.float32)] if value is not None else [])
    check_every_config(runtimes, layer, arrays, cpuref(layer, arrays))
