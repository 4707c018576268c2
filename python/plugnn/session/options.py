"""onnxruntime's SessionOptions and RunOptions, each field meaning on plugnn what it means there,
or accepted and documented where plugnn has nothing it could mean (docs/session.md,
"SessionOptions"). The enums GraphOptimizationLevel, ExecutionMode and ExecutionOrder carry
onnxruntime's values.

A session reads its SessionOptions once, at construction (a copy: changing the object later
changes nothing, as on onnxruntime); `session.get_session_options()` returns that copy.
"""

from __future__ import annotations

import copy
import enum
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

from plugnn.errors import SessionError
from plugnn.session.ort_errors import Fail, NotImplemented

log = logging.getLogger("plugnn")


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's optimization levels. plugnn's optimizer (placement on backends, folding
    batch normalization and constants, backends' fusions) is one step it always takes: every
    level runs it (docs/session.md)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime's execution modes. plugnn runs a network's layers one after the other
    (their backends parallelize inside a layer): ORT_PARALLEL is accepted and runs sequentially."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """onnxruntime's node orders; plugnn runs its optimized graph in its own topological order."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class _Field:
    """A typed option attribute: `kind` checked on assignment (an IntEnum field takes its ints)."""

    def __init__(self, default: Any, kind: type, minimum: int | None = None) -> None:
        self.default = default
        self.kind = kind
        self.minimum = minimum

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.owner = owner.__name__

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj.__dict__.get(self.name, self.default)

    def __set__(self, obj: Any, value: Any) -> None:
        kind = self.kind
        if issubclass(kind, enum.IntEnum):
            try:
                value = kind(value)
            except ValueError:
                raise SessionError(f"{self.owner}.{self.name} takes one of {kind.__name__} "
                                   f"({', '.join(m.name for m in kind)}), got {value!r}") from None
        elif kind is bool:
            if not isinstance(value, (bool, int)):
                raise SessionError(f"{self.owner}.{self.name} takes a bool, got {value!r}")
            value = bool(value)
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or \
                    (self.minimum is not None and value < self.minimum):
                floor = f" >= {self.minimum}" if self.minimum is not None else ""
                raise SessionError(f"{self.owner}.{self.name} takes an integer{floor}, got {value!r}")
        elif kind is str:
            if not isinstance(value, str):
                value = _path_text(value, f"{self.owner}.{self.name}")
        obj.__dict__[self.name] = value


def _path_text(value: Any, what: str) -> str:
    import os

    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise SessionError(f"{what} takes a str, got {value!r}")


class SessionOptions:
    """onnxruntime's SessionOptions. What each field does on plugnn:

    - `intra_op_num_threads` (0: the backends' default): the `num_threads` option of every
      backend of the session's runtime that has one (CpuAcc);
    - `inter_op_num_threads`, `execution_mode`, `execution_order`, `use_per_session_threads`:
      accepted, no effect (plugnn runs layers in order; threads are the backends');
    - `graph_optimization_level`: accepted; plugnn's optimizer runs at every level;
    - `enable_profiling`, `profile_file_prefix`: the session writes onnxruntime's Chrome-trace
      JSON at `end_profiling()` (per-layer events from plugnn's profiler);
    - `optimized_model_filepath`: the ONNX model as the session runs it (free dimensions
      overridden, initializers replaced), not plugnn's optimized graph, which is per backend
      and not ONNX; the session config entries
      "session.optimized_model_external_initializers_file_name" / "..._min_size_in_bytes"
      put its large initializers in an external file as onnxruntime does;
    - the session config entry "session.disable_quant_qdq" = "1": a QDQ model runs as written
      (float ops between its QuantizeLinear and DequantizeLinear nodes) instead of with its
      groups as integer operators (plugnn.onnx.qdq), as on onnxruntime;
    - `log_severity_level`, `log_verbosity_level`, `logid`: accepted, no effect: plugnn logs
      through the process-wide logger "plugnn" (set_default_logger_severity, or logging);
    - `enable_cpu_mem_arena`, `enable_mem_pattern`, `enable_mem_reuse`,
      `use_deterministic_compute`: accepted, no effect (plugnn plans each network's memory once
      at load; its backends compute deterministically);
    - free-dimension overrides: the dims become fixed (get_inputs shows them; the model is
      specialized at construction);
    - `add_initializer` / `add_external_initializers`: replace the model's initializers;
    - `register_custom_ops_library`: a NotImplemented error (plugnn runs no onnxruntime
      custom-op libraries; its extension point is a backend plugin, docs/backends.md).
    """

    intra_op_num_threads = _Field(0, int, minimum=0)
    inter_op_num_threads = _Field(0, int, minimum=0)
    graph_optimization_level = _Field(GraphOptimizationLevel.ORT_ENABLE_ALL, GraphOptimizationLevel)
    execution_mode = _Field(ExecutionMode.ORT_SEQUENTIAL, ExecutionMode)
    execution_order = _Field(ExecutionOrder.DEFAULT, ExecutionOrder)
    enable_profiling = _Field(False, bool)
    profile_file_prefix = _Field("onnxruntime_profile_", str)
    optimized_model_filepath = _Field("", str)
    log_severity_level = _Field(-1, int, minimum=-1)
    log_verbosity_level = _Field(0, int, minimum=0)
    logid = _Field("", str)
    enable_cpu_mem_arena = _Field(True, bool)
    enable_mem_pattern = _Field(True, bool)
    enable_mem_reuse = _Field(True, bool)
    use_deterministic_compute = _Field(False, bool)
    use_per_session_threads = _Field(True, bool)

    def __init__(self) -> None:
        self._config: dict[str, str] = {}
        self._dims_by_name: dict[str, int] = {}
        self._dims_by_denotation: dict[str, int] = {}
        self._initializers: dict[str, Any] = {}
        self._files: dict[str, memoryview] = {}

    # -- session config entries ------------------------------------------------------------

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Set a session config entry (onnxruntime's string key/value pairs). plugnn reads
        the optimized-model external-initializer entries and "session.disable_quant_qdq";
        others are kept and returned."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise SessionError(f"add_session_config_entry takes two str, got {key!r}, {value!r}")
        if not key:
            raise SessionError("add_session_config_entry: the key is empty")
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        try:
            return self._config[key]
        except KeyError:
            raise Fail(f"SessionOptions does not have configuration with key: {key}") from None

    def config_entries(self) -> dict[str, str]:
        """Every session config entry set (plugnn's addition)."""
        return dict(self._config)

    # -- free dimensions ---------------------------------------------------------------

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fix the symbolic dim `dim_name` of the model's inputs to `dim_value`."""
        self._dims_by_name[_dim_key(dim_name, "dim_name")] = _dim_value(dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        """Fix every input dim whose denotation is `dim_denotation` (e.g. "DATA_BATCH")."""
        self._dims_by_denotation[_dim_key(dim_denotation, "dim_denotation")] = _dim_value(dim_value)

    @property
    def free_dimension_overrides(self) -> tuple[dict[str, int], dict[str, int]]:
        """(by name, by denotation) (plugnn's addition)."""
        return dict(self._dims_by_name), dict(self._dims_by_denotation)

    # -- initializers --------------------------------------------------------------------

    def add_initializer(self, name: str, value: Any) -> None:
        """Replace the model's initializer `name` with `value` (an OrtValue; the caller keeps
        it alive, as on onnxruntime: plugnn references its array, read only)."""
        self._initializers[_dim_key(name, "name")] = _initializer_array(name, value)

    def add_external_initializers(self, names: Sequence[str], values: Sequence[Any]) -> None:
        """Replace several initializers (typically ones whose external data is not on disk)."""
        names, values = list(names), list(values)
        if len(names) != len(values):
            raise SessionError(f"add_external_initializers: {len(names)} names and {len(values)} values")
        for name, value in zip(names, values):
            self.add_initializer(name, value)

    def add_external_initializers_from_files_in_memory(self, file_names: Sequence[str], buffers: Sequence[Any],
                                                       lengths: Sequence[int]) -> None:
        """The contents of external-data files the model names (its initializers' `location`),
        given in memory instead of on disk: each buffer (bytes, bytearray, memoryview or a NumPy
        array) up to its length."""
        file_names, buffers, lengths = list(file_names), list(buffers), list(lengths)
        if not len(file_names) == len(buffers) == len(lengths):
            raise SessionError(f"add_external_initializers_from_files_in_memory: {len(file_names)} file names, "
                               f"{len(buffers)} buffers and {len(lengths)} lengths")
        for name, buffer, length in zip(file_names, buffers, lengths):
            key = _dim_key(name, "file name")
            try:
                view = memoryview(buffer).cast("B")
            except TypeError:
                raise SessionError(f"external file {name!r}: the buffer must be bytes-like, got "
                                   f"{type(buffer).__name__}") from None
            if isinstance(length, bool) or not isinstance(length, int) or not 0 <= length <= view.nbytes:
                raise SessionError(f"external file {name!r}: length {length!r} is not within the buffer's "
                                   f"{view.nbytes} bytes")
            self._files[key] = view[:length]

    @property
    def external_files(self) -> dict[str, memoryview]:
        """The external-data files given in memory, name -> bytes (plugnn's addition)."""
        return dict(self._files)

    @property
    def initializers(self) -> dict[str, Any]:
        """The initializers added, name -> array (plugnn's addition)."""
        return dict(self._initializers)

    # -- what plugnn does not do -----------------------------------------------------------

    def register_custom_ops_library(self, library_path: str) -> None:
        raise NotImplemented(f"register_custom_ops_library({library_path!r}): plugnn runs no onnxruntime custom-op "
                             "libraries; operators plugnn lacks are added by a backend plugin (docs/backends.md)")

    # -- plugnn's side ---------------------------------------------------------------------

    def copy(self) -> SessionOptions:
        duplicate = copy.copy(self)
        duplicate.__dict__ = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()}
        return duplicate

    def apply_model_config(self, text: str, source: str) -> None:
        """The "session_options" of a model's "ort_config" metadata (onnxruntime reads it when
        the environment variable ORT_LOAD_CONFIG_FROM_MODEL is 1)."""
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise SessionError(f"{source}: metadata 'ort_config' is not JSON: {exc}") from None
        settings = config.get("session_options", {}) if isinstance(config, dict) else None
        if not isinstance(settings, dict):
            raise SessionError(f"{source}: metadata 'ort_config' has no 'session_options' object")
        for key, value in settings.items():
            field = type(self).__dict__.get(key)
            if not isinstance(field, _Field):
                log.warning("%s: ort_config session option %r is not one plugnn knows; ignored", source, key)
                continue
            setattr(self, key, value)

    def describe(self) -> dict[str, Any]:
        """Every field's value (plugnn's addition, for logs)."""
        return {name: getattr(self, name) for name, field in type(self).__dict__.items() if isinstance(field, _Field)}

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.describe().items() if v != type(self).__dict__[k].default}
        return f"<plugnn.SessionOptions {changed or 'defaults'}>"


def _dim_key(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise SessionError(f"{what} must be a non-empty str, got {value!r}")
    return value


def _dim_value(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SessionError(f"a free dimension override takes an integer >= 0, got {value!r}")
    return value


def _initializer_array(name: str, value: Any) -> Any:
    import numpy as np

    array = value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value
    if not isinstance(array, np.ndarray):
        raise SessionError(f"initializer {name!r}: add_initializer takes an OrtValue (or a numpy.ndarray), "
                           f"got {type(value).__name__}")
    array = np.ascontiguousarray(array)
    if array.flags.writeable:
        array = array.view()
        array.setflags(write=False)
    return array


class RunOptions:
    """onnxruntime's RunOptions: `terminate` (set from any thread, the run stops before its next
    layer, segment or runtime node with RunTerminated, onnxruntime's Fail, and the session stays
    usable; a run given RunOptions calls its layers one by one to ask); `logid`, `log_severity_level`,
    `log_verbosity_level` (accepted, no effect: plugnn logs through the logger "plugnn"); run
    config entries (kept; plugnn reads none: "memory.enable_memory_arena_shrinkage" has nothing
    to shrink, plugnn's memory is planned per network); `only_execute_path_to_fetches`
    (accepted: plugnn runs the whole network)."""

    log_severity_level = _Field(-1, int, minimum=-1)
    log_verbosity_level = _Field(0, int, minimum=0)
    logid = _Field("", str)
    only_execute_path_to_fetches = _Field(False, bool)

    def __init__(self) -> None:
        self._terminate = threading.Event()
        self._config: dict[str, str] = {}

    @property
    def terminate(self) -> bool:
        return self._terminate.is_set()

    @terminate.setter
    def terminate(self, value: bool) -> None:
        if not isinstance(value, (bool, int)):
            raise SessionError(f"RunOptions.terminate takes a bool, got {value!r}")
        if value:
            self._terminate.set()
        else:
            self._terminate.clear()

    def add_run_config_entry(self, key: str, value: str) -> None:
        if not isinstance(key, str) or not isinstance(value, str) or not key:
            raise SessionError(f"add_run_config_entry takes a non-empty str key and a str value, got {key!r}, {value!r}")
        self._config[key] = value

    def get_run_config_entry(self, key: str) -> str:
        try:
            return self._config[key]
        except KeyError:
            raise Fail(f"RunOptions does not have configuration with key: {key}") from None

    def add_active_adapter(self, adapter: Any) -> None:
        raise NotImplemented("RunOptions.add_active_adapter: plugnn has no LoRA adapters (onnxruntime's adapter "
                             "format); add the adapted weights to the model, or use SessionOptions.add_initializer")

    def __repr__(self) -> str:
        return f"<plugnn.RunOptions logid={self.logid!r} terminate={self.terminate}>"

