"""What the machine can do, measured in the benchmark's own run: FMA peak and memory bandwidth.

fma_peak_gflops(T) builds fma_peak.c (next to this file) with the system C compiler (`$CC`, else
`cc`) at -O2 -march=native, so it uses the widest vectors this CPU has, and runs it on T threads:
independent multiply-add chains in registers, the best of `repeats` runs as GFLOP/s. It is the
peak the compute-bound rows are compared with when --peak-gflops is not given (the issue's
"112 GFLOP/s on one core" was measured on a Zen 4, which splits a 512-bit FMA in two halves; a
core that does not reaches about twice that).

stream_add_gbs(T) times c = a + b (NumPy, float32) over arrays of 256 MiB each, far larger than
any cache, split into T contiguous parts run by T Python threads (NumPy releases the GIL inside
the ufunc loop), and reports the best of `repeats` runs as GB/s of bytes read + written (3 x 256
MiB per run), the way STREAM's "add" counts them. It is the bandwidth the memory-bound rows are
compared with when --peak-gbs is not given.
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

FMA_PEAK_SOURCE = Path(__file__).resolve().parent / "fma_peak.c"


class MachineProbeError(RuntimeError):
    """A measurement of the machine could not be made (no C compiler, the probe failed)."""


@functools.lru_cache(maxsize=1)
def _fma_peak_binary() -> Path:
    out = Path(tempfile.mkdtemp(prefix="plugnn-bench-")) / "fma_peak"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    command = [*compiler, "-O2", "-march=native", "-pthread", str(FMA_PEAK_SOURCE), "-o", str(out)]
    try:
        built = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MachineProbeError(f"cannot build {FMA_PEAK_SOURCE.name} with {' '.join(command)}: {exc}") from exc
    if built.returncode != 0:
        raise MachineProbeError(f"cannot build {FMA_PEAK_SOURCE.name} with {' '.join(command)}:\n"
                                f"{built.stderr.strip()}")
    return out


def fma_peak_gflops(threads: int, iterations: int = 40_000_000, repeats: int = 5) -> float:
    """Peak float32 GFLOP/s of `threads` threads (fma_peak.c; about 0.15 s per repeat)."""
    binary = _fma_peak_binary()
    try:
        ran = subprocess.run([str(binary), str(threads), str(iterations), str(repeats)],
                             capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MachineProbeError(f"{binary} failed: {exc}") from exc
    fields = ran.stdout.split()
    if ran.returncode != 0 or len(fields) != 3:
        raise MachineProbeError(f"{binary} {threads} {iterations} {repeats} exited {ran.returncode}: "
                                f"{ran.stdout.strip()} {ran.stderr.strip()}")
    return float(fields[0])


def stream_add_gbs(threads: int, mib: int = 256, repeats: int = 5) -> float:
    n = mib * 1024 * 1024 // 4
    a = np.ones(n, np.float32)
    b = np.ones(n, np.float32)
    c = np.empty(n, np.float32)
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]

    def part(lo: int, hi: int) -> None:
        np.add(a[lo:hi], b[lo:hi], out=c[lo:hi])

    best = float("inf")
    for _ in range(repeats):
        workers = [threading.Thread(target=part, args=bound) for bound in bounds]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - start)
    return 3 * n * 4 / best / 1e9
