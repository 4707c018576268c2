"""Dynamic backend discovery and loading (Arm NN's DynamicBackendUtils, in Python).

The procedure: `backend_paths` gives the directories to search, `shared_objects`
the candidate files in them, `load_shared_object` opens one and checks its entry
points, id and version, and `create_backend` calls its factory and checks the
backend object. `load_dynamic_backends` runs all of it, logging and skipping every
failure, and returns the backends with one `LoadRecord` per directory and file.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

from plugnn import _build_config
from plugnn._abi import NULL, covers, ffi
from plugnn.backend import MAX_ID_LENGTH, backend_id_problem
from plugnn.errors import BackendLoadError
from plugnn.native import NativeBackend, SharedObject

log = logging.getLogger("plugnn")

ENV_VAR = "PLUGNN_DYNAMIC_BACKEND_PATHS"
BUNDLED_TOKEN = "{bundled}"
BUNDLED_DIR = os.path.join(_build_config.INSTALL_DIR, "backends")
BACKEND_API_VERSION: tuple[int, int] = _build_config.BACKEND_API_VERSION
ENTRY_POINTS = ("GetBackendId", "GetVersion", "BackendFactory")
REQUIRED_FUNCTIONS = ("destroy", "is_layer_supported", "create_workload_factory")

_FILENAME = re.compile(r"[A-Za-z0-9]+_[A-Za-z0-9]+_backend\.so(?:\.[0-9]+)*")

Status = Literal["loaded", "rejected", "ignored"]


class LoadRecord(NamedTuple):
    """What happened to one directory or file the loader considered.

    For a directory, "loaded" means it was searched. For a file, "loaded" means its
    backend is usable; "rejected" means it was a backend candidate that failed a
    check; "ignored" means it was passed over (a duplicate or a broken link).
    """

    path: str
    kind: Literal["directory", "file", "static"]
    status: Status
    backend_id: str | None = None
    version: str | None = None
    reason: str = ""

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
    list fixed at build time, with {bundled} replaced by the package's backends directory."""
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
    when given) and dropped. An empty result disables dynamic loading.
    """
    candidates = [os.fspath(override)] if override is not None else default_backend_paths()
    paths: list[str] = []
    for path in candidates:
        reason = is_path_valid(path)
        if reason:
            _report(records, LoadRecord(path, "directory", "ignored", reason=reason))
        elif os.path.normpath(path) not in paths:
            paths.append(os.path.normpath(path))
    return paths


def is_backend_filename(name: str | os.PathLike[str]) -> bool:
    """True when the file name follows <vendor>_<name>_backend.so[.<version>]."""
    return _FILENAME.fullmatch(os.path.basename(os.fspath(name))) is not None


def shared_objects(paths: Iterable[str], records: list[LoadRecord] | None = None) -> list[str]:
    """Candidate backend files in `paths`, each real file once, in a deterministic order.

    Directories are taken in the given order and their entries sorted by name. Symlinks
    are followed; a broken one is reported; a file reached again (through a link or a
    repeated directory) is reported as a duplicate and skipped.
    """
    seen: dict[str, str] = {}
    found: list[str] = []
    for directory in paths:
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            _report(records, LoadRecord(directory, "directory", "ignored", reason=f"cannot list: {exc}"))
            continue
        _report(records, LoadRecord(directory, "directory", "loaded", reason="searched"))
        for name in filter(is_backend_filename, names):
            path = os.path.join(directory, name)
            real = os.path.realpath(path)
            if not os.path.exists(real):
                _report(records, LoadRecord(path, "file", "ignored", reason=f"broken symlink to {real}"))
            elif not os.path.isfile(real):
                _report(records, LoadRecord(path, "file", "ignored", reason="not a regular file"))
            elif real in seen:
                _report(records, LoadRecord(path, "file", "ignored",
                                            reason=f"same file as {seen[real]} (loaded once)"))
            else:
                seen[real] = path
                found.append(path)
    return found


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
                          api_version: tuple[int, int] = BACKEND_API_VERSION) -> list[NativeBackend]:
    """Load every valid backend in `paths`, skipping ids in `taken_ids` (first wins).

    Never raises for a bad plugin: each failure is logged and recorded, and skipped.
    """
    taken = set(taken_ids)
    backends: list[NativeBackend] = []
    for path in shared_objects(paths, records):
        try:
            shared_object = load_shared_object(path, api_version)
        except BackendLoadError as exc:
            _report(records, LoadRecord(path, "file", "rejected", exc.backend_id, reason=exc.reason))
            continue
        version = f"{shared_object.version[0]}.{shared_object.version[1]}"
        if shared_object.backend_id in taken:
            shared_object.close()
            _report(records, LoadRecord(path, "file", "rejected", shared_object.backend_id, version,
                                        f"a backend with id {shared_object.backend_id!r} is already loaded"))
            continue
        try:
            backend = create_backend(shared_object)
        except BackendLoadError as exc:
            shared_object.close()
            _report(records, LoadRecord(path, "file", "rejected", exc.backend_id, version, exc.reason))
            continue
        taken.add(backend.backend_id)
        backends.append(backend)
        _report(records, LoadRecord(path, "file", "loaded", backend.backend_id, version))
    return backends
