"""InferenceSession: onnxruntime's calling convention over plugnn's own stages.

    import plugnn as ort            # instead of: import onnxruntime as ort
    session = ort.InferenceSession("model.onnx")
    outputs = session.run(None, {"image": batch})

A session reads the model once (plugnn.onnx), imports it with its symbolic input dims kept as
symbols, optimizes (plugnn.optimize) and loads (Runtime.load_network) it once: one network for
every shape (networks.py), each new combination of input shapes re-sizing the workloads of the
last one instead of importing anything again. Later runs with the same shapes are one lookup
and one run.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from plugnn import fork_safety
from plugnn.errors import BackendOptionError, InputError, RunStoppedError, RuntimeClosedError, SessionError
from plugnn.onnx.context import DynamicModelError
from plugnn.runtime import Runtime
from plugnn.session.assignment import OrtEpAssignedSubgraph, assignment
from plugnn.session.feeds import check_feed, check_output_names
from plugnn.session.io_binding import IOBinding
from plugnn.session.memory import OrtMemoryInfo, host_memory_info
from plugnn.session.model import ModelMetadata, NodeArg, SessionModel
from plugnn.session.options import RunOptions, SessionOptions
from plugnn.session.ort_errors import Fail, InvalidArgument, RunTerminated
from plugnn.session.ort_value import OrtValue, OrtValueVector
from plugnn.session.profiling import SessionProfiler
from plugnn.session.providers import CPU_PROVIDER, ProviderChoice, choose_providers
from plugnn.session.networks import Build, SessionNetworks
from plugnn.shape_program import BindingError

log = logging.getLogger("plugnn")

DEFAULT_MAX_SPECIALIZATIONS = 8


class InferenceSession:
    """A model ready to run with onnxruntime's interface.

    `model`: a path, the serialized bytes or an `onnx.ModelProto` (never modified).
    `sess_options`: an onnxruntime-style SessionOptions (also taken as the second positional
    argument, as onnxruntime's `InferenceSession(path, so)`; what each field does:
    docs/session.md). `providers` (names or (name, options) tuples) and `provider_options`, as
    onnxruntime takes them: a provider is a plugnn backend id, or "CPUExecutionProvider" (the
    runtime's preference); an onnxruntime provider plugnn has no backend for is skipped with a
    warning (providers.py).
    `backends`: plugnn backend ids in order of preference (None: the runtime's preference,
    CpuAcc then CpuRef); give one of `backends` and `providers`. `backend_options` maps a
    backend id to its string options (e.g. {"CpuAcc": {"num_threads": "1"}}).
    `runtime`: None (the session creates its own Runtime, applying `backend_options`, provider
    options and intra_op_num_threads, and owns it: `close()` closes it) or a Runtime the caller
    owns, which the session borrows (it never closes it; give it options when creating it).
    `max_specializations`: how many networks built for different guards stay loaded (LRU;
    default 8). A model with dynamic dims is built once for every shape; it is built again only
    for shapes that break a decision its first build took (a guard, see docs/session.md), so
    shape changes alone do not count against it.

    Raises ModelError for a model plugnn cannot import (NoSuchFile, InvalidProtobuf,
    OperatorNotImplemented), UnknownBackendError for a backend the runtime does not have,
    SessionError for arguments that do not fit together. A model whose inputs all have fixed
    shapes is built here, so its errors show at once.
    """

    def __init__(self, model: str | os.PathLike[str] | bytes | Any, backends: Sequence[str] | Any = None,
                 backend_options: Mapping[str, Mapping[str, Any]] | Any = None, *,
                 sess_options: SessionOptions | None = None, providers: Sequence[Any] | None = None,
                 provider_options: Sequence[Mapping[Any, Any]] | None = None, runtime: Runtime | None = None,
                 max_specializations: int = DEFAULT_MAX_SPECIALIZATIONS) -> None:
        loading_started = time.perf_counter_ns()
        if isinstance(backends, SessionOptions):  # onnxruntime's InferenceSession(path, so, providers)
            if sess_options is not None:
                raise SessionError("SessionOptions given twice (positionally and as sess_options=)")
            sess_options, backends = backends, None
            if backend_options is not None and not isinstance(backend_options, Mapping):
                if providers is not None:
                    raise SessionError("providers given twice (positionally and as providers=)")
                providers, backend_options = backend_options, None
        if isinstance(max_specializations, bool) or not isinstance(max_specializations, int) \
                or max_specializations < 1:
            raise SessionError(f"max_specializations must be an integer >= 1, got {max_specializations!r}")
        if backends is not None and providers is not None:
            raise SessionError("give either backends= (plugnn backend ids) or providers= (onnxruntime's "
                               "convention), not both")
        if provider_options is not None and providers is None:
            raise SessionError("provider_options= goes with providers= (one options dict per provider)")
        if runtime is not None and backend_options is not None:
            raise SessionError("backend_options apply to a runtime the session creates; a borrowed runtime "
                               "(runtime=) was configured when it was created")
        if runtime is not None and runtime.closed:
            raise RuntimeClosedError(f"cannot create a session on {runtime!r}: the runtime is closed")
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise SessionError(f"sess_options must be a plugnn.SessionOptions, got {type(sess_options).__name__}")
        self._options = (sess_options or SessionOptions()).copy()
        options = self._options
        by_name, by_denotation = options.free_dimension_overrides
        self._model = SessionModel(model, by_name, by_denotation, options.initializers, options.external_files,
                                   integer_qdq=options.config_entries().get("session.disable_quant_qdq") != "1")
        self._node_type_map: dict[str, str] | None = None  # _node_types
        config = self._model.metadata.custom_metadata_map.get("ort_config")
        if config is not None and os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1":
            options.apply_model_config(config, self._model.source)
        self._profiler = SessionProfiler(options.profile_file_prefix)
        if options.enable_profiling:
            self._profiler.start(loading_started)
        self._profiler.session_event("model_loading_uri", loading_started, time.perf_counter_ns())
        initialization_started = time.perf_counter_ns()
        self._owns_runtime = runtime is None
        self._runtime = Runtime(backend_options=backend_options) if runtime is None else runtime
        self._finalizer = weakref.finalize(self, _close, None, self._runtime if self._owns_runtime else None)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        fork_safety.fresh_locks_in_child(self, "_executor_lock")
        self._choice: ProviderChoice | None = None
        try:
            if providers is not None:
                self._choice = choose_providers(providers, provider_options, self._runtime.backend_ids,
                                                self._runtime.preferred_backends)
                if self._choice.backend_options:
                    if not self._owns_runtime:
                        raise SessionError("provider options apply to a runtime the session creates; a borrowed "
                                           "runtime (runtime=) was configured when it was created")
                    _apply_options(self._runtime, self._choice.backend_options)
            if options.intra_op_num_threads:
                if not self._owns_runtime:
                    raise SessionError("SessionOptions.intra_op_num_threads applies to a runtime the session creates; "
                                       "set the backends' num_threads when creating the borrowed runtime")
                _set_threads(self._runtime, options.intra_op_num_threads,
                             _merged_options(backend_options, self._choice))
            preferred = self._preference(backends, self._choice)
            self._cache = SessionNetworks(self._model, self._runtime, preferred, max_specializations)
            # runs that feed overridable initializers: per set of fed names, the model with them as inputs
            self._overridable = frozenset(a.name for a in self._model.overridable)
            self._variants: dict[frozenset[str], _Overriding] = {}
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close, self._cache,
                                               self._runtime if self._owns_runtime else None, self._variants)
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
            elif not self._model.dynamic and self._model.computed_outputs:
                key = tuple(tuple(d for d in a.shape or () if isinstance(d, int)) for a in self._inputs)
                try:
                    self._cache.release(self._cache.acquire(key))
                except DynamicModelError:
                    self._go_dynamic()
            if options.optimized_model_filepath:
                self._write_model(options)
        except BaseException:
            self._finalizer()
            raise
        self._profiler.session_event("session_initialization", initialization_started, time.perf_counter_ns())

    def _preference(self, backends: Sequence[str] | None, choice: ProviderChoice | None) -> list[str] | None:
        if choice is not None:
            for backend_id in choice.backends or []:
                self._runtime.backend(backend_id)
            return choice.backends
        if backends is not None:
            for backend_id in backends:
                self._runtime.backend(backend_id)  # UnknownBackendError names what exists
        return list(backends) if backends is not None else None

    def _write_model(self, options: SessionOptions) -> None:
        """SessionOptions.optimized_model_filepath: the model as the session runs it (see model.py)."""
        config = options.config_entries()
        external = config.get("session.optimized_model_external_initializers_file_name")
        minimum = config.get("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        try:
            threshold = int(minimum)
        except ValueError:
            raise SessionError(f"session config entry session.optimized_model_external_initializers_min_size_in_bytes "
                               f"must be an integer, got {minimum!r}") from None
        self._model.save(options.optimized_model_filepath, external, threshold)
        log.info("session %r: wrote the model as it runs (not plugnn's per-backend optimized graph) to %s",
                 self._model.name, options.optimized_model_filepath)

    # -- onnxruntime's interface ------------------------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs (initializers excluded): name, shape with symbolic dims, type."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs as the model declares them."""
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """The backends in order of preference (plugnn's counterpart of execution providers),
        then "CPUExecutionProvider" when the session was given it (or neither providers nor
        backends): onnxruntime's name for what those CPU backends are."""
        backends = self._cache.backends
        names = list(backends) if backends is not None else self._runtime.preferred_backends
        if self._choice is not None and CPU_PROVIDER in self._choice.names or \
                self._choice is None and backends is None:
            names.append(CPU_PROVIDER)
        return names

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """Per provider of get_providers(), its options as strings: a backend's options given to
        the session, and its effective num_threads where it has that option."""
        given = self._choice.options if self._choice is not None else {}
        result: dict[str, dict[str, str]] = {}
        for name in self.get_providers():
            options = dict(given.get(name, {}))
            if name != CPU_PROVIDER:
                try:
                    options.setdefault("num_threads", self._runtime.backend(name).get_option("num_threads"))
                except BackendOptionError:
                    pass
            result[name] = options
        return result

    def get_session_options(self) -> SessionOptions:
        """The SessionOptions the session was made with (its own copy)."""
        return self._options

    def get_modelmeta(self) -> ModelMetadata:
        """The model's producer, graph name, domain, descriptions, version and metadata_props."""
        return self._model.metadata

    def get_input_memory_infos(self) -> list[OrtMemoryInfo]:
        """Where each input is read from: host memory (every plugnn backend reads it there)."""
        return [host_memory_info() for _ in self._inputs]

    def get_output_memory_infos(self) -> list[OrtMemoryInfo]:
        """Where each output is written: host memory."""
        return [host_memory_info() for _ in self._outputs]

    def get_input_epdevices(self) -> list[None]:
        """onnxruntime's EP device per input; plugnn has no EP devices: None for each."""
        return [None for _ in self._inputs]

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Initializers the graph also lists as inputs (onnxruntime lets a feed replace them;
        plugnn runs them as the constants they are: feeding one is an unknown-input error)."""
        return list(self._model.overridable)

    def get_provider_graph_assignment_info(self) -> list[OrtEpAssignedSubgraph]:
        """Which backend runs each of the model's nodes (assignment.py), for the input shapes
        run last; needs the session config entry "session.record_ep_graph_assignment_info" = "1",
        as on onnxruntime."""
        try:
            recorded = self._options.get_session_config_entry("session.record_ep_graph_assignment_info") == "1"
        except Fail:
            recorded = False
        if not recorded:
            raise Fail(f"{self._label}: Session configuration entry 'session.record_ep_graph_assignment_info' "
                       f"must be set to \"1\" to get the provider graph assignment info")
        if self._dynamic is not None:
            raise Fail(f"{self._label}: the model runs on the dynamic path, one network per segment: see "
                       f"session.dynamic.explain()")
        entries = self._cache.builds()
        if not entries:
            raise Fail(f"{self._label}: no network is loaded yet (the inputs have symbolic dims): run the model once, "
                       f"or fix the dims with SessionOptions.add_free_dimension_override_by_name")
        return assignment(entries[-1].optimized.graph.nodes, self._model.proto.graph.node)

    def set_providers(self, providers: Sequence[Any] | None = None,
                      provider_options: Sequence[Mapping[Any, Any]] | None = None) -> None:
        """Run on other providers from now on (the model is built anew). Options for a
        backend cannot change here (the runtime's backends were configured at its creation)."""
        if self._closed:
            raise SessionError(f"{self._label}: the session is closed")
        choice = choose_providers(providers if providers is not None else [CPU_PROVIDER], provider_options,
                                  self._runtime.backend_ids, self._runtime.preferred_backends, strict=True)
        if choice.backend_options:
            raise SessionError(f"{self._label}: set_providers cannot change backend options ("
                               f"{', '.join(choice.backend_options)}); give them when creating the session")
        preferred = self._preference(None, choice)
        old = self._cache
        self._cache = SessionNetworks(self._model, self._runtime, preferred, old.capacity)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close, self._cache, self._runtime if self._owns_runtime else None,
                                           self._variants)
        old.clear()
        _close_variants(self._variants)
        self._choice = choice
        if self._dynamic is not None:
            self._dynamic.close()
            self._dynamic = None
            self._go_dynamic()
        elif not self._model.dynamic and self._model.computed_outputs:
            key = tuple(tuple(d for d in a.shape or () if isinstance(d, int)) for a in self._inputs)
            try:
                self._cache.release(self._cache.acquire(key))
            except DynamicModelError:
                self._go_dynamic()

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = None) -> list[Any]:
        """Run the model: `input_feed` maps every input name to a numpy.ndarray of its type (or
        what onnxruntime converts: a list, an OrtValue, a str/bytes array for a string input);
        the result is the list of outputs named in `output_names`, in that order (None: all).
        InvalidArgument (an InputError) for a wrong name, type, rank, or a dim that contradicts a
        fixed one; RunTerminated (onnxruntime's Fail) when `run_options.terminate` is set."""
        if run_options is not None or self._profiler.enabled or self._dynamic is not None or self._closed:
            return self._run(output_names, input_feed, run_options)
        # The usual call, kept as short as it was before options existed: shapes seen before
        # are one lookup and one LoadedNetwork.run.
        names = self._output_names if output_names is None else \
            check_output_names(self._outputs, output_names, self._label)
        key = self._fast_key(input_feed)
        if key is None:
            return self._run(names, input_feed, None)
        spec = self._cache.lookup(key)
        if spec is None:
            # New shapes (a decode step, a request of another length): the last build, when it is
            # symbolic, re-sizes to them as it binds them, checking ranks, fixed dims and guards
            # itself; shapes it does not take go the full way, whose checks word the error.
            spec = self._cache.latest_symbolic()
            if spec is None:
                return self._run(names, input_feed, None)
            try:
                results = spec.run_shapes(input_feed, key)
            except InputError:
                self._cache.release(spec)
                return self._run(names, input_feed, None)
            except BaseException:
                self._cache.release(spec)
                raise
            self._cache.release(spec)
            return [results[n] for n in names] if not self._model.passthrough else \
                [self._with_passthrough(results, input_feed)[n] for n in names]
        try:
            try:
                results = spec.run_shapes(input_feed, key)
            except BindingError:  # the instance went, and its backend refuses to make it again
                results = self._cache.run(spec, input_feed)
        finally:
            self._cache.release(spec)
        return [results[n] for n in names] if not self._model.passthrough else \
            [self._with_passthrough(results, input_feed)[n] for n in names]

    def _run(self, output_names: Sequence[str] | None, input_feed: Any, run_options: RunOptions | None,
             preallocated: Mapping[str, np.ndarray] | None = None) -> list[Any]:
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise SessionError(f"run_options must be a plugnn.RunOptions or None, got {type(run_options).__name__}")
        if self._closed:
            raise SessionError(f"{self._label}: the session is closed")
        names = self._output_names if output_names is None else \
            check_output_names(self._outputs, output_names, self._label)
        stop: Callable[[], bool] | None = None
        if run_options is not None:
            if run_options.terminate:
                raise RunTerminated(f"{self._label}: Exiting due to terminate flag being set to true "
                                    f"(RunOptions.terminate was set before the run)")
            stop = run_options._terminate.is_set
        started = time.perf_counter_ns() if self._profiler.enabled else 0
        variant = self._variant_for(input_feed)
        model = self._model if variant is None else variant.model
        if self._dynamic is not None:
            segments: list[Any] | None = [] if self._profiler.enabled else None
            try:
                results = self._run_dynamic(names, input_feed, stop, segments, variant)
            except RunStoppedError as exc:
                raise RunTerminated(f"{self._label}: Exiting due to terminate flag being set to true ({exc})") from None
            if segments is not None:
                layers = [record for _, records in segments for record in records]
                kinds = {k: v for optimized, _ in segments for k, v in _layer_kinds(optimized).items()}
                self._profiler.run_event(started, time.perf_counter_ns(), layers, kinds, self._node_types())
            return _into(results, names, preallocated)
        inputs = model.inputs
        if not model.computed_outputs:  # every output is an input passed through
            fed = dict(zip((a.name for a in inputs), check_feed(inputs, input_feed, self._label)))
            results = self._with_passthrough({}, fed, model)
            return _into([results[n] for n in names], names, preallocated)
        cache = self._cache if variant is None else variant.networks
        key = self._fast_key(input_feed) if variant is None else None
        # Shapes seen before were checked (ranks, fixed dims, symbols) when they were first seen.
        spec = cache.lookup(key) if key is not None else None
        feed: Mapping[str, np.ndarray] = input_feed
        if spec is None:  # a new combination of shapes, or anything unusual: every check
            arrays = check_feed(inputs, input_feed, self._label)
            feed = dict(zip((a.name for a in inputs), arrays))
            try:
                spec = cache.acquire(tuple(a.shape for a in arrays))
            except DynamicModelError:  # the model needs the dynamic path: from now on, every run
                self._go_dynamic()
                return self._run(output_names, feed, run_options, preallocated)
        profile = self._profiler.enabled
        try:
            if stop is None and not profile and not preallocated:
                results = cache.run(spec, feed)
            else:
                outputs = {n: a for n, a in (preallocated or {}).items() if n in spec.network.output_infos}
                results = cache.run(spec, feed, outputs or None, profile=profile, stop=stop)
                if profile:
                    self._profiler.run_event(started, time.perf_counter_ns(), spec.network.last_profile,
                                             _layer_kinds(spec.optimized), self._node_types())
        except RunStoppedError as exc:
            raise RunTerminated(f"{self._label}: Exiting due to terminate flag being set to true ({exc})") from None
        finally:
            cache.release(spec)
        results = self._with_passthrough(results, feed, model)
        return _into([results[n] for n in names], names, preallocated)

    def _variant_for(self, input_feed: Any) -> _Overriding | None:
        """None for a feed of the model's inputs; for one that also feeds overridable
        initializers (initializers the graph lists as inputs: onnxruntime lets a run replace
        them), the model with those as inputs, and its networks (made at the first such run)."""
        if not self._overridable or not isinstance(input_feed, Mapping) or self._overridable.isdisjoint(input_feed):
            return None
        names = self._overridable.intersection(input_feed)
        with self._executor_lock:
            variant = self._variants.get(names)
            if variant is None:
                model = self._model.overriding(names)
                log.info("session %r: a run feeds overridable initializer(s) %s: a network with them as inputs is "
                         "built", self._model.name, ", ".join(sorted(names)))
                variant = self._variants[names] = _Overriding(
                    model, SessionNetworks(model, self._runtime, self._cache.backends, self._cache.capacity))
        return variant

    def _with_passthrough(self, results: Mapping[str, Any], feed: Mapping[str, Any],
                          model: SessionModel | None = None) -> Mapping[str, Any]:
        """`results` with the outputs that are graph inputs: copies of what was fed (as
        onnxruntime returns them)."""
        passthrough = (model or self._model).passthrough
        if not passthrough:
            return results
        merged = dict(results)
        for name in passthrough:
            value = feed[name]
            merged[name] = np.array(value) if isinstance(value, np.ndarray) else value
        return merged

    def _go_dynamic(self) -> None:
        """Run the model on plugnn's dynamic path from now on (plugnn.dynamic.DynamicModel)."""
        self._dynamic = self._dynamic_model(self._model)
        weakref.finalize(self, self._dynamic.close)

    def _dynamic_model(self, model: SessionModel) -> Any:
        from plugnn.dynamic import DynamicModel

        return DynamicModel(model.proto, model.source, self._runtime, self._cache.backends, name=model.name,
                            initializers=model.initializers)

    def _run_dynamic(self, names: Sequence[str], input_feed: Any, stop: Callable[[], bool] | None = None,
                     profile: list[Any] | None = None, variant: _Overriding | None = None) -> list[Any]:
        """A run on the dynamic path: tensor inputs checked as usual, a sequence input must be a
        list of arrays, an optional one an array, a list or None."""
        if not isinstance(input_feed, Mapping):
            raise InputError(f"{self._label}: input_feed must be a dict of input name to value, got "
                             f"{type(input_feed).__name__}")
        model = self._model if variant is None else variant.model
        others = {a.name: a for a in model.inputs if not a.type.startswith("tensor(")}
        tensors = [a for a in model.inputs if a.name not in others]
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
        if variant is None:
            dynamic = self._dynamic
        else:
            with self._executor_lock:
                if variant.dynamic is None:
                    variant.dynamic = self._dynamic_model(model)
                dynamic = variant.dynamic
        results = self._with_passthrough(dict(zip(model.computed_outputs, dynamic.run(feed, stop, profile))), feed,
                                         model)
        return [results[n] for n in names]

    @property
    def dynamic(self) -> Any:
        """The model's plugnn.dynamic.DynamicModel when it runs on the dynamic path (control flow,
        sequences, shapes decided by the data), else None; its explain() shows every segment."""
        return self._dynamic

    def _node_types(self) -> dict[str, str]:
        """The model's node name -> op type, made on the first profiled run that needs it."""
        types = self._node_type_map
        if types is None:
            types = self._node_type_map = _model_node_types(self._model.proto)
        return types

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

    # -- onnxruntime's OrtValue, I/O binding, asynchronous runs, profiling ----------------

    def run_with_ort_values(self, output_names: Sequence[str] | None, input_dict_ort_values: Mapping[str, Any],
                            run_options: RunOptions | None = None) -> OrtValueVector:
        """run() taking and giving OrtValues (the outputs' arrays are not copied)."""
        if not isinstance(input_dict_ort_values, Mapping):
            raise InvalidArgument(f"{self._label}: run_with_ort_values takes a dict of input name to OrtValue, got "
                                  f"{type(input_dict_ort_values).__name__}")
        feed = {n: v.numpy() if isinstance(v, OrtValue) else v for n, v in input_dict_ort_values.items()}
        return OrtValueVector(OrtValue(v) for v in self._run(output_names, feed, run_options))

    def run_async(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
                  callback: Callable[[list[Any], Any, str], None], user_data: Any,
                  run_options: RunOptions | None = None) -> None:
        """Start run() on a worker thread and return; `callback(outputs, user_data, error)` is
        called there when it ends: the outputs and "" on success, [] and the error's text on
        failure. A callback's own exception is logged (logger "plugnn"), never lost silently."""
        if not callable(callback):
            raise SessionError(f"{self._label}: run_async's callback must be callable, got {type(callback).__name__}")
        if self._closed:
            raise SessionError(f"{self._label}: the session is closed")
        feed = dict(input_feed) if isinstance(input_feed, Mapping) else input_feed
        names = list(output_names) if output_names is not None else None

        def work() -> None:
            try:
                outputs, error = self._run(names, feed, run_options), ""
            except Exception as exc:  # noqa: BLE001 - handed to the callback, as onnxruntime does
                outputs, error = [], f"{type(exc).__name__}: {exc}"
            try:
                callback(outputs, user_data, error)
            except Exception:  # noqa: BLE001 - the caller's callback; its thread has no one to raise to
                log.exception("%s: the run_async callback raised", self._label)

        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="plugnn-run-async")
            self._executor.submit(work)

    def io_binding(self) -> IOBinding:
        """An IOBinding for this session (io_binding.py)."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: RunOptions | None = None) -> None:
        """Run with the binding's inputs; its outputs (all of the model's when none is bound)
        are written into their preallocated buffers or kept for get_outputs()."""
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise InvalidArgument(f"{self._label}: run_with_iobinding takes an IOBinding of this session "
                                  f"(session.io_binding())")
        bound = iobinding.bound_outputs
        names = list(bound) or list(self._output_names)
        preallocated = {n: a for n, a in bound.items() if a is not None}
        iobinding._set_results(self._run(names, iobinding.bound_inputs, run_options, preallocated))

    def disable_fallback(self) -> None:
        """onnxruntime re-creates a session on its CPU provider when another provider fails;
        plugnn never retries that way (placement already falls back per layer, at optimize):
        nothing to disable."""

    def enable_fallback(self) -> None:
        """See disable_fallback: nothing to enable."""

    def end_profiling(self) -> str:
        """Write the profile (onnxruntime's Chrome-trace JSON, profiling.py) and stop profiling:
        the file's name, or "" when profiling was not enabled."""
        return self._profiler.end()

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started (time.time_ns()), 0 when it is not enabled."""
        return self._profiler.start_time_ns

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

    def networks(self) -> list[dict[str, Any]]:
        """The networks this session built and holds, least recently used first: `built_at`
        (the input shapes of the run that built it), `milliseconds` and `stages_ms` (import,
        optimize, load), `layers`, `symbols` (each symbol with its hint), `guards` (the
        decisions the build took on the hints, which every binding it runs must keep),
        `specialized` (symbols pinned to their hint, with why), and `instances`: each binding
        it holds loaded with its arena size and how many workloads were re-sized;
        `instances_made`, `instances_resized` (instances re-sized in place into a new
        binding's: plugnn.loaded_symbolic says when) and `steady_resizes` (how many of those
        only wrote new dims into the bound tensors: plugnn.steady_resize)."""
        return [b.describe(self._input_names) for b in self._cache.builds()]

    def loaded_for(self, shapes: Mapping[str, Sequence[int]]) -> Any:
        """The LoadedNetwork that runs these input shapes, if it is loaded (an instance of a
        network built for every shape, or a network built for those shapes only), else None."""
        key = tuple(tuple(shapes[n]) for n in self._input_names)
        for build in self._cache.builds():
            network = build.network
            if not build.symbolic:
                if build.shapes == key:
                    return network
                continue
            binding = network.program.bind(dict(zip(self._input_names, key)))
            wanted = tuple(binding[s] for s in network.symbols)
            for instance in network.instances():
                if instance.binding == wanted:
                    return instance.loaded
        return None

    @property
    def networks_built(self) -> int:
        """How many times this session imported, optimized and loaded its model (evicted builds
        included): once for a model whatever its shapes, more where shapes broke a guard."""
        return self._cache.built

    def close(self) -> None:
        """Unload every network; close the runtime if the session owns it (after the runs
        started by run_async end)."""
        self._closed = True
        executor, self._executor = getattr(self, "_executor", None), None
        if executor is not None:
            executor.shutdown(wait=True)
        if self._dynamic is not None:
            self._dynamic.close()
        self._finalizer()

    def __enter__(self) -> InferenceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._cache.builds())} network(s)"
        return f"<plugnn.InferenceSession {self._model.name!r} {state}>"


class _Overriding:
    """What runs a feed that replaces some overridable initializers: the model with them as
    inputs, its networks, and its dynamic model when the session runs on the dynamic path."""

    def __init__(self, model: SessionModel, networks: SessionNetworks) -> None:
        self.model = model
        self.networks = networks
        self.dynamic: Any = None

    def close(self) -> None:
        self.networks.clear()
        if self.dynamic is not None:
            self.dynamic.close()


def _close_variants(variants: dict[frozenset[str], _Overriding]) -> None:
    for variant in list(variants.values()):
        variant.close()
    variants.clear()


def _close(cache: SessionNetworks | None, runtime: Runtime | None,
           variants: dict[frozenset[str], _Overriding] | None = None) -> None:
    if variants:
        _close_variants(variants)
    if cache is not None:
        cache.clear()
    if runtime is not None:
        runtime.close()


def _into(results: list[Any], names: Sequence[str], preallocated: Mapping[str, np.ndarray] | None) -> list[Any]:
    """`results`, with each output that has a preallocated array written into it (a copy only
    when the run did not write there itself)."""
    if not preallocated:
        return results
    out = list(results)
    for index, name in enumerate(names):
        target = preallocated.get(name)
        if target is None or out[index] is target:
            continue
        value = out[index]
        if not isinstance(value, np.ndarray) or value.shape != target.shape:
            got = f"shape {list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
            raise InvalidArgument(f"output {name!r} is {got}; the bound buffer is {list(target.shape)}")
        np.copyto(target, value, casting="no")
        out[index] = target
    return out


def _model_node_types(proto: Any) -> dict[str, str]:
    """The model's node name -> op type (the profile's op_name of the nodes in a fused layer)."""
    return {node.name: node.op_type for node in proto.graph.node if node.name}


def _layer_kinds(optimized: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    """An OptimizedNetwork's layer name -> (its kind, the layers it fused), for the profile's
    op_name and fused_nodes."""
    return {node.name: (node.type_name, tuple(node.replaces)) for node in optimized.graph.nodes}


def _apply_options(runtime: Runtime, options: Mapping[str, Mapping[str, str]]) -> None:
    """Providers' backend options, set on the session's own runtime before any network is loaded
    (a backend applies them to the workload factories it makes later, as at Runtime creation)."""
    for backend_id, values in options.items():
        backend = runtime.backend(backend_id)
        for key, value in values.items():
            backend.set_option(key, value)


def _merged_options(backend_options: Mapping[str, Mapping[str, Any]] | None,
                    choice: ProviderChoice | None) -> dict[str, dict[str, str]] | None:
    """plugnn's backend_options and the providers' options, one dict per backend."""
    merged: dict[str, dict[str, str]] = {k: {str(o): str(v) for o, v in opts.items()}
                                         for k, opts in (backend_options or {}).items()}
    for backend_id, opts in (choice.backend_options if choice is not None else {}).items():
        merged.setdefault(backend_id, {}).update(opts)
    return merged or None


def _set_threads(runtime: Runtime, threads: int, explicit: Mapping[str, Mapping[str, str]] | None) -> None:
    """SessionOptions.intra_op_num_threads: the num_threads option of every backend that has it
    (and was not given one explicitly)."""
    for backend_id in runtime.backend_ids:
        if "num_threads" in (explicit or {}).get(backend_id, {}):
            continue
        backend = runtime.backend(backend_id)
        try:
            backend.get_option("num_threads")
        except BackendOptionError:
            continue  # this backend has no threads to set
        backend.set_option("num_threads", str(threads))
