"""Out-of-process execution for backends you do not trust: `Runtime(isolate={"VendorX": "process"})`
or PLUGNN_ISOLATE=VendorX runs that backend in a worker process of its own (proxy.py: the backend
protocol forwarded; worker.py: the process; shared_memory.py: the tensors both map; wire.py: the
messages). A fault there is a BackendCrashedError, not the end of the application.
docs/backends.md, "Isolation", says when to use it and what it costs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from plugnn.errors import ConfigurationError

ENV_VAR = "PLUGNN_ISOLATE"                  # "VendorX,VendorY" or "VendorX=process,VendorY=none"
WATCHDOG_ENV_VAR = "PLUGNN_ISOLATE_WATCHDOG"  # seconds an isolated call may take; unset: no limit
MODES = ("process", "none")


def isolation_modes(isolate: Mapping[str, str] | None = None) -> dict[str, str]:
    """Backend id -> "process" for each backend to isolate: `isolate` when given, else
    PLUGNN_ISOLATE. ConfigurationError for a mode other than "process" or "none"."""
    if isolate is not None:
        items, source = [(str(k), str(v)) for k, v in isolate.items()], "isolate"
    else:
        raw = os.environ.get(ENV_VAR, "")
        items, source = [], ENV_VAR
        for part in filter(None, (p.strip() for p in raw.split(","))):
            backend_id, _, mode = part.partition("=")
            items.append((backend_id.strip(), mode.strip() or "process"))
    modes: dict[str, str] = {}
    for backend_id, mode in items:
        if mode not in MODES:
            raise ConfigurationError(f"{source}: the isolation of backend {backend_id!r} must be one of "
                                     f"{', '.join(MODES)}, not {mode!r}")
        if not backend_id:
            raise ConfigurationError(f"{source}: an empty backend id")
        if mode == "process":
            modes[backend_id] = mode
    return modes


def watchdog_seconds(watchdog: float | None = None) -> float | None:
    """`watchdog` when given, else PLUGNN_ISOLATE_WATCHDOG, else None (no limit)."""
    if watchdog is None:
        raw = os.environ.get(WATCHDOG_ENV_VAR)
        if not raw:
            return None
        try:
            watchdog = float(raw)
        except ValueError:
            raise ConfigurationError(f"{WATCHDOG_ENV_VAR} must be a number of seconds, not {raw!r}") from None
    if not watchdog > 0:
        raise ConfigurationError(f"the isolation watchdog must be > 0 seconds, not {watchdog}")
    return float(watchdog)
