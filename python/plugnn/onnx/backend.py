"""plugnn as an ONNX backend (`onnx.backend.base.Backend`), e.g. for ONNX's own node tests.

    from plugnn.onnx import backend
    rep = backend.prepare(model, backends=["CpuRef"])   # default: $PLUGNN_ONNX_BACKENDS or CpuAcc, CpuRef
    outputs = rep.run([x])                               # a tuple, in graph output order

One plugnn.Runtime is shared by the whole process (created on first use).

Inputs that must be known at import time. ONNX models (and ONNX's node tests in particular)
often feed shape-like values as graph *inputs*: Reshape's shape, Unsqueeze's axes, Clip's
min/max, ConstantOfShape's shape, Dropout's training_mode. plugnn's Network needs those values
when it is built, so the rep binds them at run time: every input the importer reports it needs
as a value (and only those) is treated as a constant with the value passed to `run()`; the model is imported then, and the loaded network is cached
keyed by the input shapes and those constant values (a new value means a new import). The
remaining float32 inputs are fed to the network as usual. Dynamic input dims are fixed from
the arrays passed to `run()` in the same way.

Models `plugnn.onnx.load` cannot build as one Network (control flow, sequences and optionals,
string tensors, values the import needs computed at run time, data-dependent shapes feeding
further nodes: the importer's DynamicModelError) run on the dynamic path, a
`plugnn.dynamic.DynamicModel` (kept as `rep.dynamic`): inputs and outputs may then be lists
(sequences), None (empty optionals) and object arrays of str (string tensors).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx.backend.base import Backend, BackendRep

from plugnn import fork_safety
from plugnn.errors import ModelError
from plugnn.onnx.importer import DynamicModelError, DynamicShapeError, NeedsConstantError, import_model, read_model

_runtime_lock = threading.Lock()
_runtime: Any = None
fork_safety.fresh_locks_in_child(sys.modules[__name__], "_runtime_lock")


def shared_runtime() -> Any:
    """The process-wide plugnn.Runtime the ONNX backend uses (created on first use)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None or _runtime.closed:
            import plugnn

            _runtime = plugnn.Runtime()
        return _runtime


def default_backends() -> list[str]:
    """$PLUGNN_ONNX_BACKENDS (comma separated), else the runtime's own preference order."""
    env = os.environ.get("PLUGNN_ONNX_BACKENDS", "").strip()
    if env:
        return [b.strip() for b in env.split(",") if b.strip()]
    chosen = shared_runtime().preferred_backends
    if not chosen:
        raise ModelError("the plugnn runtime has no backends (see plugnn.Runtime().load_report): pass "
                         "backends=[...] or set PLUGNN_ONNX_BACKENDS")
    return chosen


def _unload_all(loaded: dict[Any, Any]) -> None:
    for network in loaded.values():
        try:
            network.unload()
        except Exception:  # noqa: BLE001 - best effort at garbage collection
            pass
    loaded.clear()


def _as_value(value: Any) -> Any:
    """A run() input: an array, or, for the dynamic path, a list (a sequence) or None (an empty optional)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [np.asarray(v) for v in value]
    return np.asarray(value)


class PlugnnBackendRep(BackendRep):
    """A prepared model: imports (per bound constant values and input shapes) and runs on plugnn."""

    def __init__(self, proto: Any, source: str, backends: Sequence[str]) -> None:
        self.proto = proto
        self.source = source
        self.backends = list(backends)
        initializers = {t.name for t in proto.graph.initializer}
        self.input_names = [i.name for i in proto.graph.input if i.name not in initializers]
        self.output_names = [o.name for o in proto.graph.output]
        # Inputs bound as constants: those the importer reports it needs at import time.
        self.constant_inputs: set[str] = set()
        self._loaded: dict[Any, Any] = {}
        self._lock = threading.Lock()
        fork_safety.fresh_locks_in_child(self, "_lock")
        self.dynamic: Any = None  # a plugnn.dynamic.DynamicModel once the model needs the dynamic path
        self._finalizer = weakref.finalize(self, _unload_all, self._loaded)
        self._prepare_eagerly()

    def _prepare_eagerly(self) -> None:
        """Import now when no input must be bound and shapes are static: errors surface at prepare."""
        try:
            network = import_model(self.proto, source=self.source)
        except NeedsConstantError as exc:
            self.constant_inputs.add(exc.input_name)
            return
        except DynamicShapeError:
            return
        except DynamicModelError:
            self._go_dynamic()
            return
        shapes = tuple(sorted((layer.name, layer.outputs[0].shape) for layer in network.inputs))
        self._loaded[(shapes, ())] = self._load(network)

    def _go_dynamic(self) -> None:
        from plugnn.dynamic import DynamicModel

        model = DynamicModel(self.proto, self.source, shared_runtime(), self.backends)
        self.dynamic = model
        weakref.finalize(self, model.close)

    def _load(self, network: Any) -> Any:
        import plugnn

        runtime = shared_runtime()
        return runtime.load_network(plugnn.optimize(network, runtime, self.backends))

    def _named(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, Mapping):
            named = {k: _as_value(v) for k, v in inputs.items()}
            unknown = set(named) - set(self.input_names)
            if unknown:
                raise ModelError(f"{self.source}: unknown inputs {sorted(unknown)}; the model takes {self.input_names}")
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            values = list(inputs)
            if len(values) > len(self.input_names):
                raise ModelError(f"{self.source}: {len(values)} inputs given, the model takes {len(self.input_names)} "
                                 f"({self.input_names})")
            named = {n: _as_value(v) for n, v in zip(self.input_names, values)}
        return named

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        named = self._named(inputs)
        with self._lock:
            while self.dynamic is None:
                bound = {n: v for n, v in named.items() if n in self.constant_inputs}
                fed = {n: np.require(v, requirements='C') for n, v in named.items() if n not in self.constant_inputs}
                shapes = tuple(sorted((n, v.shape) for n, v in fed.items()))
                constants = tuple(sorted((n, v.dtype.str, v.shape, v.tobytes()) for n, v in bound.items()))
                key = (shapes, constants)
                loaded = self._loaded.get(key)
                if loaded is None:
                    try:
                        network = import_model(self.proto, source=self.source, input_shapes=dict(shapes),
                                               constants=bound)
                    except NeedsConstantError as exc:
                        if exc.input_name in self.constant_inputs or exc.input_name not in named:
                            raise
                        self.constant_inputs.add(exc.input_name)
                        continue
                    except DynamicModelError:
                        self._go_dynamic()
                        break
                    loaded = self._loaded[key] = self._load(network)
                fed = {n: v for n, v in fed.items() if n in loaded.input_infos}
                results = loaded.run(fed)
                return tuple(results[name] for name in self.output_names)
            return tuple(self.dynamic.run(named))


class PlugnnBackend(Backend):
    """onnx.backend.base.Backend for plugnn (CPU only)."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", backends: Sequence[str] | None = None,
                **kwargs: Any) -> PlugnnBackendRep:
        if not cls.supports_device(device):
            raise ModelError(f"plugnn's ONNX backend runs on CPU only, not {device!r}")
        proto, source = read_model(model, kwargs.get("base_dir"))
        return PlugnnBackendRep(proto, source, list(backends) if backends else default_backends())

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU", outputs_info: Any = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        """Run one NodeProto on `inputs` (a list in the node's input order, or a dict by name)."""
        from onnx import helper

        arrays = [np.asarray(v) for v in (inputs.values() if isinstance(inputs, Mapping) else inputs)]
        names = [n for n in node.input if n]
        graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                        for n, a in zip(names, arrays)]
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        opset = kwargs.pop("opset_version", None)
        model = helper.make_model(helper.make_graph([node], "run_node", graph_inputs, graph_outputs),
                                  opset_imports=[helper.make_opsetid("", opset)] if opset else None)
        return cls.prepare(model, device, **kwargs).run(dict(zip(names, arrays)))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().split(":")[0] == "CPU"


prepare = PlugnnBackend.prepare
run_model = PlugnnBackend.run_model
run_node = PlugnnBackend.run_node
supports_device = PlugnnBackend.supports_device
is_compatible = PlugnnBackend.is_compatible
