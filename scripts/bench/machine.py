"""What the machine can do, measured in the benchmark's own run: FMA peak, memory bandwidth, and
how far apart two of its CPUs are.

The three probes are small C programs next to this file, built with the system C compiler (`$CC`,
else `cc`) at -march=native, so they use the widest vectors this CPU has; each reports the best
of `repeats` runs. The FMA and bandwidth probes run T threads that start together behind a
barrier; the core-to-core probe runs two, pinned to the process's first two CPUs. Each call
builds its probe in a new temporary directory (`plugnn-bench-*`, a few hundred milliseconds of
compiling) and removes it when the probe has run or failed.

fma_peak_gflops(T) runs fma_peak.c (-O2): independent multiply-add chains in registers, as
GFLOP/s. It is the peak the compute-bound rows are compared with when --peak-gflops is not given
(the issue's "112 GFLOP/s on one core" was measured on a Zen 4, which splits a 512-bit FMA in two
halves; a core that does not reaches about twice that).

core_to_core_ns() runs core_to_core.c (-O2): the round trip of one cache line between threads
pinned to the first two CPUs the process may use, in nanoseconds. It is context, not a peak:
on a VM whose host puts the two vCPUs on cores that share a last-level cache it reads 50-160 ns
here, on different core complexes 320-580 ns, and two-thread rows whose threads read each
other's writes run up to twice as slowly in the second case (both runtimes).

stream_add_gbs(T) runs stream_add.c (-O3, so its loop is vectorized): STREAM's "add", c = a + b
over float32 arrays of 256 MiB each, split into T contiguous parts, with plain stores, reported
as GB/s of bytes read + written (3 x 256 MiB per run; the reads of each written line that plain
stores cause are not counted, as in STREAM). It is the bandwidth the memory-bound rows are
compared with when --peak-gbs is not given. (Until 2026-11-24 this was NumPy's add run from T
Python threads; on this 2-core VM that read 31-33 GB/s on one thread, above the C loop's 26-28,
and 32-37 on two, below the C loop's 34-44.)
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PROBE_DIR = Path(__file__).resolve().parent
OPTIMIZATION = {"fma_peak": "-O2", "stream_add": "-O3", "core_to_core": "-O2"}


class MachineProbeError(RuntimeError):
    """A measurement of the machine could not be made (no C compiler, the probe failed)."""


@contextlib.contextmanager
def built_probe(name: str) -> Iterator[Path]:
    """`name`.c (next to this file) built in a new temporary directory `plugnn-bench-*`, which
    is removed on the way out, after an error too; yields the path of the executable."""
    source = PROBE_DIR / f"{name}.c"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    with tempfile.TemporaryDirectory(prefix="plugnn-bench-") as directory:
        out = Path(directory) / name
        command = [*compiler, OPTIMIZATION[name], "-march=native", "-pthread", str(source), "-o", str(out)]
        try:
            built = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MachineProbeError(f"cannot build {source.name} with {' '.join(command)}: {exc}") from exc
        if built.returncode != 0:
            raise MachineProbeError(f"cannot build {source.name} with {' '.join(command)}:\n"
                                    f"{built.stderr.strip()}")
        yield out


def _run_probe(name: str, args: list[str], fields: int) -> list[str]:
    """Build `name`.c, run it with `args` and remove it; its output, which must be `fields` words."""
    with built_probe(name) as binary:
        try:
            ran = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MachineProbeError(f"{name} failed: {exc}") from exc
    out = ran.stdout.split()
    if ran.returncode != 0 or len(out) != fields:
        raise MachineProbeError(f"{name} {' '.join(args)} exited {ran.returncode}: "
                                f"{ran.stdout.strip()} {ran.stderr.strip()}")
    return out


def fma_peak_gflops(threads: int, iterations: int = 40_000_000, repeats: int = 5) -> float:
    """Peak float32 GFLOP/s of `threads` threads (fma_peak.c; about 0.15 s per repeat)."""
    out = _run_probe("fma_peak", [str(threads), str(iterations), str(repeats)], 3)
    return float(out[0])


def stream_add_gbs(threads: int, mib: int = 256, repeats: int = 5) -> float:
    """STREAM add GB/s of `threads` threads over three arrays of `mib` MiB (stream_add.c)."""
    out = _run_probe("stream_add", [str(threads), str(mib), str(repeats)], 2)
    expected = 2 * (mib * 1024 * 1024 // 4)
    if float(out[1]) != expected:
        raise MachineProbeError(f"stream_add.c computed a wrong sum: {out[1]}, expected {expected}")
    return float(out[0])


def core_to_core_ns(rounds: int = 200_000, repeats: int = 3) -> tuple[float, int, int]:
    """Cache-line round trip between the first two CPUs of the process: (ns, cpu, cpu)."""
    out = _run_probe("core_to_core", [str(rounds), str(repeats)], 3)
    return float(out[0]), int(out[1]), int(out[2])
