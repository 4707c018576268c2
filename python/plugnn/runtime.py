"""The runtime: the backends one application uses, static and dynamically loaded, and the
networks it loaded on them."""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plugnn.backend import Backend, BackendContext
from plugnn.errors import ConfigurationError, PlugnnError, RuntimeClosedError, UnknownBackendError
from plugnn.loader import LoadRecord, backend_paths, load_dynamic_backends
from plugnn.probe import probe_mode
from plugnn.registry import BackendRegistry

if TYPE_CHECKING:  # the network stages (and NumPy) load with the first network, not at start-up
    from plugnn.loaded import LoadedNetwork
    from plugnn.optimized import OptimizedNetwork

log = logging.getLogger("plugnn")

# The bundled backends in the order a runtime prefers them when nobody says otherwise: the
# fast CPU backend, then the reference one (every other backend follows, in load order).
DEFAULT_PREFERENCE = ("CpuAcc", "CpuRef")


class Runtime:
    """Owns one instance of every usable backend: those registered from Python, then the
    dynamic ones found in the search paths (first id wins).

    `dynamic_backends_path` replaces the search list with one directory;
    `dynamic_backends=False` loads no plugin; `backend_options` maps a backend id to its
    string options, applied before the backend is used. `probe` is "process" (the
    default, or the environment variable PLUGNN_PROBE): a plugin file this process has
    not loaded yet is first run in a child process (plugnn-probe), and one that crashes,
    exits or hangs there is rejected without being loaded; "none" loads plugins
    unprobed. `isolate` maps a plugin backend's id to "process" (or the environment variable
    PLUGNN_ISOLATE lists ids): that backend runs in a worker process of its own
    (plugnn.isolation), so a fault in it is a BackendCrashedError and marks it failed instead
    of ending the application; `watchdog` (or PLUGNN_ISOLATE_WATCHDOG) is the seconds one of its
    calls may take before the worker is killed (default: no limit). Close the runtime (or use
    `with`) to destroy the backend instances and unload their libraries.
    """

    def __init__(self, dynamic_backends_path: str | os.PathLike[str] | None = None,
                 dynamic_backends: bool = True,
                 backend_options: Mapping[str, Mapping[str, Any]] | None = None,
                 probe: str | None = None, isolate: Mapping[str, str] | None = None,
                 watchdog: float | None = None) -> None:
        from plugnn.isolation import isolation_modes, watchdog_seconds

        mode = probe_mode(probe)
        isolated = isolation_modes(isolate)
        limit = watchdog_seconds(watchdog)
        self._records: list[LoadRecord] = []
        self._backends: dict[str, Backend] = {}
        self._contexts: dict[str, BackendContext] = {}
        self._paths: list[str] = []
        self._networks: dict[int, LoadedNetwork] = {}
        self._next_network_id = 1
        self._finalizer = weakref.finalize(self, _close_backends, self._backends, self._contexts, self._networks)
        try:
            self._create_static_backends()
            if dynamic_backends:
                self._paths = backend_paths(dynamic_backends_path, self._records)
                for backend in load_dynamic_backends(self._paths, self._backends, self._records, probe_mode=mode,
                                                     isolate=isolated, watchdog=limit):
                    self._backends[backend.backend_id] = backend
            self._check_isolated(isolated)
            self._apply_options(backend_options or {})
            for backend_id, backend in self._backends.items():
                context = backend.create_context()
                if context is not None:
                    self._contexts[backend_id] = context
        except BaseException:
            self.close()
            raise
        if not self._backends:
            log.warning("plugnn runtime has no backends: none registered and none loaded (see load_report)")

    def _create_static_backends(self) -> None:
        for backend_id, factory in BackendRegistry.factories().items():
            try:
                backend = factory()
                if not isinstance(backend, Backend):
                    raise TypeError(f"the factory returned {type(backend).__name__}, not a plugnn Backend")
            except Exception as exc:  # a broken static backend is skipped like a broken plugin
                record = LoadRecord(f"<static:{backend_id}>", "static", "rejected", backend_id,
                                    reason=f"factory failed: {exc}")
                log.warning("static backend %s rejected: %s", backend_id, record.reason)
                self._records.append(record)
                continue
            backend.backend_id = backend_id
            backend.origin = "static"
            self._backends[backend_id] = backend
            self._records.append(LoadRecord(f"<static:{backend_id}>", "static", "loaded", backend_id,
                                            "{}.{}".format(*backend.version)))

    def _check_isolated(self, isolated: Mapping[str, str]) -> None:
        for backend_id in isolated:
            backend = self._backends.get(backend_id)
            if backend is None:
                log.warning("isolate names backend %r, which this runtime has not loaded", backend_id)
            elif not backend.isolation:
                raise ConfigurationError(f"isolate: backend {backend_id!r} is a Python backend ({backend.origin}); "
                                         f"only plugin backends can run in a worker process")

    def _apply_options(self, backend_options: Mapping[str, Mapping[str, Any]]) -> None:
        for backend_id, options in backend_options.items():
            backend = self.backend(backend_id)
            for key, value in options.items():
                backend.set_option(str(key), str(value))

    # -- what the runtime has -----------------------------------------------------------

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeClosedError("the runtime is closed")

    @property
    def backend_ids(self) -> list[str]:
        """Every backend this runtime can use: static ones first, then dynamic, in load order."""
        self._check_open()
        return list(self._backends)

    @property
    def load_report(self) -> list[LoadRecord]:
        """One record per static backend, directory and file the loader considered."""
        return list(self._records)

    @property
    def backend_paths(self) -> list[str]:
        """The directories that were searched for dynamic backends."""
        return list(self._paths)

    @property
    def preferred_backends(self) -> list[str]:
        """The order `plugnn.optimize` tries backends in when given none: the bundled ones
        (DEFAULT_PREFERENCE) this runtime has, then every other backend in load order."""
        self._check_open()
        first = [b for b in DEFAULT_PREFERENCE if b in self._backends]
        return first + [b for b in self._backends if b not in first]

    def backend(self, backend_id: str) -> Backend:
        """The instance of `backend_id`; UnknownBackendError lists what exists and why not."""
        self._check_open()
        try:
            return self._backends[backend_id]
        except KeyError:
            raise UnknownBackendError(backend_id, list(self._backends), self._rejection_hint(backend_id)) from None

    def context(self, backend_id: str) -> BackendContext | None:
        self._check_open()
        return self._contexts.get(backend_id)

    def _rejection_hint(self, backend_id: str) -> str:
        for record in self._records:
            if record.backend_id == backend_id and record.status == "rejected":
                return f"{record.path} provides {backend_id!r} but was rejected at load: {record.reason}"
        return ""

    def describe(self) -> list[dict[str, Any]]:
        """One row per usable backend: id, version, origin, source (the distribution), host memory."""
        self._check_open()
        return [{"backend_id": b.backend_id, "version": "{}.{}".format(*b.version), "origin": b.origin,
                 "source": b.source, "host_memory": b.host_memory, "isolation": b.isolation,
                 "failed": str(b.failure) if b.failure is not None else ""} for b in self._backends.values()]

    # -- isolated backends (plugnn.isolation) -------------------------------------------------------

    @property
    def failed_backends(self) -> dict[str, PlugnnError]:
        """The backends that can run nothing more (an isolated backend whose worker died, hung or
        was interrupted), with the error that ended each. Optimizing again places their layers on
        the next preferred backend; `restart_backend` starts a new worker."""
        self._check_open()
        return {b: backend.failure for b, backend in self._backends.items() if backend.failure is not None}

    def restart_backend(self, backend_id: str) -> None:
        """Start a new worker process for isolated backend `backend_id` (ending the old one if it
        still runs), apply its backend options again and create its context again. Networks
        loaded on the old worker raise RuntimeClosedError: optimize and load them again."""
        backend = self.backend(backend_id)
        restart = getattr(backend, "restart", None)
        if restart is None:
            raise ConfigurationError(f"backend {backend_id!r} does not run in a worker process: nothing to restart "
                                     f"(isolate it with Runtime(isolate={{{backend_id!r}: 'process'}}))")
        old = self._contexts.pop(backend_id, None)
        if old is not None:
            try:
                old.close()
            except PlugnnError as exc:  # the old worker's context went with it
                log.debug("closing the old context of %r: %s", backend_id, exc)
        restart()
        context = backend.create_context()
        if context is not None:
            self._contexts[backend_id] = context

    # -- networks --------------------------------------------------------------------

    def load_network(self, optimized: OptimizedNetwork, reshape_from: Sequence[LoadedNetwork] = (),
                     remake: Any = None) -> LoadedNetwork:
        """Create the workloads of an OptimizedNetwork and plan its memory: a LoadedNetwork.

        `reshape_from`: networks of this runtime loaded from the same model at other input
        shapes. A layer that matches one of theirs (same name, backend, kind, descriptor and
        the very same constant arrays; only computed shapes differ) gets that layer's workload
        re-sized (`Workload.reshape`, pn_workload.reshape), sharing its immutable state; other
        layers, and backends that cannot re-size, get new workloads. Those networks must stay
        loaded during the call. `remake(node, backend)` (a symbolic network's instances use it)
        gives a fused layer again when its backend refuses to create its workload.

        An optimized network with symbolic shapes (plugnn.symbolic) gives a
        SymbolicLoadedNetwork: one network for every binding of its symbols, each run at its
        inputs' shapes (plugnn.loaded_symbolic)."""
        from plugnn.loaded import LoadedNetwork
        from plugnn.optimized import OptimizedNetwork
        from plugnn.shape_program import graph_env

        self._check_open()
        if not isinstance(optimized, OptimizedNetwork):
            raise TypeError(f"load_network takes an OptimizedNetwork (from plugnn.optimize), "
                            f"got {type(optimized).__name__}")
        if optimized.runtime is not self:
            raise PlugnnError(f"network {optimized.network_name!r} was optimized for another runtime")
        env = graph_env(optimized.graph)
        if env is not None:  # shapes that are expressions of symbols: one instance per binding
            from plugnn.loaded_symbolic import SymbolicLoadedNetwork

            return SymbolicLoadedNetwork(optimized, env, self.load_network)  # type: ignore[return-value]
        network_id = self._next_network_id
        self._next_network_id += 1
        used = {n.backend_id for n in optimized.graph.nodes if n.backend_id is not None}
        for source in reshape_from:
            if self._networks.get(source.network_id) is not source:
                raise PlugnnError(f"reshape_from: network {source.name!r} is not loaded on this runtime")
        loaded = LoadedNetwork(optimized, network_id, {b: self.backend(b) for b in used},
                               list(self._contexts.values()), self._forget, reshape_from, remake)
        self._networks[network_id] = loaded
        return loaded

    @property
    def loaded_networks(self) -> list[LoadedNetwork]:
        return list(self._networks.values())

    def _forget(self, loaded: LoadedNetwork) -> None:
        self._networks.pop(loaded.network_id, None)

    # -- lifetime --------------------------------------------------------------------

    def close(self) -> None:
        """Unload every network, destroy every backend context and instance, unload the plugins."""
        self._finalizer()

    def __enter__(self) -> Runtime:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"backends={list(self._backends)}"
        return f"<plugnn.Runtime {state}>"


def _close_backends(backends: dict[str, Backend], contexts: dict[str, BackendContext],
                    networks: dict[int, LoadedNetwork]) -> None:
    errors: list[str] = []
    for network in list(networks.values()):
        _safely(network.unload, errors)
    networks.clear()
    for context in reversed(list(contexts.values())):
        _safely(context.close, errors)
    contexts.clear()
    for backend in reversed(list(backends.values())):
        _safely(backend.close, errors)
    backends.clear()
    for error in errors:
        log.error("while closing the runtime: %s", error)


def _safely(fn: Any, errors: list[str]) -> None:
    try:
        fn()
    except Exception as exc:  # closing goes on whatever one object does
        errors.append(str(exc))
