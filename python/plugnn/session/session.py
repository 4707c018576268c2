"""InferenceSession: onnxruntime's calling convention over plugnn's own stages.

    import plugnn as ort            # instead of: import onnxruntime as ort
    session = ort.InferenceSession("model.onnx")
    outputs = session.run(None, {"image": batch})

A session reads the model once (plugnn.onnx), keeps its symbolic input dims, and for each new
combination of input shapes makes a specialization: the network imported at those shapes,
optimized (plugnn.optimize) and loaded (Runtime.load_network), kept in a bounded LRU cache
(specializations.py). Later runs with the same shapes are one lookup and one
LoadedNetwork.run.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from plugnn import fork_safety
from plugnn.errors import InputError, RuntimeClosedError, SessionError
from plugnn.onnx.context import DynamicModelError
from plugnn.runtime import Runtime
from plugnn.session.feeds import check_feed, check_output_names
from plugnn.session.model import NodeArg, SessionModel
from plugnn.session import specializations
from plugnn.session.specializations import Specialization, SpecializationCache

DEFAULT_MAX_SPECIALIZATIONS = 8

# onnxruntime's CPU provider names: a session given them runs on the runtime's own preference.
_ORT_CPU_PROVIDERS = frozenset({"CPUExecutionProvider"})

# specializations.py's module locks (the runtime lock of each runtime, and their guard).
fork_safety.fresh_locks_in_child(specializations, "_RUNTIME_LOCKS_GUARD")
fork_safety.fresh_lock_values_in_child(specializations._RUNTIME_LOCKS)


class InferenceSession:
    """A model ready to run with onnxruntime's interface.

    `model`: a path, the serialized bytes or an `onnx.ModelProto` (never modified).
    `backends`: plugnn backend ids in order of preference (None: the runtime's preference,
    CpuAcc then CpuRef). `providers` is accepted for code written for onnxruntime: each entry is
    a plugnn backend id or "CPUExecutionProvider" (the runtime's preference); give one of
    `backends` and `providers`. `backend_options` maps a backend id to its string options
    (e.g. {"CpuAcc": {"num_threads": "1"}}).
    `runtime`: None (the session creates its own Runtime, applying `backend_options`, and owns
    it: `close()` closes it) or a Runtime the caller owns, which the session borrows (it never
    closes it; give it options when creating it, not here).
    `max_specializations`: how many input-shape combinations stay loaded (LRU; default 8).

    Raises ModelError for a model plugnn cannot import, UnknownBackendError for a backend the
    runtime does not have, SessionError for arguments that do not fit together. A model whose
    inputs all have fixed shapes is specialized here, so its errors show at once.
    """

    def __init__(self, model: str | os.PathLike[str] | bytes | Any, backends: Sequence[str] | None = None,
                 backend_options: Mapping[str, Mapping[str, Any]] | None = None, *,
                 providers: Sequence[Any] | None = None, runtime: Runtime | None = None,
                 max_specializations: int = DEFAULT_MAX_SPECIALIZATIONS) -> None:
        if isinstance(max_specializations, bool) or not isinstance(max_specializations, int) \
                or max_specializations < 1:
            raise SessionError(f"max_specializations must be an integer >= 1, got {max_specializations!r}")
        if backends is not None and providers is not None:
            raise SessionError("give either backends= (plugnn backend ids) or providers= (onnxruntime's "
                               "convention), not both")
        if runtime is not None and backend_options is not None:
            raise SessionError("backend_options apply to a runtime the session creates; a borrowed runtime "
                               "(runtime=) was configured when it was created")
        if runtime is not None and runtime.closed:
            raise RuntimeClosedError(f"cannot create a session on {runtime!r}: the runtime is closed")
        self._model = SessionModel(model)
        self._owns_runtime = runtime is None
        self._runtime = Runtime(backend_options=backend_options) if runtime is None else runtime
        self._finalizer = weakref.finalize(self, _close, None, self._runtime if self._owns_runtime else None)
        try:
            preferred = self._preference(backends, providers)
            self._cache = SpecializationCache(self._model, self._runtime, preferred, max_specializations)
            # The cache's own lock and the runtime's (shared with every session on it): new ones
            # in a child forked while another thread held them (plugnn.fork_safety).
            fork_safety.fresh_locks_in_child(self._cache, "_lock", "_load_lock")
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close, self._cache,
                                               self._runtime if self._owns_runtime else None)
            self._inputs = list(self._model.inputs)
            self._outputs = list(self._model.outputs)
            self._input_names = [a.name for a in self._inputs]
            self._input_types = [(a.name, a.dtype) for a in self._inputs]
            self._output_names = [o.name for o in self._outputs]
            self._label = f"model {self._model.name!r}"
            self._closed = False
            self._dynamic: Any = None
            if self._model.needs_program:
                self._go_dynamic()
            elif not self._model.dynamic:
                key = tuple(tuple(d for d in a.shape or () if isinstance(d, int)) for a in self._inputs)
                try:
                    self._cache.release(self._cache.acquire(key))
                except DynamicModelError:
                    self._go_dynamic()
        except BaseException:
            self._finalizer()
            raise

    def _preference(self, backends: Sequence[str] | None, providers: Sequence[Any] | None) -> list[str] | None:
        if providers is None:
            if backends is not None:
                for backend_id in backends:
                    self._runtime.backend(backend_id)  # UnknownBackendError names what exists
            return list(backends) if backends is not None else None
        chosen: list[str] = []
        for entry in providers:
            name = entry[0] if isinstance(entry, tuple) else entry
            ids = self._runtime.preferred_backends if name in _ORT_CPU_PROVIDERS else [self._runtime.backend(name).backend_id]
            chosen += [b for b in ids if b not in chosen]
        return chosen

    # -- onnxruntime's interface ------------------------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs (initializers excluded): name, shape with symbolic dims, type."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs as the model declares them."""
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """The backends in order of preference (plugnn's counterpart of execution providers)."""
        backends = self._cache.backends
        return list(backends) if backends is not None else self._runtime.preferred_backends

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, np.ndarray],
            run_options: None = None) -> list[np.ndarray]:
        """Run the model: `input_feed` maps every input name to a numpy.ndarray of its type; the
        result is the list of outputs named in `output_names`, in that order (None: all).
        InputError for a wrong name, type, rank, or a dim that contradicts a fixed one."""
        if run_options is not None:
            raise SessionError("plugnn sessions take no run_options (pass None)")
        if self._closed:
            raise SessionError(f"{self._label}: the session is closed")
        names = self._output_names if output_names is None else \
            check_output_names(self._outputs, output_names, self._label)
        if self._dynamic is not None:
            return self._run_dynamic(names, input_feed)
        key = self._fast_key(input_feed)
        # Shapes seen before were checked (ranks, fixed dims, symbols) when they were first seen.
        spec = self._cache.lookup(key) if key is not None else None
        feed: Mapping[str, np.ndarray] = input_feed
        if spec is None:  # a new combination of shapes, or anything unusual: every check
            arrays = check_feed(self._inputs, input_feed, self._label)
            feed = dict(zip(self._input_names, arrays))
            try:
                spec = self._cache.acquire(tuple(a.shape for a in arrays))
            except DynamicModelError:  # the model needs the dynamic path: from now on, every run
                self._go_dynamic()
                return self._run_dynamic(names, input_feed)
        try:
            results = spec.loaded.run(feed)
        finally:
            self._cache.release(spec)
        return [results[n] for n in names]

    def _go_dynamic(self) -> None:
        """Run the model on plugnn's dynamic path from now on (plugnn.dynamic.DynamicModel)."""
        from plugnn.dynamic import DynamicModel

        model = self._model
        self._dynamic = DynamicModel(model.proto, model.source, self._runtime, self._cache.backends, name=model.name,
                                     initializers=model.initializers)
        weakref.finalize(self, self._dynamic.close)

    def _run_dynamic(self, names: Sequence[str], input_feed: Any) -> list[Any]:
        """A run on the dynamic path: tensor inputs checked as usual, a sequence input must be a
        list of arrays, an optional one an array, a list or None."""
        if not isinstance(input_feed, Mapping):
            raise InputError(f"{self._label}: input_feed must be a dict of input name to value, got "
                             f"{type(input_feed).__name__}")
        others = {a.name: a for a in self._inputs if not a.type.startswith("tensor(")}
        tensors = [a for a in self._inputs if a.name not in others]
        arrays = check_feed(tensors, {n: v for n, v in input_feed.items() if n not in others}, self._label)
        feed: dict[str, Any] = dict(zip((a.name for a in tensors), arrays))
        for name, arg in others.items():
            if name not in input_feed:
                raise InputError(f"{self._label}: missing input {name!r} ({arg.type})")
            value = input_feed[name]
            if arg.type.startswith("seq(") and not isinstance(value, (list, tuple)):
                raise InputError(f"{self._label}: input {name!r} is a sequence ({arg.type}): pass a list of "
                                 f"numpy.ndarray, not {type(value).__name__}")
            feed[name] = value
        results = dict(zip(self._output_names, self._dynamic.run(feed)))
        return [results[n] for n in names]

    @property
    def dynamic(self) -> Any:
        """The model's plugnn.dynamic.DynamicModel when it runs on the dynamic path (control flow,
        sequences, shapes decided by the data), else None; its explain() shows every segment."""
        return self._dynamic

    def _fast_key(self, feed: Any) -> tuple[tuple[int, ...], ...] | None:
        """The inputs' shapes, in input order, when the feed is a dict of exactly the inputs'
        names to C-contiguous arrays of their dtypes (the usual case), else None."""
        if type(feed) is not dict or len(feed) != len(self._input_types):
            return None
        shapes = []
        for name, dtype in self._input_types:
            array = feed.get(name)
            if type(array) is not np.ndarray or (array.dtype is not dtype and array.dtype != dtype) \
                    or not array.flags.c_contiguous:
                return None
            shapes.append(array.shape)
        return tuple(shapes)

    # -- plugnn's additions ---------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        """The runtime the session runs on (its own, or the borrowed one)."""
        return self._runtime

    @property
    def owns_runtime(self) -> bool:
        return self._owns_runtime

    @property
    def max_specializations(self) -> int:
        return self._cache.capacity

    def specializations(self) -> list[dict[str, Any]]:
        """The loaded specializations, least recently used first: `shapes` (input name ->
        shape), `milliseconds` it took to make, `stages_ms` (import, optimize, load), `layers`,
        `reshaped_layers` (how many workloads were re-sized from an earlier specialization)."""
        return [s.describe(self._input_names) for s in self._cache.entries()]

    def specialization(self, shapes: Mapping[str, Sequence[int]]) -> Specialization | None:
        """The loaded specialization for these input shapes, if there is one (its `loaded` is the
        LoadedNetwork, its `optimized` the OptimizedNetwork, e.g. for `explain()`)."""
        key = tuple(tuple(shapes[n]) for n in self._input_names)
        return next((s for s in self._cache.entries() if s.key == key), None)

    @property
    def specializations_made(self) -> int:
        """How many specializations this session made (evicted ones included)."""
        return self._cache.made

    def close(self) -> None:
        """Unload every specialization; close the runtime if the session owns it."""
        self._closed = True
        if self._dynamic is not None:
            self._dynamic.close()
        self._finalizer()

    def __enter__(self) -> InferenceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._cache.entries())} specialization(s)"
        return f"<plugnn.InferenceSession {self._model.name!r} {state}>"


def _close(cache: SpecializationCache | None, runtime: Runtime | None) -> None:
    if cache is not None:
        cache.clear()
    if runtime is not None:
        runtime.close()
