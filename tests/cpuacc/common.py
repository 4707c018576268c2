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


def execute(runtime: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray],
            outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Executes `layer` on the runtime's CpuAcc (which must claim it) with `arrays` as its inputs
    into `outputs` (prefilled by the caller, so a value left over shows an element the kernel
    forgot) and returns them."""
    backend = runtime.backend("CpuAcc")
    support = backend.is_layer_supported(layer)
    assert support.supported, support.reason
    factory = backend.create_workload_factory()
    try:
        workload = factory.create_workload(layer)
    finally:
        factory.close()
    try:
        workload.execute([np.array(a, order="C") for a in arrays], list(outputs))  # keeps rank 0
    finally:
        workload.close()
    return list(outputs)


def run(runtime: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Executes a one-output float32 `layer` on the runtime's CpuAcc into a NaN-filled output (NaN
    left over shows an element the kernel forgot) and returns it."""
    out = np.full(layer.outputs[0].shape, np.nan, np.float32)
    return execute(runtime, layer, [np.asarray(a, np.float32) for a in arrays], [out])[0]


def check_every_config(runtimes: dict[tuple[str, int], plugnn.Runtime], layer: LayerSpec,
                       arrays: Sequence[np.ndarray], expected: np.ndarray, rtol: float = 1e-4,
                       atol: float = 1e-5) -> None:
    """Each kernel set's first runtime matches `expected` within (rtol, atol); its runtimes
    with other thread counts give the same bits."""
    first: dict[str, np.ndarray] = {}
    for (isa, n), rt in runtimes.items():
        result = run(rt, layer, arrays)
        if isa not in first:
            first[isa] = result
            np.testing.assert_allclose(result, expected.astype(np.float32), rtol=rtol, atol=atol,
                                       err_msg=f"{layer.name}: isa={isa}")
        else:
            np.testing.assert_array_equal(result, first[isa], err_msg=f"{layer.name}: isa={isa} "
                                          f"num_threads={n} differs from num_threads={THREADS[0]}")
