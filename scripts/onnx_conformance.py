"""ONNX's whole backend test suite (node, simple, pytorch-converted, pytorch-operator, real) run through
plugnn's ONNX backend and through onnxruntime's, in one process, with no exclusion list.

    python scripts/onnx_conformance.py [--backends CpuRef] [--suites node,simple,...] [--only REGEX]
                                       [--json OUT] [--markdown] [--failures N]

Every test of the installed onnx package's suite runs on both runtimes (the CPU variant of each
test; the _cuda twins are not counted). A test passes when the runtime's outputs match ONNX's
expected outputs at the test's own tolerances (ONNX's runner decides); a test the runtime refuses
(an error while preparing or running) or gets wrong fails. Prints a table of passes per suite for
both runtimes and, with --failures N, the first N failure messages per suite for plugnn.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
import unittest
import warnings
from pathlib import Path
from typing import Any

SUITES = {  # ONNX's BackendTest class name per suite, in the order reported
    "node": "OnnxBackendNodeModelTest",
    "simple": "OnnxBackendSimpleModelTest",
    "pytorch-converted": "OnnxBackendPyTorchConvertedModelTest",
    "pytorch-operator": "OnnxBackendPyTorchOperatorModelTest",
    "real": "OnnxBackendRealModelTest",
}


class _Collector(unittest.TestResult):
    """Records one status per test: pass, fail (wrong outputs or an error), skip (ONNX's own skips)."""

    def __init__(self) -> None:
        super().__init__()
        self.status: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def _name(self, test: Any) -> str:
        return test.id().rsplit(".", 1)[-1]

    def addSuccess(self, test: Any) -> None:  # noqa: N802 - unittest's API
        self.status[self._name(test)] = "pass"

    def addFailure(self, test: Any, err: Any) -> None:  # noqa: N802
        self.status[self._name(test)] = "fail"
        self.messages[self._name(test)] = _first_line(err)

    def addError(self, test: Any, err: Any) -> None:  # noqa: N802
        self.status[self._name(test)] = "fail"
        self.messages[self._name(test)] = _first_line(err)

    def addSkip(self, test: Any, reason: str) -> None:  # noqa: N802
        self.status[self._name(test)] = "skip"
        self.messages[self._name(test)] = reason


def _first_line(err: Any) -> str:
    kind, value, _ = err
    text = str(value).strip().splitlines()
    return f"{kind.__name__}: {text[0][:300] if text else ''}"


def run_suites(backend: Any, suites: list[str], only: str | None, label: str) -> dict[str, _Collector]:
    """Every CPU test of `suites` on `backend` (an onnx.backend.base.Backend module or class)."""
    import onnx.backend.test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ONNX's generators overflow casts on purpose
        tests = onnx.backend.test.BackendTest(backend, f"conformance_{label}")
    results: dict[str, _Collector] = {}
    for suite in suites:
        case_class = tests.test_cases[SUITES[suite]]
        names = sorted(n for n in vars(case_class) if n.startswith("test_") and n.endswith("_cpu")
                       and (only is None or re.search(only, n)))
        collector = _Collector()
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in names:
                case_class(name).run(collector)
        print(f"{label} {suite}: {len(names)} tests in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        results[suite] = collector
    return results


def plugnn_backend(backends: list[str] | None) -> Any:
    """plugnn's ONNX backend with `backends` as the default preference (None: the runtime's)."""
    from plugnn.onnx import backend as plugnn_onnx_backend

    if not backends:
        return plugnn_onnx_backend

    class Chosen(plugnn_onnx_backend.PlugnnBackend):  # type: ignore[misc, name-defined]
        @classmethod
        def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> Any:
            kwargs.setdefault("backends", backends)
            return super().prepare(model, device, **kwargs)

    return Chosen


def counts(collector: _Collector) -> dict[str, int]:
    tally = collections.Counter(collector.status.values())
    return {"total": len(collector.status), "pass": tally["pass"], "fail": tally["fail"], "skip": tally["skip"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="", help="plugnn backends, comma separated (default: the runtime's)")
    parser.add_argument("--suites", default=",".join(SUITES), help=f"comma separated, of {', '.join(SUITES)}")
    parser.add_argument("--only", default=None, help="only tests whose name matches this regular expression")
    parser.add_argument("--json", default=None, help="write every test's status on both runtimes here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--failures", type=int, default=0, help="print the first N plugnn failures per suite")
    parser.add_argument("--no-onnxruntime", action="store_true", help="run plugnn only")
    args = parser.parse_args(argv)
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        parser.error(f"unknown suites {unknown}; the suites are {', '.join(SUITES)}")
    import onnx

    backends = [b.strip() for b in args.backends.split(",") if b.strip()] or None
    ours = run_suites(plugnn_backend(backends), suites, args.only, "plugnn")
    theirs: dict[str, _Collector] = {}
    ort_version = "-"
    if not args.no_onnxruntime:
        import onnxruntime
        import onnxruntime.backend

        ort_version = onnxruntime.__version__
        theirs = run_suites(onnxruntime.backend, suites, args.only, "onnxruntime")
    header = ["suite", "tests", f"plugnn ({','.join(backends) if backends else 'default backends'})",
              f"onnxruntime {ort_version}"]
    rows = []
    for suite in suites:
        mine = counts(ours[suite])
        other = counts(theirs[suite]) if suite in theirs else None
        rows.append([suite, str(mine["total"]), str(mine["pass"]), "-" if other is None else str(other["pass"])])
    print(f"onnx {onnx.__version__}: tests passing per suite (CPU variants, no exclusions)")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    for suite in suites:
        failed = [n for n, s in sorted(ours[suite].status.items()) if s == "fail"][:args.failures]
        for name in failed:
            print(f"  {suite} {name}: {ours[suite].messages.get(name, '')}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "onnx": onnx.__version__, "onnxruntime": ort_version, "backends": backends,
            "suites": {suite: {"plugnn": ours[suite].status, "onnxruntime": theirs[suite].status if suite in theirs
                               else None, "plugnn_messages": ours[suite].messages} for suite in suites}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
