"""`plugnn run`: load a model (or the built-in demo), run it on the backends and report.

Modelled on Arm NN's ExecuteNetwork: where every layer runs, the inputs used, output
summaries, timing over iterations, an optional per-layer profile, the outputs saved as .npy
and a comparison with onnxruntime. User mistakes raise RunError (a PlugnnError), which the
CLI prints as one `plugnn: error: ...` line with exit status 2. docs/run.md is the guide.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from plugnn.errors import PlugnnError

if TYPE_CHECKING:  # NumPy is imported when the command runs: `plugnn --cmake-dir` stays fast
    import numpy as np
# Default backend order: the fast CPU backend, the reference one, then whatever else loaded.
PREFERRED_ORDER = ("CpuAcc", "CpuRef")
# Outputs "agree" with onnxruntime when max|plugnn - ort| <= ATOL + RTOL * max|ort| (float32,
# different summation orders; see docs/run.md). A disagreement makes the exit status 1.
COMPARE_RTOL = 1e-3
COMPARE_ATOL = 1e-4
FIRST_VALUES = 5
PROGRESS_AFTER_SECONDS = 2.0
PROGRESS_ITERATIONS = 100
DEFAULT_ITERATIONS = 10
DEFAULT_BUDGET_SECONDS = 10.0


class RunError(PlugnnError):
    """A user mistake on the `plugnn run` command line: bad file, name, shape, backend list."""


# ---- arguments ----------------------------------------------------------------------------------


def add_parser(commands: Any) -> argparse.ArgumentParser:
    run = commands.add_parser(
        "run", help="run a model (or the built-in demo) and report placement, outputs and timing",
        description="Run an ONNX model, or with no MODEL the built-in demo network, on plugnn's backends: "
                    "prints which backend runs each layer, the inputs, output summaries and timing.")
    run.add_argument("model", nargs="?", metavar="MODEL",
                     help="an ONNX model file (needs the onnx package); omit it to run the built-in demo")
    run.add_argument("-c", "--compute", metavar="BACKEND[,BACKEND...]",
                     help="backends in order of preference (default: every usable backend, "
                          "CpuAcc and CpuRef first)")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="feed input NAME from a .npy file (repeatable); other inputs are random")
    run.add_argument("--input-shape", action="append", default=[], metavar="NAME=D,D,...",
                     help="fix the shape of an ONNX input with dynamic dimensions (repeatable)")
    run.add_argument("--iterations", type=_positive_int, default=None, metavar="N",
                     help=f"timed runs after one warm-up run (default: {DEFAULT_ITERATIONS}, or as many as fit "
                          f"in about {DEFAULT_BUDGET_SECONDS:g} s when one run is slow, at least 1)")
    run.add_argument("--dynamic-backends-path", metavar="DIR",
                     help="search only this directory for dynamic backends")
    run.add_argument("--profile", action="store_true", help="per-layer timing table (median over the iterations)")
    run.add_argument("--output-dir", metavar="DIR", help="write every output to DIR/NAME.npy")
    run.add_argument("--compare", choices=["onnxruntime"],
                     help="run the same inputs in onnxruntime (CPUExecutionProvider) and report the differences")
    run.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    run.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random inputs (default: 0)")
    run.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                     help="log what the loader does")
    return run


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parse_backends(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise RunError(f"-c takes a comma-separated list of backend ids like CpuAcc,CpuRef; got {text!r}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise RunError(f"-c lists {', '.join(repeated)} more than once: {text!r}")
    return items


def default_backends(available: list[str]) -> list[str]:
    first = [b for b in PREFERRED_ORDER if b in available]
    return first + [b for b in available if b not in first]


def _name_value(option: str, text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise RunError(f"{option} takes {what}, got {text!r}")
    return name, value


def load_input_files(specs: list[str]) -> dict[str, tuple[np.ndarray, str]]:
    """--input NAME=FILE.npy -> {name: (array, path)}; a bad file is a RunError."""
    import numpy as np

    arrays: dict[str, tuple[np.ndarray, str]] = {}
    for spec in specs:
        name, path = _name_value("--input", spec, "NAME=FILE.npy")
        if name in arrays:
            raise RunError(f"--input gives input {name!r} more than once")
        if not os.path.isfile(path):
            raise RunError(f"--input {name}: no such file: {path}")
        try:
            with open(path, "rb") as f:
                magic = f.read(6)
        except OSError as exc:
            raise RunError(f"--input {name}: cannot read {path} ({exc.strerror or exc})") from None
        if magic != b"\x93NUMPY":
            what = "an .npz archive" if magic.startswith(b"PK") else "not a .npy file"
            raise RunError(f"--input {name}: {path} is {what}; give one array saved with numpy.save")
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise RunError(f"--input {name}: {path} is not a .npy file of numbers ({_one_line(exc)})") from None
        arrays[name] = (np.ascontiguousarray(array), path)
    return arrays


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, dims = _name_value("--input-shape", spec, "NAME=D,D,... (e.g. input=1,3,224,224)")
        try:
            shape = tuple(int(d) for d in dims.replace("x", ",").split(","))
        except ValueError:
            raise RunError(f"--input-shape {name}: dimensions must be integers, got {dims!r}") from None
        if any(d < 1 for d in shape):
            raise RunError(f"--input-shape {name}: dimensions must be positive, got {dims!r}")
        if name in shapes:
            raise RunError(f"--input-shape gives input {name!r} more than once")
        shapes[name] = shape
    return shapes


# ---- the model -------------------------------------------------------------------------------------


@dataclass
class Model:
    network: Any
    description: str
    path: str | None  # None: the demo
    onnx_bytes: bytes | None = None  # what onnxruntime runs for --compare (built lazily for the demo)
    dynamic_inputs: dict[str, list[Any]] = field(default_factory=dict)


def _require(package: str, why: str) -> None:
    if importlib.util.find_spec(package) is None:
        raise RunError(f"{why} needs the {package} package: pip install {package}")


def _onnx_graph_inputs(path: str) -> dict[str, list[Any]]:
    """Graph inputs (initializers excluded) -> dims (int, or the symbolic name / None)."""
    import onnx

    try:
        proto = onnx.load_model(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - whatever is wrong, the importer reports it properly
        return {}
    initializers = {t.name for t in proto.graph.initializer}
    result = {}
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        dims: list[Any] = []
        for dim in value.type.tensor_type.shape.dim:
            dims.append(dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None))
        result[value.name] = dims
    return result


def load_model(path: str | None, input_files: dict[str, tuple[np.ndarray, str]],
               input_shapes: dict[str, tuple[int, ...]]) -> Model:
    if path is None:
        from plugnn import demo

        if input_shapes:
            raise RunError("--input-shape applies to ONNX models; the built-in demo has a fixed input "
                           f"{demo.INPUT_NAME!r} (1, 3, {demo.IMAGE}, {demo.IMAGE})")
        return Model(demo.network(), demo.DESCRIPTION, None)
    if not os.path.exists(path):
        raise RunError(f"no such model file: {path}")
    if not os.path.isfile(path):
        raise RunError(f"the model must be a file, {path} is not")
    _require("onnx", "running an ONNX model")
    import plugnn.onnx

    graph_inputs = _onnx_graph_inputs(path)
    dynamic = {name: dims for name, dims in graph_inputs.items()
               if not dims or any(not isinstance(d, int) or d <= 0 for d in dims)}
    shapes = dict(input_shapes)
    for name, (array, _) in input_files.items():  # a dynamic input takes the shape of the file fed to it
        if name in dynamic and name not in shapes and len(dynamic[name]) in (0, array.ndim):
            shapes[name] = array.shape
    unknown = sorted(set(input_shapes) - set(graph_inputs)) if graph_inputs else []
    if unknown:
        raise RunError(f"--input-shape names {', '.join(map(repr, unknown))}, which the model does not take; "
                       f"its inputs: {', '.join(graph_inputs)}")
    try:
        network = plugnn.onnx.load(path, input_shapes=shapes or None)
    except PlugnnError as exc:
        unfixed = [n for n in dynamic if n not in shapes]
        hint = ""
        if unfixed:
            hint = "; the model's inputs " + ", ".join(
                f"{n} {_dims_text(dynamic[n])}" for n in unfixed) + " have dynamic dimensions: fix them with " \
                "--input-shape NAME=D,D,... or --input NAME=FILE.npy"
        raise RunError(_one_line(exc) + hint) from None
    return Model(network, f"ONNX model {path}", path, dynamic_inputs=dynamic)


def _dims_text(dims: list[Any]) -> str:
    return "(" + ", ".join(str(d) if d is not None else "?" for d in dims) + ")"


# ---- inputs -------------------------------------------------------------------------------------------


def make_inputs(input_infos: dict[str, Any], files: dict[str, tuple[np.ndarray, str]], seed: int
                ) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    import numpy as np

    unknown = sorted(set(files) - set(input_infos))
    if unknown:
        takes = ", ".join(f"{n} {tuple(i.shape)} {i.dtype.numpy_name}" for n, i in input_infos.items())
        raise RunError(f"--input names {', '.join(map(repr, unknown))}, which the network does not take; "
                       f"it takes: {takes}")
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    described: list[dict[str, Any]] = []
    for name, info in input_infos.items():
        dtype, shape = np.dtype(info.dtype.numpy_name), tuple(info.shape)
        if name in files:
            array, path = files[name]
            if array.shape != shape:
                raise RunError(f"--input {name}: {path} holds shape {array.shape}, the network takes {shape}")
            if array.dtype != dtype:
                raise RunError(f"--input {name}: {path} holds {array.dtype}, the network takes {dtype} "
                               f"(save it with .astype(numpy.{dtype.name}))")
            source = path
        else:
            array, source = _random(rng, shape, dtype), f"random (seed {seed})"
        arrays[name] = array
        described.append({"name": name, "shape": list(shape), "dtype": dtype.name, "source": source})
    return arrays, described


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Standard normal floats; integers in [0, 10); booleans half true."""
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(0, 10, shape).astype(dtype)


# ---- placement -----------------------------------------------------------------------------------------


def placement(optimized: Any, network: Any = None) -> dict[str, Any]:
    """Consecutive layers on one backend as groups; fallbacks, fusions and removals in brief."""
    nodes = optimized.layers
    groups: list[dict[str, Any]] = []
    for index, node in enumerate(nodes, start=1):
        backend = node.backend_id or "runtime"
        if groups and groups[-1]["backend"] == backend:
            group = groups[-1]
        else:
            group = {"backend": backend, "first": index, "types": Counter(), "layers": []}
            groups.append(group)
        group["last"] = index
        group["types"][node.type_name] += 1
        group["layers"].append(node.name)
    for group in groups:
        group["count"] = len(group["layers"])
        group["types"] = dict(group["types"].most_common())
    fallbacks: dict[tuple[str, str, str], dict[str, Any]] = {}
    fused = []
    for node in nodes:
        refused = [a for a in node.attempts if not a.accepted]
        for attempt in refused:
            key = (attempt.backend_id, node.backend_id or "runtime", attempt.reason)
            entry = fallbacks.setdefault(key, {"refused_by": key[0], "ran_on": key[1], "reason": key[2],
                                               "stage": attempt.stage, "layers": [], "types": Counter()})
            entry["layers"].append(node.name)
            entry["types"][node.type_name] += 1
        if node.replaces and any(a.stage == "optimize_subgraph" and a.accepted for a in node.attempts):
            fused.append({"layer": node.name, "type": node.type_name, "backend": node.backend_id,
                          "replaces": list(node.replaces)})
    for entry in fallbacks.values():
        entry["types"] = dict(entry["types"].most_common())
    removed: dict[str, dict[str, Any]] = {}
    original = {layer.name: layer.type_name for layer in network} if network is not None else {}
    for item in optimized.removed():
        name, why = item["layer"], item["why"]
        kind = "folded into the layer before" if why.startswith("folded into") else why
        entry = removed.setdefault(kind, {"why": kind, "layers": [], "types": Counter()})
        entry["layers"].append(name)
        entry["types"][original.get(name, "?")] += 1
    for entry in removed.values():
        entry["types"] = dict(entry["types"].most_common())
    return {
        "groups": groups,
        "fallbacks": list(fallbacks.values()),
        "fused": fused,
        "removed": list(removed.values()),
        "layers": optimized.assignments(),
    }


# ---- running ---------------------------------------------------------------------------------------------


class Progress:
    """A one-line progress bar on a terminal (stderr); silent anywhere else."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self._shown = 0.0
        self._width = 0

    def update(self, done: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._shown < 0.1:
            return
        self._shown = now
        filled = 30 * done // self.total
        line = f"\rrunning [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total}"
        self._width = len(line)
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def time_runs(loaded: Any, inputs: dict[str, np.ndarray], iterations: int | None, profile: bool
              ) -> tuple[dict[str, np.ndarray], dict[str, Any], list[list[dict[str, Any]]]]:
    start = time.perf_counter()
    outputs = loaded.run(inputs)  # warm-up: first-run allocations, caches; not counted
    warmup = time.perf_counter() - start
    if iterations is None:
        iterations = max(1, min(DEFAULT_ITERATIONS, int(DEFAULT_BUDGET_SECONDS / max(warmup, 1e-9))))
    show = _isatty(sys.stderr) and (iterations >= PROGRESS_ITERATIONS or warmup * iterations > PROGRESS_AFTER_SECONDS)
    progress = Progress(iterations, sys.stderr, show)
    seconds, profiles = [], []
    try:
        for i in range(iterations):
            start = time.perf_counter()
            outputs = loaded.run(inputs, profile=profile)
            seconds.append(time.perf_counter() - start)
            if profile:
                profiles.append(loaded.last_profile)
            progress.update(i + 1, force=i + 1 == iterations)
    finally:
        progress.close()
    ms = [s * 1e3 for s in seconds]
    timing = {"iterations": iterations, "warmup_ms": warmup * 1e3, "median_ms": statistics.median(ms),
              "min_ms": min(ms), "max_ms": max(ms), "profiled": profile}
    return outputs, timing, profiles


def profile_table(profiles: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    for step, entry in enumerate(profiles[0]):
        median = statistics.median(p[step]["seconds"] for p in profiles) * 1e3
        rows.append({"layer": entry["layer"], "backend": entry["backend"], "median_ms": median})
    total = sum(r["median_ms"] for r in rows) or 1.0
    for row in rows:
        row["share"] = row["median_ms"] / total
    return rows


def summarize(name: str, array: np.ndarray) -> dict[str, Any]:
    import numpy as np

    flat = array.reshape(-1)
    summary: dict[str, Any] = {"name": name, "shape": list(array.shape), "dtype": array.dtype.name}
    if flat.size:
        values = flat.astype(np.float64) if array.dtype.kind in "fiub" else None
        if values is not None:
            summary.update(min=float(values.min()), max=float(values.max()), mean=float(values.mean()))
            summary["nonfinite"] = int(flat.size - np.isfinite(values).sum())
        summary["first"] = [_plain(v) for v in flat[:FIRST_VALUES]]
    return summary


def _plain(value: Any) -> Any:
    value = value.item() if hasattr(value, "item") else value
    return value if not isinstance(value, float) or math.isfinite(value) else str(value)


def _file_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", name).lstrip(".")
    return (safe or "output") + ".npy"


def prepare_output_dir(directory: str) -> Path:
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise RunError(f"--output-dir {directory} exists and is not a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"--output-dir {directory}: cannot create it ({exc.strerror or exc})") from None
    return target


def write_outputs(directory: str, outputs: dict[str, np.ndarray]) -> list[dict[str, str]]:
    import numpy as np

    target = prepare_output_dir(directory)
    written, used = [], set()
    for name, array in outputs.items():
        file_name = _file_name(name)
        stem = file_name[:-4]
        n = 1
        while file_name in used:
            n += 1
            file_name = f"{stem}_{n}.npy"
        used.add(file_name)
        path = target / file_name
        try:
            np.save(path, array)
        except OSError as exc:
            raise RunError(f"--output-dir: cannot write {path} ({exc.strerror or exc})") from None
        written.append({"name": name, "path": str(path)})
    return written


# ---- onnxruntime --------------------------------------------------------------------------------------------


def compare_onnxruntime(model: Model, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]
                        ) -> dict[str, Any]:
    import numpy as np

    _require("onnxruntime", "--compare onnxruntime")
    if model.path is None:
        _require("onnx", "--compare onnxruntime on the built-in demo (exported to ONNX for onnxruntime)")
        from plugnn import demo, synthetic_models

        batch = next(iter(inputs.values())).shape[0]
        source: Any = synthetic_models.small_cnn(batch, seed=demo.DEFAULT_SEED).SerializeToString()
        what = "the demo exported to ONNX (plugnn.synthetic_models.small_cnn)"
    else:
        source, what = model.path, model.path
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        ort_inputs = {i.name for i in session.get_inputs()}
        feed = {name: array for name, array in inputs.items() if name in ort_inputs}
        names = [o.name for o in session.get_outputs()]
        wanted = [n for n in outputs if n in names]
        reference = dict(zip(wanted, session.run(wanted, feed)))
    except Exception as exc:  # noqa: BLE001 - onnxruntime's own errors: report, no traceback
        raise RunError(f"--compare onnxruntime: onnxruntime could not run {what}: {_one_line(exc)}") from None
    results = []
    for name, ours in outputs.items():
        if name not in reference:
            results.append({"name": name, "ok": False, "problem": "onnxruntime has no output of this name"})
            continue
        theirs = np.asarray(reference[name])
        if ours.shape != theirs.shape:
            results.append({"name": name, "ok": False,
                            "problem": f"shape {ours.shape} but onnxruntime gives {theirs.shape}"})
            continue
        a, b = ours.astype(np.float64), theirs.astype(np.float64)
        diff = np.abs(a - b)
        scale = float(np.abs(b).max()) if b.size else 0.0
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
        ok = bool(np.isfinite(diff).all() and max_abs <= COMPARE_ATOL + COMPARE_RTOL * scale)
        results.append({"name": name, "ok": ok, "max_abs_diff": max_abs, "max_rel_diff": _plain(max_rel),
                        "reference_max_abs": scale})
    return {"against": "onnxruntime", "version": ort.__version__, "provider": "CPUExecutionProvider",
            "model": what, "rtol": COMPARE_RTOL, "atol": COMPARE_ATOL,
            "agree": all(r["ok"] for r in results), "outputs": results}


# ---- the command -------------------------------------------------------------------------------------------


def run_command(args: argparse.Namespace) -> int:
    from plugnn.optimizer import optimize
    from plugnn.runtime import Runtime

    requested = parse_backends(args.compute)
    input_files = load_input_files(args.input)
    input_shapes = parse_input_shapes(args.input_shape)
    if args.compare == "onnxruntime":  # fail before the long part
        _require("onnxruntime", "--compare onnxruntime")
        if args.model is None:
            _require("onnx", "--compare onnxruntime on the built-in demo (exported to ONNX for onnxruntime)")
    if args.output_dir:
        prepare_output_dir(args.output_dir)
    model = load_model(args.model, input_files, input_shapes)
    with Runtime(dynamic_backends_path=args.dynamic_backends_path) as runtime:
        available = runtime.backend_ids
        if not available:
            rejected = [f"{r.path}: {r.reason}" for r in runtime.load_report if r.status != "loaded"]
            raise RunError("no usable backends" + (f" ({'; '.join(rejected)})" if rejected else "")
                           + "; see plugnn backends")
        backends = requested or default_backends(available)
        for backend_id in backends:
            runtime.backend(backend_id)  # UnknownBackendError lists the available ones
        optimized = optimize(model.network, runtime, backends)
        with runtime.load_network(optimized) as loaded:
            inputs, inputs_described = make_inputs(loaded.input_infos, input_files, args.seed)
            outputs, timing, profiles = time_runs(loaded, inputs, args.iterations, args.profile)
        report: dict[str, Any] = {
            "model": model.path, "description": model.description, "network": optimized.network_name,
            "backends": {"available": available, "preferred": backends, "used": optimized.backends_used},
            "placement": placement(optimized, model.network),
            "inputs": inputs_described,
            "outputs": [summarize(name, array) for name, array in outputs.items()],
            "timing": timing,
        }
    if args.profile:
        report["profile"] = profile_table(profiles)
    if args.output_dir:
        report["output_files"] = write_outputs(args.output_dir, outputs)
    if args.compare == "onnxruntime":
        report["compare"] = compare_onnxruntime(model, inputs, outputs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 1 if "compare" in report and not report["compare"]["agree"] else 0


# ---- text ---------------------------------------------------------------------------------------------------------


def _num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _types(types: dict[str, int]) -> str:
    return ", ".join(t if n == 1 else f"{t} x{n}" for t, n in types.items())


def _names(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _table(rows: list[list[str]], header: list[str], right: frozenset[int] | set[int] = frozenset()) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def format_report(report: dict[str, Any]) -> str:
    out: list[str] = []
    b = report["backends"]
    out.append(f"Model: {report['description']}")
    out.append(f"Backends: {', '.join(b['preferred'])} "
               f"(in order of preference; available: {', '.join(b['available'])})")
    place = report["placement"]
    layers = sum(g["count"] for g in place["groups"])
    out.append("")
    out.append(f"Placement ({layers} layers run, in execution order):")
    rows = []
    for g in place["groups"]:
        span = f"#{g['first']}" if g["first"] == g["last"] else f"#{g['first']}-{g['last']}"
        rows.append([span, g["backend"], f"{g['count']} layer{'s' if g['count'] != 1 else ''}:", _types(g["types"])])
    out += ["  " + line for line in _table(rows, ["layers", "backend", "count", "types"], right={2})[2:]]
    if place["fallbacks"]:
        for f in place["fallbacks"]:
            n = len(f["layers"])
            out.append(f"  fallback: {f['refused_by']} refused {n} layer{'s' if n != 1 else ''} "
                       f"({_types(f['types'])}: {_names(f['layers'])}) -> {f['ran_on']}: {f['reason']}")
    else:
        out.append("  fallbacks: none (every layer runs on the first backend asked)")
    for f in place["fused"]:
        out.append(f"  fused by {f['backend']}: {f['layer']} ({f['type']}) stands for {_names(f['replaces'])}")
    for r in place["removed"]:
        n = len(r["layers"])
        out.append(f"  removed by the optimizer: {_types(r['types'])} {r['why']} ({_names(r['layers'])})")
    out.append("")
    out.append("Inputs:")
    out += ["  " + line for line in _table(
        [[i["name"], str(tuple(i["shape"])), i["dtype"], i["source"]] for i in report["inputs"]],
        ["name", "shape", "dtype", "source"])[2:]]
    out.append("")
    out.append("Outputs:")
    for o in report["outputs"]:
        stats = "  ".join(f"{k} {_num(o[k])}" for k in ("min", "max", "mean") if k in o)
        first = ", ".join(_num(v) for v in o.get("first", []))
        more = ", ..." if math.prod(o["shape"]) > len(o.get("first", [])) else ""
        bad = f"  ({o['nonfinite']} non-finite values)" if o.get("nonfinite") else ""
        out.append(f"  {o['name']}  {tuple(o['shape'])} {o['dtype']}  {stats}{bad}")
        out.append(f"    first values: [{first}{more}]")
    t = report["timing"]
    out.append("")
    runs = f"{t['iterations']} run{'s' if t['iterations'] != 1 else ''}"
    out.append(f"Timing ({runs} after 1 warm-up run of {t['warmup_ms']:.3f} ms"
               + (", profiling on" if t["profiled"] else "") + "):")
    out.append(f"  median {t['median_ms']:.3f} ms   min {t['min_ms']:.3f} ms   max {t['max_ms']:.3f} ms")
    if "profile" in report:
        out.append("")
        out.append(f"Profile (median per layer over {t['iterations']} run{'s' if t['iterations'] != 1 else ''}):")
        rows = [[p["layer"], p["backend"], f"{p['median_ms']:.3f}", f"{100 * p['share']:.1f}%"]
                for p in report["profile"]]
        total = sum(p["median_ms"] for p in report["profile"])
        rows.append(["total", "", f"{total:.3f}", "100.0%"])
        out += ["  " + line for line in _table(rows, ["layer", "backend", "ms", "share"], right={2, 3})]
    if "output_files" in report:
        out.append("")
        out.append("Output files:")
        out += [f"  {f['name']} -> {f['path']}" for f in report["output_files"]]
    if "compare" in report:
        c = report["compare"]
        out.append("")
        verdict = "agree" if c["agree"] else "DIFFER"
        out.append(f"Compared with onnxruntime {c['version']} ({c['provider']}) on {c['model']}: outputs {verdict} "
                   f"(tolerance: max abs diff <= {c['atol']:g} + {c['rtol']:g} * max|onnxruntime|)")
        for r in c["outputs"]:
            if "problem" in r:
                out.append(f"  {r['name']}  DIFFERS: {r['problem']}")
            else:
                rel = r["max_rel_diff"]
                rel_text = rel if isinstance(rel, str) else format(rel, ".3g")
                out.append(f"  {r['name']}  max abs diff {r['max_abs_diff']:.3g}  max rel diff {rel_text}  "
                           f"(relative to max|onnxruntime| = {r['reference_max_abs']:.4g})  "
                           f"{'ok' if r['ok'] else 'DIFFERS'}")
    return "\n".join(out)


def _one_line(exc: BaseException | str) -> str:
    text = str(exc).strip()
    return "; ".join(part.strip() for part in text.splitlines() if part.strip()) or type(exc).__name__
