"""Detection models with data-dependent heads (tests/detection: SSDlite320, Faster R-CNN
MobileNetV3-320-FPN, YOLO-style with NMS; seeded weights): plugnn.InferenceSession against
onnxruntime and, when installed, OpenVINO, one process, on images whose candidate counts differ.

Per model and thread count: each runtime is created and runs one warm-up image ("start": creation
plus that run, plugnn's first network built there), then the same new images (20, seeded) are
run alternating runtime by runtime, then the same images again; the median and mean milliseconds
per image, the outputs compared with onnxruntime's (same number of detections, same labels as a
multiset), and how many segments plugnn imported after the warm-up (`session.dynamic
.segments_made`: 0 after the second image means every new count was a re-size). Prints a
Markdown report (docs/performance.md, "Run-time shapes"). Run from the repository root:

    python scripts/detection_bench.py [--threads 1,2] [--only NAME] [--images 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from decode_bench import cpu_model, runners_of  # noqa: E402 - the peers' runners, one home
from detection import entries, image, model_path  # noqa: E402
from zoo import weights  # noqa: E402


def measure(name: str, threads: int, images: int) -> dict[str, Any]:
    model = weights.materialize(model_path(entries()[name]), seed=0).SerializeToString()
    sessions: list[Any] = []
    start: dict[str, float] = {}
    clock = time.perf_counter()
    runners = runners_of(model, threads, sessions)
    created = time.perf_counter() - clock  # all three constructors (plugnn's builds nothing yet)
    warm = image(10_000)
    for runtime, run in list(runners.items()):
        clock = time.perf_counter()
        try:
            run({"image": warm})
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run the model is reported, not fatal
            print(f"{name}: {runtime} fails: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
            del runners[runtime]
            continue
        start[runtime] = (time.perf_counter() - clock) * 1e3
    session = sessions[0]
    made_before = session.dynamic.segments_made
    feeds = [{"image": image(seed)} for seed in range(images)]
    times: dict[str, list[float]] = {r: [] for r in runners}
    again: dict[str, list[float]] = {r: [] for r in runners}
    results: dict[str, list[Any]] = {r: [] for r in runners}
    for rounds, table in ((0, times), (1, again)):
        for feed in feeds:
            for runtime, run in runners.items():
                clock = time.perf_counter()
                out = run(feed)
                table[runtime].append((time.perf_counter() - clock) * 1e3)
                if rounds == 0:
                    results[runtime].append(out)
    made_after = session.dynamic.segments_made
    agree = {}
    for runtime in runners:
        same = 0
        for ours, theirs in zip(results[runtime], results["onnxruntime"]):
            labels, expected = np.sort(ours["labels"]), np.sort(theirs["labels"])
            same += labels.shape == expected.shape and bool(np.array_equal(labels, expected))
        agree[runtime] = same
    for s in sessions:
        s.close()
    return {"model": name, "threads": threads, "images": images, "created_ms": created * 1e3, "start_ms": start,
            "median_ms": {r: statistics.median(t) for r, t in times.items()},
            "mean_ms": {r: statistics.fmean(t) for r, t in times.items()},
            "again_median_ms": {r: statistics.median(t) for r, t in again.items()},
            "same_detections": agree, "segments_after_warm_up": made_after - made_before,
            "segments_at_warm_up": made_before}


def report(rows: list[dict[str, Any]]) -> str:
    peers = [p for p in ("onnxruntime", "openvino") if any(p in r["median_ms"] for r in rows)]
    head = "| model | threads | plugnn ms (median / mean) | " + " | ".join(f"{p} ms" for p in peers) + \
           " | ratio to the faster peer | same detections | segments imported (warm-up, then) | start ms " \
           "(plugnn / onnxruntime) |"
    lines = [f"CPU: {cpu_model()}; {rows[0]['images']} new images per row, alternating runtimes image by image.", "",
             head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        ours = r["median_ms"]["plugnn"]
        theirs = [r["median_ms"][p] for p in peers if p in r["median_ms"]]
        cells = " | ".join(f"{r['median_ms'][p]:.1f}" if p in r["median_ms"] else "fails" for p in peers)
        lines.append(f"| {r['model']} | {r['threads']} | {ours:.1f} / {r['mean_ms']['plugnn']:.1f} | {cells} | "
                     f"{ours / min(theirs):.2f} | {r['same_detections']['plugnn']} of {r['images']} | "
                     f"{r['segments_at_warm_up']}, then {r['segments_after_warm_up']} | "
                     f"{r['start_ms'].get('plugnn', float('nan')):.0f} / "
                     f"{r['start_ms'].get('onnxruntime', float('nan')):.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--only", action="append", choices=sorted(entries()))
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(name, int(t), args.images) for name in (args.only or sorted(entries()))
            for t in args.threads.split(",")]
    print(json.dumps(rows, indent=2) if args.json else report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
