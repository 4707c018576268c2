"""LINEAR_ALGEBRA (ONNX Det) against NumPy's float64 determinant: batches of matrices of sizes
0 to 9, singular and ill-conditioned ones, pivoting that swaps rows, NaN and infinities, every
float type. Then every malformed layer refused."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.descriptors import LayerKind, LinearAlgebraDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_close, assert_refused, run_layer

DET = LinearAlgebraDescriptor("determinant")


def _spec(shape, out_shape=None, dtype=DataType.FLOAT32, out_type=None, desc=DET) -> LayerSpec:
    out = tuple(shape[:-2]) if out_shape is None else tuple(out_shape)
    return LayerSpec(LayerKind.LINEAR_ALGEBRA, "det", desc, (TensorInfo(tuple(shape), dtype),),
                     (TensorInfo(out, out_type or dtype),))


def _expected(x: np.ndarray) -> np.ndarray:
    return np.linalg.det(x.astype(np.float64)) if x.shape[-1] else np.ones(x.shape[:-2])


@pytest.mark.parametrize("shape", [(3, 3), (4, 2, 2), (2, 3, 5, 5), (1, 1), (6, 9, 9), (2, 0, 0), (0, 3, 3)])
def test_determinant(backend, shape) -> None:
    x = np.random.default_rng(len(shape) * 10 + shape[-1]).standard_normal(shape).astype(np.float32)
    spec = _spec(shape)
    (y,) = run_layer(backend, spec, [x])
    # Elimination in double of float32 inputs: relative to the scale of the products.
    scale = np.prod(np.maximum(np.abs(x.astype(np.float64)).max(axis=-1), 1e-30), axis=-1) if shape[-1] else 1.0
    assert_close(y, _expected(x), 1e-5, 1e-6 * float(np.max(scale, initial=1.0)), spec)


def test_singular_and_pivoting(backend) -> None:
    x = np.array([[[1, 2], [2, 4]],             # singular: 0
                  [[0, 1], [1, 0]],             # a row swap: -1
                  [[0, 0], [0, 0]],             # zero
                  [[1e-30, 1], [1, 1e-30]],     # tiny pivots: pivoting keeps it exact
                  [[2, 0], [0, 3]]], np.float64)
    spec = _spec(x.shape, dtype=DataType.FLOAT64)
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, np.linalg.det(x), 1e-12, 1e-12, spec)


def test_non_finite(backend) -> None:
    x = np.array([[[np.nan, 1], [1, 1]], [[np.inf, 1], [1, 2]]], np.float32)
    (y,) = run_layer(backend, _spec(x.shape), [x])
    assert np.isnan(y[0]) and y[1] == np.inf


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64], ids=lambda t: t.numpy_name)
def test_float_types(backend, dtype) -> None:
    x = (np.random.default_rng(3).standard_normal((3, 4, 4)) * 0.7).astype(dtype.numpy_dtype)
    spec = _spec(x.shape, dtype=dtype)
    (y,) = run_layer(backend, spec, [x])
    tol = {DataType.FLOAT16: 2e-3, DataType.BFLOAT16: 1.6e-2, DataType.FLOAT64: 1e-12}[dtype]
    assert_close(y.astype(np.float64), _expected(x), tol, tol, spec)


@pytest.mark.parametrize("spec,reason", [
    (_spec((3, 4), out_shape=()), "square"),
    (_spec((3,), out_shape=()), "rank"),
    (_spec((2, 3, 3), out_shape=(3,)), "output"),
    (_spec((2, 3, 3), out_shape=(2, 1)), "output"),
    (_spec((3, 3), dtype=DataType.INT32), "float"),
    (_spec((3, 3), out_type=DataType.FLOAT64), "output"),
], ids=["not square", "rank 1", "output batch", "output rank", "integer", "output type"])
def test_malformed_refused(backend, spec, reason) -> None:
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("op", [0, 2])
def test_unknown_op_refused(backend, op) -> None:
    desc = LinearAlgebraDescriptor()
    object.__setattr__(desc, "op", op)
    assert_refused(backend, _spec((3, 3), desc=desc), "op")
