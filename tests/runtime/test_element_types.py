"""Every element type of the ABI flows through a loaded network: as a graph input, between layers
(held in the planned arena, whatever its size per element) and as a graph output, on the bundled
backends, with the dtype checks at the boundary naming the type to convert to."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import plugnn
from plugnn import InputError
from plugnn.tensor import DataType

TYPES = list(DataType)


@pytest.fixture(scope="module")
def runtime() -> Iterator[plugnn.Runtime]:
    with plugnn.Runtime() as rt:
        yield rt


def _values(dtype: DataType, shape: tuple[int, ...]) -> np.ndarray:
    """Distinct, exactly representable values of `dtype` (bool: alternating)."""
    count = int(np.prod(shape))
    if dtype is DataType.BOOL:
        return (np.arange(count) % 3 == 0).reshape(shape)
    values = np.arange(count) - (count // 2 if dtype.name.startswith(("INT", "FLOAT", "BFLOAT")) else 0)
    return values.astype(dtype.numpy_dtype).reshape(shape)


def _movement_network(dtype: DataType) -> plugnn.Network:
    """x [2, 3] -> transpose -> reshape [6] -> concat with itself -> y [12]; a second output
    of the transposed tensor keeps an intermediate alive across the others."""
    net = plugnn.Network(f"movement_{dtype.numpy_name}")
    x = net.add_input("x", (2, 3), dtype)
    t = net.add_transpose(x, (1, 0), name="transpose")
    flat = net.add_reshape(t, (6,), name="reshape")
    net.add_output(net.add_concat([flat, flat], 0, name="concat"), "y")
    net.add_output(t, "t")
    return net


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("backends", [["CpuRef"], None], ids=["CpuRef", "default"])
def test_every_type_flows_through_the_network(runtime: plugnn.Runtime, dtype: DataType,
                                              backends: list[str] | None) -> None:
    optimized = plugnn.optimize(_movement_network(dtype), runtime, backends)
    x = _values(dtype, (2, 3))
    with runtime.load_network(optimized) as loaded:
        for _ in range(2):  # the second run reuses the bound buffers
            outputs = loaded.run({"x": x})
            assert outputs["y"].dtype == dtype.numpy_dtype and outputs["t"].dtype == dtype.numpy_dtype
            np.testing.assert_array_equal(outputs["t"], x.T)
            np.testing.assert_array_equal(outputs["y"], np.concatenate([x.T.reshape(-1)] * 2))
    assert all(r["backend"] in runtime.backend_ids for r in optimized.assignments())


@pytest.mark.parametrize("dtype", [DataType.INT64, DataType.BOOL, DataType.FLOAT16, DataType.BFLOAT16],
                         ids=lambda t: t.numpy_name)
def test_a_wrong_input_type_names_the_type_to_convert_to(runtime: plugnn.Runtime, dtype: DataType) -> None:
    optimized = plugnn.optimize(_movement_network(dtype), runtime, ["CpuRef"])
    with runtime.load_network(optimized) as loaded:
        with pytest.raises(InputError, match=rf"must have dtype {dtype.numpy_name}, got float32 "
                                             rf"\(convert with \.astype\({dtype.numpy_spelling}\)\)"):
            loaded.run({"x": np.zeros((2, 3), np.float32)})
        np.testing.assert_array_equal(loaded.run({"x": _values(dtype, (2, 3))})["t"], _values(dtype, (2, 3)).T)


def test_preallocated_outputs_of_another_type_are_refused(runtime: plugnn.Runtime) -> None:
    optimized = plugnn.optimize(_movement_network(DataType.INT32), runtime, ["CpuRef"])
    with runtime.load_network(optimized) as loaded:
        x = _values(DataType.INT32, (2, 3))
        with pytest.raises(InputError, match="int32"):
            loaded.run({"x": x}, outputs={"y": np.zeros(12, np.int64)})
        y = np.zeros(12, np.int32)
        loaded.run({"x": x}, outputs={"y": y})
        np.testing.assert_array_equal(y, np.concatenate([x.T.reshape(-1)] * 2))


def test_constants_keep_their_type(runtime: plugnn.Runtime) -> None:
    net = plugnn.Network("constants")
    x = net.add_input("x", (2,), "int64")
    table = net.add_constant(np.array([7, -9], np.int64), name="table")
    net.add_output(net.add_concat([x, table], 0, name="concat"), "y")
    optimized = plugnn.optimize(net, runtime, ["CpuRef"])
    with runtime.load_network(optimized) as loaded:
        y = loaded.run({"x": np.array([2**40, -1], np.int64)})["y"]
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, [2**40, -1, 7, -9])
