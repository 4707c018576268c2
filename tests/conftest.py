"""Shared fixtures. Tests are grouped by what they need:
tests/core (nothing but the installed package) and tests/plugins (the mock plugins,
built once per session with plugnn_add_backend from the installed CMake package)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from plugnn.registry import BackendRegistry

REPO = Path(__file__).resolve().parent.parent
MOCKS_SOURCE = REPO / "plugins" / "mocks"


@pytest.fixture(scope="session", autouse=True)
def probe_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Probe verdicts go to a cache directory of the session's own, never the user's
    (child processes inherit it through the environment)."""
    directory = tmp_path_factory.mktemp("xdg_cache")
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(directory)
    yield directory
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


@pytest.fixture(scope="session")
def mock_out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build every mock plugin; returns the directory holding one folder per mock.

    PLUGNN_TEST_MOCKS_DIR names mocks built beforehand (scripts/sanitize.sh builds them with
    AddressSanitizer, then runs the tests with the sanitizer preloaded).
    """
    prebuilt = os.environ.get("PLUGNN_TEST_MOCKS_DIR")
    if prebuilt:
        return Path(prebuilt)
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.fail("cmake is needed to build the mock plugins: pip install '.[test]'")
    cmake_dir = subprocess.run([sys.executable, "-m", "plugnn", "--cmake-dir"], check=True,
                               capture_output=True, text=True).stdout.strip()
    build = tmp_path_factory.mktemp("mock_build")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    for command in ([cmake, "-S", str(MOCKS_SOURCE), "-B", str(build), f"-Dplugnn_DIR={cmake_dir}",
                     "-DCMAKE_BUILD_TYPE=RelWithDebInfo", *generator],
                    [cmake, "--build", str(build), "--parallel", "2"]):
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            pytest.fail(f"building the mock plugins failed:\n$ {' '.join(command)}\n{result.stdout}\n{result.stderr}")
    return build / "out"


@pytest.fixture
def plugin_dir(tmp_path: Path, mock_out_dir: Path) -> Callable[..., Path]:
    """plugin_dir("valid", "other", name="d1"): a fresh directory holding copies of those mocks."""

    def make(*mocks: str, name: str = "plugins") -> Path:
        target = tmp_path / name
        target.mkdir(exist_ok=True)
        for mock in mocks:
            source = mock_out_dir / mock
            if not source.is_dir():
                pytest.fail(f"mock {mock!r} was not built (looked in {source})")
            for entry in sorted(source.iterdir()):
                destination = target / entry.name
                if entry.is_symlink():
                    destination.symlink_to(os.readlink(entry))
                else:
                    shutil.copy2(entry, destination)
        return target

    return make


@pytest.fixture
def no_static_backends() -> Iterator[None]:
    """Runs the test with an empty static registry and restores it afterwards."""
    saved = BackendRegistry.factories()
    for backend_id in saved:
        BackendRegistry.deregister(backend_id)
    yield
    for backend_id in BackendRegistry.registered_ids():
        BackendRegistry.deregister(backend_id)
    for backend_id, factory in saved.items():
        BackendRegistry.register(backend_id, factory)

