"""Probing plugins in a child process before the runtime loads them into its own.

`plugnn-probe` (native/probe/plugnn_probe.c, installed in the package's libexec/) loads one
plugin, calls its three entry points, creates and destroys one backend and unloads it,
reporting each step before and after it happens. A plugin whose probe dies (a signal, an
exit) or runs past the time limit is rejected with what happened and in which step
("SIGSEGV in BackendFactory", "timed out after 5 s in GetVersion", "exit(3) in
GetBackendId"); the runtime never loads it. Everything else the runtime's own checks judge.

Verdicts are kept per file (real path, size, mtime, inode) in memory for the process and
on disk in $XDG_CACHE_HOME/plugnn/probe (default ~/.cache/plugnn/probe), so a plugin costs
one probe per version of its file. Time-outs are not written to disk (a slow machine is
not a broken plugin); they are probed again by the next process.

Probes of several files run in parallel (as many at once as there are CPUs).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import NamedTuple

from plugnn import _build_config, supervisor
from plugnn.errors import ConfigurationError, ProbeUnavailableError

log = logging.getLogger("plugnn")

MODE_ENV = "PLUGNN_PROBE"  # "process" (the default) or "none"
HELPER_ENV = "PLUGNN_PROBE_HELPER"  # another plugnn-probe executable (sanitizer builds)
TIMEOUT_ENV = "PLUGNN_PROBE_TIMEOUT"  # seconds per plugin
MODES = ("process", "none")
DEFAULT_TIMEOUT = 5.0
PROTOCOL = 1
HELPER = os.path.join(_build_config.INSTALL_DIR, "libexec", "plugnn-probe")

# How the report names the probe's steps.
_STEPS = {
    "dlopen": "dlopen (loading the library: its constructors)",
    "destroy": "pn_backend.destroy",
    "dlclose": "dlclose (unloading the library: its destructors)",
}


class ProbeResult(NamedTuple):
    """One plugin's verdict: `ok` when the probe process survived every step."""

    path: str
    ok: bool
    reason: str = ""
    backend_id: str | None = None
    cached: bool = False


class _Key(NamedTuple):
    path: str
    size: int
    mtime_ns: int
    inode: int
    device: int


def probe_mode(mode: str | None = None) -> str:
    """`mode` when given, else PLUGNN_PROBE, else "process"; ConfigurationError for anything else."""
    chosen = mode if mode is not None else (os.environ.get(MODE_ENV) or "process")
    if chosen not in MODES:
        source = "probe" if mode is not None else MODE_ENV
        raise ConfigurationError(f"{source} must be one of {', '.join(MODES)}, not {chosen!r}")
    return chosen


def probe_timeout(timeout: float | None = None) -> float:
    """`timeout` when given, else PLUGNN_PROBE_TIMEOUT, else 5 seconds."""
    if timeout is not None:
        value: float = timeout
    else:
        raw = os.environ.get(TIMEOUT_ENV)
        try:
            value = float(raw) if raw else DEFAULT_TIMEOUT
        except ValueError:
            raise ConfigurationError(f"{TIMEOUT_ENV} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise ConfigurationError(f"the probe's time limit must be > 0 seconds, not {value}")
    return value


def helper_path() -> str:
    """The plugnn-probe executable: PLUGNN_PROBE_HELPER, else the package's own."""
    return os.environ.get(HELPER_ENV) or HELPER


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "plugnn", "probe")


# ---- verdicts: this process's, then the disk's ---------------------------------------------

_seen: dict[_Key, ProbeResult] = {}
_seen_lock = threading.Lock()


def _key(path: str) -> _Key | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _Key(os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def _cache_file(key: _Key) -> str:
    from plugnn import __version__

    text = json.dumps([PROTOCOL, __version__, *key])
    return os.path.join(cache_dir(), hashlib.sha256(text.encode()).hexdigest()[:32] + ".json")


def _read_cache(key: _Key, path: str) -> ProbeResult | None:
    try:
        with open(_cache_file(key), encoding="utf-8") as f:
            data = json.load(f)
        if data.get("key") != list(key):
            return None
        return ProbeResult(path, bool(data["ok"]), str(data.get("reason", "")), data.get("backend_id"), cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(key: _Key, result: ProbeResult) -> None:
    target = _cache_file(key)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temporary = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump({"key": list(key), "ok": result.ok, "reason": result.reason,
                       "backend_id": result.backend_id}, f)
        os.replace(temporary, target)
    except OSError as exc:  # a read-only home is no reason to fail: the probe runs again next time
        log.debug("cannot write the probe cache %s: %s", target, exc)


def clear_cache() -> None:
    """Forget every verdict: this process's and the disk cache's."""
    forget()
    directory = cache_dir()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.endswith(".json"):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError as exc:
                log.debug("cannot remove %s: %s", name, exc)


def forget(paths: Iterable[str] | None = None) -> None:
    """Drop this process's verdicts (of `paths`, or all), so the next probe runs again."""
    with _seen_lock:
        if paths is None:
            _seen.clear()
            return
        reals = {os.path.realpath(p) for p in paths}
        for key in [k for k in _seen if k.path in reals]:
            del _seen[key]


# ---- running the helper ------------------------------------------------------------------------


def _start(path: str, helper: str, env: dict[str, str], timeout: float) -> supervisor.Child:
    try:
        return supervisor.Child([helper, path], env, timeout)
    except OSError as exc:
        raise ProbeUnavailableError(f"cannot run the plugin probe {helper}: {exc}") from None


def _verdict(child: supervisor.Child, helper: str) -> ProbeResult:
    """What an ended plugnn-probe process says of its plugin."""
    path = child.argv[-1]
    status = child.status if child.status is not None else child.process.wait()
    lines = child.out.decode("utf-8", errors="replace").splitlines()
    if not lines or lines[0] != f"plugnn-probe {PROTOCOL}":
        detail = supervisor.last_line(child.err) or f"exit status {status}"
        raise ProbeUnavailableError(f"the plugin probe {helper} did not start ({detail})")
    entered: list[str] = []
    backend_id = None
    done = False
    for line in lines[1:]:
        word, _, rest = line.partition(" ")
        if word == "enter":
            entered.append(rest)
        elif word == "leave" and entered and entered[-1] == rest:
            entered.pop()
        elif word == "id" and rest:
            backend_id = rest
        elif word == "done":
            done = True
    if done and status == 0 and not child.timed_out:
        return ProbeResult(path, True, backend_id=backend_id)
    if entered:
        where = f"in {_STEPS.get(entered[-1], entered[-1])}"
    elif done:
        where = "at exit, after the probe finished"
    else:
        last = next((line.partition(" ")[2] for line in reversed(lines) if line.startswith("leave ")), "")
        where = f"after {last} returned" if last else "before the first step"
    reason = f"{supervisor.death(child)} {where}"
    stderr = supervisor.last_line(child.err)
    if stderr and not child.timed_out:
        reason += f" (stderr: {stderr})"
    return ProbeResult(path, False, reason + " (in the probe process; not loaded)", backend_id)


def _run_all(paths: list[str], timeout: float, jobs: int) -> dict[str, ProbeResult]:
    helper = helper_path()
    if not os.path.isfile(helper) or not os.access(helper, os.X_OK):
        raise ProbeUnavailableError(f"the plugin probe {helper} is missing or not executable")
    env = supervisor.child_environment()
    starts = [functools.partial(_start, path, helper, env, timeout) for path in paths]
    with contextlib.closing(supervisor.supervise(starts, jobs)) as ended:
        return {child.argv[-1]: _verdict(child, helper) for child in ended}


def probe_files(paths: Iterable[str], timeout: float | None = None, use_cache: bool = True,
                jobs: int | None = None) -> dict[str, ProbeResult]:
    """The verdict of every file in `paths` (by the path given), probing those whose verdict
    is neither in this process's memory nor (with `use_cache`) in the disk cache.

    Raises ProbeUnavailableError when the probe helper cannot be run at all.
    """
    limit = probe_timeout(timeout)
    results: dict[str, ProbeResult] = {}
    keys: dict[str, _Key | None] = {}
    todo: list[str] = []
    for path in paths:
        key = keys[path] = _key(path)
        known = None
        if key is not None and use_cache:
            with _seen_lock:
                known = _seen.get(key)
            if known is None:
                known = _read_cache(key, path)
        if known is not None:
            results[path] = known._replace(path=path, cached=True)
        else:
            todo.append(path)
    if todo:
        started = time.perf_counter()
        fresh = _run_all(todo, limit, max(1, jobs or os.cpu_count() or 1))
        log.debug("probed %d plugin(s) in %.1f ms", len(todo), (time.perf_counter() - started) * 1e3)
        for path, result in fresh.items():
            results[path] = result
            key = keys[path]
            if key is None:
                continue
            with _seen_lock:
                _seen[key] = result
            if not result.reason.startswith("timed out"):
                _write_cache(key, result)
    return results
