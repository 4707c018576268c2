"""GATHER's ELEMENTS and ND forms and TRANSPOSE of every element type on CpuAcc (plugins/accel/src/
ops/gather.c, ops/shape_ops.c), on every kernel set at 1, 2, 3 and 7 threads against CpuRef, bit
for bit: ND (SSD's score picking: [3234, 91] by [n, 2] (anchor, class) tuples) with and without
batch dims, ELEMENTS along every axis, negative indices, int32 and int64 indices, 1- to 8-byte
elements; an index out of range fails execute naming it and its axis. (TAKE:
test_transformer_kinds.py and test_data_movement.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import GatherDescriptor, LayerKind, TransposeDescriptor
from plugnn.layers import LayerSpec
from plugnn.shapes import INFER
from plugnn.tensor import DataType, TensorInfo

from .common import HAVE_CPUACC
from .test_roi_align import run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(1414)


def check(runtimes, kind: LayerKind, desc: object, arrays: list[np.ndarray]) -> np.ndarray:  # type: ignore[no-untyped-def]
    infos = [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in arrays]
    spec = LayerSpec(kind, kind.name.lower(), desc, tuple(infos), tuple(INFER[kind](desc, infos)))
    with plugnn.Runtime() as rt:
        expected = run(rt, "CpuRef", spec, arrays)
    for (isa, threads), rt in runtimes.items():
        assert rt.backend("CpuAcc").is_layer_supported(spec).supported
        got = run(rt, "CpuAcc", spec, arrays)
        assert got.tobytes() == expected.tobytes(), f"isa={isa} num_threads={threads}"
    return expected


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("data_shape, index_shape, batch_dims", [((3234, 4), (300, 1), 0), ((3234, 91), (500, 2), 0),
                                                                  ((2, 50, 7), (2, 9, 1), 1), ((2, 3, 8, 5), (2, 3, 4, 2), 2),
                                                                  ((6, 5), (2, 3, 2), 0)], ids=str)
def test_nd(runtimes, dtype: type, index_type: type, data_shape, index_shape, batch_dims: int) -> None:  # type: ignore[no-untyped-def]
    data = RNG.integers(0, 100, data_shape).astype(dtype)
    k = index_shape[-1]
    sizes = data_shape[batch_dims:batch_dims + k]
    indices = np.stack([RNG.integers(-s, s, index_shape[:-1]) for s in sizes], -1).astype(index_type)
    check(runtimes, LayerKind.GATHER, GatherDescriptor("nd", 0, batch_dims), [data, indices])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_elements(runtimes, axis: int, dtype: type) -> None:  # type: ignore[no-untyped-def]
    data = RNG.integers(0, 2 if dtype is np.bool_ else 100, (5, 6, 7)).astype(dtype)
    shape = [4, 5, 6]
    size = data.shape[axis]
    indices = RNG.integers(-size, size, shape).astype(np.int64)
    check(runtimes, LayerKind.GATHER, GatherDescriptor("elements", axis), [data, indices])


def test_an_index_out_of_range_fails_and_names_its_axis(runtimes) -> None:  # type: ignore[no-untyped-def]
    data = np.zeros((4, 3), np.float32)
    indices = np.array([[1, 2], [0, 3]], np.int64)  # 3 is outside axis 1 (size 3)
    infos = [TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in (data, indices)]
    desc = GatherDescriptor("nd", 0, 0)
    spec = LayerSpec(LayerKind.GATHER, "picks", desc, tuple(infos), tuple(INFER[LayerKind.GATHER](desc, infos)))
    for rt in runtimes.values():
        with pytest.raises(plugnn.BackendError, match=r"Gather 'picks': index 3 \(element 3 of the indices\) is out of "
                                                      r"range for axis 1 of size 3"):
            run(rt, "CpuAcc", spec, [data, indices])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float16, np.bool_])
@pytest.mark.parametrize("shape, perm", [((1, 3234, 91), (0, 2, 1)), ((2, 3, 4, 5), (3, 1, 0, 2)), ((7, 1), (1, 0))],
                         ids=str)
def test_transpose_every_type(runtimes, dtype: type, shape, perm) -> None:  # type: ignore[no-untyped-def]
    x = RNG.integers(0, 2 if dtype is np.bool_ else 100, shape).astype(dtype)
    y = check(runtimes, LayerKind.TRANSPOSE, TransposeDescriptor(perm), [x])
    np.testing.assert_array_equal(y, np.transpose(x, perm))
