"""`plugnn backends` shows usable backends and every rejected candidate with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plugnn import BACKEND_API_VERSION

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

pytestmark = pytest.mark.plugins


def plugnn(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plugnn", *args], capture_output=True, text=True, timeout=HANG_GUARD_S)


def test_backends_lists_the_bundled_reference_backend() -> None:
    result = plugnn("backends")
    assert result.returncode == 0, result.stderr
    assert "CpuRef" in result.stdout and "Plugnn_CpuRef_backend.so" in result.stdout


def test_backends_table_shows_rejections(plugin_dir: Callable[..., Path]) -> None:
    directory = plugin_dir("valid", "major_2", "factory_null")
    result = plugnn("backends", "--dynamic-backends-path", str(directory))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("MockValid") for line in lines)
    assert any("rejected" in line and "Mock_Major2_backend.so" in line and "2.0 is not compatible" in line
               for line in lines)
    assert any("rejected" in line and "BackendFactory returned NULL" in line for line in lines)


def test_backends_json(plugin_dir: Callable[..., Path]) -> None:
    directory = plugin_dir("valid", "null_id")
    result = plugnn("backends", "--dynamic-backends-path", str(directory), "--json")
    data = json.loads(result.stdout)
    assert data["backend_api_version"] == "{}.{}".format(*BACKEND_API_VERSION)
    assert data["search_paths"] == [str(directory)]
    assert [b["backend_id"] for b in data["backends"]] == ["MockValid"]
    statuses = {Path(r["path"]).name: (r["status"], r["reason"]) for r in data["load_report"]}
    assert statuses["Mock_NullId_backend.so"] == ("rejected", "GetBackendId returned NULL (seen by the probe; not loaded)")
    assert statuses[directory.name] == ("loaded", "searched")


def test_backends_with_an_invalid_directory_says_so(tmp_path: Path) -> None:
    result = plugnn("backends", "--dynamic-backends-path", str(tmp_path / "missing"))
    assert result.returncode == 0
    assert "No usable backends." in result.stdout
    assert "does not exist" in result.stdout


def test_cmake_and_include_dirs() -> None:
    cmake_dir = Path(plugnn("--cmake-dir").stdout.strip())
    assert (cmake_dir / "plugnnConfig.cmake").is_file()
    include_dir = Path(plugnn("--include-dir").stdout.strip())
    assert (include_dir / "plugnn" / "backend_api.h").is_file()
