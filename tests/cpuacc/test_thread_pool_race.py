"""CpuAcc's thread pool under stress (plugins/accel/src/thread_pool.c, driven by
thread_pool_stress.c): back-to-back loops, first come and owned (with cuts that leave threads
nothing, fewer items than parts, or everything), whose parts must each run exactly once, with their
own loop's function and context. thread_pool.c is compiled here twice: as shipped, and with
ACCEL_THREADS_TEST_PREEMPT, which makes workers yield their CPU at the points where being
descheduled exposes a race (the claim protocol once let a worker that read the previous loop's
generation run a part of the next loop with a mix of both loops' fields: on 2 cores with 7 threads,
items ran twice within 10,000 loops). Needs a C compiler (the one CMake finds for the mock plugins:
CC, else cc or gcc)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

REPO = Path(__file__).resolve().parent.parent.parent
ACCEL_SRC = REPO / "plugins" / "accel" / "src"
DRIVER = Path(__file__).resolve().parent / "thread_pool_stress.c"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pthreads pool test: Linux")


# scripts/sanitize.sh preloads the sanitizer runtimes into this process: not into the compiler
# (LeakSanitizer would report gcc's own allocations) nor into the plain-built driver.
PLAIN_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS",
                                                               "UBSAN_OPTIONS")}


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed to build the thread pool stress driver (set CC)")
    return cc


@pytest.fixture(scope="module", params=["shipped", "preempt"])
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("thread_pool") / f"thread_pool_stress_{request.param}"
    defines = ["-DACCEL_THREADS_TEST_PREEMPT"] if request.param == "preempt" else []
    command = [compiler(), "-std=c11", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", *defines,
               f"-I{ACCEL_SRC}", f"-I{REPO / 'native' / 'include'}", str(DRIVER), str(ACCEL_SRC / "thread_pool.c"),
               "-o", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, env=PLAIN_ENV)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr}"
    return out


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_every_part_runs_once_with_its_own_loop(driver: Path, threads: int) -> None:
    loops = 200_000
    result = subprocess.run([str(driver), str(threads), str(loops)], capture_output=True, text=True, timeout=HANG_GUARD_S,
                            env=PLAIN_ENV)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    assert result.stdout.startswith(f"ok: {loops} loops on {threads} threads")


def test_the_driver_rejects_bad_arguments(driver: Path) -> None:
    result = subprocess.run([str(driver)], capture_output=True, text=True, timeout=HANG_GUARD_S, env=PLAIN_ENV)
    assert result.returncode == 2 and "usage" in result.stderr
