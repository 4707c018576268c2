"""The backend protocol: one interface that native plugins and Python backends both implement.

The runtime only talks to these classes. `plugnn.native` implements them over a plugin's C
function table; a backend written in Python subclasses them directly and is registered with
`BackendRegistry.register`. Everything a loaded network does with a backend goes through
here: support queries, subgraph optimization, memory managers (with device buffers for
backends whose memory is not host memory), workload factories and prepared workloads.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from collections.abc import Callable, MutableSequence, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from plugnn._abi_defs import PN_MAX_BACKEND_ID_LENGTH, PN_OPTION_NUM_THREADS
from plugnn.errors import BackendOptionError, PlugnnError

if TYPE_CHECKING:  # kept out of the start-up path: a runtime needs none of these to start
    from plugnn.layers import LayerSpec, OptimizationResult, Subgraph, SupportResult
    from plugnn.tensor import TensorInfo

# The backend id rules of backend_api.h (GetBackendId).
MAX_ID_LENGTH = PN_MAX_BACKEND_ID_LENGTH
RESERVED_IDS = frozenset({"host", "runtime", "unknown"})
_BACKEND_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def backend_id_problem(backend_id: str) -> str:
    """'' for a valid backend id, else what is wrong with it."""
    if not backend_id:
        return "empty backend id"
    if len(backend_id) > MAX_ID_LENGTH:
        return f"backend id longer than {MAX_ID_LENGTH} characters"
    if not _BACKEND_ID.fullmatch(backend_id):
        return (f"backend id {backend_id!r} has characters other than letters, digits and '_' "
                "(or starts with a digit)")
    if backend_id.lower() in RESERVED_IDS:
        return f"backend id {backend_id!r} is reserved by the runtime"
    return ""


class DeviceBuffer:
    """A tensor living in a non-host backend's memory: the handle its allocate() gave."""

    def __init__(self, handle: Any, info: TensorInfo) -> None:
        self.handle = handle
        self.info = info


class PreparedWorkload(ABC):
    """A workload with its buffers bound: calling it runs the layer once.

    `inputs` and `outputs` hold what is bound (arrays or DeviceBuffers); assigning an item
    binds another buffer of the same shape and type for the next calls (a loaded network
    rebinds graph inputs and outputs this way on every run)."""

    inputs: MutableSequence[Any]
    outputs: MutableSequence[Any]
    # True when every failure of __call__ is already a PlugnnError naming the backend and the
    # layer (native workloads); otherwise the loaded network wraps other exceptions in one.
    raises_plugnn_errors: bool = False

    @abstractmethod
    def __call__(self) -> None:
        """Run the workload on the bound buffers."""

    def output_shapes(self) -> list[tuple[int, ...]] | None:
        """For a data-dependent layer (backend_api.h, "Data-dependent layers"), the actual shape of
        each output the last call wrote (densely, from the start of its upper-bound buffer); None
        for every other layer."""
        return None

    def profiled_call(self) -> Callable[[], list[tuple[str, float]] | None] | None:
        """Run once as __call__ does, timing the parts of a fused layer; returns what reads them
        (called after the caller's clock stopped): the seconds each original layer it was made
        from took (layer name, seconds), in the order they ran. None when the workload does not
        break its time down (the default)."""
        self()
        return None


class Workload(ABC):
    """One layer ready to run. `execute` is never called from two threads at once."""

    workspace_bytes: int = 0
    # Whether execute() takes non-constant inputs and outputs at other dims than its layer's
    # (ABI 1.3's PN_WORKLOAD_SHAPES_AT_EXECUTE): a network re-sized to new shapes then keeps
    # the workload and binds the tensors at their new shapes (LoadedNetwork.resize).
    shapes_at_execute: bool = False
    # With shapes_at_execute: bit i set when non-constant input i must keep its dims (bit 31:
    # inputs 31 and up); a resize that changes one makes the workload again.
    fixed_inputs: int = 0

    @abstractmethod
    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None
                ) -> Sequence[tuple[int, ...]] | None:
        """Compute `outputs` (arrays written in place) from `inputs` (constants included). A
        data-dependent layer's workload writes each output densely in its actual shape from the
        start of its (upper-bound sized) array and returns those shapes; others return None."""

    def prepare(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> PreparedWorkload:
        """Bind buffers once for repeated runs (a native workload marshals them here)."""
        return _PreparedCall(self, list(inputs), list(outputs), workspace)

    def reshape(self, layer: LayerSpec) -> Workload | None:
        """A new workload for this workload's layer at other shapes (`layer` differs from the
        one it was made for only in the shapes of non-constant inputs and of outputs), sharing
        whatever immutable state it can (prepacked weights); None when this workload cannot
        be re-sized (the runtime then asks the factory for a new one). The two are independent:
        either may be closed first, and they may execute at the same time, so they share
        nothing that execute writes. The default: None."""
        return None

    def read_profile(self) -> list[tuple[str, float]] | None:
        """Optional, for a fused layer: the seconds each original layer it was made from took
        in the last execute (layer name, seconds), every one once, adding up to at most the
        execute's time; None (the default) when it does not break its time down."""
        return None

    def close(self) -> None:
        """Release the workload; it is not used afterwards."""


class _PreparedCall(PreparedWorkload):
    """The prepared form of a Python workload: execute() on the bound lists."""

    def __init__(self, workload: Workload, inputs: list[Any], outputs: list[Any], workspace: Any) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self._execute = workload.execute
        self._read_profile = workload.read_profile
        self._workspace = workspace
        self._shapes: Sequence[tuple[int, ...]] | None = None

    def __call__(self) -> None:
        self._shapes = self._execute(self.inputs, self.outputs, self._workspace)

    def profiled_call(self) -> Callable[[], list[tuple[str, float]] | None] | None:
        self()
        return self._read_profile

    def output_shapes(self) -> list[tuple[int, ...]] | None:
        return None if self._shapes is None else [tuple(int(d) for d in s) for s in self._shapes]


class WorkloadFactory(ABC):
    @abstractmethod
    def create_workload(self, layer: LayerSpec) -> Workload:
        """A workload for `layer`, which this backend said it supports."""

    def close(self) -> None:
        """Release the factory; workloads it made stay valid."""


class MemoryManager(ABC):
    """Backend memory: acquired before the first run, released at unload.

    A backend whose memory is not host memory (`Backend.host_memory` False) also allocates the
    tensors its layers work on and copies across the boundary; the runtime calls those four
    methods only for such backends."""

    @abstractmethod
    def acquire(self) -> None: ...

    @abstractmethod
    def release(self) -> None: ...

    def allocate(self, info: TensorInfo) -> DeviceBuffer:
        """A buffer for a tensor of `info`, valid until free()."""
        raise NotImplementedError(f"{type(self).__name__} manages host memory: it allocates no device buffers")

    def free(self, buffer: DeviceBuffer) -> None:
        """Release a buffer from allocate()."""
        raise NotImplementedError(f"{type(self).__name__} manages host memory: it frees no device buffers")

    def copy_from_host(self, buffer: DeviceBuffer, array: Any) -> None:
        """Copy a host array into `buffer` (same size)."""
        raise NotImplementedError(f"{type(self).__name__} manages host memory: nothing to copy")

    def copy_to_host(self, array: Any, buffer: DeviceBuffer) -> None:
        """Copy `buffer` into a host array (same size)."""
        raise NotImplementedError(f"{type(self).__name__} manages host memory: nothing to copy")

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


# The reserved option keys of backend_api.h: a key every backend that takes the option uses
# with the header's meaning, so that tools need not know a backend's id to set it.
NUM_THREADS = PN_OPTION_NUM_THREADS


@dataclass(frozen=True)
class OptionInfo:
    """One option a backend takes (pn_option_info): its key, the type of its values ("string",
    "int", "bool" or "float"; values are strings either way), the value get_option gives on a
    new backend object, one line of help, and whether it can only be read."""

    name: str
    type: str
    default: str
    help: str
    read_only: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "default": self.default, "help": self.help,
                "read_only": self.read_only}


class Backend(ABC):
    """One backend instance, owned by one runtime.

    `backend_id` names it; `origin` is "static" or the plugin's file path; `source` the
    installed distribution that provided it through the plugnn.backends entry-point group
    ("acme-plugnn 0.1.0"), else ""; `version` is the backend API version it was built for;
    `host_memory` says its
    tensors are plain host memory that other host-memory backends may share; `moves_in_place`
    (PN_BACKEND_MOVES_IN_PLACE) that its Concat layers leave an input already at its place in
    the output where it is (the runtime then lets producers write into the output,
    plugnn.movement_views).
    """

    backend_id: str = ""
    origin: str = "static"
    source: str = ""
    version: tuple[int, int] = (0, 0)
    host_memory: bool = True
    moves_in_place: bool = False
    # Set when the backend can run nothing more (an isolated backend whose worker process died):
    # the error that ended it. Its support queries then answer no, giving the reason.
    failure: PlugnnError | None = None
    # "process" for a backend run in a worker process (plugnn.isolation), else "".
    isolation: str = ""

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
        raise BackendOptionError(self.backend_id, f"set_option({key!r})", f"unknown option {key!r}")

    def get_option(self, key: str) -> str:
        """The effective value of an option."""
        raise BackendOptionError(self.backend_id, f"get_option({key!r})", f"unknown option {key!r}")

    def options(self) -> tuple[OptionInfo, ...]:
        """The options set_option and get_option take, as the backend describes them (none by
        default: a backend that takes options lists them by overriding this)."""
        return ()

    def takes_option(self, key: str) -> bool:
        """Whether `key` is one of the options() this backend lists."""
        return any(option.name == key for option in self.options())

    def host_arena(self, num_bytes: int) -> Any:
        """Where a loaded network that uses this backend keeps its planned tensors and workspace:
        a writable uint8 array of `num_bytes`, or None (the default) for any host memory. An
        isolated backend (plugnn.isolation) returns shared memory its worker process maps."""
        return None

    def close(self) -> None:
        """Destroy the backend instance (after everything it created)."""


class BackendProvider(Protocol):
    """What optimizing a network needs of a runtime: its backends by id, and its preference."""

    @property
    def backend_ids(self) -> list[str]: ...

    @property
    def preferred_backends(self) -> list[str]: ...

    def backend(self, backend_id: str) -> Backend: ...
