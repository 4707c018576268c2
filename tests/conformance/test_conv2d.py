"""CONVOLUTION_2D: padding, stride, dilation, groups, layouts, bias, addend and fused activation.

The oracle pads the input explicitly, then sums one kernel tap at a time, one group
at a time (einsum over the group's input channels).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from plugnn.descriptors import ActivationDescriptor, Convolution2dDescriptor, DataLayout, LayerKind
from plugnn.tensor import DataType

from .conftest import ATOL, RTOL, assert_close, assert_refused, layer_spec, run_layer
from .test_activation import activation_reference


def output_size(size: int, pad_begin: int, pad_end: int, kernel: int, stride: int, dilation: int) -> int:
    """backend_api.h: floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def conv2d_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                     desc: Convolution2dDescriptor) -> np.ndarray:
    """Convolution of NCHW or NHWC `x` with weights [O, C/groups, KH, KW], in float64."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    if desc.layout is DataLayout.NHWC:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, wd = x.shape
    o, c_per_group, kh, kw = w.shape
    top, left, bottom, right = desc.padding
    (sh, sw), (dh, dw) = desc.stride, desc.dilation
    oh = output_size(h, top, bottom, kh, sh, dh)
    ow = output_size(wd, left, right, kw, sw, dw)
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    o_per_group = o // desc.groups
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            # The input each output position sees through tap (i, j): [n, c, oh, ow].
            rows = i * dh + sh * np.arange(oh)
            cols = j * dw + sw * np.arange(ow)
            tap = padded[:, :, rows[:, None], cols[None, :]]
            for g in range(desc.groups):
                ins = slice(g * c_per_group, (g + 1) * c_per_group)
                outs = slice(g * o_per_group, (g + 1) * o_per_group)
                y[:, outs] += np.einsum("nchw,oc->nohw", tap[:, ins], w[outs, :, i, j])
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None, None]
    return y.transpose(0, 2, 3, 1) if desc.layout is DataLayout.NHWC else y


class ConvCase(NamedTuple):
    n: int
    c: int
    h: int
    w: int
    o: int
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1


CASES = {
    "3x3 valid": ConvCase(1, 3, 7, 7, 4, (3, 3)),
    "3x3 same": ConvCase(2, 3, 5, 6, 4, (3, 3), padding=(1, 1, 1, 1)),
    "asymmetric 4-sided padding": ConvCase(1, 2, 5, 6, 3, (3, 2), padding=(0, 2, 1, 3)),
    "padding >= kernel": ConvCase(1, 2, 4, 4, 3, (2, 2), padding=(3, 4, 2, 3)),
    "stride > kernel": ConvCase(1, 2, 9, 9, 3, (2, 2), stride=(3, 4), padding=(0, 1, 0, 0)),
    "stride 2x1 asymmetric grouped": ConvCase(2, 4, 8, 6, 6, (3, 2), stride=(2, 1), padding=(1, 0, 2, 1), groups=2),
    "dilation": ConvCase(1, 3, 9, 10, 2, (3, 3), stride=(1, 2), padding=(2, 2, 2, 2), dilation=(2, 3)),
    "dilation with stride and groups": ConvCase(2, 6, 7, 7, 6, (3, 1), stride=(2, 2), padding=(1, 0, 1, 0),
                                                dilation=(2, 1), groups=3),
    "groups 2": ConvCase(1, 4, 5, 5, 6, (3, 3), padding=(1, 1, 1, 1), groups=2),
    "depthwise": ConvCase(1, 4, 5, 5, 4, (3, 3), padding=(1, 1, 1, 1), groups=4),
    "depthwise multiplier 2": ConvCase(1, 4, 5, 5, 8, (3, 3), padding=(1, 1, 1, 1), groups=4),
    "depthwise multiplier 3 strided": ConvCase(2, 3, 6, 7, 9, (3, 3), stride=(2, 2), padding=(0, 1, 1, 0), groups=3),
    "1x1": ConvCase(2, 5, 4, 3, 6, (1, 1)),
    "1x1 strided": ConvCase(1, 4, 5, 5, 3, (1, 1), stride=(2, 2)),
    "1x1 grouped": ConvCase(1, 8, 6, 5, 4, (1, 1), groups=2),
    "1 element": ConvCase(1, 1, 1, 1, 1, (1, 1)),
    "kernel larger than input": ConvCase(1, 2, 3, 3, 2, (5, 5), padding=(2, 2, 2, 2)),
    "3x3 on 1x1 input": ConvCase(1, 3, 1, 1, 2, (3, 3), padding=(1, 1, 1, 1)),
    "empty batch": ConvCase(0, 3, 5, 5, 2, (3, 3)),
    # Channel counts wide enough for CpuAcc's 16-channel blocked kernel (conv_nchwc.h):
    # rows split into unequal tiles, output and input channels that are not multiples of 16.
    "wide 3x3 same": ConvCase(2, 32, 9, 17, 48, (3, 3), padding=(1, 1, 1, 1)),
    "wide strided asymmetric": ConvCase(1, 16, 11, 30, 40, (3, 3), stride=(2, 2), padding=(0, 1, 2, 1)),
    "wide dilation": ConvCase(1, 48, 8, 8, 16, (3, 3), padding=(2, 2, 2, 2), dilation=(2, 2)),
    "wide 1x1": ConvCase(1, 64, 5, 29, 80, (1, 1)),
    "wide 5x5 long rows": ConvCase(1, 20, 6, 45, 18, (5, 3), stride=(1, 3), padding=(2, 1, 2, 1)),
    "wide 7x7 stride 2": ConvCase(1, 16, 15, 15, 16, (7, 7), stride=(2, 2), padding=(3, 3, 3, 3)),
}


def make_conv(case: ConvCase, layout: DataLayout, has_bias: bool, seed: int, **desc_fields):
    """Inputs x, w[, bias] and the descriptor of `case`."""
    rng = np.random.default_rng(seed)
    nchw = (case.n, case.c, case.h, case.w)
    x_shape = nchw if layout is DataLayout.NCHW else (case.n, case.h, case.w, case.c)
    x = rng.standard_normal(x_shape).astype(np.float32)
    # Weights scaled by 1/sqrt(fan-in) keep outputs near unit size whatever the channel count,
    # so the float32 rounding of long sums stays inside the fixed tolerances.
    fan_in = max(1, case.c // case.groups * case.kernel[0] * case.kernel[1])
    w = (rng.standard_normal((case.o, case.c // case.groups, *case.kernel)) / np.sqrt(fan_in)).astype(np.float32)
    bias = rng.standard_normal(case.o).astype(np.float32) if has_bias else None
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, dilation=case.dilation,
                                   groups=case.groups, layout=layout, has_bias=has_bias, **desc_fields)
    return x, w, bias, desc


def out_shape(case: ConvCase, layout: DataLayout) -> tuple[int, ...]:
    oh = output_size(case.h, case.padding[0], case.padding[2], case.kernel[0], case.stride[0], case.dilation[0])
    ow = output_size(case.w, case.padding[1], case.padding[3], case.kernel[1], case.stride[1], case.dilation[1])
    return (case.n, case.o, oh, ow) if layout is DataLayout.NCHW else (case.n, oh, ow, case.o)


LAYOUTS = [DataLayout.NCHW, DataLayout.NHWC]


@pytest.mark.parametrize("has_bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@pytest.mark.parametrize("name", CASES)
def test_conv2d(backend, name: str, layout: DataLayout, has_bias: bool) -> None:
    case = CASES[name]
    x, w, bias, desc = make_conv(case, layout, has_bias, seed=201)
    inputs = [x, w] + ([bias] if has_bias else [])
    # Weights and bias are constants, as the runtime hands them to a backend.
    spec = layer_spec(LayerKind.CONVOLUTION_2D, desc, inputs, out_shape(case, layout), name=name,
                      constants=range(1, len(inputs)))
    (y,) = run_layer(backend, spec, inputs)
    assert_close(y, conv2d_reference(x, w, bias, desc), RTOL, ATOL, spec)


@pytest.mark.parametrize("name", ["3x3 same", "depthwise multiplier 2", "dilation"])
def test_conv2d_with_weights_supplied_at_run_time(backend, name: str) -> None:
    """Weights that are not constants arrive only with execute()."""
    case = CASES[name]
    x, w, bias, desc = make_conv(case, DataLayout.NCHW, True, seed=202)
    spec = layer_spec(LayerKind.CONVOLUTION_2D, desc, [x, w, bias], out_shape(case, DataLayout.NCHW), name=name)
    (y,) = run_layer(backend, spec, [x, w, bias])
    assert_close(y, conv2d_reference(x, w, bias, desc), RTOL, ATOL, spec)


FUSED = {
    "none": None,
    "relu": ActivationDescriptor("relu"),
    "relu6": ActivationDescriptor("bounded_relu", alpha=0.0, beta=6.0),
    "leaky": ActivationDescriptor("leaky_relu", alpha=0.1),
    "sigmoid": ActivationDescriptor("sigmoid"),
    "hard_swish": ActivationDescriptor("hard_swish"),
}


@pytest.mark.parametrize("has_addend", [False, True], ids=["plain", "addend"])
@pytest.mark.parametrize("act", FUSED)
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@pytest.mark.parametrize("name", ["asymmetric 4-sided padding", "depthwise multiplier 2", "wide strided asymmetric"])
def test_conv2d_fused_activation_and_addend(backend, name: str, layout: DataLayout, act: str,
                                            has_addend: bool) -> None:
    """y = act(conv(x) + bias + addend): the residual is added before the activation."""
    case = CASES[name]
    x, w, bias, desc = make_conv(case, layout, True, seed=203, fused_activation=FUSED[act], has_addend=has_addend)
    shape = out_shape(case, layout)
    addend = np.random.default_rng(204).standard_normal(shape).astype(np.float32)
    inputs = [x, w, bias] + ([addend] if has_addend else [])
    spec = layer_spec(LayerKind.CONVOLUTION_2D, desc, inputs, shape, name=f"{name}+{act}", constants=[1, 2])
    (y,) = run_layer(backend, spec, inputs)
    expected = conv2d_reference(x, w, bias, desc) + (addend if has_addend else 0.0)
    assert_close(y, activation_reference(FUSED[act], expected), RTOL, ATOL, spec)


# ---- malformed layers -----------------------------------------------------------------

X = (1, 3, 5, 5)
W = (4, 3, 3, 3)
Y = (1, 4, 3, 3)
PLAIN = Convolution2dDescriptor()
FLOAT32, INT64_X = None, [DataType.INT64, DataType.FLOAT32]  # dtypes: all float32; x int64


@pytest.mark.parametrize("desc, inputs, output, dtypes, reason", [
    pytest.param(PLAIN, [X, (4, 2, 3, 3)], Y, FLOAT32, "weights", id="weights dim 1 is not C/groups"),
    pytest.param(PLAIN, [X, (4, 3, 3)], Y, FLOAT32, "rank", id="weights of rank 3"),
    pytest.param(PLAIN, [(3, 5, 5), W], (4, 3, 3), FLOAT32, "rank", id="input of rank 3"),
    pytest.param(Convolution2dDescriptor(groups=2), [X, (4, 1, 3, 3)], Y, FLOAT32, "groups",
                 id="groups does not divide input channels"),
    pytest.param(Convolution2dDescriptor(groups=3), [X, (4, 1, 3, 3)], Y, FLOAT32, "groups",
                 id="groups does not divide output channels"),
    pytest.param(PLAIN, [X, W], (1, 4, 4, 4), FLOAT32, "output", id="output shape mismatch"),
    pytest.param(Convolution2dDescriptor(layout="nhwc"), [X, W], Y, FLOAT32, "weights",
                 id="NCHW shapes with NHWC layout"),
    pytest.param(PLAIN, [X, W, (4,)], Y, FLOAT32, "input", id="bias given without the flag"),
    pytest.param(Convolution2dDescriptor(has_bias=True), [X, W], Y, FLOAT32, "input", id="bias flag without bias"),
    pytest.param(Convolution2dDescriptor(has_bias=True), [X, W, (3,)], Y, FLOAT32, "bias", id="bias of wrong length"),
    pytest.param(Convolution2dDescriptor(has_addend=True), [X, W, (1, 4, 3, 2)], Y, FLOAT32, "addend",
                 id="addend of wrong shape"),
    pytest.param(PLAIN, [(1, 3, 2, 2), W], (1, 4, 0, 0), FLOAT32, "fit", id="kernel larger than padded input"),
    pytest.param(PLAIN, [X, W], Y, INT64_X, "int64", id="int64 input"),
])
def test_malformed_conv2d_is_refused(backend, desc, inputs, output, dtypes, reason: str) -> None:
    spec = layer_spec(LayerKind.CONVOLUTION_2D, desc, inputs, output, dtypes=dtypes)
    assert_refused(backend, spec, reason)


def test_float16_conv2d_output_is_refused(backend) -> None:
    spec = layer_spec(LayerKind.CONVOLUTION_2D, PLAIN, [X, W], Y, output_dtype=DataType.FLOAT16)
    assert_refused(backend, spec, "float16")
