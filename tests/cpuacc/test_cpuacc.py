"""CpuAcc specifics the per-layer conformance suite does not reach: its num_threads option,
tensors large enough to be split over the thread pool (every thread count must give the same
bits), and concurrent use of one pool and of two runtimes' pools."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence

import numpy as np
import pytest

import plugnn
from plugnn import BackendError
from plugnn.descriptors import (ActivationDescriptor, ConcatDescriptor, ElementwiseBinaryDescriptor,
                                ElementwiseVariadicDescriptor, LayerKind, Pooling2dDescriptor,
                                SoftmaxDescriptor, TransposeDescriptor)
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from .common import BEST_ISA, HAVE_CPUACC, check_every_config, run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(11)


def spec(kind: LayerKind, desc: object, inputs: Sequence[tuple[int, ...]], output: tuple[int, ...]) -> LayerSpec:
    return LayerSpec(kind, kind.name.lower(), desc, tuple(TensorInfo(tuple(s)) for s in inputs),
                     (TensorInfo(tuple(output)),))


# ---- options ------------------------------------------------------------------------------


def test_num_threads_defaults_to_the_cpus_this_process_may_use() -> None:
    with plugnn.Runtime() as rt:
        expected = min(len(os.sched_getaffinity(0)), 256) if hasattr(os, "sched_getaffinity") else None
        value = int(rt.backend("CpuAcc").get_option("num_threads"))
        assert value >= 1 and (expected is None or value == expected)


def test_num_threads_option_round_trips_and_checks_its_value() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        for value in ("1", "3", "256"):
            backend.set_option("num_threads", value)
            assert backend.get_option("num_threads") == value
        for bad in ("0", "257", "-1", "two", "", "3x"):
            with pytest.raises(BackendError, match="num_threads") as info:
                backend.set_option("num_threads", bad)
            assert info.value.status == "PN_ERR_INVALID_ARGUMENT"
        assert backend.get_option("num_threads") == "256"


def test_isa_option() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        assert BEST_ISA in ("portable", "avx2", "avx512")
        backend.set_option("isa", "portable")
        assert backend.get_option("isa") == "portable"
        backend.set_option("isa", "auto")
        assert backend.get_option("isa") == BEST_ISA
        for bad in ("sse9", "", "AVX2"):
            with pytest.raises(BackendError, match="isa") as info:
                backend.set_option("isa", bad)
            assert info.value.status == "PN_ERR_INVALID_ARGUMENT"
        if BEST_ISA != "avx512":
            with pytest.raises(BackendError, match="supports only up to"):
                backend.set_option("isa", "avx512")


def test_unknown_option_is_not_found() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        for call in (lambda: backend.set_option("threads", "2"), lambda: backend.get_option("threads")):
            with pytest.raises(BackendError, match="threads") as info:
                call()
            assert info.value.status == "PN_ERR_NOT_FOUND"


def test_changing_num_threads_keeps_earlier_workloads_working() -> None:
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2}}) as rt:
        backend = rt.backend("CpuAcc")
        x = RNG.standard_normal(1 << 20).astype(np.float32)
        layer = spec(LayerKind.ACTIVATION, ActivationDescriptor("relu"), [x.shape], x.shape)
        factory = backend.create_workload_factory()
        workload = factory.create_workload(layer)
        factory.close()
        backend.set_option("num_threads", "3")
        out = np.empty_like(x)
        workload.execute([x], [out])
        workload.close()
        np.testing.assert_array_equal(out, np.maximum(x, 0))
        np.testing.assert_array_equal(run(rt, layer, [x]), np.maximum(x, 0))


# ---- large tensors, every thread count ---------------------------------------------------


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "elu": lambda x: np.where(x >= 0, x, 0.5 * np.expm1(x)),
    "hard_swish": lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
}


@pytest.mark.parametrize("kind", list(ACTIVATIONS))
def test_activation_large(runtimes, kind: str) -> None:  # type: ignore[no-untyped-def]
    x = (RNG.standard_normal(300_001) * 6).astype(np.float32)
    x[::1000] = np.nan
    alpha = 0.5 if kind == "elu" else 0.0
    layer = spec(LayerKind.ACTIVATION, ActivationDescriptor(kind, alpha), [x.shape], x.shape)
    check_every_config(runtimes, layer, [x], ACTIVATIONS[kind](x.astype(np.float64)))


BROADCASTS = [
    ((64, 96, 97), (64, 96, 97)),          # same shape
    ((2, 64, 57, 59), (1, 64, 1, 1)),      # NCHW channel
    ((2, 57, 59, 64), (64,)),              # NHWC channel
    ((3, 200_001), ()),                    # scalar
    ((), (5, 70_001)),                     # scalar first
    ((33, 1, 1001), (1, 65, 1)),           # both broadcast
    ((1, 300_000), (2, 1)),                # long rows of one value
]


@pytest.mark.parametrize("op, fn", [("add", np.add), ("sub", np.subtract), ("maximum", np.maximum),
                                    ("prelu", lambda a, b: np.where(a >= 0, a, a * b))])
@pytest.mark.parametrize("a_shape, b_shape", BROADCASTS, ids=str)
def test_binary_large(runtimes, op, fn, a_shape, b_shape) -> None:  # type: ignore[no-untyped-def]
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    out = np.broadcast_shapes(a_shape, b_shape)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op, ActivationDescriptor("relu")),
                 [a_shape, b_shape], out)
    expected = np.maximum(fn(a.astype(np.float64), b.astype(np.float64)), 0)
    check_every_config(runtimes, layer, [a, b], expected)


# (a's shape, b's shape, which operand is a constant): short rows with a constant broadcast
# outside them are run on the constant expanded to the output's shape (elementwise.c)
SHORT_ROWS = [
    ((1, 3, 28, 28, 2), (1, 3, 1, 1, 2), 1),   # YOLO's box sizes times its anchors
    ((1, 3, 1, 1, 2), (1, 3, 7, 5, 2), 0),     # the constant first
    ((2, 5, 3), (5, 1), 1),                    # rows of 3, the constant along the middle dim
    ((4, 9, 7), (7,), 1),                      # rows of 7 of one constant row
    ((1, 1, 13, 13, 2), (1, 1, 13, 13, 2), 1), # same shape: nothing to expand
]


@pytest.mark.parametrize("op, fn", [("mul", np.multiply), ("sub", np.subtract),
                                    ("power", lambda a, b: np.power(np.abs(a), b))])
@pytest.mark.parametrize("a_shape, b_shape, const", SHORT_ROWS, ids=str)
def test_binary_short_rows_with_a_constant(runtimes, op, fn, a_shape, b_shape, const) -> None:  # type: ignore[no-untyped-def]
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    if op == "power":
        a, b = np.abs(a), np.round(np.abs(b) * 2).astype(np.float32)
    out = np.broadcast_shapes(a_shape, b_shape)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor(op), [a_shape, b_shape], out)
    layer = dataclasses.replace(layer, constants=tuple(v if k == const else None for k, v in enumerate((a, b))))
    expected = fn(a.astype(np.float64), b.astype(np.float64))
    check_every_config(runtimes, layer, [a, b], expected)


@pytest.mark.parametrize("shape", [(3, 7), (1, 3, 28, 28, 2), (5, 33)], ids=str)
def test_power_of_a_constant_two_is_the_square(runtimes, shape) -> None:  # type: ignore[no-untyped-def]
    """x ** 2 with the exponent a constant scalar runs as x * x: the correctly rounded square
    (powf is 1 ulp off it for about 1 value in 1400), NaN, infinities and -0 as powf gives them."""
    a = RNG.standard_normal(shape).astype(np.float32) * 1e3
    a.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    two = np.array(2.0, np.float32)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor("power"), [shape, ()], shape)
    layer = dataclasses.replace(layer, constants=(None, two))
    for (isa, n), rt in runtimes.items():
        got = run(rt, layer, [a, two])
        np.testing.assert_array_equal(got, a * a, err_msg=f"isa={isa} num_threads={n}")


@pytest.mark.parametrize("op, fn", [("sum", np.sum), ("mean", np.mean), ("maximum", np.max)])
def test_variadic_large(runtimes, op, fn) -> None:  # type: ignore[no-untyped-def]
    shapes = [(4, 1, 50_001), (4, 3, 50_001), (3, 1), (50_001,)]
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    out = np.broadcast_shapes(*shapes)
    layer = spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), shapes, out)
    expected = fn(np.stack([np.broadcast_to(a.astype(np.float64), out) for a in arrays]), axis=0)
    check_every_config(runtimes, layer, arrays, expected)


def pool_reference(x: np.ndarray, kind: str, k: int, s: int, pad: int) -> np.ndarray:
    """NCHW max/average (padding excluded) pooling, floor rounding."""
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    windows = np.stack([xp[:, :, i:i + s * oh:s, j:j + s * ow:s] for i in range(k) for j in range(k)])
    return windows.max(axis=0) if kind == "max" else np.nanmean(windows, axis=0)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("kind, k, s, pad", [("max", 3, 2, 1), ("average", 3, 1, 1), ("max", 2, 2, 0),
                                             ("average", 5, 3, 2)])
def test_pooling_large(runtimes, layout, kind, k, s, pad) -> None:  # type: ignore[no-untyped-def]
    x = RNG.standard_normal((2, 24, 61, 67)).astype(np.float32)
    expected = pool_reference(x, kind, k, s, pad)
    if layout == "nhwc":
        x, expected = x.transpose(0, 2, 3, 1).copy(), expected.transpose(0, 2, 3, 1)
    desc = Pooling2dDescriptor(kind, (k, k), (s, s), (pad,) * 4, layout=layout)
    layer = spec(LayerKind.POOLING_2D, desc, [x.shape], expected.shape)
    check_every_config(runtimes, layer, [x], expected)


@pytest.mark.parametrize("shape, axis", [((3000, 129), -1), ((7, 33, 1500), 1), ((1, 40, 9000), 1),
                                         ((4000, 37), 0)])
def test_softmax_large(runtimes, shape, axis) -> None:  # type: ignore[no-untyped-def]
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    layer = spec(LayerKind.SOFTMAX, SoftmaxDescriptor(axis), [shape], shape)
    check_every_config(runtimes, layer, [x], e / e.sum(axis=axis, keepdims=True))


def test_concat_transpose_copy_large(runtimes) -> None:  # type: ignore[no-untyped-def]
    a = RNG.standard_normal((3, 40, 33, 35)).astype(np.float32)
    b = RNG.standard_normal((3, 9, 33, 35)).astype(np.float32)
    concat = spec(LayerKind.CONCAT, ConcatDescriptor(1), [a.shape, b.shape], (3, 49, 33, 35))
    check_every_config(runtimes, concat, [a, b], np.concatenate([a, b], axis=1))
    for perm in [(0, 2, 3, 1), (3, 1, 2, 0), (0, 1, 3, 2), (1, 0, 2, 3)]:
        layer = spec(LayerKind.TRANSPOSE, TransposeDescriptor(perm), [a.shape], a.transpose(perm).shape)
        check_every_config(runtimes, layer, [a], a.transpose(perm))
    x = RNG.standard_normal(1_000_003).astype(np.float32)
    for kind, out in [(LayerKind.COPY, x.shape), (LayerKind.RESHAPE, (1_000_003, 1))]:
        layer = spec(kind, None, [x.shape], out)
        check_every_config(runtimes, layer, [x], x.reshape(out))


# ---- concurrency ----------------------------------------------------------------------------


def test_concurrent_executes_share_a_pool_and_two_runtimes_have_their_own() -> None:
    x = RNG.standard_normal(1 << 20).astype(np.float32)
    layer = spec(LayerKind.ACTIVATION, ActivationDescriptor("tanh"), [x.shape], x.shape)
    expected = run_once = None
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 3}}) as rt1, \
            plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2}}) as rt2:
        run_once = run(rt1, layer, [x])
        expected = np.tanh(x.astype(np.float64))
        np.testing.assert_allclose(run_once, expected, rtol=1e-4, atol=1e-5)
        workloads = []
        for rt in (rt1, rt1, rt2):
            factory = rt.backend("CpuAcc").create_workload_factory()
            workloads.append(factory.create_workload(layer))
            factory.close()
        errors: list[BaseException] = []

        def worker(workload) -> None:  # type: ignore[no-untyped-def]
            try:
                out = np.empty_like(x)
                for _ in range(20):
                    workload.execute([x], [out])
                    np.testing.assert_array_equal(out, run_once)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(w,)) for w in workloads]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for w in workloads:
            w.close()
        assert not errors, errors[0]
