"""Dynamic backend discovery and loading (Arm NN's DynamicBackendUtils, in Python).

The procedure: `backend_paths` gives the search list (directories, and the token
{installed} for the backends installed distributions name through the entry-point group
plugnn.backends), `shared_objects` the candidate files of directories, `installed_backends`
those of the entry points, `probe.probe_files` runs each candidate once in a child process
(plugnn-probe) so that one which crashes or hangs is rejected before this process loads it,
`load_shared_object` opens one and checks its entry points, id and version, and
`create_backend` calls its factory and checks the backend object. `load_dynamic_backends`
runs all of it, logging and skipping every failure, and returns the backends with one
`LoadRecord` per directory, entry point and file.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from plugnn import _build_config, probe
from plugnn._abi import NULL, covers, ffi
from plugnn.backend import MAX_ID_LENGTH, Backend, backend_id_problem
from plugnn.errors import BackendLoadError, ProbeUnavailableError
from plugnn.native import NativeBackend, SharedObject

log = logging.getLogger("plugnn")

ENV_VAR = "PLUGNN_DYNAMIC_BACKEND_PATHS"
BUNDLED_TOKEN = "{bundled}"
INSTALLED_TOKEN = "{installed}"  # the backends of installed distributions (ENTRY_POINT_GROUP)
ENTRY_POINT_GROUP = "plugnn.backends"
BUNDLED_DIR = os.path.join(_build_config.INSTALL_DIR, "backends")
BACKEND_API_VERSION: tuple[int, int] = _build_config.BACKEND_API_VERSION
ENTRY_POINTS = ("GetBackendId", "GetVersion", "BackendFactory")
REQUIRED_FUNCTIONS = ("destroy", "is_layer_supported", "create_workload_factory")

_FILENAME = re.compile(r"[A-Za-z0-9]+_[A-Za-z0-9]+_backend\.so(?:\.[0-9]+)*")

Status = Literal["loaded", "rejected", "ignored"]


class LoadRecord(NamedTuple):
    """What happened to one directory or file the loader considered.

    For a directory, "loaded" means it was searched; for an entry point, that it named
    backends. For a file, "loaded" means its backend is usable; "rejected" means it was
    a backend candidate that failed a check (the probe's included); "ignored" means it
    was passed over (a duplicate or a broken link). `source` is the installed
    distribution that named the file ("acme-plugnn 0.1.0"), else "". `probe` says how
    the probe judged a file before it was loaded: "passed", "passed (cached)", "failed",
    "skipped" (probe="none") or "unavailable" (the helper could not run), "" when the
    file never got that far.
    """

    path: str
    kind: Literal["directory", "file", "static", "entry_point"]
    status: Status
    backend_id: str | None = None
    version: str | None = None
    reason: str = ""
    source: str = ""
    probe: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self._asdict())


def _report(records: list[LoadRecord] | None, record: LoadRecord) -> None:
    level = logging.WARNING if record.status == "rejected" or (
        record.kind == "directory" and record.status == "ignored") else logging.DEBUG
    log.log(level, "dynamic backend %s %s %s%s", record.kind, record.path, record.status,
            f": {record.reason}" if record.reason else "")
    if records is not None:
        records.append(record)


def default_backend_paths() -> list[str]:
    """The search list before validation: PLUGNN_DYNAMIC_BACKEND_PATHS when set, else the
    list fixed at build time, with {bundled} replaced by the package's backends directory
    ({installed} stays, for `load_dynamic_backends`)."""
    raw = os.environ.get(ENV_VAR)
    if raw is None:
        raw = _build_config.DYNAMIC_BACKEND_PATHS
    return [p.replace(BUNDLED_TOKEN, BUNDLED_DIR) for p in raw.split(":") if p]


def is_path_valid(path: str) -> str:
    """'' when `path` can be searched, else the reason it cannot."""
    if not os.path.isabs(path):
        return "not an absolute path"
    if not os.path.exists(path):
        return "does not exist"
    if not os.path.isdir(path):
        return "not a directory"
    if not os.access(path, os.R_OK | os.X_OK):
        return "not readable"
    return ""


def backend_paths(override: str | os.PathLike[str] | None = None,
                  records: list[LoadRecord] | None = None) -> list[str]:
    """The directories to search, in order, without duplicates or invalid entries.

    `override` (one directory) replaces both the environment variable and the
    build-time list. Invalid entries are reported (logged, and appended to `records`
    when given) and dropped. The token {installed} is kept (once) where it stands. An
    empty result disables dynamic loading.
    """
    candidates = [os.fspath(override)] if override is not None else default_backend_paths()
    paths: list[str] = []
    for path in candidates:
        if path == INSTALLED_TOKEN:
            if path not in paths:
                paths.append(path)
            continue
        reason = is_path_valid(path)
        if reason:
            _report(records, LoadRecord(path, "directory", "ignored", reason=reason))
        elif os.path.normpath(path) not in paths:
            paths.append(os.path.normpath(path))
    return paths


def is_backend_filename(name: str | os.PathLike[str]) -> bool:
    """True when the file name follows <vendor>_<name>_backend.so[.<version>]."""
    return _FILENAME.fullmatch(os.path.basename(os.fspath(name))) is not None


def shared_objects(paths: Iterable[str], records: list[LoadRecord] | None = None,
                   seen: dict[str, str] | None = None, source: str = "") -> list[str]:
    """Candidate backend files in `paths`, each real file once, in a deterministic order.

    Directories are taken in the given order and their entries sorted by name. Symlinks
    are followed; a broken one is reported; a file reached again (through a link or a
    repeated directory, or already in `seen`: real path -> first path) is reported as a
    duplicate and skipped. `source` goes into the records (the distribution).
    """
    seen = {} if seen is None else seen
    found: list[str] = []
    for directory in paths:
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            _report(records, LoadRecord(directory, "directory", "ignored", reason=f"cannot list: {exc}",
                                        source=source))
            continue
        _report(records, LoadRecord(directory, "directory", "loaded", reason="searched", source=source))
        for name in filter(is_backend_filename, names):
            path = _candidate(os.path.join(directory, name), records, seen, source)
            if path is not None:
                found.append(path)
    return found


def _candidate(path: str, records: list[LoadRecord] | None, seen: dict[str, str], source: str) -> str | None:
    """`path` when it is a backend file not seen before, else None (reported)."""
    real = os.path.realpath(path)
    if not os.path.exists(real):
        _report(records, LoadRecord(path, "file", "ignored", reason=f"broken symlink to {real}", source=source))
    elif not os.path.isfile(real):
        _report(records, LoadRecord(path, "file", "ignored", reason="not a regular file", source=source))
    elif real in seen:
        _report(records, LoadRecord(path, "file", "ignored", reason=f"same file as {seen[real]} (loaded once)",
                                    source=source))
    else:
        seen[real] = path
        return path
    return None


# ---- installed backends: the plugnn.backends entry-point group ---------------------------------


class Candidate(NamedTuple):
    """One backend to try, in search order: a plugin file, or (from an entry point) a
    Python backend class with the id it gets; `source` names the distribution."""

    path: str
    source: str = ""
    backend_class: type[Backend] | None = None
    backend_id: str = ""


def _distribution(entry_point: Any) -> str:
    dist = getattr(entry_point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"


def installed_backends(records: list[LoadRecord] | None = None,
                       seen: dict[str, str] | None = None) -> list[Candidate]:
    """The backends installed distributions name through the entry-point group
    plugnn.backends, in the order of distribution name, then entry-point name.

    An entry point's object is a plugnn.Backend subclass (a Python backend: its id is the
    entry point's name, the class is called without arguments once per runtime), or a
    path, a sequence of paths, or a function returning either: absolute paths of plugin
    files (named <vendor>_<name>_backend.so[.<version>]) or of directories to search.
    A distribution whose entry point fails to load, or names something else, is reported
    and skipped.
    """
    seen = {} if seen is None else seen
    found: list[Candidate] = []
    if not _group_named_on_path():
        return found
    from importlib.metadata import entry_points

    points = sorted(entry_points(group=ENTRY_POINT_GROUP),
                    key=lambda ep: (getattr(getattr(ep, "dist", None), "name", "") or "", ep.name))
    for point in points:
        source = _distribution(point)
        where = f"{ENTRY_POINT_GROUP}:{point.name} = {point.value}"
        try:
            named = _entry_point_paths(point)
        except Exception as exc:  # a broken distribution must not stop the runtime
            _report(records, LoadRecord(where, "entry_point", "rejected", reason=str(exc), source=source))
            continue
        if isinstance(named, type):
            _report(records, LoadRecord(where, "entry_point", "loaded", point.name, reason="a Python backend",
                                        source=source))
            found.append(Candidate(where, source, named, point.name))
            continue
        _report(records, LoadRecord(where, "entry_point", "loaded", reason="names " + (", ".join(named) or "nothing"),
                                    source=source))
        for path in named:
            if not os.path.isabs(path) or not os.path.exists(path):
                reason = "not an absolute path" if not os.path.isabs(path) else "does not exist"
                _report(records, LoadRecord(path, "file", "ignored", reason=reason, source=source))
            elif os.path.isdir(path):
                reason = is_path_valid(path)
                if reason:
                    _report(records, LoadRecord(path, "directory", "ignored", reason=reason, source=source))
                else:
                    found.extend(Candidate(p, source) for p in shared_objects([path], records, seen, source))
            elif not is_backend_filename(path):
                _report(records, LoadRecord(path, "file", "rejected", source=source,
                                            reason="not named <vendor>_<name>_backend.so[.<version>]"))
            else:
                candidate = _candidate(path, records, seen, source)
                if candidate is not None:
                    found.append(Candidate(candidate, source))
    return found


def _group_named_on_path() -> bool:
    """Whether any distribution on sys.path declares the group: a look at the entry_points.txt
    of each *.dist-info / *.egg-info directory, so that a runtime without installed backends
    does not pay for importing importlib.metadata (several times the rest of its start-up)."""
    import sys

    marker = f"[{ENTRY_POINT_GROUP}]"
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                infos = [e.path for e in listing if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:
            if os.path.isfile(entry):  # a zip on sys.path: let importlib.metadata look inside
                return True
            continue
        for info in infos:
            try:
                with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as f:
                    if marker in f.read():
                        return True
            except OSError:
                continue
    return False


def _entry_point_paths(point: Any) -> list[str] | type[Backend]:
    try:
        value = point.load()
    except Exception as exc:
        raise ValueError(f"cannot import it: {type(exc).__name__}: {exc}") from None
    if isinstance(value, type):
        if issubclass(value, Backend):
            return value
        raise ValueError(f"{value.__name__} is a class but not a plugnn.Backend")
    if callable(value):
        try:
            value = value()
        except Exception as exc:
            raise ValueError(f"calling it failed: {type(exc).__name__}: {exc}") from None
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    try:
        paths = [os.fspath(p) for p in value]
    except TypeError:
        raise ValueError(f"it gives {type(value).__name__}, not paths (a str, os.PathLike or a list of "
                         "them) or a plugnn.Backend subclass") from None
    return paths


def is_backend_version_compatible(version: tuple[int, int],
                                  api_version: tuple[int, int] = BACKEND_API_VERSION) -> bool:
    """Same major version, and a minor version no newer than the runtime's."""
    return version[0] == api_version[0] and version[1] <= api_version[1]


def load_shared_object(path: str, api_version: tuple[int, int] = BACKEND_API_VERSION) -> SharedObject:
    """Open `path`, resolve the entry points and check the id and version.

    Raises BackendLoadError naming the file and the reason; the library is closed again
    on any failure.
    """
    try:
        lib = ffi.dlopen(path, ffi.RTLD_NOW | ffi.RTLD_LOCAL)
    except OSError as exc:
        raise BackendLoadError(path, f"dlopen failed: {exc}") from None
    try:
        return _check_entry_points(path, lib, api_version)
    except BackendLoadError:
        ffi.dlclose(lib)
        raise


def _check_entry_points(path: str, lib: Any, api_version: tuple[int, int]) -> SharedObject:
    missing = []
    for symbol in ENTRY_POINTS:
        try:
            getattr(lib, symbol)
        except (AttributeError, ffi.error):
            missing.append(symbol)
    if missing:
        raise BackendLoadError(
            path, f"missing entry point{'s' if len(missing) > 1 else ''} {', '.join(missing)} (each must be "
                  "exported with C linkage: extern \"C\" and PLUGNN_BACKEND_EXPORT)")
    raw_id = lib.GetBackendId()
    if raw_id == NULL:
        raise BackendLoadError(path, "GetBackendId returned NULL")
    backend_id = ffi.string(raw_id, MAX_ID_LENGTH + 1).decode("utf-8", errors="replace")
    problem = backend_id_problem(backend_id)
    if problem:
        raise BackendLoadError(path, problem)
    major, minor = ffi.new("uint32_t*"), ffi.new("uint32_t*")
    lib.GetVersion(major, minor)
    version = (int(major[0]), int(minor[0]))
    if not is_backend_version_compatible(version, api_version):
        raise BackendLoadError(
            path, f"backend API version {version[0]}.{version[1]} is not compatible with the runtime's "
                  f"{api_version[0]}.{api_version[1]} (needs the same major version and a minor version "
                  f"<= {api_version[1]})", backend_id)
    return SharedObject(path, lib, backend_id, version)


def create_backend(shared_object: SharedObject) -> NativeBackend:
    """Call the plugin's BackendFactory and check the object it returns."""
    path, backend_id = shared_object.path, shared_object.backend_id
    c_backend = shared_object.call_factory()
    if c_backend == NULL:
        raise BackendLoadError(path, "BackendFactory returned NULL", backend_id)
    for name in REQUIRED_FUNCTIONS:
        if not covers(c_backend, "pn_backend", name) or getattr(c_backend, name) == NULL:
            size = int(c_backend.struct_size)
            if covers(c_backend, "pn_backend", "destroy") and c_backend.destroy != NULL:
                c_backend.destroy(c_backend)
            raise BackendLoadError(
                path, f"backend object lacks the required function {name} (struct_size {size}, "
                      f"needs at least {_required_size()})", backend_id)
    return NativeBackend(shared_object, c_backend)


def _required_size() -> int:
    from plugnn._abi import field_end

    return max(field_end("pn_backend", name) for name in REQUIRED_FUNCTIONS)


def load_dynamic_backends(paths: Iterable[str], taken_ids: Iterable[str] = (),
                          records: list[LoadRecord] | None = None,
                          api_version: tuple[int, int] = BACKEND_API_VERSION,
                          probe_mode: str = "process", isolate: Mapping[str, str] | None = None,
                          watchdog: float | None = None) -> list[Backend]:
    """Load every valid backend of the search list `paths` (directories and {installed}),
    skipping ids in `taken_ids` (first wins).

    With probe_mode "process" every plugin file this process has not judged yet is first
    run by plugnn-probe in a child process, and one that crashes or hangs there is
    rejected without being loaded; when the probe cannot run at all, the files are loaded
    unprobed after one warning. Never raises for a bad plugin: each failure is logged and
    recorded, and skipped.

    `isolate` (backend id -> "process") names backends to run in a worker process of their own
    (plugnn.isolation; `watchdog`: the seconds one of its calls may take): their files are never
    opened in this process. The id comes from the probe's verdict; a file without one (probe
    "none") is identified in a worker, and loaded here only if its id is not to be isolated.
    """
    isolate = isolate or {}
    taken = set(taken_ids)
    seen: dict[str, str] = {}
    candidates: list[Candidate] = []
    for path in paths:
        if path == INSTALLED_TOKEN:
            candidates.extend(installed_backends(records, seen))
        else:
            candidates.extend(Candidate(p) for p in shared_objects([path], records, seen))
    verdicts, probe_state = _probe(candidates, probe_mode)
    backends: list[Backend] = []
    for candidate in candidates:
        if candidate.backend_class is not None:
            backend = _python_backend(candidate, taken, records)
        else:
            verdict = verdicts.get(candidate.path)
            state = probe_state if verdict is None else (
                "failed" if not verdict.ok else "passed (cached)" if verdict.cached else "passed")
            if verdict is not None and not verdict.ok:
                _report(records, LoadRecord(candidate.path, "file", "rejected", verdict.backend_id, None,
                                            verdict.reason, candidate.source, state))
                continue
            backend = None
            if isolate and (verdict is None or verdict.backend_id is None or verdict.backend_id in isolate):
                backend = _isolated_backend(candidate, taken, records, api_version, state, isolate, watchdog,
                                            verdict.backend_id if verdict is not None else None)
                if backend is None:
                    continue
            if backend is None or backend is _IN_PROCESS:
                backend = _native_backend(candidate, taken, records, api_version, state)
        if backend is not None:
            taken.add(backend.backend_id)
            backends.append(backend)
    return backends


def _probe(candidates: list[Candidate], mode: str) -> tuple[dict[str, probe.ProbeResult], str]:
    files = [c.path for c in candidates if c.backend_class is None]
    if mode == "none" or not files:
        return {}, "skipped"
    try:
        return probe.probe_files(files), ""
    except ProbeUnavailableError as exc:
        log.warning("%s; loading %d plugin(s) without probing them (docs/backends.md, 'Probing')", exc, len(files))
        return {}, "unavailable"


def _python_backend(candidate: Candidate, taken: set[str], records: list[LoadRecord] | None) -> Backend | None:
    backend_id, path, source = candidate.backend_id, candidate.path, candidate.source
    problem = backend_id_problem(backend_id) or (
        f"a backend with id {backend_id!r} is already loaded" if backend_id in taken else "")
    backend_class = candidate.backend_class
    if not problem and backend_class is not None:
        try:
            backend = backend_class()
        except Exception as exc:  # a broken Python backend is skipped like a broken plugin
            problem = f"{backend_class.__name__}() failed: {type(exc).__name__}: {exc}"
    if problem:
        _report(records, LoadRecord(path, "file", "rejected", backend_id, reason=problem, source=source))
        return None
    backend.backend_id, backend.origin, backend.source = backend_id, path, source
    _report(records, LoadRecord(path, "file", "loaded", backend_id, "{}.{}".format(*backend.version),
                                source=source))
    return backend


_IN_PROCESS: Any = object()  # _isolated_backend's answer for a file whose backend is not to be isolated


def _isolated_backend(candidate: Candidate, taken: set[str], records: list[LoadRecord] | None,
                      api_version: tuple[int, int], probe_state: str, isolate: Mapping[str, str],
                      watchdog: float | None, expected_id: str | None) -> Backend | None:
    """The file's backend in a worker process (plugnn.isolation); None when rejected (recorded), or
    _IN_PROCESS when the file, identified in a worker, holds a backend that is not to be isolated."""
    from plugnn.errors import BackendError
    from plugnn.isolation.proxy import IsolatedBackend

    path, source = candidate.path, candidate.source
    if expected_id is not None and expected_id in taken:
        _report(records, LoadRecord(path, "file", "rejected", expected_id, None,
                                    f"a backend with id {expected_id!r} is already loaded", source, probe_state))
        return None
    try:
        backend = IsolatedBackend(path, api_version, watchdog, source, expected_id)
    except BackendLoadError as exc:
        _report(records, LoadRecord(path, "file", "rejected", exc.backend_id or expected_id, reason=exc.reason,
                                    source=source, probe=probe_state))
        return None
    except BackendError as exc:  # the worker died or hung while loading the plugin
        _report(records, LoadRecord(path, "file", "rejected", expected_id, reason=f"in its worker process: {exc}",
                                    source=source, probe=probe_state))
        return None
    version = "{}.{}".format(*backend.version)
    if backend.backend_id not in isolate:
        backend.close()
        return _IN_PROCESS
    if backend.backend_id in taken:
        backend.close()
        _report(records, LoadRecord(path, "file", "rejected", backend.backend_id, version,
                                    f"a backend with id {backend.backend_id!r} is already loaded", source,
                                    probe_state))
        return None
    _report(records, LoadRecord(path, "file", "loaded", backend.backend_id, version,
                                f"isolated: runs in worker process {backend.pid}", source, probe_state))
    return backend


def _native_backend(candidate: Candidate, taken: set[str], records: list[LoadRecord] | None,
                    api_version: tuple[int, int], probe_state: str) -> Backend | None:
    path, source = candidate.path, candidate.source
    try:
        shared_object = load_shared_object(path, api_version)
    except BackendLoadError as exc:
        _report(records, LoadRecord(path, "file", "rejected", exc.backend_id, reason=exc.reason, source=source,
                                    probe=probe_state))
        return None
    version = f"{shared_object.version[0]}.{shared_object.version[1]}"
    if shared_object.backend_id in taken:
        shared_object.close()
        _report(records, LoadRecord(path, "file", "rejected", shared_object.backend_id, version,
                                    f"a backend with id {shared_object.backend_id!r} is already loaded", source,
                                    probe_state))
        return None
    try:
        backend = create_backend(shared_object)
    except BackendLoadError as exc:
        shared_object.close()
        _report(records, LoadRecord(path, "file", "rejected", exc.backend_id, version, exc.reason, source,
                                    probe_state))
        return None
    backend.source = source
    _report(records, LoadRecord(path, "file", "loaded", backend.backend_id, version, source=source,
                                probe=probe_state))
    return backend
