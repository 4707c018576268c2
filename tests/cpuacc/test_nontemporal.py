"""CpuAcc's non-temporal output path: layers whose inputs and outputs together exceed the
option nontemporal_bytes (default: the last-level cache) store their output with non-temporal
stores (activations, elementwise binary and variadic layers, 3-wide stride-2 NCHW pooling).
With the option at 0 every layer takes that path, so small tensors reach it: each result must
equal, bit for bit, what the same kernel set gives with ordinary stores, for lengths and
offsets that start rows off the 64-byte boundary and end them inside a vector."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import (ActivationDescriptor, ElementwiseBinaryDescriptor, ElementwiseVariadicDescriptor,
                                LayerKind, Pooling2dDescriptor)
from plugnn.errors import BackendError
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from .common import CONFIGS, HAVE_CPUACC, run
from .test_depthwise_pool import POOL_CASES, POOL_KINDS, pool_reference, seed

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

NEVER = str(1 << 62)


@pytest.fixture(scope="module")
def pairs() -> Iterator[dict[tuple[str, int], tuple[plugnn.Runtime, plugnn.Runtime]]]:
    """Per (kernel set, thread count): a runtime that streams every layer, and one that never does."""
    made = {}
    for isa, n in CONFIGS:
        made[(isa, n)] = tuple(plugnn.Runtime(backend_options={"CpuAcc": {
            "num_threads": n, "isa": isa, "nontemporal_bytes": limit}}) for limit in ("0", NEVER))
    yield made
    for streaming, plain in made.values():
        streaming.close()
        plain.close()


def spec(kind: LayerKind, name: str, desc: object, inputs: Sequence[tuple[int, ...]],
         output: tuple[int, ...]) -> LayerSpec:
    return LayerSpec(kind, name, desc, tuple(TensorInfo(tuple(s)) for s in inputs), (TensorInfo(tuple(output)),))


def check_same_bits(pairs, layer: LayerSpec, arrays: Sequence[np.ndarray], expected: np.ndarray,  # type: ignore[no-untyped-def]
                    rtol: float = 1e-5, atol: float = 1e-6) -> None:
    for (isa, n), (streaming, plain) in pairs.items():
        got = run(streaming, layer, arrays)
        np.testing.assert_array_equal(got, run(plain, layer, arrays),
                                      err_msg=f"{layer.name}: isa={isa} num_threads={n}, streamed != stored")
        np.testing.assert_allclose(got, expected.astype(np.float32), rtol=rtol, atol=atol,
                                   err_msg=f"{layer.name}: isa={isa} num_threads={n}")


# Element counts around the 256-float stream block, the vector widths and the elementwise
# kernels' 8192-element chunks; the odd ones leave every later chunk off the 64-byte boundary.
LENGTHS = [1, 15, 17, 255, 257, 8193, 70001]

ACTIVATIONS = {
    "relu": (ActivationDescriptor("relu"), lambda x: np.maximum(x, 0.0)),
    "sigmoid": (ActivationDescriptor("sigmoid"), lambda x: 1.0 / (1.0 + np.exp(-x))),
    "leaky_relu": (ActivationDescriptor("leaky_relu", alpha=0.1), lambda x: np.where(x >= 0, x, 0.1 * x)),
}


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_activation(pairs, act: str, length: int) -> None:  # type: ignore[no-untyped-def]
    desc, oracle = ACTIVATIONS[act]
    x = np.random.default_rng(seed(act, length)).standard_normal((1, length)).astype(np.float32)
    layer = spec(LayerKind.ACTIVATION, f"{act} {length}", desc, [x.shape], x.shape)
    check_same_bits(pairs, layer, [x], oracle(x.astype(np.float64)))


BINARY_SHAPES = {
    "rows": ((3, 8193), (3, 8193)),
    "row broadcast": ((5, 257), (1, 257)),
    "column broadcast": ((7, 1000), (7, 1)),
    "both broadcast": ((4, 1, 33), (1, 9, 33)),
    "scalar": ((70001,), (1,)),
}


@pytest.mark.parametrize("fused", [None, "relu"])
@pytest.mark.parametrize("op", ["add", "mul", "maximum"])
@pytest.mark.parametrize("shapes", list(BINARY_SHAPES))
def test_binary(pairs, shapes: str, op: str, fused: str | None) -> None:  # type: ignore[no-untyped-def]
    sa, sb = BINARY_SHAPES[shapes]
    rng = np.random.default_rng(seed(shapes, op, fused))
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    expected = {"add": np.add, "mul": np.multiply, "maximum": np.maximum}[op](a.astype(np.float64), b)
    if fused == "relu":
        expected = np.maximum(expected, 0.0)
    desc = ElementwiseBinaryDescriptor(op, ActivationDescriptor(fused) if fused else None)
    layer = spec(LayerKind.ELEMENTWISE_BINARY, f"{op} {shapes} {fused}", desc, [sa, sb], expected.shape)
    check_same_bits(pairs, layer, [a, b], expected)


@pytest.mark.parametrize("op", ["sum", "mean", "maximum"])
def test_variadic(pairs, op: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed("variadic", op))
    xs = [rng.standard_normal(s).astype(np.float32) for s in [(3, 1001), (1, 1001), (3, 1001)]]
    stacked = np.stack(np.broadcast_arrays(*[x.astype(np.float64) for x in xs]))
    expected = {"sum": stacked.sum(0), "mean": stacked.mean(0), "maximum": stacked.max(0)}[op]
    layer = spec(LayerKind.ELEMENTWISE_VARIADIC, f"{op} of 3", ElementwiseVariadicDescriptor(op),
                 [x.shape for x in xs], expected.shape)
    check_same_bits(pairs, layer, xs, expected)


# The NCHW pooling cases of 3-wide windows at column stride 2 (the kernel that streams), and
# widths whose output rows start off the 64-byte boundary.
STREAM_POOL_CASES = {name: case for name, case in POOL_CASES.items()
                     if case.kernel[1] == 3 and case.stride[1] == 2 and case.dilation[1] == 1}


@pytest.mark.parametrize("kind", ["max", "avg_exclude", "avg_include"])
@pytest.mark.parametrize("name", list(STREAM_POOL_CASES))
def test_pooling_3_wide_stride_2(pairs, name: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    case = STREAM_POOL_CASES[name]
    rng = np.random.default_rng(seed("stream", name, kind))
    x = rng.standard_normal(case.shape).astype(np.float32)
    if kind == "max":
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 97), replace=False)] = np.nan
    expected = pool_reference(x, case, kind)
    desc = Pooling2dDescriptor(kernel=case.kernel, stride=case.stride, padding=case.padding,
                               dilation=case.dilation, rounding="ceil" if case.ceil else "floor",
                               **POOL_KINDS[kind])
    layer = spec(LayerKind.POOLING_2D, f"{name} {kind}", desc, [x.shape], expected.shape)
    check_same_bits(pairs, layer, [x], expected, rtol=1e-4, atol=1e-5)


def test_option_round_trips_and_checks_its_value() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        default = int(backend.get_option("nontemporal_bytes"))
        assert default >= 1 << 20  # the last-level cache, or 32 MiB when Linux lists none
        backend.set_option("nontemporal_bytes", "0")
        assert backend.get_option("nontemporal_bytes") == "0"
        backend.set_option("nontemporal_bytes", "123456789")
        assert backend.get_option("nontemporal_bytes") == "123456789"
        for bad in ("-1", "", "1e9", "12 ", "0x10", "lots", "99999999999999999999"):
            with pytest.raises(BackendError, match="nontemporal_bytes must be a non-negative integer"):
                backend.set_option("nontemporal_bytes", bad)
        assert backend.get_option("nontemporal_bytes") == "123456789"
