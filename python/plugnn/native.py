"""Python proxies over a native plugin: the shared object and the C objects it creates.

Every proxy holds a reference to its parent (and so to the SharedObject), keeping the
library mapped while any object from it lives. Each proxy destroys its C object exactly
once: on close(), when its parent closes, or when it is garbage collected.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, MutableSequence, Sequence
from typing import TYPE_CHECKING, Any

from plugnn._abi import NULL, Message, check, covers, ffi, function
from plugnn._abi_defs import PN_BACKEND_HOST_MEMORY, PN_MAX_DIMS as MAX_DIMS, LayerKind, Status
from plugnn._abi_defs import PN_BACKEND_MOVES_IN_PLACE, PN_OPTION_READ_ONLY, PN_WORKLOAD_SHAPES_AT_EXECUTE, OptionType
from plugnn.backend import (
    Backend,
    BackendContext,
    DeviceBuffer,
    MemoryManager,
    OptionInfo,
    PreparedWorkload,
    Workload,
    WorkloadFactory,
)
from plugnn.errors import BackendError, BackendOptionError, RuntimeClosedError

if TYPE_CHECKING:
    from plugnn.layers import LayerSpec, OptimizationResult, Subgraph, SupportResult
    from plugnn.tensor import TensorInfo

# Layer marshalling (and the dataclasses behind it) loads on first use, not at start-up.
_marshal: Any = None


def _c_text(pointer: Any) -> str:
    """A NUL-terminated C string the plugin owns, or "" for NULL."""
    return "" if pointer == NULL else ffi.string(pointer).decode("utf-8", errors="replace")


def _option_type(value: int) -> str | None:
    """pn_option_type as OptionInfo.type ("int"), or None for a value that is not one."""
    try:
        return OptionType(value).name.lower()
    except ValueError:
        return None


def _marshalling() -> Any:
    global _marshal
    if _marshal is None:
        from plugnn import _marshal as module

        _marshal = module
    return _marshal


class SharedObject:
    """One dlopen'ed plugin file with its entry points resolved and checked."""

    def __init__(self, path: str, lib: Any, backend_id: str, version: tuple[int, int]) -> None:
        self.path = path
        self.backend_id = backend_id
        self.version = version
        self._lib: Any = lib

    def call_factory(self) -> Any:
        """Call BackendFactory; returns the raw pn_backend* (may be NULL)."""
        if self._lib is None:
            raise RuntimeClosedError(f"backend library {self.path} is closed")
        return ffi.cast("pn_backend*", self._lib.BackendFactory())

    def close(self) -> None:
        """dlclose the library; every object created from it must be destroyed first."""
        if self._lib is not None:
            lib, self._lib = self._lib, None
            ffi.dlclose(lib)


class _NativeChild:
    """Common lifetime handling of objects a native backend creates."""

    _ctype = ""

    def __init__(self, owner: NativeBackend, c_obj: Any) -> None:
        if not covers(c_obj, self._ctype, "destroy") or c_obj.destroy == NULL:
            raise BackendError(owner.backend_id, f"create {self._ctype}",
                               f"the returned {self._ctype} has no destroy function")
        self._owner = owner
        self._c = c_obj
        self._message = Message()
        self._destroy = weakref.finalize(self, _destroy_c, c_obj.destroy, c_obj, owner)
        self.closed = False  # set by close(), the only way the C object goes before this one
        owner._adopt(self)

    def _fn(self, name: str) -> Any:
        if self.closed:
            raise RuntimeClosedError(f"{type(self).__name__} of backend {self._owner.backend_id!r} is closed")
        fn = function(self._c, self._ctype, name)
        if fn is None:
            raise BackendError(self._owner.backend_id, name, f"the backend's {self._ctype} has no {name}")
        return fn

    def _has(self, name: str) -> bool:
        return function(self._c, self._ctype, name) is not None

    def _check(self, status: int, call: str) -> None:
        check(status, self._message, self._owner.backend_id, call)

    def close(self) -> None:
        self.closed = True
        self._destroy()


def _destroy_c(destroy: Any, c_obj: Any, owner: Any) -> None:
    destroy(c_obj)


class NativeWorkload(_NativeChild, Workload):
    _ctype = "pn_workload"

    def __init__(self, owner: NativeBackend, c_obj: Any, layer_name: str) -> None:
        super().__init__(owner, c_obj)
        self.layer_name = layer_name
        # A data-dependent layer's workload (ABI 1.1): execute reports its outputs' dims (output_dims).
        self.reports_dims = False
        self.workspace_bytes = int(c_obj.workspace_bytes) if covers(c_obj, "pn_workload", "workspace_bytes") else 0
        # ABI 1.3: execute() takes its tensors at other dims (BoundExecution.rebind)
        self.shapes_at_execute = covers(c_obj, "pn_workload", "flags") and \
            bool(int(c_obj.flags) & PN_WORKLOAD_SHAPES_AT_EXECUTE)
        # ... but for the inputs whose bits are set here (bit 31: inputs 31 and up)
        self.fixed_inputs = int(c_obj.fixed_inputs) if self.shapes_at_execute and \
            covers(c_obj, "pn_workload", "fixed_inputs") else 0
        self._execute = self._fn("execute")

    def prepare(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> BoundExecution:
        """Bind buffers once; the returned callable runs the workload with one C call."""
        keep: list[Any] = []
        args = ffi.new("pn_execute_args*", {"struct_size": ffi.sizeof("pn_execute_args")})
        args.num_inputs = len(inputs)
        args.inputs = _tensor_array(inputs, keep)
        args.num_outputs = len(outputs)
        args.outputs = _tensor_array(outputs, keep)
        if workspace is not None:
            buffer = ffi.from_buffer(workspace)
            keep.append(buffer)
            args.workspace = buffer
        if self.reports_dims:
            dims = ffi.new("int64_t[]", max(len(outputs), 1) * MAX_DIMS)
            keep.append(dims)
            args.output_dims = dims
        return BoundExecution(self, args, inputs, outputs, keep)

    def reshape(self, layer: LayerSpec) -> NativeWorkload | None:
        """pn_workload.reshape (ABI 1.1): None when the plugin has none (a 1.0 plugin, or NULL) or
        answers PN_ERR_UNSUPPORTED; any other failure is a BackendError."""
        fn = function(self._c, "pn_workload", "reshape") if not self.closed else None
        if fn is None:
            return None
        keep: list[Any] = []
        c_layer = _marshalling().to_c_layer(layer, keep)
        out = ffi.new("pn_workload**")
        self._message.clear()
        status = fn(self._c, c_layer, out, self._message.out)
        if status == Status.ERR_UNSUPPORTED:
            return None
        self._check(status, f"reshape(layer {layer.name!r})")
        if out[0] == NULL:
            raise BackendError(self._owner.backend_id, f"reshape(layer {layer.name!r})", "returned PN_OK but no workload")
        workload = NativeWorkload(self._owner, out[0], layer.name)
        workload.reports_dims = self.reports_dims
        return workload

    @property
    def profiles_parts(self) -> bool:
        """Whether the plugin breaks this workload's time down (pn_workload.read_profile, ABI 1.2)."""
        return not self.closed and function(self._c, "pn_workload", "read_profile") is not None

    def read_profile(self) -> list[tuple[str, float]] | None:
        """pn_workload.read_profile (ABI 1.2): the seconds each original layer of this fused layer
        took in the last profiled execute (see BoundExecution.profiled_call), or None when the
        plugin has no read_profile (a 1.0 or 1.1 plugin, or NULL). A failure is a BackendError."""
        fn = function(self._c, "pn_workload", "read_profile") if not self.closed else None
        if fn is None:
            return None
        call = f"read_profile(layer {self.layer_name!r})"
        count = ffi.new("uint32_t*")
        self._message.clear()
        self._check(fn(self._c, NULL, 0, count, self._message.out), call)
        n = int(count[0])
        if n == 0:
            return []
        entries = ffi.new("pn_profile_entry[]", n)
        for i in range(n):
            entries[i].struct_size = ffi.sizeof("pn_profile_entry")
        self._message.clear()
        self._check(fn(self._c, entries, n, count, self._message.out), call)
        parts = []
        for i in range(min(n, int(count[0]))):
            if entries[i].layer == NULL:
                raise BackendError(self._owner.backend_id, call, f"entry {i} names no layer")
            parts.append((ffi.string(entries[i].layer).decode("utf-8", "replace"), int(entries[i].nanoseconds) * 1e-9))
        return parts

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None
                ) -> list[tuple[int, ...]] | None:
        """Run once on these arrays; a workspace of workspace_bytes is allocated if none is given.
        Returns the outputs' actual shapes for a data-dependent layer, else None."""
        if workspace is None and self.workspace_bytes:
            workspace = bytearray(self.workspace_bytes)
        prepared = self.prepare(inputs, outputs, workspace)
        prepared()
        return prepared.output_shapes()


class _BoundTensors(MutableSequence[Any]):
    """The buffers bound to one side (inputs or outputs) of a pn_execute_args: assigning an item
    points that pn_tensor at another buffer of the same shape (its cffi view is kept alive,
    which also keeps NumPy from moving the array's memory)."""

    __slots__ = ("_tensors", "_items", "_views")

    def __init__(self, tensors: Any, items: Sequence[Any]) -> None:
        self._tensors = tensors
        self._items = list(items)
        self._views: list[Any] = [None] * len(self._items)

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __setitem__(self, index: Any, item: Any) -> None:
        if isinstance(item, DeviceBuffer):
            view = data = item.handle
        else:
            view = data = ffi.from_buffer(item)  # read-only buffers taken (positional: half the call's cost)
        self._tensors[index].data = data
        self._views[index] = view
        self._items[index] = item

    def rebind(self, index: int, item: Any) -> None:
        """Point tensor `index` at `item`, a host array of the same rank and element type at
        other dims, writing those dims into its info: for a workload that takes its tensors'
        shapes at execute (NativeWorkload.shapes_at_execute)."""
        info = self._tensors[index].info
        shape = item.shape
        info.rank = len(shape)
        dims = info.dims
        for k, dim in enumerate(shape):
            dims[k] = dim
        for k in range(len(shape), MAX_DIMS):
            dims[k] = 0
        self[index] = item

    def info_pointer(self, index: int) -> Any:
        """A cffi pointer to tensor `index`'s pn_tensor_info (alive while this is): what a steady
        re-size writes other dims into (plugnn.steady_resize)."""
        return self._tensors[index].info  # its own pn_tensor_info (_tensor_array), not shared

    def __delitem__(self, index: Any) -> None:
        raise TypeError("a workload's bound buffers cannot be removed")

    def insert(self, index: int, item: Any) -> None:
        raise TypeError("a workload's bound buffers cannot be added")

    def __len__(self) -> int:
        return len(self._items)


class BoundExecution(PreparedWorkload):
    """A native workload with its buffers bound: calling it executes with no marshalling."""

    __slots__ = ("_workload", "_args", "_keep", "_message", "_call", "inputs", "outputs")
    raises_plugnn_errors = True

    def __init__(self, workload: NativeWorkload, args: Any, inputs: Sequence[Any], outputs: Sequence[Any],
                 keep: list[Any]) -> None:
        self._workload = workload
        self._args = args
        self._keep = keep
        self._message = workload._message
        self._call = workload._execute
        self.inputs = _BoundTensors(args.inputs, inputs)
        self.outputs = _BoundTensors(args.outputs, outputs)

    def __call__(self) -> None:
        workload = self._workload
        if workload.closed:
            raise RuntimeClosedError(f"workload of layer {workload.layer_name!r} is closed")
        status = self._call(workload._c, self._args, self._message.out)
        if status:
            workload._check(status, f"execute(layer {workload.layer_name!r})")

    def bind_workspace(self, workspace: Any) -> None:
        """Execute with `workspace` (host memory of at least the workload's workspace_bytes) from
        now on."""
        view = ffi.from_buffer(workspace)
        self._keep.append(view)
        self._args.workspace = view

    def profiled_call(self) -> Callable[[], list[tuple[str, float]] | None] | None:
        """Run once with pn_execute_args.profile set; returns the workload's read_profile (the
        time of each original layer). A plugin without read_profile runs as __call__ does (None)."""
        workload = self._workload
        if not workload.profiles_parts:
            self()
            return None
        self._args.profile = 1
        try:
            self()
        finally:
            self._args.profile = 0
        return workload.read_profile

    def output_shapes(self) -> list[tuple[int, ...]] | None:
        """The dims the last call reported for a data-dependent layer (pn_execute_args.output_dims)."""
        dims = self._args.output_dims
        if dims == NULL:
            return None
        shapes = []
        for i in range(self._args.num_outputs):
            rank = self._args.outputs[i].info.rank
            shapes.append(tuple(int(dims[i * MAX_DIMS + k]) for k in range(rank)))
        return shapes


def _pruned(refs: list[weakref.ref[Any]]) -> list[weakref.ref[Any]]:
    """`refs` without the dead ones, pruned only when the list has doubled since it last was
    (each append costs O(1) amortized, not a pass over every object the backend made)."""
    if len(refs) < 64 or (len(refs) & (len(refs) - 1)):
        return refs
    return [ref for ref in refs if ref() is not None]


def _tensor_array(items: Sequence[Any], keep: list[Any]) -> Any:
    tensors = ffi.new("pn_tensor[]", max(len(items), 1))
    infos = ffi.new("pn_tensor_info[]", max(len(items), 1))
    keep.extend((tensors, infos))
    tensor_size = ffi.sizeof("pn_tensor")
    for i, item in enumerate(items):
        if isinstance(item, DeviceBuffer):
            _marshalling().fill_tensor_info(infos[i], item.info)
            data = item.handle
        else:  # a host array: its info straight from NumPy (the array was made for the layer's info)
            c_info = infos[i]
            c_info.struct_size = _TENSOR_INFO_SIZE
            c_info.dtype = _dtype_code(item.dtype)
            shape = item.shape
            c_info.rank = len(shape)
            for k, dim in enumerate(shape):
                c_info.dims[k] = dim
            data = ffi.from_buffer(item, require_writable=False)
            keep.append(data)
        tensors[i].struct_size = tensor_size
        tensors[i].info = infos + i
        tensors[i].data = data
    return tensors


_TENSOR_INFO_SIZE = ffi.sizeof("pn_tensor_info")
_DTYPE_CODES: dict[Any, int] = {}


def _dtype_code(dtype: Any) -> int:
    """pn_data_type of a NumPy dtype (cached)."""
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        from plugnn.tensor import DataType

        code = _DTYPE_CODES[dtype] = int(DataType.from_any(dtype))
    return code


class NativeWorkloadFactory(_NativeChild, WorkloadFactory):
    _ctype = "pn_workload_factory"

    def create_workload(self, layer: LayerSpec) -> NativeWorkload:
        keep: list[Any] = []
        c_layer = _marshalling().to_c_layer(layer, keep)
        out = ffi.new("pn_workload**")
        self._check(self._fn("create_workload")(self._c, c_layer, out, self._message.out),
                    f"create_workload(layer {layer.name!r})")
        if out[0] == NULL:
            raise BackendError(self._owner.backend_id, f"create_workload(layer {layer.name!r})",
                               "returned PN_OK but no workload")
        workload = NativeWorkload(self._owner, out[0], layer.name)
        workload.reports_dims = layer.kind is LayerKind.DATA_DEPENDENT
        return workload


class NativeMemoryManager(_NativeChild, MemoryManager):
    _ctype = "pn_memory_manager"

    def acquire(self) -> None:
        self._check(self._fn("acquire")(self._c, self._message.out), "acquire")

    def release(self) -> None:
        self._check(self._fn("release")(self._c, self._message.out), "release")

    def allocate(self, info: TensorInfo) -> DeviceBuffer:
        handle = ffi.new("void**")
        self._check(self._fn("allocate")(self._c, info.num_bytes, handle, self._message.out), "allocate")
        return DeviceBuffer(handle[0], info)

    def free(self, buffer: DeviceBuffer) -> None:
        self._fn("free")(self._c, buffer.handle)

    def copy_from_host(self, buffer: DeviceBuffer, array: Any) -> None:
        src = ffi.from_buffer(array, require_writable=False)
        self._check(self._fn("copy_from_host")(self._c, buffer.handle, src, len(src), self._message.out),
                    "copy_from_host")

    def copy_to_host(self, array: Any, buffer: DeviceBuffer) -> None:
        dst = ffi.from_buffer(array)
        self._check(self._fn("copy_to_host")(self._c, dst, buffer.handle, len(dst), self._message.out),
                    "copy_to_host")


class NativeBackendContext(_NativeChild, BackendContext):
    _ctype = "pn_backend_context"

    def _notify(self, name: str, network_id: int) -> None:
        if self._has(name):
            self._check(self._fn(name)(self._c, network_id, self._message.out), f"{name}({network_id})")

    def before_load_network(self, network_id: int) -> None:
        self._notify("before_load_network", network_id)

    def after_load_network(self, network_id: int) -> None:
        self._notify("after_load_network", network_id)

    def before_unload_network(self, network_id: int) -> None:
        self._notify("before_unload_network", network_id)

    def after_unload_network(self, network_id: int) -> None:
        self._notify("after_unload_network", network_id)


class NativeBackend(Backend):
    """The proxy over one pn_backend instance from a plugin."""

    _ctype = "pn_backend"

    def __init__(self, shared_object: SharedObject, c_backend: Any) -> None:
        self.shared_object = shared_object
        self.backend_id = shared_object.backend_id
        self.origin = shared_object.path
        self.version = shared_object.version
        self.host_memory = bool(int(c_backend.flags) & PN_BACKEND_HOST_MEMORY)
        self.moves_in_place = self.host_memory and bool(int(c_backend.flags) & PN_BACKEND_MOVES_IN_PLACE)
        self._c = c_backend
        self._message = Message()
        self._children: list[weakref.ref[_NativeChild]] = []
        # PRECOMPILED payloads this backend returned, released before the backend is destroyed
        # (an optimized network may outlive its runtime; the library's code may not).
        self._payloads: list[weakref.ref[Any]] = []
        self._destroy = weakref.finalize(self, _destroy_c, c_backend.destroy, c_backend, shared_object)

    # -- lifetime ----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return not self._destroy.alive

    def _adopt(self, child: _NativeChild) -> None:
        self._children = _pruned(self._children)
        self._children.append(weakref.ref(child))

    def _adopt_payload(self, payload: Any) -> None:
        self._payloads = _pruned(self._payloads)
        self._payloads.append(weakref.ref(payload))

    def close(self) -> None:
        """Destroy every live object this backend created (newest first), release the payloads
        it returned that are still held, destroy the backend, then unload its library (once
        nothing from it is used: every object from it is gone)."""
        for ref in reversed(self._children):
            child = ref()
            if child is not None:
                child.close()
        self._children = []
        for payload_ref in self._payloads:
            payload = payload_ref()
            if payload is not None:
                payload.release()
        self._payloads = []
        self._destroy()
        self.shared_object.close()

    def _fn(self, name: str) -> Any:
        if self.closed:
            raise RuntimeClosedError(f"backend {self.backend_id!r} is closed")
        return function(self._c, self._ctype, name)

    def has(self, name: str) -> bool:
        """True when the plugin provides the function `name` (within its struct_size)."""
        return self._fn(name) is not None

    def _check(self, status: int, call: str) -> None:
        check(status, self._message, self.backend_id, call)

    def _new_child(self, name: str, out_type: str, make: Any, *args: Any) -> Any:
        fn = self._fn(name)
        if fn is None:
            return None
        out = ffi.new(out_type + "**")
        self._check(fn(self._c, *args, out, self._message.out), name)
        if out[0] == NULL:
            if name == "create_workload_factory":
                raise BackendError(self.backend_id, name, "returned PN_OK but no object")
            return None
        return make(self, out[0])

    # -- the backend protocol -------------------------------------------------------

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        keep: list[Any] = []
        c_layer = _marshalling().to_c_layer(layer, keep)
        supported = ffi.new("pn_bool*")
        self._message.clear()
        self._check(self._fn("is_layer_supported")(self._c, c_layer, supported, self._message.out),
                    f"is_layer_supported(layer {layer.name!r})")
        from plugnn.layers import SupportResult

        if supported[0]:
            return SupportResult(True)
        return SupportResult(False, self._message.text() or "no reason given")

    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> NativeWorkloadFactory:
        c_mm = memory_manager._c if isinstance(memory_manager, NativeMemoryManager) else NULL
        return self._new_child("create_workload_factory", "pn_workload_factory", NativeWorkloadFactory, c_mm)

    def create_memory_manager(self) -> NativeMemoryManager | None:
        return self._new_child("create_memory_manager", "pn_memory_manager", NativeMemoryManager)

    def create_context(self) -> NativeBackendContext | None:
        return self._new_child("create_context", "pn_backend_context", NativeBackendContext)

    def set_option(self, key: str, value: str) -> None:
        fn = self._fn("set_option")
        if fn is None:
            raise BackendOptionError(self.backend_id, f"set_option({key!r})", "the backend takes no options")
        self._check(fn(self._c, key.encode(), str(value).encode(), self._message.out), f"set_option({key!r})")

    def get_option(self, key: str) -> str:
        fn = self._fn("get_option")
        if fn is None:
            raise BackendOptionError(self.backend_id, f"get_option({key!r})", "the backend reports no options")
        value = Message(4096)
        self._check(fn(self._c, key.encode(), value.out, self._message.out), f"get_option({key!r})")
        return value.text()

    def options(self) -> tuple[OptionInfo, ...]:
        """pn_backend.list_options (ABI 1.2): () for a plugin that does not describe its options
        (built against the 1.0 or 1.1 header, or with list_options NULL); each description is
        read only as far as the struct_size its writer set."""
        fn = self._fn("list_options")
        if fn is None:
            return ()
        array = ffi.new("pn_option_info const * const **")
        count = ffi.new("uint32_t*")
        self._message.clear()
        self._check(fn(self._c, array, count, self._message.out), "list_options")
        if count[0] and array[0] == NULL:
            raise BackendError(self.backend_id, "list_options", f"gave {count[0]} options but no array")
        infos = []
        for i in range(count[0]):
            desc = array[0][i]
            if desc == NULL or not covers(desc, "pn_option_info", "help"):
                raise BackendError(self.backend_id, "list_options",
                                   f"option {i}: NULL or shorter than a 1.2 pn_option_info")
            kind = _option_type(int(desc.type))
            if desc.name == NULL or kind is None:
                raise BackendError(self.backend_id, "list_options",
                                   f"option {i}: no name, or type {int(desc.type)} is no pn_option_type")
            infos.append(OptionInfo(
                name=_c_text(desc.name), type=kind, default=_c_text(desc.default_value),
                help=_c_text(desc.help), read_only=bool(int(desc.flags) & PN_OPTION_READ_ONLY)))
        return tuple(infos)

    def optimize_subgraph(self, subgraph: Subgraph) -> OptimizationResult | None:
        fn = self._fn("optimize_subgraph")
        if fn is None:
            return None
        keep: list[Any] = []
        c_sub = _c_subgraph(subgraph, keep)
        out = ffi.new("pn_optimization**")
        self._check(fn(self._c, c_sub, out, self._message.out), "optimize_subgraph")
        if out[0] == NULL:
            return None
        try:
            return _read_optimization(out[0], self)
        finally:
            release = self._fn("release_optimization")
            if release is not None:
                release(self._c, out[0])


def _c_subgraph(subgraph: Subgraph, keep: list[Any]) -> Any:
    layers = ffi.new("pn_layer[]", max(len(subgraph.layers), 1))
    keep.append(layers)
    for i, layer in enumerate(subgraph.layers):
        _marshalling().to_c_layer(layer, keep, layers + i)
    inputs = ffi.new("uint32_t[]", list(subgraph.input_ids) or [0])
    outputs = ffi.new("uint32_t[]", list(subgraph.output_ids) or [0])
    keep.extend((inputs, outputs))
    return ffi.new("pn_subgraph*", {
        "struct_size": ffi.sizeof("pn_subgraph"), "num_layers": len(subgraph.layers), "layers": layers,
        "num_input_ids": len(subgraph.input_ids), "input_ids": inputs,
        "num_output_ids": len(subgraph.output_ids), "output_ids": outputs})


def _read_optimization(c: Any, backend: NativeBackend) -> OptimizationResult:
    from plugnn.layers import FailedLayer, OptimizationResult, Substitution

    what = f"backend {backend.backend_id!r} optimize_subgraph"
    if not covers(c, "pn_optimization", "untouched_layer_ids"):
        raise BackendError(backend.backend_id, "optimize_subgraph",
                           f"pn_optimization struct_size {c.struct_size} is too small")

    def items(count: Any, array: Any, name: str) -> range:
        if int(count) and array == NULL:
            raise BackendError(backend.backend_id, "optimize_subgraph", f"{name} is NULL with count {int(count)}")
        return range(int(count))

    substitutions = []
    for i in items(c.num_substitutions, c.substitutions, "substitutions"):
        s = c.substitutions + i
        ids = tuple(int(s.replaced_layer_ids[j]) for j in items(s.num_replaced_layer_ids,
                                                                  s.replaced_layer_ids, "replaced_layer_ids"))
        replacement = _marshalling().from_c_layer(ffi.addressof(s.replacement), f"{what} substitution {i}",
                                            backend.shared_object)
        payload = getattr(replacement.descriptor, "payload", None)
        if payload is not None:
            backend._adopt_payload(payload)
        substitutions.append(Substitution(ids, replacement))
    failed = tuple(
        FailedLayer(int(c.failed[i].layer_id),
                    ffi.string(c.failed[i].reason).decode("utf-8", "replace") if c.failed[i].reason != NULL else "")
        for i in items(c.num_failed, c.failed, "failed"))
    untouched = tuple(int(c.untouched_layer_ids[i]) for i in items(c.num_untouched, c.untouched_layer_ids,
                                                                     "untouched_layer_ids"))
    return OptimizationResult(tuple(substitutions), failed, untouched)
