"""The CPU the benchmark runs on, as its header and JSON name it: the model, the instruction-set
extensions that matter to float32 kernels, the clock the OS reports and whether it is a VM.

Read from /proc/cpuinfo (Linux); elsewhere only platform.processor() and no extensions. The
clock is what the kernel reports, often the nominal one: a VM may not show boost clocks at all.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# In the order they are printed; a CPU's own are listed, the others named as missing.
EXTENSIONS = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
              "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
# Missing ones worth saying so: the widths and units a kernel could not use here.
NOTABLE_MISSING = ("avx2", "fma", "avx512f", "amx_tile")


@dataclass(frozen=True)
class Cpu:
    model: str
    cpus: int
    mhz: float | None = None
    virtual: bool = False
    extensions: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line: 'AMD EPYC (family 25, model 1, stepping 1); 2 CPUs, 2445 MHz as reported, a VM;
        ISA: avx avx2 fma f16c, no avx512f, no amx_tile'."""
        where = [f"{self.cpus} CPUs"]
        if self.mhz:
            where.append(f"{self.mhz:.0f} MHz as reported")
        if self.virtual:
            where.append("a VM")
        missing = [f"no {name}" for name in NOTABLE_MISSING if name not in self.extensions]
        return f"{self.model}; {', '.join(where)}; ISA: {' '.join(self.extensions) or '?'}" + (
            f", {', '.join(missing)}" if missing else "")

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "cpus": self.cpus, "mhz": self.mhz, "virtual": self.virtual,
                "extensions": self.extensions}


def this_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> Cpu:
    """The CPU of this machine (its first processor's entry in /proc/cpuinfo)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        first = cpuinfo.read_text().split("\n\n")[0]
    except OSError:
        return Cpu(platform.processor() or platform.machine(), cpus)
    entry = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in first.splitlines())}
    flags = set(entry.get("flags", "").split())
    model = entry.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in entry:
        model += f" (family {entry['cpu family']}, model {entry.get('model', '?')}, " \
                 f"stepping {entry.get('stepping', '?')})"
    try:
        mhz: float | None = float(entry["cpu MHz"])
    except (KeyError, ValueError):
        mhz = None
    return Cpu(model, cpus, mhz, "hypervisor" in flags, [name for name in EXTENSIONS if name in flags])
