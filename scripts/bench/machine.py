"""What the machine can do, measured in the benchmark's own run: FMA peak, memory bandwidth, and
how far apart two of its CPUs are.

The three probes are small C programs next to this file, built with the system C compiler (`$CC`,
else `cc`) at -march=native, so they use the widest vectors this CPU has; each reports the best
of `repeats` runs. The FMA and bandwidth probes run T threads that start together behind a
barrier; the core-to-core probe runs two, pinned to the process's first two CPUs. Each call
builds its probe in a new temporary directory (`plugnn-bench-*`, a few hundred milliseconds of
compiling) and removes it when the probe has run or failed.

fma_peak(T) runs fma_peak.c (-O2): independent FMA chains in registers, every vector width and
chain count the build has (256-bit x 8-14 chains on AVX2; 512-bit and 256-bit x 8-30 on
AVX-512), each warmed up and timed for about `milliseconds`; the best is the peak the
compute-bound rows are compared with when --peak-gflops is not given, and the width and chain
count that reached it are reported with it. (Until 2026-11-25 it was one loop of 12 chains of the
widest vector, 10 on AVX2, with the FMAs left to the compiler's contraction of a * b + c. GCC 12
builds for AVX-512 (-march=skylake-avx512, icelake-server, sapphirerapids) kept the multiplier
on the stack, one 64-byte load per FMA: the likely cause of the 159 GFLOP/s it read on a
two-port Xeon where a 12-chain loop in registers reads 240.) The issue's "112 GFLOP/s on one
core" was measured on a Zen 4, which splits a 512-bit FMA in two halves; a core that does not
reaches about twice that.

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROBE_DIR = Path(__file__).resolve().parent
OPTIMIZATION = {"fma_peak": "-O2", "stream_add": "-O3", "core_to_core": "-O2"}


class MachineProbeError(RuntimeError):
    """A measurement of the machine could not be made (no C compiler, the probe failed)."""


@contextlib.contextmanager
def built_probe(name: str, march: str = "native") -> Iterator[Path]:
    """`name`.c (next to this file) built for `march` in a new temporary directory
    `plugnn-bench-*`, which is removed on the way out, after an error too; yields the path of
    the executable."""
    source = PROBE_DIR / f"{name}.c"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    with tempfile.TemporaryDirectory(prefix="plugnn-bench-") as directory:
        out = Path(directory) / name
        command = [*compiler, OPTIMIZATION[name], f"-march={march}", "-pthread", str(source), "-o", str(out)]
        try:
            built = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MachineProbeError(f"cannot build {source.name} with {' '.join(command)}: {exc}") from exc
        if built.returncode != 0:
            raise MachineProbeError(f"cannot build {source.name} with {' '.join(command)}:\n"
                                    f"{built.stderr.strip()}")
        yield out


def _run_probe(name: str, args: list[str], fields: int) -> list[list[str]]:
    """Build `name`.c, run it with `args` and remove it; its output lines, each `fields` words."""
    with built_probe(name) as binary:
        try:
            ran = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MachineProbeError(f"{name} failed: {exc}") from exc
    lines = [line.split() for line in ran.stdout.splitlines()]
    if ran.returncode != 0 or not lines or any(len(words) != fields for words in lines):
        raise MachineProbeError(f"{name} {' '.join(args)} exited {ran.returncode}: "
                                f"{ran.stdout.strip()} {ran.stderr.strip()}")
    return lines


@dataclass(frozen=True)
class FmaPeak:
    """The float32 FMA peak of `threads` threads and the kernel that reached it."""

    threads: int
    gflops: float
    lanes: int    # floats per vector: 16 (512-bit), 8 (256-bit), 4 (128-bit)
    chains: int   # independent FMA chains per thread
    variants: list[tuple[int, int, float]]  # every kernel measured: (lanes, chains, GFLOP/s)

    def describe(self) -> str:
        return f"{self.gflops:.1f} GFLOP/s ({32 * self.lanes}-bit x {self.chains} chains)"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bits": 32 * self.lanes}


def fma_peak(threads: int, milliseconds: int = 50, repeats: int = 3) -> FmaPeak:
    """The best float32 GFLOP/s of `threads` threads over fma_peak.c's kernels (each timed for
    about `milliseconds`, best of `repeats`; about 1 s on AVX2 with the defaults, 3 on AVX-512)."""
    lines = _run_probe("fma_peak", [str(threads), str(milliseconds), str(repeats)], 3)
    variants = [(int(lanes), int(chains), float(gflops)) for lanes, chains, gflops in lines]
    lanes, chains, gflops = max(variants, key=lambda v: v[2])
    return FmaPeak(threads, gflops, lanes, chains, variants)


def stream_add_gbs(threads: int, mib: int = 256, repeats: int = 5) -> float:
    """STREAM add GB/s of `threads` threads over three arrays of `mib` MiB (stream_add.c)."""
    out = _run_probe("stream_add", [str(threads), str(mib), str(repeats)], 2)[0]
    expected = 2 * (mib * 1024 * 1024 // 4)
    if float(out[1]) != expected:
        raise MachineProbeError(f"stream_add.c computed a wrong sum: {out[1]}, expected {expected}")
    return float(out[0])


def core_to_core_ns(rounds: int = 200_000, repeats: int = 3) -> tuple[float, int, int]:
    """Cache-line round trip between the first two CPUs of the process: (ns, cpu, cpu)."""
    out = _run_probe("core_to_core", [str(rounds), str(repeats)], 3)[0]
    return float(out[0]), int(out[1]), int(out[2])
