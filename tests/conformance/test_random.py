"""RANDOM against NumPy's own Philox4x64-10 (numpy.random.Philox), the generator backend_api.h
names: every uniform value bit for bit, every normal value to the last bits of log and cos,
multinomial draws by the header's rule; PN_RANDOM_ADVANCE's fresh values per execution and the
repeated values without it; the distributions' moments; rows of logits that allow no draw failing
execute; malformed layers refused."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from plugnn import BackendError
from plugnn.descriptors import LayerKind, RandomDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_close, assert_refused, run_layer, unwritten

MASK = (1 << 64) - 1


def philox_words(seed: int, i: int, run: int) -> np.ndarray:
    """The four words of the block at counter (i, run, 0, 0) under key (seed, 0), from NumPy's
    Philox (which increments its counter before each block: it is given counter - 1)."""
    counter = (i | (run << 64)) - 1 & ((1 << 256) - 1)
    words = np.array([(counter >> (64 * k)) & MASK for k in range(4)], np.uint64)
    generator = np.random.Philox(key=np.array([seed, 0], np.uint64), counter=words)
    return generator.random_raw(4)


def uniform_of(w: np.ndarray) -> float:
    return (int(w[0]) >> 11) * 2.0 ** -53


def normal_of(w: np.ndarray) -> float:
    u1 = ((int(w[0]) >> 11) + 1) * 2.0 ** -53
    u2 = (int(w[1]) >> 11) * 2.0 ** -53
    return float(np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2))


def random_reference(desc: RandomDescriptor, shape: Sequence[int], run: int = 0) -> np.ndarray:
    count = int(np.prod(shape))
    values = np.empty(count)
    for i in range(count):
        w = philox_words(desc.seed, i, run)
        if desc.op.name == "UNIFORM":
            values[i] = desc.a + (desc.b - desc.a) * uniform_of(w)
        else:
            values[i] = desc.a + desc.b * normal_of(w)
    return values.reshape(shape)


def multinomial_reference(seed: int, logits: np.ndarray, samples: int, run: int = 0) -> np.ndarray:
    x = logits.astype(np.float64)
    out = np.zeros((x.shape[0], samples), np.int64)
    for row in range(x.shape[0]):
        p = np.exp(x[row] - x[row].max())
        cumulative = np.cumsum(p)
        for s in range(samples):
            target = uniform_of(philox_words(seed, row * samples + s, run)) * cumulative[-1]
            hits = np.nonzero(target < cumulative)[0]
            out[row, s] = hits[0] if hits.size else x.shape[1] - 1
    return out


def _spec(desc, shape, dtype=DataType.FLOAT32, inputs=()) -> LayerSpec:
    return LayerSpec(LayerKind.RANDOM, "random", desc, tuple(inputs), (TensorInfo(tuple(shape), dtype),))


FLOATS = [DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("seed", [0, 1, 2 ** 64 - 1, 0x243F6A8885A308D3])
def test_uniform_is_exact(backend, dtype, seed) -> None:
    desc = RandomDescriptor("uniform", seed, -1.5, 4.0)
    spec = _spec(desc, (3, 5), dtype)
    (y,) = run_layer(backend, spec, [])
    expected = random_reference(desc, (3, 5)).astype(dtype.numpy_dtype)
    assert np.array_equal(y, expected), f"{spec.name}: {y.ravel()[:4]} vs {expected.ravel()[:4]}"


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("seed", [0, 5, 2 ** 63 + 11])
def test_normal(backend, dtype, seed) -> None:
    desc = RandomDescriptor("normal", seed, 0.5, 2.0)
    spec = _spec(desc, (4, 6), dtype)
    (y,) = run_layer(backend, spec, [])
    expected = random_reference(desc, (4, 6))
    rtol = {DataType.FLOAT32: 1e-7, DataType.FLOAT64: 1e-14, DataType.FLOAT16: 1e-3, DataType.BFLOAT16: 8e-3}[dtype]
    assert_close(y.astype(np.float64), expected, rtol, rtol, spec)


def test_moments(backend) -> None:
    n = 40000
    (u,) = run_layer(backend, _spec(RandomDescriptor("uniform", 9, 2.0, 5.0), (n,), DataType.FLOAT64), [])
    assert u.min() >= 2.0 and u.max() < 5.0
    assert abs(u.mean() - 3.5) < 0.03 and abs(u.var() - 0.75) < 0.03
    (z,) = run_layer(backend, _spec(RandomDescriptor("normal", 9, -1.0, 3.0), (n,), DataType.FLOAT64), [])
    assert abs(z.mean() + 1.0) < 0.06 and abs(z.std() - 3.0) < 0.06
    assert abs(np.mean(((z + 1.0) / 3.0) ** 4) - 3.0) < 0.2  # the normal's kurtosis


def _executions(backend, spec, inputs, runs):
    """`runs` executions of one workload."""
    if not backend.is_layer_supported(spec).supported:
        pytest.skip(f"{backend.backend_id}: {backend.is_layer_supported(spec).reason}")
    factory = backend.create_workload_factory()
    try:
        workload = factory.create_workload(spec)
    finally:
        factory.close()
    results = []
    try:
        for _ in range(runs):
            outputs = [unwritten(info) for info in spec.outputs]
            workload.execute(list(inputs), outputs)
            results.append(outputs[0])
    finally:
        workload.close()
    return results


@pytest.mark.parametrize("op", ["uniform", "normal"])
def test_advance_draws_fresh_values_each_run(backend, op) -> None:
    desc = RandomDescriptor(op, 77, 0.0, 1.0, True)
    results = _executions(backend, _spec(desc, (2, 3), DataType.FLOAT64), [], 3)
    for run, y in enumerate(results):
        assert_close(y, random_reference(desc, (2, 3), run), 1e-14, 1e-14, f"execution {run}")
    assert not np.array_equal(results[0], results[1])


@pytest.mark.parametrize("op", ["uniform", "normal"])
def test_without_advance_every_run_repeats(backend, op) -> None:
    desc = RandomDescriptor(op, 77, 0.0, 1.0, False)
    results = _executions(backend, _spec(desc, (2, 3), DataType.FLOAT64), [], 3)
    assert all(np.array_equal(results[0], y) for y in results[1:])


def test_empty_and_scalar_outputs(backend) -> None:
    desc = RandomDescriptor("uniform", 3)
    (y,) = run_layer(backend, _spec(desc, (0, 4)), [])
    assert y.shape == (0, 4)
    (y,) = run_layer(backend, _spec(desc, ()), [])
    assert y.shape == () and y == np.float32(random_reference(desc, ()))


def _multinomial_spec(desc, rows, classes, samples, dtype=DataType.INT64, logits_type=DataType.FLOAT32):
    return _spec(desc, (rows, samples), dtype, (TensorInfo((rows, classes), logits_type),))


@pytest.mark.parametrize("dtype", [DataType.INT32, DataType.INT64], ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("logits_type", [DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64],
                         ids=lambda t: t.numpy_name)
def test_multinomial(backend, dtype, logits_type) -> None:
    rng = np.random.default_rng(2)
    logits = (rng.standard_normal((4, 6)) * 2).astype(logits_type.numpy_dtype)
    logits[1, :3] = -np.inf  # classes that can never be drawn
    logits[2] = 0.0           # uniform
    desc = RandomDescriptor("multinomial", 123, 0.0, 0.0)
    spec = _multinomial_spec(desc, 4, 6, 50, dtype, logits_type)
    (y,) = run_layer(backend, spec, [logits])
    assert y.dtype == dtype.numpy_dtype
    assert np.array_equal(y, multinomial_reference(123, logits, 50))
    assert (y[1] >= 3).all()


def test_multinomial_frequencies(backend) -> None:
    p = np.array([0.1, 0.2, 0.3, 0.4])
    desc = RandomDescriptor("multinomial", 5, 0.0, 0.0)
    logits = np.log(p).astype(np.float32)[np.newaxis]
    (y,) = run_layer(backend, _multinomial_spec(desc, 1, 4, 40000), [logits])
    frequencies = np.bincount(y[0], minlength=4) / y.size
    assert np.abs(frequencies - p).max() < 0.01


def test_multinomial_advances(backend) -> None:
    desc = RandomDescriptor("multinomial", 6, 0.0, 0.0, True)
    logits = np.zeros((2, 10), np.float32)
    spec = _multinomial_spec(desc, 2, 10, 8)
    results = _executions(backend, spec, [logits], 2)
    for run, y in enumerate(results):
        assert np.array_equal(y, multinomial_reference(6, logits, 8, run))


@pytest.mark.parametrize("row,why", [([0.0, np.nan, 1.0], "nan"), ([0.0, np.inf, 1.0], "inf"),
                                     ([-np.inf] * 3, "-inf for every class")])
def test_rows_that_allow_no_draw_fail(backend, row, why) -> None:
    logits = np.array([[0.0, 0.0, 0.0], row], np.float32)
    spec = _multinomial_spec(RandomDescriptor("multinomial", 1, 0.0, 0.0), 2, 3, 4)
    with pytest.raises(BackendError, match=f"row 1 .*{why}|row 1 is {why}"):
        run_layer(backend, spec, [logits])


LOGITS = (TensorInfo((2, 3), DataType.FLOAT32),)


@pytest.mark.parametrize("spec,reason", [
    (_spec(RandomDescriptor("uniform"), (2,), DataType.INT32), "float"),
    (_spec(RandomDescriptor("normal"), (2,), DataType.FLOAT32, LOGITS), "input"),
    (_spec(RandomDescriptor("uniform", 0, 2.0, 1.0), (2,)), "low"),
    (_spec(RandomDescriptor("normal", 0, float("inf"), 1.0), (2,)), "finite"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (2, 4)), "input"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (2, 4), DataType.FLOAT32, LOGITS), "output"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (3, 4), DataType.INT64, LOGITS), "rows"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (2, 4, 1), DataType.INT64, LOGITS), "rank"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (2, 4), DataType.INT64,
           (TensorInfo((2, 0), DataType.FLOAT32),)), "class"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (2, 4), DataType.INT64,
           (TensorInfo((2, 3, 1), DataType.FLOAT32),)), "rank"),
    (_spec(RandomDescriptor("multinomial", 0, 0.0, 0.0), (2, 4), DataType.INT64,
           (TensorInfo((2, 3), DataType.INT32),)), "float"),
    (_spec(RandomDescriptor("multinomial", 0, 1.0, 0.0), (2, 4), DataType.INT64, LOGITS), "a = b = 0"),
], ids=["integer uniform", "normal with an input", "low above high", "infinite mean", "multinomial without logits",
        "float draws", "row count", "output rank", "no class", "logits rank", "integer logits", "multinomial a"])
def test_malformed_refused(backend, spec, reason) -> None:
    assert_refused(backend, spec, reason)


@pytest.mark.parametrize("field,value,reason", [("op", 0, "op"), ("op", 4, "op")])
def test_malformed_descriptor_refused(backend, field, value, reason) -> None:
    desc = RandomDescriptor("uniform")
    object.__setattr__(desc, field, value)
    assert_refused(backend, _spec(desc, (2,)), reason)

