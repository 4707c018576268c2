"""The report as text (with --json the command prints the same dict as JSON)."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from plugnn.explain import MAX_PATTERNS, WIDTH, placement_lines
from plugnn.naming import clip, short_names


def format_report(report: dict[str, Any]) -> str:
    """Model, backends, placement, inputs, outputs, timing; then the profile, the output files
    and the comparison with onnxruntime when the report has them."""
    out: list[str] = []
    b = report["backends"]
    out += textwrap.wrap(f"Model: {report['description']}", WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    out += textwrap.wrap(f"Backends: {', '.join(b['preferred'])} (in order of preference; available: "
                         f"{', '.join(b['available'])})", WIDTH, subsequent_indent="  ")
    place = report["placement"]
    layers = sum(g["count"] for g in place["groups"])
    out.append("")
    out.append(f"Placement ({layers} layers run, in execution order):")
    out += placement_lines(place["groups"], WIDTH)
    short = short_names([entry["layer"] for entry in place["layers"]]
                        + [n for r in place["removed"] for n in r["layers"]])
    if place["fallbacks"]:
        for f in place["fallbacks"][:MAX_PATTERNS]:
            n = len(f["layers"])
            out.append(clip(f"  fallback: {f['refused_by']} refused {n} layer{'s' if n != 1 else ''} "
                            f"({_types(f['types'])}) -> {f['ran_on']}", WIDTH))
            out.append(clip(f"    why: {f['reason']} (e.g. {short.get(f['layers'][0], f['layers'][0])})", WIDTH))
        if len(place["fallbacks"]) > MAX_PATTERNS:
            out.append(f"  fallback: {len(place['fallbacks']) - MAX_PATTERNS} more reasons (--details)")
    else:
        out.append("  fallbacks: none (every layer runs on the first backend asked)")
    patterns: dict[tuple[str, str], list[str]] = {}
    for f in place["fused"]:
        patterns.setdefault((f["backend"], f["pattern"]), []).append(f["layer"])
    ranked = sorted(patterns.items(), key=lambda item: -len(item[1]))
    for (backend, pattern), names in ranked[:MAX_PATTERNS]:
        made, _, parts = pattern.partition(" <- ")
        out.append(clip(f"  fused by {backend}: {len(names):3} x {made}", WIDTH))
        out.append(clip(f"    from {parts}; e.g. {short.get(names[0], names[0])}", WIDTH))
    if len(ranked) > MAX_PATTERNS:
        out.append(f"  fused: {len(ranked) - MAX_PATTERNS} more patterns (--details)")
    for r in place["removed"]:
        out.append(clip(f"  removed by the optimizer: {_types(r['types'])} {r['why']} "
                        f"(e.g. {short.get(r['layers'][0], r['layers'][0])})", WIDTH))
    if "graph_file" in report:
        out.append(f"  graph: {report['graph_file']}")
    out.append("")
    out.append("Inputs:")
    out += ["  " + line for line in _table(
        [[i["name"], str(tuple(i["shape"])), i["dtype"], i["source"]] for i in report["inputs"]],
        ["name", "shape", "dtype", "source"])[2:]]
    for note in report.get("notes", []):
        out += textwrap.wrap(note, WIDTH, initial_indent="  ", subsequent_indent="    ")
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
        out.append(f"Profile (median per layer over {runs}):")
        profiled = short_names([p["layer"] for p in report["profile"]], width=60)
        rows = []
        for p in report["profile"]:
            rows.append([clip(profiled[p["layer"]], 72), p["backend"], f"{p['median_ms']:.3f}",
                         f"{100 * p['share']:.1f}%"])
            nodes = p.get("nodes") or []
            for node in nodes:  # the original layers inside a fused one, as its backend timed them
                rows.append(["  " + clip(node["layer"], 70), "", f"{node['median_ms']:.3f}",
                             f"{100 * node['share']:.1f}%"])
            if nodes:
                rest = max(p["median_ms"] - sum(n["median_ms"] for n in nodes), 0.0)
                rows.append(["  (rest of the fused layer)", "", f"{rest:.3f}", ""])
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
        out.append(f"Compared with onnxruntime {c['version']} ({c['provider']}): outputs {verdict}")
        out.append(f"  model: {c['model']}")
        out.append(f"  tolerance: max abs diff <= {c['atol']:g} + {c['rtol']:g} * max|onnxruntime|")
        rows = []
        for r in c["outputs"]:
            if "problem" in r:
                rows.append([r["name"], "", "", "", f"DIFFERS: {r['problem']}"])
                continue
            rel = r["max_rel_diff"]
            rows.append([r["name"], f"{r['max_abs_diff']:.3g}", rel if isinstance(rel, str) else format(rel, ".3g"),
                         f"{r['reference_max_abs']:.4g}", "ok" if r["ok"] else "DIFFERS"])
        out += ["  " + line for line in _table(
            rows, ["output", "max abs diff", "max rel diff", "max|onnxruntime|", "verdict"], right={1, 2, 3})]
    if "details" in report:
        out.append("")
        out.append("Details (every layer, every backend's answer):")
        out += ["  " + line for line in report["details"].splitlines()]
    return "\n".join(out)


def _num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _types(types: dict[str, int]) -> str:
    return ", ".join(t if n == 1 else f"{t} x{n}" for t, n in types.items())


def _table(rows: list[list[str]], header: list[str], right: frozenset[int] | set[int] = frozenset()) -> list[str]:
    """Header, rule and rows, columns padded to their widest cell (the `right` ones right-aligned)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
