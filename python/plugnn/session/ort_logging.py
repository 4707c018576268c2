"""onnxruntime's process-wide logging calls, applied to plugnn's logger "plugnn".

onnxruntime's severities are 0 verbose, 1 info, 2 warning, 3 error, 4 fatal; plugnn logs through
`logging.getLogger("plugnn")`, so a severity is that logger's level (DEBUG, INFO, WARNING,
ERROR, CRITICAL) and a logger callback is a handler on it. A bad argument is a Fail (a
RuntimeError, as onnxruntime's is).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from plugnn.session.ort_errors import Fail

LOGGER = "plugnn"
SEVERITY_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}

_callback_lock = threading.Lock()
_callback_handler: logging.Handler | None = None


def _severity(severity: Any, what: str) -> int:
    if isinstance(severity, bool) or not isinstance(severity, int) or severity not in SEVERITY_LEVELS:
        raise Fail(f"{what} takes a severity from 0 (verbose) to 4 (fatal), got {severity!r}")
    return severity


def _severity_of(level: int) -> int:
    return max((s for s, lvl in SEVERITY_LEVELS.items() if lvl <= level), default=0)


def set_default_logger_severity(severity: int) -> None:
    """The level of the logger "plugnn": 0 verbose = DEBUG, 1 INFO, 2 WARNING, 3 ERROR, 4 fatal =
    CRITICAL."""
    logging.getLogger(LOGGER).setLevel(SEVERITY_LEVELS[_severity(severity, "set_default_logger_severity")])


def set_default_logger_verbosity(verbosity: int) -> None:
    """onnxruntime's VLOG level (the verbose messages of its debug builds); plugnn has no such
    level: checked and accepted."""
    if isinstance(verbosity, bool) or not isinstance(verbosity, int) or verbosity < 0:
        raise Fail(f"set_default_logger_verbosity takes an integer >= 0, got {verbosity!r}")


class _CallbackHandler(logging.Handler):
    """Hands each record of the logger "plugnn" to an onnxruntime-style callback
    `callback(severity, category, logid, code_location, message)`."""

    def __init__(self, callback: Callable[[int, str, str, str, str], Any], level: int) -> None:
        super().__init__(level)
        self.callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.callback(_severity_of(record.levelno), record.name, record.threadName or "",
                          f"{record.pathname}:{record.lineno} {record.funcName}", record.getMessage())
        except Exception:  # noqa: BLE001 - the caller's callback: reported on stderr, never raised into plugnn
            self.handleError(record)


def set_default_logger_callback(callback: Callable[[int, str, str, str, str], Any] | None,
                                severity: int = 2) -> None:
    """Send plugnn's log records of `severity` and above to `callback(severity, category, logid,
    code_location, message)` (category: the logger's name, logid: the thread's, code_location:
    file, line and function) and set the logger's level to `severity`; None restores plain
    logging (the handler removed; the level stays). A callback that raises is reported on
    stderr by logging, and logging goes on."""
    global _callback_handler
    if callback is not None and not callable(callback):
        raise Fail(f"set_default_logger_callback takes a callable or None, got {type(callback).__name__}")
    level = SEVERITY_LEVELS[_severity(severity, "set_default_logger_callback")]
    logger = logging.getLogger(LOGGER)
    with _callback_lock:
        if _callback_handler is not None:
            logger.removeHandler(_callback_handler)
            _callback_handler = None
        if callback is not None:
            _callback_handler = _CallbackHandler(callback, level)
            logger.addHandler(_callback_handler)
            logger.setLevel(level)
