"""POOLING: 1-, 2- and 3-D MAX, AVERAGE (padding excluded or included) and LP pooling, against a
NumPy float64 oracle.

The oracle sorts, per axis, each window's taps into real elements, taps in the padding and taps
past the end padding (which only CEIL rounding creates), and combines the axes with outer
products. The grid: every spatial rank x kind, strides, dilations, asymmetric padding, CEIL
rounding, both padding methods, p, an empty batch, NaN, every float type and MAX on every integer
type (compared exactly); then every malformed layer refused with a reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import LayerKind, PoolingDescriptor, PoolingKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, run_layer

LP_RTOL = 3e-4


def output_size(size: int, begin: int, end: int, kernel: int, stride: int, dilation: int, ceil: bool) -> int:
    room = size + begin + end - dilation * (kernel - 1) - 1
    out = (-(-room // stride) if ceil else room // stride) + 1
    if ceil and (out - 1) * stride >= size + begin:
        out -= 1
    return out


def axis_taps(size: int, begin: int, end: int, kernel: int, stride: int, dilation: int, out: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = np.arange(out)[:, None] * stride - begin + np.arange(kernel)[None, :] * dilation
    return index, (index >= 0) & (index < size), index < size + end


def pool_reference(x: np.ndarray, desc: PoolingDescriptor) -> np.ndarray:
    x = x.astype(np.float64)
    k = desc.spatial_rank
    ceil = desc.rounding.name == "CEIL"
    outs, taps = [], []
    for a in range(k):
        args = (x.shape[2 + a], desc.pads_begin[a], desc.pads_end[a], desc.kernel[a], desc.strides[a],
                desc.dilations[a])
        outs.append(output_size(*args, ceil))
        taps.append(axis_taps(*args, outs[-1]))
    y = np.zeros((*x.shape[:2], *outs))
    p = f32(desc.p)
    for pos in np.ndindex(*outs):
        index = [taps[a][0][pos[a]] for a in range(k)]
        real = [taps[a][1][pos[a]] for a in range(k)]
        padded = [taps[a][2][pos[a]] for a in range(k)]
        picked = x[(slice(None), slice(None), *np.ix_(*[i[r] for i, r in zip(index, real)]))]
        values = picked.reshape(*x.shape[:2], int(np.prod(picked.shape[2:])))
        if desc.kind is PoolingKind.MAX:
            y[(slice(None), slice(None), *pos)] = values.max(axis=-1)
        elif desc.kind is PoolingKind.AVERAGE:
            divisor = values.shape[-1] if desc.padding_method.name == "EXCLUDE" else \
                int(np.prod([pd.sum() for pd in padded]))
            y[(slice(None), slice(None), *pos)] = values.sum(axis=-1) / divisor
        else:
            y[(slice(None), slice(None), *pos)] = (np.abs(values) ** p).sum(axis=-1) ** (1.0 / p)
    return y


def make_desc(kind: str, kernel: tuple[int, ...], *, strides: Any = 1, pads_begin: Any = 0, pads_end: Any = 0,
              dilations: Any = 1, ceil: bool = False, include: bool = False, p: float = 2.0) -> PoolingDescriptor:
    rank = len(kernel)

    def per_axis(v: Any) -> tuple[int, ...]:
        return tuple(v) if isinstance(v, (tuple, list)) else (v,) * rank

    return PoolingDescriptor(kind, kernel, per_axis(strides), per_axis(pads_begin), per_axis(pads_end),
                             per_axis(dilations), "ceil" if ceil else "floor", "include" if include else "exclude", p)


def make_spec(desc: PoolingDescriptor, x: tuple[int, ...], dtype: DataType = DataType.FLOAT32,
              out: tuple[int, ...] | None = None) -> LayerSpec:
    if out is None:
        ceil = desc.rounding.name == "CEIL"
        out = (*x[:2], *[output_size(x[2 + a], desc.pads_begin[a], desc.pads_end[a], desc.kernel[a],
                                     desc.strides[a], desc.dilations[a], ceil) for a in range(desc.spatial_rank)])
    return LayerSpec(LayerKind.POOLING, "pooling", desc, (TensorInfo(x, dtype),), (TensorInfo(out, dtype),))


# name -> (kernel, x shape, options)
GEOMETRIES: dict[str, tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = {
    "1d": ((3,), (2, 3, 10), {}),
    "1d stride 2 pads": ((3,), (1, 2, 9), {"strides": 2, "pads_begin": 1, "pads_end": 1}),
    "1d dilation 2 ceil": ((2,), (1, 2, 8), {"strides": 2, "dilations": 2, "ceil": True}),
    "1d ceil asymmetric pads": ((3,), (1, 2, 8), {"strides": 2, "pads_begin": 2, "pads_end": 0, "ceil": True}),
    "2d": ((2, 3), (2, 2, 6, 7), {}),
    "2d stride pads ceil": ((3, 3), (1, 2, 7, 6), {"strides": 2, "pads_begin": (1, 0), "pads_end": (1, 2),
                                                   "ceil": True}),
    "2d dilated": ((2, 2), (1, 3, 7, 7), {"dilations": (2, 3), "strides": (1, 2)}),
    "3d": ((2, 2, 2), (1, 2, 4, 5, 6), {}),
    "3d stride 2 pads": ((3, 3, 3), (2, 2, 5, 6, 5), {"strides": 2, "pads_begin": 1, "pads_end": 1}),
    "3d asymmetric everything": ((2, 3, 2), (1, 2, 6, 7, 5), {"strides": (1, 2, 3), "pads_begin": (1, 0, 1),
                                                              "pads_end": (0, 2, 1), "dilations": (2, 1, 1),
                                                              "ceil": True}),
    "3d global": ((3, 4, 5), (2, 3, 3, 4, 5), {}),
    "empty batch": ((2, 2, 2), (0, 2, 3, 3, 3), {}),
}
KINDS = {"max": {}, "average exclude": {}, "average include": {"include": True}, "lp 2": {"p": 2.0},
         "lp 3": {"p": 3.0}, "lp 1.5": {"p": 1.5}}


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("kind", KINDS)
def test_pooling(backend, kind: str, geometry: str) -> None:
    kernel, x_shape, options = GEOMETRIES[geometry]
    desc = make_desc(kind.split()[0], kernel, **options, **KINDS[kind])
    spec = make_spec(desc, x_shape)
    x = np.random.default_rng(len(geometry) * 7 + len(kind)).uniform(-2, 2, x_shape).astype(np.float32)
    (actual,) = run_layer(backend, spec, [x])
    assert_close(actual, pool_reference(x, desc), LP_RTOL if kind.startswith("lp") else RTOL, ATOL, spec)


def test_ceil_rounding_drops_the_window_that_starts_in_the_end_padding(backend) -> None:
    # 1-D: 5 elements, kernel 2, stride 2, pad_end 1: ceil gives 3 windows (the third [4, 5]
    # would start at 6 = in + pad_begin with one more, so there is no fourth)
    desc = make_desc("average", (2,), strides=2, pads_end=1, ceil=True, include=True)
    spec = make_spec(desc, (1, 1, 5))
    assert spec.outputs[0].shape == (1, 1, 3)
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    (actual,) = run_layer(backend, spec, [x])
    assert_close(actual, [[[0.5, 2.5, 2.0]]], 0, 0, spec)


@pytest.mark.parametrize("kind", ["max", "average", "lp"])
def test_nan_propagates(backend, kind: str) -> None:
    desc = make_desc(kind, (2, 2, 2), strides=2)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 1, 4, 4, 4)).astype(np.float32)
    x[0, 0, 1, 1, 1] = np.nan
    spec = make_spec(desc, x.shape)
    (actual,) = run_layer(backend, spec, [x])
    assert np.isnan(actual[0, 0, 0, 0, 0])
    assert np.isfinite(np.delete(actual.reshape(-1), 0)).all()


FLOAT_TOLERANCES = {DataType.FLOAT64: 1e-12, DataType.FLOAT16: 2e-3, DataType.BFLOAT16: 1.6e-2}


@pytest.mark.parametrize("dtype", list(FLOAT_TOLERANCES), ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("kind", ["max", "average", "lp"])
def test_every_float_type(backend, kind: str, dtype: DataType) -> None:
    desc = make_desc(kind, (3, 2), strides=2, pads_begin=1, ceil=True)
    x = np.random.default_rng(5).uniform(-2, 2, (1, 2, 7, 6)).astype(dtype.numpy_dtype)
    spec = make_spec(desc, x.shape, dtype)
    (actual,) = run_layer(backend, spec, [x])
    tol = FLOAT_TOLERANCES[dtype]
    assert_close(actual, pool_reference(x.astype(np.float64), desc), tol, tol, spec)


INTEGERS = [DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32,
            DataType.INT64, DataType.UINT64]


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # run_layer's NaN fill of an int output
@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_integer_max_is_exact(backend, rank: int, dtype: DataType) -> None:
    info = np.iinfo(dtype.numpy_dtype)
    shape = (2, 2, *([5] * rank))
    rng = np.random.default_rng(rank)
    x = rng.integers(info.min, info.max, shape, dtype=dtype.numpy_dtype, endpoint=True)
    x.reshape(-1)[:2] = (info.min, info.max)  # the extremes, which a float path would round
    desc = make_desc("max", (2,) * rank, strides=2, pads_begin=1, ceil=True)
    spec = make_spec(desc, shape, dtype)
    (actual,) = run_layer(backend, spec, [x])
    # the oracle on the integers themselves (no float64 rounding of 64-bit values)
    outs = spec.outputs[0].shape[2:]
    expected = np.empty(spec.outputs[0].shape, dtype=x.dtype)
    for pos in np.ndindex(*outs):
        window = tuple(slice(max(0, p * 2 - 1), p * 2 - 1 + 2) for p in pos)
        expected[(slice(None), slice(None), *pos)] = x[(slice(None), slice(None), *window)].reshape(2, 2, -1).max(-1)
    assert actual.dtype == x.dtype
    np.testing.assert_array_equal(actual, expected)


# ---- malformed layers ---------------------------------------------------------------------------


def _broken(desc: PoolingDescriptor, **fields: object) -> PoolingDescriptor:
    copy = dataclasses.replace(desc)
    for key, value in fields.items():
        object.__setattr__(copy, key, value)
    return copy


MAX3 = make_desc("max", (2, 2, 2))
AVG1 = make_desc("average", (3,), pads_begin=1, pads_end=1)
LP2 = make_desc("lp", (2, 2))


def _spec(desc: PoolingDescriptor, reference: PoolingDescriptor, x: tuple[int, ...], **kwargs: Any) -> LayerSpec:
    return make_spec(desc, x, out=make_spec(reference, x).outputs[0].shape, **kwargs)


MALFORMED = {
    "unknown kind": (lambda: _spec(_broken(MAX3, kind=4), MAX3, (1, 1, 3, 3, 3)), r"unknown pooling kind 4"),
    "spatial rank 0": (lambda: make_spec(_broken(MAX3, kernel=(), strides=(), pads_begin=(), pads_end=(),
                                                 dilations=()), (1, 1), out=(1, 1)), r"spatial_rank must be 1, 2 or 3"),
    "kernel 0": (lambda: _spec(_broken(LP2, kernel=(2, 0)), LP2, (1, 1, 4, 4)), r"kernel\[1\] must be >= 1"),
    "stride 0": (lambda: _spec(_broken(LP2, strides=(0, 1)), LP2, (1, 1, 4, 4)), r"strides\[0\] must be >= 1"),
    "dilation 0": (lambda: _spec(_broken(MAX3, dilations=(1, 1, 0)), MAX3, (1, 1, 3, 3, 3)),
                   r"dilations\[2\] must be >= 1"),
    "unknown rounding": (lambda: _spec(_broken(LP2, rounding=3), LP2, (1, 1, 4, 4)), r"unknown output rounding 3"),
    "unknown padding method": (lambda: _spec(_broken(AVG1, padding_method=0), AVG1, (1, 1, 5)),
                               r"unknown padding method 0"),
    "lp p 0": (lambda: _spec(_broken(LP2, p=0.0), LP2, (1, 1, 4, 4)), r"p must be finite and > 0"),
    "lp p inf": (lambda: _spec(_broken(LP2, p=float("inf")), LP2, (1, 1, 4, 4)), r"p must be finite and > 0"),
    "x of the wrong rank": (lambda: make_spec(MAX3, (1, 1, 3, 3), out=(1, 1, 2, 2)), r"input"),
    "window larger than the input": (lambda: make_spec(MAX3, (1, 1, 3, 1, 3), out=(1, 1, 2, 0, 2)),
                                     r"window of spatial axis 1 .* does not fit"),
    "wrong output shape": (lambda: make_spec(MAX3, (1, 1, 3, 3, 3), out=(1, 1, 2, 2, 3)), r"output"),
    "window of padding only (max)": (lambda: make_spec(make_desc("max", (2,), pads_begin=2), (1, 1, 4)),
                                     r"window 0 of spatial axis 0 covers only padding"),
    "window of padding only (average exclude)": (
        lambda: make_spec(make_desc("average", (1, 1), pads_end=(0, 1)), (1, 1, 2, 2)),
        r"window 2 of spatial axis 1 covers only padding"),
    "integer average": (lambda: make_spec(AVG1, (1, 1, 5), DataType.INT32), r"float"),
    "integer lp": (lambda: make_spec(LP2, (1, 1, 4, 4), DataType.UINT8), r"float"),
    "bool max": (lambda: make_spec(MAX3, (1, 1, 3, 3, 3), DataType.BOOL), r"bool"),
    "output of another type": (lambda: dataclasses.replace(
        make_spec(MAX3, (1, 1, 3, 3, 3)), outputs=(TensorInfo((1, 1, 2, 2, 2), DataType.FLOAT64),)),
        r"output 0 is float64"),
    "two inputs": (lambda: dataclasses.replace(make_spec(MAX3, (1, 1, 3, 3, 3)),
                                               inputs=(TensorInfo((1, 1, 3, 3, 3)),) * 2), r"input"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_layer_is_refused(backend, name: str) -> None:
    make, reason = MALFORMED[name]
    assert_refused(backend, make(), reason)


def test_padding_only_windows_have_a_value_for_lp_and_including_average(backend) -> None:
    for kind, options in (("lp", {}), ("average", {"include": True})):
        desc = make_desc(kind, (2,), pads_begin=2, **options)
        spec = make_spec(desc, (1, 1, 3))
        x = np.array([[[1.0, -2.0, 3.0]]], np.float32)
        (actual,) = run_layer(backend, spec, [x])
        assert_close(actual, pool_reference(x, desc), LP_RTOL, ATOL, spec)
        assert actual[0, 0, 0] == 0.0
