"""Every backend function of a loaded plugin is callable through the Python proxy, errors
become typed exceptions naming the backend and the call, and lifetimes are honoured."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import plugnn

from plugnn import BackendError, BackendOptionError, Runtime, RuntimeClosedError
from plugnn.descriptors import (
    ActivationDescriptor,
    Convolution2dDescriptor,
    ElementwiseBinaryDescriptor,
    LayerKind,
    Pooling2dDescriptor,
)
from plugnn.layers import LayerSpec, Subgraph
from plugnn.native import NativeBackend
from plugnn.tensor import DataType, TensorInfo

pytestmark = [pytest.mark.plugins, pytest.mark.usefixtures("no_static_backends")]

RNG = np.random.default_rng(1234)


def mapped_files() -> set[str]:
    """Real paths of the files mapped into this process (to prove a library was unloaded)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}


def relu_layer(name: str = "relu1", shape: tuple[int, ...] = (2, 3), dtype: DataType = DataType.FLOAT32) -> LayerSpec:
    info = TensorInfo(shape, dtype)
    return LayerSpec(LayerKind.ACTIVATION, name, ActivationDescriptor("relu"), (info,), (info,))


def events(backend: NativeBackend) -> list[str]:
    return backend.get_option("events").split(",")


@pytest.fixture
def runtime(plugin_dir: Callable[..., Path]) -> Iterator[Runtime]:
    with Runtime(dynamic_backends_path=plugin_dir("valid")) as rt:
        yield rt


@pytest.fixture
def backend(runtime: Runtime) -> NativeBackend:
    b = runtime.backend("MockValid")
    assert isinstance(b, NativeBackend)
    return b


def test_runtime_start_sets_options_then_creates_the_context(plugin_dir: Callable[..., Path]) -> None:
    with Runtime(dynamic_backends_path=plugin_dir("valid"),
                 backend_options={"MockValid": {"num_threads": 4}}) as runtime:
        backend = runtime.backend("MockValid")
        assert events(backend) == ["set_option", "create_context"]
        assert backend.get_option("num_threads") == "4"
        assert backend.host_memory and backend.version == plugnn.BACKEND_API_VERSION


@pytest.mark.parametrize("options, match", [
    ({"colour": "red"}, r"backend 'MockValid': set_option\('colour'\) failed \[PN_ERR_NOT_FOUND\]"),
    ({"num_threads": "0"}, r"set_option\('num_threads'\) failed \[PN_ERR_INVALID_ARGUMENT\]"),
    ({"num_threads": "many"}, r"set_option\('num_threads'\) failed \[PN_ERR_INVALID_ARGUMENT\]"),
])
def test_bad_options_fail_runtime_creation_cleanly(plugin_dir: Callable[..., Path], options: dict[str, str],
                                                   match: str) -> None:
    directory = plugin_dir("valid")
    with pytest.raises(BackendOptionError, match=match):
        Runtime(dynamic_backends_path=directory, backend_options={"MockValid": options})
    gc.collect()
    assert str(directory / "Mock_Valid_backend.so") not in mapped_files(), "a failed start unloads the plugin"
    with Runtime(dynamic_backends_path=directory) as runtime:  # and the next runtime is fine
        assert runtime.backend_ids == ["MockValid"]


def test_layer_support_yes_and_no_with_reason(backend: NativeBackend) -> None:
    assert backend.is_layer_supported(relu_layer()).supported
    refused = backend.is_layer_supported(relu_layer(dtype=DataType.FLOAT16))
    assert not refused.supported and "float16" in refused.reason
    pool = LayerSpec(LayerKind.POOLING_2D, "pool", Pooling2dDescriptor("max", kernel=2),
                     (TensorInfo((1, 1, 4, 4)),), (TensorInfo((1, 1, 2, 2)),))
    refused = backend.is_layer_supported(pool)
    assert not refused and refused.reason
    assert events(backend)[-3:] == ["is_layer_supported:relu1", "is_layer_supported:relu1", "is_layer_supported:pool"]


def test_workload_executes_and_survives_its_factory(backend: NativeBackend) -> None:
    factory = backend.create_workload_factory()
    workload = factory.create_workload(relu_layer(shape=(4, 5)))
    factory.close()
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    y = np.empty_like(x)
    workload.execute([x], [y])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    bound = workload.prepare([x], [y])
    y[:] = -1
    bound()
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert events(backend) == ["create_context", "create_workload_factory", "create_workload:relu1",
                               "destroy_workload_factory", "execute:relu1", "execute:relu1"]


def test_elementwise_add_workload(backend: NativeBackend) -> None:
    info = TensorInfo((3, 4))
    layer = LayerSpec(LayerKind.ELEMENTWISE_BINARY, "add", ElementwiseBinaryDescriptor("add"), (info, info), (info,))
    a, b = (RNG.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    out = np.empty_like(a)
    backend.create_workload_factory().create_workload(layer).execute([a, b], [out])
    np.testing.assert_allclose(out, a + b, rtol=0, atol=0)


@pytest.mark.parametrize("function, action", [
    ("create_workload", lambda b: b.create_workload_factory().create_workload(relu_layer())),
    ("execute", lambda b: b.create_workload_factory().create_workload(relu_layer()).execute(
        [np.ones((2, 3), np.float32)], [np.empty((2, 3), np.float32)])),
    ("create_workload_factory", lambda b: b.create_workload_factory()),
    ("create_memory_manager", lambda b: b.create_memory_manager()),
    ("is_layer_supported", lambda b: b.is_layer_supported(relu_layer())),
    ("acquire", lambda b: b.create_memory_manager().acquire()),
])
def test_failures_are_typed_errors_and_the_backend_stays_usable(backend: NativeBackend, function: str,
                                                                action: Callable[[NativeBackend], object]) -> None:
    backend.set_option("fail", function)
    with pytest.raises(BackendError) as info:
        action(backend)
    error = info.value
    assert error.backend_id == "MockValid" and error.status == "PN_ERR_INTERNAL"
    assert error.call.startswith(function)
    assert f"injected failure in {function}" in str(error)
    action(backend)  # the failure was one-off: the same call now works


def test_execute_error_names_the_layer(backend: NativeBackend) -> None:
    workload = backend.create_workload_factory().create_workload(relu_layer("my_relu"))
    backend.set_option("fail", "execute")
    with pytest.raises(BackendError, match=r"backend 'MockValid': execute\(layer 'my_relu'\) failed"):
        workload.execute([np.ones((2, 3), np.float32)], [np.empty((2, 3), np.float32)])


def test_memory_manager_round_trip(backend: NativeBackend) -> None:
    manager = backend.create_memory_manager()
    assert manager is not None
    manager.acquire()
    x = RNG.standard_normal((8, 3)).astype(np.float32)
    device = manager.allocate(TensorInfo(x.shape))
    manager.copy_from_host(device, x)
    back = np.zeros_like(x)
    manager.copy_to_host(back, device)
    manager.free(device)
    manager.release()
    np.testing.assert_array_equal(back, x)
    factory = backend.create_workload_factory(manager)  # a factory may use the manager
    factory.close()
    manager.close()
    assert events(backend) == ["create_context", "create_memory_manager", "acquire", "allocate", "copy_from_host",
                               "copy_to_host", "free", "release", "create_workload_factory",
                               "destroy_workload_factory", "destroy_memory_manager"]


def test_context_notifications_in_order(runtime: Runtime, backend: NativeBackend) -> None:
    context = runtime.context("MockValid")
    assert context is not None
    context.before_load_network(3)
    context.after_load_network(3)
    context.before_unload_network(3)
    context.after_unload_network(3)
    assert events(backend)[-4:] == ["before_load_network:3", "after_load_network:3",
                                    "before_unload_network:3", "after_unload_network:3"]
    backend.set_option("fail", "before_load_network")
    with pytest.raises(BackendError, match=r"before_load_network\(4\) failed"):
        context.before_load_network(4)


def conv_relu_subgraph() -> Subgraph:
    x, w = TensorInfo((1, 2, 5, 5)), TensorInfo((3, 2, 3, 3))
    y = TensorInfo((1, 3, 5, 5))
    weights = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    conv = LayerSpec(LayerKind.CONVOLUTION_2D, "conv1", Convolution2dDescriptor(padding=1), (x, w), (y,),
                     constants=(None, weights), input_ids=(1, 2), output_ids=(3,), id=10)
    relu = LayerSpec(LayerKind.ACTIVATION, "relu2", ActivationDescriptor("relu"), (y,), (y,),
                     input_ids=(3,), output_ids=(4,), id=11)
    pool = LayerSpec(LayerKind.POOLING_2D, "pool3", Pooling2dDescriptor("max", kernel=5),
                     (y,), (TensorInfo((1, 3, 1, 1)),), input_ids=(4,), output_ids=(5,), id=12)
    return Subgraph((conv, relu, pool), input_ids=(1, 2), output_ids=(5,))


def test_optimize_subgraph_substitutes_fails_and_releases(backend: NativeBackend) -> None:
    subgraph = conv_relu_subgraph()
    result = backend.optimize_subgraph(subgraph)
    assert result is not None
    (substitution,) = result.substitutions
    assert substitution.replaced_layer_ids == (10, 11)
    fused = substitution.replacement
    assert fused.kind is LayerKind.CONVOLUTION_2D and fused.name == "conv1+relu2"
    assert fused.descriptor.fused_activation == ActivationDescriptor("relu")
    assert fused.descriptor.padding == (1, 1, 1, 1)
    assert fused.input_ids == (1, 2) and fused.output_ids == (4,)
    assert [f.layer_id for f in result.failed] == [12] and result.failed[0].reason
    assert result.untouched == ()
    assert events(backend)[-2:] == ["optimize_subgraph", "release_optimization"]
    # The fused layer runs on the backend that made it and equals conv then relu.
    conv = subgraph.layers[0]
    layer = LayerSpec(fused.kind, fused.name, fused.descriptor, conv.inputs, fused.outputs, constants=conv.constants)
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
    y = np.empty((1, 3, 5, 5), np.float32)
    backend.create_workload_factory().create_workload(layer).execute([x, conv.constants[1]], [y])
    np.testing.assert_allclose(y, np.maximum(reference_conv(x, conv.constants[1], pad=1), 0), rtol=1e-5, atol=1e-5)


def reference_conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("ncij,ocij->no", xp[:, :, i:i + kh, j:j + kw], w)
    return out


def test_proxy_refuses_use_after_close(plugin_dir: Callable[..., Path]) -> None:
    runtime = Runtime(dynamic_backends_path=plugin_dir("valid"))
    backend = runtime.backend("MockValid")
    factory = backend.create_workload_factory()
    runtime.close()
    with pytest.raises(RuntimeClosedError):
        backend.is_layer_supported(relu_layer())
    with pytest.raises(RuntimeClosedError):
        factory.create_workload(relu_layer())


def test_close_unmaps_the_library(plugin_dir: Callable[..., Path]) -> None:
    directory = plugin_dir("valid", "other")
    paths = {os.path.realpath(directory / "Mock_Valid_backend.so"),
             os.path.realpath(directory / "Mock_Other_backend.so.1.2.3")}
    runtime = Runtime(dynamic_backends_path=directory)
    workload = runtime.backend("MockValid").create_workload_factory().create_workload(relu_layer())
    assert paths <= mapped_files()
    runtime.close()
    assert not paths & mapped_files()
    del workload


def test_garbage_collected_runtime_unloads(plugin_dir: Callable[..., Path]) -> None:
    directory = plugin_dir("valid")
    path = os.path.realpath(directory / "Mock_Valid_backend.so")
    runtime = Runtime(dynamic_backends_path=directory)
    assert path in mapped_files()
    del runtime
    gc.collect()
    assert path not in mapped_files()


def test_two_runtimes_share_a_plugin_with_separate_instances(plugin_dir: Callable[..., Path]) -> None:
    directory = plugin_dir("valid")
    path = os.path.realpath(directory / "Mock_Valid_backend.so")
    first = Runtime(dynamic_backends_path=directory)
    second = Runtime(dynamic_backends_path=directory)
    b1, b2 = first.backend("MockValid"), second.backend("MockValid")
    b1.set_option("num_threads", "7")
    assert b2.get_option("num_threads") == "1"
    w2 = b2.create_workload_factory().create_workload(relu_layer())
    first.close()
    assert path in mapped_files(), "the second runtime still holds the library"
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    y = np.empty_like(x)
    w2.execute([x], [y])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert "execute:relu1" in events(b2) and "set_option" not in events(b2)
    second.close()
    assert path not in mapped_files()
