"""The backend protocol: one abstract interface for native plugins and Python backends.

The runtime only talks to these classes. `plugnn.native` implements them over a
plugin's C function table; a backend written in Python subclasses them directly and
is registered with `BackendRegistry.register`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # kept out of the start-up path: a runtime needs none of these to start
    from plugnn.layers import LayerSpec, OptimizationResult, Subgraph, SupportResult


class Workload(ABC):
    """One layer ready to run. `execute` is never called from two threads at once."""

    workspace_bytes: int = 0

    @abstractmethod
    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        """Compute `outputs` (arrays written in place) from `inputs` (constants included)."""

    def close(self) -> None:
        """Release the workload; it is not used afterwards."""


class WorkloadFactory(ABC):
    @abstractmethod
    def create_workload(self, layer: LayerSpec) -> Workload:
        """A workload for `layer`, which this backend said it supports."""

    def close(self) -> None:
        """Release the factory; workloads it made stay valid."""


class MemoryManager(ABC):
    """Backend memory: acquired before the first run, released at unload."""

    @abstractmethod
    def acquire(self) -> None: ...

    @abstractmethod
    def release(self) -> None: ...

    def close(self) -> None:
        """Destroy the manager."""


class BackendContext(ABC):
    """Notified around every load and unload of a network by the runtime that owns it."""

    def before_load_network(self, network_id: int) -> None:
        """Called before a network is loaded; raising aborts the load."""

    def after_load_network(self, network_id: int) -> None:
        """Called after a network was loaded."""

    def before_unload_network(self, network_id: int) -> None:
        """Called before a network is unloaded."""

    def after_unload_network(self, network_id: int) -> None:
        """Called after a network was unloaded."""

    def close(self) -> None:
        """Destroy the context (when its runtime closes)."""


class Backend(ABC):
    """One backend instance, owned by one runtime.

    `backend_id` names it; `origin` is "static" or the plugin's file path;
    `version` is the backend API version it was built for; `host_memory` says its
    tensors are plain host memory that other host-memory backends may share.
    """

    backend_id: str = ""
    origin: str = "static"
    version: tuple[int, int] = (0, 0)
    host_memory: bool = True

    @abstractmethod
    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        """Yes, or no with a reason; raise only when the query itself fails."""

    @abstractmethod
    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> WorkloadFactory:
        """A new workload factory, optionally using this backend's memory manager."""

    def create_memory_manager(self) -> MemoryManager | None:
        """This backend's memory manager, or None when it has none."""
        return None

    def create_context(self) -> BackendContext | None:
        """This backend's context for the owning runtime, or None."""
        return None

    def optimize_subgraph(self, subgraph: Subgraph) -> OptimizationResult | None:
        """Substitutions, failed and untouched layers; None leaves every layer untouched."""
        return None

    def set_option(self, key: str, value: str) -> None:
        """Set a string option; unknown keys raise BackendOptionError."""
        from plugnn.errors import BackendOptionError

        raise BackendOptionError(self.backend_id, f"set_option({key!r})", f"unknown option {key!r}")

    def get_option(self, key: str) -> str:
        """The effective value of an option."""
        from plugnn.errors import BackendOptionError

        raise BackendOptionError(self.backend_id, f"get_option({key!r})", f"unknown option {key!r}")

    def close(self) -> None:
        """Destroy the backend instance (after everything it created)."""
