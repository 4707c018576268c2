"""plugnn against onnxruntime and OpenVINO, kernel by kernel, end to end and on the model zoo, in one
process run.

    python scripts/bench/run.py [--quick] [--threads 1,2] [--backends CpuAcc,CpuRef]
                                [--peers onnxruntime,openvino] [--rows PATTERN] [--json OUT] [--markdown]
                                [--include-slow] [--peak-gflops G1,G2] [--peak-gbs G1,G2] [--budget S]
                                [--max-runs N] [--rounds N]

Every row is an ONNX model: a single layer built with onnx.helper or a synthetic network
(plugnn.synthetic_models) (cases.py), or a model of the zoo, tests/zoo, at its full input size
(zoo_cases.py). For each thread count T it runs in the peers, onnxruntime (CPUExecutionProvider,
intra_op_num_threads=T, inter_op_num_threads=1, sequential) and OpenVINO (CPU device, f32
inference precision, latency hint, one stream, T inference threads; when installed: the bench
extra), and in each requested plugnn backend: CpuAcc through Runtime(backend_options={"CpuAcc":
{"num_threads": T}}), with CpuRef for the layers CpuAcc declines on e2e and zoo rows; CpuRef alone
has no threads and is recorded at 1 thread only, and not on the 224x224 end-to-end and zoo rows
(seconds per run) unless --include-slow. All read the same input arrays and write into
preallocated outputs (onnxruntime through IO binding, OpenVINO into its own output tensors,
plugnn through run(outputs=...)), so what is timed is the run, not output allocation.

Reported per row: median ms (timing.py: warm-up, then samples until the time budget or the
run limit; the peers and the plugnn backends of a row and thread count are timed in --rounds
alternating blocks, so a slow phase of the machine falls on all of them), GFLOP/s (conv: 2 per product
of a weight with an input element, the products with the zero padding not counted, cases.py
conv_flops; gemm and matmul: 2*|output|*K; every Conv, Gemm and MatMul of a network, or, where
ONNX's shape inference leaves their shapes unknown, every convolution, fully connected and
matmul layer of plugnn's import of it) or GB/s (memory-bound
rows: bytes read + written), the fraction of the peak for T threads (GFLOP/s: the FMA peak of T
threads, GB/s: the STREAM-style add bandwidth, both measured at the start of the same run by
machine.py unless --peak-gflops / --peak-gbs are given), and the ratios plugnn median /
onnxruntime median ("vs ort") and plugnn median / the fastest peer's median ("vs best"; below 1:
plugnn is faster). The header (and the JSON's "meta") names the CPU model, its ISA extensions
(cpu.py) and the FMA probe's figures per thread count: GFLOP/s, and the vector width and chain
count that reached them. No kernel can beat the FMA peak: a GFLOP/s row above 100 % is reported
after the table as a wrong peak (a probe bug, a busy machine while it was measured, a
--peak-gflops figure too low); it does not change the exit status. Every plugnn output is
checked against onnxruntime's: max|plugnn - ort| / max|ort| <= --tolerance (1e-3), else the row
is marked MISMATCH and the exit status is 1 (OpenVINO's difference is reported, not judged). A
backend the runtime does not have, or that does not support the row's layer, is reported as
"not available", which is not an error; a model plugnn cannot import is an error.

--quick runs tiny shapes with 1-2 timed runs (seconds in all): CI runs it so the suite cannot
rot. It asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# NumPy's own BLAS threads (used while building inputs and checking outputs) would otherwise
# spin on the cores the two runtimes are being timed on.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cases as cases_module  # noqa: E402
import cpu  # noqa: E402
import machine  # noqa: E402
import report  # noqa: E402
import timing  # noqa: E402
import zoo_cases  # noqa: E402
from report import Result  # noqa: E402

import plugnn  # noqa: E402

THREADED_BACKENDS = {"CpuAcc"}   # backends that take a num_threads option
PEERS = ("onnxruntime", "openvino")  # the reference runtimes, in this order (onnxruntime's outputs are the check)


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def peak_for(peaks: list[float], threads: int) -> float:
    """peaks[T-1]; past the list, the last figure scaled linearly by thread count."""
    if threads <= len(peaks):
        return peaks[threads - 1]
    return peaks[-1] * threads / len(peaks)


def peer_list(text: str) -> list[str]:
    """The requested peers that can run here: onnxruntime always (its outputs are the check),
    openvino when it is installed (a note on stderr otherwise)."""
    requested = [p.strip() for p in text.split(",") if p.strip()]
    unknown = sorted(set(requested) - set(PEERS))
    if unknown:
        raise SystemExit(f"error: --peers names {', '.join(unknown)}; the peers are {', '.join(PEERS)}")
    chosen = ["onnxruntime"]
    if "openvino" in requested:
        try:
            import openvino  # noqa: F401
            chosen.append("openvino")
        except ImportError:
            print("note: openvino is not installed (pip install openvino, or the bench extra); "
                  "onnxruntime is the only peer", file=sys.stderr)
    return chosen


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny shapes, 1-2 runs: a smoke test (CI)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--backends", default="CpuAcc,CpuRef", help="plugnn backends (default CpuAcc,CpuRef)")
    p.add_argument("--rows", default=None, help="only rows whose name matches this regular expression")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown too")
    p.add_argument("--include-slow", action="store_true", help="run CpuRef on the 224x224 end-to-end rows")
    p.add_argument("--peak-gflops", default=None,
                   help="peak float32 GFLOP/s for 1,2,... threads (default: measured in this run, "
                        "machine.fma_peak)")
    p.add_argument("--peak-gbs", default=None,
                   help="memory GB/s for 1,2,... threads (default: measured in this run, STREAM add in C: "
                        "machine.stream_add_gbs)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per row and backend (default 1)")
    p.add_argument("--max-runs", type=int, default=None, help="timed samples at most (default 50)")
    p.add_argument("--rounds", type=int, default=None,
                   help="alternating timing blocks per runtime (default 4; 1: one after the other)")
    p.add_argument("--tolerance", type=float, default=1e-3, help="max|plugnn - ort| / max|ort| allowed")
    p.add_argument("--peers", default="onnxruntime,openvino",
                   help="reference runtimes (default onnxruntime,openvino; openvino is used when installed, "
                        "onnxruntime always); plugnn's ratio is to the fastest of them")
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    return p.parse_args(argv)


# -- the two runtimes ------------------------------------------------------------------------

def ort_runner(model: Any, feeds: dict[str, np.ndarray], threads: int) -> tuple[Any, dict[str, np.ndarray]]:
    """onnxruntime's CPU provider with IO binding into preallocated outputs (shaped and typed by a
    first plain run, so graphs with symbolic output dims work too)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [out.name for out in session.get_outputs()]
    first = session.run(names, feeds)
    binding = session.io_binding()
    for name, array in feeds.items():
        binding.bind_cpu_input(name, array)
    outputs = {}
    for name, value in zip(names, first):
        array = np.empty_like(value)
        binding.bind_output(name, "cpu", 0, array.dtype, list(array.shape), array.ctypes.data)
        outputs[name] = array
    def run() -> None:
        session.run_with_iobinding(binding)

    run.bound_outputs = outputs  # type: ignore[attr-defined]  # the arrays the binding writes live as long as it
    return run, outputs


def openvino_runner(model: Any, feeds: dict[str, np.ndarray], threads: int, workdir: Path
                    ) -> tuple[Any, dict[str, np.ndarray]]:
    """OpenVINO's CPU device: float32 inference precision, the latency hint, one stream and
    `threads` inference threads; the model is read from a file (large weights included)."""
    import openvino as ov

    path = workdir / "model.onnx"
    if not path.exists():
        path.write_bytes(model.SerializeToString())
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
        "INFERENCE_NUM_THREADS": str(threads)})
    request = compiled.create_infer_request()

    def run() -> None:
        request.infer(feeds, share_inputs=True, share_outputs=True)

    run()  # the compiled model's outputs are the ONNX graph's, in its order
    return run, {out.name: request.get_output_tensor(i).data for i, out in enumerate(model.graph.output)}


class Plugnn:
    """One Runtime per thread count (CpuAcc's num_threads is a runtime-wide backend option)."""

    def __init__(self, available: list[str]) -> None:
        self.available = available
        self.runtimes: dict[int, plugnn.Runtime] = {}

    def runtime(self, threads: int) -> plugnn.Runtime:
        if threads not in self.runtimes:
            options = {b: {"num_threads": str(threads)} for b in THREADED_BACKENDS if b in self.available}
            self.runtimes[threads] = plugnn.Runtime(backend_options=options)
        return self.runtimes[threads]

    def close(self) -> None:
        for runtime in self.runtimes.values():
            runtime.close()


def relative_difference(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> float:
    worst = 0.0
    for name, reference in theirs.items():
        scale = max(float(np.abs(reference).max()), 1e-30)
        diff = float(np.abs(ours[name].astype(np.float64) - reference).max())
        worst = max(worst, diff / scale if np.isfinite(diff) else float("inf"))
    return worst


# -- one row ---------------------------------------------------------------------------------

def run_case(case: cases_module.Case, args: argparse.Namespace, pl: Plugnn, budget: timing.Budget,
             threads_list: list[int], backends: list[str], log: Any) -> list[Result]:
    import plugnn.onnx
    from plugnn.errors import OptimizationError

    results: list[Result] = []
    model = case.build(args.quick)
    amount = cases_module.work(case, model)
    if case.feeds is not None:
        feeds = case.feeds(args.quick)
    else:
        rng = np.random.default_rng(1)
        feeds = {}
        initializers = {i.name for i in model.graph.initializer}
        for inp in model.graph.input:
            if inp.name not in initializers:
                shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
                feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
    try:
        network: Any = plugnn.onnx.load(model)
    except plugnn.PlugnnError as exc:  # reported on every plugnn result of the row; the peers still run
        network = exc
    peaks = floats(args.peak_gflops) if case.metric == "flops" else floats(args.peak_gbs)
    peers = [peer for peer in PEERS if peer in args.peer_list]

    def finish(result: Result, seconds: timing.Timing, threads: int) -> Result:
        result.median_ms, result.min_ms, result.runs = seconds.median * 1e3, seconds.minimum * 1e3, seconds.samples
        result.metric = case.metric
        if amount is not None:
            result.rate = amount / seconds.median / 1e9
            result.peak_fraction = result.rate / peak_for(peaks, threads)
        result.extra["calls_per_sample"] = seconds.calls_per_sample
        return result

    for threads in threads_list:
        with contextlib.ExitStack() as stack:
            timed: list[tuple[Result, Any]] = []  # every runner of this thread count, timed together
            peer_results: list[Result] = []
            reference: dict[str, np.ndarray] | None = None
            for peer in peers:
                peer_result = Result(case.name, threads, peer, "ok", metric=case.metric)
                results.append(peer_result)
                peer_results.append(peer_result)
                try:
                    if peer == "onnxruntime":
                        fn, peer_out = ort_runner(model, feeds, threads)
                    else:
                        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="plugnn-bench-")))
                        fn, peer_out = openvino_runner(model, feeds, threads, workdir)
                    fn()
                    if reference is None:
                        reference = {k: np.array(v, copy=True) for k, v in peer_out.items()}
                    else:
                        peer_result.rel_diff = relative_difference(peer_out, reference)
                    timed.append((peer_result, fn))
                except Exception as exc:  # noqa: BLE001 - a failing row is reported, the others still run
                    peer_result.status, peer_result.note = "error", f"{type(exc).__name__}: {exc}"

            for backend in backends:
                if backend not in THREADED_BACKENDS and threads != threads_list[0]:
                    continue   # no threads: recorded once, at the first thread count
                result = Result(case.name, threads, backend, "ok", metric=case.metric)
                results.append(result)
                if backend not in pl.available:
                    result.status = "not available"
                    result.note = "not in this runtime"
                    continue
                if backend == "CpuRef" and case.slow_on_cpuref and not (args.include_slow or args.quick):
                    result.status, result.note = "skipped", "seconds per run on CpuRef; --include-slow"
                    continue
                if isinstance(network, Exception):
                    result.status, result.note = "error", f"import: {str(network).splitlines()[0][:160]}"
                    continue
                if backend not in THREADED_BACKENDS and threads != 1:
                    result.note = "single-threaded backend"
                runtime = pl.runtime(threads)
                preference = [backend] if case.kind == "op" or backend == "CpuRef" else [backend, "CpuRef"]
                try:
                    optimized = plugnn.optimize(network, runtime, preference)
                except OptimizationError as exc:
                    result.status, result.note = "not available", f"unsupported: {str(exc).splitlines()[0][:80]}"
                    continue
                fallback = [a["layer"] for a in optimized.assignments() if a["backend"] != backend]
                if fallback:
                    result.note = f"{len(fallback)} of {len(optimized.assignments())} layers on CpuRef"
                try:
                    loaded = stack.enter_context(runtime.load_network(optimized))
                    outputs = {name: np.empty(info.shape, info.dtype.numpy_dtype)
                               for name, info in loaded.output_infos.items()}
                    loaded.run(feeds, outputs=outputs)
                    if reference is not None:
                        result.rel_diff = relative_difference(outputs, reference)
                        if not result.rel_diff <= args.tolerance:
                            result.status = "mismatch"
                    timed.append((result, functools.partial(loaded.run, feeds, outputs=outputs)))
                except Exception as exc:  # noqa: BLE001
                    result.status, result.note = "error", f"{type(exc).__name__}: {exc}"

            for (result, _), seconds in zip(timed, timing.measure_rounds([fn for _, fn in timed], budget)):
                if isinstance(seconds, Exception):
                    result.status, result.note = "error", f"{type(seconds).__name__}: {seconds}"
                else:
                    finish(result, seconds, threads)
            ort_ms = next((r.median_ms for r in peer_results if r.backend == "onnxruntime"), None)
            peer_ms = [r.median_ms for r in peer_results if r.median_ms is not None]
            for result in (r for r in results if r.threads == threads):
                if result.median_ms is not None and result not in peer_results:
                    if ort_ms:
                        result.ratio_vs_ort = result.median_ms / ort_ms
                    if peer_ms:
                        result.ratio_vs_best = result.median_ms / min(peer_ms)
                log(result)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    every = cases_module.CASES + zoo_cases.zoo_cases()
    selected = [c for c in every if (c.in_quick or not args.quick)
                and (args.rows is None or re.search(args.rows, c.name, re.IGNORECASE))]
    if args.list:
        for case in selected:
            print(f"{case.name:26} {case.kind:4} {case.description(args.quick)}")
        return 0
    if not selected:
        print(f"no row matches {args.rows!r}", file=sys.stderr)
        return 2
    budget = timing.QUICK if args.quick else timing.Budget()
    overrides = {name: value for name, value in (("seconds", args.budget), ("max_runs", args.max_runs),
                                                 ("rounds", args.rounds)) if value is not None}
    if overrides:
        budget = dataclasses.replace(budget, **overrides)
        budget = dataclasses.replace(budget, min_runs=min(budget.min_runs, budget.max_runs))
    threads_list = ints(args.threads)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    args.peer_list = peer_list(args.peers)
    with plugnn.Runtime() as probe:
        available = list(probe.backend_ids)

    import onnxruntime

    started = time.perf_counter()
    # Measured here, in this run (briefly in --quick mode: a smoke test), unless given.
    peak_source = "given" if args.peak_gflops is not None else "measured: fma_peak.c"
    fma_peaks: list[machine.FmaPeak] = []
    if args.peak_gflops is None:
        try:
            fma_peaks = [machine.fma_peak(t, milliseconds=5 if args.quick else 50, repeats=1 if args.quick else 3)
                         for t in range(1, max(threads_list) + 1)]
        except machine.MachineProbeError as exc:
            print(f"error: cannot measure the FMA peak ({exc}); give it with --peak-gflops", file=sys.stderr)
            return 2
        args.peak_gflops = ",".join(f"{p.gflops:.1f}" for p in fma_peaks)
    bandwidth_source = "given" if args.peak_gbs is not None else "measured: stream_add.c"
    if args.peak_gbs is None:
        try:
            args.peak_gbs = ",".join(f"{machine.stream_add_gbs(t, mib=4 if args.quick else 256):.1f}"
                                     for t in range(1, max(threads_list) + 1))
        except machine.MachineProbeError as exc:
            print(f"error: cannot measure the memory bandwidth ({exc}); give it with --peak-gbs", file=sys.stderr)
            return 2
    placement_rounds = 20_000 if args.quick else 200_000

    def placement() -> dict[str, Any] | str:
        """The cache-line round trip between the first two CPUs, or why it was not measured."""
        if max(threads_list) < 2:
            return "not measured (one thread)"
        try:
            ns, first, second = machine.core_to_core_ns(rounds=placement_rounds)
        except machine.MachineProbeError as exc:
            return f"not measured ({exc})"
        return {"ns": ns, "cpus": [first, second]}

    def describe(p: dict[str, Any] | str) -> str:
        return p if isinstance(p, str) else f"{p['ns']:.0f} ns (CPUs {p['cpus'][0]} and {p['cpus'][1]})"

    placement_start = placement()
    print(f"plugnn {plugnn.__version__ if hasattr(plugnn, '__version__') else '?'}: backends {available}; "
          f"onnxruntime {onnxruntime.__version__}; threads {threads_list}; {'quick' if args.quick else 'full'} mode; "
          f"peaks for 1,2,... threads: {args.peak_gflops} GFLOP/s ({peak_source}), "
          f"{args.peak_gbs} GB/s ({bandwidth_source}); core-to-core round trip at the start: "
          f"{describe(placement_start)}")
    this_cpu = cpu.this_cpu()
    print(f"CPU: {this_cpu.describe()}", flush=True)
    if fma_peaks:
        print("FMA peak (fma_peak.c, the best of its kernels): " + ", ".join(
            f"{p.threads} thread{'s' if p.threads > 1 else ''} {p.describe()}" for p in fma_peaks), flush=True)

    def log(r: Result) -> None:
        print("  " + "  ".join(c for c in report.cells(r) if c != "-"), file=sys.stderr, flush=True)

    pl = Plugnn(available)
    results: list[Result] = []
    try:
        for case in selected:
            print(f"[{case.name}] {case.description(args.quick)}", file=sys.stderr, flush=True)
            try:
                results += run_case(case, args, pl, budget, threads_list, backends, log)
            except Exception as exc:  # noqa: BLE001 - building the row failed
                results.append(Result(case.name, threads_list[0], "-", "error", note=f"{type(exc).__name__}: {exc}"))
                log(results[-1])
    finally:
        pl.close()
    elapsed = time.perf_counter() - started
    placement_end = placement()

    print(report.table(results))
    print("rate: GFLOP/s for conv and e2e rows (conv: 2 per product of a weight with an input element, not with the "
          "zero padding; gemm 2*M*N*K), GB/s (read + write) "
          "for memory-bound rows; vs ort = plugnn median / onnxruntime median at the same thread count "
          "(< 1: plugnn faster); vs best = plugnn median / the fastest peer's (onnxruntime, OpenVINO) at the same "
          "thread count; check = max|output - ort| / max|ort|")
    print(f"core-to-core round trip at the end: {describe(placement_end)} (at the start: {describe(placement_start)}; "
          "about 100 ns: the two CPUs share a last-level cache, several hundred: they do not, and two-thread "
          "rows whose threads read each other's writes run slower on both runtimes)")
    above_peak = [r for r in results if r.metric == "flops" and r.peak_fraction is not None and r.peak_fraction > 1.0]
    for r in above_peak:
        print(f"above the FMA peak: {r.row} / {r.backend} / {r.threads} thread(s) at {100 * r.peak_fraction:.0f} % "
              f"of {peak_for(floats(args.peak_gflops), r.threads):.1f} GFLOP/s ({peak_source}): no kernel can beat "
              "the peak, so the peak is wrong (a probe bug, the machine busy while it was measured, or "
              "--peak-gflops too low)")
    if args.markdown:
        print()
        print(report.markdown(results))
    failed = [r for r in results if r.status in ("error", "mismatch")]
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "onnxruntime": onnxruntime.__version__,
            "available_backends": available, "requested_backends": backends, "threads": threads_list,
            "quick": args.quick, "peers": args.peer_list, "peak_gflops": floats(args.peak_gflops), "peak_gbs": floats(args.peak_gbs),
            "elapsed_seconds": elapsed, "failed": len(failed),
            "core_to_core_ns": {"start": placement_start, "end": placement_end},
            "cpu": this_cpu.as_dict(), "fma_peak": [p.as_dict() for p in fma_peaks] or "given",
            "above_peak": [{"row": r.row, "backend": r.backend, "threads": r.threads, "fraction": r.peak_fraction}
                           for r in above_peak]}
    if args.json:
        Path(args.json).write_text(report.to_json(results, meta))
    print(f"{len(selected)} rows, {len(results)} results, {len(failed)} failed, {elapsed:.1f} s")
    for r in failed:
        print(f"FAILED: {r.row} / {r.backend} / {r.threads} thread(s): {r.status} {r.note}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
