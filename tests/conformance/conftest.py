"""Layer conformance: each test runs once per backend the runtime discovers.

Tests build a LayerSpec, run it with `run_layer` (a visible skip when the backend
refuses the layer) and compare with an independent NumPy float64 oracle using
`assert_close`. Malformed layers are checked with `assert_refused`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendError
from plugnn.backend import Backend
from plugnn.descriptors import Descriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

# float32 kernels against a float64 oracle fed the same float32 inputs.
RTOL = 1e-4
ATOL = 1e-5


@functools.cache
def discovered_backend_ids() -> tuple[str, ...]:
    """The backends a default Runtime finds, asked once at collection time."""
    with plugnn.Runtime() as runtime:
        return tuple(runtime.backend_ids)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        ids = discovered_backend_ids()
        metafunc.parametrize("backend", ids, ids=list(ids), indirect=True, scope="session")


@pytest.fixture(scope="session")
def runtime() -> Iterator[plugnn.Runtime]:
    with plugnn.Runtime() as rt:
        yield rt


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest, runtime: plugnn.Runtime) -> Backend:
    return runtime.backend(request.param)


# ---- building layers ------------------------------------------------------------


def layer_spec(kind: LayerKind, descriptor: Descriptor, inputs: Sequence[Any], output: Sequence[int],
               *, name: str = "", constants: Sequence[int] = (),
               dtypes: Sequence[DataType] | None = None, output_dtype: DataType = DataType.FLOAT32) -> LayerSpec:
    """A one-output LayerSpec. `inputs` are arrays or shapes (tuples); inputs whose index is in
    `constants` carry their array as constant data, as the runtime passes weights."""
    dtypes = dtypes or [DataType.FLOAT32] * len(inputs)
    infos = tuple(TensorInfo(tuple(x) if isinstance(x, (tuple, list)) else np.shape(x), dtype)
                  for x, dtype in zip(inputs, dtypes))
    constant_data = tuple(np.array(inputs[i], np.float32, order="C") if i in constants else None
                          for i in range(len(inputs))) if constants else ()
    return LayerSpec(kind, name or kind.name.lower(), descriptor, infos, (TensorInfo(tuple(output), output_dtype),),
                     constants=constant_data)


def describe(spec: LayerSpec) -> str:
    shapes = ", ".join(str(info) for info in spec.inputs)
    return f"layer {spec.name!r} ({spec.kind.name}, {spec.descriptor}; inputs {shapes} -> {spec.outputs[0]})"


# ---- running and checking -------------------------------------------------------------


def run_layer(backend: Backend, spec: LayerSpec, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Execute `spec` on `backend`; skips (with the backend's reason) when it is unsupported."""
    support = backend.is_layer_supported(spec)
    if not support.supported:
        pytest.skip(f"{backend.backend_id}: {support.reason}")
    if not backend.host_memory:
        pytest.skip(f"{backend.backend_id}: not a host-memory backend; this suite hands it NumPy buffers")
    assert len(inputs) == len(spec.inputs), f"test bug: {len(inputs)} arrays for {describe(spec)}"
    arrays = []
    for x, info in zip(inputs, spec.inputs):
        array = np.array(x, dtype=info.dtype.numpy_dtype, order="C")  # a copy; keeps rank 0
        assert array.shape == info.shape, f"test bug: input of shape {array.shape} for {describe(spec)}"
        arrays.append(array)
    outputs = [unwritten(info) for info in spec.outputs]
    factory = backend.create_workload_factory()
    try:
        workload = factory.create_workload(spec)
    finally:
        factory.close()
    try:
        workload.execute(arrays, outputs)
    finally:
        workload.close()
    for y, info in zip(outputs, spec.outputs):
        if info.dtype is DataType.BOOL:  # one byte per element, 0 or 1 (backend_api.h)
            stored = set(np.unique(y.reshape(-1).view(np.uint8)).tolist())
            assert stored <= {0, 1}, f"{backend.backend_id}: {describe(spec)} stored bool bytes {sorted(stored)}"
    return outputs


def unwritten(info: TensorInfo) -> np.ndarray:
    """An output buffer that exposes elements a kernel forgets to write: NaN for floats, the byte
    0xA5 in every byte otherwise (not a valid bool, an unlikely integer)."""
    array = np.empty(info.shape, dtype=info.dtype.numpy_dtype)
    if info.dtype.is_float:
        array[...] = np.nan
    else:
        array.reshape(-1).view(np.uint8)[:] = 0xA5
    return array


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float,
                 case: LayerSpec | str) -> None:
    """|actual - expected| <= atol + rtol * |expected| elementwise (NaN matches NaN, inf matches
    inf); a failure names the case, the worst element's index and both values."""
    what = describe(case) if isinstance(case, LayerSpec) else case
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: output shape {actual.shape}, expected {expected.shape}"
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(actual - expected)
        allowed = atol + rtol * np.abs(expected)
        ok = (error <= allowed) | (actual == expected) | (np.isnan(actual) & np.isnan(expected))
        if ok.all():
            return
        excess = np.where(ok, -np.inf, np.nan_to_num(error - allowed, nan=np.inf, posinf=np.inf))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    raise AssertionError(
        f"{what}: {int((~ok).sum())} of {ok.size} elements differ beyond rtol={rtol}, atol={atol}; "
        f"worst at index {tuple(int(i) for i in worst)}: actual {float(actual[worst])!r}, "
        f"expected {float(expected[worst])!r} "
        f"(|diff| {error[worst]:.3g})")


def assert_refused(backend: Backend, spec: LayerSpec, reason_pattern: str) -> None:
    """The backend refuses `spec` with a reason naming the problem (`reason_pattern`, a regex
    searched in any case: usually one word, such as "groups"), and creating a workload for
    it anyway fails with BackendError instead of crashing."""
    support = backend.is_layer_supported(spec)
    assert not support.supported, f"{backend.backend_id} accepted malformed {describe(spec)}"
    assert re.search(reason_pattern, support.reason, re.IGNORECASE), (
        f"{backend.backend_id} refused {describe(spec)} with reason {support.reason!r}, "
        f"which does not match {reason_pattern!r}")
    factory = backend.create_workload_factory()
    try:
        with pytest.raises(BackendError):
            factory.create_workload(spec)
    finally:
        factory.close()


def shape_id(value: Any) -> str | None:
    """Test ids for shapes: (2, 3) -> "[2,3]", [(2, 3), (3,)] -> "[2,3]+[3]" (else pytest's own)."""
    if isinstance(value, tuple) and all(isinstance(d, int) for d in value):
        return "[" + ",".join(map(str, value)) + "]"
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return "+".join(shape_id(v) for v in value)
    return None


def f32(value: float) -> float:
    """A descriptor float as the backend sees it (descriptors hold float32)."""
    return float(np.float32(value))
