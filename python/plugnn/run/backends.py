"""Which backends run: -c parsed, else the runtime's own order of preference, each one checked
in the runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugnn.errors import BackendError, UnknownBackendError
from plugnn.run.errors import RunError

if TYPE_CHECKING:
    from plugnn import Runtime

def parse_options(texts: list[str]) -> dict[str, dict[str, str]]:
    """--option CpuAcc:num_threads=1 (repeatable) -> {"CpuAcc": {"num_threads": "1"}}; the last
    value of a key given twice wins, as on a command line."""
    options: dict[str, dict[str, str]] = {}
    for text in texts:
        backend_id, colon, setting = text.partition(":")
        key, equals, value = setting.partition("=")
        if not colon or not equals or not backend_id.strip() or not key.strip():
            raise RunError(f"--option takes BACKEND:KEY=VALUE like CpuAcc:num_threads=1; got {text!r}")
        options.setdefault(backend_id.strip(), {})[key.strip()] = value.strip()
    return options


def apply_options(runtime: Runtime, options: dict[str, dict[str, str]]) -> None:
    """Each --option set on its backend: a backend the runtime lacks, or a key or value the
    backend refuses, is a RunError naming the option."""
    for backend_id, settings in options.items():
        try:
            backend = runtime.backend(backend_id)
        except UnknownBackendError:
            raise RunError(f"--option {backend_id}:...: no backend {backend_id!r} "
                           f"(available: {', '.join(runtime.backend_ids) or 'none'})") from None
        for key, value in settings.items():
            try:
                backend.set_option(key, value)
            except BackendError as exc:
                raise RunError(f"--option {backend_id}:{key}={value}: {exc}") from None


def parse_backends(text: str | None) -> list[str] | None:
    """-c CpuAcc,CpuRef -> ["CpuAcc", "CpuRef"]; None without -c."""
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise RunError(f"-c takes a comma-separated list of backend ids like CpuAcc,CpuRef; got {text!r}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise RunError(f"-c lists {', '.join(repeated)} more than once: {text!r}")
    return items


def choose_backends(runtime: Runtime, requested: list[str] | None) -> list[str]:
    """The backends asked for (else every usable one, in the runtime's preference order), each known to
    the runtime."""
    available = runtime.backend_ids
    if not available:
        rejected = [f"{r.path}: {r.reason}" for r in runtime.load_report if r.status != "loaded"]
        raise RunError("no usable backends" + (f" ({'; '.join(rejected)})" if rejected else "")
                       + "; see plugnn backends")
    backends = requested or runtime.preferred_backends
    for backend_id in backends:
        runtime.backend(backend_id)  # UnknownBackendError lists the available ones
    return backends
