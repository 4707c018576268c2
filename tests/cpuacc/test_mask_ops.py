"""The layers transformers build attention masks with, on CpuAcc (plugins/accel/src/ops/mask_ops.c):
Select with a BOOL condition and values of every element type, Expand of any element type, and
the logical binary operations on BOOL, each with every kind of broadcasting, on every kernel set
at 1, 2, 3 and 7 threads, against NumPy (exact: these layers only move and combine values). What
CpuAcc does not run (other BOOL binary operations) is refused with a reason."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import ElementwiseBinaryDescriptor, LayerKind
from plugnn.tensor import DataType

from .common import HAVE_CPUACC
from .test_transformer_kinds import every_config, spec

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(4242)
SHAPES = [  # condition or a, b, c (value) shapes broadcasting to the first
    ((1, 1, 37, 37), (1, 1, 37, 37), (), ()),
    ((2, 1, 5, 129), (2, 1, 1, 129), (5, 1), (1,)),
    ((4, 33), (33,), (4, 1), (4, 33)),
    ((0, 7), (0, 7), (), ()),
    ((), (), (), ()),
]


def bools(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(0, 2, shape).astype(np.bool_)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_select(runtimes, shapes) -> None:  # type: ignore[no-untyped-def]
    out, c_shape, a_shape, b_shape = shapes
    c = bools(c_shape)
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = np.full(b_shape, np.finfo(np.float32).min, np.float32)
    layer = spec(LayerKind.SELECT, None, [c, a, b], out)
    for y in every_config(runtimes, layer, [c, a, b]).values():
        np.testing.assert_array_equal(y, np.where(c, a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.int64, np.float16, np.uint8])
@pytest.mark.parametrize("shapes", [((1, 1, 37, 37), (1, 1, 37, 1)), ((3, 4, 5), (4, 1)), ((2, 9), (2, 9)),
                                    ((5, 3), ()), ((0, 3), (1, 3))], ids=str)
def test_expand(runtimes, dtype: type, shapes) -> None:  # type: ignore[no-untyped-def]
    out, in_shape = shapes
    x = (RNG.standard_normal(in_shape) * 10).astype(dtype)
    layer = spec(LayerKind.EXPAND, None, [x], out, out_dtype=DataType.from_any(x.dtype))
    for y in every_config(runtimes, layer, [x]).values():
        np.testing.assert_array_equal(y, np.broadcast_to(x, out))


@pytest.mark.parametrize("op, fn", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                    ("logical_xor", np.logical_xor)])
@pytest.mark.parametrize("shapes", [((1, 1, 128, 128), (1, 1, 128, 1), (1, 1, 1, 128)), ((7, 33), (7, 33), (7, 33)),
                                    ((7, 33), (33,), (7, 1)), ((7, 1), (7, 1), ()), ((0, 4), (0, 4), (4,))],
                         ids=str)
def test_logical_binary(runtimes, op: str, fn, shapes) -> None:  # type: ignore[no-untyped-def]
    out, a_shape, b_shape = shapes
    a, b = bools(a_shape), bools(b_shape)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [a, b], out,
                 out_dtype=DataType.BOOL)
    for y in every_config(runtimes, layer, [a, b]).values():
        np.testing.assert_array_equal(y, fn(a, b))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float16, np.uint8, np.bool_, np.float64])
@pytest.mark.parametrize("shapes", SHAPES[:4], ids=str)
def test_select_of_other_value_types(runtimes, dtype: type, shapes) -> None:  # type: ignore[no-untyped-def]
    """Values of every element size moved as they are (T5's relative positions in int64)."""
    out, c_shape, a_shape, b_shape = shapes
    c = bools(c_shape)
    a = (RNG.standard_normal(a_shape) * 100).astype(dtype)
    b = np.full(b_shape, 7, dtype)
    layer = spec(LayerKind.SELECT, None, [c, a, b], out, out_dtype=DataType.from_any(np.dtype(dtype)))
    for y in every_config(runtimes, layer, [c, a, b]).values():
        np.testing.assert_array_equal(y, np.where(c, a, b))


def test_other_bool_binary_operations_stay_refused() -> None:
    a = bools((4,))
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor("equal"), [a, a], (4,),
                 out_dtype=DataType.BOOL)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and answer.reason == "CpuAcc runs ElementwiseBinary on float32 only; input 0 is bool"
