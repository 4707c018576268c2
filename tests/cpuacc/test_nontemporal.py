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
    """Streamed == stored bit for bit but for NaN payloads (NaN at the same places; the sign
    of zero too), and both within rtol/atol of the float64 oracle (NaN where it has NaN)."""
    for (isa, n), (streaming, plain) in pairs.items():
        got, stored = run(streaming, layer, arrays), run(plain, layer, arrays)
        numbers = ~np.isnan(got)
        np.testing.assert_array_equal(np.where(numbers, got.view(np.uint32), 0),
                                      np.where(numbers, stored.view(np.uint32), 0),
                                      err_msg=f"{layer.name}: isa={isa} num_threads={n}, streamed != stored")
        np.testing.assert_array_equal(np.isnan(stored), ~numbers,
                                      err_msg=f"{layer.name}: isa={isa} num_threads={n}, NaN elsewhere")
        np.testing.assert_allclose(got, expected.astype(np.float32), rtol=rtol, atol=atol,
                                   err_msg=f"{layer.name}: isa={isa} num_threads={n}")


SPECIALS = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf], np.float32)


def with_specials(x: np.ndarray, rng: np.random.Generator, offset: int = 0) -> np.ndarray:
    """x with NaN, -0, +0, +inf and -inf written at every 53rd element from `offset` (arrays
    given different offsets never hold a NaN at the same position, where NaN payloads would
    depend on operand order)."""
    flat = x.reshape(-1)
    at = np.arange(offset % 53, flat.size, 53) if flat.size > 1 else np.arange(0)
    flat[at] = SPECIALS[rng.integers(0, SPECIALS.size, at.size)]
    return x


# Element counts around the 256-float stream block, the vector widths and the elementwise
# kernels' 8192-element chunks; the odd ones leave every later chunk off the 64-byte boundary.
LENGTHS = [1, 15, 17, 255, 257, 8193, 70001]

ACTIVATIONS = {
    "relu": (ActivationDescriptor("relu"), lambda x: np.maximum(x, 0.0)),
    "sigmoid": (ActivationDescriptor("sigmoid"), lambda x: 1.0 / (1.0 + np.exp(-x))),
    "leaky_relu": (ActivationDescriptor("leaky_relu", alpha=0.1), lambda x: np.where(x >= 0, x, 0.1 * x)),
    "bounded_relu": (ActivationDescriptor("bounded_relu", alpha=-0.5, beta=1.5), lambda x: np.clip(x, -0.5, 1.5)),
}


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_activation(pairs, act: str, length: int) -> None:  # type: ignore[no-untyped-def]
    desc, oracle = ACTIVATIONS[act]
    rng = np.random.default_rng(seed(act, length))
    x = with_specials(rng.standard_normal((1, length)).astype(np.float32), rng)
    layer = spec(LayerKind.ACTIVATION, f"{act} {length}", desc, [x.shape], x.shape)
    with np.errstate(all="ignore"):
        expected = oracle(x.astype(np.float64))
    check_same_bits(pairs, layer, [x], expected)


BINARY_SHAPES = {
    "rows": ((3, 8193), (3, 8193)),
    "row broadcast": ((5, 257), (1, 257)),
    "column broadcast": ((7, 1000), (7, 1)),
    "both broadcast": ((4, 1, 33), (1, 9, 33)),
    "scalar": ((70001,), (1,)),
    "scalar first": ((1,), (70001,)),
}
BINARY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum}
FUSED = {"relu": (ActivationDescriptor("relu"), lambda x: np.maximum(x, 0.0)),
         "bounded_relu": (ActivationDescriptor("bounded_relu", alpha=-0.5, beta=1.5), lambda x: np.clip(x, -0.5, 1.5)),
         "sigmoid": (ActivationDescriptor("sigmoid"), lambda x: 1.0 / (1.0 + np.exp(-x)))}


@pytest.mark.parametrize("fused", [None, *FUSED])
@pytest.mark.parametrize("op", list(BINARY_OPS))
@pytest.mark.parametrize("shapes", list(BINARY_SHAPES))
def test_binary(pairs, shapes: str, op: str, fused: str | None) -> None:  # type: ignore[no-untyped-def]
    sa, sb = BINARY_SHAPES[shapes]
    rng = np.random.default_rng(seed(shapes, op, fused))
    a = with_specials(rng.standard_normal(sa).astype(np.float32), rng)
    b = with_specials(rng.standard_normal(sb).astype(np.float32), rng, offset=26)
    if op == "div":  # keep the quotients within the float32 tolerances (specials still divide)
        b = np.where(np.abs(b) < 0.25, np.float32(0.25), b).astype(np.float32)
    with np.errstate(all="ignore"):
        expected = BINARY_OPS[op](a.astype(np.float64), b)
        if fused is not None:
            expected = FUSED[fused][1](expected)
    desc = ElementwiseBinaryDescriptor(op, FUSED[fused][0] if fused else None)
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


def run_at_offset(runtime: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray], offset: int) -> np.ndarray:
    """Executes `layer` into an output starting `offset` floats past a 64-byte boundary, with
    NaN-filled guard floats before and after it that must stay untouched (NaN left inside the
    output shows an element the kernel forgot); returns the output."""
    size = int(np.prod(layer.outputs[0].shape))
    raw = np.full(size + 64, np.nan, np.float32)
    start = (-raw.ctypes.data % 64) // 4 + 16  # 16 guard floats at least before the output
    out = raw[start + offset:start + offset + size].reshape(layer.outputs[0].shape)
    factory = runtime.backend("CpuAcc").create_workload_factory()
    try:
        workload = factory.create_workload(layer)
    finally:
        factory.close()
    try:
        workload.execute([np.array(a, np.float32, order="C") for a in arrays], [out])
    finally:
        workload.close()
    guards = np.concatenate([raw[:start + offset], raw[start + offset + size:]])
    assert np.isnan(guards).all(), f"{layer.name}: wrote outside the output at offset {offset}"
    return out


ALIGNMENT_LAYERS = {
    "maxpool 3x3 s2 odd": lambda rng: (spec(LayerKind.POOLING_2D, "maxpool", Pooling2dDescriptor(
        kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), **POOL_KINDS["max"]), [(2, 3, 13, 23)], (2, 3, 7, 12)),
        [rng.standard_normal((2, 3, 13, 23)).astype(np.float32)]),
    "avgpool 3x3 s2 112": lambda rng: (spec(LayerKind.POOLING_2D, "avgpool", Pooling2dDescriptor(
        kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), **POOL_KINDS["avg_exclude"]), [(1, 2, 112, 112)],
        (1, 2, 56, 56)), [rng.standard_normal((1, 2, 112, 112)).astype(np.float32)]),
    "add relu": lambda rng: (spec(LayerKind.ELEMENTWISE_BINARY, "add", ElementwiseBinaryDescriptor(
        "add", ActivationDescriptor("relu")), [(3, 1001), (3, 1001)], (3, 1001)),
        [rng.standard_normal((3, 1001)).astype(np.float32) for _ in range(2)]),
    "relu": lambda rng: (spec(LayerKind.ACTIVATION, "relu", ActivationDescriptor("relu"), [(1, 777)], (1, 777)),
                         [rng.standard_normal((1, 777)).astype(np.float32)]),
}


@pytest.mark.parametrize("offset", range(16))
@pytest.mark.parametrize("name", list(ALIGNMENT_LAYERS))
def test_output_at_every_alignment(pairs, name: str, offset: int) -> None:  # type: ignore[no-untyped-def]
    """Streamed output into a caller's array at each float offset from a 64-byte boundary
    (NumPy places large arrays 16 bytes past one): the same bits as stored output, nothing
    written outside it."""
    layer, arrays = ALIGNMENT_LAYERS[name](np.random.default_rng(seed("alignment", name)))
    for (isa, n), (streaming, plain) in pairs.items():
        got = run_at_offset(streaming, layer, arrays, offset)
        assert not np.isnan(got).any(), f"{name}: isa={isa} num_threads={n} offset {offset}: element not written"
        np.testing.assert_array_equal(got.view(np.uint32), run(plain, layer, arrays).view(np.uint32),
                                      err_msg=f"{name}: isa={isa} num_threads={n} offset {offset}")
