"""GRID_SAMPLE (ONNX GridSample) against a NumPy float64 implementation of backend_api.h's
formulas, and against onnx.reference for float32.

The grid: every mode x padding x align_corners on 1-, 2- and 3-D inputs with coordinates inside
and well outside [-1, 1]; exact grid points (corners, rounding ties of NEAREST), NaN and infinite
coordinates, empty axes and batches; every float type for x and for the grid, integer and bool
x. Then every malformed layer refused at is_layer_supported with a reason.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from plugnn.descriptors import GridSampleDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, run_layer

# ---- the oracle ------------------------------------------------------------------------------------

A = -0.75


def _reflect(u: float, lo: float, hi: float) -> float:
    span = hi - lo
    if span <= 0:
        return lo
    if u < lo:
        k = math.floor((lo - u) / span)
        rest = (lo - u) - k * span
        return lo + rest if k % 2 == 0 else hi - rest
    if u > hi:
        k = math.floor((u - hi) / span)
        rest = (u - hi) - k * span
        return hi - rest if k % 2 == 0 else lo + rest
    return u


def _keys(s: float) -> float:
    s = abs(s)
    if s <= 1:
        return (A + 2) * s ** 3 - (A + 3) * s ** 2 + 1
    if s < 2:
        return A * s ** 3 - 5 * A * s ** 2 + 8 * A * s - 4 * A
    return 0.0


def _axis_taps(g: float, d: int, mode: str, padding: str, align: bool) -> list[tuple[int | None, float]] | None:
    """[(index or None for a zero, weight)], or None when the output element is 0."""
    lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
    u = (g + 1) / 2 * (d - 1) if align else ((g + 1) * d - 1) / 2
    if not math.isfinite(u) or d == 0:
        return None
    if mode == "nearest":
        u = float(np.rint(u))
    if u < lo or u > hi:
        if padding == "border":
            u = min(max(u, 0.0), d - 1.0)
        elif padding == "reflection":
            u = _reflect(u, lo, hi)

    def read(j: int) -> int | None:
        if 0 <= j < d:
            return j
        if padding == "border":
            return min(max(j, 0), d - 1)
        if padding == "reflection":
            return min(max(int(_reflect(float(j), lo, hi)), 0), d - 1)
        return None

    base = math.floor(u)
    f = u - base
    if mode == "nearest":
        return [(read(int(u)), 1.0)]
    if mode == "linear":
        return [(read(base), 1 - f), (read(base + 1), f)]
    return [(read(base + t), _keys(t - f)) for t in (-1, 0, 1, 2)]


def grid_sample_reference(x: np.ndarray, grid: np.ndarray, mode: str, padding: str, align: bool) -> np.ndarray:
    """float64 values, NEAREST as exact copies of x's elements (of x's type)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    out_spatial = grid.shape[1:-1]
    xs = x.astype(np.float64) if x.dtype != np.bool_ else x.astype(np.float64)
    y = np.zeros((n, c, *out_spatial), np.float64)
    for b in range(n):
        for pos in itertools.product(*[range(s) for s in out_spatial]):
            coords = [float(v) for v in grid[(b, *pos)].astype(np.float64)][::-1]
            per_axis = [_axis_taps(g, d, mode, padding, align) for g, d in zip(coords, spatial)]
            if any(t is None for t in per_axis):
                continue
            for combo in itertools.product(*per_axis):
                if any(j is None for j, _ in combo):
                    continue
                weight = float(np.prod([w for _, w in combo]))
                y[(b, slice(None), *pos)] += weight * xs[(b, slice(None), *[j for j, _ in combo])]
    return y


def _cast_like(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """pn_store_double's conversion: integers truncated toward zero and saturated, bool non-zero."""
    if dtype == np.bool_:
        return values != 0
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.trunc(values), info.min, info.max).astype(dtype)
    return values


def _spec(x_shape, grid_shape, desc, x_type=DataType.FLOAT32, grid_type=DataType.FLOAT32, out_shape=None,
          out_type=None) -> LayerSpec:
    out = out_shape if out_shape is not None else (*x_shape[:2], *grid_shape[1:-1])
    return LayerSpec(LayerKind.GRID_SAMPLE, "grid_sample", desc,
                     (TensorInfo(tuple(x_shape), x_type), TensorInfo(tuple(grid_shape), grid_type)),
                     (TensorInfo(tuple(out), out_type or x_type),))


MODES = ("nearest", "linear", "cubic")
PADDINGS = ("zeros", "border", "reflection")


@pytest.mark.parametrize("align", [False, True], ids=["half_pixel", "align_corners"])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x_shape,grid_shape", [((2, 3, 5, 6), (2, 4, 3, 2)), ((1, 2, 7), (1, 5, 1)),
                                                 ((1, 2, 3, 4, 5), (1, 2, 3, 2, 3))],
                         ids=["2-D", "1-D", "3-D"])
def test_grid_sample(backend, mode, padding, align, x_shape, grid_shape) -> None:
    rng = np.random.default_rng(hash((mode, padding, align, len(x_shape))) % 2 ** 32)
    x = rng.standard_normal(x_shape).astype(np.float32)
    grid = rng.uniform(-2.5, 2.5, grid_shape).astype(np.float32)  # far outside too: every padding rule
    desc = GridSampleDescriptor(mode, padding, align)
    spec = _spec(x_shape, grid_shape, desc)
    (y,) = run_layer(backend, spec, [x, grid])
    assert_close(y, grid_sample_reference(x, grid, mode, padding, align), RTOL, ATOL, spec)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("align", [False, True])
def test_exact_points_and_ties(backend, mode, align) -> None:
    """Coordinates on grid points, on the borders and halfway between pixels (NEAREST's ties
    go to the even index), for every padding."""
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 3, 4) - 7.0
    values = np.array([-1.0, 1.0, 0.0, -0.5, 0.5, -0.75, 0.25, 1.0 / 3.0, -1.0 / 3.0], np.float32)
    grid = np.stack(np.meshgrid(values, values, indexing="ij"), axis=-1)[np.newaxis].astype(np.float32)
    for padding in PADDINGS:
        desc = GridSampleDescriptor(mode, padding, align)
        spec = _spec(x.shape, grid.shape, desc)
        (y,) = run_layer(backend, spec, [x, grid])
        assert_close(y, grid_sample_reference(x, grid, mode, padding, align), RTOL, ATOL, spec)


@pytest.mark.parametrize("padding", PADDINGS)
def test_non_finite_coordinates_give_zero(backend, padding) -> None:
    x = np.ones((1, 1, 3, 3), np.float32)
    grid = np.array([[[[np.nan, 0.0], [0.0, np.inf], [-np.inf, 0.0], [0.25, 0.25]]]], np.float32)
    spec = _spec(x.shape, grid.shape, GridSampleDescriptor("linear", padding))
    (y,) = run_layer(backend, spec, [x, grid])
    assert y.tolist() == [[[[0.0, 0.0, 0.0, 1.0]]]]


def test_reflection_of_one_pixel_with_align_corners(backend) -> None:
    """A spatial size of 1 with align_corners has hi == lo: every coordinate reads pixel 0."""
    x = np.array([[[[2.5]]]], np.float32)
    grid = np.array([[[[3.0, -7.0], [0.2, 0.9]]]], np.float32)
    for mode in MODES:
        spec = _spec(x.shape, grid.shape, GridSampleDescriptor(mode, "reflection", True))
        (y,) = run_layer(backend, spec, [x, grid])
        assert_close(y, grid_sample_reference(x, grid, mode, "reflection", True), RTOL, ATOL, spec)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("align", [False, True])
def test_against_onnx_reference(backend, mode, align) -> None:
    """ONNX's own reference implementation (which stores coordinates in float32) agrees."""
    reference = pytest.importorskip("onnx.reference.ops.op_grid_sample")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (2, 3, 4, 2)).astype(np.float32)
    for padding in PADDINGS:
        expected = reference.GridSample.eval(x, grid, mode=mode, padding_mode=padding, align_corners=int(align))
        spec = _spec(x.shape, grid.shape, GridSampleDescriptor(mode, padding, align))
        (y,) = run_layer(backend, spec, [x, grid])
        assert_close(y, expected, 1e-4, 1e-4, spec)


def test_empty_shapes(backend) -> None:
    desc = GridSampleDescriptor("linear", "border")
    x = np.ones((1, 2, 0, 3), np.float32)  # an empty spatial axis: every element 0
    grid = np.zeros((1, 2, 2, 2), np.float32)
    (y,) = run_layer(backend, _spec(x.shape, grid.shape, desc), [x, grid])
    assert y.shape == (1, 2, 2, 2) and not y.any()
    for x_shape, grid_shape in [((0, 2, 3, 3), (0, 2, 2, 2)), ((1, 0, 3, 3), (1, 2, 2, 2)),
                                ((1, 2, 3, 3), (1, 0, 2, 2))]:
        x = np.ones(x_shape, np.float32)
        grid = np.zeros(grid_shape, np.float32)
        (y,) = run_layer(backend, _spec(x_shape, grid_shape, desc), [x, grid])
        assert y.shape == (*x_shape[:2], *grid_shape[1:-1])


FLOATS = [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64]


@pytest.mark.parametrize("x_type", FLOATS, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("grid_type", [DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64],
                         ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("mode", MODES)
def test_float_types(backend, x_type, grid_type, mode) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 4)).astype(x_type.numpy_dtype)
    grid = rng.uniform(-1.2, 1.2, (1, 3, 3, 2)).astype(grid_type.numpy_dtype)
    spec = _spec(x.shape, grid.shape, GridSampleDescriptor(mode, "border"), x_type, grid_type)
    (y,) = run_layer(backend, spec, [x, grid])
    expected = grid_sample_reference(x, grid, mode, "border", False)
    rtol = {DataType.FLOAT16: 2e-3, DataType.BFLOAT16: 1.6e-2, DataType.FLOAT64: 1e-12}[x_type]
    assert_close(y.astype(np.float64), expected, rtol, rtol, spec)


@pytest.mark.parametrize("x_type", [DataType.INT8, DataType.UINT8, DataType.INT32, DataType.INT64, DataType.UINT16,
                                    DataType.BOOL], ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("mode", MODES)
def test_integer_and_bool_x(backend, x_type, mode) -> None:
    """NEAREST copies elements exactly (int64 beyond 2^53 too); LINEAR and CUBIC convert the
    double result as pn_elements.h stores it."""
    rng = np.random.default_rng(11)
    if x_type is DataType.BOOL:
        x = rng.random((1, 2, 4, 5)) < 0.5
    else:
        info = np.iinfo(x_type.numpy_dtype)
        x = rng.integers(max(info.min, -100), min(info.max, 100), (1, 2, 4, 5)).astype(x_type.numpy_dtype)
        if x_type is DataType.INT64 and mode == "nearest":
            x = x + np.int64(2 ** 60)
    grid = rng.uniform(-1.3, 1.3, (1, 3, 4, 2)).astype(np.float32)
    spec = _spec(x.shape, grid.shape, GridSampleDescriptor(mode, "zeros"), x_type)
    (y,) = run_layer(backend, spec, [x, grid])
    if mode == "nearest":
        expected = np.zeros(y.shape, x.dtype)
        for b, c, i, j in np.ndindex(*y.shape):
            taps = [_axis_taps(float(g), d, "nearest", "zeros", False)
                    for g, d in zip(grid[b, i, j][::-1], x.shape[2:])]
            if all(t is not None and t[0][0] is not None for t in taps):
                expected[b, c, i, j] = x[b, c, taps[0][0][0], taps[1][0][0]]
        assert np.array_equal(y, expected)
    else:
        expected = _cast_like(grid_sample_reference(x, grid, mode, "zeros", False), x.dtype)
        assert np.array_equal(y, expected), f"{spec.name}: {y.ravel()[:8]} vs {expected.ravel()[:8]}"


# ---- malformed layers -----------------------------------------------------------------------------------

DESC = GridSampleDescriptor("linear")


@pytest.mark.parametrize("spec,reason", [
    (_spec((1, 2, 4, 4), (1, 3, 3), DESC, out_shape=(1, 2, 3)), "rank"),
    (_spec((1, 2, 4, 4), (1, 3, 3, 3), DESC), "grid"),
    (_spec((1, 2, 4, 4), (2, 3, 3, 2), DESC, out_shape=(1, 2, 3, 3)), "grid"),
    (_spec((1, 2, 4, 4), (1, 3, 3, 2), DESC, out_shape=(1, 2, 3, 4)), "output"),
    (_spec((1, 2, 4, 4), (1, 3, 3, 2), DESC, out_shape=(2, 2, 3, 3)), "output"),
    (_spec((1, 2, 4, 4), (1, 3, 3, 2), DESC, out_type=DataType.FLOAT64), "output"),
    (_spec((1, 2, 4, 4), (1, 3, 3, 2), DESC, grid_type=DataType.INT32), "grid"),
    (_spec((1, 4), (1, 1), DESC, out_shape=(1, 4)), "rank"),
], ids=["grid rank", "grid last dim", "grid batch", "output spatial", "output batch", "output type",
        "grid type", "no spatial axis"])
def test_malformed_refused(backend, spec, reason) -> None:
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("field,value,reason", [("mode", 0, "mode"), ("mode", 4, "mode"), ("padding", 0, "padding"),
                                                ("padding", 4, "padding"), ("align_corners", 2, "align_corners")])
def test_malformed_descriptor_refused(backend, field, value, reason) -> None:
    desc = GridSampleDescriptor("linear")
    object.__setattr__(desc, field, value)
    assert_refused(backend, _spec((1, 2, 4, 4), (1, 3, 3, 2), desc), reason)


def test_wrong_input_count_refused(backend) -> None:
    spec = LayerSpec(LayerKind.GRID_SAMPLE, "grid_sample", DESC, (TensorInfo((1, 2, 4, 4), DataType.FLOAT32),),
                     (TensorInfo((1, 2, 4, 4), DataType.FLOAT32),))
    assert_refused(backend, spec, "input")
