"""What the CpuAcc test modules share: whether CpuAcc is built, the kernel sets this machine
runs and the thread counts they are tried at, and running one layer on one CpuAcc runtime."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import plugnn
from plugnn.layers import LayerSpec

with plugnn.Runtime() as _rt:
    HAVE_CPUACC = "CpuAcc" in _rt.backend_ids
    BEST_ISA = _rt.backend("CpuAcc").get_option("isa") if HAVE_CPUACC else "portable"

THREADS = (1, 2, 3, 7)
# Every kernel set this machine runs, each at every thread count (the first is the reference
# for bit-exact comparison across thread counts of the same kernel set).
ISA_ORDER = ["portable", "avx2", "avx512"]
CONFIGS = [(isa, n) for isa in ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1] for n in THREADS]


def run(runtime: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Executes `layer` on the runtime's CpuAcc into a NaN-filled output (NaN left over shows
    an element the kernel forgot) and returns it."""
    backend = runtime.backend("CpuAcc")
    support = backend.is_layer_supported(layer)
    assert support.supported, support.reason
    out = np.full(layer.outputs[0].shape, np.nan, np.float32)
    factory = backend.create_workload_factory()
    try:
        workload = factory.create_workload(layer)
    finally:
        factory.close()
    try:
        workload.execute([np.array(a, np.float32, order="C") for a in arrays], [out])  # keeps rank 0
    finally:
        workload.close()
    return out
