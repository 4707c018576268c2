"""CAST between float16 (and bfloat16) and float32 on CpuAcc (kernels/half_rows.h: vcvtph2ps / vcvtps2ph on the
AVX-512 set, plugin_common's scalar conversions on the others) against CpuRef bit for bit, on
every kernel set and thread count: every one of the 65536 float16 patterns to float32 (NaN
payloads, signalling ones included, and the subnormals), and float32 values around every
rounding boundary, the overflow to infinity, the subnormal range and NaNs of both signs to
float16; lengths that leave a vector tail."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import CastDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo
from conformance.conftest import run_layer

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(1616)


def _cast(x: np.ndarray, to: DataType) -> LayerSpec:
    return LayerSpec(LayerKind.CAST, "cast", CastDescriptor(), (TensorInfo(x.shape, DataType.from_any(x.dtype)),),
                     (TensorInfo(x.shape, to),))


def _both(runtimes, x: np.ndarray, to: DataType) -> None:  # type: ignore[no-untyped-def]
    spec = _cast(x, to)
    with plugnn.Runtime() as rt:
        want = run_layer(rt.backend("CpuRef"), spec, [x])[0]
    for (isa, threads), rt in runtimes.items():
        backend = rt.backend("CpuAcc")
        assert backend.is_layer_supported(spec).supported
        got = run_layer(backend, spec, [x])[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), f"isa={isa} num_threads={threads}: " \
            f"{np.flatnonzero(got.view(np.uint8) != want.view(np.uint8))[:8]}"


def test_every_float16_pattern_to_float32(runtimes) -> None:  # type: ignore[no-untyped-def]
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    _both(runtimes, x, DataType.FLOAT32)
    _both(runtimes, x[:1000 * 16 + 7].reshape(-1), DataType.FLOAT32)  # a tail past the last vector


def _boundaries() -> np.ndarray:
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float32)
    bits = finite.view(np.uint32).astype(np.int64)
    around = np.concatenate([bits - 1, bits, bits + 1, bits + (1 << 12), bits + (1 << 12) - 1, bits + (1 << 12) + 1])
    values = (around & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    specials = np.array([np.inf, -np.inf, 65504.0, 65519.99, 65520.0, -65520.0, 1e9, 6e-8, 2.98e-8, 2.99e-8, 1e-40,
                         -1e-40, 0.0, -0.0], np.float32)
    nans = np.array([0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0x7fa00000, 0x7f802000],
                    np.uint32).view(np.float32)
    noise = RNG.integers(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([values, specials, nans, noise])


def test_float32_to_float16_at_every_boundary(runtimes) -> None:  # type: ignore[no-untyped-def]
    with np.errstate(invalid="ignore"):
        x = _boundaries()
    _both(runtimes, x, DataType.FLOAT16)
    _both(runtimes, x[:37], DataType.FLOAT16)


@pytest.mark.parametrize("shape", [(0,), (1,), (15,), (16,), (17,), (3, 5, 7)])
def test_lengths(runtimes, shape) -> None:  # type: ignore[no-untyped-def]
    x = RNG.standard_normal(shape).astype(np.float32) * 1000
    _both(runtimes, x, DataType.FLOAT16)
    _both(runtimes, x.astype(np.float16), DataType.FLOAT32)


def test_every_bfloat16_pattern_to_float32_and_back(runtimes) -> None:  # type: ignore[no-untyped-def]
    """bfloat16 (kernels/half_rows.h's integer rows): every pattern to float32, and float32 values
    around every bfloat16 rounding boundary (ties to even), overflow and NaNs back."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16)
    _both(runtimes, patterns, DataType.FLOAT32)
    upper = np.arange(65536, dtype=np.uint32) << 16
    around = np.concatenate([upper, upper + 0x7fff, upper + 0x8000, upper + 0x8001, upper + 0xffff])
    x = (around & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        _both(runtimes, x, DataType.BFLOAT16)
        _both(runtimes, x[:45], DataType.BFLOAT16)
