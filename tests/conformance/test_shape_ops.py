"""CONCAT, RESHAPE, TRANSPOSE and COPY: data movement only, so results must be exact."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import ConcatDescriptor, LayerKind, TransposeDescriptor
from plugnn.tensor import DataType

from .conftest import assert_close, assert_refused, layer_spec, run_layer, shape_id
from .typed import assert_same, values

EXACT = dict(rtol=0.0, atol=0.0)  # moving float32 values must not change them


def random_inputs(shapes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.asarray(rng.standard_normal(shape), np.float32) for shape in shapes]


def shapes_along(base: tuple[int, ...], axis: int, sizes: list[int]) -> list[tuple[int, ...]]:
    """`base` with dim `axis` replaced by each of `sizes`."""
    shapes = []
    for size in sizes:
        shape = list(base)
        shape[axis] = size
        shapes.append(tuple(shape))
    return shapes


CONCAT_BASE = (2, 3, 4, 2)


@pytest.mark.parametrize("sizes", [[3], [1, 2], [2, 1, 3]], ids=lambda s: f"{len(s)}_inputs")
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -2, -3, -4], ids=lambda axis: f"axis{axis}")
def test_concat_on_every_axis(backend, axis: int, sizes: list[int]) -> None:
    xs = random_inputs(shapes_along(CONCAT_BASE, axis, sizes), seed=801)
    expected = np.concatenate(xs, axis=axis)
    spec = layer_spec(LayerKind.CONCAT, ConcatDescriptor(axis), xs, expected.shape, name=f"concat@{axis}")
    (y,) = run_layer(backend, spec, xs)
    assert_close(y, expected, **EXACT, case=spec)


@pytest.mark.parametrize("shapes, axis", [
    ([(3,), (2,)], 0),
    ([(3,), (2,), (1,)], -1),
    ([(2, 3), (2, 1), (2, 0)], 1),
    ([(0, 2), (0, 2)], 1),
    ([(0, 2), (3, 2)], 0),
    ([(1, 1, 1, 1, 1, 2), (1, 1, 1, 1, 1, 3)], 5),
], ids=shape_id)
def test_concat_edge_shapes(backend, shapes, axis: int) -> None:
    xs = random_inputs(shapes, seed=802)
    expected = np.concatenate(xs, axis=axis)
    spec = layer_spec(LayerKind.CONCAT, ConcatDescriptor(axis), xs, expected.shape, name=f"concat@{axis}")
    (y,) = run_layer(backend, spec, xs)
    assert_close(y, expected, **EXACT, case=spec)


@pytest.mark.parametrize("shape_in, shape_out", [
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (24,)),
    ((24,), (2, 1, 3, 1, 4)),
    ((), (1, 1)),
    ((1,), ()),
    ((2, 3), (3, 2)),
    ((0, 3), (3, 0)),
], ids=shape_id)
def test_reshape(backend, shape_in, shape_out) -> None:
    (x,) = random_inputs([shape_in], seed=803)
    spec = layer_spec(LayerKind.RESHAPE, None, [x], shape_out, name=f"reshape{list(shape_in)}->{list(shape_out)}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, x.reshape(shape_out), **EXACT, case=spec)


@pytest.mark.parametrize("shape, perm", [
    ((), ()),
    ((4,), (0,)),
    ((2, 3), (1, 0)),
    ((2, 3), (0, 1)),
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (1, 2, 0)),
    ((2, 3, 4, 5), (0, 2, 3, 1)),
    ((2, 3, 4, 5), (0, 3, 1, 2)),
    ((2, 3, 1, 4, 2), (4, 2, 0, 3, 1)),
    ((2, 3, 2, 1, 3), (1, 0, 4, 3, 2)),
    ((1, 2, 1, 3, 1, 2, 1, 2), (7, 6, 5, 4, 3, 2, 1, 0)),
    ((0, 3), (1, 0)),
], ids=shape_id)
def test_transpose(backend, shape, perm) -> None:
    (x,) = random_inputs([shape], seed=804)
    expected = x.transpose(perm)
    spec = layer_spec(LayerKind.TRANSPOSE, TransposeDescriptor(perm), [x], expected.shape,
                      name=f"transpose{list(shape)}{list(perm)}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, expected, **EXACT, case=spec)


@pytest.mark.parametrize("shape", [(), (1,), (3, 4), (2, 3, 4, 5), (0,), (2, 0, 3)], ids=shape_id)
def test_copy(backend, shape) -> None:
    (x,) = random_inputs([shape], seed=805)
    spec = layer_spec(LayerKind.COPY, None, [x], shape, name=f"copy{list(shape)}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, x, **EXACT, case=spec)


def test_copy_keeps_special_values_bit_exact(backend) -> None:
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4e38], np.float32)
    spec = layer_spec(LayerKind.COPY, None, [x], x.shape, name="copy_special")
    (y,) = run_layer(backend, spec, [x])
    np.testing.assert_array_equal(y.view(np.uint32), x.view(np.uint32))


# ---- malformed layers -----------------------------------------------------------------


@pytest.mark.parametrize("axis, inputs, output, dtypes, reason", [
    pytest.param(1, [(2, 3), (3, 3)], (2, 6), None, "match", id="inputs differ outside the axis"),
    pytest.param(1, [(2, 3), (2, 3, 1)], (2, 6), None, "rank|match", id="inputs of different rank"),
    pytest.param(1, [(2, 3), (2, 3)], (2, 5), None, "output", id="output of the wrong size"),
    pytest.param(2, [(2, 3), (2, 3)], (2, 3, 2), None, "axis", id="axis past the rank"),
    pytest.param(-3, [(2, 3), (2, 3)], (4, 3), None, "axis", id="negative axis past the rank"),
    pytest.param(0, [(), ()], (2,), None, "axis", id="rank 0 inputs"),
    pytest.param(0, [], (2, 3), [], "input", id="no inputs"),
    pytest.param(0, [(2, 3), (2, 3)], (4, 3), [DataType.FLOAT32, DataType.INT32], "int32", id="int32 input"),
])
def test_malformed_concat_is_refused(backend, axis: int, inputs, output, dtypes, reason: str) -> None:
    spec = layer_spec(LayerKind.CONCAT, ConcatDescriptor(axis), inputs, output, dtypes=dtypes)
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("kind, desc, inputs, output, reason", [
    pytest.param(LayerKind.RESHAPE, None, [(2, 3)], (5,), "element", id="reshape changes the element count"),
    pytest.param(LayerKind.RESHAPE, None, [(2, 3), (2,)], (6,), "input", id="reshape with a shape input"),
    pytest.param(LayerKind.TRANSPOSE, TransposeDescriptor((0, 1, 2)), [(2, 3)], (2, 3), "permutation",
                 id="transpose perm longer than the rank"),
    pytest.param(LayerKind.TRANSPOSE, TransposeDescriptor((1, 0)), [(2, 3)], (2, 3), "output",
                 id="transpose output not permuted"),
    pytest.param(LayerKind.COPY, None, [(2, 3)], (3, 2), "output", id="copy changes the shape"),
    pytest.param(LayerKind.COPY, None, [(2, 3), (2, 3)], (2, 3), "input", id="copy of two inputs"),
])
def test_malformed_shape_op_is_refused(backend, kind: LayerKind, desc, inputs, output, reason: str) -> None:
    assert_refused(backend, layer_spec(kind, desc, inputs, output), reason)


# ---- every element type -----------------------------------------------------------------------
# backend_api.h: CONCAT, RESHAPE, TRANSPOSE and COPY take any element type. A backend may run
# fewer (CpuAcc runs float32 only); then its refusal names the type it does not run.


def every_type_cases() -> list[Any]:
    cases = []
    for dtype in DataType:
        cases += [
            pytest.param(LayerKind.CONCAT, ConcatDescriptor(1), [(2, 3), (2, 1)], lambda xs: np.concatenate(xs, 1),
                         dtype, id=f"concat-{dtype.numpy_name}"),
            pytest.param(LayerKind.RESHAPE, None, [(2, 3, 2)], lambda xs: xs[0].reshape(3, 4), dtype,
                         id=f"reshape-{dtype.numpy_name}"),
            pytest.param(LayerKind.TRANSPOSE, TransposeDescriptor((2, 0, 1)), [(2, 3, 2)],
                         lambda xs: xs[0].transpose(2, 0, 1), dtype, id=f"transpose-{dtype.numpy_name}"),
            pytest.param(LayerKind.COPY, None, [(5,)], lambda xs: xs[0], dtype, id=f"copy-{dtype.numpy_name}"),
        ]
    return cases


@pytest.mark.parametrize("kind, desc, shapes, oracle, dtype", every_type_cases())
def test_every_element_type_moves_exactly_or_is_refused_naming_it(backend, kind, desc, shapes, oracle,
                                                                  dtype: DataType) -> None:
    xs = [values(dtype, shape, seed=806 + i) for i, shape in enumerate(shapes)]
    expected = oracle(xs)
    spec = layer_spec(kind, desc, xs, expected.shape, dtypes=[dtype] * len(xs), output_dtype=dtype,
                      name=f"{kind.name.lower()}_{dtype.numpy_name}")
    if dtype is not DataType.FLOAT32 and not backend.is_layer_supported(spec).supported:
        assert_refused(backend, spec, rf"float32 only.*\b{dtype.numpy_name}\b")
        return
    (y,) = run_layer(backend, spec, xs)
    assert_same(y, expected, spec)


def test_cpuref_runs_every_type_of_the_shape_kinds(runtime) -> None:
    """CpuRef is the oracle: it must take every element type these kinds allow."""
    cpuref = runtime.backend("CpuRef")
    for param in every_type_cases():
        kind, desc, shapes, oracle, dtype = param.values
        outputs = oracle([np.zeros(s, dtype.numpy_dtype) for s in shapes]).shape
        spec = layer_spec(kind, desc, shapes, outputs, dtypes=[dtype] * len(shapes), output_dtype=dtype)
        assert cpuref.is_layer_supported(spec).supported, f"CpuRef refuses {param.id}"
