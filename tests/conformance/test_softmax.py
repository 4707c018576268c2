"""SOFTMAX along one axis (negative counts from the end); the oracle subtracts the max."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.descriptors import LayerKind, SoftmaxDescriptor
from plugnn.tensor import DataType

from .conftest import ATOL, RTOL, assert_close, assert_refused, layer_spec, run_layer, shape_id


def softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    x = x.astype(np.float64)
    if x.size == 0:
        return x
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CASES = [
    ((1,), 0),
    ((5,), 0),
    ((5,), -1),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -2),
    ((2, 3, 4), 1),
    ((2, 3, 4), -1),
    ((2, 3, 4, 5), 0),
    ((2, 3, 4, 5), -3),
    ((2, 3, 4, 5), 3),
    ((1, 1000), 1),
    ((2, 1, 3), 1),
    ((2, 0, 3), 1),
    ((2, 0, 3), 2),
]


@pytest.mark.parametrize("shape, axis", CASES, ids=shape_id)
def test_softmax(backend, shape: tuple[int, ...], axis: int) -> None:
    x = np.random.default_rng(601).standard_normal(shape).astype(np.float32) * 3
    spec = layer_spec(LayerKind.SOFTMAX, SoftmaxDescriptor(axis), [x], shape, name=f"softmax{list(shape)}@{axis}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, softmax_reference(x, axis), RTOL, ATOL, spec)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_softmax_of_large_values_stays_finite(backend, axis: int) -> None:
    x = np.array([[1000, 999, 998], [-1000, 0, 1000], [1e30, 1e30, -1e30], [-1e30, -1e30, -1e30]], np.float32)
    spec = layer_spec(LayerKind.SOFTMAX, SoftmaxDescriptor(axis), [x], x.shape, name=f"softmax_large@{axis}")
    (y,) = run_layer(backend, spec, [x])
    assert np.isfinite(y).all(), f"softmax(axis={axis}) of large values gave {y}"
    assert_close(y, softmax_reference(x, axis), RTOL, ATOL, spec)


# ---- malformed layers -----------------------------------------------------------------


@pytest.mark.parametrize("axis, inputs, output, dtypes, reason", [
    pytest.param(2, [(2, 3)], (2, 3), None, "axis", id="axis past the rank"),
    pytest.param(-3, [(2, 3)], (2, 3), None, "axis", id="negative axis past the rank"),
    pytest.param(-1, [()], (), None, "axis", id="rank 0"),
    pytest.param(1, [(2, 3)], (3, 2), None, "output", id="output shape differs"),
    pytest.param(1, [(2, 3), (2, 3)], (2, 3), None, "input", id="two inputs"),
    pytest.param(1, [(2, 3)], (2, 3), [DataType.FLOAT16], "float16", id="float16 input"),
])
def test_malformed_softmax_is_refused(backend, axis: int, inputs, output, dtypes, reason: str) -> None:
    spec = layer_spec(LayerKind.SOFTMAX, SoftmaxDescriptor(axis), inputs, output, dtypes=dtypes)
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("axis", list(range(-5, 5)))
def test_softmax_along_every_axis_of_rank_5(backend, axis: int) -> None:
    shape = (2, 3, 1, 4, 5)
    x = np.random.default_rng(602).standard_normal(shape).astype(np.float32) * 4
    spec = layer_spec(LayerKind.SOFTMAX, SoftmaxDescriptor(axis), [x], shape, name=f"softmax_rank5@{axis}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, softmax_reference(x, axis), RTOL, ATOL, spec)
    assert_close(y.astype(np.float64).sum(axis), np.ones(np.delete(shape, axis % 5)), RTOL, ATOL, spec)


@pytest.mark.parametrize("dtype, tolerance", [(DataType.FLOAT16, 2e-3), (DataType.BFLOAT16, 1.6e-2),
                                              (DataType.FLOAT64, 1e-12)], ids=lambda v: getattr(v, "name", None))
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_float_types(backend, axis: int, dtype: DataType, tolerance: float) -> None:
    """Every float type, computed in double and rounded once."""
    shape = (3, 4, 5)
    x = (np.random.default_rng(603).standard_normal(shape) * 3).astype(dtype.numpy_dtype)
    spec = layer_spec(LayerKind.SOFTMAX, SoftmaxDescriptor(axis), [x], shape, name=f"softmax_{dtype.numpy_name}@{axis}",
                      dtypes=[dtype], output_dtype=dtype)
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, softmax_reference(x.astype(np.float64), axis), tolerance, tolerance, spec)


def test_softmax_of_nan_and_infinity(backend) -> None:
    """A NaN in a line makes the line NaN; a -inf gets none of the mass."""
    x = np.array([[1, np.nan, 2], [-np.inf, 0, 0], [-np.inf, 1, -np.inf]], np.float32)
    spec = layer_spec(LayerKind.SOFTMAX, SoftmaxDescriptor(1), [x], x.shape, name="softmax_nan_inf")
    (y,) = run_layer(backend, spec, [x])
    assert np.isnan(y[0]).all()
    assert_close(y[1:], np.array([[0, 0.5, 0.5], [0, 1, 0]]), RTOL, ATOL, spec)
