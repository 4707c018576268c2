"""The zoo table of docs/performance.md (and of issue notes) from run.py's JSON.

    python scripts/bench/zoo_table.py RUN.json [EARLIER.json] [--backend CpuAcc]

One line per zoo row and thread count: plugnn's median (the backend named, CpuAcc by default:
CpuAcc first, CpuRef for what it declines), onnxruntime's and OpenVINO's from the same run, the
ratio to the faster peer (below 1: plugnn is faster; with EARLIER.json, that run's ratio in
parentheses) and plugnn's fraction of the FMA peak. Then the counts: rows at or below the faster
peer, rows within 10 % (ratios counted as printed, to two decimals), and, with two runs, the
rows behind in both. The header names the CPU,
the date and the FMA peaks of the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PEERS = ("onnxruntime", "openvino")


def load(path: str) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"zoo_table: cannot read {path}: {exc}") from None


def medians(run: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """(row, threads) -> backend -> its result, for the zoo rows that ran."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for r in run["results"]:
        if r["row"].startswith("zoo ") and r["status"] == "ok":
            out.setdefault((r["row"], r["threads"]), {})[r["backend"]] = r
    return out


def ratio(entry: dict[str, Any], backend: str) -> float | None:
    peers = [entry[p]["median_ms"] for p in PEERS if p in entry]
    if backend not in entry or not peers:
        return None
    return entry[backend]["median_ms"] / min(peers)


def fmt(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.3g}"


def table(run: dict[str, Any], earlier: dict[str, Any] | None, backend: str) -> str:
    rows = medians(run)
    before = medians(earlier) if earlier else {}
    meta = run["meta"]
    cpu = meta.get("cpu", {})
    peaks = ", ".join(f"{p:.1f}" for p in meta.get("peak_gflops", []))
    lines = [f"CPU: {cpu.get('model', '?')}, {cpu.get('cpus', '?')} CPUs, {' '.join(cpu.get('extensions', []))}; "
             f"run {meta.get('date', '?')}; FMA peak {peaks} GFLOP/s (1, 2, ... threads)", ""]
    head = "vs faster peer" + (" (earlier run)" if earlier else "")
    lines += [f"| model | threads | {backend} ms | onnxruntime ms | OpenVINO ms | {head} | fraction of FMA peak |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    at_or_below = within = 0
    behind_both: list[str] = []
    for (row, threads), entry in rows.items():
        r = ratio(entry, backend)
        if r is None:
            continue
        r = round(r, 2)  # counted as printed
        at_or_below += r <= 1.0
        within += r <= 1.10
        cell = f"{r:.2f}"
        old = ratio(before.get((row, threads), {}), backend)
        if old is not None:
            cell += f" ({old:.2f})"
            if r > 1.0 and round(old, 2) > 1.0:
                behind_both.append(f"{row.removeprefix('zoo ')} {threads}t")
        frac = entry[backend].get("peak_fraction")
        lines.append(f"| {row.removeprefix('zoo ')} | {threads} | {fmt(entry[backend]['median_ms'])} | "
                     f"{fmt(entry.get('onnxruntime', {}).get('median_ms'))} | {fmt(entry.get('openvino', {}).get('median_ms'))} | "
                     f"{cell} | {'-' if frac is None else f'{100 * frac:.0f} %'} |")
    total = sum(ratio(e, backend) is not None for e in rows.values())
    lines += ["", f"{at_or_below} of {total} rows at or below the faster peer, {within} within 10 %."]
    if earlier:
        lines.append(f"Behind in both runs ({len(behind_both)}): {', '.join(behind_both) or 'none'}.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="run.py --json output")
    parser.add_argument("earlier", nargs="?", help="an earlier run's JSON: its ratios in parentheses")
    parser.add_argument("--backend", default="CpuAcc", help="the plugnn backend column (default CpuAcc)")
    args = parser.parse_args(argv)
    run = load(args.run)
    earlier = load(args.earlier) if args.earlier else None
    if not medians(run):
        raise SystemExit(f"zoo_table: {args.run} has no zoo rows that ran")
    print(table(run, earlier, args.backend))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
