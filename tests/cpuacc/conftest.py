"""Fixtures of the CpuAcc tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import plugnn

from .common import CONFIGS


@pytest.fixture(scope="module")
def runtimes() -> Iterator[dict[tuple[str, int], plugnn.Runtime]]:
    """One runtime per (kernel set, thread count) of common.CONFIGS, subnormals kept
    (flush_denormals 0: the kernels' numerics over the whole float32 range, the subnormal tails
    included; tests/cpuacc/test_denormals.py tests the default)."""
    rts = {(isa, n): plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa,
                                                                "flush_denormals": "0"}})
           for isa, n in CONFIGS}
    yield rts
    for rt in rts.values():
        rt.close()
