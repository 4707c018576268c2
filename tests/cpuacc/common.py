"""What the CpuAcc test modules share: whether CpuAcc is built, the kernel sets this machine
runs and the thread counts they are tried at, running one layer on one CpuAcc runtime, a
convolution case with its oracle, and running networks with and without blocked chains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import plugnn
from plugnn import Network
from plugnn.descriptors import ActivationDescriptor, Convolution2dDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import TensorInfo

from conformance.test_conv2d import conv2d_reference

with plugnn.Runtime() as _rt:
    HAVE_CPUACC = "CpuAcc" in _rt.backend_ids
    BEST_ISA = _rt.backend("CpuAcc").get_option("isa") if HAVE_CPUACC else "portable"
    # AMX-INT8 for the integer GEMM (option amx: on by default where the CPU has it and Linux grants it)
    HAVE_AMX = HAVE_CPUACC and _rt.backend("CpuAcc").get_option("amx") == "1"

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


# n, c, h, w, o, kernel, stride, padding (top, left, bottom, right), dilation
ConvShape = tuple[int, int, int, int, int, tuple[int, int], tuple[int, int], tuple[int, int, int, int], tuple[int, int]]


def conv_case(name: str, shape: ConvShape, seed: int) -> tuple[list[np.ndarray], LayerSpec, np.ndarray]:
    """A convolution of `shape` with a bias, an addend and relu (weights scaled to unit-scale
    outputs, constant), its inputs, and what it computes in float64 (conv2d_reference)."""
    n, c, h, w, o, kernel, stride, padding, dilation = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weights = (rng.standard_normal((o, c, *kernel)) / np.sqrt(c * kernel[0] * kernel[1])).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    desc = Convolution2dDescriptor(stride=stride, padding=padding, dilation=dilation, has_bias=True,
                                   has_addend=True, fused_activation=ActivationDescriptor("relu"))
    expected = conv2d_reference(x, weights, bias, desc)
    addend = rng.standard_normal(expected.shape).astype(np.float32)
    inputs = [x, weights, bias, addend]
    spec = LayerSpec(LayerKind.CONVOLUTION_2D, name, desc, tuple(TensorInfo(a.shape) for a in inputs),
                     (TensorInfo(expected.shape),), constants=(None, weights, bias, None))
    return inputs, spec, np.maximum(expected + addend, 0.0)


def check_conv_case(runtimes: dict[tuple[str, int], plugnn.Runtime], name: str, shape: ConvShape, seed: int,
                    rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """conv_case(name, shape, seed) on every kernel set and thread count (check_every_config)."""
    inputs, spec, expected = conv_case(name, shape, seed)
    check_every_config(runtimes, spec, inputs, expected, rtol=rtol, atol=atol)


def chained_and_reference(net: Network, inputs: Mapping[str, np.ndarray], threads: int,
                          output: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """`output` of `net` run on CpuAcc alone at `threads` threads, which must have made a
    blocked chain (a PRECOMPILED layer) of it, and the same output on CpuRef in float64."""
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": threads}}) as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc"])
        assert any(n.kind is LayerKind.PRECOMPILED for n in optimized.layers)
        with rt.load_network(optimized) as loaded:
            got = loaded.run(inputs)[output].copy()
        with rt.load_network(plugnn.optimize(net, rt, ["CpuRef"])) as reference:
            expected = reference.run(inputs)[output].astype(np.float64)
    return got, expected


def chain_runtime(chains: bool = True, num_threads: int = 2, isa: str = "auto") -> plugnn.Runtime:
    """A runtime whose CpuAcc makes blocked chains or not, on `num_threads` threads and kernel set `isa`."""
    return plugnn.Runtime(backend_options={"CpuAcc": {"blocked_chains": "1" if chains else "0",
                                                      "num_threads": num_threads, "isa": isa}})


def run_network(network: Network, rt: plugnn.Runtime, backends: list[str], inputs: Mapping[str, np.ndarray]
                ) -> tuple[Any, dict[str, np.ndarray]]:
    """`network` optimized for `backends` on `rt`, and its outputs for `inputs` (copies)."""
    optimized = plugnn.optimize(network, rt, backends)
    with rt.load_network(optimized) as loaded:
        return optimized, {k: v.copy() for k, v in loaded.run(inputs).items()}


def assert_close_scaled(actual: np.ndarray, expected: np.ndarray, tolerance: float = 1e-4) -> None:
    """max|actual - expected| <= tolerance * max(1, max|expected|)."""
    scale = max(1.0, float(np.abs(expected).max()))
    assert float(np.abs(actual.astype(np.float64) - expected).max()) <= tolerance * scale


def check_chained(network: Network, inputs: Mapping[str, np.ndarray], tolerance: float = 1e-4,
                  **options: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """Runs `network` on CpuAcc (then CpuRef) with blocked chains, without them, and on CpuRef
    alone (`options`: chain_runtime's); every output of the chained run within `tolerance`
    (assert_close_scaled) of the other two. Returns the chained plan and its outputs."""
    with chain_runtime(chains=True, **options) as rt:
        chained, out = run_network(network, rt, ["CpuAcc", "CpuRef"], inputs)
        _, ref = run_network(network, rt, ["CpuRef"], inputs)
    with chain_runtime(chains=False, **options) as rt:
        _, plain = run_network(network, rt, ["CpuAcc", "CpuRef"], inputs)
    assert out.keys() == ref.keys() == plain.keys()
    for name in out:
        assert_close_scaled(out[name], ref[name].astype(np.float64), tolerance)
        assert_close_scaled(out[name], plain[name].astype(np.float64), tolerance)
    return chained, out


def assert_same_bits_as_one_thread(network: Network, inputs: Mapping[str, np.ndarray],
                                   outputs: Mapping[str, np.ndarray]) -> None:
    """`outputs` of `network` for `inputs` are, bit for bit, what CpuAcc alone computes on one thread."""
    with chain_runtime(num_threads=1) as rt:
        _, one = run_network(network, rt, ["CpuAcc"], inputs)
    for name in outputs:
        np.testing.assert_array_equal(one[name], outputs[name], err_msg=name)
