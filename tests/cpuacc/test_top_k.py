"""TOP_K on CpuAcc (plugins/accel/src/ops/top_k.c: one 64-bit key per element, quickselect, the k
chosen sorted) on every kernel set at 1, 2, 3 and 7 threads against CpuRef, bit for bit: SSD's
per-class candidates (k 300 of 3,234), k of 0, 1 and the whole axis, axes in the middle, ties
(lower index first), -0.0 and +0.0 equal, NaN larger than every number, infinities, largest and
smallest. The conformance suite (tests/conformance/test_topk_cumulative.py) runs the layer
against NumPy on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import LayerKind, TopKDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from conformance.conftest import run_layer

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(1618)


def both(runtimes, x: np.ndarray, k: int, axis: int, largest: bool) -> None:  # type: ignore[no-untyped-def]
    out = list(x.shape)
    out[axis] = k
    spec = LayerSpec(LayerKind.TOP_K, "top_k", TopKDescriptor(axis, largest, True),
                     (TensorInfo(x.shape, DataType.FLOAT32),),
                     (TensorInfo(tuple(out), DataType.FLOAT32), TensorInfo(tuple(out), DataType.INT64)))
    with plugnn.Runtime() as rt:
        expected = execute(rt, "CpuRef", spec, x)
    for (isa, threads), rt in runtimes.items():
        for got, want in zip(execute(rt, "CpuAcc", spec, x), expected):
            np.testing.assert_array_equal(got, want, err_msg=f"isa={isa} num_threads={threads}")
            assert got.tobytes() == want.tobytes()  # -0.0 and NaN payloads too


def execute(rt: plugnn.Runtime, backend_id: str, spec: LayerSpec, x: np.ndarray) -> list[np.ndarray]:
    support = rt.backend(backend_id).is_layer_supported(spec)
    assert support.supported, f"{backend_id}: {support.reason}"
    return run_layer(rt.backend(backend_id), spec, [x])


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape, axis, k", [((1, 3234), 1, 300), ((91, 3234), 1, 300), ((5, 40, 3), 1, 7),
                                            ((7, 9), 0, 7), ((4, 17), 1, 1), ((4, 17), 1, 0), ((2, 1), 1, 1),
                                            ((64, 4096), -1, 64)], ids=str)
def test_against_cpuref(runtimes, shape: tuple[int, ...], axis: int, k: int, largest: bool) -> None:  # type: ignore[no-untyped-def]
    x = RNG.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = np.round(flat[::7])       # ties
    flat[3::11] = -0.0
    flat[5::13] = 0.0
    flat[::17] = np.nan
    flat[2::19] = np.inf
    flat[4::23] = -np.inf
    both(runtimes, x, k, axis, largest)


def test_all_equal_and_all_nan(runtimes) -> None:  # type: ignore[no-untyped-def]
    for fill in (1.5, np.nan):
        x = np.full((3, 500), fill, np.float32)
        both(runtimes, x, 100, 1, True)
        both(runtimes, x, 100, 1, False)


def test_other_types_stay_cpuref() -> None:
    spec = LayerSpec(LayerKind.TOP_K, "top_k", TopKDescriptor(0, True, True), (TensorInfo((4,), DataType.INT64),),
                     (TensorInfo((2,), DataType.INT64), TensorInfo((2,), DataType.INT64)))
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(spec)
    assert not support.supported and "TopK on float32 only; input 0 is int64" in support.reason
