"""Probing in a child process: a plugin that crashes, aborts, exits or hangs in an entry
point, in a constructor or in backend creation is rejected with what happened where, by
Runtime() and by `plugnn backends`, and the process lives. Verdicts are cached per file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import plugnn
from plugnn import ConfigurationError, Runtime, probe, supervisor
from plugnn.loader import LoadRecord

pytestmark = [pytest.mark.plugins, pytest.mark.usefixtures("no_static_backends")]

PluginDir = Callable[..., Path]

# mock -> (file, the reason's start). Hangs use a 1 s limit (PLUGNN_PROBE_TIMEOUT below).
CRASHES = {
    "segv_factory": ("Mock_SegvFactory_backend.so", "SIGSEGV in BackendFactory"),
    "abort_constructor": ("Mock_AbortConstructor_backend.so", "SIGABRT in dlopen (loading the library: its constructors)"),
    "exit_get_backend_id": ("Mock_ExitGetBackendId_backend.so", "exit(3) in GetBackendId"),
    "hang_get_version": ("Mock_HangGetVersion_backend.so", "timed out after 1 s in GetVersion"),
    "hang_factory": ("Mock_HangFactory_backend.so", "timed out after 1 s in BackendFactory"),
    "segv_destroy": ("Mock_SegvDestroy_backend.so", "SIGSEGV in pn_backend.destroy"),
}


@pytest.fixture(autouse=True)
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_PROBE_TIMEOUT", "1")
    monkeypatch.delenv("PLUGNN_PROBE", raising=False)
    probe.forget()


def records(runtime: Runtime) -> dict[str, LoadRecord]:
    return {os.path.basename(r.path): r for r in runtime.load_report if r.kind == "file"}


@pytest.mark.parametrize("mock", CRASHES)
def test_runtime_rejects_a_plugin_that_dies_and_lives_on(plugin_dir: PluginDir, mock: str) -> None:
    file, reason = CRASHES[mock]
    with Runtime(dynamic_backends_path=plugin_dir(mock, "valid")) as runtime:
        assert runtime.backend_ids == ["MockValid"], "the valid plugin beside it is loaded"
        record = records(runtime)[file]
        assert (record.status, record.probe) == ("rejected", "failed")
        assert record.reason.startswith(reason), record.reason
        assert record.reason.endswith("(in the probe process; not loaded)")
        assert records(runtime)["Mock_Valid_backend.so"].probe == "passed"


def test_every_crash_is_probed_at_once(plugin_dir: PluginDir) -> None:
    with Runtime(dynamic_backends_path=plugin_dir(*CRASHES, "valid", "other")) as runtime:
        assert sorted(runtime.backend_ids) == ["MockOther", "MockValid"]
        found = records(runtime)
        for file, reason in CRASHES.values():
            assert found[file].reason.startswith(reason)


def test_the_id_read_before_the_crash_is_kept(plugin_dir: PluginDir) -> None:
    with Runtime(dynamic_backends_path=plugin_dir("segv_factory")) as runtime:
        assert records(runtime)["Mock_SegvFactory_backend.so"].backend_id == "MockSegvFactory"
        with pytest.raises(plugnn.UnknownBackendError, match="SIGSEGV in BackendFactory"):
            runtime.backend("MockSegvFactory")


def test_backends_command_always_probes(plugin_dir: PluginDir) -> None:
    directory = plugin_dir("segv_factory", "abort_constructor", "exit_get_backend_id", "hang_factory", "valid")
    env = dict(os.environ, PLUGNN_PROBE="none", PLUGNN_PROBE_TIMEOUT="1")
    result = subprocess.run([sys.executable, "-m", "plugnn", "backends", "--dynamic-backends-path", str(directory)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("MockValid") for line in lines)
    for file, reason in [CRASHES[m] for m in ("segv_factory", "abort_constructor", "exit_get_backend_id",
                                               "hang_factory")]:
        assert any(file in line and "rejected" in line and reason in line for line in lines), (file, result.stdout)


def test_a_verdict_is_cached_per_file_and_a_changed_file_is_probed_again(plugin_dir: PluginDir,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    directory = plugin_dir("valid", "segv_factory")
    with Runtime(dynamic_backends_path=directory) as runtime:
        assert records(runtime)["Mock_Valid_backend.so"].probe == "passed"
    cached = [json.loads(p.read_text()) for p in Path(probe.cache_dir()).glob("*.json")]
    assert any(c["key"][0] == str(directory / "Mock_Valid_backend.so") and c["ok"] for c in cached)

    # A new process (the memory forgotten) finds both verdicts on disk and runs no probe:
    # with the helper gone, the crash is still known.
    probe.forget()
    with monkeypatch.context() as patch:
        patch.setenv("PLUGNN_PROBE_HELPER", str(directory / "no-such-helper"))
        with Runtime(dynamic_backends_path=directory) as runtime:
            found = records(runtime)
            assert found["Mock_Valid_backend.so"].probe == "passed (cached)"
            assert found["Mock_SegvFactory_backend.so"].reason.startswith("SIGSEGV in BackendFactory")

    # The same file, changed on disk (size and mtime): probed again.
    valid = directory / "Mock_Valid_backend.so"
    with valid.open("ab") as f:
        f.write(b"\0" * 16)
    os.utime(valid, ns=(valid.stat().st_atime_ns, valid.stat().st_mtime_ns + 10**9))
    with Runtime(dynamic_backends_path=directory) as runtime:
        assert records(runtime)["Mock_Valid_backend.so"].probe == "passed"


def test_timeouts_are_not_written_to_disk(plugin_dir: PluginDir) -> None:
    directory = plugin_dir("hang_get_version")
    with Runtime(dynamic_backends_path=directory):
        pass
    for path in Path(probe.cache_dir()).glob("*.json"):
        assert "hang_get_version" not in json.loads(path.read_text())["key"][0]


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_probe_none_loads_unprobed(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    kwargs = {"probe": "none"} if how == "argument" else {}
    if how == "environment":
        monkeypatch.setenv("PLUGNN_PROBE", "none")
    with Runtime(dynamic_backends_path=plugin_dir("valid"), **kwargs) as runtime:
        assert runtime.backend_ids == ["MockValid"]
        assert records(runtime)["Mock_Valid_backend.so"].probe == "skipped"


def test_the_argument_wins_over_the_environment(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_PROBE", "none")
    with Runtime(dynamic_backends_path=plugin_dir("segv_factory"), probe="process") as runtime:
        assert records(runtime)["Mock_SegvFactory_backend.so"].status == "rejected"


@pytest.mark.parametrize("helper", ["missing", "not_a_probe"])
def test_without_a_working_probe_plugins_load_unprobed_with_a_warning(
        plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        tmp_path: Path, helper: str) -> None:
    path = tmp_path / "no-such-helper" if helper == "missing" else Path("/bin/true")
    monkeypatch.setenv("PLUGNN_PROBE_HELPER", str(path))
    with caplog.at_level("WARNING", logger="plugnn"):
        with Runtime(dynamic_backends_path=plugin_dir("valid")) as runtime:
            assert runtime.backend_ids == ["MockValid"]
            assert records(runtime)["Mock_Valid_backend.so"].probe == "unavailable"
    expected = "is missing or not executable" if helper == "missing" else "did not start"
    assert expected in caplog.text and "loading 1 plugin(s) without probing them" in caplog.text


@pytest.mark.parametrize("kwargs, env, message", [
    ({"probe": "thread"}, {}, "probe must be one of process, none, not 'thread'"),
    ({}, {"PLUGNN_PROBE": "yes"}, "PLUGNN_PROBE must be one of process, none, not 'yes'"),
])
def test_a_bad_mode_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, str],
                                             env: dict[str, str], message: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigurationError, match=message):
        Runtime(**kwargs)


def test_a_bad_time_limit_is_a_configuration_error(plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_PROBE_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="PLUGNN_PROBE_TIMEOUT must be a number of seconds"):
        Runtime(dynamic_backends_path=plugin_dir("valid"))


def test_the_probe_helper_is_installed_with_the_package() -> None:
    assert os.access(probe.HELPER, os.X_OK), probe.HELPER
    out = subprocess.run([probe.HELPER, "/no/such/plugin.so"], capture_output=True, text=True, timeout=30,
                         env=supervisor.child_environment()).stdout
    assert out.splitlines()[0] == f"plugnn-probe {probe.PROTOCOL}"
    assert out.splitlines()[-1] == "done"
