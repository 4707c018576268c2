"""CpuAcc's float32 kernels for the transformer-era kinds: ElementwiseUnary (the float operations
it accepts), Reduce (every operation over any set of axes, keep_dims or not, ARG_MAX/ARG_MIN
with ties and NaNs), Normalization (LAYER and RMS over trailing dims with scale and bias
broadcast, constant or given at run time; GROUP, instance normalization included) and Gather
TAKE (INT32/INT64 indices, any axis, negative indices, an index out of range failing execute
with the index named). Each on every kernel set this machine runs (option isa) at 1, 2, 3 and
7 threads, with lengths that are no multiple of any vector width and empty tensors; what
CpuAcc does not run is refused with a reason.

Oracle: NumPy float64 on the same float32 inputs. Tolerances: exact operations (ABS, NEG,
SIGN, FLOOR, CEIL, ROUND, SQRT, RECIPROCAL, MAX, MIN, ARG_*, Gather) bit for bit; EXP, LOG,
ERF, RSQRT, SIN, COS within the ulp bounds of plugins/accel/README.md; sums (reductions,
normalizations) rtol 1e-5, atol 1e-6 (float32 vector lanes against float64). Results do not
depend on the thread count (checked bit for bit against the first thread count)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence

import numpy as np
import pytest

import plugnn
from plugnn import BackendError
from plugnn.descriptors import (ElementwiseUnaryDescriptor, GatherDescriptor, LayerKind,
                                NormalizationDescriptor, ReduceDescriptor)
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import HAVE_CPUACC, THREADS
from .common import execute as common_execute

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(1719)
SUM_RTOL, SUM_ATOL = 1e-5, 1e-6


def spec(kind: LayerKind, desc: object, inputs: Sequence[np.ndarray], out_shape: Sequence[int],
         out_dtype: DataType = DataType.FLOAT32, constants: Sequence[int] = ()) -> LayerSpec:
    infos = tuple(TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in inputs)
    consts = tuple(inputs[i] if i in constants else None for i in range(len(inputs))) if constants else ()
    return LayerSpec(kind, kind.name.lower(), desc, infos, (TensorInfo(tuple(out_shape), out_dtype),),  # type: ignore[arg-type]
                     constants=consts)


def execute(rt: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Runs `layer` on the runtime's CpuAcc into an output whose unwritten elements show (NaN,
    or 0xA5 bytes for integers)."""
    info = layer.outputs[0]
    out = np.empty(info.shape, info.dtype.numpy_dtype)
    if info.dtype is DataType.FLOAT32:
        out[...] = np.nan
    else:
        out.reshape(-1).view(np.uint8)[:] = 0xA5
    return common_execute(rt, layer, arrays, [out])[0]


def every_config(runtimes: dict[tuple[str, int], plugnn.Runtime], layer: LayerSpec,
                 arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The result of each kernel set (at its first thread count), after checking that its other
    thread counts give the same bits."""
    first: dict[str, np.ndarray] = {}
    for (isa, n), rt in runtimes.items():
        result = execute(rt, layer, arrays)
        if isa not in first:
            first[isa] = result
        else:
            np.testing.assert_array_equal(result, first[isa], err_msg=f"isa={isa} num_threads={n} differs "
                                          f"from num_threads={THREADS[0]}")
    return first


def close(actual: np.ndarray, expected: np.ndarray, rtol: float = SUM_RTOL, atol: float = SUM_ATOL) -> None:
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol, equal_nan=True)


def ulp_error(y: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|y - exact| in ulp of the exact float64 result (2^-149 in the subnormals); 0 where both
    agree on NaN or on an infinity."""
    with np.errstate(invalid="ignore"):  # signalling NaNs of the bit-pattern sweep
        y64 = y.astype(np.float64)
    with np.errstate(over="ignore"):
        rounded = exact.astype(np.float32).astype(np.float64)  # beyond the float32 range: inf
    both_nan = np.isnan(y64) & np.isnan(exact)
    same_inf = np.isinf(rounded) & (y64 == rounded)
    a = np.abs(exact)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    ulp = np.where(a >= 2.0**-126, 2.0 ** (e - 23), 2.0**-149)
    with np.errstate(invalid="ignore"):
        err = np.abs(y64 - exact) / ulp
    return np.where(both_nan | same_inf, 0.0, err)


def sweep() -> np.ndarray:
    """Every 4099th float32 bit pattern (both signs, every binade, subnormals) and uniform values
    in [-1, 1], [-10, 10] and [-120, 120]."""
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5], np.float32)
    uniform = [RNG.uniform(-r, r, 2**16).astype(np.float32) for r in (1.0, 10.0, 120.0)]
    return np.concatenate([bits.view(np.float32), special, *uniform])


# ---- ElementwiseUnary ----------------------------------------------------------------------------

EXACT = {
    "abs": np.abs, "neg": np.negative, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "sqrt": np.sqrt, "reciprocal": lambda x: np.float32(1.0) / x,
}
# the operation's float64 function and the bound in ulp (plugins/accel/README.md)
# (measured maxima on this sweep, portable / AVX2 / AVX-512: exp 0.94 / 0.84 / 0.84, log 0.75,
# erf 1.23 / 1.13 / 1.13, rsqrt 1.47, sin 1.46, cos 1.48 / 1.55 / 1.55)
BOUNDED = {
    "exp": (np.exp, 1.5), "log": (np.log, 1.0), "erf": (np.frompyfunc(math.erf, 1, 1), 1.5),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), 2.0), "sin": (np.sin, 2.0), "cos": (np.cos, 2.0),
}


@pytest.mark.parametrize("op", sorted(EXACT))
def test_exact_unary_operations(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str) -> None:
    x = sweep()
    with np.errstate(all="ignore"):
        expected = EXACT[op](x)
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [x], x.shape)
    for isa, y in every_config(runtimes, layer, [x]).items():
        np.testing.assert_array_equal(y, expected.astype(np.float32), err_msg=f"{op} isa={isa}")
        zero = expected == 0
        np.testing.assert_array_equal(np.signbit(y[zero]), np.signbit(expected[zero]), err_msg=f"{op} signed zeros")


@pytest.mark.parametrize("op", sorted(BOUNDED))
def test_bounded_unary_operations(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str) -> None:
    fn, bound = BOUNDED[op]
    x = sweep()
    with np.errstate(all="ignore"):
        exact = np.asarray(fn(x.astype(np.float64)), np.float64)
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [x], x.shape)
    for isa, y in every_config(runtimes, layer, [x]).items():
        err = ulp_error(y, exact)
        worst = int(np.argmax(err))
        assert err[worst] <= bound, f"{op} isa={isa}: {err[worst]:.2f} ulp at x={x[worst]!r} (bound {bound})"
        assert np.array_equal(np.isnan(y), np.isnan(exact)), f"{op} isa={isa}: NaN where the exact result is not"


def test_sin_cos_beyond_the_vector_range(runtimes: dict[tuple[str, int], plugnn.Runtime]) -> None:
    """|x| > 8192 goes through libm in double (the vector reduction is accurate up to there)."""
    x = np.concatenate([RNG.uniform(8000, 9000, 1000), RNG.uniform(-1e6, 1e6, 1000), [3e38, -3e38, 8192.0,
                        np.nextafter(np.float32(8192), np.float32(9000))]]).astype(np.float32)
    for op, fn in (("sin", np.sin), ("cos", np.cos)):
        layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [x], x.shape)
        for isa, y in every_config(runtimes, layer, [x]).items():
            err = ulp_error(y, fn(x.astype(np.float64)))
            large = np.abs(x) > 8192
            assert err[large].max() <= 0.51, f"{op} isa={isa}: libm in double, rounded once"
            assert err[~large].max() <= 2.0, f"{op} isa={isa}"


@pytest.mark.parametrize("shape", [(0,), (0, 5), (1,), (3, 1029), (2, 3, 17)])
def test_unary_shapes(runtimes: dict[tuple[str, int], plugnn.Runtime], shape: tuple[int, ...]) -> None:
    x = RNG.uniform(0.1, 4.0, shape).astype(np.float32)
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor("log"), [x], shape)
    for y in every_config(runtimes, layer, [x]).values():
        close(y, np.log(x.astype(np.float64)), rtol=2e-7, atol=0.0)


@pytest.mark.parametrize("op", ["tan", "asin", "atanh", "is_nan", "logical_not"])
def test_unary_operations_cpuacc_does_not_run_are_refused(op: str) -> None:
    dtype = {"is_nan": np.float32, "logical_not": np.bool_}.get(op, np.float32)
    x = np.zeros((4,), dtype)
    out = DataType.BOOL if op in ("is_nan", "logical_not") else DataType.FLOAT32
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor(op), [x], (4,), out_dtype=out)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported
    assert f"CpuAcc has no ElementwiseUnary kernel for {op.upper()}" in (answer.reason or "")


def test_unary_other_types_are_refused() -> None:
    x = np.zeros((4,), np.float16)
    layer = spec(LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor("exp"), [x], (4,), out_dtype=DataType.FLOAT16)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and "CpuAcc runs ElementwiseUnary on float32 only; input 0 is float16" in answer.reason


# ---- Reduce ----------------------------------------------------------------------------------------

REDUCTIONS = {
    "sum": lambda x, ax, kd: np.sum(x, axis=ax, keepdims=kd),
    "mean": lambda x, ax, kd: np.mean(x, axis=ax, keepdims=kd),
    "max": lambda x, ax, kd: np.max(x, axis=ax, keepdims=kd) if x.size else np.full(
        np.sum(x, axis=ax, keepdims=kd).shape, -np.inf),
    "min": lambda x, ax, kd: np.min(x, axis=ax, keepdims=kd) if x.size else np.full(
        np.sum(x, axis=ax, keepdims=kd).shape, np.inf),
    "prod": lambda x, ax, kd: np.prod(x, axis=ax, keepdims=kd),
    "l1": lambda x, ax, kd: np.sum(np.abs(x), axis=ax, keepdims=kd),
    "l2": lambda x, ax, kd: np.sqrt(np.sum(x * x, axis=ax, keepdims=kd)),
    "log_sum": lambda x, ax, kd: np.log(np.sum(x, axis=ax, keepdims=kd)),
    "log_sum_exp": lambda x, ax, kd: _logsumexp(x, ax, kd),
    "sum_square": lambda x, ax, kd: np.sum(x * x, axis=ax, keepdims=kd),
}


def _logsumexp(x: np.ndarray, ax: tuple[int, ...], kd: bool) -> np.ndarray:
    m = np.max(x, axis=ax, keepdims=True) if x.size else np.full(np.sum(x, axis=ax, keepdims=True).shape, -np.inf)
    finite = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(x - finite), axis=ax, keepdims=True)) + finite
    r = np.where(np.isinf(m), m, r)
    return r if kd else np.squeeze(r, axis=ax)


def _no_warning() -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


AXES = [(), (3,), (2,), (0,), (1, 2), (0, 3), (1, 3), (0, 1, 2, 3), (0, 2)]


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("keep_dims", [True, False])
def test_reductions(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str, axes: tuple[int, ...],
                    keep_dims: bool) -> None:
    shape = (3, 5, 7, 37)
    low = 0.5 if op in ("prod", "log_sum") else -2.0
    x = RNG.uniform(low, 2.0 if op != "prod" else 1.2, shape).astype(np.float32)
    if not axes:
        expected = REDUCTIONS[op](x.astype(np.float64)[None], (0,), False)  # each element alone
    else:
        expected = REDUCTIONS[op](x.astype(np.float64), axes, keep_dims)
    layer = spec(LayerKind.REDUCE, ReduceDescriptor(op, axes, keep_dims), [x], expected.shape)
    for isa, y in every_config(runtimes, layer, [x]).items():
        exact = op in ("max", "min")
        close(y, expected, rtol=0.0 if exact else SUM_RTOL, atol=0.0 if exact else SUM_ATOL)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "l2", "log_sum_exp"])
def test_reductions_of_nothing_and_of_long_rows(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str) -> None:
    empty = np.zeros((4, 0, 3), np.float32)
    with np.errstate(invalid="ignore"), pytest.warns() if op == "mean" else _no_warning():
        expected = REDUCTIONS[op](empty.astype(np.float64), (1,), True)
    layer = spec(LayerKind.REDUCE, ReduceDescriptor(op, (1,), True), [empty], expected.shape)
    for y in every_config(runtimes, layer, [empty]).values():
        close(y, expected, rtol=0.0, atol=0.0)
    # a row longer than a block of the float lanes (4096), reduced inner-most and as columns
    x = RNG.uniform(0.9, 1.1, (2, 9001)).astype(np.float32)
    for axes, shape in (((1,), (2, 1)), ((0,), (1, 9001))):
        expected = REDUCTIONS[op](x.astype(np.float64), axes, True)
        layer = spec(LayerKind.REDUCE, ReduceDescriptor(op, axes, True), [x], shape)
        for y in every_config(runtimes, layer, [x]).values():
            close(y, expected, rtol=2e-6 if op != "prod" else 1e-4, atol=0.0)


@pytest.mark.parametrize("op", ["sum", "max", "min", "log_sum_exp", "l1"])
def test_reductions_with_nan_and_infinities(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str) -> None:
    x = RNG.uniform(-1, 1, (6, 33)).astype(np.float32)
    x[1, 5] = np.nan
    x[2, :] = -np.inf
    x[3, 7] = np.inf
    x[4, 0] = -np.inf
    for axes in ((1,), (0,)):
        with np.errstate(invalid="ignore"):
            expected = REDUCTIONS[op](x.astype(np.float64), axes, True)
        layer = spec(LayerKind.REDUCE, ReduceDescriptor(op, axes, True), [x], expected.shape)
        for y in every_config(runtimes, layer, [x]).values():
            close(y, expected)


@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("last", [False, True])
def test_arg_reductions(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str, axis: int, last: bool) -> None:
    x = RNG.integers(-3, 4, (5, 9, 601)).astype(np.float32)  # many ties
    x[1, 2, 3] = np.nan
    x[3, 4, 5] = np.nan
    x[3, 5, 5] = np.nan  # two NaNs along axis 1
    pick = np.argmax if op == "arg_max" else np.argmin
    if last:
        flipped = np.flip(x, axis)
        expected = x.shape[axis] - 1 - pick(flipped, axis=axis)
    else:
        expected = pick(x, axis=axis)
    out_shape = list(x.shape)
    out_shape[axis] = 1
    layer = spec(LayerKind.REDUCE, ReduceDescriptor(op, (axis,), True, last), [x], out_shape, DataType.INT64)
    for isa, y in every_config(runtimes, layer, [x]).items():
        np.testing.assert_array_equal(y.reshape(expected.shape), expected, err_msg=f"isa={isa}")


def test_reduce_other_types_are_refused() -> None:
    x = np.zeros((2, 3), np.float64)
    layer = spec(LayerKind.REDUCE, ReduceDescriptor("sum", (1,), True), [x], (2, 1), DataType.FLOAT64)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and "CpuAcc runs Reduce on float32 only; input 0 is float64" in answer.reason
    layer = spec(LayerKind.REDUCE, ReduceDescriptor("arg_max", (1,), True), [x.astype(np.int32)], (2, 1),
                 DataType.INT64)
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and "CpuAcc runs Reduce on float32 only; input 0 is int32" in answer.reason


# ---- Normalization -----------------------------------------------------------------------------------


def layer_norm(x: np.ndarray, axis: int, scale: np.ndarray, bias: np.ndarray | None, eps: float,
               rms: bool) -> np.ndarray:
    x = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    if rms:
        y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps)
    else:
        mean = np.mean(x, axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(np.mean((x - mean) ** 2, axis=axes, keepdims=True) + eps)
    y = y * scale
    return y + bias if bias is not None else y


@pytest.mark.parametrize("op", ["layer", "rms"])
@pytest.mark.parametrize("axis, scale_shape", [(-1, (37,)), (-2, (1, 37)), (-2, (5, 37)), (-2, (5, 1)),
                                               (1, (3, 5, 37)), (0, (1,)), (-1, (1,))], ids=str)
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_and_rms_normalization(runtimes: dict[tuple[str, int], plugnn.Runtime], op: str, axis: int,
                                     scale_shape: tuple[int, ...], constant: bool, bias: bool) -> None:
    x = (RNG.standard_normal((2, 3, 5, 37)) * 3 + 10).astype(np.float32)  # a mean far from 0
    scale = RNG.uniform(0.5, 2.0, scale_shape).astype(np.float32)
    b = RNG.standard_normal(scale_shape).astype(np.float32)
    inputs = [x, scale] + ([b] if bias else [])
    desc = NormalizationDescriptor(op, axis=axis, epsilon=1e-5, has_bias=bias)
    layer = spec(LayerKind.NORMALIZATION, desc, inputs, x.shape, constants=(1, 2) if constant else ())
    expected = layer_norm(x, axis, scale.astype(np.float64), b.astype(np.float64) if bias else None, 1e-5,
                          op == "rms")
    for y in every_config(runtimes, layer, inputs).values():
        close(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("groups", [1, 3, 6])
@pytest.mark.parametrize("shape", [(2, 6, 7, 9), (3, 6), (1, 6, 0, 4)], ids=str)
def test_group_normalization(runtimes: dict[tuple[str, int], plugnn.Runtime], groups: int,
                             shape: tuple[int, ...]) -> None:
    x = (RNG.standard_normal(shape) * 2 - 5).astype(np.float32)
    scale = RNG.uniform(0.5, 2.0, (shape[1],)).astype(np.float32)
    bias = RNG.standard_normal((shape[1],)).astype(np.float32)
    desc = NormalizationDescriptor("group", num_groups=groups, epsilon=1e-3, has_bias=True)
    layer = spec(LayerKind.NORMALIZATION, desc, [x, scale, bias], shape)
    g = x.astype(np.float64).reshape(shape[0], groups, -1)
    if g.size:
        g = (g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + 1e-3)
    bshape = (1, shape[1]) + (1,) * (len(shape) - 2)
    expected = g.reshape(shape) * scale.reshape(bshape) + bias.reshape(bshape)
    for y in every_config(runtimes, layer, [x, scale, bias]).values():
        close(y, expected, rtol=1e-5, atol=1e-5)


def test_lp_normalization_is_refused() -> None:
    x = np.zeros((2, 3), np.float32)
    layer = spec(LayerKind.NORMALIZATION, NormalizationDescriptor("lp", axis=1, num_groups=2), [x], (2, 3))
    with plugnn.Runtime() as rt:
        answer = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not answer.supported and answer.reason == "CpuAcc runs Normalization LAYER, RMS and GROUP; it has no LP kernel"


# ---- Gather ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_gather_token_embeddings(runtimes: dict[tuple[str, int], plugnn.Runtime], index_type: type) -> None:
    table = RNG.standard_normal((1000, 64)).astype(np.float32)
    ids = RNG.integers(-1000, 1000, (2, 129)).astype(index_type)
    layer = spec(LayerKind.GATHER, GatherDescriptor("take", axis=0), [table, ids], (2, 129, 64), constants=(0,))
    for y in every_config(runtimes, layer, [table, ids]).values():
        np.testing.assert_array_equal(y, np.take(table, ids, axis=0))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("index_shape", [(), (3,), (2, 2)], ids=str)
def test_gather_along_any_axis(runtimes: dict[tuple[str, int], plugnn.Runtime], axis: int,
                               index_shape: tuple[int, ...]) -> None:
    data = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    size = data.shape[axis]
    ids = RNG.integers(-size, size, index_shape).astype(np.int64)
    expected = np.take(data, ids, axis=axis)
    layer = spec(LayerKind.GATHER, GatherDescriptor("take", axis=axis), [data, ids], expected.shape)
    for y in every_config(runtimes, layer, [data, ids]).values():
        np.testing.assert_array_equal(y, expected)


def test_gather_index_out_of_range_fails_execute_naming_it() -> None:
    data = RNG.standard_normal((10, 4)).astype(np.float32)
    for bad in (10, -11):
        ids = np.array([1, 2, bad, 3], np.int32)
        layer = spec(LayerKind.GATHER, GatherDescriptor("take", axis=0), [data, ids], (4, 4))
        layer = LayerSpec(layer.kind, "emb", layer.descriptor, layer.inputs, layer.outputs)
        with plugnn.Runtime() as rt:
            with pytest.raises(BackendError) as info:
                execute(rt, layer, [data, ids])
        text = str(info.value)
        assert f"CpuAcc Gather 'emb': index {bad} (element 2 of the indices) is out of range for axis 0 of size 10 " \
               "(valid: -10 to 9)" in text


