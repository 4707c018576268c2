"""backend_paths: build-time default, environment variable, override, validation."""

from pathlib import Path

import pytest

from plugnn import loader
from plugnn.loader import ENV_VAR, LoadRecord, backend_paths


def test_default_is_the_bundled_directory_then_the_installed_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert backend_paths() == [loader.BUNDLED_DIR, loader.INSTALLED_TOKEN]
    assert Path(loader.BUNDLED_DIR, "Plugnn_CpuRef_backend.so").is_file()


def test_environment_replaces_default_and_keeps_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv(ENV_VAR, f"{b}:{a}")
    assert backend_paths() == [str(b), str(a)]


def test_override_replaces_environment_and_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_VAR, "/nonexistent")
    assert backend_paths(tmp_path) == [str(tmp_path)]


def test_invalid_paths_are_reported_and_dropped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    good = tmp_path / "good"
    good.mkdir()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    monkeypatch.setenv(ENV_VAR, f"relative/dir:{tmp_path}/missing:{a_file}:{good}:{good}/:{good}")
    records: list[LoadRecord] = []
    with caplog.at_level("WARNING", logger="plugnn"):
        assert backend_paths(records=records) == [str(good)]
    reasons = {r.path: r.reason for r in records}
    assert reasons == {
        "relative/dir": "not an absolute path",
        f"{tmp_path}/missing": "does not exist",
        str(a_file): "not a directory",
    }
    assert all(r.status == "ignored" and r.kind == "directory" for r in records)
    assert "relative/dir" in caplog.text


def test_invalid_override_gives_empty_list(tmp_path: Path) -> None:
    records: list[LoadRecord] = []
    assert backend_paths(tmp_path / "nope", records) == []
    assert records[0].reason == "does not exist"


def test_empty_environment_disables_dynamic_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "")
    assert backend_paths() == []


def test_build_time_list_with_several_entries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(loader._build_config, "DYNAMIC_BACKEND_PATHS", f"{tmp_path}:{{bundled}}")
    assert backend_paths() == [str(tmp_path), loader.BUNDLED_DIR]
