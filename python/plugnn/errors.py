"""The exception hierarchy of plugnn: every error the library raises is a PlugnnError."""

from __future__ import annotations


class PlugnnError(Exception):
    """Root of every error plugnn raises."""


class BackendLoadError(PlugnnError):
    """A dynamic backend file could not be loaded (the loader logs and skips it)."""

    def __init__(self, path: str, reason: str, backend_id: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.backend_id = backend_id
        super().__init__(f"cannot load backend {path}: {reason}")


class ConfigurationError(PlugnnError, ValueError):
    """A bad setting of the runtime: an argument or environment variable (probe mode, time limit)."""


class ProbeUnavailableError(PlugnnError):
    """The plugin probe (plugnn-probe) cannot be run: missing, not executable, or broken."""


class BackendError(PlugnnError):
    """A call into a backend failed; names the backend, the call and the C status."""

    def __init__(self, backend_id: str, call: str, message: str, status: str | None = None) -> None:
        self.backend_id = backend_id
        self.call = call
        self.status = status
        self.message = message
        detail = f" [{status}]" if status else ""
        super().__init__(f"backend {backend_id!r}: {call} failed{detail}: {message}")


class BackendCrashedError(BackendError):
    """An isolated backend's worker process died or hung during a call (plugnn.isolation): names
    the backend, the call (and so the layer), and how it ended: `signal` ("SIGSEGV", or "SIGKILL"
    when the runtime killed it), `exit_status` (a plugin that called exit()), `timed_out` (no
    answer within the watchdog), `interrupted` (Ctrl-C while waiting). The host keeps running;
    the backend is marked failed until `Runtime.restart_backend` starts a new worker."""

    def __init__(self, backend_id: str, call: str, message: str, layer: str | None = None,
                 signal: str | None = None, exit_status: int | None = None, timed_out: bool = False,
                 interrupted: bool = False, pid: int | None = None) -> None:
        self.layer = layer
        self.signal = signal
        self.exit_status = exit_status
        self.timed_out = timed_out
        self.interrupted = interrupted
        self.pid = pid
        super().__init__(backend_id, call, message)


class BackendOptionError(BackendError):
    """A backend option was unknown or had a bad value."""


class UnknownBackendError(PlugnnError, KeyError):
    """A backend id that the runtime or registry does not have."""

    def __init__(self, backend_id: str, available: list[str], hint: str = "") -> None:
        self.backend_id = backend_id
        self.available = available
        listed = ", ".join(available) if available else "none"
        message = f"unknown backend {backend_id!r}; available backends: {listed}"
        super().__init__(message + (f". {hint}" if hint else ""))

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class RegistryError(PlugnnError):
    """Registering a backend factory failed (bad or duplicate id)."""


class RuntimeClosedError(PlugnnError):
    """The runtime (or an object that depends on it) was used after close()."""


class NetworkError(PlugnnError, ValueError):
    """A network is malformed: a bad descriptor, shape, name or connection; names the layer."""


class OptimizationError(PlugnnError):
    """No preferred backend can run a layer, or the preference list is unusable."""


class InputError(PlugnnError, ValueError):
    """Run inputs or outputs do not match the network: names the tensor and what was expected."""


class ModelError(PlugnnError, ValueError):
    """A model cannot be imported: names the file, node, operator and attribute at fault."""


class SessionError(PlugnnError, ValueError):
    """An InferenceSession was given arguments that do not fit together (or a model it cannot serve)."""


class MissingDependencyError(PlugnnError, RuntimeError):
    """An optional package or program a feature needs is not installed: names what to install."""


class RunStoppedError(PlugnnError, RuntimeError):
    """A run was stopped on request (RunOptions.terminate) before its next layer; what it was
    running stays loaded and usable."""


class RunError(PlugnnError, ValueError):
    """A run failed for what the data decided outside any backend (plugnn.dynamic's runtime
    steps): a sequence position out of range, a branch output of another type than declared, a
    Loop without trip count or condition; names the node path, node and operator."""
