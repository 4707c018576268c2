"""The malformed-plugin harness: every broken plugin is reported with its path and reason,
skipped, and the runtime keeps working (Arm NN's dynamic backend unit tests)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import plugnn

from plugnn import Runtime
from plugnn.loader import LoadRecord, load_shared_object, shared_objects

pytestmark = [pytest.mark.plugins, pytest.mark.usefixtures("no_static_backends")]

PluginDir = Callable[..., Path]


def file_records(runtime: Runtime) -> dict[str, LoadRecord]:
    return {os.path.basename(r.path): r for r in runtime.load_report if r.kind == "file"}


def load(directory: Path) -> tuple[list[str], dict[str, LoadRecord]]:
    with Runtime(dynamic_backends_path=directory) as runtime:
        return runtime.backend_ids, file_records(runtime)


def test_valid_plugin_is_loaded(plugin_dir: PluginDir) -> None:
    ids, records = load(plugin_dir("valid"))
    assert ids == ["MockValid"]
    record = records["Mock_Valid_backend.so"]
    assert (record.status, record.backend_id, record.version, record.reason) == ("loaded", "MockValid", "{}.{}".format(
        *plugnn.BACKEND_API_VERSION), "")


def test_multiple_valid_backends_and_versioned_symlinks(plugin_dir: PluginDir) -> None:
    ids, records = load(plugin_dir("valid", "other"))
    assert sorted(ids) == ["MockOther", "MockValid"]
    # Mock_Other_backend.so -> .so.1 -> .so.1.2.3: the first name in order is loaded, the rest are the same file.
    assert records["Mock_Other_backend.so"].status == "loaded"
    for alias in ("Mock_Other_backend.so.1", "Mock_Other_backend.so.1.2.3"):
        assert records[alias].status == "ignored"
        assert records[alias].reason.startswith("same file as ")


@pytest.mark.parametrize("mock, symbol", [
    ("no_get_backend_id", "missing entry point GetBackendId ("),
    ("no_get_version", "missing entry point GetVersion ("),
    ("no_backend_factory", "missing entry point BackendFactory ("),
    ("mangled", "missing entry points GetBackendId, GetVersion, BackendFactory ("),
])
def test_missing_entry_point_is_rejected(plugin_dir: PluginDir, mock: str, symbol: str) -> None:
    directory = plugin_dir(mock, "valid")
    ids, records = load(directory)
    assert ids == ["MockValid"], "the runtime keeps working with the valid plugin"
    (record,) = [r for name, r in records.items() if name != "Mock_Valid_backend.so"]
    assert record.status == "rejected"
    assert symbol in record.reason
    assert record.path.startswith(str(directory))


def test_mangled_plugin_really_exports_cxx_names(mock_out_dir: Path) -> None:
    import ctypes

    (path,) = (mock_out_dir / "mangled").glob("*_backend.so")
    lib = ctypes.CDLL(str(path))
    assert lib["_Z12GetBackendIdv"] is not None
    with pytest.raises(AttributeError):
        lib["GetBackendId"]


@pytest.mark.parametrize("mock, reason", [
    ("null_id", "GetBackendId returned NULL"),
    ("empty_id", "empty backend id"),
    ("bad_chars_id", "backend id 'Mock-Bad.Id' has characters other than"),
    ("reserved_id", "backend id 'Host' is reserved"),
    ("long_id", "longer than 64 characters"),
    ("major_2", "backend API version 2.0 is not compatible with the runtime's {}.{}".format(*plugnn.BACKEND_API_VERSION)),
    ("newer_minor", "backend API version 1.99 is not compatible with the runtime's {}.{}".format(
        *plugnn.BACKEND_API_VERSION)),
    ("factory_null", "BackendFactory returned NULL"),
    ("struct_too_small", "lacks the required function create_workload_factory"),
    ("missing_dependency", "dlopen failed"),
])
def test_malformed_plugin_is_rejected_with_reason(plugin_dir: PluginDir, mock: str, reason: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    directory = plugin_dir(mock)
    with caplog.at_level("WARNING", logger="plugnn"):
        ids, records = load(directory)
    assert ids == []
    (record,) = records.values()
    assert record.status == "rejected"
    assert reason in record.reason
    assert record.path in caplog.text and reason in caplog.text


@pytest.mark.parametrize("mock", ["no_get_backend_id", "mangled", "null_id", "bad_chars_id", "major_2", "newer_minor",
                                  "factory_null", "missing_dependency"])
def test_a_plugin_the_probe_shows_unfit_is_never_loaded_here(plugin_dir: PluginDir, mock: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe is the only door: a file it shows the loader would refuse (no entry points, a
    NULL or bad id, an incompatible version, a NULL backend, dlopen failing) is refused on what
    the probe saw, and never dlopen'ed by this process (its constructors never run here)."""
    import plugnn.loader

    opened: list[str] = []
    real = plugnn.loader.load_shared_object

    def recording(path: str, *args: object) -> object:
        opened.append(path)
        return real(path, *args)

    monkeypatch.setattr(plugnn.loader, "load_shared_object", recording)
    ids, records = load(plugin_dir(mock))
    (record,) = records.values()
    assert ids == [] and record.status == "rejected" and "(seen by the probe; not loaded)" in record.reason
    assert opened == []


def test_missing_dependency_reason_names_the_library(plugin_dir: PluginDir) -> None:
    _, records = load(plugin_dir("missing_dependency"))
    (record,) = records.values()
    assert "cannot open shared object file" in record.reason


def test_older_minor_with_a_shorter_struct_is_accepted(plugin_dir: PluginDir) -> None:
    with Runtime(dynamic_backends_path=plugin_dir("older_minor")) as runtime:
        (backend_id,) = runtime.backend_ids
        backend = runtime.backend(backend_id)
        # Functions past the struct_size it reported are absent, never called.
        assert not backend.has("create_memory_manager")
        assert not backend.has("set_option")
        assert backend.create_memory_manager() is None
        assert backend.create_context() is None
        assert backend.create_workload_factory() is not None


def test_older_minor_is_accepted_by_a_newer_runtime_minor(mock_out_dir: Path) -> None:
    (path,) = (mock_out_dir / "valid").glob("*_backend.so")
    shared = load_shared_object(str(path), api_version=(1, 9))
    assert shared.version == plugnn.BACKEND_API_VERSION
    shared.close()


def test_same_id_in_two_directories_first_wins(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = plugin_dir("twin", name="first"), plugin_dir("valid", name="second")
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", f"{first}:{second}")
    with Runtime() as runtime:
        assert runtime.backend_ids == ["MockValid"]
        assert runtime.backend("MockValid").get_option("which") == "twin"
        records = file_records(runtime)
        assert records["Mock_Valid_backend.so"].status == "rejected"
        assert records["Mock_Valid_backend.so"].path.startswith(str(second))
        assert "a backend with id 'MockValid' is already loaded" in records["Mock_Valid_backend.so"].reason


def test_static_backend_id_wins_over_plugin(plugin_dir: PluginDir) -> None:
    from plugnn import BackendRegistry
    from plugnn.backend import Backend

    class Static(Backend):
        def is_layer_supported(self, layer):  # type: ignore[no-untyped-def]
            raise AssertionError("not called")

        def create_workload_factory(self, memory_manager=None):  # type: ignore[no-untyped-def]
            raise AssertionError("not called")

    BackendRegistry.register("MockValid", Static)
    with Runtime(dynamic_backends_path=plugin_dir("valid")) as runtime:
        assert runtime.backend_ids == ["MockValid"]
        assert runtime.backend("MockValid").origin == "static"
        assert "already loaded" in file_records(runtime)["Mock_Valid_backend.so"].reason


def test_chain_of_symlinks_and_broken_link(plugin_dir: PluginDir, tmp_path: Path) -> None:
    directory = plugin_dir("valid")
    real = directory / "Mock_Valid_backend.so"
    elsewhere = tmp_path / "store"
    elsewhere.mkdir()
    moved = elsewhere / "Mock_Valid_backend.so.1.2.3"
    real.rename(moved)
    (directory / "Mock_Valid_backend.so.1.2").symlink_to(moved)
    (directory / "Mock_Valid_backend.so.1").symlink_to("Mock_Valid_backend.so.1.2")
    (directory / "Mock_Valid_backend.so").symlink_to("Mock_Valid_backend.so.1")
    (directory / "Mock_Gone_backend.so").symlink_to(tmp_path / "nothing_here.so")
    ids, records = load(directory)
    assert ids == ["MockValid"]
    assert records["Mock_Valid_backend.so"].status == "loaded"
    assert records["Mock_Valid_backend.so.1"].status == "ignored"
    assert records["Mock_Valid_backend.so.1.2"].status == "ignored"
    assert records["Mock_Gone_backend.so"].status == "ignored"
    assert records["Mock_Gone_backend.so"].reason.startswith("broken symlink to ")


def test_text_file_with_a_valid_name_is_rejected(plugin_dir: PluginDir) -> None:
    directory = plugin_dir("valid")
    (directory / "Mock_Text_backend.so").write_text("this is not an ELF file\n")
    ids, records = load(directory)
    assert ids == ["MockValid"]
    assert records["Mock_Text_backend.so"].status == "rejected"
    assert "dlopen failed" in records["Mock_Text_backend.so"].reason


def test_other_files_and_directories_are_not_candidates(plugin_dir: PluginDir) -> None:
    directory = plugin_dir("valid")
    (directory / "README.txt").write_text("x")
    (directory / "libsomething.so").write_text("x")
    (directory / "Mock_Dir_backend.so").mkdir()
    ids, records = load(directory)
    assert ids == ["MockValid"]
    assert set(records) == {"Mock_Valid_backend.so", "Mock_Dir_backend.so"}
    assert records["Mock_Dir_backend.so"].reason == "not a regular file"


def test_same_directory_twice_loads_each_file_once(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = plugin_dir("valid")
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", f"{directory}:{directory}/")
    with Runtime() as runtime:
        assert runtime.backend_ids == ["MockValid"]
        assert runtime.backend_paths == [str(directory)]


def test_shared_objects_order_is_deterministic(plugin_dir: PluginDir) -> None:
    d1 = plugin_dir("valid", "other", name="d1")
    d2 = plugin_dir("twin", name="d2")
    found = [os.path.relpath(p, d1.parent) for p in shared_objects([str(d2), str(d1)])]
    assert found == ["d2/Mock_Twin_backend.so", "d1/Mock_Other_backend.so", "d1/Mock_Valid_backend.so"]


def test_dynamic_loading_can_be_disabled(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", str(plugin_dir("valid")))
    with Runtime(dynamic_backends=False) as runtime:
        assert runtime.backend_ids == []
        assert runtime.load_report == []
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", "")
    with Runtime() as runtime:
        assert runtime.backend_ids == []


def test_a_rejected_preferred_backend_is_explained(plugin_dir: PluginDir) -> None:
    from plugnn.errors import UnknownBackendError

    with Runtime(dynamic_backends_path=plugin_dir("major_2", "valid")) as runtime:
        with pytest.raises(UnknownBackendError) as info:
            runtime.backend("MockMajor2")
    assert "rejected at load" in str(info.value) and "2.0 is not compatible" in str(info.value)
