"""onnxruntime's own test models as a measuring instrument: which of them plugnn runs as onnxruntime does.

    python scripts/ort_testdata_survey.py CHECKOUT [--only REGEX] [--json OUT] [--timeout 60]
                                          [--jobs 1] [--list-failures]

CHECKOUT is a checkout of onnxruntime's public source repository (its models are read in place,
never copied: `onnxruntime/test/testdata/**/*.onnx`). Each model is one case, run in a child
process (forked from a server that has numpy, onnx, onnxruntime and plugnn imported) with a time
limit (60 s by default):

1. onnxruntime (CPUExecutionProvider, default options) loads it; inputs are drawn at random from
   its input descriptions (seeded by the model's path: symbolic or unknown dims are 1; floats
   standard normal, integers 0 to 2, booleans fair coins, strings short words) and onnxruntime runs
   them. A model onnxruntime cannot load or run (or whose inputs cannot be drawn: maps, sequences
   of sequences) is not a case: it is counted as `ort-fails`.
2. plugnn.InferenceSession loads the same file and runs the same inputs. Outcomes: `match`
   (every output of the same shape, of the same dtype and within rtol 1e-3 / atol 1e-4, NaN equal
   to NaN; sequences element-wise), `load` (the session could not be made), `run` (run() raised),
   `mismatch` (split by a second opinion: `mismatch-random` when onnxruntime's own two runs
   differ or the model draws at random (a random generator, a training-mode Dropout), `mismatch-ort-optimized` when plugnn matches onnxruntime with its graph optimizations
   off and the optimized graph computes something else, `mismatch-reference-agrees` when plugnn
   matches ONNX's reference evaluator), `crash` (the child died) and `timeout`.

Prints the counts and the failures grouped by cause (the message's first line, with quoted names
and numbers blurred); --json keeps every case's outcome and message.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any

RTOL, ATOL = 1e-3, 1e-4
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon")


# ---- one case, in the child --------------------------------------------------------------------


def _draw(rng: Any, type_text: str, shape: Any) -> Any:
    """A random value for an input onnxruntime describes as `type_text` of `shape`."""
    import numpy as np

    dims = [d if isinstance(d, int) and d >= 0 else 1 for d in (shape or [])]
    if type_text.startswith("seq("):
        inner = type_text[4:-1]
        return [_draw(rng, inner, shape) for _ in range(2)]
    if type_text.startswith("optional("):
        return _draw(rng, type_text[9:-1], shape)
    if not type_text.startswith("tensor("):
        raise ValueError(f"cannot draw an input of type {type_text}")
    elem = type_text[7:-1]
    if elem in ("float", "double", "float16", "bfloat16"):
        dtype = {"float": np.float32, "double": np.float64, "float16": np.float16}.get(elem)
        if dtype is None:
            raise ValueError(f"cannot draw an input of type {type_text}")
        return rng.standard_normal(dims).astype(dtype)
    if elem == "bool":
        return rng.integers(0, 2, dims).astype(bool)
    if elem == "string":
        return np.array(rng.choice(WORDS, dims), dtype=object).reshape(dims)
    ints = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
            "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}
    if elem in ints:
        return rng.integers(0, 3, dims).astype(ints[elem])
    raise ValueError(f"cannot draw an input of type {type_text}")


def _same(a: Any, b: Any) -> str | None:
    """None when plugnn's output `b` matches onnxruntime's `a`, else what differs."""
    import numpy as np

    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return f"sequence differs ({type(a).__name__} {len(a) if isinstance(a, list) else ''} vs " \
                   f"{type(b).__name__} {len(b) if isinstance(b, list) else ''})"
        for k, (x, y) in enumerate(zip(a, b)):
            why = _same(x, y)
            if why:
                return f"element {k}: {why}"
        return None
    if isinstance(a, dict) or isinstance(b, dict):
        if a == b:
            return None
        return "map differs"
    if a is None or b is None:
        return None if a is None and b is None else f"one is None ({a is None}, {b is None})"
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {list(b.shape)}, onnxruntime {list(a.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {b.dtype}, onnxruntime {a.dtype}"
    if a.dtype == object or a.dtype.kind in "SU":
        return None if (a == b).all() else "strings differ"
    if a.dtype.kind in "biu":
        bad = int((a != b).sum())
        return None if bad == 0 else f"{bad} of {a.size} integers differ"
    x, y = a.astype(np.float64), b.astype(np.float64)
    close = np.isclose(y, x, rtol=RTOL, atol=ATOL, equal_nan=True)
    if close.all():
        return None
    worst = float(np.nanmax(np.abs(np.where(close, 0, x - y)))) if np.isfinite(x - y).any() else float("nan")
    return f"{int((~close).sum())} of {a.size} values differ (max |diff| {worst:.3g})"


def _case(path: str, out: Any) -> None:
    """Run one model on both runtimes; put (outcome, message) on `out`."""
    import logging

    import numpy as np
    import onnxruntime as ort

    logging.getLogger("plugnn").setLevel(logging.ERROR)
    ort.set_default_logger_severity(4)
    rng = np.random.default_rng(zlib.crc32(path.encode()))
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {i.name: _draw(rng, i.type, i.shape) for i in sess.get_inputs()}
        expected = sess.run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - whatever onnxruntime raises: not a case
        out.put(("ort-fails", f"{type(exc).__name__}: {exc}"))
        return
    import plugnn

    try:
        session = plugnn.InferenceSession(path)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded with its type
        out.put(("load", f"{type(exc).__name__}: {exc}"))
        return
    try:
        got = session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001
        out.put(("run", f"{type(exc).__name__}: {exc}"))
        return
    why = _differs(sess, expected, got)
    if why is None:
        out.put(("match", ""))
        return
    out.put((_mismatch_kind(path, sess, feeds, expected, got), why))


def _differs(sess: Any, expected: list, got: list) -> str | None:
    for name, a, b in zip([o.name for o in sess.get_outputs()], expected, got):
        why = _same(a, b)
        if why:
            return f"output {name!r}: {why}"
    return None


RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}


def _draws_at_random(model: Any, feeds: dict) -> bool:
    """Whether the model holds a random generator or a Dropout whose `training_mode` is true (a
    constant, or an input fed true) with a ratio > 0."""
    import numpy as np
    from onnx import numpy_helper

    known = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    known.update(feeds)
    for node in model.graph.node:
        if node.op_type in RANDOM_OPS:
            return True
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2] in known:
            ratio = known.get(node.input[1], 0.5) if node.input[1] else 0.5
            if bool(np.asarray(known[node.input[2]]).reshape(-1)[0]) and float(np.asarray(ratio).reshape(-1)[0]):
                return True
    return False


def _mismatch_kind(path: str, sess: Any, feeds: dict, expected: list, got: list) -> str:
    """Which kind of mismatch: `mismatch-random` (onnxruntime's own two runs differ),
    `mismatch-ort-optimized` (plugnn matches onnxruntime with graph optimizations off, or ONNX's
    reference evaluator, and onnxruntime's optimized graph computes something else), else
    `mismatch`."""
    import onnx
    import onnxruntime as ort

    try:
        if _differs(sess, expected, sess.run(None, feeds)) is not None or _draws_at_random(onnx.load(path), feeds):
            return "mismatch-random"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        plain = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        if _differs(plain, plain.run(None, feeds), got) is None:
            return "mismatch-ort-optimized"
        from onnx.reference import ReferenceEvaluator

        from plugnn.onnx.tidy import tidy  # ONNX's evaluator takes nodes in topological order only

        reference = ReferenceEvaluator(tidy(onnx.load(path), path, owned=True)).run(None, feeds)
        if _differs(sess, list(reference), got) is None:
            return "mismatch-reference-agrees"
    except Exception:  # noqa: BLE001 - a second opinion that cannot be had leaves a plain mismatch
        pass
    return "mismatch"


def _run_one(ctx: Any, path: str, timeout: float) -> tuple[str, str]:
    queue = ctx.Queue()
    child = ctx.Process(target=_case, args=(path, queue))
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        return "timeout", f"over {timeout:.0f} s"
    try:
        return queue.get(timeout=5)
    except Exception:  # noqa: BLE001 - the child died before answering
        return "crash", f"child exit code {child.exitcode}"


# ---- the survey ----------------------------------------------------------------------------------


def _cause(message: str) -> str:
    """The message's first line with the model-specific parts blurred, to group failures."""
    line = message.splitlines()[0] if message else ""
    line = re.sub(r"\S*\.onnx: ", "", line)
    line = re.sub(r"'[^']*'", "'…'", line)
    line = re.sub(r"#\d+", "#n", line)
    line = re.sub(r"\d+", "N", line)
    return line[:200]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a checkout of onnxruntime's source repository")
    parser.add_argument("--only", help="regular expression: only models whose path matches")
    parser.add_argument("--json", type=Path, help="write every case's outcome here")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--list-failures", action="store_true", help="print every failing model")
    args = parser.parse_args(argv)
    root = args.checkout / "onnxruntime" / "test" / "testdata"
    if not root.is_dir():
        parser.error(f"{root} is not a directory: give the checkout's top directory")
    paths = sorted(str(p) for p in root.rglob("*.onnx"))
    if args.only:
        paths = [p for p in paths if re.search(args.only, p)]
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["numpy", "onnx", "onnxruntime", "plugnn", "plugnn.onnx.importer"])
    results: dict[str, tuple[str, str]] = {}
    started = time.monotonic()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {p: pool.submit(_run_one, ctx, p, args.timeout) for p in paths}
        for k, (p, future) in enumerate(futures.items()):
            results[p] = future.result()
            if (k + 1) % 50 == 0:
                print(f"... {k + 1} of {len(paths)} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    counts = collections.Counter(outcome for outcome, _ in results.values())
    cases = sum(n for outcome, n in counts.items() if outcome != "ort-fails")
    print(f"{len(paths)} models; onnxruntime runs {cases} (fails {counts['ort-fails']}); "
          f"plugnn matches {counts['match']} ({100 * counts['match'] / max(cases, 1):.1f} %)")
    for outcome in ("load", "run", "mismatch", "mismatch-random", "mismatch-ort-optimized", "mismatch-reference-agrees",
                    "crash", "timeout"):
        print(f"  {outcome}: {counts[outcome]}")
    groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for p, (outcome, message) in results.items():
        if outcome not in ("match", "ort-fails"):
            groups[(outcome, _cause(message))].append(p)
    for (outcome, cause), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(members):4d} {outcome}: {cause}")
        if args.list_failures:
            for p in members:
                print(f"       {Path(p).relative_to(root)}: {results[p][1].splitlines()[0][:300] if results[p][1] else ''}")
    if args.json:
        args.json.write_text(json.dumps({str(Path(p).relative_to(root)): {"outcome": o, "message": m}
                                         for p, (o, m) in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
