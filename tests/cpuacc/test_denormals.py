"""CpuAcc's option flush_denormals: by default (1) its loops run with subnormal results flushed to
zero (x86: MXCSR FTZ on the pool's threads, the caller's mode restored after each loop), because
Intel cores take a microcode assist per subnormal result; inputs are read as they are (no DAZ:
a subnormal still compares unequal to 0, casts to True). With 0 subnormal results are kept.
Checked on a multiply whose exact products are subnormal and on subnormal inputs whose products
are normal, at one and at two threads (the caller's loop and the workers'), on a Cast to bool of
a subnormal, and that the caller's own floating-point mode is what it was."""

from __future__ import annotations

import platform

import numpy as np
import pytest

import plugnn
from plugnn import Network
from plugnn.errors import BackendOptionError

from .common import HAVE_CPUACC, run_network

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
TINY = np.finfo(np.float32).tiny  # 2^-126, the smallest normal float32
N = 70001                         # enough elements to split over two threads


def multiply() -> tuple[Network, dict[str, np.ndarray]]:
    """a * b, where a's first half times b is below 2^-126 (subnormal exact products), its
    second half normal, and every 7th element of a itself subnormal (times the second half's b:
    a normal product)."""
    net = Network("denormals")
    a, b = net.add_input("a", (N,)), net.add_input("b", (N,))
    net.add_output(net.add_mul(a, b, name="mul"), "y")
    rng = np.random.default_rng(3)
    x = np.where(np.arange(N) < N // 2, rng.uniform(1e-33, 1e-30, N), rng.uniform(0.5, 2.0, N)).astype(np.float32)
    x[::7] = np.float32(3e-40)  # subnormal
    return net, {"a": x, "b": np.where(np.arange(N) < N // 2, 1e-9, 1e10).astype(np.float32)}


def run(flush: str | None, threads: int) -> np.ndarray:
    options = {"num_threads": str(threads)} | ({} if flush is None else {"flush_denormals": flush})
    net, inputs = multiply()
    with plugnn.Runtime(backend_options={"CpuAcc": options}) as rt:
        optimized, out = run_network(net, rt, ["CpuAcc"], inputs)
        assert {r["backend"] for r in optimized.assignments()} == {"CpuAcc"}
    return out["y"]


def test_the_option_defaults_to_flush_and_parses() -> None:
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        assert backend.get_option("flush_denormals") == "1"
        backend.set_option("flush_denormals", "0")
        assert backend.get_option("flush_denormals") == "0"
        with pytest.raises(BackendOptionError, match="must be 1 or 0"):
            backend.set_option("flush_denormals", "sometimes")
        assert backend.get_option("flush_denormals") == "0"


@pytest.mark.parametrize("threads", [1, 2])
def test_kept_subnormals_are_numpys_products(threads: int) -> None:
    _, inputs = multiply()
    np.testing.assert_array_equal(run("0", threads), inputs["a"] * inputs["b"])


@pytest.mark.skipif(not X86, reason="flushing is x86's MXCSR (FTZ)")
@pytest.mark.parametrize("threads", [1, 2])
def test_flushed_subnormals_are_zero_and_normal_values_unchanged(threads: int) -> None:
    _, inputs = multiply()
    exact = inputs["a"] * inputs["b"]  # NumPy in this thread: subnormals kept
    assert np.count_nonzero((exact != 0) & (np.abs(exact) < TINY)) > N // 3
    got = run(None, threads)
    normal = np.abs(exact) >= TINY
    np.testing.assert_array_equal(got[normal], exact[normal])  # subnormal inputs read as they are
    assert np.count_nonzero((np.abs(inputs["a"]) < TINY) & normal) > 1000
    assert not np.any(got[~normal])  # subnormal products: 0


def test_the_callers_floating_point_mode_is_restored() -> None:
    run(None, 1)
    run(None, 2)
    product = np.float32(1e-30) * np.float32(1e-10)  # subnormal: this thread does not flush
    assert product != 0 and abs(product) < TINY
