"""The CMake package and plugnn_add_backend: names, versions, symlinks, exported symbols;
and the public header compiles cleanly as C99 and as C++."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from plugnn import loader
from plugnn.cli import PACKAGE_DIR

pytestmark = pytest.mark.plugins

ENTRY_POINTS = {"GetBackendId", "GetVersion", "BackendFactory"}


def exported(path: Path) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm (binutils) is needed to check exported symbols")
    out = subprocess.run([nm, "-D", "--defined-only", str(path)], check=True, capture_output=True, text=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def test_bundled_cpuref_exports_only_the_entry_points() -> None:
    assert exported(Path(loader.BUNDLED_DIR) / "Plugnn_CpuRef_backend.so") == ENTRY_POINTS


def test_mock_built_against_installed_package_exports_only_the_entry_points(mock_out_dir: Path) -> None:
    assert exported(mock_out_dir / "valid" / "Mock_Valid_backend.so") == ENTRY_POINTS


def test_version_option_makes_the_usual_symlinks(mock_out_dir: Path) -> None:
    d = mock_out_dir / "other"
    assert (d / "Mock_Other_backend.so.1.2.3").is_file() and not (d / "Mock_Other_backend.so.1.2.3").is_symlink()
    assert (d / "Mock_Other_backend.so.1").readlink() == Path("Mock_Other_backend.so.1.2.3")
    assert (d / "Mock_Other_backend.so").readlink() == Path("Mock_Other_backend.so.1")


def test_cmake_dir_holds_the_package_config() -> None:
    cmake_dir = PACKAGE_DIR / "cmake"
    for name in ("plugnnConfig.cmake", "plugnnConfigVersion.cmake", "plugnnBackend.cmake", "plugnnTargets.cmake"):
        assert (cmake_dir / name).is_file(), name
    assert (PACKAGE_DIR / "lib" / "libplugnn_plugin_common.a").is_file()


@pytest.mark.parametrize("compiler, flags", [
    ("gcc", ["-x", "c", "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]),
    ("g++", ["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]),
])
def test_public_headers_compile_cleanly(compiler: str, flags: list[str], tmp_path: Path) -> None:
    if shutil.which(compiler) is None:
        pytest.fail(f"{compiler} is needed to build plugins")
    source = tmp_path / "check.c"
    source.write_text('#include "plugnn/backend_api.h"\n#include "plugnn/plugin_common.h"\n'
                      "int main(void) { return sizeof(pn_backend) > 0 ? 0 : 1; }\n")
    subprocess.run([compiler, *flags, f"-I{PACKAGE_DIR / 'include'}", "-c", str(source),
                    "-o", str(tmp_path / "check.o")], check=True, capture_output=True, text=True)
