"""scripts/bench/cpu.py: the CPU model, ISA extensions and clock the benchmark's header names."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent.parent / "scripts" / "bench"
_spec = importlib.util.spec_from_file_location("plugnn_bench_cpu", BENCH / "cpu.py")
assert _spec is not None and _spec.loader is not None
cpu = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # dataclasses look it up there
_spec.loader.exec_module(cpu)

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8488C
stepping\t: 8
cpu MHz\t\t: 2400.000
flags\t\t: fpu sse avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8 hypervisor

processor\t: 1
vendor_id\t: GenuineIntel
"""


def test_an_intel_cpuinfo(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(XEON)
    found = cpu.this_cpu(tmp_path / "cpuinfo")
    assert found.model == "Intel(R) Xeon(R) Platinum 8488C (family 6, model 143, stepping 8)"
    assert found.extensions == ["avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                                "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"]
    assert found.mhz == 2400.0 and found.virtual
    assert "ISA: avx avx2 fma" in found.describe() and ", no " not in found.describe()


def test_missing_extensions_are_named(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("model name\t: Old CPU\nflags\t\t: fpu sse sse2\n")
    found = cpu.this_cpu(tmp_path / "cpuinfo")
    assert found.model == "Old CPU" and found.extensions == [] and found.mhz is None and not found.virtual
    assert found.describe().endswith("ISA: ?, no avx2, no fma, no avx512f, no amx_tile")


def test_no_cpuinfo_is_not_an_error(tmp_path: Path) -> None:
    found = cpu.this_cpu(tmp_path / "missing")
    assert found.model and found.cpus >= 1 and found.extensions == []


def test_this_machine() -> None:
    found = cpu.this_cpu()
    assert found.model and found.cpus >= 1
    assert set(found.extensions) <= set(cpu.EXTENSIONS)
