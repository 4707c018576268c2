"""Which backends run: -c parsed, else the runtime's own order of preference, each one checked
in the runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plugnn.run.errors import RunError

if TYPE_CHECKING:
    from plugnn import Runtime

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
