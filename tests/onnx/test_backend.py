"""plugnn.onnx.backend: the onnx.backend.base.Backend implementation."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper

from plugnn.errors import ModelError, UnknownBackendError
from plugnn.onnx import backend

N = helper.make_node


def test_prepare_and_run_positional_and_named() -> None:
    model = make_model([N("Add", ["a", "b"], ["y"]), N("Relu", ["y"], ["z"])], {"a": [2, 3], "b": [3]}, ["y", "z"])
    rep = backend.prepare(model, "CPU", backends=["CpuRef"])
    a, b = np.ones((2, 3), np.float32), -2 * np.ones(3, np.float32)
    y, z = rep.run([a, b])
    np.testing.assert_array_equal(y, a + b)
    np.testing.assert_array_equal(z, np.maximum(a + b, 0))
    np.testing.assert_array_equal(rep.run({"a": a, "b": b})[0], a + b)
    np.testing.assert_array_equal(backend.run_model(model, [a, b], backends=["CpuRef"])[1], z)


def test_shape_like_graph_inputs_are_bound_at_run_time_and_cached() -> None:
    model = make_model([N("Reshape", ["x", "s"], ["y"]), N("Unsqueeze", ["y", "a"], ["z"])],
                       {"x": [2, 6], "s": ([2], TensorProto.INT64), "a": ([1], TensorProto.INT64)}, ["z"], opset=13)
    rep = backend.prepare(model, backends=["CpuRef"])
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    axes = np.array([0], np.int64)
    (z,) = rep.run([x, np.array([3, 4], np.int64), axes])
    np.testing.assert_array_equal(z, x.reshape(1, 3, 4))
    (z,) = rep.run([x, np.array([4, 3], np.int64), axes])
    assert z.shape == (1, 4, 3)
    assert rep.constant_inputs == {"s", "a"}
    assert len(rep._loaded) == 2
    rep.run([x, np.array([4, 3], np.int64), axes])
    assert len(rep._loaded) == 2  # cached


def test_run_time_bounds_are_not_bound() -> None:
    """Clip's bounds are inputs of its layers: new values need no new import."""
    model = make_model([N("Clip", ["x", "lo"], ["y"])], {"x": [2, 3], "lo": []}, ["y"], opset=13)
    rep = backend.prepare(model, backends=["CpuRef"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for lo in (np.float32(3), np.float32(-1)):
        np.testing.assert_array_equal(rep.run([x, lo])[0], np.maximum(x, lo))
    assert rep.constant_inputs == set() and len(rep._loaded) == 1


def test_dynamic_dims_are_fixed_from_the_arrays() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": ["n", 2]}, ["y"])
    rep = backend.prepare(model, backends=["CpuRef"])
    for n in (1, 4):
        assert rep.run([np.ones((n, 2), np.float32)])[0].shape == (n, 2)


def test_unsupported_model_fails_at_prepare() -> None:
    model = make_model([N("Frobnicate", ["x"], ["y"])], {"x": [2]}, ["y"])
    with pytest.raises(ModelError, match="operator 'Frobnicate' is not supported"):
        backend.prepare(model, backends=["CpuRef"])


def test_non_float_compute_input_is_refused_at_run() -> None:
    """Every plugnn element type runs (an int32 Add wraps like ONNX's); an input of a type no plugnn
    tensor holds (complex64) that flows into a layer is refused when the model is prepared."""
    model = make_model([N("Add", ["a", "b"], ["y"])], {"a": ([3], TensorProto.INT32), "b": ([3], TensorProto.INT32)},
                       ["y"])
    a = np.array([1, 2**31 - 1, -5], np.int32)
    b = np.array([2, 1, -7], np.int32)
    (y,) = backend.prepare(model, backends=["CpuRef"]).run([a, b])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.array([3, -2**31, -12], np.int32))
    model = make_model([N("Add", ["a", "b"], ["y"])],
                       {"a": ([2], TensorProto.COMPLEX64), "b": ([2], TensorProto.COMPLEX64)}, ["y"])
    with pytest.raises(ModelError, match="graph input 'a' has element type complex64, which plugnn tensors cannot hold"):
        backend.prepare(model, backends=["CpuRef"])


def test_run_node() -> None:
    node = N("LeakyRelu", ["x"], ["y"], alpha=0.5)
    x = np.array([-2.0, 3.0], np.float32)
    np.testing.assert_array_equal(backend.run_node(node, [x], backends=["CpuRef"])[0], [-1.0, 3.0])


def test_devices_and_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")
    model = make_model([N("Relu", ["x"], ["y"])], {"x": [2]}, ["y"])
    with pytest.raises(ModelError, match="CPU only"):
        backend.prepare(model, "CUDA")
    monkeypatch.delenv("PLUGNN_ONNX_BACKENDS", raising=False)
    assert backend.default_backends() == backend.shared_runtime().preferred_backends
    monkeypatch.setenv("PLUGNN_ONNX_BACKENDS", "NoSuch, CpuRef")
    assert backend.default_backends() == ["NoSuch", "CpuRef"]
    with pytest.raises(UnknownBackendError, match="NoSuch"):
        backend.prepare(model)
    monkeypatch.setenv("PLUGNN_ONNX_BACKENDS", "CpuRef")
    assert backend.prepare(model).backends == ["CpuRef"]
    assert backend.shared_runtime() is backend.shared_runtime()
