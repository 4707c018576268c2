"""Backends installed with pip: a distribution names its plugin files, a directory, or a
Python backend class through the entry-point group plugnn.backends; the runtime finds them
where the search list says {installed} (by default after the bundled directory)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from plugnn import Runtime
from plugnn.loader import ENTRY_POINT_GROUP, INSTALLED_TOKEN, LoadRecord

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

pytestmark = [pytest.mark.plugins, pytest.mark.usefixtures("no_static_backends")]

PluginDir = Callable[..., Path]


def install(site: Path, name: str, module_source: str, entry_points: dict[str, str]) -> None:
    """A distribution `name` 1.0 as pip would leave it in `site`: its module and its metadata."""
    module = name.replace("-", "_")
    (site / f"{module}.py").write_text(textwrap.dedent(module_source))
    info = site / f"{module}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{key} = {module}:{value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.setenv(ENV, f"{INSTALLED_TOKEN}")
    return directory


ENV = "PLUGNN_DYNAMIC_BACKEND_PATHS"


def files(runtime: Runtime) -> dict[str, LoadRecord]:
    return {os.path.basename(r.path): r for r in runtime.load_report if r.kind == "file"}


def entry_records(runtime: Runtime) -> list[LoadRecord]:
    return [r for r in runtime.load_report if r.kind == "entry_point"]


def test_a_function_naming_plugin_files(site: Path, plugin_dir: PluginDir) -> None:
    directory = plugin_dir("valid", "other")
    install(site, "acme-one", f"""
        def plugins():
            return [{str(directory / 'Mock_Valid_backend.so')!r}, {str(directory / 'Mock_Other_backend.so')!r}]
        """, {"acme": "plugins"})
    with Runtime() as runtime:
        assert runtime.backend_ids == ["MockValid", "MockOther"]
        record = files(runtime)["Mock_Valid_backend.so"]
        assert (record.status, record.source, record.probe) == ("loaded", "acme-one 1.0", "passed")
        assert runtime.backend("MockValid").source == "acme-one 1.0"
        assert [r.status for r in entry_records(runtime)] == ["loaded"]
        assert {d["backend_id"]: d["source"] for d in runtime.describe()} == {
            "MockValid": "acme-one 1.0", "MockOther": "acme-one 1.0"}


def test_a_directory_and_a_plain_path(site: Path, plugin_dir: PluginDir) -> None:
    directory = plugin_dir("valid", name="dir")
    single = plugin_dir("other", name="single") / "Mock_Other_backend.so.1.2.3"
    install(site, "acme-dir", f"PLUGINS = {str(directory)!r}\nONE = {str(single)!r}\n",
            {"a_dir": "PLUGINS", "b_file": "ONE"})
    with Runtime() as runtime:
        assert runtime.backend_ids == ["MockValid", "MockOther"]


def test_a_python_backend_class(site: Path) -> None:
    install(site, "acme-py", """
        from plugnn.backend import Backend
        from plugnn.layers import SupportResult

        class Refuser(Backend):
            def is_layer_supported(self, layer):
                return SupportResult(False, "AcmePy runs nothing")

            def create_workload_factory(self, memory_manager=None):
                raise NotImplementedError
        """, {"AcmePy": "Refuser"})
    with Runtime() as runtime:
        assert runtime.backend_ids == ["AcmePy"]
        backend = runtime.backend("AcmePy")
        assert (backend.source, backend.origin) == ("acme-py 1.0", f"{ENTRY_POINT_GROUP}:AcmePy = acme_py:Refuser")


def test_broken_entry_points_are_reported_and_skipped(site: Path, plugin_dir: PluginDir) -> None:
    valid = plugin_dir("valid") / "Mock_Valid_backend.so"
    install(site, "acme-broken", f"""
        import os
        GOOD = {str(valid)!r}
        NUMBER = 42
        RELATIVE = "relative/Acme_X_backend.so"
        BADLY_NAMED = {str(valid.parent / 'libacme.so')!r}

        def fails():
            raise RuntimeError("no device")
        """, {"a_good": "GOOD", "b_missing": "no_such_name", "c_fails": "fails", "d_number": "NUMBER",
              "e_relative": "RELATIVE", "f_badly_named": "BADLY_NAMED"})
    (valid.parent / "libacme.so").write_bytes(b"")
    with Runtime() as runtime:
        assert runtime.backend_ids == ["MockValid"]
        reasons = {r.path.split(" = ")[0].split(":")[1]: (r.status, r.reason) for r in entry_records(runtime)}
        assert reasons["b_missing"][0] == "rejected" and "cannot import it: AttributeError" in reasons["b_missing"][1]
        assert reasons["c_fails"] == ("rejected", "calling it failed: RuntimeError: no device")
        assert reasons["d_number"][0] == "rejected" and "gives int, not paths" in reasons["d_number"][1]
        found = files(runtime)
        assert found["Acme_X_backend.so"].reason == "not an absolute path"
        assert found["libacme.so"].reason == "not named <vendor>_<name>_backend.so[.<version>]"


def test_a_crashing_installed_plugin_is_probed_and_rejected(site: Path, plugin_dir: PluginDir) -> None:
    crash = plugin_dir("segv_factory") / "Mock_SegvFactory_backend.so"
    install(site, "acme-crash", f"PATH = {str(crash)!r}\n", {"crash": "PATH"})
    with Runtime() as runtime:
        assert runtime.backend_ids == []
        record = files(runtime)["Mock_SegvFactory_backend.so"]
        assert record.source == "acme-crash 1.0" and record.reason.startswith("SIGSEGV in BackendFactory")


def test_order_bundled_then_installed_first_id_wins(site: Path, plugin_dir: PluginDir,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    first, installed = plugin_dir("valid", name="first"), plugin_dir("twin", name="installed")
    install(site, "acme-twin", f"PATH = {str(installed)!r}\n", {"twin": "PATH"})
    monkeypatch.setenv(ENV, f"{first}:{INSTALLED_TOKEN}")
    with Runtime() as runtime:
        assert runtime.backend("MockValid").get_option("which") == "valid"
        assert "already loaded" in files(runtime)["Mock_Twin_backend.so"].reason
    monkeypatch.setenv(ENV, f"{INSTALLED_TOKEN}:{first}")
    with Runtime() as runtime:
        assert runtime.backend("MockValid").get_option("which") == "twin"


def test_a_list_without_the_token_and_an_explicit_path_leave_installed_backends_out(
        site: Path, plugin_dir: PluginDir, monkeypatch: pytest.MonkeyPatch) -> None:
    installed, other = plugin_dir("valid", name="installed"), plugin_dir("other", name="other")
    install(site, "acme-out", f"PATH = {str(installed)!r}\n", {"valid": "PATH"})
    monkeypatch.setenv(ENV, str(other))
    with Runtime() as runtime:
        assert runtime.backend_ids == ["MockOther"]
    monkeypatch.setenv(ENV, INSTALLED_TOKEN)
    with Runtime(dynamic_backends_path=other) as runtime:
        assert runtime.backend_ids == ["MockOther"]


def test_backends_command_names_the_distribution(site: Path, plugin_dir: PluginDir) -> None:
    directory = plugin_dir("valid")
    install(site, "acme-cli", f"PATH = {str(directory)!r}\n", {"valid": "PATH"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-m", "plugnn", "backends"], capture_output=True, text=True,
                            timeout=HANG_GUARD_S, env=env)
    assert result.returncode == 0, result.stderr
    assert "installed distributions (entry points plugnn.backends)" in result.stdout
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("MockValid")]
    assert row.split()[-2:] == ["acme-cli", "1.0"]
