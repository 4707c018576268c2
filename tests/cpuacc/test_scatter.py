"""SCATTER on CpuAcc (plugins/accel/src/ops/scatter.c) on every kernel set at 1, 2, 3 and 7 threads
against CpuRef, bit for bit: Faster R-CNN's level merge (ScatterElements along axis 0 of
[150, 256, 7, 7] with indices broadcast over the inner axes), repeated indices (the last update
wins; reductions accumulate in order), negative indices, ND slices, data larger than one copy
job. The conformance suite (tests/conformance/test_gather_scatter.py) covers every type,
reduction, shape and malformed layer on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import LayerKind, ScatterDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import HAVE_CPUACC
from .test_roi_align import run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(2718)


def check(runtimes, desc: ScatterDescriptor, data: np.ndarray, indices: np.ndarray,  # type: ignore[no-untyped-def]
          updates: np.ndarray) -> None:
    infos = tuple(TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in (data, indices, updates))
    spec = LayerSpec(LayerKind.SCATTER, "scatter", desc, infos, (infos[0],))
    with plugnn.Runtime() as rt:
        expected = run(rt, "CpuRef", spec, [data, indices, updates])
    for (isa, threads), rt in runtimes.items():
        np.testing.assert_array_equal(run(rt, "CpuAcc", spec, [data, indices, updates]), expected,
                                      err_msg=f"isa={isa} num_threads={threads}")


def test_level_merge(runtimes) -> None:  # type: ignore[no-untyped-def]
    data = np.zeros((150, 256, 7, 7), np.float32)
    rows = RNG.permutation(150)[:40]
    indices = np.broadcast_to(rows[:, None, None, None], (40, 256, 7, 7)).astype(np.int64)
    check(runtimes, ScatterDescriptor("elements", "none", 0), data, indices,
          RNG.standard_normal((40, 256, 7, 7)).astype(np.float32))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_repeated_and_negative_indices(runtimes, reduction: str, axis: int, dtype: type) -> None:  # type: ignore[no-untyped-def]
    data = RNG.integers(-5, 6, (6, 9, 11)).astype(dtype)
    size = data.shape[axis]
    shape = list(data.shape)
    shape[axis] = 7
    indices = RNG.integers(-size, size, shape).astype(np.int64)  # 7 picks of `size`: repeats
    updates = RNG.integers(-5, 6, shape).astype(dtype)
    check(runtimes, ScatterDescriptor("elements", reduction, axis), data, indices, updates)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_nd_slices(runtimes, reduction: str) -> None:  # type: ignore[no-untyped-def]
    data = RNG.standard_normal((8, 5, 300)).astype(np.float32)
    indices = np.stack([RNG.integers(-8, 8, 12), RNG.integers(-5, 5, 12)], 1).astype(np.int32)
    updates = RNG.standard_normal((12, 300)).astype(np.float32)
    check(runtimes, ScatterDescriptor("nd", reduction, 0), data, indices, updates)


def test_large_data_is_copied_whole(runtimes) -> None:  # type: ignore[no-untyped-def]
    data = RNG.integers(0, 255, (3, 1 << 19), dtype=np.uint8)
    indices = np.array([[1], [0]], np.int64)
    updates = RNG.integers(0, 255, (2, 1 << 19), dtype=np.uint8)
    check(runtimes, ScatterDescriptor("nd", "none", 0), data, indices, updates)
