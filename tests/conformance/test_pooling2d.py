"""POOLING_2D: max, average (padding included or excluded) and Lp pooling.

The oracle walks the output positions and, per axis, sorts each window's taps into
real elements, taps in the padding, and taps past the end padding (ceil rounding).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from plugnn.descriptors import DataLayout, LayerKind, OutputRounding, PaddingMethod, Pooling2dDescriptor, PoolingKind
from plugnn.tensor import DataType

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, layer_spec, run_layer

# Lp pooling raises to p and takes the 1/p-th root: float32 rounding of |x|^p and of the
# root compounds, so allow a little more relative error than a plain sum.
LP_RTOL = 3e-4


def output_size(size: int, pad_begin: int, pad_end: int, kernel: int, stride: int, dilation: int,
                rounding: OutputRounding) -> int:
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    steps = -(-room // stride) if rounding is OutputRounding.CEIL else room // stride
    out = steps + 1
    if rounding is OutputRounding.CEIL and (out - 1) * stride >= size + pad_begin:
        out -= 1  # a last window that starts in the end padding is dropped
    return out


def axis_taps(size: int, pad_begin: int, pad_end: int, kernel: int, stride: int, dilation: int,
              out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output index and tap: the input index, whether it is a real element, and
    whether it lies inside the padded input (padding included, past the end padding not)."""
    index = np.arange(out)[:, None] * stride - pad_begin + np.arange(kernel)[None, :] * dilation
    real = (index >= 0) & (index < size)
    padded = (index >= -pad_begin) & (index < size + pad_end)
    return index, real, padded


def pool2d_reference(x: np.ndarray, desc: Pooling2dDescriptor) -> np.ndarray:
    x = x.astype(np.float64)
    if desc.layout is DataLayout.NHWC:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    top, left, bottom, right = desc.padding
    (kh, kw), (sh, sw), (dh, dw) = desc.kernel, desc.stride, desc.dilation
    oh = output_size(h, top, bottom, kh, sh, dh, desc.rounding)
    ow = output_size(w, left, right, kw, sw, dw, desc.rounding)
    rows, row_real, row_padded = axis_taps(h, top, bottom, kh, sh, dh, oh)
    cols, col_real, col_padded = axis_taps(w, left, right, kw, sw, dw, ow)
    p = f32(desc.p)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            taps = int(row_real[i].sum() * col_real[j].sum())
            window = x[:, :, rows[i][row_real[i]]][:, :, :, cols[j][col_real[j]]].reshape(n, c, taps)
            if desc.kind is PoolingKind.MAX:
                y[:, :, i, j] = window.max(axis=-1)
            elif desc.kind is PoolingKind.LP:
                y[:, :, i, j] = (np.abs(window) ** p).sum(axis=-1) ** (1.0 / p)
            elif desc.padding_method is PaddingMethod.INCLUDE:
                y[:, :, i, j] = window.sum(axis=-1) / (row_padded[i].sum() * col_padded[j].sum())
            else:
                y[:, :, i, j] = window.mean(axis=-1)
    return y.transpose(0, 2, 3, 1) if desc.layout is DataLayout.NHWC else y


class Window(NamedTuple):
    shape: tuple[int, int, int, int]  # NCHW
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    rounding: OutputRounding = OutputRounding.FLOOR


CEIL = OutputRounding.CEIL
WINDOWS = {
    "2x2 stride 2": Window((1, 2, 6, 6), (2, 2), (2, 2)),
    "3x3 stride 2 padded": Window((2, 3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1)),
    "3x3 stride 2 padded ceil": Window((2, 3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), rounding=CEIL),
    "ceil overhang": Window((1, 2, 6, 6), (3, 3), (2, 2), rounding=CEIL),
    "ceil last window would start in padding": Window((1, 2, 5, 5), (2, 2), (2, 2), (1, 1, 1, 1), rounding=CEIL),
    "ceil asymmetric": Window((1, 2, 4, 4), (2, 3), (1, 2), (1, 2, 0, 2), rounding=CEIL),
    "stride > kernel": Window((1, 2, 6, 5), (2, 2), (3, 3), (1, 1, 1, 1), rounding=CEIL),
    "asymmetric 4-sided padding": Window((1, 2, 5, 6), (3, 2), (1, 1), (2, 0, 1, 1)),
    "dilation": Window((1, 2, 9, 8), (3, 2), (1, 2), (2, 1, 2, 1), (2, 3)),
    "dilation ceil": Window((1, 2, 9, 8), (3, 2), (2, 2), (2, 1, 1, 2), (2, 2), CEIL),
    "global": Window((2, 3, 5, 4), (5, 4)),
    "global 1x1": Window((1, 3, 1, 1), (1, 1)),
    "1 element": Window((1, 1, 1, 1), (1, 1)),
    "empty batch": Window((0, 2, 4, 4), (2, 2), (2, 2)),
}

KINDS = {
    "max": dict(kind="max"),
    "avg_exclude": dict(kind="average", padding_method="exclude"),
    "avg_include": dict(kind="average", padding_method="include"),
    "l2": dict(kind="lp", p=2.0),
    "l3": dict(kind="lp", p=3.0),
    "lp0.7": dict(kind="lp", p=0.7),
}


def pool_input(shape_nchw: tuple[int, ...], layout: DataLayout, seed: int) -> np.ndarray:
    n, c, h, w = shape_nchw
    shape = shape_nchw if layout is DataLayout.NCHW else (n, h, w, c)
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def pool_spec(x: np.ndarray, desc: Pooling2dDescriptor, name: str):
    return layer_spec(LayerKind.POOLING_2D, desc, [x], pool2d_reference(x, desc).shape, name=name)


@pytest.mark.parametrize("layout", [DataLayout.NCHW, DataLayout.NHWC], ids=lambda layout: layout.name)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", WINDOWS)
def test_pool2d(backend, name: str, kind: str, layout: DataLayout) -> None:
    window = WINDOWS[name]
    desc = Pooling2dDescriptor(kernel=window.kernel, stride=window.stride, padding=window.padding,
                               dilation=window.dilation, rounding=window.rounding, layout=layout, **KINDS[kind])
    x = pool_input(window.shape, layout, seed=401)
    spec = pool_spec(x, desc, f"{name} {kind}")
    (y,) = run_layer(backend, spec, [x])
    rtol = LP_RTOL if desc.kind is PoolingKind.LP else RTOL
    assert_close(y, pool2d_reference(x, desc), rtol, ATOL, spec)


def test_ceil_rounding_drops_the_window_that_starts_in_padding(backend) -> None:
    """5 + 1 + 1 padded, kernel 2, stride 2: ceil gives 4 windows, but the 4th starts at
    padded index 6, inside the end padding, so the output has 3 rows and 3 columns."""
    desc = Pooling2dDescriptor("max", kernel=2, stride=2, padding=1, rounding="ceil")
    x = pool_input((1, 1, 5, 5), DataLayout.NCHW, seed=402)
    spec = layer_spec(LayerKind.POOLING_2D, desc, [x], (1, 1, 3, 3), name="ceil drop")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, pool2d_reference(x, desc), RTOL, ATOL, spec)
    assert_refused(backend, layer_spec(LayerKind.POOLING_2D, desc, [x], (1, 1, 4, 4)), "output")


@pytest.mark.parametrize("kind", ["max", "avg_exclude", "l2"])
def test_pooling_propagates_nan(backend, kind: str) -> None:
    """backend_api.h: NaN propagates through MAX (as in NumPy), and through sums."""
    x = pool_input((1, 2, 4, 4), DataLayout.NCHW, seed=404)
    x[0, 0, 1, 2] = np.nan
    x[0, 1, 3, 0] = np.nan
    desc = Pooling2dDescriptor(kernel=2, stride=2, **KINDS[kind])
    spec = pool_spec(x, desc, f"nan {kind}")
    (y,) = run_layer(backend, spec, [x])
    expected = pool2d_reference(x, desc)
    assert np.isnan(expected).sum() == 2, "test bug: expected one NaN window per channel"
    assert_close(y, expected, LP_RTOL, ATOL, spec)


@pytest.mark.parametrize("kind", ["avg_include", "l2", "l3"])
def test_windows_of_padding_only_are_defined_where_padding_has_a_value(backend, kind: str) -> None:
    """Padding >= kernel: some windows hold padding only. Including averages and Lp
    pooling still have a value there: 0."""
    desc = Pooling2dDescriptor(kernel=(2, 2), padding=(3, 2, 3, 2), **KINDS[kind])
    x = pool_input((1, 2, 3, 3), DataLayout.NCHW, seed=403)
    spec = pool_spec(x, desc, f"padding only {kind}")
    (y,) = run_layer(backend, spec, [x])
    expected = pool2d_reference(x, desc)
    assert (expected == 0).any(), "test bug: the case has no padding-only window"
    assert_close(y, expected, LP_RTOL, ATOL, spec)


@pytest.mark.parametrize("kind", ["max", "avg_exclude"])
@pytest.mark.parametrize("geometry", [
    pytest.param(dict(kernel=(2, 2), padding=(2, 0, 0, 0)), id="top padding >= kernel"),
    pytest.param(dict(kernel=(1, 2), padding=(0, 0, 0, 3), stride=(1, 2)), id="right padding past kernel"),
    pytest.param(dict(kernel=(2, 1), padding=(1, 0, 1, 0), dilation=(2, 1)), id="dilated taps skip the input"),
])
def test_windows_of_padding_only_are_refused_for_max_and_excluding_average(backend, kind: str, geometry) -> None:
    desc = Pooling2dDescriptor(**geometry, **KINDS[kind])
    x_shape = (1, 1, 1, 3)
    top, left, bottom, right = desc.padding
    oh = output_size(1, top, bottom, desc.kernel[0], desc.stride[0], desc.dilation[0], desc.rounding)
    ow = output_size(3, left, right, desc.kernel[1], desc.stride[1], desc.dilation[1], desc.rounding)
    spec = layer_spec(LayerKind.POOLING_2D, desc, [x_shape], (1, 1, oh, ow))
    assert_refused(backend, spec, "padding")


# ---- malformed layers -----------------------------------------------------------------

MAX2 = Pooling2dDescriptor("max", kernel=2, stride=2)


@pytest.mark.parametrize("desc, inputs, output, dtypes, reason", [
    pytest.param(MAX2, [(1, 2, 5, 5)], (1, 2, 3, 3), None, "output", id="ceil output shape with floor rounding"),
    pytest.param(MAX2, [(1, 2, 4, 4)], (1, 3, 2, 2), None, "output", id="channels change"),
    pytest.param(MAX2, [(2, 4, 4)], (2, 2, 2), None, "rank", id="input of rank 3"),
    pytest.param(MAX2, [(1, 2, 4, 4), (1, 2, 4, 4)], (1, 2, 2, 2), None, "input", id="two inputs"),
    pytest.param(Pooling2dDescriptor("average", kernel=5), [(1, 2, 4, 4)], (1, 2, 0, 0), None, "fit",
                 id="kernel larger than input"),
    pytest.param(MAX2, [(1, 2, 4, 4)], (1, 2, 2, 2), [DataType.UINT8], "uint8", id="uint8 input"),
])
def test_malformed_pool2d_is_refused(backend, desc, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.POOLING_2D, desc, inputs, output, dtypes=dtypes), reason)
