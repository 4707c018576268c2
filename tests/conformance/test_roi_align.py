"""ROI_ALIGN (ONNX RoiAlign) against a NumPy float64 implementation of backend_api.h's formulas,
and against onnx.reference.

The grid: average and max, half_pixel or not, fixed and adaptive sampling ratios, spatial
scales, regions inside, straddling and outside the image, degenerate (empty and inverted)
regions, int32 and int64 batch indices, every float type. Then every malformed layer refused,
and a batch index outside the batch failing execute.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from plugnn import BackendError
from plugnn.descriptors import LayerKind, RoiAlignDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, run_layer


def _corners(y: float, x: float, h: int, w: int) -> list[tuple[int, int, float]]:
    """The bilinear corners (row, column, weight) of one sample; [] when it lies outside."""
    if h == 0 or w == 0 or y < -1.0 or y > h or x < -1.0 or x > w:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    y_lo, x_lo = int(y), int(x)
    if y_lo >= h - 1:
        y_lo = y_hi = h - 1
        y = float(y_lo)
    else:
        y_hi = y_lo + 1
    if x_lo >= w - 1:
        x_lo = x_hi = w - 1
        x = float(x_lo)
    else:
        x_hi = x_lo + 1
    ly, lx = y - y_lo, x - x_lo
    return [(y_lo, x_lo, (1 - ly) * (1 - lx)), (y_lo, x_hi, (1 - ly) * lx), (y_hi, x_lo, ly * (1 - lx)),
            (y_hi, x_hi, ly * lx)]


def roi_align_reference(x: np.ndarray, rois: np.ndarray, batch: np.ndarray, desc: RoiAlignDescriptor) -> np.ndarray:
    x = x.astype(np.float64)
    n_rois = rois.shape[0]
    c, h, w = x.shape[1:]
    oh, ow = desc.output_height, desc.output_width
    offset = 0.5 if desc.half_pixel else 0.0
    scale = f32(desc.spatial_scale)
    y = np.zeros((n_rois, c, oh, ow))
    for r in range(n_rois):
        x1, y1, x2, y2 = (float(v) for v in rois[r].astype(np.float64))
        sx, sy = x1 * scale - offset, y1 * scale - offset
        width, height = x2 * scale - offset - sx, y2 * scale - offset - sy
        if not desc.half_pixel:
            width, height = max(width, 1.0), max(height, 1.0)
        bin_h, bin_w = height / oh, width / ow
        gh = desc.sampling_ratio or math.ceil(height / oh)
        gw = desc.sampling_ratio or math.ceil(width / ow)
        image = x[int(batch[r])]
        for ph in range(oh):
            for pw in range(ow):
                samples = []
                for iy in range(max(gh, 0)):
                    yy = sy + ph * bin_h + (iy + 0.5) * bin_h / gh
                    for ix in range(max(gw, 0)):
                        xx = sx + pw * bin_w + (ix + 0.5) * bin_w / gw
                        samples.append(_corners(yy, xx, h, w))
                if not samples:
                    continue
                if desc.mode.name == "AVERAGE":
                    total = sum(wt * image[:, a, b] for corners in samples for a, b, wt in corners) if any(
                        samples) else np.zeros(c)
                    y[r, :, ph, pw] = total / max(gh * gw, 1)
                else:
                    best = None
                    for corners in samples:
                        value = np.max([wt * image[:, a, b] for a, b, wt in corners], axis=0) if corners \
                            else np.zeros(c)
                        best = value if best is None else np.maximum(best, value)
                    y[r, :, ph, pw] = best
    return y


def _spec(x_shape, n_rois, desc, dtype=DataType.FLOAT32, index_type=DataType.INT64, rois_cols=4, batch_count=None,
          out_shape=None, rois_type=None, out_type=None) -> LayerSpec:
    out = out_shape or (n_rois, x_shape[1], desc.output_height, desc.output_width)
    return LayerSpec(LayerKind.ROI_ALIGN, "roi_align", desc,
                     (TensorInfo(tuple(x_shape), dtype), TensorInfo((n_rois, rois_cols), rois_type or dtype),
                      TensorInfo((n_rois if batch_count is None else batch_count,), index_type)),
                     (TensorInfo(tuple(out), out_type or dtype),))


def _rois(rng: np.random.Generator, count: int, low: float, high: float) -> np.ndarray:
    corners = rng.uniform(low, high, (count, 2, 2))
    return np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1).astype(np.float32)


@pytest.mark.parametrize("mode", ["average", "max"])
@pytest.mark.parametrize("half_pixel", [True, False], ids=["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 1, 3])
@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_roi_align(backend, mode, half_pixel, ratio, scale) -> None:
    rng = np.random.default_rng(hash((mode, half_pixel, ratio, scale)) % 2 ** 32)
    x = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = _rois(rng, 5, -2.0, 14.0 / scale)  # some straddle or leave the image
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    desc = RoiAlignDescriptor(mode, 3, 4, ratio, scale, half_pixel)
    spec = _spec(x.shape, 5, desc)
    (y,) = run_layer(backend, spec, [x, rois, batch])
    assert_close(y, roi_align_reference(x, rois, batch, desc), RTOL, ATOL, spec)


@pytest.mark.parametrize("mode", ["average", "max"])
@pytest.mark.parametrize("half_pixel", [True, False])
def test_degenerate_regions(backend, mode, half_pixel) -> None:
    """Empty, inverted, one-pixel and fully outside regions."""
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    rois = np.array([[2, 2, 2, 2], [4, 4, 1, 1], [0, 0, 1, 1], [-9, -9, -3, -3], [20, 1, 30, 3], [0, 0, 6, 6]],
                    np.float32)
    batch = np.zeros(6, np.int32)
    desc = RoiAlignDescriptor(mode, 2, 2, 0, 1.0, half_pixel)
    spec = _spec(x.shape, 6, desc, index_type=DataType.INT32)
    (y,) = run_layer(backend, spec, [x, rois, batch])
    assert_close(y, roi_align_reference(x, rois, batch, desc), RTOL, ATOL, spec)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
def test_against_onnx_reference(backend, mode, transform) -> None:
    reference = pytest.importorskip("onnx.reference.ops.op_roi_align")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 2, 9, 8)).astype(np.float32)
    rois = _rois(rng, 4, 0.0, 8.0)
    batch = np.array([1, 0, 1, 1], np.int64)
    expected = reference.RoiAlign.eval(x, rois, batch, mode=mode, coordinate_transformation_mode=transform,
                                       output_height=3, output_width=2, sampling_ratio=2, spatial_scale=1.0)
    desc = RoiAlignDescriptor("average" if mode == "avg" else "max", 3, 2, 2, 1.0, transform == "half_pixel")
    spec = _spec(x.shape, 4, desc)
    (y,) = run_layer(backend, spec, [x, rois, batch])
    assert_close(y, expected, RTOL, ATOL, spec)


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64], ids=lambda t: t.numpy_name)
def test_float_types(backend, dtype) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 7, 7)).astype(dtype.numpy_dtype)
    rois = _rois(rng, 3, 0.0, 7.0).astype(dtype.numpy_dtype)
    batch = np.zeros(3, np.int64)
    desc = RoiAlignDescriptor("average", 2, 3, 0, 1.0, True)
    spec = _spec(x.shape, 3, desc, dtype)
    (y,) = run_layer(backend, spec, [x, rois, batch])
    rtol = {DataType.FLOAT16: 3e-3, DataType.BFLOAT16: 2e-2, DataType.FLOAT64: 1e-12}[dtype]
    assert_close(y.astype(np.float64), roi_align_reference(x, rois, batch, desc), rtol, rtol, spec)


def test_empty_shapes(backend) -> None:
    desc = RoiAlignDescriptor("average", 2, 2)
    for x_shape, n_rois in [((1, 2, 4, 4), 0), ((1, 0, 4, 4), 2), ((1, 2, 0, 4), 2)]:
        x = np.ones(x_shape, np.float32)
        rois = np.tile(np.array([[0, 0, 2, 2]], np.float32), (n_rois, 1))
        (y,) = run_layer(backend, _spec(x_shape, n_rois, desc), [x, rois, np.zeros(n_rois, np.int64)])
        assert y.shape == (n_rois, x_shape[1], 2, 2) and not y.any()


@pytest.mark.parametrize("index", [-1, 2])
def test_batch_index_out_of_range_fails(backend, index) -> None:
    desc = RoiAlignDescriptor("average", 1, 1)
    spec = _spec((2, 1, 3, 3), 2, desc)
    with pytest.raises(BackendError, match=rf"batch_indices\[1\] = {index}"):
        run_layer(backend, spec, [np.ones((2, 1, 3, 3), np.float32), np.ones((2, 4), np.float32),
                                  np.array([0, index], np.int64)])


DESC = RoiAlignDescriptor("average", 2, 2)


@pytest.mark.parametrize("spec,reason", [
    (_spec((1, 2, 4, 4), 3, DESC, rois_cols=5), "rois"),
    (_spec((1, 2, 4, 4), 3, DESC, batch_count=2), "batch_indices"),
    (_spec((1, 2, 4, 4), 3, DESC, index_type=DataType.FLOAT32), "batch_indices"),
    (_spec((1, 2, 4, 4), 3, DESC, out_shape=(3, 2, 2, 3)), "output"),
    (_spec((1, 2, 4), 3, DESC, out_shape=(3, 2, 2, 2)), "rank"),
    (_spec((1, 2, 4, 4), 3, DESC, rois_type=DataType.FLOAT64), "type"),
    (_spec((1, 2, 4, 4), 3, DESC, out_type=DataType.FLOAT16), "type"),
    (_spec((1, 2, 4, 4), 3, DESC, DataType.INT32), "float"),
], ids=["rois columns", "batch count", "batch type", "output shape", "x rank", "rois type", "output type",
        "integer x"])
def test_malformed_refused(backend, spec, reason) -> None:
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("field,value,reason", [("mode", 3, "mode"), ("mode", 0, "mode"),
                                                ("output_height", 0, "output_height"),
                                                ("spatial_scale", float("inf"), "spatial_scale"),
                                                ("half_pixel", 2, "half_pixel")])
def test_malformed_descriptor_refused(backend, field, value, reason) -> None:
    desc = RoiAlignDescriptor("average", 2, 2)
    object.__setattr__(desc, field, value)
    out = (3, 2, max(int(desc.output_height), 1), 2)
    assert_refused(backend, _spec((1, 2, 4, 4), 3, desc, out_shape=out), reason)


@pytest.mark.parametrize("mode", ["average", "max"])
def test_large_regions_are_exact(backend, mode) -> None:
    """Regions far larger than the image (adaptive grids of ~100 samples per axis, most of them
    outside): the kernel computes only the samples that can fall inside, with the result of
    computing them all (the oracle does)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    rois = np.array([[-100, -80, 300, 250], [3, 2, 400, 5]], np.float32)
    batch = np.zeros(2, np.int64)
    desc = RoiAlignDescriptor(mode, 3, 2, 0, 1.0, True)
    spec = _spec(x.shape, 2, desc)
    (y,) = run_layer(backend, spec, [x, rois, batch])
    assert_close(y, roi_align_reference(x, rois, batch, desc), RTOL, ATOL, spec)


@pytest.mark.parametrize("mode", ["average", "max"])
@pytest.mark.parametrize("corner", [1e9, 1e30])
def test_huge_region_coordinates_return(backend, mode, corner) -> None:
    """ROI coordinates of 1e9 and 1e30 with sampling_ratio 0 (a run-time input): adaptive grids
    of up to 1e9 x 1e9 samples per bin looped for 20-30 s in C and could not be interrupted. The
    work is now bounded by the image (the samples that can fall inside): each bin is computed
    from the samples inside, the others counting as 0."""
    rng = np.random.default_rng(12)
    h, w = 4, 5
    x = rng.standard_normal((1, 1, h, w)).astype(np.float32)
    rois = np.array([[0, 0, corner, corner]], np.float32)
    desc = RoiAlignDescriptor(mode, 2, 2, 0, 1.0, False)
    (y,) = run_layer(backend, _spec(x.shape, 1, desc), [x, rois, np.zeros(1, np.int64)])
    size = float(np.float32(corner))
    bin_size = size / 2
    grid = min(math.ceil(bin_size), 10**9)
    expected = np.zeros((1, 1, 2, 2))
    # Only bin (0, 0) starts inside the image; its samples inside are the first few of its grid.
    inside = [(i + 0.5) * bin_size / grid for i in range(grid if grid < 50 else 50)]
    inside = [p for p in inside if -1.0 <= p <= max(h, w)]
    values = [sum(wt * float(x[0, 0, a, b]) for a, b, wt in _corners(py, px, h, w)) if mode == "average"
              else max((wt * float(x[0, 0, a, b]) for a, b, wt in _corners(py, px, h, w)), default=0.0)
              for py in inside for px in inside]
    if mode == "average":
        expected[0, 0, 0, 0] = sum(values) / (float(grid) * float(grid))
    else:
        expected[0, 0, 0, 0] = max(values + [0.0])  # the samples outside are 0
    np.testing.assert_allclose(y.astype(np.float64), expected, rtol=1e-5, atol=1e-30)
