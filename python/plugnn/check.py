"""`plugnn check-backend`: is a plugin right? Every check that runs the plugin's code runs in a
child process, so a crash or a hang is a finding, not the end of the check.

In order: the file (its name), the probe (plugnn-probe: load, entry points, one backend
created and destroyed, unload), the exported symbols (read from the ELF file), then in a
worker process (plugnn.check_worker, restarted after the step that killed it): the entry
points' id and version rules, the backend object (struct_size, required functions, flags),
the lifecycle (two independent instances, create/destroy cycles without memory growth,
options round-trip, context callbacks, memory manager), and the layer sweep (plugnn.sweep:
for every kind, is_layer_supported on generated layers, and every claimed layer run against
CpuRef). `check_backend` returns a `Report`; the plugin is right when `report.passed`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from plugnn import probe, supervisor
from plugnn.elf import ElfError, exported_symbols
from plugnn.loader import BUNDLED_DIR, ENTRY_POINTS, is_backend_filename

CHECKS = ("file", "probe", "exports", "entry points", "backend object", "lifecycle", "layers")
DEFAULT_STEP_TIMEOUT = 30.0  # seconds one step of the worker may take
MAX_RESTARTS = 50
LOADING_STEPS = 2  # worker steps 0 and 1 load the plugin and create its backend: a crash there ends the run


@dataclass
class Check:
    """One check's verdict: failed when any finding is a failure."""

    name: str
    failures: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran: bool = False

    @property
    def status(self) -> str:
        if self.failures:
            return "fail"
        return "pass" if self.ran else "not run"


@dataclass
class LayerCounts:
    asked: int = 0
    refused: int = 0
    claimed: int = 0
    matched: int = 0
    failed: int = 0
    untested: int = 0


@dataclass
class Report:
    path: str
    checks: dict[str, Check]
    layers: dict[str, LayerCounts]
    oracle_is_self: bool = False

    @property
    def passed(self) -> bool:
        return all(c.status == "pass" for c in self.checks.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "passed": self.passed,
            "checks": [{"name": c.name, "status": c.status, "failures": c.failures, "passes": c.passes,
                        "notes": c.notes} for c in self.checks.values()],
            "layers": {kind: vars(counts) for kind, counts in self.layers.items()},
        }

    def text(self, limit: int = 12) -> str:
        lines = [f"plugnn check-backend {self.path}"]
        width = max(len(name) for name in self.checks)
        for check in self.checks.values():
            label = {"pass": "pass", "fail": "FAIL", "not run": "----"}[check.status]
            summary = self._summary(check)
            lines.append(f"  {label}  {check.name.ljust(width)}  {summary}")
            for failure in check.failures[:limit]:
                lines.append(f"        {' ' * width}  - {failure}")
            if len(check.failures) > limit:
                lines.append(f"        {' ' * width}  ... and {len(check.failures) - limit} more (--json lists all)")
        failed = sum(c.status != "pass" for c in self.checks.values())
        lines.append(f"result: {'PASS' if self.passed else 'FAIL'}" + (
            f" ({failed} of {len(self.checks)} checks failed or did not run)" if failed else
            f" (all {len(self.checks)} checks)"))
        return "\n".join(lines)

    def _summary(self, check: Check) -> str:
        if check.name == "layers" and self.layers:
            total = LayerCounts(**{k: sum(getattr(c, k) for c in self.layers.values()) for k in vars(LayerCounts())})
            claimed_kinds = [kind for kind, c in self.layers.items() if c.claimed]
            text = (f"{total.asked} layers of {len(self.layers)} kinds asked: {total.refused} refused with a reason, "
                    f"{total.claimed} claimed ({', '.join(claimed_kinds) or 'none'}), {total.matched} match CpuRef")
            if total.failed:
                text += f", {total.failed} fail"
            if total.untested:
                text += f", {total.untested} not compared (CpuRef does not run them)"
            if self.oracle_is_self:
                text += "; the oracle is this very file, so this shows the layers run, not that they are right"
            return text + "".join(f"; {note}" for note in check.notes)
        if check.failures:
            return f"{len(check.failures)} finding{'s' if len(check.failures) > 1 else ''}"
        if not check.ran:
            return "; ".join(check.notes) or "not run"
        return "; ".join(check.passes + check.notes)


def check_backend(path: str | os.PathLike[str], layers: list[str] | None = None,
                  options: dict[str, str] | None = None, step_timeout: float = DEFAULT_STEP_TIMEOUT) -> Report:
    """Check the plugin file `path`: see the module's documentation. `layers` limits the
    sweep to those kinds (names as in "Convolution2d"); `options` are string options to
    round-trip through set_option/get_option."""
    path = os.path.abspath(os.fspath(path))
    report = Report(path, {name: Check(name) for name in CHECKS}, {})
    ref = os.path.join(BUNDLED_DIR, "Plugnn_CpuRef_backend.so")
    report.oracle_is_self = os.path.exists(path) and os.path.exists(ref) and os.path.samefile(path, ref)
    checks = report.checks
    if not os.path.isfile(path):
        checks["file"].failures.append("no such file")
        _not_run(report, "file", "the file does not exist")
        return report
    checks["file"].ran = True
    name = os.path.basename(path)
    if is_backend_filename(name):
        checks["file"].passes.append(f"{name} follows <vendor>_<name>_backend.so[.<version>]")
    else:
        checks["file"].failures.append(f"{name} is not named <vendor>_<name>_backend.so[.<version>]: the runtime "
                                       "would not look at it")

    _probe(report)
    _exports(report)
    _worker(report, layers, options or {}, step_timeout)
    if not layers and report.checks["layers"].ran:
        from plugnn.descriptors import LayerKind
        from plugnn.sweep import GENERATORS, NOT_SWEPT, kind_name

        missing = [kind_name(k) for k in LayerKind if k not in GENERATORS and k not in NOT_SWEPT]
        if missing:
            report.checks["layers"].notes.append(f"kinds without a generator in plugnn.sweep, not swept: "
                                                 f"{', '.join(missing)}")
    return report


def _not_run(report: Report, after: str, why: str) -> None:
    for name in CHECKS[CHECKS.index(after) + 1:]:
        if not report.checks[name].ran:
            report.checks[name].notes.append(f"not run: {why}")


def _probe(report: Report) -> None:
    check = report.checks["probe"]
    try:
        result = probe.probe_files([report.path], use_cache=False)[report.path]
    except Exception as exc:  # the probe's own failure is a note, not the plugin's fault
        check.notes.append(f"not run: {exc}")
        return
    check.ran = True
    if result.ok:
        check.passes.append("in a child process it loads, its entry points run, a backend is created and "
                            "destroyed, and it unloads")
    else:
        check.failures.append(result.reason.replace(" (in the probe process; not loaded)", ""))


def _exports(report: Report) -> None:
    check = report.checks["exports"]
    try:
        symbols = exported_symbols(report.path)
    except (OSError, ElfError) as exc:
        check.ran = True
        check.failures.append(str(exc))
        return
    check.ran = True
    missing = [s for s in ENTRY_POINTS if s not in symbols]
    extra = sorted(symbols - set(ENTRY_POINTS))
    if missing:
        check.failures.append(f"missing entry point{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                              "(each must be exported with C linkage: extern \"C\" and PLUGNN_BACKEND_EXPORT)")
    if extra:
        shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
        check.failures.append(f"exports {len(extra)} symbol{'s' if len(extra) > 1 else ''} besides the entry "
                              f"points: {shown} (build with plugnn_add_backend, whose version script hides them)")
    if not missing and not extra:
        check.passes.append("exactly GetBackendId, GetVersion and BackendFactory")


# ---- the worker ---------------------------------------------------------------------------------


def _worker(report: Report, layers: list[str] | None, options: dict[str, str], step_timeout: float) -> None:
    base = [sys.executable, "-m", "plugnn.check_worker", report.path]
    if layers:
        base += ["--layers", ",".join(layers)]
    for key, value in options.items():
        base += ["--option", f"{key}={value}"]
    start, restarts = 0, 0
    while True:
        outcome = _run_worker(base + ["--start", str(start)], step_timeout)
        for message in outcome.messages:
            _record(report, message)
        if outcome.finished or outcome.stopped:
            if outcome.stopped:
                _not_run(report, outcome.stopped_check or "file", outcome.stopped)
            break
        # The worker died or hung in step `outcome.current` (or before its first step).
        if outcome.current is None:
            report.checks["entry points"].failures.append(f"the check worker did not start: {outcome.death}")
            _not_run(report, "exports", "the check worker did not start")
            break
        index, check, step = outcome.current
        target = report.checks[check]
        target.ran = True
        target.failures.append(f"{step}: {outcome.death}" if check == "layers" else f"{outcome.death} in {step}")
        if check == "layers":
            kind = step.split(" ", 1)[0]
            counts = report.layers.setdefault(kind, LayerCounts())
            counts.asked += 1
            counts.failed += 1
        if index < LOADING_STEPS:
            _not_run(report, check, f"the plugin dies or hangs in {step}")
            break
        restarts += 1
        if restarts > MAX_RESTARTS:
            target.failures.append(f"stopped after {MAX_RESTARTS} crashes")
            _not_run(report, check, "too many crashes")
            break
        start = index + 1


@dataclass
class _Outcome:
    messages: list[dict[str, Any]]
    finished: bool = False
    stopped: str = ""
    stopped_check: str = ""
    current: tuple[int, str, str] | None = None
    death: str = ""


def _run_worker(command: list[str], step_timeout: float) -> _Outcome:
    outcome = _Outcome([])
    pending = bytearray()

    def on_stdout(child: supervisor.Child, chunk: bytes) -> None:
        pending.extend(chunk)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            message = json.loads(line)
            if "begin" in message:
                outcome.current = (message["begin"], message["check"], message["step"])
                child.extend(step_timeout)
            elif "end" in message:
                outcome.messages.append(message)
                outcome.current = None
            elif "stop" in message:
                outcome.stopped = message["stop"]
                outcome.stopped_check = outcome.messages[-1]["check"] if outcome.messages else ""
            elif message.get("finished"):
                outcome.finished = True

    env = supervisor.child_environment(PYTHONUNBUFFERED="1")  # a sanitizer's signal handlers off, as in the probe
    worker = supervisor.Child(command, env, step_timeout, on_stdout=on_stdout, err_limit=4096)
    worker.deadline += 30.0  # the first step waits for the interpreter too
    with contextlib.closing(supervisor.supervise([lambda: worker])) as ended:
        for _ in ended:
            pass
    if not outcome.finished:
        stderr = bytes(worker.err).decode("utf-8", errors="replace").strip().splitlines()
        tail = f" (stderr: {stderr[-1][:200]})" if stderr and not worker.timed_out else ""
        outcome.death = supervisor.death(worker) + tail
        if outcome.stopped:
            outcome.finished = True
    return outcome


def _record(report: Report, message: dict[str, Any]) -> None:
    check = report.checks[message["check"]]
    check.ran = True
    step = message["step"]
    if message["check"] == "layers":
        kind = step.split(" ", 1)[0]
        counts = report.layers.setdefault(kind, LayerCounts())
        malformed = step.endswith("with a wrong output shape")
        if not malformed:
            counts.asked += 1
        for status, text in message["results"]:
            if status == "fail":
                check.failures.append(f"{step}: {text}")
                if not malformed:
                    counts.failed += 1
                    if not text.startswith(("is_layer_supported failed", "refused without")):
                        counts.claimed += 1
            elif malformed:
                continue
            elif status == "refused":
                counts.refused += 1
            elif status == "untested":
                counts.claimed += 1
                counts.untested += 1
            elif status == "pass":
                counts.claimed += 1
                counts.matched += 1
        return
    for status, text in message["results"]:
        {"fail": check.failures, "pass": check.passes, "note": check.notes}[status].append(text)
