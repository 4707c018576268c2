"""BITCAST (ONNX BitCast) against NumPy's view: every pair of plugnn element types of one size,
exact bytes (NaN payloads, negative zeros, subnormals included), empty and rank-0 tensors; bytes
that are no bool failing execute; malformed layers refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from plugnn import BackendError
from plugnn.descriptors import LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_refused, run_layer

BY_SIZE: dict[int, list[DataType]] = {}
for _t in DataType:
    BY_SIZE.setdefault(_t.itemsize, []).append(_t)
PAIRS = [(a, b) for types in BY_SIZE.values() for a, b in itertools.permutations(types, 2)]


def _spec(shape, source, target, out_shape=None, quant=0.0) -> LayerSpec:
    return LayerSpec(LayerKind.BITCAST, "bitcast", None, (TensorInfo(tuple(shape), source, quant),),
                     (TensorInfo(tuple(shape if out_shape is None else out_shape), target),))


def _bytes_of(source: DataType, shape, rng) -> np.ndarray:
    """Random bytes that are a valid `source` tensor (bool: 0 or 1)."""
    if source is DataType.BOOL:
        return rng.random(shape) < 0.5
    raw = rng.integers(0, 256, (*shape, source.itemsize), dtype=np.uint8)
    return raw.view(source.numpy_dtype).reshape(shape)


@pytest.mark.parametrize("source,target", PAIRS, ids=lambda t: t.numpy_name)
def test_bitcast(backend, source, target) -> None:
    rng = np.random.default_rng(source.value * 31 + target.value)
    x = _bytes_of(source, (3, 7), rng)
    if target is DataType.BOOL:
        x = (x.view(np.uint8) & 1).view(source.numpy_dtype)  # only 0 and 1 bytes become bools
    spec = _spec(x.shape, source, target)
    (y,) = run_layer(backend, spec, [x])
    assert y.tobytes() == np.ascontiguousarray(x).tobytes()
    assert y.dtype == target.numpy_dtype


def test_special_float_bits(backend) -> None:
    bits = np.array([0x7FC00001, 0xFF800000, 0x80000000, 0x00000001, 0x7F800000], np.uint32)
    (y,) = run_layer(backend, _spec(bits.shape, DataType.UINT32, DataType.FLOAT32), [bits])
    assert y.view(np.uint32).tolist() == bits.tolist()


@pytest.mark.parametrize("shape", [(), (0, 4), (1,)])
def test_shapes(backend, shape) -> None:
    x = np.full(shape, -3, np.int32)
    (y,) = run_layer(backend, _spec(shape, DataType.INT32, DataType.UINT32), [x])
    assert y.shape == shape and y.tobytes() == x.tobytes()


@pytest.mark.parametrize("source", [DataType.UINT8, DataType.INT8])
def test_bytes_that_are_no_bool_fail(backend, source) -> None:
    x = np.array([0, 1, 2, 1], np.uint8).view(source.numpy_dtype)
    with pytest.raises(BackendError, match="element 2 is the byte 2"):
        run_layer(backend, _spec(x.shape, source, DataType.BOOL), [x])


@pytest.mark.parametrize("spec,reason", [
    (_spec((3,), DataType.FLOAT32, DataType.FLOAT64), "size"),
    (_spec((3,), DataType.INT16, DataType.INT8), "size"),
    (_spec((3,), DataType.INT32, DataType.FLOAT32, out_shape=(1, 3)), "shape"),
    (_spec((3,), DataType.INT8, DataType.UINT8, quant=0.5), "quantized"),
], ids=["4 to 8 bytes", "2 to 1 byte", "shape", "quantized"])
def test_malformed_refused(backend, spec, reason) -> None:
    assert_refused(backend, spec, reason)
