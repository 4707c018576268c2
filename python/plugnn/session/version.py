"""onnxruntime's module-level information functions, answered for plugnn."""

from __future__ import annotations

import platform


def get_version_string() -> str:
    """plugnn's version (plugnn.__version__)."""
    import plugnn

    return plugnn.__version__


def get_build_info() -> str:
    """What this plugnn is: its version, the backend C ABI it was built for, the platform."""
    import plugnn

    version = ".".join(map(str, plugnn.BACKEND_API_VERSION))
    return (f"plugnn {plugnn.__version__} Build Info: backend ABI {version}, "
            f"Python {platform.python_version()}, {platform.system()} {platform.machine()}")


def enable_telemetry_events() -> None:
    """plugnn sends no telemetry: nothing to enable."""


def disable_telemetry_events() -> None:
    """plugnn sends no telemetry: nothing to disable."""
