"""scripts/bench/machine.py: the FMA peak (fma_peak.c), bandwidth (stream_add.c) and core-to-core
(core_to_core.c) probes build, run, fail clearly and leave nothing in the temporary directory.

Only that a figure comes out and that it is a plausible number is checked, never its size
against a goal: timing belongs to the benchmark, not to the test suite.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

REPO = Path(__file__).resolve().parent.parent.parent
BENCH = REPO / "scripts" / "bench"
_spec = importlib.util.spec_from_file_location("plugnn_bench_machine", BENCH / "machine.py")
assert _spec is not None and _spec.loader is not None
machine = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # dataclasses look it up there
_spec.loader.exec_module(machine)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of the test's own, for this process (tempfile) and its children (TMPDIR)."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    return private


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("plugnn-bench-*"))


@pytest.mark.parametrize("threads", [1, 2])
def test_fma_peak_is_a_positive_finite_rate(threads: int) -> None:
    peak = machine.fma_peak(threads, milliseconds=5, repeats=1)
    # a core of any machine this runs on does between 1 and 10 000 GFLOP/s
    assert 1.0 < peak.gflops < 10_000.0 * threads, peak
    # the peak is the best kernel, and the kernels are what fma_peak.c has: 8 to 30 chains of
    # 128-, 256- or 512-bit vectors, the widest first
    assert (peak.lanes, peak.chains, peak.gflops) == max(peak.variants, key=lambda v: v[2])
    assert all(lanes in (4, 8, 16) and 8 <= chains <= 30 for lanes, chains, _ in peak.variants), peak
    assert peak.variants[0][0] == max(lanes for lanes, _, _ in peak.variants)
    assert peak.threads == threads and f"{32 * peak.lanes}-bit x {peak.chains} chains" in peak.describe()


def _loops(disassembly: str) -> dict[str, list[tuple[str, str]]]:
    """objdump -d output -> {kernel: [(mnemonic, operands)] of its loop}: the instructions from
    the target of the kernel's backward branch to the branch."""
    loops: dict[str, list[tuple[str, str]]] = {}
    for block in disassembly.split("\n\n"):
        head = re.match(r"[0-9a-f]+ <((?:x|y|z)mm_\d+)>:", block)
        if not head:
            continue
        code = [re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", line) for line in block.splitlines()[1:]]
        code = [(int(m[1], 16), m[2], m[3]) for m in code if m]
        for address, mnemonic, operands in code:
            target = re.match(r"([0-9a-f]+) <", operands)
            if mnemonic.startswith("j") and target and int(target[1], 16) < address:
                loops[head[1]] = [(m, o) for a, m, o in code if int(target[1], 16) <= a <= address]
    return loops


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
@pytest.mark.parametrize("march", ["native", "x86-64", "haswell", "skylake-avx512", "sapphirerapids"])
def test_fma_kernels_are_register_fmas(march: str) -> None:
    """Each kernel's loop is one FMA per chain on registers only (no spilled chain, no load per
    FMA), plus the loop counter; built without FMA (x86-64), a multiply and an add per chain."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 instruction sets")
    try:
        with machine.built_probe("fma_peak", march) as binary:
            disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True,
                                         text=True, timeout=HANG_GUARD_S, check=True).stdout
    except machine.MachineProbeError as exc:
        pytest.skip(f"the compiler cannot build for -march={march}: {exc}")
    loops = _loops(disassembly)
    kernels = {"x86-64": {"xmm_8", "xmm_10", "xmm_12", "xmm_14"}, "haswell": {"ymm_8", "ymm_10", "ymm_12", "ymm_14"}}
    assert set(loops) >= kernels.get(march, set()), sorted(loops)
    if march in ("skylake-avx512", "sapphirerapids"):
        assert {"zmm_8", "zmm_30", "ymm_8", "ymm_30"} <= set(loops), sorted(loops)
    for name, body in loops.items():
        chains = int(name.split("_")[1])
        vector = [(m, o) for m, o in body if "%xmm" in o or "%ymm" in o or "%zmm" in o]
        other = [m for m, o in body if (m, o) not in vector]
        assert all("(" not in o for _, o in vector), (name, vector)  # registers only
        assert set(other) <= {"inc", "dec", "add", "sub", "cmp", "test", "jne", "jnz", "jg", "jl", "jb", "ja"}, \
            (name, other)
        mnemonics = [m for m, _ in vector]
        fmas = [m for m in mnemonics if re.fullmatch(r"vfmadd(132|213|231)ps", m)]
        if march == "x86-64":
            assert sorted(mnemonics) == sorted(["mulps"] * chains + ["addps"] * chains), (name, mnemonics)
        else:
            assert len(fmas) == chains == len(mnemonics), (name, mnemonics)


@pytest.mark.parametrize("threads", [1, 2])
def test_stream_add_is_a_positive_finite_rate(threads: int) -> None:
    # 3 x 8 MiB: past the first-level caches; stream_add_gbs checks the probe's sum of c itself
    gbs = machine.stream_add_gbs(threads, mib=8, repeats=2)
    # any machine this runs on moves between 0.1 and 100 000 GB/s
    assert 0.1 < gbs < 100_000.0, gbs


def test_stream_add_sums_what_it_added() -> None:
    with machine.built_probe("stream_add") as binary:
        ran = subprocess.run([str(binary), "3", "1", "1"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert ran.returncode == 0, ran.stderr
    # c = 1 + 1 over 1 MiB of floats, split into 3 uneven parts: every element written once
    assert ran.stdout.split()[1] == str(2 * 1024 * 1024 // 4)


needs_two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="core-to-core needs two CPUs")


@needs_two_cpus
def test_core_to_core_is_a_plausible_round_trip() -> None:
    ns, first, second = machine.core_to_core_ns(rounds=20_000, repeats=2)
    # a cache line goes from one core to another and back in more than 10 ns and less than 100 us
    assert 10.0 < ns < 100_000.0, ns
    allowed = sorted(os.sched_getaffinity(0))
    assert (first, second) == (allowed[0], allowed[1])


def test_core_to_core_on_one_cpu_is_a_clear_error() -> None:
    one_cpu = min(os.sched_getaffinity(0))
    with machine.built_probe("core_to_core") as binary:
        ran = subprocess.run([str(binary), "1000", "1"], capture_output=True, text=True, timeout=HANG_GUARD_S,
                             preexec_fn=lambda: os.sched_setaffinity(0, {one_cpu}))
    assert ran.returncode == 2 and "one CPU" in ran.stderr, ran.stderr


@pytest.mark.parametrize(("probe", "bad_args"), [
    ("core_to_core", (["0", "1"], ["10", "0"], ["10"], ["x", "1"], ["1000000000", "1"])),
    ("fma_peak", (["0", "10", "1"], ["1", "0", "1"], ["1", "10", "0"], ["1", "10"], ["x", "10", "1"],
                  ["1", "10ms", "1"], ["1", "60001", "1"], ["2000", "10", "1"])),
    ("stream_add", (["0", "8", "1"], ["1", "0", "1"], ["1", "8", "0"], ["1", "8"], ["x", "8", "1"],
                    ["1", "999999", "1"], ["2000", "8", "1"])),
])
def test_probe_rejects_bad_arguments(probe: str, bad_args: tuple[list[str], ...]) -> None:
    with machine.built_probe(probe) as binary:
        for args in bad_args:
            ran = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=HANG_GUARD_S)
            assert ran.returncode == 2, (args, ran.stdout, ran.stderr)
            assert probe in ran.stderr or "usage" in ran.stderr


def test_missing_compiler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(machine.MachineProbeError, match=r"cannot build fma_peak\.c with /nonexistent/cc"):
        machine.fma_peak(1, milliseconds=1, repeats=1)
    with pytest.raises(machine.MachineProbeError, match=r"cannot build stream_add\.c with /nonexistent/cc"):
        machine.stream_add_gbs(1, mib=1, repeats=1)
    with pytest.raises(machine.MachineProbeError, match=r"cannot build core_to_core\.c with /nonexistent/cc"):
        machine.core_to_core_ns(rounds=10, repeats=1)


def test_probes_leave_nothing_behind(private_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    machine.fma_peak(1, milliseconds=1, repeats=1)
    machine.stream_add_gbs(1, mib=1, repeats=1)
    if len(os.sched_getaffinity(0)) >= 2:
        machine.core_to_core_ns(rounds=100, repeats=1)
    with pytest.raises(machine.MachineProbeError, match="exited 2"):  # the probe fails
        machine.fma_peak(0)
    with pytest.raises(KeyError), machine.built_probe("stream_add"):  # the caller fails
        raise KeyError("while the probe is there")
    for compiler in ("/nonexistent/cc", "false"):  # no compiler; one that fails
        monkeypatch.setenv("CC", compiler)
        with pytest.raises(machine.MachineProbeError, match="cannot build fma_peak.c"):
            machine.fma_peak(1, milliseconds=1, repeats=1)
    assert leftovers(private_tmp) == []


def test_run_leaves_nothing_behind_and_names_the_machine(private_tmp: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1,2",
                          "--backends", "CpuRef", "--json", str(out)], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "measured: fma_peak.c" in ran.stdout and "measured: stream_add.c" in ran.stdout
    assert leftovers(private_tmp) == []
    # the header names the CPU, its ISA extensions and what the FMA probe measured, per thread count
    header = ran.stdout.splitlines()[:3]
    assert header[1].startswith("CPU: ") and "ISA: " in header[1], header
    assert re.search(r"1 thread [\d.]+ GFLOP/s \((128|256|512)-bit x \d+ chains\), "
                     r"2 threads [\d.]+ GFLOP/s \((128|256|512)-bit x \d+ chains\)", header[2]), header
    meta = json.loads(out.read_text())["meta"]
    assert meta["cpu"]["model"] and isinstance(meta["cpu"]["extensions"], list), meta["cpu"]
    assert [p["threads"] for p in meta["fma_peak"]] == [1, 2]
    assert [p["gflops"] for p in meta["fma_peak"]] == meta["peak_gflops"]
    assert all(p["bits"] == 32 * p["lanes"] and p["chains"] >= 8 for p in meta["fma_peak"]), meta["fma_peak"]


def test_run_reports_rows_above_the_peak(tmp_path: Path) -> None:
    """No kernel beats the FMA peak: a row above it means the yardstick is wrong, and the run says so."""
    out = tmp_path / "run.json"
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^conv 3x3 64 56", "--threads",
                          "1", "--backends", "CpuRef", "--peak-gflops", "0.001", "--peak-gbs", "20", "--json", str(out)],
                         capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert ran.returncode == 0, ran.stdout + ran.stderr  # a warning, not a failure
    assert "above the FMA peak: conv 3x3 64 56 / CpuRef / 1 thread(s)" in ran.stdout
    assert "FMA peak (fma_peak.c" not in ran.stdout  # given, not measured
    meta = json.loads(out.read_text())["meta"]
    assert {(r["row"], r["backend"]) for r in meta["above_peak"]} == {("conv 3x3 64 56", runner)
                                                                        for runner in [*meta["peers"], "CpuRef"]}
    assert meta["fma_peak"] == "given"


def test_run_without_a_compiler_names_the_way_out(tmp_path: Path) -> None:
    env = {"CC": "/nonexistent/cc", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1"],
                         capture_output=True, text=True, timeout=HANG_GUARD_S, env=env)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "cannot measure the FMA peak" in ran.stderr and "--peak-gflops" in ran.stderr


def test_run_without_a_compiler_names_the_bandwidth_option(tmp_path: Path) -> None:
    env = {"CC": "/nonexistent/cc", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1",
                          "--peak-gflops", "100"],
                         capture_output=True, text=True, timeout=HANG_GUARD_S, env=env)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "cannot measure the memory bandwidth" in ran.stderr and "--peak-gbs" in ran.stderr


def test_given_peaks_need_no_compiler(tmp_path: Path) -> None:
    env = {"CC": "/nonexistent/cc", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1",
                          "--backends", "CpuRef", "--peak-gflops", "100", "--peak-gbs", "20"],
                         capture_output=True, text=True, timeout=HANG_GUARD_S, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "100 GFLOP/s (given)" in ran.stdout and "20 GB/s (given)" in ran.stdout
    # the core-to-core probe is context, not a peak: without a compiler the run says so and goes on
    assert "core-to-core round trip at the start: not measured (one thread)" in ran.stdout


@needs_two_cpus
def test_run_reports_the_core_to_core_round_trip_at_both_ends(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    ran = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--rows", "^relu", "--threads", "1,2",
                          "--backends", "CpuRef", "--peak-gflops", "100,200", "--peak-gbs", "20,30", "--json", str(out)],
                         capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "core-to-core round trip at the start:" in ran.stdout and "core-to-core round trip at the end:" in ran.stdout
    meta = json.loads(out.read_text())["meta"]["core_to_core_ns"]
    for end in ("start", "end"):
        assert meta[end]["ns"] > 0 and len(meta[end]["cpus"]) == 2, meta
