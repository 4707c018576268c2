"""TOP_K and CUMULATIVE against NumPy oracles of backend_api.h's rules.

TOP_K: per line, Python's stable sort on (NaN first (largest) or last (smallest), value,
index), so equal values keep the lower index first and NaN counts as larger than every number;
every numeric type, every axis, k from 0 to the whole axis, unsorted output compared as a set.
CUMULATIVE: sums and products in float64 (floats) or modulo 2^bits (integers), inclusive and
exclusive, forward and reverse, every numeric type. Then the malformed layers of both.
"""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.descriptors import CumulativeDescriptor, CumulativeOp, LayerKind, TopKDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, run_layer, shape_id

# run_layer pre-fills integer outputs from NaN (a cast NumPy warns about).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

FLOATS = (DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64)
INTEGERS = (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32,
            DataType.INT64, DataType.UINT64)
NUMERIC = FLOATS + INTEGERS
TOLERANCE = {DataType.FLOAT32: (RTOL, ATOL), DataType.FLOAT16: (2e-3, 2e-3), DataType.BFLOAT16: (1.6e-2, 1.6e-2),
             DataType.FLOAT64: (1e-12, 1e-12)}


def random_values(shape: tuple[int, ...], dtype: DataType, seed: int, distinct: int = 0) -> np.ndarray:
    """Random values of `dtype`; with `distinct`, integers in [-distinct, distinct] (ties)."""
    rng = np.random.default_rng(seed)
    if distinct:
        low = 0 if dtype.name.startswith("UINT") else -distinct
        return rng.integers(low, distinct + 1, shape).astype(dtype.numpy_dtype)
    if dtype.is_integer:
        info = np.iinfo(dtype.numpy_dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype.numpy_dtype, endpoint=True)
    return (rng.standard_normal(shape) * 3).astype(dtype.numpy_dtype)


# ---- TOP_K ------------------------------------------------------------------------------------------


def _order_key(value, index: int, largest: bool, is_float: bool) -> tuple:
    nan = is_float and np.isnan(value)
    v = 0 if nan else (float(value) if is_float else int(value))
    return (0 if nan else 1, -v, index) if largest else (1 if nan else 0, v, index)


def top_k_reference(x: np.ndarray, k: int, axis: int, largest: bool, dtype: DataType) -> tuple[np.ndarray, np.ndarray]:
    moved = np.moveaxis(x, axis, -1)
    lines = moved.reshape(-1, moved.shape[-1]) if moved.size else np.zeros((0, moved.shape[-1]), x.dtype)
    indices = np.zeros((lines.shape[0], k), np.int64)
    for row, line in enumerate(lines):
        order = sorted(range(len(line)), key=lambda j: _order_key(line[j], j, largest, dtype.is_float))
        indices[row] = order[:k]
    values = np.take_along_axis(lines, indices, 1) if lines.size else np.zeros((0, k), x.dtype)
    shape = moved.shape[:-1] + (k,)
    return (np.moveaxis(values.reshape(shape), -1, axis), np.moveaxis(indices.reshape(shape), -1, axis))


def top_k_spec(desc: TopKDescriptor, shape: tuple[int, ...], k: int, dtype: DataType = DataType.FLOAT32,
               values_dtype: DataType | None = None, indices_dtype: DataType = DataType.INT64,
               out_shape: tuple[int, ...] | None = None, outputs: int = 2) -> LayerSpec:
    axis = desc.axis % len(shape) if shape else 0
    out_shape = out_shape if out_shape is not None else shape[:axis] + (k,) + shape[axis + 1:]
    infos = (TensorInfo(out_shape, values_dtype or dtype), TensorInfo(out_shape, indices_dtype))[:outputs]
    return LayerSpec(LayerKind.TOP_K, "top_k", desc, (TensorInfo(shape, dtype),), infos)


def check_top_k(backend, x: np.ndarray, k: int, axis: int, largest: bool, dtype: DataType,
                sorted_output: bool = True) -> None:
    desc = TopKDescriptor(axis, largest, sorted_output)
    spec = top_k_spec(desc, x.shape, k, dtype)
    values, indices = run_layer(backend, spec, [x])
    expected_values, expected_indices = top_k_reference(x, k, axis % x.ndim, largest, dtype)
    what = f"top-{k} {'largest' if largest else 'smallest'} of {dtype.numpy_name}{list(x.shape)} along {axis}"
    if not sorted_output:  # any order: the same set (sorted by index for the comparison)
        order = np.argsort(indices, axis=axis % x.ndim, kind="stable")
        indices, values = np.take_along_axis(indices, order, axis % x.ndim), np.take_along_axis(values, order, axis % x.ndim)
        order = np.argsort(expected_indices, axis=axis % x.ndim, kind="stable")
        expected_indices = np.take_along_axis(expected_indices, order, axis % x.ndim)
        expected_values = np.take_along_axis(expected_values, order, axis % x.ndim)
    np.testing.assert_array_equal(indices, expected_indices, err_msg=what)
    assert values.dtype == x.dtype
    np.testing.assert_array_equal(values, expected_values, err_msg=what)  # values are copied, not computed


TOP_K_CASES = [
    ((6,), 0, 3),
    ((6,), -1, 6),
    ((6,), 0, 1),
    ((3, 7), 1, 4),
    ((3, 7), 0, 2),
    ((3, 7), -2, 3),
    ((2, 5, 4), 1, 5),
    ((2, 5, 4), 2, 2),
    ((2, 3, 4, 5), 3, 3),
    ((2, 3, 4, 5), 0, 1),
    ((1, 200), 1, 17),
]


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("shape, axis, k", TOP_K_CASES, ids=shape_id)
def test_top_k(backend, shape, axis: int, k: int, largest: bool) -> None:
    check_top_k(backend, random_values(shape, DataType.FLOAT32, 2001), k, axis, largest, DataType.FLOAT32)


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("shape, axis, k", [((4, 9), 1, 5), ((9, 3), 0, 9), ((2, 6, 3), 1, 4)], ids=shape_id)
def test_top_k_ties_keep_the_lower_index_first(backend, shape, axis: int, k: int, largest: bool) -> None:
    check_top_k(backend, random_values(shape, DataType.FLOAT32, 2002, distinct=2), k, axis, largest,
                DataType.FLOAT32)


@pytest.mark.parametrize("dtype", [t for t in NUMERIC if t is not DataType.FLOAT32], ids=lambda t: t.name)
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_top_k_element_types(backend, dtype: DataType, largest: bool) -> None:
    check_top_k(backend, random_values((3, 8), dtype, 2003), 5, 1, largest, dtype)
    check_top_k(backend, random_values((3, 8), dtype, 2004, distinct=3), 6, 1, largest, dtype)


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_top_k_nan_is_larger_than_every_number(backend, largest: bool) -> None:
    x = np.array([[1, np.nan, 3, np.inf, np.nan, -1], [-np.inf, 0, np.nan, 0, -np.inf, 2]], np.float32)
    check_top_k(backend, x, 6, 1, largest, DataType.FLOAT32)
    check_top_k(backend, x, 3, 1, largest, DataType.FLOAT32)
    values, indices = run_layer(backend, top_k_spec(TopKDescriptor(1, largest), x.shape, 6), [x])
    # onnxruntime's own answer for the first row (largest: NaNs first, lower index first).
    assert indices[0].tolist() == ([1, 4, 3, 2, 0, 5] if largest else [5, 0, 2, 3, 1, 4])


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_top_k_unsorted_gives_the_same_set(backend, largest: bool) -> None:
    check_top_k(backend, random_values((4, 10), DataType.FLOAT32, 2005), 4, 1, largest, DataType.FLOAT32,
                sorted_output=False)


@pytest.mark.parametrize("shape, axis, k", [((3, 0), 1, 0), ((0, 5), 1, 2), ((3, 5), 1, 0), ((2, 0, 4), 2, 3)],
                         ids=shape_id)
def test_top_k_empty(backend, shape, axis: int, k: int) -> None:
    check_top_k(backend, np.zeros(shape, np.float32), k, axis, True, DataType.FLOAT32)


F32 = DataType.FLOAT32
TOP_K_MALFORMED = {
    "k past the axis": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 4), "k = 4"),
    "int32 indices": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 2, indices_dtype=DataType.INT32), "int64"),
    "values of another type": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 2, values_dtype=DataType.FLOAT64),
                               "float64"),
    "bool x": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 2, DataType.BOOL), "numeric"),
    "axis out of range": (lambda: top_k_spec(TopKDescriptor(2), (2, 3), 2, out_shape=(2, 2)), "axis"),
    "rank 0": (lambda: top_k_spec(TopKDescriptor(0), (), 1, out_shape=()), "rank"),
    "one output": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 2, outputs=1), "2 outputs"),
    "outputs differ outside the axis": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 2, out_shape=(3, 2)),
                                        "output 0"),
    "outputs of another rank": (lambda: top_k_spec(TopKDescriptor(1), (2, 3), 2, out_shape=(2, 2, 1)), "rank"),
}


@pytest.mark.parametrize("name", list(TOP_K_MALFORMED))
def test_malformed_top_k_is_refused(backend, name: str) -> None:
    build, reason = TOP_K_MALFORMED[name]
    assert_refused(backend, build(), reason)


@pytest.mark.parametrize("field", ["largest", "sorted"])
def test_top_k_flags_are_0_or_1(backend, field: str) -> None:
    desc = TopKDescriptor(1)
    object.__setattr__(desc, field, 3)  # past the dataclass, as a C caller could
    assert_refused(backend, top_k_spec(desc, (2, 3), 2), field)


def test_indices_output_must_match_values(backend) -> None:
    spec = LayerSpec(LayerKind.TOP_K, "top_k", TopKDescriptor(1), (TensorInfo((2, 3), F32),),
                     (TensorInfo((2, 2), F32), TensorInfo((2, 1), DataType.INT64)))
    assert_refused(backend, spec, "output 1")


# ---- CUMULATIVE ---------------------------------------------------------------------------------------


def cumulative_reference(desc: CumulativeDescriptor, x: np.ndarray, dtype: DataType) -> np.ndarray:
    axis = desc.axis % x.ndim
    prod = desc.op is CumulativeOp.PROD
    if dtype.is_float:
        work = x.astype(np.float64)
    else:  # modulo 2^64 on the two's complement; wrapped to the type at the end
        work = x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)
    if desc.reverse:
        work = np.flip(work, axis)
    if desc.exclusive and work.shape[axis]:  # shift by one, the identity first
        identity = np.ones_like(np.take(work, [0], axis)) if prod else np.zeros_like(np.take(work, [0], axis))
        work = np.concatenate([identity, np.take(work, range(work.shape[axis] - 1), axis)], axis)
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.cumprod(work, axis, dtype=work.dtype) if prod else np.cumsum(work, axis, dtype=work.dtype)
    if desc.reverse:
        result = np.flip(result, axis)
    return result if dtype.is_float else result.astype(dtype.numpy_dtype)


def cumulative_spec(desc: CumulativeDescriptor, shape: tuple[int, ...], dtype: DataType = DataType.FLOAT32,
                    out_shape: tuple[int, ...] | None = None, out_dtype: DataType | None = None) -> LayerSpec:
    return LayerSpec(LayerKind.CUMULATIVE, "cumulative", desc, (TensorInfo(shape, dtype),),
                     (TensorInfo(shape if out_shape is None else out_shape, out_dtype or dtype),))


def check_cumulative(backend, desc: CumulativeDescriptor, x: np.ndarray, dtype: DataType) -> None:
    spec = cumulative_spec(desc, x.shape, dtype)
    (y,) = run_layer(backend, spec, [x])
    expected = cumulative_reference(desc, x, dtype)
    if dtype.is_float:
        assert_close(y, expected, *TOLERANCE[dtype], spec)
    else:
        np.testing.assert_array_equal(y, expected, err_msg=f"{desc} of {dtype.numpy_name}{list(x.shape)}")


CUMULATIVE_CASES = [((7,), 0), ((3, 5), 0), ((3, 5), 1), ((3, 5), -1), ((2, 3, 4), 1), ((2, 3, 4, 2), -3)]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("shape, axis", CUMULATIVE_CASES, ids=shape_id)
@pytest.mark.parametrize("op", list(CumulativeOp), ids=lambda o: o.name)
def test_cumulative(backend, op, shape, axis: int, exclusive: bool, reverse: bool) -> None:
    rng = np.random.default_rng(2101)
    x = (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape) if op is CumulativeOp.PROD
         else rng.standard_normal(shape)).astype(np.float32)
    check_cumulative(backend, CumulativeDescriptor(op, axis, exclusive, reverse), x, DataType.FLOAT32)


@pytest.mark.parametrize("dtype", [t for t in NUMERIC if t is not DataType.FLOAT32], ids=lambda t: t.name)
@pytest.mark.parametrize("op", list(CumulativeOp), ids=lambda o: o.name)
def test_cumulative_element_types(backend, op, dtype: DataType) -> None:
    """Integers over their whole range, so sums and products wrap."""
    x = random_values((3, 6), dtype, 2102)
    if dtype.is_float and op is CumulativeOp.PROD:
        x = (np.random.default_rng(2103).uniform(0.5, 1.5, (3, 6))).astype(dtype.numpy_dtype)
    for exclusive, reverse in ((False, False), (True, True)):
        check_cumulative(backend, CumulativeDescriptor(op, 1, exclusive, reverse), x, dtype)


def test_cumulative_integer_sums_wrap(backend) -> None:
    x = np.array([100, 100, -128, 1], np.int8)
    (y,) = run_layer(backend, cumulative_spec(CumulativeDescriptor("sum", 0), (4,), DataType.INT8), [x])
    assert y.tolist() == [100, -56, 72, 73]


@pytest.mark.parametrize("shape, axis", [((0, 3), 1), ((3, 0), 1), ((3, 0), 0)], ids=shape_id)
def test_cumulative_empty(backend, shape, axis: int) -> None:
    check_cumulative(backend, CumulativeDescriptor("sum", axis, True, True), np.zeros(shape, np.float32),
                     DataType.FLOAT32)


def test_cumulative_of_nan_and_infinity(backend) -> None:
    x = np.array([[1, np.nan, 2, 3], [np.inf, 1, -np.inf, 1]], np.float32)
    check_cumulative(backend, CumulativeDescriptor("sum", 1), x, DataType.FLOAT32)


CUMULATIVE_MALFORMED = {
    "axis out of range": (lambda: cumulative_spec(CumulativeDescriptor("sum", 2), (2, 3)), "axis"),
    "negative axis out of range": (lambda: cumulative_spec(CumulativeDescriptor("sum", -3), (2, 3)), "axis"),
    "rank 0": (lambda: cumulative_spec(CumulativeDescriptor("sum", 0), ()), "rank"),
    "bool x": (lambda: cumulative_spec(CumulativeDescriptor("prod", 0), (2, 3), DataType.BOOL), "numeric"),
    "output shape differs": (lambda: cumulative_spec(CumulativeDescriptor("sum", 0), (2, 3), out_shape=(3, 2)),
                             "output"),
    "output type differs": (lambda: cumulative_spec(CumulativeDescriptor("sum", 0), (2, 3),
                                                    out_dtype=DataType.FLOAT64), "float64"),
}


@pytest.mark.parametrize("name", list(CUMULATIVE_MALFORMED))
def test_malformed_cumulative_is_refused(backend, name: str) -> None:
    build, reason = CUMULATIVE_MALFORMED[name]
    assert_refused(backend, build(), reason)


@pytest.mark.parametrize("field, value", [("op", 3), ("exclusive", 2), ("reverse", 5)])
def test_malformed_cumulative_descriptor_values_are_refused(backend, field: str, value: int) -> None:
    desc = CumulativeDescriptor("sum", 0)
    object.__setattr__(desc, field, value)  # past the dataclass, as a C caller could
    assert_refused(backend, cumulative_spec(desc, (2, 3)), "unknown operation" if field == "op" else field)
