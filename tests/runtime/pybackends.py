"""Backends written in Python for the runtime tests (registered statically)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn.backend import Backend, DeviceBuffer, MemoryManager, Workload, WorkloadFactory
from plugnn.descriptors import LayerKind
from plugnn.layers import FailedLayer, LayerSpec, OptimizationResult, Subgraph, SupportResult
from plugnn.tensor import DataType, TensorInfo


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


class SoftmaxWorkload(Workload):
    def __init__(self, layer: LayerSpec, log: list[str]) -> None:
        self.axis = layer.descriptor.axis  # type: ignore[union-attr]
        self.name = layer.name
        self.log = log

    def reshape(self, layer: LayerSpec) -> Workload | None:
        """The same softmax at other shapes: the axis (its only state) is shared as it is."""
        if layer.kind is not LayerKind.SOFTMAX or layer.descriptor.axis != self.axis:  # type: ignore[union-attr]
            raise ValueError(f"reshape: {layer.name!r} is not this softmax at other shapes")
        self.log.append(f"reshape:{self.name}")
        return SoftmaxWorkload(layer, self.log)

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        self.log.append(f"execute:{self.name}")
        x = inputs[0].handle if isinstance(inputs[0], DeviceBuffer) else inputs[0]
        y = outputs[0].handle if isinstance(outputs[0], DeviceBuffer) else outputs[0]
        y[...] = softmax(x.astype(np.float64), self.axis).astype(y.dtype)


class SoftmaxFactory(WorkloadFactory):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def create_workload(self, layer: LayerSpec) -> Workload:
        return SoftmaxWorkload(layer, self.log)


class PySoftmax(Backend):
    """Runs softmax only (float32 and float16): the small static backend of the mixed tests."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if layer.kind is not LayerKind.SOFTMAX:
            return SupportResult(False, f"{self.backend_id} runs Softmax only, not {layer.kind.name}")
        return SupportResult(True)

    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> WorkloadFactory:
        return SoftmaxFactory(self.log)


class PyRefuser(PySoftmax):
    """Says yes to softmax when asked, then refuses it in optimize_subgraph."""

    def optimize_subgraph(self, subgraph: Subgraph) -> OptimizationResult:
        return OptimizationResult(failed=tuple(FailedLayer(layer.id, "changed my mind") for layer in subgraph.layers))


class DeviceMemory(MemoryManager):
    """"Device" memory that is really private NumPy arrays, reached only through copies."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def acquire(self) -> None:
        self.log.append("acquire")

    def release(self) -> None:
        self.log.append("release")

    def allocate(self, info: TensorInfo) -> DeviceBuffer:
        return DeviceBuffer(np.zeros(info.shape, info.dtype.numpy_name), info)

    def free(self, buffer: DeviceBuffer) -> None:
        buffer.handle = None

    def copy_from_host(self, buffer: DeviceBuffer, array: np.ndarray) -> None:
        self.log.append("copy_from_host")
        np.copyto(buffer.handle, array)

    def copy_to_host(self, array: np.ndarray, buffer: DeviceBuffer) -> None:
        self.log.append("copy_to_host")
        np.copyto(array, buffer.handle)


class PyDevice(PySoftmax):
    """Softmax on memory that is not host memory: the runtime must copy in and out."""

    host_memory = False

    def create_memory_manager(self) -> MemoryManager:
        return DeviceMemory(self.log)

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if layer.inputs and layer.inputs[0].dtype is not DataType.FLOAT32:
            return SupportResult(False, "float32 only")
        return super().is_layer_supported(layer)
