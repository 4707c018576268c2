"""CpuAcc's depthwise convolution and pooling kernels against float64 NumPy oracles, on shapes
that reach every path: the NCHW sub-plane kernels (stride 1 and 2 and others, rows split into
blocks, widths around the vector sizes 8 and 16, padding on every side, dilation), their direct
fallbacks (planes too wide for the stack buffer, more than 64 taps, Lp pooling), NHWC, global
pooling, batch 2, bias, addend and fused activations (clamped in registers or applied after).
Every kernel set this machine runs is checked at 1, 2, 3 and 7 threads; the thread counts of
one kernel set must give the same bits."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pytest

from plugnn.descriptors import (ActivationDescriptor, Convolution2dDescriptor, LayerKind, Pooling2dDescriptor)
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from .common import HAVE_CPUACC, check_every_config

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")


def spec(kind: LayerKind, name: str, desc: object, inputs: Sequence[tuple[int, ...]],
         output: tuple[int, ...], constants: tuple[Any, ...] = ()) -> LayerSpec:
    return LayerSpec(kind, name, desc, tuple(TensorInfo(tuple(s)) for s in inputs), (TensorInfo(tuple(output)),),
                     constants)


def seed(*key: object) -> int:
    return zlib.crc32(repr(key).encode())


def out_size(size: int, pad_begin: int, pad_end: int, kernel: int, stride: int, dilation: int,
             ceil: bool = False) -> int:
    room = size + pad_begin + pad_end - (dilation * (kernel - 1) + 1)
    out = (-(-room // stride) if ceil else room // stride) + 1
    if ceil and (out - 1) * stride >= size + pad_begin:
        out -= 1  # a last window that starts in the end padding is dropped
    return out


# ---- depthwise convolution --------------------------------------------------------------------


class Dw(NamedTuple):
    n: int
    c: int
    h: int
    w: int
    kernel: tuple[int, int] = (3, 3)
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (1, 1, 1, 1)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    mult: int = 1


DW_CASES = {
    "3x3 s1 56 wide": Dw(1, 6, 12, 56),
    "3x3 s1 batch 2 odd width": Dw(2, 5, 9, 19),
    "3x3 s1 width 17": Dw(1, 3, 5, 17),
    "3x3 s1 width 33": Dw(1, 3, 4, 33),
    "3x3 s1 width below the vector": Dw(2, 3, 4, 3),
    "3x3 s1 1x1 plane": Dw(1, 4, 1, 1),
    "3x3 s2 odd sizes": Dw(2, 4, 11, 23, stride=(2, 2)),
    "3x3 s2 even sizes": Dw(1, 4, 16, 32, stride=(2, 2)),
    "3x3 s2 112 (several row blocks)": Dw(1, 2, 112, 112, stride=(2, 2)),
    "3x3 s1 96 rows (several row blocks)": Dw(1, 2, 150, 96),
    "3x3 s2 no padding width 67": Dw(1, 3, 9, 67, stride=(2, 2), padding=(0, 0, 0, 0)),
    "3x3 s1 left padding 2 width 40": Dw(1, 2, 6, 40, padding=(1, 2, 1, 0)),
    "3x3 s1 padding 3 around width 21": Dw(1, 2, 5, 21, padding=(3, 3, 3, 3)),
    "3x3 rows stride 2 columns stride 1": Dw(1, 3, 12, 30, stride=(2, 1)),
    "3x3 rows dilated 3 columns 1": Dw(1, 2, 14, 45, padding=(3, 1, 3, 1), dilation=(3, 1)),
    "3x3 s1 width 512 (the widest direct row)": Dw(1, 2, 3, 512),
    "3x3 s1 width 513 (the sub-plane kernel)": Dw(1, 2, 3, 513),
    "3x3 s2 plane 2501 wide": Dw(1, 2, 4, 2501, stride=(2, 2)),
    "3x5 rows dilated 2, 3 columns": Dw(1, 2, 11, 37, kernel=(5, 3), padding=(4, 1, 4, 1), dilation=(2, 1)),
    "no padding": Dw(1, 3, 7, 9, padding=(0, 0, 0, 0)),
    # ow = 32: the last output vector's right taps read columns 32 and 33, past its own lanes
    "3x3 s1 no padding width 34": Dw(1, 3, 5, 34, padding=(0, 0, 0, 0)),
    "3x3 s1 right padding only width 31": Dw(1, 2, 4, 31, padding=(0, 0, 0, 3)),
    "asymmetric padding": Dw(1, 3, 8, 10, kernel=(3, 5), padding=(0, 2, 1, 3)),
    "padding >= kernel": Dw(1, 2, 5, 6, kernel=(2, 2), padding=(3, 4, 2, 3)),
    "stride 2x3 dilation 2x1": Dw(2, 3, 13, 17, stride=(2, 3), padding=(2, 1, 2, 1), dilation=(2, 1)),
    "stride 3": Dw(1, 3, 14, 20, kernel=(3, 3), stride=(3, 3), padding=(1, 0, 1, 2)),
    "5x5 s2": Dw(1, 3, 15, 21, kernel=(5, 5), stride=(2, 2), padding=(2, 2, 2, 2)),
    "9x9: more than 64 taps (direct)": Dw(1, 2, 12, 13, kernel=(9, 9), padding=(4, 4, 4, 4)),
    "plane too wide for the buffer (direct)": Dw(1, 2, 3, 5000),
    "multiplier 2": Dw(2, 3, 7, 18, mult=2),
    "multiplier 3 strided": Dw(1, 2, 9, 11, stride=(2, 2), padding=(0, 1, 1, 0), mult=3),
}


def dw_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, case: Dw) -> np.ndarray:
    """NCHW depthwise convolution (output channel o reads input channel o // mult), float64."""
    n, c, h, wd = x.shape
    kh, kw = case.kernel
    (sh, sw), (dh, dw) = case.stride, case.dilation
    top, left, bottom, right = case.padding
    oh = out_size(h, top, bottom, kh, sh, dh)
    ow = out_size(wd, left, right, kw, sw, dw)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    xp = np.repeat(xp, case.mult, axis=1)
    y = np.zeros((n, c * case.mult, oh, ow))
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            y += tap * w[None, :, 0, i, j, None, None].astype(np.float64)
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None, None]
    return y


ACTS = {
    "none": (None, lambda v: v),
    "relu6": (ActivationDescriptor("bounded_relu", 0.0, 6.0), lambda v: np.clip(v, 0, 6)),
    "relu": (ActivationDescriptor("relu"), lambda v: np.maximum(v, 0)),
    "sigmoid": (ActivationDescriptor("sigmoid"), lambda v: 1 / (1 + np.exp(-v))),
}


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("name", DW_CASES)
def test_depthwise(runtimes, name: str, layout: str) -> None:  # type: ignore[no-untyped-def]
    case = DW_CASES[name]
    rng = np.random.default_rng(seed(name))
    o = case.c * case.mult
    x = rng.standard_normal((case.n, case.c, case.h, case.w)).astype(np.float32)
    w = rng.standard_normal((o, 1, *case.kernel)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    expected = np.clip(dw_reference(x, w, bias, case), 0, 6)
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, dilation=case.dilation,
                                   groups=case.c, layout=layout, has_bias=True,
                                   fused_activation=ActivationDescriptor("bounded_relu", 0.0, 6.0))
    if layout == "nhwc":
        x, expected = x.transpose(0, 2, 3, 1), expected.transpose(0, 2, 3, 1)
    layer = spec(LayerKind.CONVOLUTION_2D, f"{name} {layout}", desc, [x.shape, w.shape, bias.shape], expected.shape,
                 constants=(None, w, bias))  # constant weights: prepacked at create time
    check_every_config(runtimes, layer, [x, w, bias], expected)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("name", ["3x3 s1 batch 2 odd width", "3x3 s2 odd sizes", "multiplier 2"])
def test_depthwise_addend_and_activation(runtimes, name: str, act: str, layout: str) -> None:  # type: ignore[no-untyped-def]
    """No bias, an addend (residual), each activation kind: in registers or after the row."""
    case = DW_CASES[name]
    rng = np.random.default_rng(7)
    o = case.c * case.mult
    x = (rng.standard_normal((case.n, case.c, case.h, case.w)) * 3).astype(np.float32)
    w = rng.standard_normal((o, 1, *case.kernel)).astype(np.float32)
    plain = dw_reference(x, w, None, case)
    addend = rng.standard_normal(plain.shape).astype(np.float32)
    descriptor, fn = ACTS[act]
    expected = fn(plain + addend)
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, groups=case.c, layout=layout,
                                   has_addend=True, fused_activation=descriptor)
    if layout == "nhwc":
        x, addend, expected = (a.transpose(0, 2, 3, 1) for a in (x, addend, expected))
    layer = spec(LayerKind.CONVOLUTION_2D, f"{name} {act} {layout}", desc, [x.shape, w.shape, addend.shape],
                 expected.shape)
    check_every_config(runtimes, layer, [x, w, addend], expected)


def test_depthwise_weights_given_at_run_time(runtimes) -> None:  # type: ignore[no-untyped-def]
    """Without constant weights the NHWC kernel transposes them into the workspace per run."""
    case = DW_CASES["3x3 s2 odd sizes"]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((case.n, case.h, case.w, case.c)).astype(np.float32)
    w = rng.standard_normal((case.c, 1, 3, 3)).astype(np.float32)
    expected = dw_reference(x.transpose(0, 3, 1, 2), w, None, case).transpose(0, 2, 3, 1)
    desc = Convolution2dDescriptor(stride=case.stride, padding=case.padding, groups=case.c, layout="nhwc")
    layer = spec(LayerKind.CONVOLUTION_2D, "runtime weights", desc, [x.shape, w.shape], expected.shape)
    check_every_config(runtimes, layer, [x, w], expected)


# ---- pooling --------------------------------------------------------------------------------------


class Pool(NamedTuple):
    shape: tuple[int, int, int, int]  # NCHW
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    ceil: bool = False


POOL_CASES = {
    "3x3 s2 p1 odd": Pool((2, 3, 13, 23), (3, 3), (2, 2), (1, 1, 1, 1)),
    "3x3 s2 p1 112": Pool((1, 2, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1)),
    "3x3 s2 p1 ceil": Pool((1, 3, 14, 18), (3, 3), (2, 2), (1, 1, 1, 1), ceil=True),
    "3x3 s2 p0 width 67": Pool((1, 2, 9, 67), (3, 3), (2, 2)),
    "3x3 s2 left pad 2 ceil width 70": Pool((1, 2, 11, 70), (3, 3), (2, 2), (1, 2, 0, 1), ceil=True),
    "3x3 s2 plane 2501 wide": Pool((1, 1, 5, 2501), (3, 3), (2, 2), (1, 1, 1, 1)),
    "5x3 s(3, 2) width 80": Pool((1, 2, 16, 80), (5, 3), (3, 2), (2, 1, 2, 1)),
    "3x3 s1 p1 width 17": Pool((2, 2, 6, 17), (3, 3), (1, 1), (1, 1, 1, 1)),
    "3x3 s1 width below the vector": Pool((1, 3, 5, 3), (3, 3), (1, 1), (1, 1, 1, 1)),
    "2x2 s2": Pool((1, 3, 10, 34), (2, 2), (2, 2)),
    "asymmetric padding": Pool((1, 2, 9, 11), (3, 2), (1, 2), (2, 0, 1, 1)),
    "dilation and stride 3": Pool((1, 2, 17, 19), (3, 2), (3, 3), (2, 1, 2, 1), (2, 3)),
    "dilation ceil": Pool((1, 2, 9, 8), (3, 2), (2, 2), (2, 1, 1, 2), (2, 2), ceil=True),
    "plane too wide for the buffer (direct)": Pool((1, 1, 3, 2500), (3, 3), (1, 1), (1, 1, 1, 1)),
    "9x9: more than 64 taps (direct)": Pool((1, 2, 11, 12), (9, 9), (1, 1), (4, 4, 4, 4)),
    # windows one row high tiling the row (1-D pooling lifted to 2-D: the tiles kernel), widths 2-5
    "1x2 s(1, 2) tiles odd width": Pool((2, 3, 1, 37), (1, 2), (1, 2)),
    "1x3 s(1, 3) tiles": Pool((1, 4, 2, 61), (1, 3), (1, 3)),
    "1x4 s(1, 4) tiles, M5's first pool": Pool((1, 32, 1, 996), (1, 4), (1, 4)),
    "1x5 s(3, 5) tiles, rows skipped": Pool((1, 2, 7, 52), (1, 5), (3, 5)),
    "1x4 s(1, 4) ceil: a partial last window (not tiles)": Pool((1, 3, 1, 30), (1, 4), (1, 4), ceil=True),
    "1x4 s(1, 4) right pad (not tiles)": Pool((1, 3, 1, 30), (1, 4), (1, 4), (0, 0, 0, 2)),
    "1x2 s(1, 2) dilation 2 (not tiles)": Pool((1, 3, 1, 31), (1, 2), (1, 2), dilation=(1, 2)),
    "global": Pool((2, 3, 7, 9), (7, 9)),
    "global NHWC channel blocks": Pool((1, 300, 3, 5), (3, 5)),
    "global large plane": Pool((1, 2, 200, 301), (200, 301)),
}

POOL_KINDS = {
    "max": dict(kind="max"),
    "avg_exclude": dict(kind="average", padding_method="exclude"),
    "avg_include": dict(kind="average", padding_method="include"),
    "l2": dict(kind="lp", p=2.0),
}


def pool_reference(x: np.ndarray, case: Pool, kind: str) -> np.ndarray:
    """NCHW pooling in float64 (max: NaN wins, -inf padding; average: count of real or of padded taps)."""
    n, c, h, w = x.shape
    top, left, bottom, right = case.padding
    (kh, kw), (sh, sw), (dh, dw) = case.kernel, case.stride, case.dilation
    oh = out_size(h, top, bottom, kh, sh, dh, case.ceil)
    ow = out_size(w, left, right, kw, sw, dw, case.ceil)
    x = x.astype(np.float64)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        rows = i * sh - top + np.arange(kh) * dh
        row_real = rows[(rows >= 0) & (rows < h)]
        row_padded = int(((rows >= -top) & (rows < h + bottom)).sum())
        for j in range(ow):
            cols = j * sw - left + np.arange(kw) * dw
            col_real = cols[(cols >= 0) & (cols < w)]
            col_padded = int(((cols >= -left) & (cols < w + right)).sum())
            win = x[:, :, row_real][:, :, :, col_real].reshape(n, c, -1)
            if kind == "max":
                y[:, :, i, j] = np.where(np.isnan(win).any(-1), np.nan, win.max(-1, initial=-np.inf))
            elif kind == "avg_include":
                y[:, :, i, j] = win.sum(-1) / (row_padded * col_padded)
            elif kind == "avg_exclude":
                y[:, :, i, j] = win.mean(-1)
            else:
                y[:, :, i, j] = np.sqrt((win * win).sum(-1))
    return y


# Lp pooling always takes the direct kernel: its wide-row cases would only repeat the narrow ones.
POOL_PARAMS = [(name, kind) for name in POOL_CASES for kind in POOL_KINDS
               if not (kind == "l2" and POOL_CASES[name].shape[-1] >= 1000)]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("name, kind", POOL_PARAMS)
def test_pooling(runtimes, name: str, kind: str, layout: str) -> None:  # type: ignore[no-untyped-def]
    case = POOL_CASES[name]
    rng = np.random.default_rng(seed(name, kind))
    x = rng.standard_normal(case.shape).astype(np.float32)
    if kind == "max":  # NaN wins; -inf and +inf are values like any other
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 97), replace=False)] = np.nan
        flat[rng.choice(flat.size, size=max(1, flat.size // 89), replace=False)] = -np.inf
        flat[rng.choice(flat.size, size=max(1, flat.size // 101), replace=False)] = np.inf
    expected = pool_reference(x, case, kind)
    desc = Pooling2dDescriptor(kernel=case.kernel, stride=case.stride, padding=case.padding,
                               dilation=case.dilation, rounding="ceil" if case.ceil else "floor",
                               layout=layout, **POOL_KINDS[kind])
    if layout == "nhwc":
        x, expected = x.transpose(0, 2, 3, 1).copy(), expected.transpose(0, 2, 3, 1)
    layer = spec(LayerKind.POOLING_2D, f"{name} {kind} {layout}", desc, [x.shape], expected.shape)
    rtol = 3e-4 if kind == "l2" else 1e-4
    check_every_config(runtimes, layer, [x], expected, rtol=rtol)


def test_global_max_propagates_nan(runtimes) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(3).standard_normal((2, 5, 20, 30)).astype(np.float32)
    x[1, 2, 19, 29] = np.nan
    x[0, 4, 0, 0] = np.nan
    desc = Pooling2dDescriptor("max", kernel=(20, 30))
    layer = spec(LayerKind.POOLING_2D, "global max nan", desc, [x.shape], (2, 5, 1, 1))
    expected = np.where(np.isnan(x).any(axis=(2, 3), keepdims=True), np.nan, np.nanmax(x, axis=(2, 3), keepdims=True))
    check_every_config(runtimes, layer, [x], expected)
