"""libplugnn_runner, the runtime's C helpers (native/runner/plugnn_runner.h): the step runner
(plugnn.step_runner) and the arena planner (plugnn.memory_plan), loaded once from the package's
lib/ directory. Its declarations are in the ABI's generated cffi module.

The environment variable PLUGNN_STEP_RUNNER names another copy of the library (scripts/
sanitize.sh points it at the sanitizer build's). If the library cannot be loaded, a warning is
logged once and the runtime does without it (each layer called on its own, plans made in Python).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from plugnn import _build_config
from plugnn._abi import ffi

log = logging.getLogger("plugnn")

LIBRARY_ENV = "PLUGNN_STEP_RUNNER"  # another libplugnn_runner (the sanitizer build's)
LIBRARY = os.environ.get(LIBRARY_ENV) or os.path.join(
    _build_config.INSTALL_DIR, "lib", "libplugnn_runner.dylib" if sys.platform == "darwin" else "libplugnn_runner.so")

_library: Any = None
_loaded = False


def runner_library() -> Any:
    """The loaded runner library, or None (logged once) when it cannot be loaded."""
    global _library, _loaded
    if not _loaded:
        _loaded = True
        try:
            _library = ffi.dlopen(LIBRARY)
        except OSError as exc:
            log.warning("plugnn: the step runner %s did not load (%s); each layer is called on its own", LIBRARY, exc)
    return _library
