"""ONNX import of RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike and Multinomial:
a seeded node gives backend_api.h's Philox4x64-10 values (checked against NumPy's Philox), the
same on every run and every import; an unseeded node draws fresh values on every run and a new
seed on every import; Bernoulli's function body (RandomUniformLike, Greater, Cast) runs; every
attribute and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import plugnn
import plugnn.onnx
from plugnn.descriptors import LayerKind
from plugnn.errors import ModelError

N = helper.make_node
MASK = (1 << 64) - 1


def _words(seed: int, i: int, run: int = 0) -> np.ndarray:
    counter = (i | (run << 64)) - 1 & ((1 << 256) - 1)
    words = np.array([(counter >> (64 * k)) & MASK for k in range(4)], np.uint64)
    return np.random.Philox(key=np.array([seed, 0], np.uint64), counter=words).random_raw(4)


def _uniform(seed: int, count: int, low: float, high: float) -> np.ndarray:
    return np.array([low + (high - low) * ((int(_words(seed, i)[0]) >> 11) * 2.0 ** -53) for i in range(count)])


def _normal(seed: int, count: int, mean: float, scale: float) -> np.ndarray:
    out = []
    for i in range(count):
        w = _words(seed, i)
        u1, u2 = ((int(w[0]) >> 11) + 1) * 2.0 ** -53, (int(w[1]) >> 11) * 2.0 ** -53
        out.append(mean + scale * np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2))
    return np.array(out)


class Loaded:
    """One model imported and loaded on CpuRef, run several times."""

    def __init__(self, runtime: Any, model: Any) -> None:
        self.network = plugnn.onnx.load(model)
        self.loaded = runtime.load_network(plugnn.optimize(self.network, runtime, ["CpuRef"]))

    def __call__(self, **feeds: np.ndarray) -> np.ndarray:
        return np.array(self.loaded.run(feeds)["y"])

    def close(self) -> None:
        self.loaded.unload()


def _model(node: Any, inputs: dict[str, Any] | None = None, opset: int = 17) -> Any:
    return make_model([node], inputs or {}, ["y"], opset=opset)


@pytest.mark.parametrize("seed,key", [(0.0, 0), (3.0, 3), (2.9, 2), (-1.0, 2 ** 64 - 1), (1e9, 10 ** 9)])
def test_seeded_uniform_is_philox(runtime, seed, key) -> None:
    node = N("RandomUniform", [], ["y"], shape=[3, 4], low=-1.0, high=2.0, seed=seed)
    run = Loaded(runtime, _model(node))
    try:
        y = run()
        assert y.dtype == np.float32 and y.shape == (3, 4)
        assert np.array_equal(y, _uniform(key, 12, -1.0, 2.0).astype(np.float32).reshape(3, 4))
        assert np.array_equal(run(), y)  # the same on every run
    finally:
        run.close()


@pytest.mark.parametrize("dtype,np_dtype", [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64),
                                            (TensorProto.FLOAT16, np.float16)])
def test_seeded_normal(runtime, dtype, np_dtype) -> None:
    node = N("RandomNormal", [], ["y"], shape=[5], mean=2.0, scale=0.5, seed=7.0, dtype=dtype)
    run = Loaded(runtime, _model(node))
    try:
        y = run()
        assert y.dtype == np_dtype
        np.testing.assert_allclose(y.astype(np.float64), _normal(7, 5, 2.0, 0.5), rtol=2e-3 if dtype == 10 else 1e-7)
    finally:
        run.close()
    again = Loaded(runtime, _model(node))
    try:
        assert np.array_equal(again(), y)  # and on every import
    finally:
        again.close()


@pytest.mark.parametrize("op", ["RandomUniform", "RandomNormal"])
def test_unseeded_draws_fresh_values(runtime, op) -> None:
    node = N(op, [], ["y"], shape=[64])
    first = Loaded(runtime, _model(node))
    try:
        a, b = first(), first()
        assert not np.array_equal(a, b)
        layer = next(layer for layer in first.network if layer.kind is LayerKind.RANDOM)
        assert layer.descriptor.advance
    finally:
        first.close()
    second = Loaded(runtime, _model(node))
    try:
        assert not np.array_equal(second(), a)  # another seed
    finally:
        second.close()


@pytest.mark.parametrize("op,attrs", [("RandomUniformLike", {"low": 1.0, "high": 3.0}),
                                      ("RandomNormalLike", {"mean": -1.0, "scale": 2.0})])
@pytest.mark.parametrize("input_type,dtype,expected", [(TensorProto.FLOAT, None, np.float32),
                                                       (TensorProto.DOUBLE, None, np.float64),
                                                       (TensorProto.INT32, TensorProto.FLOAT16, np.float16),
                                                       (TensorProto.FLOAT, TensorProto.DOUBLE, np.float64)])
def test_like(runtime, op, attrs, input_type, dtype, expected) -> None:
    extra = {} if dtype is None else {"dtype": dtype}
    node = N(op, ["x"], ["y"], seed=5.0, **attrs, **extra)
    x = np.zeros((2, 3), helper.tensor_dtype_to_np_dtype(input_type))
    run = Loaded(runtime, _model(node, {"x": ([2, 3], input_type)}))
    try:
        y = run(x=x)
        assert y.shape == (2, 3) and y.dtype == expected
        if op == "RandomUniformLike":
            assert np.array_equal(y, _uniform(5, 6, 1.0, 3.0).astype(expected).reshape(2, 3))
        else:
            np.testing.assert_allclose(y.astype(np.float64), _normal(5, 6, -1.0, 2.0).reshape(2, 3),
                                       rtol=2e-3 if expected is np.float16 else 1e-6)
    finally:
        run.close()


def test_bernoulli_function_body(runtime) -> None:
    """Bernoulli as ONNX defines it (RandomUniformLike, Greater, Cast): 0/1 draws whose mean is p."""
    nodes = [N("RandomUniformLike", ["p"], ["u"], seed=4.0),
             N("Greater", ["p", "u"], ["b"]),
             N("Cast", ["b"], ["y"], to=TensorProto.FLOAT)]
    p = np.full(20000, 0.3, np.float32)
    run = Loaded(runtime, make_model(nodes, {"p": [20000]}, ["y"], opset=17))
    try:
        y = run(p=p)
        assert set(np.unique(y).tolist()) <= {0.0, 1.0} and abs(y.mean() - 0.3) < 0.015
        assert np.array_equal(y, (p > _uniform(4, 20000, 0.0, 1.0).astype(np.float32)).astype(np.float32))
    finally:
        run.close()


@pytest.mark.parametrize("dtype,np_dtype", [(None, np.int32), (TensorProto.INT64, np.int64)])
def test_multinomial(runtime, dtype, np_dtype) -> None:
    extra = {} if dtype is None else {"dtype": dtype}
    node = N("Multinomial", ["x"], ["y"], sample_size=2000, seed=11.0, **extra)
    probabilities = np.array([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    logits = np.log(np.maximum(probabilities, 1e-30)).astype(np.float32)
    logits[1, 1] = -np.inf
    run = Loaded(runtime, _model(node, {"x": [2, 3]}, opset=7))
    try:
        y = run(x=logits)
        assert y.dtype == np_dtype and y.shape == (2, 2000)
        for row in range(2):
            frequencies = np.bincount(y[row], minlength=3) / 2000
            assert np.abs(frequencies - probabilities[row]).max() < 0.04
        assert np.array_equal(run(x=logits), y)
    finally:
        run.close()


@pytest.mark.parametrize("node,inputs,message", [
    (N("RandomUniform", [], ["y"]), {}, "attribute 'shape' is required"),
    (N("RandomUniform", [], ["y"], shape=[2], dtype=TensorProto.INT32), {}, "attribute 'dtype' = 6 is int32"),
    (N("RandomUniform", [], ["y"], shape=[2], low=2.0, high=1.0), {}, "'low' (2.0) is above 'high' (1.0)"),
    (N("RandomNormal", [], ["y"], shape=[2, -1]), {}, "attribute 'shape'"),
    (N("RandomNormal", [], ["y"], shape=[2], seed=float("nan")), {}, "attribute 'seed' = nan"),
    (N("RandomNormalLike", ["x"], ["y"]), {"x": ([2], TensorProto.INT64)}, "must be a float type"),
    (N("Multinomial", ["x"], ["y"], dtype=TensorProto.FLOAT), {"x": [2, 3]}, "attribute 'dtype' = 'float'"),
    (N("Multinomial", ["x"], ["y"]), {"x": [2, 3, 1]}, "float logits [batch_size, class_size >= 1]"),
    (N("Multinomial", ["x"], ["y"], sample_size=-1), {"x": [2, 3]}, "attribute 'sample_size' = -1"),
])
def test_errors(node, inputs, message) -> None:
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(_model(node, inputs))
    assert message in str(info.value) and f"({node.op_type}" in str(info.value), str(info.value)


def test_unseeded_multinomial_of_constant_logits_is_not_folded(runtime) -> None:
    """Constant folding computes layers of constant inputs once; an advancing generator's values
    change every run, so it stays a layer."""
    model = make_model([N("Multinomial", ["x"], ["y"], sample_size=32)], {}, ["y"],
                       {"x": np.zeros((1, 50), np.float32)}, opset=7)
    run = Loaded(runtime, model)
    try:
        assert not np.array_equal(run(), run())
    finally:
        run.close()
    seeded = make_model([N("Multinomial", ["x"], ["y"], sample_size=32, seed=1.0)], {}, ["y"],
                        {"x": np.zeros((1, 50), np.float32)}, opset=7)
    run = Loaded(runtime, seeded)
    try:
        assert np.array_equal(run(), run())
    finally:
        run.close()
