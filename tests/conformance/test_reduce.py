"""REDUCE: the twelve reductions of backend_api.h against a NumPy oracle of the header's rules.

The oracle computes floats in float64 (rounded once to the output type) and integers exactly
as the header states them: SUM, PROD, L1, SUM_SQUARE modulo 2^bits, MAX/MIN/ARG_* exact, MEAN
and L2 in float64 truncated toward zero. The grid: every op over axes subsets (none, one,
several, all) with and without keep_dims, every element type each op allows, empty tensors
(a reduced axis of size 0 gives the header's empty values; a kept axis of size 0 an empty
output), rank 0, the NaN and infinity rules, integer wrapping, ties with select_last_index.
Then every malformed layer, refused with its reason.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from plugnn.descriptors import LayerKind, ReduceDescriptor, ReduceOp
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, run_layer, shape_id

# run_layer pre-fills integer outputs from NaN (a cast NumPy warns about).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

R = ReduceOp
ARG_OPS = (R.ARG_MAX, R.ARG_MIN)
FLOAT_ONLY = (R.LOG_SUM, R.LOG_SUM_EXP)
ORDER_OPS = (R.MAX, R.MIN)
FLOATS = (DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64)
INTEGERS = (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32,
            DataType.INT64, DataType.UINT64)
# float32 as the suite's default; the others computed in double and rounded once.
TOLERANCE = {DataType.FLOAT32: (RTOL, ATOL), DataType.FLOAT16: (2e-3, 1e-3), DataType.BFLOAT16: (1.6e-2, 1e-2),
             DataType.FLOAT64: (1e-12, 1e-12)}


def allowed_types(op: ReduceOp) -> tuple[DataType, ...]:
    if op in FLOAT_ONLY:
        return FLOATS
    return FLOATS + INTEGERS + ((DataType.BOOL,) if op in ORDER_OPS else ())


# ---- the oracle -------------------------------------------------------------------------------


def _keep(result: np.ndarray, axes: tuple[int, ...], keep_dims: bool, rank: int) -> np.ndarray:
    """A result computed with keepdims=True, reshaped for keep_dims=False."""
    if keep_dims:
        return result
    return result.reshape([s for i, s in enumerate(result.shape) if i not in axes] if rank else [])


def _arg(x: np.ndarray, axis: int, is_max: bool, last: bool) -> np.ndarray:
    """NumPy's argmax/argmin (a NaN is the most extreme value: its first index)."""
    if last:
        flipped = np.flip(x, axis)
        found = np.argmax(flipped, axis) if is_max else np.argmin(flipped, axis)
        return x.shape[axis] - 1 - found
    return np.argmax(x, axis) if is_max else np.argmin(x, axis)


def _float_reference(op: ReduceOp, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """keepdims=True result in float64."""
    x = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if op is R.SUM:
            return x.sum(axes, keepdims=True)
        if op is R.MEAN:
            count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
            s = x.sum(axes, keepdims=True)
            return s / count if count else np.full_like(s, np.nan)
        if op is R.MAX:
            return np.max(x, axes, keepdims=True, initial=-np.inf)
        if op is R.MIN:
            return np.min(x, axes, keepdims=True, initial=np.inf)
        if op is R.PROD:
            return x.prod(axes, keepdims=True)
        if op is R.L1:
            return np.abs(x).sum(axes, keepdims=True)
        if op is R.L2:
            return np.sqrt((x * x).sum(axes, keepdims=True))
        if op is R.LOG_SUM:
            return np.log(x.sum(axes, keepdims=True))
        if op is R.SUM_SQUARE:
            return (x * x).sum(axes, keepdims=True)
        assert op is R.LOG_SUM_EXP
        m = np.max(x, axes, keepdims=True, initial=-np.inf)
        finite = np.where(np.isfinite(m), m, 0.0)
        lse = finite + np.log(np.exp(x - finite).sum(axes, keepdims=True))
        return np.where(np.isfinite(m), lse, m)


def _integer_reference(op: ReduceOp, x: np.ndarray, axes: tuple[int, ...], dtype: DataType) -> np.ndarray:
    """keepdims=True result in the output type, exact as the header states."""
    out = dtype.numpy_dtype
    if op in ORDER_OPS:
        info = np.iinfo(out) if dtype is not DataType.BOOL else None
        low, high = (0, 1) if info is None else (info.min, info.max)
        wide = x.astype(np.uint64 if dtype.name.startswith("UINT") or info is None else np.int64)
        if op is R.MAX:
            return np.max(wide, axes, keepdims=True, initial=low).astype(out)
        return np.min(wide, axes, keepdims=True, initial=high).astype(out)
    if op in (R.MEAN, R.L2):
        wide = x.astype(np.float64)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        if op is R.MEAN:
            value = wide.sum(axes, keepdims=True) / count if count else np.zeros_like(wide.sum(axes, keepdims=True))
        else:
            value = np.sqrt((wide * wide).sum(axes, keepdims=True))
        info = np.iinfo(out)
        return np.clip(np.trunc(value), info.min, info.max).astype(out)  # L2 saturates
    # Modulo 2^64 on the two's complement, then wrapped to the type's width.
    bits = x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)
    if op is R.L1 and x.dtype.kind == "i":
        bits = np.where(x < 0, np.uint64(0) - bits, bits)
    if op is R.SUM_SQUARE:
        bits = bits * bits
    result = bits.prod(axes, keepdims=True, dtype=np.uint64) if op is R.PROD else \
        bits.sum(axes, keepdims=True, dtype=np.uint64)
    return result.astype(out)


def reduce_reference(desc: ReduceDescriptor, x: np.ndarray, dtype: DataType) -> np.ndarray:
    axes, rank = tuple(desc.axes), x.ndim
    if desc.op in ARG_OPS:
        wide = x.astype(np.float64 if dtype.is_float else (np.uint64 if x.dtype.kind in "ub" else np.int64))
        found = np.expand_dims(_arg(wide, axes[0], desc.op is R.ARG_MAX, desc.select_last_index), axes[0])
        return _keep(found.astype(np.int64), axes, desc.keep_dims, rank)
    if dtype.is_float:
        return _keep(_float_reference(desc.op, x, axes), axes, desc.keep_dims, rank)
    return _keep(_integer_reference(desc.op, x, axes, dtype), axes, desc.keep_dims, rank)


# ---- running ---------------------------------------------------------------------------------


def output_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keep_dims or i not in axes)


def make_spec(desc: ReduceDescriptor, shape: tuple[int, ...], dtype: DataType,
              out_shape: tuple[int, ...] | None = None, out_dtype: DataType | None = None,
              inputs: int = 1) -> LayerSpec:
    out_shape = output_shape(shape, desc.axes, desc.keep_dims) if out_shape is None else out_shape
    out_dtype = (DataType.INT64 if desc.op in ARG_OPS else dtype) if out_dtype is None else out_dtype
    return LayerSpec(LayerKind.REDUCE, f"reduce_{getattr(desc.op, 'name', desc.op)}".lower(), desc,
                     tuple(TensorInfo(shape, dtype) for _ in range(inputs)), (TensorInfo(out_shape, out_dtype),))


def random_input(op: ReduceOp, shape: tuple[int, ...], dtype: DataType, seed: int) -> np.ndarray:
    """Values the op is defined on: positive for LOG_SUM, small magnitudes for PROD; integers
    over the type's whole range (so sums and products wrap)."""
    rng = np.random.default_rng(seed)
    if dtype is DataType.BOOL:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.is_integer:
        info = np.iinfo(dtype.numpy_dtype)
        if op in (R.MEAN, R.L2) and dtype.itemsize == 8:  # computed in double: keep the sums exact
            return rng.integers(max(info.min, -2**40), 2**40, shape, dtype=dtype.numpy_dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype.numpy_dtype, endpoint=True)
    if op is R.LOG_SUM:
        x = rng.uniform(0.1, 2.0, shape)
    elif op is R.PROD:
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    else:
        x = rng.standard_normal(shape) * 2
    return x.astype(dtype.numpy_dtype)


def check(backend, desc: ReduceDescriptor, x: np.ndarray, dtype: DataType) -> None:
    spec = make_spec(desc, x.shape, dtype)
    (y,) = run_layer(backend, spec, [x])
    expected = reduce_reference(desc, x, dtype)
    if dtype.is_float and desc.op not in ARG_OPS:
        rtol, atol = TOLERANCE[dtype]
        assert_close(y, expected, rtol, atol, spec)
    else:
        assert y.dtype == expected.dtype, f"{spec.name}: output {y.dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(y, expected, err_msg=f"{spec.name} of {x.dtype}{list(x.shape)} over {desc.axes}")


# ---- axes and keep_dims ------------------------------------------------------------------------

SHAPES_AXES = [
    ((5,), ()),
    ((5,), (0,)),
    ((3, 4), (0,)),
    ((3, 4), (1,)),
    ((3, 4), (0, 1)),
    ((2, 3, 4), (1,)),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), (0, 1, 2)),
    ((2, 3, 4, 5), (1, 2)),
    ((2, 3, 4, 5), (0, 3)),
    ((2, 1, 3, 1, 2), (1, 3, 4)),
    ((1, 1000), (1,)),
]


@pytest.mark.parametrize("keep_dims", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("shape, axes", SHAPES_AXES, ids=shape_id)
@pytest.mark.parametrize("op", [op for op in R if op not in ARG_OPS], ids=lambda o: o.name)
def test_reduce_float32(backend, op: ReduceOp, shape, axes, keep_dims: bool) -> None:
    x = random_input(op, shape, DataType.FLOAT32, 1801)
    check(backend, ReduceDescriptor(op, axes, keep_dims), x, DataType.FLOAT32)


@pytest.mark.parametrize("last", [False, True], ids=["first", "last"])
@pytest.mark.parametrize("keep_dims", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("shape, axis", [((7,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4, 5), 3)],
                         ids=shape_id)
@pytest.mark.parametrize("op", ARG_OPS, ids=lambda o: o.name)
def test_arg_float32(backend, op: ReduceOp, shape, axis: int, keep_dims: bool, last: bool) -> None:
    # Few distinct values, so ties are common and select_last_index matters.
    x = np.random.default_rng(1802).integers(-2, 3, shape).astype(np.float32)
    check(backend, ReduceDescriptor(op, (axis,), keep_dims, last), x, DataType.FLOAT32)


# ---- element types ------------------------------------------------------------------------------

TYPE_CASES = [(op, dtype) for op in R for dtype in allowed_types(op)
              if dtype is not DataType.FLOAT32]


@pytest.mark.parametrize("op, dtype", TYPE_CASES, ids=lambda v: v.name if isinstance(v, (ReduceOp, DataType)) else None)
def test_element_types(backend, op: ReduceOp, dtype: DataType) -> None:
    shape = (3, 5, 4)
    x = random_input(op, shape, dtype, 1803)
    if op in ARG_OPS:
        for last in (False, True):
            check(backend, ReduceDescriptor(op, (1,), False, last), x, dtype)
        return
    if op is R.PROD and dtype.is_float:
        x = x[:, :4]  # bfloat16 and float16 products stay well inside range
    for axes, keep in (((1,), True), ((0, 2), False), ((0, 1, 2), False)):
        check(backend, ReduceDescriptor(op, axes, keep), x, dtype)


@pytest.mark.parametrize("op", [R.SUM, R.PROD, R.L1, R.SUM_SQUARE], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [DataType.INT8, DataType.UINT8, DataType.INT32, DataType.INT64, DataType.UINT64],
                         ids=lambda t: t.name)
def test_integer_results_wrap(backend, op: ReduceOp, dtype: DataType) -> None:
    info = np.iinfo(dtype.numpy_dtype)
    values = [info.max, info.max, info.min, info.max - 1, 3, info.min + 1]
    x = np.array(values, dtype.numpy_dtype).reshape(2, 3)
    spec = make_spec(ReduceDescriptor(op, (1,), False), x.shape, dtype)
    (y,) = run_layer(backend, spec, [x])
    # Python integers, wrapped by hand: an oracle independent of the one above.
    bits = 8 * dtype.itemsize

    def wrap(v: int) -> int:
        v %= 1 << bits
        return v - (1 << bits) if info.min < 0 and v >= 1 << (bits - 1) else v

    rows = [[int(v) for v in row] for row in x]
    if op is R.SUM:
        expected = [wrap(sum(row)) for row in rows]
    elif op is R.PROD:
        expected = [wrap(math.prod(row)) for row in rows]
    elif op is R.L1:
        expected = [wrap(sum(abs(v) for v in row)) for row in rows]
    else:
        expected = [wrap(sum(v * v for v in row)) for row in rows]
    assert y.tolist() == expected, f"{op.name} of {dtype.numpy_name} {rows}: {y.tolist()}, expected {expected}"


def test_l1_of_the_lowest_integer_wraps(backend) -> None:
    x = np.array([[-128], [-127]], np.int8)
    (y,) = run_layer(backend, make_spec(ReduceDescriptor(R.L1, (1,), False), x.shape, DataType.INT8), [x])
    assert y.tolist() == [-128, 127]


@pytest.mark.parametrize("dtype", [DataType.INT32, DataType.INT64, DataType.UINT8], ids=lambda t: t.name)
def test_integer_mean_truncates_toward_zero(backend, dtype: DataType) -> None:
    rows = [[1, 2, 2, -7], [-1, -2, 0, 0], [3, 3, 3, 4], [7, 0, 0, 0]]
    if dtype is DataType.UINT8:
        rows = [[1, 2, 2, 7], [255, 254, 0, 0], [3, 3, 3, 4], [7, 0, 0, 0]]
    x = np.array(rows, dtype.numpy_dtype)
    (y,) = run_layer(backend, make_spec(ReduceDescriptor(R.MEAN, (1,), False), x.shape, dtype), [x])
    expected = [int(np.trunc(sum(r) / 4)) for r in rows]
    assert y.tolist() == expected


def test_bool_max_is_any_and_min_is_all(backend) -> None:
    x = np.array([[True, False, True], [False, False, False], [True, True, True]])
    for op, expected in ((R.MAX, [True, False, True]), (R.MIN, [False, False, True])):
        (y,) = run_layer(backend, make_spec(ReduceDescriptor(op, (1,), False), x.shape, DataType.BOOL), [x])
        assert y.tolist() == expected, op.name


# ---- empty tensors, no axes, rank 0 -----------------------------------------------------------------

EMPTY_VALUES = {R.SUM: 0.0, R.MEAN: np.nan, R.MAX: -np.inf, R.MIN: np.inf, R.PROD: 1.0, R.L1: 0.0, R.L2: 0.0,
                R.LOG_SUM: -np.inf, R.LOG_SUM_EXP: -np.inf, R.SUM_SQUARE: 0.0}


@pytest.mark.parametrize("op, dtype", [(op, t) for op in EMPTY_VALUES for t in (
    DataType.FLOAT32, DataType.FLOAT16, DataType.INT32, DataType.UINT8, DataType.BOOL) if t in allowed_types(op)],
    ids=lambda v: v.name)
def test_empty_reduction_gives_the_headers_value(backend, op: ReduceOp, dtype: DataType) -> None:
    x = np.zeros((2, 0, 3), dtype.numpy_dtype)
    spec = make_spec(ReduceDescriptor(op, (1,), True), x.shape, dtype)
    (y,) = run_layer(backend, spec, [x])
    assert y.shape == (2, 1, 3)
    if dtype.is_float:
        expected = np.full(y.shape, EMPTY_VALUES[op])
        assert_close(y, expected, 0, 0, spec)
    else:
        np.testing.assert_array_equal(y, reduce_reference(spec.descriptor, x, dtype))
        if op is R.MAX:
            assert (y == (0 if dtype is DataType.BOOL else np.iinfo(dtype.numpy_dtype).min)).all()
        if op is R.MIN:
            assert (y == (1 if dtype is DataType.BOOL else np.iinfo(dtype.numpy_dtype).max)).all()
        if op is R.MEAN:
            assert (y == 0).all()


@pytest.mark.parametrize("op", list(R), ids=lambda o: o.name)
def test_empty_output(backend, op: ReduceOp) -> None:
    """A kept axis of size 0: nothing to compute (ARG_* reduce the non-empty axis)."""
    x = np.zeros((0, 4), np.float32)
    check(backend, ReduceDescriptor(op, (1,), False), x, DataType.FLOAT32)


@pytest.mark.parametrize("op, dtype", [(op, t) for op in R if op not in ARG_OPS
                                        for t in (DataType.FLOAT32, DataType.INT16) if t in allowed_types(op)],
                         ids=lambda v: v.name)
def test_no_axes_applies_the_op_per_element(backend, op: ReduceOp, dtype: DataType) -> None:
    x = random_input(op, (2, 3), dtype, 1804)
    if dtype.is_integer:
        x = (x % 50).astype(dtype.numpy_dtype)  # squares fit
    spec = make_spec(ReduceDescriptor(op, (), True), x.shape, dtype)
    (y,) = run_layer(backend, spec, [x])
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        per_element = {R.L1: np.abs(wide), R.L2: np.abs(wide), R.SUM_SQUARE: wide * wide,
                       R.LOG_SUM: np.log(wide)}.get(op, wide)
    assert_close(y, per_element, *TOLERANCE[DataType.FLOAT32], spec)


@pytest.mark.parametrize("op", [op for op in R if op not in ARG_OPS], ids=lambda o: o.name)
def test_rank_0(backend, op: ReduceOp) -> None:
    x = np.array(1.5, np.float32)
    check(backend, ReduceDescriptor(op, (), False), x, DataType.FLOAT32)


# ---- NaN and infinity -----------------------------------------------------------------------------


@pytest.mark.parametrize("op", [op for op in R if op not in ARG_OPS], ids=lambda o: o.name)
def test_nan_gives_nan(backend, op: ReduceOp) -> None:
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 5.0], [1.0, 2.0, np.nan], [1.0, 2.0, 3.0]], np.float32)
    spec = make_spec(ReduceDescriptor(op, (1,), False), x.shape, DataType.FLOAT32)
    (y,) = run_layer(backend, spec, [x])
    assert np.isnan(y[:3]).all(), f"{op.name}: {y}"
    assert not np.isnan(y[3])


@pytest.mark.parametrize("last", [False, True], ids=["first", "last"])
@pytest.mark.parametrize("op", ARG_OPS, ids=lambda o: o.name)
def test_arg_of_nan_is_the_nan(backend, op: ReduceOp, last: bool) -> None:
    x = np.array([[1, np.nan, 3, np.nan], [5, 1, 5, 1], [np.nan, -np.inf, np.inf, 0]], np.float32)
    (y,) = run_layer(backend, make_spec(ReduceDescriptor(op, (1,), False, last), x.shape, DataType.FLOAT32), [x])
    ties = {(R.ARG_MAX, False): 0, (R.ARG_MAX, True): 2, (R.ARG_MIN, False): 1, (R.ARG_MIN, True): 3}
    assert y.tolist() == [3 if last else 1, ties[(op, last)], 0]


def test_log_sum_exp_without_overflow(backend) -> None:
    x = np.array([[1000, 1000, -1000], [-np.inf, -np.inf, -np.inf], [np.inf, 1, 2], [-1e30, 1e30, 0],
                  [-np.inf, 0, 0]], np.float32)
    spec = make_spec(ReduceDescriptor(R.LOG_SUM_EXP, (1,), False), x.shape, DataType.FLOAT32)
    (y,) = run_layer(backend, spec, [x])
    expected = [1000 + np.log(2), -np.inf, np.inf, 1e30, np.log(2)]
    assert_close(y, np.array(expected), RTOL, ATOL, spec)


# ---- malformed layers ------------------------------------------------------------------------------

F32 = DataType.FLOAT32
MALFORMED = {
    "axes decreasing": (lambda: make_spec(ReduceDescriptor(R.SUM, (1, 0), True), (2, 3), F32, (1, 1)), "increasing"),
    "axes repeated": (lambda: make_spec(ReduceDescriptor(R.SUM, (1, 1), True), (2, 3), F32, (2, 1)), "increasing"),
    "axis out of range": (lambda: make_spec(ReduceDescriptor(R.SUM, (2,), True), (2, 3), F32, (2, 3)), "range"),
    "more axes than rank": (lambda: make_spec(ReduceDescriptor(R.SUM, (0, 1, 2), True), (2, 3), F32, (1, 1)),
                            "num_axes"),
    "arg with two axes": (lambda: make_spec(ReduceDescriptor(R.ARG_MAX, (0, 1), True), (2, 3), F32, (1, 1)),
                          "exactly one axis"),
    "arg with no axis": (lambda: make_spec(ReduceDescriptor(R.ARG_MIN, (), True), (2, 3), F32, (2, 3)),
                         "exactly one axis"),
    "arg over an empty axis": (lambda: make_spec(ReduceDescriptor(R.ARG_MAX, (1,), True), (2, 0), F32, (2, 1)),
                               "size 0"),
    "arg output float32": (lambda: make_spec(ReduceDescriptor(R.ARG_MAX, (1,), True), (2, 3), F32, (2, 1), F32),
                           "int64"),
    "sum output int64": (lambda: make_spec(ReduceDescriptor(R.SUM, (1,), True), (2, 3), F32, (2, 1),
                                           DataType.INT64), "float32"),
    "select_last_index on sum": (lambda: make_spec(ReduceDescriptor(R.SUM, (1,), True, True), (2, 3), F32),
                                 "select_last_index"),
    "log_sum of int32": (lambda: make_spec(ReduceDescriptor(R.LOG_SUM, (1,), True), (2, 3), DataType.INT32),
                         "float"),
    "log_sum_exp of int64": (lambda: make_spec(ReduceDescriptor(R.LOG_SUM_EXP, (1,), True), (2, 3),
                                               DataType.INT64), "float"),
    "sum of bool": (lambda: make_spec(ReduceDescriptor(R.SUM, (1,), True), (2, 3), DataType.BOOL), "numeric"),
    "arg_max of bool": (lambda: make_spec(ReduceDescriptor(R.ARG_MAX, (1,), True), (2, 3), DataType.BOOL),
                        "numeric"),
    "kept dims dropped": (lambda: make_spec(ReduceDescriptor(R.MAX, (1,), True), (2, 3), F32, (2,)), "output"),
    "dropped dims kept": (lambda: make_spec(ReduceDescriptor(R.MAX, (1,), False), (2, 3), F32, (2, 1)), "output"),
    "two inputs": (lambda: make_spec(ReduceDescriptor(R.SUM, (1,), True), (2, 3), F32, inputs=2), "input"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_reduce_is_refused(backend, name: str) -> None:
    build, reason = MALFORMED[name]
    assert_refused(backend, build(), reason)


@pytest.mark.parametrize("field, value, reason", [("op", 13, "unknown operation"), ("keep_dims", 2, "keep_dims"),
                                                   ("select_last_index", 7, "select_last_index")])
def test_malformed_descriptor_values_are_refused(backend, field: str, value: int, reason: str) -> None:
    desc = ReduceDescriptor(R.ARG_MAX, (1,), True)
    object.__setattr__(desc, field, value)  # past the dataclass' own checks, as a C caller could
    assert_refused(backend, make_spec(desc, (2, 3), F32, (2, 1), DataType.INT64), reason)


def test_every_op_has_a_case() -> None:
    covered = {op for op, _ in TYPE_CASES} | set(ARG_OPS)
    assert covered == set(R)
