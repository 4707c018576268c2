"""An optimized network drawn with Graphviz: `explain(format="dot")` writes the dot language
(nothing to install); `render` turns it into SVG, PNG or PDF with Graphviz's `dot` program (an
optional extra: the `graphviz` system package, or the `graphviz` Python package with it).

Layers are boxes filled with their backend's colour (a legend lists them); a layer that a
backend refused before it ran elsewhere has a thick red border and says who refused it; a layer
a backend's subgraph optimization made (fused) is a double-bordered box that says how many
layers it stands for; graph inputs and outputs are grey ellipses. Names are shortened
(plugnn.naming), types shown under them."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from plugnn.errors import MissingDependencyError, PlugnnError
from plugnn.graph import Graph, Node
from plugnn.naming import short_names

PALETTE = ["#8ecae6", "#ffb703", "#90be6d", "#f4a3c0", "#cdb4db", "#f9c74f", "#a8dadc", "#e9c46a"]
RUNTIME_COLOUR = "#d9d9d9"
FORMATS = ("svg", "png", "pdf")


def _quote(*lines: str) -> str:
    """A dot string of `lines` (escaped), joined by dot's centred line breaks."""
    return '"' + "\\n".join(t.replace("\\", "\\\\").replace('"', '\\"') for t in lines) + '"'


def colours(preferred: Sequence[str], graph: Graph) -> dict[str, str]:
    """One colour per backend, in order of preference (then any other backend used)."""
    used = list(dict.fromkeys([*preferred, *(n.backend_id for n in graph.nodes if n.backend_id)]))
    return {b: PALETTE[i % len(PALETTE)] for i, b in enumerate(used)}


def _fused(node: Node) -> bool:
    return bool(node.replaces) and any(a.stage == "optimize_subgraph" and a.accepted for a in node.attempts)


def to_dot(network_name: str, preferred: Sequence[str], graph: Graph) -> str:
    fill = colours(preferred, graph)
    short = short_names([n.name for n in graph.nodes], width=36)
    ids = {n.name: f"n{i}" for i, n in enumerate(graph.nodes)}
    out = [f"digraph {_quote(network_name)} {{",
           "  rankdir=TB; nodesep=0.25; ranksep=0.3;",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, margin="0.12,0.04"];',
           '  edge [color="#555555", arrowsize=0.6];',
           f"  labelloc=t; fontname=\"Helvetica\"; label={_quote(f'{network_name}: {len(graph.nodes)} layers')};"]
    for name in graph.inputs:
        out.append(f"  {_quote('in:' + name)} [label={_quote(name)}, shape=ellipse, fillcolor=\"{RUNTIME_COLOUR}\"];")
    for node in graph.nodes:
        backend = node.backend_id or "runtime"
        label = [short[node.name], node.type_name if len(node.type_name) <= 48 else node.type_name[:45] + "..."]
        attrs = [f"fillcolor=\"{fill.get(backend, RUNTIME_COLOUR)}\""]
        if _fused(node):
            label.append(f"fused: stands for {len(node.replaces)} layers")
            attrs += ["peripheries=2", "penwidth=1.5"]
        refused = [a.backend_id for a in node.attempts if not a.accepted]
        if refused:
            label.append(f"fallback: refused by {', '.join(dict.fromkeys(refused))}")
            attrs += ['color="#d62828"', "penwidth=3"]
        label.append(f"on {backend}")
        attrs.insert(0, f"label={_quote(*label)}")
        out.append(f"  {ids[node.name]} [{', '.join(attrs)}];")
    producer = {key: ids[n.name] for n in graph.nodes for key in n.outputs}
    for name, key in graph.inputs.items():
        producer[key] = _quote("in:" + name)
    for node in graph.nodes:
        for key in dict.fromkeys(node.inputs):
            if key in producer:
                out.append(f"  {producer[key]} -> {ids[node.name]};")
    for name, key in graph.outputs.items():
        out.append(f"  {_quote('out:' + name)} [label={_quote(name)}, shape=ellipse, fillcolor=\"{RUNTIME_COLOUR}\"];")
        if key in producer:
            out.append(f"  {producer[key]} -> {_quote('out:' + name)};")
    out.append("  subgraph cluster_legend {")
    out.append('    label="backends"; fontsize=10; style=rounded; color="#999999";')
    previous = None
    for i, (backend, colour) in enumerate(fill.items()):
        out.append(f"    legend{i} [label={_quote(backend)}, fillcolor=\"{colour}\"];")
        if previous is not None:
            out.append(f"    {previous} -> legend{i} [style=invis];")
        previous = f"legend{i}"
    out.append('    legend_fallback [label="fallback", fillcolor="white", color="#d62828", penwidth=3];')
    out.append('    legend_fused [label="fused", fillcolor="white", peripheries=2];')
    if previous is not None:
        out.append(f"    {previous} -> legend_fallback [style=invis];")
    out.append("    legend_fallback -> legend_fused [style=invis];")
    out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def render(dot_text: str, path: str | Path) -> Path:
    """Write `dot_text` to `path`: as it is for a .dot or .gv file, else rendered in the format the
    suffix names (svg, png, pdf) by Graphviz's `dot` program. MissingDependencyError when it is
    not installed, saying what to install."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("dot", "gv"):
        path.write_text(dot_text, encoding="utf-8")
        return path
    if suffix not in FORMATS:
        raise PlugnnError(f"{path}: the graph is written as .dot/.gv text or rendered as "
                          f"{', '.join('.' + f for f in FORMATS)}; not .{suffix or '(no suffix)'}")
    program = shutil.which("dot")
    if program is None:
        try:
            import graphviz  # the Python package runs the same program; it may know where it is
        except ImportError:
            graphviz = None
        if graphviz is not None:
            try:
                path.write_bytes(graphviz.Source(dot_text).pipe(format=suffix))
                return path
            except Exception:  # noqa: BLE001 - the package without the program: the message below
                pass
        raise MissingDependencyError(
            f"rendering {path.name} needs Graphviz's 'dot' program, which is not installed: install Graphviz "
            f"(apt-get install graphviz, dnf install graphviz, brew install graphviz or conda install graphviz), "
            f"or write the dot text with a .dot file name and render it elsewhere")
    result = subprocess.run([program, f"-T{suffix}", "-o", str(path)], input=dot_text.encode(),
                            capture_output=True, check=False)
    if result.returncode != 0:
        raise PlugnnError(f"Graphviz's dot failed rendering {path}: {result.stderr.decode(errors='replace').strip()}")
    return path
