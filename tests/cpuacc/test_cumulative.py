"""CUMULATIVE on CpuAcc (plugins/accel/src/ops/cumulative.c) on every kernel set at 1, 2, 3 and 7
threads against CpuRef, bit for bit: SUM and PROD, forward and reverse, inclusive and
exclusive, every axis, int32 and int64 wrapping at their ends, float32 accumulated in double
(NaN and infinities carried); T5's position ids (an exclusive sum of ones). Other element types
stay CpuRef's. The conformance suite (tests/conformance/test_topk_cumulative.py) runs the layer
against NumPy on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import CumulativeDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import HAVE_CPUACC
from .test_roi_align import run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(1729)


def spec(x: np.ndarray, desc: CumulativeDescriptor) -> LayerSpec:
    info = TensorInfo(x.shape, DataType.from_any(x.dtype))
    return LayerSpec(LayerKind.CUMULATIVE, "cumulative", desc, (info,), (info,))


def values(dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    if dtype is np.float32:
        x = RNG.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1)
        flat[::13] = np.nan
        flat[5::17] = np.inf
        return x
    info = np.iinfo(dtype)
    big = RNG.integers(info.min // 2, info.max // 2, shape, dtype=dtype)  # sums that wrap
    return np.where(RNG.random(shape) < 0.5, big, RNG.integers(-3, 4, shape).astype(dtype)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("exclusive, reverse", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shape, axis", [((37,), 0), ((4, 300), 1), ((4, 300), 0), ((3, 5, 7), -2), ((0, 4), 1)],
                         ids=str)
def test_against_cpuref(runtimes, dtype: type, op: str, exclusive: bool, reverse: bool,  # type: ignore[no-untyped-def]
                        shape: tuple[int, ...], axis: int) -> None:
    x = values(dtype, shape)
    layer = spec(x, CumulativeDescriptor(op, axis, exclusive, reverse))
    with plugnn.Runtime() as rt:
        expected = run(rt, "CpuRef", layer, [x])
    for (isa, threads), rt in runtimes.items():
        got = run(rt, "CpuAcc", layer, [x])
        assert got.tobytes() == expected.tobytes(), f"isa={isa} num_threads={threads}"


def test_position_ids(runtimes) -> None:  # type: ignore[no-untyped-def]
    ones = np.ones((1, 41), np.int64)
    layer = spec(ones, CumulativeDescriptor("sum", 1, True, False))
    for rt in runtimes.values():
        np.testing.assert_array_equal(run(rt, "CpuAcc", layer, [ones]), np.arange(41)[None])


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.FLOAT64, DataType.UINT8])
def test_other_types_stay_cpuref(dtype: DataType) -> None:
    info = TensorInfo((4,), dtype)
    layer = LayerSpec(LayerKind.CUMULATIVE, "c", CumulativeDescriptor("sum", 0), (info,), (info,))
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not support.supported and f"int32, int64 and float32 only; input 0 is {dtype.name.lower()}" in support.reason
